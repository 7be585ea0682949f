//! Wait for a child process with a deadline (SIGKILL on expiry) and read its exact peak RSS.
//!
//! std's `Child::wait` calls `waitpid`, which drops the kernel's resource usage; `wait4` returns
//! it, including `ru_maxrss`, the child's high-water mark (what `/usr/bin/time -v` prints as
//! "Maximum resident set size", which a fresh machine may lack). libc has no safe wrapper for it
//! and the one crate that wraps it is barely used, so this module makes the one call itself: the
//! only `unsafe` of xtask (see Cargo.toml's lints).
#![allow(unsafe_code)]

use std::io;
use std::process::{Child, ExitStatus};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How a child ended.
pub struct Outcome {
    pub status: ExitStatus,
    /// Wall time from `started` to the child's exit.
    pub secs: f64,
    /// Peak resident set size in bytes (None where wait4 is not available).
    pub max_rss: Option<u64>,
    /// Killed (SIGKILL) because it ran past the time limit.
    pub timed_out: bool,
    /// Killed (SIGKILL) because its resident set grew past the RSS cap.
    pub rss_capped: bool,
}

/// The limits of one run: SIGKILL past `time`, or once the resident set exceeds `rss_cap` bytes
/// (read from /proc every 10 ms, so a fast grower can pass it by what it maps in 10 ms). The cap
/// keeps a benchmark of memory bombs from taking a shared machine's memory.
#[derive(Clone, Copy)]
pub struct Limits {
    pub time: Duration,
    pub rss_cap: Option<u64>,
}

/// The resident set of a live process, from /proc (Linux).
fn current_rss(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = text
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kb * 1024)
}

/// Whether `child` must be killed now; sets the matching flag.
fn over_limits(
    child: &Child,
    elapsed: Duration,
    limits: Limits,
    last_rss_check: &mut Duration,
    timed_out: &mut bool,
    rss_capped: &mut bool,
) -> bool {
    if elapsed >= limits.time {
        *timed_out = true;
        return true;
    }
    if let Some(cap) = limits.rss_cap {
        if elapsed >= *last_rss_check + Duration::from_millis(10) {
            *last_rss_check = elapsed;
            if current_rss(child.id()).is_some_and(|r| r > cap) {
                *rss_capped = true;
                return true;
            }
        }
    }
    false
}

/// The pause between two polls: short while the child is young, so that the wall time of a
/// command of a few milliseconds is not rounded up by the poll.
fn poll_pause(elapsed: Duration) -> Duration {
    if elapsed < Duration::from_millis(50) {
        Duration::from_micros(200)
    } else if elapsed < Duration::from_secs(1) {
        Duration::from_millis(1)
    } else {
        Duration::from_millis(5)
    }
}

/// Waits for `child` (spawned at `started`), killing it once past `limits`.
#[cfg(target_os = "linux")]
pub fn wait(child: &mut Child, started: Instant, limits: Limits) -> io::Result<Outcome> {
    use std::mem::MaybeUninit;
    use std::os::unix::process::ExitStatusExt;

    let pid = libc::pid_t::try_from(child.id())
        .map_err(|_| io::Error::other("child pid out of range"))?;
    let (mut timed_out, mut rss_capped, mut killed) = (false, false, false);
    let mut last_rss_check = Duration::ZERO;
    loop {
        let mut status: libc::c_int = 0;
        let mut usage = MaybeUninit::<libc::rusage>::zeroed();
        let flags = if killed { 0 } else { libc::WNOHANG };
        // SAFETY: `pid` is our own child, not yet reaped (std never waited for it: only this
        // loop does, and it returns as soon as wait4 reaps it); `status` and `usage` are valid,
        // writable and live for the call.
        let r = unsafe { libc::wait4(pid, &mut status, flags, usage.as_mut_ptr()) };
        if r == pid {
            let secs = started.elapsed().as_secs_f64();
            // SAFETY: wait4 returned the pid, so it filled `usage` (it was zeroed before anyway).
            let usage = unsafe { usage.assume_init() };
            let kb = u64::try_from(usage.ru_maxrss).unwrap_or(0);
            return Ok(Outcome {
                status: ExitStatus::from_raw(status),
                secs,
                max_rss: Some(kb * 1024),
                timed_out,
                rss_capped,
            });
        }
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let elapsed = started.elapsed();
        if !killed
            && over_limits(
                child,
                elapsed,
                limits,
                &mut last_rss_check,
                &mut timed_out,
                &mut rss_capped,
            )
        {
            // Not reaped yet (wait4 said so just now), so the pid is still this child's.
            child.kill()?;
            killed = true;
            continue;
        }
        sleep(poll_pause(elapsed));
    }
}

/// Elsewhere: std's `try_wait`, no RSS (and no RSS cap).
#[cfg(not(target_os = "linux"))]
pub fn wait(child: &mut Child, started: Instant, limits: Limits) -> io::Result<Outcome> {
    let (mut timed_out, mut rss_capped, mut killed) = (false, false, false);
    let mut last_rss_check = Duration::ZERO;
    let limits = Limits {
        rss_cap: None,
        ..limits
    };
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Outcome {
                status,
                secs: started.elapsed().as_secs_f64(),
                max_rss: None,
                timed_out,
                rss_capped,
            });
        }
        let elapsed = started.elapsed();
        if !killed
            && over_limits(
                child,
                elapsed,
                limits,
                &mut last_rss_check,
                &mut timed_out,
                &mut rss_capped,
            )
        {
            child.kill()?;
            killed = true;
            continue;
        }
        sleep(poll_pause(elapsed));
    }
}

/// CPU seconds (user + system) of every child process this one has waited for so far, and
/// their waited-for descendants (getrusage RUSAGE_CHILDREN): `cargo xtask test`'s CPU per step.
#[cfg(target_os = "linux")]
pub fn children_cpu_secs() -> Option<f64> {
    use std::mem::MaybeUninit;
    let mut usage = MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one rusage into the pointer it is given, which is valid and
    // sized for it; the value is read only when the call reports success.
    let r = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()) };
    if r != 0 {
        return None;
    }
    // SAFETY: getrusage succeeded, so it initialised the struct.
    let u = unsafe { usage.assume_init() };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(secs(u.ru_utime) + secs(u.ru_stime))
}

#[cfg(not(target_os = "linux"))]
pub fn children_cpu_secs() -> Option<f64> {
    None
}

/// The signal that ended a process, if a signal did.
#[cfg(unix)]
pub fn signal(status: &ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

#[cfg(not(unix))]
pub fn signal(_status: &ExitStatus) -> Option<i32> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn reads_exit_code_and_peak_rss() {
        // python3 is what the bounds generator needs anyway; 64 MB touched, then exit 3.
        let started = Instant::now();
        let mut child = Command::new("python3")
            .args(["-c", "b = bytearray(64 << 20); import sys; sys.exit(3)"])
            .spawn()
            .expect("python3 runs");
        let out = wait(&mut child, started, limits(60, None)).expect("wait");
        assert_eq!(out.status.code(), Some(3));
        assert!(!out.timed_out && !out.rss_capped);
        if let Some(rss) = out.max_rss {
            assert!(rss >= 64 << 20, "peak RSS {rss} below the 64 MB touched");
        }
    }

    #[test]
    fn kills_at_the_limit() {
        let started = Instant::now();
        let mut child = Command::new("sleep").arg("30").spawn().expect("sleep runs");
        let limits = Limits {
            time: Duration::from_millis(100),
            rss_cap: None,
        };
        let out = wait(&mut child, started, limits).expect("wait");
        assert!(out.timed_out && !out.rss_capped);
        assert_eq!(signal(&out.status), Some(9));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn kills_past_the_rss_cap() {
        // Touches 512 MB, then waits: killed once its RSS passes the 128 MB cap.
        let started = Instant::now();
        let mut child = Command::new("python3")
            .args([
                "-c",
                "import time; b = bytearray(512 << 20); time.sleep(60)",
            ])
            .spawn()
            .expect("python3 runs");
        let out = wait(&mut child, started, limits(60, Some(128 << 20))).expect("wait");
        assert!(out.rss_capped && !out.timed_out);
        assert_eq!(signal(&out.status), Some(9));
        // Killed within a poll of passing the cap; wait4's peak comes from the kernel's
        // high-water mark, which may trail /proc's VmRSS by the per-CPU counters' slack (seen:
        // just under the cap once in CI), so the floor sits below the cap.
        assert!(out.max_rss.is_some_and(|r| r > 96 << 20));
    }

    fn limits(secs: u64, rss_cap: Option<u64>) -> Limits {
        Limits {
            time: Duration::from_secs(secs),
            rss_cap,
        }
    }
}
