//! The allocator's constants (ALLOCATOR.md §1; the same in every version read).

pub const MIB: u64 = 1 << 20;
/// kMinBlockSize: every block is a multiple of this.
pub const MIN_BLOCK: u64 = 512;
/// kSmallSize: requests up to this go to the small pool.
pub const SMALL_SIZE: u64 = MIB;
/// kSmallBuffer: a small-pool segment (and an expandable small page).
pub const SMALL_BUFFER: u64 = 2 * MIB;
/// kLargeBuffer: the segment of a 1 to 10 MiB request (and an expandable large page).
pub const LARGE_BUFFER: u64 = 20 * MIB;
/// kMinLargeAlloc: from here on a segment is the request rounded to [`ROUND_LARGE`].
pub const MIN_LARGE_ALLOC: u64 = 10 * MIB;
/// kRoundLarge.
pub const ROUND_LARGE: u64 = 2 * MIB;
