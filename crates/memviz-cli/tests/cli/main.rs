//! memviz-cli's integration tests, in one test binary: each module is one group (once its own
//! `tests/NAME.rs` binary). One binary links memviz-cli and its dependencies once instead of 25
//! times, and builds `common` once (docs/ci.md has the times). Run one group with
//! `cargo test --profile ci -p memviz-cli --test cli NAME::` (or `--release`).
//!
//! The modules run as threads of one process: none may change the process's environment or
//! working directory (they pass variables to the `memviz` children they spawn), and each one's
//! scratch files are named by its own tag and the process id. `tests/budgets.rs` stays a binary
//! of its own: it measures its children's peak RSS, which would include this process's.

mod common;

mod bad_files;
mod bounds;
mod capture;
mod corpus;
mod diff;
mod export;
mod fixtures;
mod flame_modes;
mod folded;
mod formats;
mod fuzz_regressions;
mod html;
mod json_twins;
mod layering;
mod layout;
mod leaks;
mod legend_colors;
mod lines;
mod memory_viz;
mod open;
mod query;
mod ranks;
mod robustness;
mod seg_timeline;
mod sites;
mod state;
mod tile;
mod whatif;
