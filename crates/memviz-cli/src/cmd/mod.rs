//! The subcommands, one module each (`run(args)` with the arguments after the command name);
//! loading and option parsing are shared from the crate root, printing from [`crate::out`].

pub mod bench;
pub mod diff;
pub mod export;
pub mod folded;
pub mod html;
pub mod leaks;
pub mod lines;
pub mod memory_viz;
pub mod oom;
pub mod open;
pub mod query;
pub mod ranks;
pub mod state;
pub mod summary;
pub mod whatif;

/// The `--user-code` of a command that names sites (`None`: the default user code).
pub(crate) fn user_code(
    text: Option<&str>,
) -> Result<memviz_analysis::site::UserCode, crate::out::Fail> {
    memviz_analysis::site::UserCode::parse(text.unwrap_or("")).map_err(crate::error::bad_argument)
}

/// A site as the text output names it: the label, then the library line below it
/// (`train.py:88:main → transformers/models/llama/modeling_llama.py:216:forward`), control
/// characters escaped.
pub(crate) fn site_text(site: &memviz_analysis::site::Site) -> String {
    lines::printable(&site.display())
}
