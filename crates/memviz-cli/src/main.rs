//! The native `memviz` command: the same parsing and analysis as the viewer, headless. The
//! command line lives in the library (lib.rs, also run by the Python package); the binary adds
//! its allocator (huge_pages.rs), which the library must not install.

use std::process::ExitCode;

mod huge_pages;

#[global_allocator]
static ALLOC: huge_pages::HugePages = huge_pages::HugePages;

fn main() -> ExitCode {
    huge_pages::install();
    ExitCode::from(memviz_cli::run(std::env::args_os()))
}
