//! The memory a viewer may use, and whether a view still fits.
//!
//! The embedder (the page's worker: a wasm32 heap of at most 4 GiB that never shrinks) installs
//! a [`Memory`] with [`crate::App::set_memory`]: a probe of the bytes in use and a budget.
//! Before a view is built for the first time the app estimates its cost from the trace length
//! ([`view_bytes_per_event`]); when it does not fit, the views built for other files, devices
//! and kinds are released (they are rebuilt when shown again), and if it still does not fit the
//! view is not built: it says so in a sentence ([`crate::App::unavailable`]) and the other
//! views keep working. Without a [`Memory`] (the CLI, tests) every view is built.

use crate::kinds::ViewKind;
use memviz_present::layout::{LayoutOptions, PointMode};

/// The layout a panel builds for itself when the view it reads is not built (leak suspects
/// without the Active Memory Timeline): no stored polylines, which a panel never draws.
pub const PANEL_LAYOUT: LayoutOptions = LayoutOptions {
    mode: PointMode::Compact,
    max_exact_points: 0,
};

pub use crate::phase::set_phase_hook;

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
/// docs/limits.md has the table. These are the estimates of the views memviz registers
/// (`app/classes.rs`); a view registered elsewhere brings its own in its `ViewClass` (0 here).
#[must_use]
pub const fn view_bytes_per_event(kind: ViewKind) -> u64 {
    #[allow(unreachable_patterns)]
    match kind {
        ViewKind::Active => 40,
        ViewKind::Segments => 12,
        ViewKind::Pools => 26,
        ViewKind::State => 24,
        ViewKind::Flame => 3,
        _ => 0,
    }
}

/// The sentence a view that cannot fit shows instead of itself: `what` (`The Allocator State
/// History`) and what gives its answer on the command line `instead`.
#[must_use]
pub fn unavailable_message(
    what: &str,
    instead: &str,
    need: u64,
    free: u64,
    events: usize,
) -> String {
    use memviz_analysis::format::size_short;
    format!(
        "{what} of this trace ({events} events) needs about {} of memory, more than the {} this \
         page has left, so it is not shown; the other views still work. On the command line, \
         {instead}",
        size_short(need),
        size_short(free)
    )
}

// ----- panels and lazily built structures ---------------------------------------------------

/// A panel or a structure built on first use, checked like a view before it is built
/// ([`panel_bytes`]): when it does not fit, the views it does not need are released, and if
/// it still does not fit it is not built and its entry point answers with
/// [`panel_unavailable_message`] instead (JSON `{"unavailable": "…"}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Panel {
    /// The layout's hit index (built on the first hover or click on a timeline).
    HitIndex,
    /// The tooltips' per-device context: address versions, stream ordinals, segments by
    /// address, `annotate` events (built on the first tooltip).
    Tooltips,
    /// Leak suspects.
    Leaks,
    /// The per-source-line table.
    Lines,
    /// The allocations of one row of the source-line table, highlighted.
    LineHighlight,
    /// Every allocation alive at a timestep.
    Live,
    /// A search over the timeline's allocations, its matches highlighted.
    Search,
    /// A highlight: the timeline's colours, and the scene repainted in place (rebuilt when it
    /// cannot be: the estimate covers the rebuild).
    Highlight,
    /// Two files' live allocations compared by stack.
    Compare,
    /// The diff flamegraph of two files.
    FlameDiff,
    /// The flamegraph rebuilt at another moment (or bytes × lifetime).
    FlameMoment,
}

impl Panel {
    /// What the sentence calls it.
    #[must_use]
    pub fn title(self) -> &'static str {
        match self {
            Panel::HitIndex => {
                "Finding the allocation under the pointer (the timeline's hit index)"
            }
            Panel::Tooltips => "The tooltips",
            Panel::Leaks => "The leak suspects",
            Panel::Lines => "The source-line table",
            Panel::LineHighlight => "Highlighting a source line",
            Panel::Live => "The table of allocations alive at a moment",
            Panel::Search => "The search",
            Panel::Highlight => "The highlight",
            Panel::Compare => "The comparison",
            Panel::FlameDiff => "The diff flamegraph",
            Panel::FlameMoment => "The flamegraph at that moment",
        }
    }

    /// The command line that gives the same answer (`FILE`, `A`, `B` stand for the files).
    #[must_use]
    pub fn cli(self, device: i64) -> String {
        match self {
            Panel::HitIndex | Panel::Tooltips => format!(
                "`memviz folded FILE --device {device}` gives the live bytes by stack at the peak"
            ),
            Panel::Leaks => format!("`memviz leaks FILE --device {device}` gives the same answer"),
            Panel::Lines | Panel::LineHighlight => {
                format!("`memviz lines FILE --device {device}` gives the same table")
            }
            Panel::Live => format!(
                "`memviz folded FILE --device {device} --at EVENT` gives the live bytes by \
                 stack after any event"
            ),
            Panel::Search | Panel::Highlight => format!(
                "`memviz folded FILE --device {device} --all-frames` lists the stacks to search"
            ),
            Panel::Compare => "`memviz diff A B` gives the same answer".to_owned(),
            Panel::FlameDiff => "`memviz diff A B --folded` gives its stacks".to_owned(),
            Panel::FlameMoment => format!(
                "`memviz folded FILE --device {device}` (with `--at`, `--lifetime`, `--range` \
                 or `--phase`) gives its stacks"
            ),
        }
    }
}

/// The counts a panel's estimate is made from, all known before it is built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PanelCounts {
    /// Trace entries of the device.
    pub events: u64,
    /// Elements of the timeline the panel reads.
    pub elements: u64,
    /// Timesteps of its layout.
    pub steps: u64,
    /// Frame references of the interned stacks (Σ stack lengths) of the file, or of both files
    /// for the comparisons.
    pub stack_frames: u64,
    /// Segments of the file (of both files for the comparisons).
    pub segments: u64,
    /// Blocks of those segments.
    pub blocks: u64,
}

/// Heap bytes per trace entry of the device a panel needs at its peak (above what is held
/// before it), from `cargo run -p memviz-viewer --release --example mem_budget -- FILE
/// --panels` on the two 150 MB tiled snapshots of docs/limits.md (the training emulator's,
/// 1.90 M entries, 646 k elements, 62 k stack frames; a real file's, 2.24 M entries, 897 k
/// elements, 115 k segments), the Active Memory Timeline shown: the address versions of the
/// tooltips, the rows alive at a moment and a search that could match an address label (4
/// per entry, with their counters' hash maps: 5.9 and 11.6 per entry in all on the two files;
/// the real file's tile has 6 times the distinct addresses).
///
/// What scales with the timeline's elements is [`panel_bytes_per_element`], with the stacks'
/// frames and the segments [`panel_bytes`]; the measured totals per trace entry are in
/// docs/limits.md. Without the Active Memory Timeline built the leak suspects also need
/// [`LEAKS_OWN_TIMELINE_BYTES_PER_EVENT`].
#[must_use]
pub const fn panel_bytes_per_event(panel: Panel) -> u64 {
    match panel {
        Panel::Tooltips | Panel::Live | Panel::Search => 12,
        _ => 0,
    }
}

/// Heap bytes per element of the timeline a panel reads (measured as in
/// [`panel_bytes_per_event`], per element on the two files):
/// - hit index 42.4 and 27.4 (12 per canonical-node entry, 4 per bucket entry), with 16 per
///   bucket of its segment tree and 8 per bucket in [`hit_index_bytes`];
/// - a highlight (a search's, a source line's, any set) 21.8 and 22.6 (a line's 17.8 and
///   18.7): the colours, the matches and the column level of detail of the first scene (about
///   21 per element of the window);
/// - leak suspects 10.4 and 0.2 (the elements alive at an iteration boundary, by stack; with
///   the stacks' text, [`PER_STACK_FRAME`]);
/// - source lines 1.6 and 4.1 (the elements alive at the peak, the rows);
/// - alive at a moment: the live elements, 4 each (the rest is the versions per entry);
/// - the flamegraph at a moment or over the lifetime 20.7 and 2.3 (live elements, values by
///   stack; with the stacks' text, [`PER_STACK_FRAME`]).
#[must_use]
pub const fn panel_bytes_per_element(panel: Panel) -> u64 {
    match panel {
        Panel::HitIndex => 48,
        Panel::Highlight | Panel::LineHighlight => 28,
        Panel::Search => 4 + 28,
        Panel::Leaks => 8,
        Panel::Lines => 6,
        Panel::Live | Panel::FlameMoment => 6,
        Panel::Tooltips | Panel::Compare | Panel::FlameDiff => 0,
    }
}

/// Bytes per frame reference of the stacks a panel prints (stacks as text: the leak suspects,
/// the comparison and the flamegraphs group by them), an upper bound: every stack printed.
/// Measured: the comparison of the emulator's file with itself 2.8 MB, its diff flamegraph
/// 6.2 MB, its flamegraph over the lifetime 13.4 MB, for 2 × 62 k frame references.
pub const PER_STACK_FRAME: u64 = 160;
/// Bytes per segment of both files in the comparison (segment keys, the multiset of the other
/// side, the segments only on one side): 93 on the real file compared with itself (21.4 MB,
/// 2 × 115 k segments).
pub const PER_SEGMENT: u64 = 100;

/// The hit index of a layout with `elements` elements and `steps` timesteps: per element
/// [`panel_bytes_per_element`]`(HitIndex)`, and per 64-timestep bucket (`HIT_BUCKET_STEPS`) its
/// offsets and the segment tree's nodes (a power of two of them, twice: offsets and cursors
/// while it is built).
#[must_use]
pub fn hit_index_bytes(elements: u64, steps: u64) -> u64 {
    let buckets = steps
        .div_ceil(u64::from(memviz_present::layout::HIT_BUCKET_STEPS))
        .max(1);
    let tree = buckets.checked_next_power_of_two().unwrap_or(u64::MAX / 4);
    elements
        .saturating_mul(panel_bytes_per_element(Panel::HitIndex))
        .saturating_add(tree.saturating_mul(2 * 4 * 2))
        .saturating_add(buckets.saturating_mul(4 * 2))
}

/// The estimate a panel is checked against: what it builds at its peak, from counts known
/// before it is built, plus 1 MiB.
#[must_use]
pub fn panel_bytes(panel: Panel, c: &PanelCounts) -> u64 {
    let by_events = c.events.saturating_mul(panel_bytes_per_event(panel));
    let by_elements = c.elements.saturating_mul(panel_bytes_per_element(panel));
    let by_stacks = c.stack_frames.saturating_mul(PER_STACK_FRAME);
    let extra = match panel {
        Panel::HitIndex => hit_index_bytes(c.elements, c.steps).saturating_sub(by_elements),
        // Versions of every block and segment.
        Panel::Tooltips | Panel::Live | Panel::Search => {
            c.segments.saturating_add(c.blocks).saturating_mul(4)
        }
        Panel::Compare => by_stacks.saturating_add(c.segments.saturating_mul(PER_SEGMENT)),
        Panel::FlameDiff | Panel::FlameMoment | Panel::Leaks => by_stacks,
        Panel::Lines | Panel::LineHighlight | Panel::Highlight => 0,
    };
    let total = if panel == Panel::Search {
        // The versions (for labels) are dropped before the matches are highlighted.
        by_events.saturating_add(extra).max(by_elements)
    } else {
        by_events.saturating_add(by_elements).saturating_add(extra)
    };
    total.saturating_add(1 << 20)
}

/// The largest single allocation a panel makes, which in a wasm heap needs that many contiguous
/// free bytes: probed with `try_reserve_exact` ([`contiguous_room`]) before the panel is built.
#[must_use]
pub fn panel_largest_allocation(panel: Panel, c: &PanelCounts) -> u64 {
    match panel {
        // Address versions (4 per entry) and the table of addresses.
        Panel::Tooltips | Panel::Live | Panel::Search => c.events.saturating_mul(8),
        // The hit index's cumulative heights: 8 per canonical-node entry.
        Panel::HitIndex => c.elements.saturating_mul(24),
        // Per element: the first scene's trees, match lists, group members.
        _ => c.elements.saturating_mul(8),
    }
}

/// The sentence a panel that cannot fit answers with.
#[must_use]
pub fn panel_unavailable_message(
    panel: Panel,
    need: u64,
    free: u64,
    events: u64,
    device: i64,
) -> String {
    use memviz_analysis::format::size_short;
    format!(
        "{} of this trace ({events} events) needs about {} of memory, more than the {} this \
         page has left, so it is not built; the views still work. On the command line, {}",
        panel.title(),
        size_short(need),
        size_short(free),
        panel.cli(device)
    )
}

/// The sentence of a panel whose total fits in the memory left but whose largest single
/// allocation (`largest`) does not find that many contiguous free bytes.
#[must_use]
pub fn panel_fragmented_message(
    panel: Panel,
    largest: u64,
    free: u64,
    events: u64,
    device: i64,
) -> String {
    use memviz_analysis::format::size_short;
    format!(
        "{} of this trace ({events} events) needs about {} of memory in one piece, which the {}          this page has left no longer holds, so it is not built; the views still work. On the          command line, {}",
        panel.title(),
        size_short(largest),
        size_short(free),
        panel.cli(device)
    )
}

/// Heap bytes per trace entry the leak suspects need when the Active Memory Timeline is not
/// built: its timeline and compact layout ([`PANEL_LAYOUT`]) at the layout's build peak,
/// rounded up from 47.9–53.9 (`mem_budget --panels`, `leaks_own_timeline`).
pub const LEAKS_OWN_TIMELINE_BYTES_PER_EVENT: u64 = 56;

/// True when `bytes` contiguous bytes can be had now (reserved and given back at once; in a
/// wasm heap the memory grown for it stays as free space for what follows).
#[must_use]
pub fn contiguous_room(bytes: u64) -> bool {
    let Ok(n) = usize::try_from(bytes) else {
        return false;
    };
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(n).is_ok()
}
