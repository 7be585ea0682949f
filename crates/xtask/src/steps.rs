//! The steps of a multi-step command (`cargo xtask test`): numbered in the log, some run
//! together on threads of their own (their commands' output to a file each, printed when the
//! group ends), and a table at the end of each step's start, wall time and CPU.

use std::fmt::Write as _;
use std::fs;
use std::path::PathBuf;
use std::time::Instant;

use super::{repo_root, rusage, Result};

/// One step run: its title, when it started (seconds into the command), its wall time,
/// whether it passed, and the CPU of the processes it ran (None inside a group run together:
/// the group's CPU is on its own line).
pub(crate) struct StepTime {
    what: String,
    start: f64,
    secs: f64,
    ok: bool,
    cpu: Option<f64>,
}

/// A step of [`Steps::together`]: its title and what it runs (on a thread of its own).
pub(crate) type Lane<'a> = (&'a str, Box<dyn FnOnce() -> Result<()> + Send + 'a>);

/// Steps of a multi-step command, numbered in the log; when it is dropped (at the end of the
/// command, whether it passed or stopped at a failing step) it prints every step run so far
/// with its start, wall time and CPU, and the total.
pub(crate) struct Steps {
    command: &'static str,
    total: usize,
    done: usize,
    started: Instant,
    times: Vec<StepTime>,
    /// Groups run together: (first row, rows, wall, CPU).
    groups: Vec<(usize, usize, f64, Option<f64>)>,
}

impl Steps {
    pub(crate) fn new(command: &'static str, total: usize) -> Self {
        Self {
            command,
            total,
            done: 0,
            started: Instant::now(),
            times: Vec::new(),
            groups: Vec::new(),
        }
    }

    fn failed(&self, n: usize, what: &str, e: &str) -> String {
        format!(
            "step {n}/{} ({what}) failed: {e}\nFix it, then rerun `cargo xtask {}`.",
            self.total, self.command
        )
    }

    pub(crate) fn step(&mut self, what: &str, f: impl FnOnce() -> Result<()>) -> Result<()> {
        self.done += 1;
        let n = self.done;
        eprintln!("\n==> [{n}/{}] {what}", self.total);
        let cpu0 = rusage::children_cpu_secs();
        let started = Instant::now();
        let result = f();
        let secs = started.elapsed().as_secs_f64();
        let cpu = cpu0.zip(rusage::children_cpu_secs()).map(|(a, b)| b - a);
        self.times.push(StepTime {
            what: what.to_owned(),
            start: (started - self.started).as_secs_f64(),
            secs,
            ok: result.is_ok(),
            cpu,
        });
        result.map_err(|e| self.failed(n, what, &e))?;
        eprintln!("    [{n}/{}] ok in {secs:.1} s", self.total);
        Ok(())
    }

    /// Runs `lanes` at the same time, each on its own thread, for steps whose work leaves a
    /// core idle (a single-threaded link or wasm-opt, a browser waiting on frames). The first
    /// lane's commands print to the log as usual; the others' go to a file under
    /// target/xtask-logs/, printed whole when the group ends, so that the log stays readable.
    /// Fails (after every lane has ended) with the first failing lane's error.
    pub(crate) fn together(&mut self, lanes: Vec<Lane<'_>>) -> Result<()> {
        let first = self.times.len();
        let n0 = self.done + 1;
        self.done += lanes.len();
        let logs: Vec<Option<PathBuf>> = (0..lanes.len())
            .map(|i| {
                (i > 0).then(|| repo_root().join(format!("target/xtask-logs/step-{}.log", n0 + i)))
            })
            .collect();
        if let Some(dir) = logs.iter().flatten().next().and_then(|p| p.parent()) {
            fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        for (i, (what, _)) in lanes.iter().enumerate() {
            let to = logs[i]
                .as_ref()
                .map_or(String::new(), |p| format!(" (log: {})", p.display()));
            eprintln!("\n==> [{}/{}] {what}{to}", n0 + i, self.total);
        }
        let cpu0 = rusage::children_cpu_secs();
        let started = Instant::now();
        let results: Vec<(String, f64, Result<()>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = lanes
                .into_iter()
                .zip(logs.iter().cloned())
                .map(|((what, f), log)| {
                    let what = what.to_owned();
                    scope.spawn(move || {
                        if let Some(path) = &log {
                            let _ = fs::write(path, "");
                        }
                        LOG.with(|l| *l.borrow_mut() = log);
                        let t = Instant::now();
                        let r = f();
                        (what, t.elapsed().as_secs_f64(), r)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        (
                            String::from("?"),
                            0.0,
                            Err("the step's thread panicked".to_owned()),
                        )
                    })
                })
                .collect()
        });
        let wall = started.elapsed().as_secs_f64();
        let cpu = cpu0.zip(rusage::children_cpu_secs()).map(|(a, b)| b - a);
        for log in logs.iter().flatten() {
            let text = fs::read_to_string(log).unwrap_or_default();
            eprintln!(
                "\n---- {} ----\n{text}---- end of {} ----",
                log.display(),
                log.display()
            );
        }
        let mut error = None;
        for (i, (what, secs, r)) in results.into_iter().enumerate() {
            let n = n0 + i;
            self.times.push(StepTime {
                what: what.clone(),
                start: (started - self.started).as_secs_f64(),
                secs,
                ok: r.is_ok(),
                cpu: None,
            });
            match r {
                Ok(()) => eprintln!("    [{n}/{}] ok in {secs:.1} s", self.total),
                Err(e) => {
                    let e = self.failed(n, &what, &e);
                    eprintln!("    {e}");
                    error.get_or_insert(e);
                }
            }
        }
        self.groups
            .push((first, self.times.len() - first, wall, cpu));
        error.map_or(Ok(()), Err)
    }

    /// The table printed at the end: one row per step run (when it started, its wall time and
    /// CPU), a line per group run together, then the total.
    fn table(&self) -> String {
        let mut s = format!(
            "\nxtask {}: time per step (start, wall, CPU = user + system of its processes)\n",
            self.command
        );
        let cpu_text =
            |cpu: Option<f64>| cpu.map_or("       -".to_owned(), |c| format!("{c:>8.1}"));
        for (i, t) in self.times.iter().enumerate() {
            // The title up to its first " (": the table stays one line per step.
            let short = t.what.split(" (").next().unwrap_or(&t.what);
            let mark = if t.ok { "ok" } else { "FAILED" };
            let _ = writeln!(
                s,
                "  {:>2}/{} +{:>6.0} s {:>8.1} s {} s  {mark:<6}  {short}",
                i + 1,
                self.total,
                t.start,
                t.secs,
                cpu_text(t.cpu),
            );
            if let Some((first, len, wall, cpu)) = self.groups.iter().find(|g| g.0 + g.1 == i + 1) {
                let cores = cpu.map_or(String::new(), |c| {
                    format!(", {:.2} cores busy", c / wall.max(1e-9))
                });
                let _ = writeln!(
                    s,
                    "        steps {}-{} together: {wall:.1} s wall, CPU {} s{cores}",
                    first + 1,
                    first + len,
                    cpu_text(*cpu).trim(),
                );
            }
        }
        let total = self.started.elapsed().as_secs_f64();
        let _ = writeln!(
            s,
            "  total {total:>7.1} s ({:.1} min), {} of {} steps run",
            total / 60.0,
            self.times.len(),
            self.total
        );
        s
    }
}

impl Drop for Steps {
    fn drop(&mut self) {
        if !self.times.is_empty() {
            eprint!("{}", self.table());
        }
    }
}

thread_local! {
    /// Where this thread's commands write (stdout and stderr) while it runs a step of
    /// [`Steps::together`] other than the first: None = the inherited log.
    static LOG: std::cell::RefCell<Option<PathBuf>> = const { std::cell::RefCell::new(None) };
}

/// The file this thread's commands write to, opened for appending (see [`LOG`]).
pub(crate) fn thread_log() -> Option<fs::File> {
    let path = LOG.with(|l| l.borrow().clone())?;
    fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{cmd, run};

    #[test]
    fn the_step_table_lists_every_step_run_and_the_total() {
        let mut steps = Steps::new("demo", 3);
        assert!(steps.step("first (with details)", || Ok(())).is_ok());
        let err = steps
            .step("second", || Err("boom".to_owned()))
            .expect_err("fails");
        assert!(err.contains("step 2/3 (second) failed: boom"), "{err}");
        let table = steps.table();
        assert!(table.contains("xtask demo: time per step"), "{table}");
        assert!(
            table.contains(" 1/3 ") && table.contains("ok      first\n"),
            "{table}"
        );
        assert!(
            table.contains(" 2/3 ") && table.contains("FAILED  second\n"),
            "{table}"
        );
        assert!(table.contains("2 of 3 steps run"), "{table}");
        assert!(table.contains("total"), "{table}");
        // Printed once, by the drop at the end of the command; nothing when no step ran.
        steps.times.clear();
    }

    #[test]
    fn steps_together_run_at_once_log_apart_and_report_the_first_failure() {
        let mut steps = Steps::new("demo-together", 4);
        assert!(steps.step("alone", || Ok(())).is_ok());
        let lanes: Vec<Lane<'_>> = vec![
            (
                "first lane",
                Box::new(|| run(cmd("true", Vec::<&str>::new()))),
            ),
            (
                "second lane (to a file)",
                Box::new(|| run(cmd("sh", ["-c", "echo from-the-second-lane"]))),
            ),
            ("third lane", Box::new(|| Err("boom".to_owned()))),
        ];
        let err = steps.together(lanes).expect_err("the third lane fails");
        assert!(err.contains("step 4/4 (third lane) failed: boom"), "{err}");
        let log = repo_root().join("target/xtask-logs/step-3.log");
        let text = fs::read_to_string(&log).expect("the second lane's log");
        assert!(
            text.contains("from-the-second-lane") && text.contains("$ sh -c"),
            "{text}"
        );
        let table = steps.table();
        assert!(table.contains("steps 2-4 together:"), "{table}");
        assert!(
            table.contains("ok      second lane\n") && table.contains("FAILED  third lane\n"),
            "{table}"
        );
        steps.times.clear();
    }
}
