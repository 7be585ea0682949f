//! Prints the validation (and one replay's timing) of each snapshot given on the command line:
//! `cargo run -p memviz-alloc --profile ci --example whatif_validate -- FILE...`
use std::time::Instant;

fn main() {
    for path in std::env::args().skip(1) {
        let Ok(bytes) = std::fs::read(&path) else {
            eprintln!("{path}: unreadable");
            continue;
        };
        let t0 = Instant::now();
        let Ok(snap) = memviz_snapshot::load_slice(&bytes) else {
            eprintln!("{path}: does not parse");
            continue;
        };
        let parse = t0.elapsed();
        let name = std::path::Path::new(&path)
            .file_name()
            .map_or(path.clone(), |n| n.to_string_lossy().into_owned());
        for device in 0..snap.traces.len() as i64 {
            let t1 = Instant::now();
            let prep = memviz_alloc::Prepared::new(&snap, device);
            let t_prep = t1.elapsed();
            let t2 = Instant::now();
            let out = prep
                .replay(
                    &prep.recorded,
                    &memviz_alloc::Options::default(),
                    &mut |_, _| true,
                )
                .ok();
            let t_replay = t2.elapsed();
            if std::env::var_os("SWEEP").is_some() {
                let t3 = Instant::now();
                if let Ok(rows) = memviz_alloc::sweep(&prep, None, &mut |_, _| true) {
                    for r in rows {
                        let o = &r.outcome;
                        println!(
                            "  sweep {:<34} peak_reserved {:>14} frag {:>13} largest {:>12} mallocs {:>6} min_capacity {:?}",
                            r.name, o.peak_reserved, o.fragmentation_at_peak.free,
                            o.fragmentation_at_peak.largest_free_block, o.cuda_mallocs, o.min_capacity
                        );
                    }
                }
                println!("  sweep {:.2}s", t3.elapsed().as_secs_f64());
            }
            let Ok(v) = memviz_alloc::validate(&snap, device, &mut |_, _| true) else {
                continue;
            };
            let r = &v.recorded;
            if r.segment_alloc + r.segment_free + r.segment_map + r.segment_unmap == 0 {
                continue;
            }
            println!(
                "{name}\tdev {device}\tmatch {} per-event {}\trec a{} f{} m{} u{} peak {}\tmodel a{} f{} m{} u{} peak {}\tconf `{}`\tdiff {:?}",
                v.matches, v.matches_per_event,
                r.segment_alloc, r.segment_free, r.segment_map, r.segment_unmap, r.peak_reserved,
                v.model.segment_alloc, v.model.segment_free, v.model.segment_map, v.model.segment_unmap, v.model.peak_reserved,
                v.settings, v.first_difference
            );
            if let Some(o) = out {
                println!(
                    "  events {} parse {:.3}s prepare {:.3}s replay {:.3}s model heap {} B, empty_cache {}, ooms {}, fitted {}, inconsistencies {}, completed {}",
                    snap.traces.get(device as usize).map_or(0, |t| t.len()),
                    parse.as_secs_f64(), t_prep.as_secs_f64(), t_replay.as_secs_f64(),
                    o.model_heap_bytes, o.empty_cache_calls, o.ooms, o.recorded_ooms_fitted, o.inconsistencies, o.completed
                );
            }
        }
    }
}
