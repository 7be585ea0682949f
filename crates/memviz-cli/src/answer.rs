//! The commands' answers as typed values (the Python API's path, through memviz-py): the
//! structs the commands print with `--json`, handed over as they are instead of as text. Each
//! is `serde::Serialize`; memviz-py turns them into Python objects (`pythonize`), which
//! `python/memviz` wraps into its typed classes.

use crate::cli::Command;
use crate::error::{Error, ErrorKind};
use crate::memory::{with_capture, Named};
use crate::out::Fail;
use serde::Serialize;
use std::ffi::OsString;

pub use crate::cmd::folded::{FoldedAnswer, FoldedStack};
pub use crate::cmd::leaks::{LeaksAnswer, SuspectAnswer};
pub use crate::cmd::lines::{LinesAnswer, LinesRow};
pub use crate::cmd::oom::{LiveSite, OomAnswer};
pub use crate::cmd::ranks::RanksAnswer;
pub use crate::cmd::state::StateAnswer;
pub use crate::cmd::whatif::{SweepAnswerRow, WhatifAnswer, WhatifOutput};
pub use memviz_analysis::diff::Diff;
pub use memviz_analysis::summary::Summary;

/// One command's answer: what `memviz CMD --json` prints, typed.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Answer {
    /// `memviz summary --json`.
    Summary(Summary),
    /// `memviz folded --json`.
    Folded(FoldedAnswer),
    /// `memviz lines --json`.
    Lines(LinesAnswer),
    /// `memviz leaks --json`.
    Leaks(LeaksAnswer),
    /// `memviz state`.
    State(StateAnswer),
    /// `memviz oom --json`: one report per oom event.
    Oom(Vec<OomAnswer>),
    /// `memviz diff --json`.
    Diff(Diff),
    /// `memviz ranks --json`.
    Ranks(RanksAnswer),
    /// `memviz whatif --json`: one answer per device (`--sweep`: one row per device and
    /// setting).
    Whatif(WhatifOutput),
}

/// An answer and the warnings the command wrote (each a line of stderr).
pub type Answered = (Result<Answer, Error>, Vec<String>);

/// Runs the command line `args` (without the program's name; a command that has a `--json`
/// answer: summary, folded, lines, leaks, state, oom, diff, ranks or whatif) on `snapshots` (named as
/// [`crate::capture`] names them) and returns its answer, typed.
pub fn answer(args: &[String], snapshots: &[Named]) -> Answered {
    let argv = std::iter::once(OsString::from("memviz")).chain(args.iter().map(OsString::from));
    let (r, captured) = with_capture(snapshots, || {
        let cli = crate::cli::parse(argv)?.ok_or_else(|| {
            crate::error::bad_argument("--help and --version have no answer".to_string())
        })?;
        of(&cli.command)
    });
    (r, captured.warnings)
}

/// The answer of `command`.
fn of(command: &Command) -> Result<Answer, Fail> {
    Ok(match command {
        Command::Summary(a) => {
            Answer::Summary(memviz_analysis::summary::summarize(&*crate::load(&a.file)?))
        }
        Command::Folded(a) => Answer::Folded(crate::cmd::folded::answer(a)?),
        Command::Lines(a) => Answer::Lines(crate::cmd::lines::answer(a)?),
        Command::Leaks(a) => Answer::Leaks(crate::cmd::leaks::answer(a)?),
        Command::State(a) => Answer::State(crate::cmd::state::answer(a)?),
        Command::Oom(a) => Answer::Oom(crate::cmd::oom::answer(a)?),
        Command::Diff(a) if !a.folded => Answer::Diff(crate::cmd::diff::answer(a)?),
        Command::Ranks(a) => Answer::Ranks(crate::cmd::ranks::answer(a)?),
        Command::Whatif(a) => Answer::Whatif(crate::cmd::whatif::answer(a)?),
        _ => {
            return Err(Fail::Kind(Error::new(
                ErrorKind::BadArgument,
                "this command prints text: it has no typed answer",
            )))
        }
    })
}
