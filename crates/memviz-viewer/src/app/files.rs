//! The loaded files: each file's snapshot, its built device data and its device list, and
//! which file is current.

use std::rc::Rc;

use memviz_analysis::format::count;
use memviz_analysis::site::SiteCache;
use memviz_analysis::site::UserCode;
use memviz_snapshot::accelerator::{self, Accelerator, Detection};
use memviz_snapshot::Snapshot;

use crate::answer::DeviceRow;
use crate::answer::FileAccelerator;

/// One loaded snapshot file.
pub struct LoadedFile {
    pub name: String,
    /// Its snapshot, shared with the views built from it.
    pub snap: Rc<Snapshot>,
    /// The device list (counts from one pass over each trace when the file is added, not on
    /// every panel answer: a 2 GB trace's scan for `oom` events is tens of ms), `current` unset.
    pub(super) device_rows: Vec<DeviceRow>,
    /// Which accelerator wrote it (read once: the frames table, not the trace).
    pub(super) accelerator: Detection,
    /// The sites of its stacks under the app's user code (`App::set_user_code` makes a new
    /// one): every view names an allocation's site through it.
    pub(super) sites: SiteCache,
}

impl LoadedFile {
    /// A file named `name` holding `snap`, its sites classified under `user`.
    pub(super) fn new(name: &str, snap: Snapshot, user: &UserCode) -> Self {
        let accelerator = accelerator::detect_with_reason(&snap);
        LoadedFile {
            name: name.to_string(),
            device_rows: device_rows(&snap, accelerator.accelerator.device_prefix()),
            accelerator,
            sites: SiteCache::new(&snap, user.clone()),
            snap: Rc::new(snap),
        }
    }
}

/// The rows of `snap`'s device list, named with `prefix` (`cuda`, `xpu`, …).
fn device_rows(snap: &Snapshot, prefix: &str) -> Vec<DeviceRow> {
    snap.devices()
        .into_iter()
        .map(|dev| {
            let (events, ooms) = (snap.trace(dev).map_or(0, |t| t.len()), snap.oom_count(dev));
            let name = format!("{prefix}:{dev}");
            DeviceRow {
                device: dev,
                label: device_label(&name, events, ooms),
                name,
                events,
                ooms,
                segments: snap.segments.iter().filter(|s| s.device == dev).count(),
                current: false,
            }
        })
        .collect()
}

/// The device list's text for a device: `cuda:1 ⚠ OOM ×1 · 596 events`, `xpu:0 · 1 event`,
/// `cuda:0 ⚠ OOM ×3 · 1.2M events` (a million events and more to two or three digits, so the
/// select stays narrow).
pub fn device_label(name: &str, events: usize, ooms: usize) -> String {
    let oom = match ooms {
        0 => String::new(),
        n => format!(" ⚠ OOM ×{}", count(n as u64)),
    };
    let n = match events {
        1 => "1 event".to_string(),
        e if e >= 1_000_000 => {
            let m = e as f64 / 1e6;
            if m < 9.95 {
                format!("{m:.1}M events")
            } else {
                format!("{m:.0}M events")
            }
        }
        e => format!("{} events", count(e as u64)),
    };
    format!("{name}{oom} · {n}")
}

/// What the page shows of the accelerator that wrote a file (nothing when the file does not say).
pub fn file_accelerator(d: Detection) -> FileAccelerator {
    let prefix = d.accelerator.device_prefix().to_string();
    if d.accelerator == Accelerator::Unknown {
        return FileAccelerator {
            label: String::new(),
            device_prefix: prefix,
            text: String::new(),
            title: String::new(),
        };
    }
    let label = d.accelerator.label();
    FileAccelerator {
        label: label.to_string(),
        device_prefix: prefix,
        text: format!("{label} snapshot"),
        title: format!("Written on {label}, told by {}", d.reason),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::App;

    #[test]
    fn device_labels_are_short_and_singular_for_one() {
        assert_eq!(
            device_label("cuda:1", 596, 1),
            "cuda:1 ⚠ OOM ×1 · 596 events"
        );
        assert_eq!(device_label("xpu:0", 1, 0), "xpu:0 · 1 event");
        assert_eq!(device_label("npu:2", 0, 0), "npu:2 · 0 events");
        assert_eq!(
            device_label("cuda:0", 6445, 3),
            "cuda:0 ⚠ OOM ×3 · 6,445 events"
        );
        assert_eq!(
            device_label("mtia:7", 999_999, 0),
            "mtia:7 · 999,999 events"
        );
        assert_eq!(device_label("cuda:0", 1_000_000, 0), "cuda:0 · 1.0M events");
        assert_eq!(device_label("cuda:0", 1_234_567, 0), "cuda:0 · 1.2M events");
        assert_eq!(device_label("cuda:0", 9_960_000, 0), "cuda:0 · 10M events");
        assert_eq!(
            device_label("cuda:0", 123_456_789, 2),
            "cuda:0 ⚠ OOM ×2 · 123M events"
        );
    }

    /// A JSON snapshot: device 0 with one segment and one `alloc` event whose only frame is
    /// `frame`, device 1 with a segment and no trace; `settings`, the `allocator_settings` key.
    fn snap(frame: &str, settings: Option<&str>) -> Snapshot {
        let seg = |device: u32, addr: u64| {
            format!(
                r#"{{"device": {device}, "address": {addr}, "total_size": 2097152,
                "allocated_size": 1024, "active_size": 1024, "requested_size": 1000,
                "stream": 0, "segment_type": "small", "segment_pool_id": [0, 0],
                "is_expandable": false, "frames": [], "blocks": [
                {{"address": {addr}, "size": 1024, "requested_size": 1000,
                  "state": "active_allocated", "frames": []}},
                {{"address": {}, "size": 2096128, "requested_size": 0, "state": "inactive",
                  "frames": []}}]}}"#,
                addr + 1024
            )
        };
        let settings = settings.map_or(String::new(), |k| {
            format!(r#", "allocator_settings": {{"{k}": "", "expandable_segments": false}}"#)
        });
        let text = format!(
            r#"{{"segments": [{}, {}], "device_traces": [[{{"action": "alloc",
            "addr": 4096, "size": 1000, "stream": 0, "time_us": 1,
            "frames": [{{"name": "{frame}", "filename": "??", "line": 0}}]}}], []]{settings}}}"#,
            seg(0, 4096),
            seg(1, 1 << 40)
        );
        memviz_snapshot::load_slice(text.as_bytes()).expect("a valid JSON snapshot")
    }

    const XPU_MALLOC: &str = "c10::xpu::XPUCachingAllocator::DeviceCachingAllocator::malloc(signed char, unsigned long, sycl::_V1::queue&)";

    #[test]
    fn an_xpu_file_names_its_devices_and_says_so() {
        let mut app = App::new("x.pickle", snap(XPU_MALLOC, None));
        let panel = app.panel(4);
        let names: Vec<_> = panel.devices.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["xpu:0", "xpu:1"]);
        let labels: Vec<_> = panel.devices.iter().map(|d| d.label.as_str()).collect();
        assert_eq!(labels, ["xpu:0 · 1 event", "xpu:1 · 0 events"]);
        assert_eq!(
            panel.accelerators,
            [FileAccelerator {
                label: "Intel XPU".into(),
                device_prefix: "xpu".into(),
                text: "Intel XPU snapshot".into(),
                title: "Written on Intel XPU, told by C++ frame names (c10::xpu::)".into(),
            }]
        );
        app.set_device(1);
        let note = app.no_trace_note();
        assert!(
            note.starts_with("xpu:1 has no trace in this snapshot"),
            "{note}"
        );
    }

    #[test]
    fn cuda_rocm_npu_and_unknown() {
        let cases = [
            ("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)", None, "CUDA", "cuda"),
            ("c10::hip::HIPCachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, ihipStream_t*)", None, "ROCm (HIP)", "cuda"),
            ("c10_npu::NPUCachingAllocator::DeviceCachingAllocator::malloc(int, unsigned long, aclrtStream)", None, "Ascend NPU", "npu"),
            ("forward", Some("PYTORCH_CUDA_ALLOC_CONF"), "CUDA", "cuda"),
            ("forward", None, "", "cuda"),
        ];
        for (frame, settings, label, prefix) in cases {
            let app = App::new("f.pickle", snap(frame, settings));
            let panel = app.panel(4);
            let a = &panel.accelerators[0];
            assert_eq!(
                (a.label.as_str(), a.device_prefix.as_str()),
                (label, prefix),
                "{frame}"
            );
            assert_eq!(panel.devices[0].name, format!("{prefix}:0"));
            if label.is_empty() {
                // Nothing alarming when the file does not say: nothing at all.
                assert_eq!((a.text.as_str(), a.title.as_str()), ("", ""));
            } else {
                assert_eq!(a.text, format!("{label} snapshot"));
                assert!(
                    a.title
                        .starts_with(&format!("Written on {label}, told by ")),
                    "{}",
                    a.title
                );
            }
        }
    }

    #[test]
    fn each_open_file_keeps_its_own_accelerator() {
        let mut app = App::new("a.pickle", snap(XPU_MALLOC, None));
        app.add_file("b.pickle", snap("forward", Some("PYTORCH_CUDA_ALLOC_CONF")));
        let panel = app.panel(4);
        let prefixes: Vec<_> = panel
            .accelerators
            .iter()
            .map(|a| a.device_prefix.as_str())
            .collect();
        assert_eq!(prefixes, ["xpu", "cuda"]);
        assert_eq!(panel.devices[0].name, "cuda:0", "the current file is b");
        assert!(app.select_file(0));
        assert_eq!(app.panel(4).devices[0].name, "xpu:0");
    }
}
