//! The analysis subcommands, one module each (`run(args)` with the arguments after the
//! command name); loading and option parsing are shared from the crate root.

pub mod diff;
pub mod folded;
pub mod html;
pub mod leaks;
pub mod lines;
