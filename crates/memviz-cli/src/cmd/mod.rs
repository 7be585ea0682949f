//! The subcommands, one module each (`run(args)` with the arguments after the command name);
//! loading and option parsing are shared from the crate root, printing from [`crate::out`].

pub mod bench;
pub mod diff;
pub mod folded;
pub mod html;
pub mod leaks;
pub mod lines;
pub mod memory_viz;
pub mod oom;
pub mod open;
pub mod ranks;
pub mod state;
pub mod summary;
