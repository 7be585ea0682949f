//! The memory a viewer may use, and whether a view still fits.
//!
//! The embedder (the page's worker: a wasm32 heap of at most 4 GiB that never shrinks) installs
//! a [`Memory`] with [`crate::App::set_memory`]: a probe of the bytes in use and a budget.
//! Before a view is built for the first time the app estimates its cost from the trace length
//! ([`view_bytes_per_event`]); when it does not fit, the views built for other files, devices
//! and kinds are released (they are rebuilt when shown again), and if it still does not fit the
//! view is not built: it says so in a sentence ([`crate::App::unavailable`]) and the other
//! views keep working. Without a [`Memory`] (the CLI, tests) every view is built.

use crate::app::ViewKind;

/// A probe of the bytes in use and the most the viewer may hold.
#[derive(Clone, Copy, Debug)]
pub struct Memory {
    /// Bytes in use now.
    pub used: fn() -> u64,
    /// The most the viewer may hold.
    pub budget: u64,
}

impl Default for Memory {
    /// No probe and no budget: every view fits.
    fn default() -> Self {
        fn nothing() -> u64 {
            0
        }
        Memory {
            used: nothing,
            budget: u64::MAX,
        }
    }
}

impl Memory {
    /// Bytes in use now.
    #[must_use]
    pub fn used(&self) -> u64 {
        (self.used)()
    }

    /// Bytes still free under the budget.
    #[must_use]
    pub fn free(&self) -> u64 {
        self.budget.saturating_sub(self.used())
    }
}

/// Heap bytes a view adds per trace event of its device, rounded up from
/// `cargo run -p memviz-viewer --release --example mem_budget -- FILE --views` on 150 MB tiled
/// snapshots (of the training emulator, 79 bytes per event, and of a real file, 66.9):
/// Active Memory Timeline 20.7–23.5 (timeline elements, packed layout columns, slides, colours,
/// first scene; the timeline's steps are dropped once laid out) plus 14 for its hit index once
/// hovered, Cached Segments 3.5–10.9, Private Pools about the Active view's (a second timeline
/// and layout when the device has a private pool; 1.1 when it shares the Active one), State
/// History 6.7–20.5, flamegraph 0.2–2.2 (over the Active timeline, which it needs).
/// docs/limits.md has the table.
#[must_use]
pub const fn view_bytes_per_event(kind: ViewKind) -> u64 {
    match kind {
        ViewKind::Active => 40,
        ViewKind::Segments => 12,
        ViewKind::Pools => 26,
        ViewKind::State => 24,
        ViewKind::Flame => 3,
    }
}

/// The sentence a view that cannot fit shows instead of itself.
#[must_use]
pub fn unavailable_message(kind: ViewKind, need: u64, free: u64, events: usize) -> String {
    use memviz_analysis::format::size_short;
    let (name, cli) = match kind {
        ViewKind::Active => (
            "The Active Memory Timeline",
            "`memviz summary FILE` and `memviz lines FILE` give its numbers",
        ),
        ViewKind::Segments => (
            "The Active Cached Segment Timeline",
            "`memviz state FILE --event -1 --json` lists the segments at the end",
        ),
        ViewKind::Pools => (
            "The Allocated Memory incl. Private Pools view",
            "`memviz summary FILE` gives the reserved and allocated totals",
        ),
        ViewKind::State => (
            "The Allocator State History",
            "`memviz state FILE --event K --json` gives the state after any event",
        ),
        ViewKind::Flame => (
            "The memory flamegraph",
            "`memviz folded FILE` gives its stacks",
        ),
    };
    format!(
        "{name} of this trace ({events} events) needs about {} of memory, more than the {} this \
         page has left, so it is not shown; the other views still work. On the command line, \
         {cli}",
        size_short(need),
        size_short(free)
    )
}
