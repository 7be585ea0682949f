//! How much memory the page's viewer uses, and whether a file or a view still fits.
//!
//! A wasm32 heap is at most 4 GiB and never shrinks. The page opens a file unless it genuinely
//! cannot fit, and decides that from what it learns while reading (trace entries so far,
//! memory in use), never from the file's size alone:
//! - while a file streams in, [`projected_open_bytes`] scales the trace entries read so far to
//!   the whole file and prices each at [`OPEN_BYTES_PER_ENTRY`] (the model plus the first
//!   view, measured); a file whose projection passes the budget is refused early, with a
//!   sentence naming the estimate and the CLI; the memory actually in use is checked too;
//! - a view built later (segments, private pools, State History, flamegraph) is checked against
//!   what is left (`memviz_viewer::memory`); a view that cannot fit says so and the others keep
//!   working; so is every panel and structure built on first use (hit index, tooltips, leaks,
//!   source lines, search, …: `memviz_viewer::memory::panel_bytes`), which answers
//!   `{"unavailable": sentence}` instead;
//! - anything that still runs out (an allocation past 4 GiB traps) kills only the worker: the
//!   page replaces it and reopens the files it had (www/js/main.js).
//!
//! In the browser the global allocator is `cap::Cap` (a well-kept crate: the workspace forbids
//! `unsafe`, which a counting allocator of our own would need), so [`used`] is the bytes the
//! Rust heap holds now. Natively (tests) [`used`] is 0 and the tests install their own probe.

/// The most the page lets the wasm heap hold: 4 GiB less room for the renderer's buffers, the
/// JS glue's copies of each chunk and allocator slack.
pub const PAGE_BUDGET: u64 = (4 << 30) - (320 << 20);

/// Heap bytes per trace entry of the model, rounded up from
/// `cargo run -p memviz-viewer --release --example mem_budget` on generated snapshots (23.5 on
/// a 150 MB tiled file, 19.5 on a 150 MB training loop; docs/limits.md). The first view adds
/// `view_bytes_per_event(ViewKind::Active)` (its hit index, built on the first hover,
/// included).
pub const MODEL_BYTES_PER_ENTRY: u64 = 25;

/// What opening a file costs per trace entry: the model and the Active Memory Timeline.
pub const OPEN_BYTES_PER_ENTRY: u64 = MODEL_BYTES_PER_ENTRY
    + memviz_viewer::memory::view_bytes_per_event(memviz_viewer::ViewKind::Active);

/// A projection needs at least this much of the file read (or all of it) to be trusted.
const MIN_SAMPLE_BYTES: u64 = 16 << 20;

#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOC: cap::Cap<std::alloc::System> = cap::Cap::new(std::alloc::System, usize::MAX);

/// Bytes the Rust heap holds now (0 natively).
#[must_use]
pub fn used() -> u64 {
    #[cfg(target_arch = "wasm32")]
    {
        ALLOC.allocated() as u64
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        0
    }
}

/// The wasm memory's size, the bytes the Rust heap holds now and the most it has held since
/// the worker started (zeros natively): where an open's memory goes, phase by phase
/// (`timings.memory` of the worker's `opened` message; tests/web/bench_page.mjs prints them).
#[must_use]
pub fn probe() -> [u64; 3] {
    #[cfg(target_arch = "wasm32")]
    {
        [
            core::arch::wasm32::memory_size(0) as u64 * (64 << 10),
            ALLOC.allocated() as u64,
            ALLOC.max_allocated() as u64,
        ]
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        [0; 3]
    }
}

thread_local! {
    /// [`probe`] and the clock (ms) after each step of the views built since [`take_phases`]
    /// last ran.
    static PHASES: std::cell::RefCell<Vec<Phase>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// A step of building a view: its name, [`probe`] after it and the clock then
/// (`memviz_viewer::scene::now_ms`: `performance.now()` in the page's worker).
pub type Phase = (&'static str, [u64; 3], f64);

/// The viewer's phase hook (`memviz_viewer::memory::set_phase_hook`): records [`probe`] and
/// the time.
pub fn record_phase(name: &'static str) {
    /// Rows kept at most (views built between two opens add rows too): the newest.
    const KEPT: usize = 256;
    let p = probe();
    let ms = memviz_viewer::scene::now_ms();
    PHASES.with(|v| {
        let mut v = v.borrow_mut();
        if v.len() >= KEPT {
            v.remove(0);
        }
        v.push((name, p, ms));
    });
}

/// The phases recorded since the last call, and forgets them.
pub fn take_phases() -> Vec<Phase> {
    PHASES.with(|v| std::mem::take(&mut *v.borrow_mut()))
}

/// Lowers the hard allocation limit to `bytes` (tests: `?mem_limit_mb=`; an allocation past it
/// fails as a real out-of-memory does). No effect natively.
pub fn set_hard_limit(bytes: u64) {
    #[cfg(target_arch = "wasm32")]
    {
        let _ = ALLOC.set_limit(usize::try_from(bytes).unwrap_or(usize::MAX));
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = bytes;
    }
}

pub use memviz_viewer::memory::Memory;

/// Makes sure the heap has about `ahead` bytes (at least 1/16 of the heap, at least 16 MiB)
/// free at its top, growing it in one step when not.
///
/// Why: the allocator grows wasm memory by as little as each allocation needs, and every
/// `memory.grow` is slow in V8 (node 20: 1,600 grows of 64 KiB take 1.0 s, one grow of 100 MB
/// 1–3 ms). A parse makes many small allocations, so without this most of its growth came in
/// small steps. Growing by taking a block and freeing it at once leaves it to the allocator as
/// free space; the high-water mark rises by at most the step. No effect natively, and nothing
/// happens past the budget or the hard limit (the reservation just fails).
pub fn grow_ahead(ahead: u64) {
    #[cfg(target_arch = "wasm32")]
    {
        const PAGE: u64 = 64 << 10;
        let heap = core::arch::wasm32::memory_size(0) as u64 * PAGE;
        let free = heap.saturating_sub(used());
        let step = ahead.max(heap / 16).max(16 << 20);
        if free < step / 2 && used().saturating_add(step) < PAGE_BUDGET {
            let mut block: Vec<u8> = Vec::new();
            let _ = block.try_reserve_exact(usize::try_from(step).unwrap_or(0));
        }
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = ahead;
    }
}

/// The page's memory: the allocator's count against [`PAGE_BUDGET`].
#[must_use]
pub fn page_memory() -> Memory {
    Memory {
        used,
        budget: PAGE_BUDGET,
    }
}

/// The memory the viewer will hold once a file is open and drawn, or `None` while too little
/// is read to tell (and nothing is over the budget yet).
///
/// `before` is what the viewer held before the file; `entries` the trace entries read so far
/// from `read` of `total` bytes (0: unknown, then what is read so far counts). The entries are
/// scaled to the whole file and priced at [`OPEN_BYTES_PER_ENTRY`]; the memory in use now is a
/// floor.
#[must_use]
pub fn projected_open_bytes(
    memory: &Memory,
    before: u64,
    entries: u64,
    read: u64,
    total: u64,
) -> Option<u64> {
    let now = memory.used();
    if total > 0 && read < MIN_SAMPLE_BYTES.min(total) {
        return (now > memory.budget).then_some(now);
    }
    let scale = if total > 0 && read > 0 {
        (total as f64 / read as f64).max(1.0)
    } else {
        1.0
    };
    let estimate = before as f64 + entries as f64 * scale * OPEN_BYTES_PER_ENTRY as f64;
    Some((estimate as u64).max(now))
}

/// Why a file cannot open in the page: its estimated memory, what it was estimated from, and
/// what the CLI does instead.
#[must_use]
pub fn too_big_message(needed: u64, read: u64, budget: u64, others: u64) -> String {
    use memviz_analysis::format::size_short;
    let others = if others > 64 << 20 {
        format!(
            " (the files already open hold {}; closing the tab and opening this file alone may \
             fit)",
            size_short(others)
        )
    } else {
        String::new()
    };
    format!(
        "this snapshot needs about {} of memory to open here (estimated from the first {} \
         read), more than the {} a browser tab gives this page{others}. The native command \
         line has no such limit: `memviz summary FILE` gives the summary, `memviz folded`, \
         `memviz lines`, `memviz leaks` and `memviz oom` the other views",
        size_short(needed),
        size_short(read),
        size_short(budget)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static USED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }
    fn probe() -> u64 {
        USED.with(std::cell::Cell::get)
    }
    const MB: u64 = 1 << 20;

    #[test]
    fn projection_scales_the_entries_read() {
        let m = Memory {
            used: probe,
            budget: 1 << 30,
        };
        USED.with(|u| u.set(60 * MB));
        // 100 k entries in the first 30 MiB of 300 MiB: a million entries in all.
        let p = projected_open_bytes(&m, 40 * MB, 100_000, 30 * MB, 300 * MB).expect("enough read");
        assert_eq!(p, 40 * MB + 1_000_000 * OPEN_BYTES_PER_ENTRY);
        assert_eq!(
            projected_open_bytes(&m, 40 * MB, 100, MB, 300 * MB),
            None,
            "too little read"
        );
        // Too little read, but already over the budget: that is what it needs at least.
        USED.with(|u| u.set(2 << 30));
        assert_eq!(
            projected_open_bytes(&m, 40 * MB, 100, MB, 300 * MB),
            Some(2 << 30)
        );
        // Unknown total: what is read so far; the memory in use is a floor.
        USED.with(|u| u.set(50 * MB));
        assert_eq!(
            projected_open_bytes(&m, 40 * MB, 1000, 5 * MB, 0),
            Some(50 * MB)
        );
        assert_eq!(m.free(), (1 << 30) - 50 * MB);
    }

    #[test]
    fn the_message_names_the_estimate_and_the_cli() {
        let msg = too_big_message(5 << 30, 64 << 20, PAGE_BUDGET, 0);
        assert!(
            msg.contains("5.0GiB") && msg.contains("memviz summary FILE"),
            "{msg}"
        );
        assert!(!msg.contains("already open"), "{msg}");
        let msg = too_big_message(5 << 30, 64 << 20, PAGE_BUDGET, 1 << 30);
        assert!(msg.contains("already open hold 1.0GiB"), "{msg}");
    }
}
