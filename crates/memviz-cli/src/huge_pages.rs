//! The CLI's global allocator: the system allocator, plus `madvise(MADV_HUGEPAGE)` on every
//! block of 2 MiB or more (Linux only), plus a memory limit whose failures end the process with
//! exit 2 and a sentence instead of an abort.
//!
//! # Huge pages
//! On a machine whose transparent huge pages are in `madvise` mode (Debian's default), a
//! 2 GB snapshot's model is faulted in 4 KiB at a time: `memviz summary` took 330 k page faults,
//! and more system time (4–5 s) than the parse itself (4.2 s user), on this project's VMs.
//! Advising the big columns cuts the faults 512-fold. It changes no result, only how the
//! kernel backs the memory; where huge pages are off or unavailable the advice is ignored.
//! No library does this for the system allocator (jemalloc and mimalloc have options, but need
//! C builds or process-wide environment variables), so it is these few lines of our own.
//!
//! # No abort on allocation failure
//! Rust aborts (SIGABRT, exit 134) when an infallible allocation fails, and stable Rust cannot
//! replace that handler. So [`install`] (called first thing in `main`):
//! * sets a limit on the bytes allocated at once: `$MEMVIZ_MAX_MEMORY` (bytes, or with a `K`,
//!   `M` or `G` suffix), else the machine's physical memory. Past it an allocation fails at
//!   once, where the kernel would otherwise overcommit and later kill the process (SIGKILL, no
//!   message at all);
//! * installs a SIGABRT handler that, when an allocation failed before the abort, writes one
//!   sentence to stderr and exits with 2 (`_exit`: nothing else runs). Any other abort keeps its
//!   default action.
//!
//! Fallible paths (`try_reserve`) see the failure as an error and go on; only an infallible one
//! ends the process, and then with a sentence. The accounting is one relaxed atomic add per
//! allocation and per free.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Blocks at least this large are advised.
const MIN_ADVISED: usize = 2 << 20;
/// x86-64 / aarch64 huge page size (the advice is only a hint elsewhere).
const HUGE_PAGE: usize = 2 << 20;

/// Bytes allocated and not yet freed.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// The most bytes allocated at once ([`install`] sets it; unlimited before).
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The size of the last allocation that failed (0: none failed).
static FAILED: AtomicUsize = AtomicUsize::new(0);

pub struct HugePages;

fn advise(p: *mut u8, len: usize) {
    if p.is_null() || len < MIN_ADVISED {
        return;
    }
    let start = (p as usize).div_ceil(HUGE_PAGE) * HUGE_PAGE;
    let end = (p as usize + len) / HUGE_PAGE * HUGE_PAGE;
    if end > start {
        #[cfg(target_os = "linux")]
        // SAFETY: `[start, end)` lies inside the block just returned by the system allocator,
        // which this process owns; MADV_HUGEPAGE changes no contents and cannot fail unsafely.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

/// Counts `n` more bytes, unless that passes the limit.
fn reserve(n: usize) -> bool {
    let before = LIVE.fetch_add(n, Ordering::Relaxed);
    if before.saturating_add(n) > LIMIT.load(Ordering::Relaxed) {
        LIVE.fetch_sub(n, Ordering::Relaxed);
        FAILED.store(n.max(1), Ordering::Relaxed);
        return false;
    }
    true
}

fn release(n: usize) {
    LIVE.fetch_sub(n, Ordering::Relaxed);
}

/// After the system allocator answered `p` for `n` reserved bytes.
fn settle(p: *mut u8, n: usize) -> *mut u8 {
    if p.is_null() {
        release(n);
        FAILED.store(n.max(1), Ordering::Relaxed);
    }
    p
}

// SAFETY: every call is forwarded to `System` unchanged or refused with a null pointer (the
// documented way to report a failed allocation); `advise` only adds a hint to memory the block
// already owns.
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !reserve(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded with the caller's guarantees.
        let p = settle(unsafe { System.alloc(layout) }, layout.size());
        advise(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !reserve(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded with the caller's guarantees.
        let p = settle(unsafe { System.alloc_zeroed(layout) }, layout.size());
        advise(p, layout.size());
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) };
        release(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size();
        if new_size > old && !reserve(new_size - old) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            // The old block stays, at its old size.
            if new_size > old {
                release(new_size - old);
            }
            FAILED.store(new_size.max(1), Ordering::Relaxed);
            return p;
        }
        if new_size < old {
            release(old - new_size);
        }
        advise(p, new_size);
        p
    }
}

/// `$MEMVIZ_MAX_MEMORY`'s value: bytes, or with a `K`, `M` or `G` suffix (powers of 1024).
fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (digits, unit) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (s.get(..i)?, 1usize << 10),
        (i, 'm' | 'M') => (s.get(..i)?, 1 << 20),
        (i, 'g' | 'G') => (s.get(..i)?, 1 << 30),
        _ => (s, 1),
    };
    digits.trim().parse::<usize>().ok()?.checked_mul(unit)
}

/// The machine's physical memory, if known.
fn physical_memory() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf only reads system configuration.
        let (pages, page) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        let (pages, page) = (usize::try_from(pages).ok()?, usize::try_from(page).ok()?);
        pages.checked_mul(page)
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// Writes `n` in decimal into `buf` at `at`; the new end.
fn put_decimal(buf: &mut [u8], mut at: usize, mut n: usize) -> usize {
    let mut digits = [0u8; 20];
    let mut k = 0;
    loop {
        if let Some(d) = digits.get_mut(k) {
            *d = b'0' + (n % 10) as u8;
        }
        k += 1;
        n /= 10;
        if n == 0 || k == digits.len() {
            break;
        }
    }
    while k > 0 {
        k -= 1;
        if let (Some(slot), Some(&d)) = (buf.get_mut(at), digits.get(k)) {
            *slot = d;
            at += 1;
        }
    }
    at
}

fn put(buf: &mut [u8], at: usize, s: &[u8]) -> usize {
    let end = (at + s.len()).min(buf.len());
    if let (Some(dst), Some(src)) = (buf.get_mut(at..end), s.get(..end - at)) {
        dst.copy_from_slice(src);
    }
    end
}

/// The SIGABRT handler: after a failed allocation, one sentence and exit 2. Only
/// async-signal-safe calls (`write`, `_exit`, `signal`, `raise`), no allocation.
#[cfg(target_os = "linux")]
extern "C" fn on_abort(_signal: libc::c_int) {
    let size = FAILED.load(Ordering::Relaxed);
    if size == 0 {
        // Not an allocation failure: the default action (core dump, exit 134).
        // SAFETY: restoring the default disposition and re-raising is async-signal-safe.
        unsafe {
            libc::signal(libc::SIGABRT, libc::SIG_DFL);
            libc::raise(libc::SIGABRT);
        }
        return;
    }
    let mut buf = [0u8; 400];
    let mut at = put(&mut buf, 0, b"memviz: out of memory: an allocation of ");
    at = put_decimal(&mut buf, at, size);
    at = put(&mut buf, at, b" bytes failed with ");
    at = put_decimal(&mut buf, at, LIVE.load(Ordering::Relaxed) >> 20);
    at = put(&mut buf, at, b" MiB in use and a limit of ");
    at = put_decimal(&mut buf, at, LIMIT.load(Ordering::Relaxed) >> 20);
    at = put(
        &mut buf,
        at,
        b" MiB: this file needs more memory than this machine gives memviz \
          (MEMVIZ_MAX_MEMORY sets the limit)\n",
    );
    // SAFETY: write and _exit are async-signal-safe; `buf[..at]` is initialised.
    unsafe {
        libc::write(2, buf.as_ptr().cast(), at);
        libc::_exit(2);
    }
}

/// Sets the memory limit and the SIGABRT handler (module documentation). Call once, first.
pub fn install() {
    let limit = std::env::var("MEMVIZ_MAX_MEMORY")
        .ok()
        .and_then(|v| parse_size(&v))
        .or_else(physical_memory)
        .unwrap_or(usize::MAX);
    LIMIT.store(limit, Ordering::Relaxed);
    #[cfg(target_os = "linux")]
    // SAFETY: installs a handler that only makes async-signal-safe calls; the sigaction struct
    // is zeroed (no flags, empty mask) and then given the handler.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_abort as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGABRT, &sa, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1024"), Some(1024));
        assert_eq!(parse_size("64M"), Some(64 << 20));
        assert_eq!(parse_size(" 2g "), Some(2 << 30));
        assert_eq!(parse_size("3k"), Some(3072));
        assert_eq!(parse_size("M"), None);
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("99999999999999999999G"), None);
    }

    #[test]
    fn decimals() {
        let mut b = [0u8; 30];
        let n = put_decimal(&mut b, 0, 0);
        assert_eq!(&b[..n], b"0");
        let n = put_decimal(&mut b, 0, 8_589_934_592);
        assert_eq!(&b[..n], b"8589934592");
        let n = put(&mut b, n, b" B");
        assert_eq!(&b[..n], b"8589934592 B");
        let n = put_decimal(&mut b, 0, usize::MAX);
        assert_eq!(&b[..n], usize::MAX.to_string().as_bytes());
    }
}
