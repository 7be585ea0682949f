//! Reading the top-level value into a [`Snapshot`] at STOP.

use super::*;

impl SnapshotBuilder {
    /// Generic conversion to JSON (settings, extensions). Containers can contain themselves
    /// through the memo, so the output is cut at depth 64 and after
    /// [`budget::JSON_VALUES`] values for the whole file; a shared container or string is
    /// converted again for each reference, so the JSON of the whole file is cut too, past the
    /// budget's JSON allowance (linear in the bytes read).
    pub(super) fn to_json(&self, v: Value, atoms: &Atoms, depth: u32) -> serde_json::Value {
        // (Non-string dict keys are cut to MAX_KEY_CHARS by `short_key`.)
        let left = self.budget.json_values_left();
        let mut budget = left;
        let json = self.to_json_bounded(v, atoms, depth, &mut budget);
        self.budget.spend_json_values(left - budget);
        json
    }

    pub(super) fn to_json_bounded(
        &self,
        v: Value,
        atoms: &Atoms,
        depth: u32,
        budget: &mut usize,
    ) -> serde_json::Value {
        use serde_json::Value as J;
        // Each value costs its text (strings) plus 16 bytes, from the file's allowance.
        let cost = 16
            + match v {
                Value::Str(s) => atoms.str(s).len(),
                Value::Bytes(b) => atoms.bytes(b).len(),
                _ => 0,
            };
        if depth > 64 || *budget == 0 || !self.budget.json(cost) {
            return J::String("...".into());
        }
        *budget -= 1;
        match v {
            Value::None => J::Null,
            Value::Bool(b) => J::Bool(b),
            Value::Int(i) => J::from(i),
            Value::BigInt(b) => match atoms.big_int_i128(b) {
                Some(i) => u64::try_from(i)
                    .map(J::from)
                    .unwrap_or_else(|_| J::String(i.to_string())),
                None => J::String("<integer too large>".into()),
            },
            Value::Float(f) => serde_json::Number::from_f64(f)
                .map(J::Number)
                .unwrap_or(J::Null),
            Value::Str(s) => J::String(atoms.str(s).to_string()),
            Value::Bytes(b) => J::String(String::from_utf8_lossy(atoms.bytes(b)).into_owned()),
            Value::Obj(_) => match self.obj(v) {
                Some(Obj::List(idx) | Obj::Tuple(idx)) => {
                    let mut out = Vec::new();
                    for x in self.items(idx) {
                        if depth + 1 > 64 || self.json_spent(*budget) {
                            out.push(J::String("...".into()));
                            break;
                        }
                        out.push(self.to_json_bounded(x, atoms, depth + 1, budget));
                    }
                    J::Array(out)
                }
                Some(Obj::Dict(idx)) => {
                    let mut m = serde_json::Map::new();
                    for kv in self.items(idx).chunks_exact(2) {
                        if depth + 1 > 64 || self.json_spent(*budget) {
                            m.insert("...".into(), J::String("...".into()));
                            break;
                        }
                        let key = match kv[0] {
                            Value::Str(s) if self.budget.json(atoms.str(s).len()) => {
                                atoms.str(s).to_string()
                            }
                            Value::Str(_) => "...".to_string(),
                            // A container key becomes its JSON text, cut short: keys nested as
                            // each other's keys would otherwise re-escape and double per level.
                            other => short_key(
                                self.to_json_bounded(other, atoms, depth + 1, budget)
                                    .to_string(),
                            ),
                        };
                        m.insert(key, self.to_json_bounded(kv[1], atoms, depth + 1, budget));
                    }
                    J::Object(m)
                }
                Some(Obj::Event(_)) => J::String("<trace entry>".into()),
                Some(Obj::Events(run)) => {
                    let len = self.runs.get(run as usize).map_or(0, |r| r.1);
                    let mut out = Vec::new();
                    for _ in 0..len {
                        if depth + 1 > 64 || self.json_spent(*budget) || !self.budget.json(16) {
                            out.push(J::String("...".into()));
                            break;
                        }
                        *budget -= 1;
                        out.push(J::String("<trace entry>".into()));
                    }
                    J::Array(out)
                }
                Some(Obj::Frame(_)) => J::String("<frame>".into()),
                Some(Obj::Stack(_) | Obj::FreshStack(_) | Obj::OpenStack(_)) => {
                    J::String("<stack>".into())
                }
                Some(Obj::Segment(_)) => J::String("<segment>".into()),
                Some(Obj::Block(_) | Obj::PlacedBlock(_)) => J::String("<block>".into()),
                Some(Obj::SegmentBlocks(_)) => J::String("<blocks>".into()),
                None => J::Null,
            },
        }
    }

    /// True once a JSON conversion may add nothing more: its value count or the file's JSON
    /// allowance is spent. A container then ends with one `"..."`, as one at the depth limit
    /// does, instead of a `"..."` per remaining item (fuzzing found a 567-byte file, a list of
    /// 40 references to itself: each of the 100 000 lists reached held 40 cut items at depth
    /// 64, 450 MB, and 10 s under ASan).
    fn json_spent(&self, budget: usize) -> bool {
        budget == 0 || self.budget.json_cut().is_some()
    }

    /// Read the top-level value into a [`Snapshot`]. Errors only when it is not a snapshot at all.
    pub fn finish(
        mut self,
        root: Value,
        mut atoms: Atoms,
        protocol: u8,
    ) -> Result<Snapshot, BuildError> {
        // Give back what the rest no longer needs before the traces are sealed (and expect no
        // more rows: entries read from here on are the odd ones without an action).
        self.trace_started = true;
        self.objs.shrink_to_fit();
        self.store.shrink_to_fit();
        self.rows.addr.release_index();
        self.rows.size.release_index();
        let k = &self.keys;
        let (layout, seg_list, traces_val) = match self.obj(root) {
            Some(Obj::Dict(idx)) => {
                let pairs = self.items(idx);
                let seg = Self::get(&pairs, k.segments);
                let tr = Self::get(&pairs, k.device_traces);
                if seg.is_none() && tr.is_none() {
                    let found: Vec<String> = pairs
                        .chunks_exact(2)
                        .take(12)
                        .map(|kv| match kv[0] {
                            Value::Str(s) => format!("'{}'", crate::warnings::short(atoms.str(s))),
                            other => other.type_name().to_string(),
                        })
                        .collect();
                    return Err(BuildError::Unexpected(format!(
                        "a valid pickle, but not a memory snapshot: expected a dict with the keys 'segments' and 'device_traces', found {}",
                        if found.is_empty() { "an empty dict".to_string() } else { format!("the keys {}", found.join(", ")) }
                    )));
                }
                (Layout::Dict, seg, tr)
            }
            Some(Obj::List(idx)) => {
                // A bare list of segments (FORMAT.md §6); a list holding no dict at all is
                // some other pickled list, and so is one whose dicts have none of a segment's
                // keys.
                let items = self.items(idx);
                self.refuse_non_segments(&items, &atoms)?;
                if let Some(first) = items.first().filter(|_| {
                    !items
                        .iter()
                        .any(|v| matches!(self.obj(*v), Some(Obj::Dict(_) | Obj::Segment(_))))
                }) {
                    let what = match self.obj(*first) {
                        Some(Obj::Event(_)) => "trace entries",
                        Some(
                            Obj::List(_)
                            | Obj::Stack(_)
                            | Obj::FreshStack(_)
                            | Obj::OpenStack(_),
                        ) => "lists",
                        Some(Obj::Tuple(_)) => "tuples",
                        Some(Obj::Frame(_)) => "stack frames",
                        Some(Obj::Block(_) | Obj::PlacedBlock(_)) => "blocks",
                        Some(Obj::SegmentBlocks(_)) => "lists",
                        _ => first.type_name(),
                    };
                    return Err(BuildError::Unexpected(format!(
                        "a valid pickle, but not a memory snapshot: the top level is a list of {what} \
                         (expected a dict with the keys 'segments' and 'device_traces', or a list of segment dicts)"
                    )));
                }
                (Layout::BareList, Some(root), None)
            }
            Some(Obj::Event(_)) => {
                return Err(BuildError::Unexpected("a valid pickle, but not a memory snapshot: the top level is a single trace entry".into()))
            }
            Some(Obj::Events(_)) => {
                return Err(BuildError::Unexpected("a valid pickle, but not a memory snapshot: the top level is a list of trace entries \
                         (expected a dict with the keys 'segments' and 'device_traces', or a list of segment dicts)".into()))
            }
            _ => {
                return Err(BuildError::Unexpected(format!(
                    "a valid pickle, but not a memory snapshot: the top level is {} (expected a dict with 'segments' and 'device_traces')",
                    match self.obj(root) {
                        Some(Obj::Tuple(_)) => "a tuple",
                        _ => root.type_name(),
                    }
                )))
            }
        };

        // Other top-level keys.
        let mut allocator_settings = None;
        let mut annotations = Vec::new();
        let mut extra = Vec::new();
        if layout == Layout::Dict {
            let pairs: Vec<Value> = self.dict_pairs(root).unwrap_or_default();
            for kv in pairs.chunks_exact(2) {
                let Value::Str(key) = kv[0] else { continue };
                let k = &self.keys;
                if key == k.segments || key == k.device_traces {
                } else if key == k.allocator_settings {
                    allocator_settings = Some(self.to_json(kv[1], &atoms, 0));
                } else if key == k.external_annotations {
                    annotations = self.read_annotations(kv[1], &atoms)?;
                } else if key == k.host_segments || key == k.host_traces || key == k.categories {
                    extra.push((atoms.str(key).to_string(), self.to_json(kv[1], &atoms, 0)));
                } else {
                    let name = crate::warnings::quoted(atoms.str(key));
                    self.warnings.warn(&format!("top key {name}"), || {
                        format!("unknown top-level key {name} ignored")
                    });
                    let key = atoms.str(key);
                    let key = if self.budget.json(key.len()) {
                        key.to_string()
                    } else {
                        crate::warnings::short(key)
                    };
                    extra.push((key, self.to_json(kv[1], &atoms, 0)));
                }
            }
        }

        let (segments, blocks, block_forward_frames) = match seg_list {
            Some(v) => self.read_segments(v, &atoms)?,
            None => {
                self.warnings.warn("no segments", || {
                    "the file has no `segments`: no final allocator state".into()
                });
                (Vec::new(), Vec::new(), Vec::new())
            }
        };
        let history = std::mem::take(&mut self.records.history);
        let traces = match traces_val {
            Some(v) => self.read_traces(v, &atoms)?,
            None => Vec::new(),
        };
        self.check_invariants(&segments, &blocks, &traces, &atoms);
        if let Some(limit) = self.budget.json_cut() {
            self.warnings.warn_always("json cut", || {
                format!(
                    "`allocator_settings` or other top-level keys were cut (\"...\"): their \
                     shared values repeat past {} MB of text or {} values",
                    limit >> 20,
                    budget::JSON_VALUES
                )
            });
        }
        self.budget.check()?;

        atoms.strings.freeze();
        let SnapshotBuilder {
            frames,
            stacks,
            warnings,
            unknown_actions,
            ..
        } = self;
        Ok(Snapshot {
            strings: atoms.strings,
            frames,
            stacks,
            segments,
            blocks,
            history,
            block_forward_frames,
            unknown_actions,
            traces,
            allocator_settings,
            external_annotations: annotations,
            extra,
            layout,
            protocol,
            warnings: warnings.into_strings(),
        })
    }

    /// A bare list (FORMAT.md §6) is a list of segments when one item was read as a segment
    /// or is a dict with at least one of a segment's keys. A list of dicts without any is some
    /// other pickled data (it opened as an empty snapshot): refused, naming the keys found
    /// (the first few distinct ones, escaped and cut).
    fn refuse_non_segments(&self, items: &[Value], atoms: &Atoms) -> Result<(), BuildError> {
        const KEYS_SHOWN: usize = 8;
        let mut dicts = 0usize;
        let mut found: Vec<StrId> = Vec::new();
        let mut more = false;
        let mut other_keys = false;
        for it in items {
            let idx = match self.obj(*it) {
                Some(Obj::Segment(_)) => return Ok(()),
                Some(Obj::Dict(idx)) => idx,
                _ => continue,
            };
            dicts += 1;
            let pairs = self.items(idx);
            if self.record_keys.any_segment_key(&pairs) {
                return Ok(());
            }
            for kv in pairs.chunks_exact(2) {
                match kv[0] {
                    Value::Str(k) if found.contains(&k) => {}
                    Value::Str(k) if found.len() < KEYS_SHOWN => found.push(k),
                    Value::Str(_) => more = true,
                    _ => other_keys = true,
                }
            }
        }
        if dicts == 0 {
            return Ok(());
        }
        let mut names: Vec<String> = found
            .iter()
            .map(|&k| crate::warnings::quoted(atoms.str(k)))
            .collect();
        if other_keys {
            names.push("keys that are not strings".into());
        }
        let keys = if names.is_empty() {
            "no keys at all".to_string()
        } else {
            format!(
                "the keys {}{}",
                names.join(", "),
                if more { ", …" } else { "" }
            )
        };
        Err(BuildError::Unexpected(format!(
            "a valid pickle, but not a memory snapshot: the top level is a list of {dicts} dict{} \
             with none of a segment's keys (`address`, `total_size`, `blocks`, …); found {keys} \
             (expected a dict with the keys 'segments' and 'device_traces', or a list of segment dicts)",
            if dicts == 1 { "" } else { "s" }
        )))
    }

    pub(super) fn read_annotations(
        &mut self,
        v: Value,
        atoms: &Atoms,
    ) -> Result<Vec<Annotation>, BuildError> {
        let items = self.list_items(v).unwrap_or_default();
        let mut out = Vec::new();
        out.try_reserve_exact(items.len())
            .map_err(|_| super::frames::oom("the annotations", items.len() * 48))?;
        for it in items {
            // An entry (and its extra pairs) is made per reference: charged to the budget.
            let pairs_len = match self.obj(it) {
                Some(Obj::Dict(idx)) if idx != EMPTY => self.store.len(Store::items_at(idx)),
                _ => 0,
            };
            self.budget.charge(
                std::mem::size_of::<Annotation>() as u64 + pairs_len as u64 * 4,
                "an annotation dict listed again in `external_annotations` is copied for each reference",
            )?;
            let Some(pairs) = self.dict_pairs(it) else {
                self.warnings.warn("annotation type", || {
                    "an external annotation is not a dict; skipped".into()
                });
                continue;
            };
            let mut a = Annotation {
                name: NO_STR,
                stage: NO_STR,
                device: 0,
                time_us: NO_TIME,
                extra: Vec::new(),
            };
            for kv in pairs.chunks_exact(2) {
                let Value::Str(key) = kv[0] else { continue };
                let k = &self.keys;
                if key == k.name {
                    a.name = self.str_of(kv[1], "annotation name");
                } else if key == k.stage {
                    a.stage = self.str_of(kv[1], "annotation stage");
                } else if key == k.device {
                    a.device = self.i64_of(kv[1], atoms, "annotation device");
                } else if key == k.time_us {
                    a.time_us = self.i64_of(kv[1], atoms, "annotation time_us");
                } else if let Value::Str(s) = kv[1] {
                    a.extra.push((key, s));
                }
            }
            // Exactly the extras (what the budget was charged for), not the doubling's slack.
            a.extra.shrink_to_fit();
            out.push(a);
        }
        Ok(out)
    }

    pub(super) fn check_invariants(
        &mut self,
        segments: &[Segment],
        blocks: &[Block],
        traces: &[DeviceTrace],
        atoms: &Atoms,
    ) {
        for s in segments {
            let bl = blocks
                .get(s.blocks.0 as usize..s.blocks.1 as usize)
                .unwrap_or(&[]);
            if bl.is_empty() {
                continue;
            }
            let (total, alloc, legacy) = block_sums(bl);
            if total != s.total_size && !legacy {
                let addr = s.address;
                self.warnings.warn("tile", || {
                    format!("blocks do not tile their segment (e.g. segment 0x{addr:x}: blocks sum to {total}, total_size {})", s.total_size)
                });
            }
            if alloc != s.allocated_size && !legacy {
                let addr = s.address;
                self.warnings.warn("allocated_size", || {
                    format!("a segment's allocated_size differs from the sum of its active blocks (e.g. segment 0x{addr:x}: {} vs {alloc})", s.allocated_size)
                });
            }
        }
        for (d, t) in traces.iter().enumerate() {
            let mut prev = NO_TIME;
            let back = t.has_time()
                && (0..t.len()).step_by(CHECK_ROWS).any(|from| {
                    times_go_back(t, from, (from + CHECK_ROWS).min(t.len()), &mut prev)
                });
            if back {
                self.warnings.warn("time order", || {
                    format!("device {d}: time_us goes backwards in the trace")
                });
            }
            if t.is_empty() {
                continue;
            }
            // Rows per action code (the unknown actions are the codes from 10, as many as
            // there are unknown names).
            let mut counts = [0u64; 256];
            for rows in t.action.0.chunks(CHECK_ROWS) {
                count_codes(rows, &mut counts);
            }
            let codes = 10 + self.unknown_actions.len();
            for (code, &n) in counts.iter().enumerate().take(codes).skip(10) {
                let Action::Unknown(u) = Action::from_code(code as u8) else {
                    continue;
                };
                if n == 0 {
                    continue;
                }
                let s = self
                    .unknown_actions
                    .get(u.0 as usize)
                    .copied()
                    .unwrap_or(NO_STR);
                let name = if s == NO_STR {
                    "<missing>".to_string()
                } else {
                    crate::warnings::quoted(atoms.str(s))
                };
                self.warnings.warn(&format!("unknown action {d} {name}"), || {
                    format!("device {d}: {n} trace entries have the unknown action {name}; shown as unknown events")
                });
            }
        }
    }
}

/// Rows per call of the checks over a trace. The wasm engine compiles a function with its
/// optimizing tier only for the calls after it got hot: one call over millions of rows ran in
/// the baseline tier to the end (the checks took 30 ms in node on a 150 MB file, 3 natively).
const CHECK_ROWS: usize = 1 << 14;

/// Σ block sizes, Σ sizes of the active blocks, and whether one has legacy history.
#[inline(never)]
fn block_sums(bl: &[Block]) -> (u64, u64, bool) {
    let mut total = 0u64;
    let mut alloc = 0u64;
    let mut legacy = false;
    for b in bl {
        total = total.wrapping_add(b.size);
        if b.state == BlockState::ActiveAllocated {
            alloc = alloc.wrapping_add(b.size);
        }
        legacy |= b.history.1 > b.history.0;
    }
    (total, alloc, legacy)
}

/// Whether `time_us` goes backwards in rows `from..to` (rows without a time are skipped, and
/// so is the row after one), after `prev`, the time of the row before; `prev` becomes the last.
#[inline(never)]
fn times_go_back(t: &DeviceTrace, from: usize, to: usize, prev: &mut i64) -> bool {
    for i in from..to {
        let x = t.time_us(i).unwrap_or(NO_TIME);
        let back = *prev != NO_TIME && x != NO_TIME && x < *prev;
        *prev = x;
        if back {
            return true;
        }
    }
    false
}

/// Add the rows per action code of `rows` to `counts`.
#[inline(never)]
fn count_codes(rows: &[u8], counts: &mut [u64; 256]) {
    for &c in rows {
        if let Some(n) = counts.get_mut(c as usize) {
            *n += 1;
        }
    }
}

/// At most this many characters of a non-string dict key's JSON text are kept.
const MAX_KEY_CHARS: usize = 200;

/// `text` cut to [`MAX_KEY_CHARS`] characters (with `…` when cut).
fn short_key(mut text: String) -> String {
    if let Some((i, _)) = text.char_indices().nth(MAX_KEY_CHARS) {
        text.truncate(i);
        text.push('…');
    }
    text
}
