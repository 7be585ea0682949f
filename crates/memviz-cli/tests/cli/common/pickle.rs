//! Snapshots written as protocol-4 pickles the way Python's pickler (torch's
//! `_dump_snapshot`) writes them: every str, list and dict memoized, repeats as BINGET /
//! LONG_BINGET, lists and dicts filled by MARK … APPENDS / SETITEMS in batches of 1,000. A stack
//! or an event dict used many times is written once and referenced after that, which is how
//! small hostile files hold many devices, events or frames.
#![allow(dead_code)]

use std::collections::HashMap;

/// A protocol-4 pickle being written.
pub struct Pickle {
    buf: Vec<u8>,
    memo: u32,
    strings: HashMap<String, u32>,
}

impl Default for Pickle {
    fn default() -> Self {
        Self::new()
    }
}

impl Pickle {
    pub fn new() -> Self {
        Pickle {
            buf: vec![0x80, 4],
            memo: 0,
            strings: HashMap::new(),
        }
    }

    /// MEMOIZE: the slot of the value on top of the stack.
    fn memoize(&mut self) -> u32 {
        self.buf.push(0x94);
        self.memo += 1;
        self.memo - 1
    }

    /// BINGET / LONG_BINGET of a memo slot.
    pub fn get(&mut self, slot: u32) {
        if slot < 256 {
            self.buf.extend_from_slice(&[b'h', slot as u8]);
        } else {
            self.buf.push(b'j');
            self.buf.extend_from_slice(&slot.to_le_bytes());
        }
    }

    /// A string, written once and then fetched from the memo.
    pub fn str(&mut self, s: &str) {
        if let Some(&slot) = self.strings.get(s) {
            self.get(slot);
            return;
        }
        if s.len() < 256 {
            self.buf.extend_from_slice(&[0x8c, s.len() as u8]);
        } else {
            self.buf.push(b'X');
            self.buf.extend_from_slice(&(s.len() as u32).to_le_bytes());
        }
        self.buf.extend_from_slice(s.as_bytes());
        let slot = self.memoize();
        self.strings.insert(s.to_string(), slot);
    }

    /// An integer in the shortest encoding Python uses.
    pub fn int(&mut self, v: i128) {
        if (0..256).contains(&v) {
            self.buf.extend_from_slice(&[b'K', v as u8]);
        } else if (0..65536).contains(&v) {
            self.buf.push(b'M');
            self.buf.extend_from_slice(&(v as u16).to_le_bytes());
        } else if i32::try_from(v).is_ok() {
            self.buf.push(b'J');
            self.buf.extend_from_slice(&(v as i32).to_le_bytes());
        } else {
            let bytes = v.to_le_bytes();
            let mut n = 16;
            // Minimal two's complement length.
            while n > 1 {
                let top = bytes[n - 1];
                let next_sign = bytes[n - 2] & 0x80;
                if (top == 0 && next_sign == 0) || (top == 0xff && next_sign != 0) {
                    n -= 1;
                } else {
                    break;
                }
            }
            self.buf.extend_from_slice(&[0x8a, n as u8]);
            self.buf.extend_from_slice(&bytes[..n]);
        }
    }

    pub fn bool(&mut self, b: bool) {
        self.buf.push(if b { 0x88 } else { 0x89 });
    }

    /// A pair of ints as a tuple (TUPLE2), memoized.
    pub fn pair(&mut self, a: i128, b: i128) {
        self.int(a);
        self.int(b);
        self.buf.push(0x86);
        self.memoize();
    }

    /// A list: `items` writes the items (each leaving one value); the list's memo slot.
    pub fn list(&mut self, n: usize, mut item: impl FnMut(&mut Self, usize)) -> u32 {
        self.buf.push(b']');
        let slot = self.memoize();
        let mut i = 0;
        while i < n {
            let batch = (n - i).min(1000);
            if batch == 1 {
                item(self, i);
                self.buf.push(b'a');
            } else {
                self.buf.push(b'(');
                for j in i..i + batch {
                    item(self, j);
                }
                self.buf.push(b'e');
            }
            i += batch;
        }
        slot
    }

    /// A dict of string keys: `value` writes the value of key `k`; the dict's memo slot.
    pub fn dict(&mut self, keys: &[&str], mut value: impl FnMut(&mut Self, &str)) -> u32 {
        self.buf.push(b'}');
        let slot = self.memoize();
        if !keys.is_empty() {
            self.buf.push(b'(');
            for k in keys {
                self.str(k);
                value(self, k);
            }
            self.buf.push(b'u');
        }
        slot
    }

    /// STOP; the bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(b'.');
        self.buf
    }
}

/// A frame: (name, filename, line).
pub type Frame = (String, String, i64);

/// A block of a segment.
#[derive(Clone, Debug)]
pub struct Block {
    pub size: u64,
    pub requested: u64,
    /// `active_allocated`, `active_pending_free` or `inactive`.
    pub state: &'static str,
    /// Index into [`Snap::stacks`] (None: no frames).
    pub stack: Option<usize>,
}

#[derive(Clone, Debug)]
pub struct Segment {
    pub device: i64,
    pub address: u64,
    pub total_size: u64,
    pub stream: u64,
    pub expandable: bool,
    pub blocks: Vec<Block>,
}

/// A trace entry. `Event::shared` ones are written once and referenced after that.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub action: &'static str,
    pub addr: u64,
    pub size: u64,
    pub stream: u64,
    pub time_us: Option<i64>,
    /// `oom` events: written in place of `addr`.
    pub device_free: Option<u64>,
    pub stack: Option<usize>,
}

impl Event {
    pub fn new(action: &'static str, addr: u64, size: u64) -> Event {
        Event {
            action,
            addr,
            size,
            stream: 0,
            time_us: None,
            device_free: None,
            stack: None,
        }
    }

    pub fn oom(size: u64, device_free: u64) -> Event {
        Event {
            device_free: Some(device_free),
            ..Event::new("oom", 0, size)
        }
    }

    pub fn at(mut self, t: i64) -> Event {
        self.time_us = Some(t);
        self
    }

    pub fn with_stack(mut self, s: usize) -> Event {
        self.stack = Some(s);
        self
    }
}

/// One entry of a device trace: an event, or a repeat of an earlier entry of the same trace
/// (written as a memo reference to the same dict, as Python does for one object listed twice).
#[derive(Clone, Debug)]
pub enum Entry {
    New(Event),
    Repeat(usize),
}

/// An `external_annotations` entry: (name, stage, device, time_us).
pub type Annotation = (String, &'static str, i64, i64);

/// A snapshot dict: `segments`, `device_traces`, `external_annotations`.
#[derive(Clone, Debug, Default)]
pub struct Snap {
    pub stacks: Vec<Vec<Frame>>,
    pub segments: Vec<Segment>,
    pub traces: Vec<Vec<Entry>>,
    /// Device traces that are all the same (empty) list object, after `traces`.
    pub shared_empty_traces: usize,
    pub annotations: Vec<Annotation>,
}

impl Snap {
    pub fn pickle(&self) -> Vec<u8> {
        let mut p = Pickle::new();
        let mut stack_slots: Vec<Option<u32>> = vec![None; self.stacks.len()];
        let mut frame_slots: HashMap<Frame, u32> = HashMap::new();
        let mut empty_frames: Option<u32> = None;
        // Writes stack `s` (or the shared empty list) once, then references it.
        let mut stack = |p: &mut Pickle, s: Option<usize>| {
            let Some(i) = s.filter(|&i| i < self.stacks.len()) else {
                match empty_frames {
                    Some(slot) => p.get(slot),
                    None => empty_frames = Some(p.list(0, |_, _| {})),
                }
                return;
            };
            if let Some(slot) = stack_slots[i] {
                p.get(slot);
                return;
            }
            let frames = &self.stacks[i];
            let slot = p.list(frames.len(), |p, j| {
                let f = &frames[j];
                if let Some(&fs) = frame_slots.get(f) {
                    p.get(fs);
                    return;
                }
                let fs = p.dict(&["name", "filename", "line"], |p, k| match k {
                    "name" => p.str(&f.0),
                    "filename" => p.str(&f.1),
                    _ => p.int(i128::from(f.2)),
                });
                frame_slots.insert(f.clone(), fs);
            });
            stack_slots[i] = Some(slot);
        };
        let top = ["segments", "device_traces", "external_annotations"];
        p.dict(&top, |p, key| match key {
            "segments" => {
                p.list(self.segments.len(), |p, i| {
                    let s = &self.segments[i];
                    let alloc: u64 = s
                        .blocks
                        .iter()
                        .filter(|b| b.state == "active_allocated")
                        .map(|b| b.size)
                        .sum();
                    let keys = [
                        "device",
                        "address",
                        "total_size",
                        "allocated_size",
                        "active_size",
                        "requested_size",
                        "stream",
                        "segment_type",
                        "segment_pool_id",
                        "is_expandable",
                        "frames",
                        "blocks",
                    ];
                    p.dict(&keys, |p, k| match k {
                        "device" => p.int(i128::from(s.device)),
                        "address" => p.int(i128::from(s.address)),
                        "total_size" => p.int(i128::from(s.total_size)),
                        "allocated_size" | "active_size" | "requested_size" => {
                            p.int(i128::from(alloc))
                        }
                        "stream" => p.int(i128::from(s.stream)),
                        "segment_type" => p.str("large"),
                        "segment_pool_id" => p.pair(0, 0),
                        "is_expandable" => p.bool(s.expandable),
                        "frames" => stack(p, None),
                        _ => {
                            let mut at = s.address;
                            p.list(s.blocks.len(), |p, j| {
                                let b = &s.blocks[j];
                                let keys = ["address", "size", "requested_size", "state", "frames"];
                                p.dict(&keys, |p, k| match k {
                                    "address" => p.int(i128::from(at)),
                                    "size" => p.int(i128::from(b.size)),
                                    "requested_size" => p.int(i128::from(b.requested)),
                                    "state" => p.str(b.state),
                                    _ => stack(p, b.stack),
                                });
                                at += b.size;
                            });
                        }
                    });
                });
            }
            "device_traces" => {
                let mut shared: Option<u32> = None;
                p.list(self.traces.len() + self.shared_empty_traces, |p, d| {
                    let Some(tr) = self.traces.get(d) else {
                        match shared {
                            Some(slot) => p.get(slot),
                            None => shared = Some(p.list(0, |_, _| {})),
                        }
                        return;
                    };
                    let mut slots: Vec<u32> = Vec::with_capacity(tr.len());
                    p.list(tr.len(), |p, i| {
                        let e = match &tr[i] {
                            Entry::Repeat(j) => {
                                let slot = slots[*j];
                                slots.push(slot);
                                p.get(slot);
                                return;
                            }
                            Entry::New(e) => e,
                        };
                        let mut keys = vec!["action"];
                        keys.push(if e.device_free.is_some() {
                            "device_free"
                        } else {
                            "addr"
                        });
                        keys.extend(["size", "stream"]);
                        if e.time_us.is_some() {
                            keys.push("time_us");
                        }
                        keys.push("frames");
                        let slot = p.dict(&keys, |p, k| match k {
                            "action" => p.str(e.action),
                            "addr" => p.int(i128::from(e.addr)),
                            "device_free" => p.int(i128::from(e.device_free.unwrap_or(0))),
                            "size" => p.int(i128::from(e.size)),
                            "stream" => p.int(i128::from(e.stream)),
                            "time_us" => p.int(i128::from(e.time_us.unwrap_or(0))),
                            _ => stack(p, e.stack),
                        });
                        slots.push(slot);
                    });
                });
            }
            _ => {
                p.list(self.annotations.len(), |p, i| {
                    let (name, stage, device, t) = &self.annotations[i];
                    p.dict(&["name", "stage", "device", "time_us"], |p, k| match k {
                        "name" => p.str(name),
                        "stage" => p.str(stage),
                        "device" => p.int(i128::from(*device)),
                        _ => p.int(i128::from(*t)),
                    });
                });
            }
        });
        p.finish()
    }

    /// Writes the pickle to `dir/name`; its path.
    pub fn write(&self, dir: &std::path::Path, name: &str) -> std::path::PathBuf {
        std::fs::create_dir_all(dir).expect("mkdir");
        let path = dir.join(name);
        let tmp = super::unique(&path);
        std::fs::write(&tmp, self.pickle()).expect("write pickle");
        std::fs::rename(&tmp, &path).expect("rename pickle into place");
        path
    }
}

/// A frame of a Python file.
pub fn py(name: &str, line: i64) -> Frame {
    (name.to_string(), "/src/model.py".to_string(), line)
}
