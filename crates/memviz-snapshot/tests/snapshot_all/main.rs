//! memviz-snapshot's integration tests in one binary (one link instead of one per file:
//! docs/ci.md), a module per subject.

mod fuzz_regressions;
mod hostile;
mod json;
mod kinds;
mod truncated;
mod zip;
mod zip_writer;
