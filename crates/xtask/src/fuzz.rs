//! `cargo xtask fuzz`: the cargo-fuzz targets of tests/fuzz with the limits of docs/fuzzing.md.

use super::*;

// ---------------------------------------------------------------------------------------------
// fuzz

/// The cargo-fuzz crate (outside the workspace) and its targets, in the order they run.
const FUZZ_DIR: &str = "tests/fuzz";
const FUZZ_TARGETS: [&str; 5] = ["unpickle", "snapshot", "analysis", "json", "zip"];
/// cargo-fuzz from crates.io, pinned (`cargo install cargo-fuzz --version … --locked`).
const CARGO_FUZZ_VERSION: &str = "0.13.2";
/// libFuzzer's RSS limit: the process (libFuzzer, ASan and the corpus included) above this is an
/// out-of-memory failure.
const FUZZ_RSS_LIMIT_MB: u64 = 2048;
/// A single allocation above this is an out-of-memory failure (libFuzzer's malloc hook, which
/// needs the sanitizer runtime: cargo fuzz's default ASan build). Inputs are at most a few
/// hundred KB; no correct run allocates anything near this (the largest bounds: a string of at
/// most the input's length, the 1 M-slot memo gap of memviz-pickle (8 MiB), the analysis
/// target's exact layout capped at 2^20 points (12 MiB)).
const FUZZ_MALLOC_LIMIT_MB: u64 = 256;
/// One input running longer than this is a failure (a hang or a super-linear blow-up: a
/// quadratic path on a few KB runs for seconds, not a minute; issue 14).
const FUZZ_TIMEOUT_SECS: u64 = 10;
/// libFuzzer's dictionary: opcode runs of memo-heavy shapes, the snapshot's keys, JSON tokens
/// and zip records.
const FUZZ_DICT: &str = "tests/fuzz/pickle.dict";
/// The first byte of every seed: the targets read one control byte (chunk size, picks) before
/// the file. 63: chunks of 64 bytes for `unpickle`, `snapshot`, `json` and `zip` (for `zip`, its
/// top bits 0: the bytes are the archive).
const FUZZ_SEED_PREFIX: u8 = 63;
/// Seeds larger than this only slow libFuzzer down.
const FUZZ_MAX_SEED_BYTES: u64 = 256 * 1024;
/// Seeds at most this size also get a gzip'd copy (the snapshot loader sniffs gzip), a
/// torch.save-layout zip of it and its JSON text when that is at most this size too
/// (`tests/fixtures/formats.py`, as `generate.py twins` writes them).
const FUZZ_MAX_GZIP_SEED_BYTES: u64 = 64 * 1024;

/// `cargo xtask fuzz` options.
#[derive(Debug, Default, PartialEq, Eq, clap::Args)]
pub(crate) struct FuzzArgs {
    /// Seconds per target (libFuzzer's -max_total_time); 60 when neither this nor --runs is given
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    secs: Option<u64>,
    /// Runs per target (libFuzzer's -runs)
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    runs: Option<u64>,
    /// One target instead of all
    #[arg(long, value_parser = FUZZ_TARGETS)]
    target: Option<String>,
    /// libFuzzer's -max_len in bytes (unset: libFuzzer's default, the largest seed)
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_len: Option<u64>,
    /// Fork mode (-fork=1, one worker): keep fuzzing after a crash, OOM or timeout, and count
    /// them all. It counts time, not runs: use --secs
    #[arg(long, conflicts_with = "runs")]
    keep_going: bool,
}

impl FuzzArgs {
    /// Seconds per target: `--secs`, else 60 unless `--runs` bounds the run instead.
    fn secs(&self) -> Option<u64> {
        match (self.secs, self.runs) {
            (None, None) => Some(60),
            (secs, _) => secs,
        }
    }
}

/// What one target's run did.
#[derive(Debug, Default, PartialEq, Eq)]
struct FuzzStats {
    execs: u64,
    /// Crash, OOM and timeout artifacts it wrote.
    failures: Vec<String>,
}

/// Executions from libFuzzer's output: `stat::number_of_executed_units: N`
/// (`-print_final_stats=1`), else the last `#N` status line (`#N\tDONE …`, `#N\tpulse …`, fork
/// mode's `#N: cov: …`), else `Done N runs`.
fn fuzz_execs(output: &str) -> u64 {
    let mut last_status = None;
    let mut done = None;
    for line in output.lines() {
        if let Some(n) = line.strip_prefix("stat::number_of_executed_units:") {
            if let Ok(n) = n.trim().parse() {
                return n;
            }
        }
        if let Some(rest) = line.strip_prefix('#') {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(n) = digits.parse::<u64>() {
                last_status = Some(n);
            }
        }
        if let Some(rest) = line.strip_prefix("Done ") {
            if let Some(n) = rest.split_whitespace().next().and_then(|n| n.parse().ok()) {
                done = Some(n);
            }
        }
    }
    last_status.or(done).unwrap_or(0)
}

/// Failure artifacts (crash-, oom-, timeout-, leak-) in `dir`.
fn fuzz_artifacts(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| {
                    ["crash-", "oom-", "timeout-", "leak-"]
                        .iter()
                        .any(|p| n.starts_with(p))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Generated fixtures (`generate.py small`), gzip'd, torch.save'd (`.pt`) and JSON copies of the
/// small ones, and `seeds.py`'s, as seeds: each file with the targets' control byte in front. Returns
/// (name, bytes).
fn fuzz_seeds() -> Result<Vec<(String, Vec<u8>)>> {
    let dir = Path::new("target/fuzz-seeds");
    let dir_arg = dir.to_string_lossy().into_owned();
    run(cmd(
        "python3",
        ["tests/fixtures/generate.py", "small", &dir_arg],
    ))?;
    let gz = format!(
        "import gzip, os, sys\n\
         sys.path.insert(0, 'tests/fixtures')\n\
         import formats\n\
         d = sys.argv[1]\n\
         for n in sorted(os.listdir(d)):\n\
         \x20   p = os.path.join(d, n)\n\
         \x20   if n.endswith('.pickle') and os.path.getsize(p) <= {FUZZ_MAX_GZIP_SEED_BYTES}:\n\
         \x20       data = open(p, 'rb').read()\n\
         \x20       open(p + '.gz', 'wb').write(gzip.compress(data, mtime=0))\n\
         \x20       formats.write_torch_save(p[:-len('.pickle')] + '.pt', data)\n\
         \x20       try:\n\
         \x20           text = formats.json_text(formats.read_snapshot(p), p).encode()\n\
         \x20       except SystemExit:\n\
         \x20           continue\n\
         \x20       if len(text) <= {FUZZ_MAX_GZIP_SEED_BYTES}:\n\
         \x20           open(p[:-len('.pickle')] + '.json', 'wb').write(text)\n"
    );
    run(cmd("python3", ["-c", &gz, &dir_arg]))?;
    // The memo-heavy shapes of issue 14 (seed-memo-*.bin, the control byte already in front).
    run(cmd("python3", ["tests/fuzz/seeds.py", &dir_arg]))?;
    let mut seeds = Vec::new();
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot list {dir_arg}: {e}"))?;
    for entry in entries.filter_map(|e| e.ok()) {
        let small = entry
            .metadata()
            .is_ok_and(|m| m.is_file() && m.len() <= FUZZ_MAX_SEED_BYTES);
        let name = entry.file_name().to_string_lossy().into_owned();
        let fixture = [".pickle", ".gz", ".pt", ".json"]
            .iter()
            .any(|e| name.ends_with(e));
        if small && fixture {
            let body = fs::read(entry.path())
                .map_err(|e| format!("cannot read {}: {e}", entry.path().display()))?;
            let mut bytes = vec![FUZZ_SEED_PREFIX];
            bytes.extend_from_slice(&body);
            seeds.push((format!("seed-{name}"), bytes));
        } else if small && name.starts_with("seed-memo-") && name.ends_with(".bin") {
            let bytes = fs::read(entry.path())
                .map_err(|e| format!("cannot read {}: {e}", entry.path().display()))?;
            seeds.push((name, bytes));
        }
    }
    seeds.sort();
    Ok(seeds)
}

/// The seeds a target gets: every seed, but only JSON texts (raw, or gzip'd ones named so by
/// `seeds.py`) for `json` and only zip archives for `zip`, so their runs stay on the reader they
/// test.
fn fuzz_seed_for(target: &str, name: &str, bytes: &[u8]) -> bool {
    let file = bytes.get(1..).unwrap_or_default();
    match target {
        "json" => {
            let text = file.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(file);
            let first = text.iter().find(|b| !b.is_ascii_whitespace());
            matches!(first, Some(b'{' | b'['))
                || (file.starts_with(&[0x1f, 0x8b]) && name.contains("json"))
        }
        "zip" => file.starts_with(b"PK\x03\x04"),
        _ => true,
    }
}

/// cargo-fuzz at [`CARGO_FUZZ_VERSION`], installed from crates.io when `cargo fuzz --version`
/// reports another version or none.
fn ensure_cargo_fuzz() -> Result<()> {
    let installed = || {
        quiet_output("cargo", &["fuzz", "--version"])
            .is_some_and(|out| out.contains("cargo-fuzz") && out.contains(CARGO_FUZZ_VERSION))
    };
    if installed() {
        return Ok(());
    }
    eprintln!(
        "fuzz: cargo-fuzz {CARGO_FUZZ_VERSION} missing; building it (a few minutes on 2 cores)"
    );
    run(cmd(
        "cargo",
        [
            "install",
            "cargo-fuzz",
            "--version",
            CARGO_FUZZ_VERSION,
            "--locked",
        ],
    ))?;
    if installed() {
        Ok(())
    } else {
        Err(format!("cargo-fuzz {CARGO_FUZZ_VERSION} was installed but `cargo fuzz --version` does not report it; is another cargo-fuzz earlier on PATH?"))
    }
}

/// Runs one target; its libFuzzer output goes to stderr (without the per-input NEW / REDUCE
/// lines) and is parsed for the execution count.
fn fuzz_target(target: &str, corpus: &Path, a: &FuzzArgs) -> Result<FuzzStats> {
    use std::io::{BufRead, BufReader};
    let artifacts = Path::new(FUZZ_DIR).join("artifacts").join(target);
    let before = fuzz_artifacts(&artifacts);
    let mut args: Vec<String> = vec![
        "+nightly".into(),
        "fuzz".into(),
        "run".into(),
        "--fuzz-dir".into(),
        FUZZ_DIR.into(),
        target.into(),
        corpus.to_string_lossy().into_owned(),
        "--".into(),
        format!("-rss_limit_mb={FUZZ_RSS_LIMIT_MB}"),
        format!("-malloc_limit_mb={FUZZ_MALLOC_LIMIT_MB}"),
        format!("-timeout={FUZZ_TIMEOUT_SECS}"),
        format!("-dict={FUZZ_DICT}"),
        "-print_final_stats=1".into(),
    ];
    if let Some(s) = a.secs() {
        args.push(format!("-max_total_time={s}"));
    }
    if let Some(r) = a.runs {
        args.push(format!("-runs={r}"));
    }
    if let Some(m) = a.max_len {
        args.push(format!("-max_len={m}"));
    }
    if a.keep_going {
        // One worker process at a time; it restarts after each failure.
        for f in [
            "-fork=1",
            "-ignore_crashes=1",
            "-ignore_ooms=1",
            "-ignore_timeouts=1",
        ] {
            args.push(f.into());
        }
    }
    let mut c = cmd("cargo", &args);
    let shown = display(&c);
    eprintln!("$ {shown}");
    let mut child = c
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start `{shown}`: {e}"))?;
    let mut output = String::new();
    if let Some(err) = child.stderr.take() {
        for line in BufReader::new(err).lines().map_while(|l| l.ok()) {
            let noisy = line.contains("\tNEW ")
                || line.contains("\tREDUCE ")
                || line.contains("\tNEW_FUNC")
                || line.contains("# Uses:");
            if !noisy {
                eprintln!("{line}");
            }
            output.push_str(&line);
            output.push('\n');
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("`{shown}` did not finish: {e}"))?;
    let failures: Vec<String> = fuzz_artifacts(&artifacts)
        .into_iter()
        .filter(|n| !before.contains(n))
        .map(|n| artifacts.join(n).to_string_lossy().into_owned())
        .collect();
    if !status.success() && failures.is_empty() {
        // Not a finding (those write an artifact): the build or the tool failed.
        return Err(format!("`{shown}` failed ({status})"));
    }
    Ok(FuzzStats {
        execs: fuzz_execs(&output),
        failures,
    })
}

/// `cargo xtask fuzz`: every cargo-fuzz target of tests/fuzz (or one) for `--secs` seconds or
/// `--runs` runs each, on a corpus seeded from the generated fixtures, with libFuzzer's memory
/// and time limits; prints executions and failures per target. docs/fuzzing.md.
pub(crate) fn fuzz(a: &FuzzArgs) -> Result<()> {
    if !Path::new(FUZZ_DIR).join("Cargo.toml").exists() {
        return Err(format!(
            "{FUZZ_DIR}/Cargo.toml is missing: the cargo-fuzz crate has not landed yet"
        ));
    }
    let toolchains = quiet_output("rustup", &["toolchain", "list"]).unwrap_or_default();
    if !toolchains.lines().any(|l| l.starts_with("nightly")) {
        return Err("cargo fuzz needs a nightly toolchain (`rustup toolchain install nightly`), and none is installed".to_owned());
    }
    ensure_cargo_fuzz()?;
    let targets: Vec<&str> = match &a.target {
        Some(t) => vec![t.as_str()],
        None => FUZZ_TARGETS.to_vec(),
    };
    // Build every target first, so a build error stops the run before any fuzzing.
    let mut build = vec!["+nightly", "fuzz", "build", "--fuzz-dir", FUZZ_DIR];
    if let Some(t) = &a.target {
        build.push(t);
    }
    run(cmd("cargo", &build))?;

    let seeds = fuzz_seeds()?;
    let mut rows = Vec::new();
    for target in &targets {
        let corpus = Path::new(FUZZ_DIR).join("corpus").join(target);
        fs::create_dir_all(&corpus)
            .map_err(|e| format!("cannot create {}: {e}", corpus.display()))?;
        let mine: Vec<_> = seeds
            .iter()
            .filter(|(name, bytes)| fuzz_seed_for(target, name, bytes))
            .collect();
        for (name, bytes) in &mine {
            let to = corpus.join(name);
            if fs::read(&to).ok().as_ref() != Some(bytes) {
                fs::write(&to, bytes)
                    .map_err(|e| format!("cannot write the seed {}: {e}", to.display()))?;
            }
        }
        eprintln!("\n==> fuzz target `{target}` ({} seeds)", mine.len());
        let started = Instant::now();
        let stats = fuzz_target(target, &corpus, a)?;
        rows.push((*target, stats, started.elapsed().as_secs_f64()));
    }

    println!("\n| target | execs | seconds | exec/s | crashes |");
    println!("|---|---:|---:|---:|---:|");
    let (mut total_execs, mut total_secs, mut failures) = (0u64, 0f64, Vec::new());
    for (target, stats, secs) in &rows {
        println!(
            "| {target} | {} | {secs:.0} | {:.0} | {} |",
            stats.execs,
            stats.execs as f64 / secs.max(1e-9),
            stats.failures.len()
        );
        total_execs += stats.execs;
        total_secs += secs;
        failures.extend(stats.failures.iter().cloned());
    }
    println!(
        "| total | {total_execs} | {total_secs:.0} | {:.0} | {} |",
        total_execs as f64 / total_secs.max(1e-9),
        failures.len()
    );
    if failures.is_empty() {
        return Ok(());
    }
    for f in &failures {
        println!("failure: {f}");
    }
    Err(format!(
        "{} failure(s); reproduce one with `cargo +nightly fuzz run --fuzz-dir {FUZZ_DIR} TARGET ARTIFACT`, minimise it with `cargo +nightly fuzz tmin --fuzz-dir {FUZZ_DIR} TARGET ARTIFACT` (docs/fuzzing.md)",
        failures.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cargo xtask fuzz ARGS` as clap parses it.
    fn parse(args: &[&str]) -> Result<FuzzArgs, clap::Error> {
        use clap::Parser;
        #[derive(Debug, Parser)]
        struct Fuzz {
            #[command(flatten)]
            args: FuzzArgs,
        }
        Fuzz::try_parse_from(std::iter::once("fuzz").chain(args.iter().copied())).map(|f| f.args)
    }

    #[test]
    fn parses_fuzz_options() {
        let d = parse(&[]).expect("no options");
        assert_eq!(
            (d.secs(), d.runs, d.target.as_deref()),
            (Some(60), None, None)
        );
        let a = parse(&["--secs", "5", "--target=snapshot", "--max-len", "4096"]).expect("options");
        assert_eq!(a.secs(), Some(5));
        assert_eq!(a.target.as_deref(), Some("snapshot"));
        assert_eq!(a.max_len, Some(4096));
        let r = parse(&["--runs=1000"]).expect("runs");
        assert_eq!((r.secs(), r.runs), (None, Some(1000)));
        assert!(parse(&["--target", "nope"]).is_err());
        assert!(parse(&["--secs"]).is_err());
        assert!(parse(&["--secs", "0"]).is_err());
        assert!(parse(&["--keep-going", "--runs", "5"]).is_err());
        assert!(parse(&["--keep-going"]).is_ok_and(|a| a.keep_going));
        assert!(parse(&["--bogus"]).is_err());
    }

    #[test]
    fn reads_libfuzzer_exec_counts() {
        let plain = "#8192\tpulse  cov: 1 ft: 2\n#38948\tDONE   cov: 1101\nDone 38948 runs in 31 second(s)\nstat::number_of_executed_units: 38950\n";
        assert_eq!(fuzz_execs(plain), 38950);
        assert_eq!(fuzz_execs("#12\tINITED\n#38948\tDONE   cov: 1101\n"), 38948);
        let fork = "#4012: cov: 3877 ft: 7961 corp: 476 exec/s: 2006 oom/timeout/crash: 0/0/0 time: 3s job: 1\n#60673: cov: 3979 ft: 8737 corp: 592 exec/s: 1904 oom/timeout/crash: 0/0/0 time: 31s job: 6\nINFO: exiting: 0 time: 31s\n";
        assert_eq!(fuzz_execs(fork), 60673);
        assert_eq!(fuzz_execs("Done 77 runs in 0 second(s)\n"), 77);
        assert_eq!(fuzz_execs(""), 0);
    }

    #[test]
    fn json_and_zip_get_their_own_seeds() {
        let seed = |file: &[u8]| [&[FUZZ_SEED_PREFIX][..], file].concat();
        let (json, bom) = (seed(b" {\"a\": 1}"), seed(b"\xEF\xBB\xBF[]"));
        let (gz, zip, pickle) = (
            seed(b"\x1f\x8b\x08"),
            seed(b"PK\x03\x04\x14"),
            seed(b"\x80\x02}."),
        );
        for s in [&json, &bom] {
            assert!(fuzz_seed_for("json", "seed-a.pickle", s) && !fuzz_seed_for("zip", "x", s));
        }
        assert!(fuzz_seed_for("json", "seed-memo-json.gz.bin", &gz));
        assert!(!fuzz_seed_for("json", "seed-a.pickle.gz", &gz));
        assert!(fuzz_seed_for("zip", "seed-a.pt", &zip) && !fuzz_seed_for("json", "x", &zip));
        assert!(!fuzz_seed_for("json", "x", &pickle) && !fuzz_seed_for("zip", "x", &pickle));
        for t in ["unpickle", "snapshot", "analysis"] {
            assert!([&json, &zip, &pickle]
                .iter()
                .all(|s| fuzz_seed_for(t, "x", s)));
        }
        assert!(parse(&["--target", "zip"]).is_ok() && parse(&["--target", "json"]).is_ok());
    }
}
