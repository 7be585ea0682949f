//! Which accelerator wrote a snapshot: CUDA, ROCm (HIP), Intel XPU, MTIA or Ascend NPU.
//!
//! All of them write the same dict (docs/formats.md, "Per accelerator"), so nothing in the
//! pickle says which one it was. What does differ is the evidence the producers leave in the
//! data, and only evidence the producers' code shows to be specific is used here:
//!
//! * **C++ frame names and file names** (`stacks="all"`): the allocator's own frames name its
//!   namespace, `c10::cuda::CUDACachingAllocator` (pytorch `c10/cuda/CUDACachingAllocator.cpp`),
//!   `c10::hip::HIPCachingAllocator` on ROCm up to torch 2.10 (hipify's `C10_MAPPINGS` in
//!   `torch/utils/hipify/cuda_to_hip_mappings.py`), `c10::xpu::XPUCachingAllocator`
//!   (`c10/xpu/XPUCachingAllocator.cpp`), `c10_npu::NPUCachingAllocator` (Ascend/pytorch
//!   `torch_npu/csrc/core/npu`). On ROCm from 2.11 the namespace stays `c10::cuda`
//!   (pytorch/pytorch#174087, as WebODM/OpenSplat#228 reports), but the stream type in the
//!   demangled signatures is HIP's `ihipStream_t*` where CUDA's is `CUstream_st*`.
//! * **Python file names**: `torch_npu/`, `torch/xpu/`, `torch/mtia/`, `torch/cuda/`.
//! * **The action `workspace_snapshot`**, written only by torch_npu (`Module.cpp`,
//!   `NPUWorkspaceAllocator.cpp`).
//! * **The `allocator_settings` key**: `PYTORCH_CUDA_ALLOC_CONF` (CUDA and ROCm: the same
//!   `torch/csrc/cuda/Module.cpp` is compiled for both), `PYTORCH_ALLOC_CONF` (XPU,
//!   `torch/csrc/xpu/Module.cpp`). Weaker than frames (a later torch may rename the CUDA key),
//!   so it decides only when no frame does.
//!
//! Not used: stream values (CUDA's and HIP's default stream is 0, but whether NPU or MTIA
//! streams can be 0 is not established), address ranges, and which keys are missing (torch
//! versions differ as much as accelerators do).
//!
//! Any ROCm, XPU, MTIA or NPU evidence outweighs CUDA evidence: ROCm builds keep `torch/cuda/`
//! Python frames and (from 2.11) `c10::cuda` names, and torch_npu's `transfer_to_npu` routes
//! `torch.cuda` calls to the NPU. Without any evidence (no frames, no settings) the answer is
//! [`Accelerator::Unknown`], which the viewer shows as `cuda` as before.
//!
//! The work is bounded by the interned tables, never by the trace: at most [`MAX_FRAMES`]
//! distinct frames (each frame is stored once however many events share it), the unknown
//! action names (at most [`Action::MAX_UNKNOWN`]) and the keys of `allocator_settings`.

use crate::model::{Action, Snapshot};

/// The most distinct frames [`detect`] looks at (the frames table is deduplicated, so real files
/// have hundreds to a few thousand; this only bounds hostile ones).
pub const MAX_FRAMES: usize = 1 << 20;

/// The accelerator a snapshot came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Accelerator {
    Cuda,
    Rocm,
    Xpu,
    Mtia,
    Npu,
    Unknown,
}

impl Accelerator {
    /// The name to show.
    pub fn label(&self) -> &'static str {
        match self {
            Accelerator::Cuda => "CUDA",
            Accelerator::Rocm => "ROCm (HIP)",
            Accelerator::Xpu => "Intel XPU",
            Accelerator::Mtia => "MTIA",
            Accelerator::Npu => "Ascend NPU",
            Accelerator::Unknown => "unknown",
        }
    }

    /// The torch device type, as in `cuda:0`: ROCm builds use `cuda` too (`torch.cuda` on
    /// HIP); without evidence, `cuda` as memviz always showed.
    pub fn device_prefix(&self) -> &'static str {
        match self {
            Accelerator::Cuda | Accelerator::Rocm | Accelerator::Unknown => "cuda",
            Accelerator::Xpu => "xpu",
            Accelerator::Mtia => "mtia",
            Accelerator::Npu => "npu",
        }
    }

    /// Index into per-accelerator counters.
    fn index(self) -> usize {
        self as usize
    }
}

/// What [`detect_with_reason`] found: the accelerator and the evidence, in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Detection {
    pub accelerator: Accelerator,
    /// e.g. "C++ frame names (c10::hip::)"; "no frames or settings name one" for `Unknown`.
    pub reason: &'static str,
}

/// The accelerator `s` came from (see the module documentation for the evidence used).
pub fn detect(s: &Snapshot) -> Accelerator {
    detect_with_reason(s).accelerator
}

/// A name pattern (a substring of a frame's `name`) with its evidence text.
macro_rules! name {
    ($p:literal, $a:ident) => {
        ($p, Accelerator::$a, concat!("C++ frame names (", $p, ")"))
    };
}

/// A file-name pattern (a substring of a frame's `filename`, `\` folded to `/`).
macro_rules! file {
    ($p:literal, $a:ident) => {
        ($p, Accelerator::$a, concat!("frame file names (", $p, ")"))
    };
}

type Pattern = (&'static str, Accelerator, &'static str);

const NAME_PATTERNS: &[Pattern] = &[
    name!("c10_npu::", Npu),
    name!("at_npu::", Npu),
    name!("torch_npu::", Npu),
    name!("c10::xpu::", Xpu),
    name!("at::xpu::", Xpu),
    name!("sycl::", Xpu),
    name!("mtia::", Mtia),
    name!("c10::hip::", Rocm),
    name!("HIPCachingAllocator", Rocm),
    name!("ihipStream_t", Rocm),
    name!("hipMalloc", Rocm),
    name!("MasqueradingAsCUDA", Rocm),
    name!("c10::cuda::", Cuda),
    name!("CUstream_st", Cuda),
    name!("cudaMalloc", Cuda),
];

const FILE_PATTERNS: &[Pattern] = &[
    file!("torch_npu/", Npu),
    file!("NPUCachingAllocator", Npu),
    file!("torch/xpu/", Xpu),
    file!("XPUCachingAllocator", Xpu),
    file!("torch/mtia/", Mtia),
    file!("HIPCachingAllocator", Rocm),
    file!("c10/hip/", Rocm),
    file!("ATen/hip/", Rocm),
    file!("libamdhip64", Rocm),
    file!("libtorch_hip", Rocm),
    file!("CUDACachingAllocator", Cuda),
    file!(".cudafe1.", Cuda),
    file!("libtorch_cuda", Cuda),
    file!("torch/cuda/", Cuda),
];

/// The accelerator `s` came from and why (see the module documentation).
pub fn detect_with_reason(s: &Snapshot) -> Detection {
    const N: usize = 6;
    let mut hits = [0usize; N];
    let mut reasons: [&'static str; N] = [""; N];
    let mut note = |a: Accelerator, why: &'static str| {
        let i = a.index();
        if let (Some(h), Some(r)) = (hits.get_mut(i), reasons.get_mut(i)) {
            if *h == 0 {
                *r = why;
            }
            *h += 1;
        }
    };

    for f in s.frames.iter().take(MAX_FRAMES) {
        let name = s.str(f.name);
        if let Some(&(_, a, why)) = NAME_PATTERNS.iter().find(|p| name.contains(p.0)) {
            note(a, why);
            continue;
        }
        let file = s.str(f.filename);
        let hit = if file.contains('\\') {
            let folded = file.replace('\\', "/");
            FILE_PATTERNS.iter().find(|p| folded.contains(p.0)).copied()
        } else {
            FILE_PATTERNS.iter().find(|p| file.contains(p.0)).copied()
        };
        if let Some((_, a, why)) = hit {
            note(a, why);
        } else if file.ends_with(".hip") {
            // hipified kernel sources (e.g. `RangeFactories.hip`).
            note(Accelerator::Rocm, "frame file names (.hip sources)");
        }
    }
    let npu_action = s
        .unknown_actions
        .iter()
        .take(Action::MAX_UNKNOWN)
        .any(|&n| s.str(n) == "workspace_snapshot");
    if npu_action {
        note(
            Accelerator::Npu,
            "the torch_npu trace action workspace_snapshot",
        );
    }

    // Any non-CUDA evidence wins (module docs); among several, the most hits, then this order.
    let specific = [
        Accelerator::Npu,
        Accelerator::Xpu,
        Accelerator::Rocm,
        Accelerator::Mtia,
    ];
    let mut best: Option<(usize, Accelerator)> = None;
    for a in specific {
        let h = hits.get(a.index()).copied().unwrap_or(0);
        if h > 0 && best.is_none_or(|(b, _)| h > b) {
            best = Some((h, a));
        }
    }
    let reason_of = |a: Accelerator| reasons.get(a.index()).copied().unwrap_or("");
    if let Some((_, a)) = best {
        return Detection {
            accelerator: a,
            reason: reason_of(a),
        };
    }
    if hits.get(Accelerator::Cuda.index()).copied().unwrap_or(0) > 0 {
        return Detection {
            accelerator: Accelerator::Cuda,
            reason: reason_of(Accelerator::Cuda),
        };
    }
    settings_evidence(s).unwrap_or(Detection {
        accelerator: Accelerator::Unknown,
        reason: "no frames or settings name one",
    })
}

/// The weak evidence of the `allocator_settings` key naming the allocator's environment
/// variable: CUDA's and ROCm's `torch/csrc/cuda/Module.cpp` write `PYTORCH_CUDA_ALLOC_CONF`,
/// XPU's `torch/csrc/xpu/Module.cpp` writes `PYTORCH_ALLOC_CONF`.
fn settings_evidence(s: &Snapshot) -> Option<Detection> {
    let obj = s.allocator_settings.as_ref()?.as_object()?;
    if obj.contains_key("PYTORCH_CUDA_ALLOC_CONF") {
        return Some(Detection {
            accelerator: Accelerator::Cuda,
            reason: "allocator_settings key PYTORCH_CUDA_ALLOC_CONF",
        });
    }
    if obj.contains_key("PYTORCH_ALLOC_CONF") {
        return Some(Detection {
            accelerator: Accelerator::Xpu,
            reason: "allocator_settings key PYTORCH_ALLOC_CONF",
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load_slice;

    /// A tiny pickle writer for the shapes a snapshot needs (protocol 4 opcodes, no memo).
    enum V {
        D(Vec<(&'static str, V)>),
        L(Vec<V>),
        S(String),
        I(i64),
        B(bool),
        T2(i64, i64),
    }

    fn s(x: &str) -> V {
        V::S(x.to_string())
    }

    fn put(v: &V, out: &mut Vec<u8>) {
        let text = |t: &str, out: &mut Vec<u8>| {
            out.push(b'X');
            out.extend_from_slice(&(t.len() as u32).to_le_bytes());
            out.extend_from_slice(t.as_bytes());
        };
        let int = |i: i64, out: &mut Vec<u8>| {
            out.push(0x8a);
            out.push(8);
            out.extend_from_slice(&i.to_le_bytes());
        };
        match v {
            V::D(items) => {
                out.extend_from_slice(b"}(");
                for (k, v) in items {
                    text(k, out);
                    put(v, out);
                }
                out.push(b'u');
            }
            V::L(items) => {
                out.extend_from_slice(b"](");
                for v in items {
                    put(v, out);
                }
                out.push(b'e');
            }
            V::S(t) => text(t, out),
            V::I(i) => int(*i, out),
            V::B(b) => out.push(if *b { 0x88 } else { 0x89 }),
            V::T2(a, b) => {
                int(*a, out);
                int(*b, out);
                out.push(0x86);
            }
        }
    }

    fn frame(name: &str, filename: &str) -> V {
        V::D(vec![
            ("name", s(name)),
            ("filename", s(filename)),
            ("line", V::I(0)),
        ])
    }

    /// One segment with one allocated block whose stack is `frames`, one `alloc` event with
    /// the same stack and, after it, an event of `extra_action` if given; `settings` as the
    /// `allocator_settings` key if given.
    fn snapshot(
        frames: Vec<(&str, &str)>,
        extra_action: Option<&str>,
        settings: Option<&'static str>,
    ) -> Snapshot {
        let stack = || V::L(frames.iter().map(|(n, f)| frame(n, f)).collect());
        let block = V::D(vec![
            ("address", V::I(0x7f00_0000_0000)),
            ("size", V::I(2 << 20)),
            ("requested_size", V::I(1000)),
            ("state", s("active_allocated")),
            ("frames", stack()),
        ]);
        let segment = V::D(vec![
            ("device", V::I(0)),
            ("address", V::I(0x7f00_0000_0000)),
            ("total_size", V::I(2 << 20)),
            ("allocated_size", V::I(2 << 20)),
            ("active_size", V::I(2 << 20)),
            ("requested_size", V::I(1000)),
            ("stream", V::I(0)),
            ("segment_type", s("small")),
            ("segment_pool_id", V::T2(0, 0)),
            ("is_expandable", V::B(false)),
            ("frames", V::L(vec![])),
            ("blocks", V::L(vec![block])),
        ]);
        let event = |action: &str| {
            V::D(vec![
                ("action", s(action)),
                ("addr", V::I(0x7f00_0000_0000)),
                ("size", V::I(1000)),
                ("stream", V::I(0)),
                ("frames", stack()),
            ])
        };
        let mut trace = vec![event("alloc")];
        if let Some(a) = extra_action {
            trace.push(event(a));
        }
        let mut top = vec![
            ("segments", V::L(vec![segment])),
            ("device_traces", V::L(vec![V::L(trace)])),
        ];
        if let Some(k) = settings {
            top.push((
                "allocator_settings",
                V::D(vec![(k, s("")), ("expandable_segments", V::B(false))]),
            ));
        }
        let mut out = vec![0x80, 4];
        put(&V::D(top), &mut out);
        out.push(b'.');
        load_slice(&out).expect("a valid snapshot")
    }

    fn detected(frames: Vec<(&str, &str)>) -> Detection {
        detect_with_reason(&snapshot(frames, None, None))
    }

    const PY: (&str, &str) = ("forward", "/home/u/model.py");

    #[test]
    fn cuda_from_the_allocator_frames() {
        let d = detected(vec![
            (
                "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)",
                "CUDACachingAllocator.cpp",
            ),
            PY,
        ]);
        assert_eq!(d.accelerator, Accelerator::Cuda);
        assert_eq!(d.reason, "C++ frame names (c10::cuda::)");
        // Python only, through torch/cuda (Windows separators too).
        let d = detected(vec![
            (
                "_lazy_init",
                "C:\\py\\Lib\\site-packages\\torch\\cuda\\__init__.py",
            ),
            PY,
        ]);
        assert_eq!(d.accelerator, Accelerator::Cuda);
    }

    #[test]
    fn rocm_up_to_2_10_and_from_2_11() {
        // Hipified names (torch <= 2.10).
        let d = detected(vec![(
            "c10::hip::HIPCachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, ihipStream_t*)",
            "HIPCachingAllocator.cpp",
        )]);
        assert_eq!(d.accelerator, Accelerator::Rocm);
        // torch >= 2.11 keeps c10::cuda on ROCm; the HIP stream type still tells, and wins
        // over the CUDA-looking frames and torch/cuda Python frames around it.
        let d = detected(vec![
            (
                "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, ihipStream_t*)",
                "CUDACachingAllocator.cpp",
            ),
            ("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)", ""),
            ("_lazy_init", "/opt/venv/lib/python3.12/site-packages/torch/cuda/__init__.py"),
        ]);
        assert_eq!(d.accelerator, Accelerator::Rocm);
        assert_eq!(d.reason, "C++ frame names (ihipStream_t)");
        assert_eq!(d.accelerator.device_prefix(), "cuda");
        let d = detected(vec![(
            "void at::native::elementwise_kernel",
            "RangeFactories.hip",
        )]);
        assert_eq!(d.accelerator, Accelerator::Rocm);
    }

    #[test]
    fn xpu_mtia_npu_from_frames() {
        let d = detected(vec![(
            "c10::xpu::XPUCachingAllocator::DeviceCachingAllocator::malloc(signed char, unsigned long, sycl::_V1::queue&)",
            "XPUCachingAllocator.cpp",
        )]);
        assert_eq!(
            (d.accelerator, d.accelerator.device_prefix()),
            (Accelerator::Xpu, "xpu")
        );
        let d = detected(vec![
            (
                "synchronize",
                "/usr/lib/python3/site-packages/torch/xpu/__init__.py",
            ),
            PY,
        ]);
        assert_eq!(d.accelerator, Accelerator::Xpu);
        let d = detected(vec![
            ("record_memory_history", "/x/torch/mtia/__init__.py"),
            PY,
        ]);
        assert_eq!(
            (d.accelerator, d.accelerator.device_prefix()),
            (Accelerator::Mtia, "mtia")
        );
        let d = detected(vec![
            ("c10_npu::NPUCachingAllocator::DeviceCachingAllocator::malloc(int, unsigned long, aclrtStream)", "??"),
            ("_lazy_init", "/x/site-packages/torch/cuda/__init__.py"),
        ]);
        assert_eq!(
            (d.accelerator, d.accelerator.device_prefix()),
            (Accelerator::Npu, "npu")
        );
        let d = detected(vec![
            (
                "wrapper",
                "/x/site-packages/torch_npu/contrib/transfer_to_npu.py",
            ),
            PY,
        ]);
        assert_eq!(d.accelerator, Accelerator::Npu);
    }

    #[test]
    fn npu_from_the_workspace_action_alone() {
        let d = detect_with_reason(&snapshot(vec![PY], Some("workspace_snapshot"), None));
        assert_eq!(d.accelerator, Accelerator::Npu);
        assert_eq!(d.reason, "the torch_npu trace action workspace_snapshot");
        // Another unknown action is no evidence.
        assert_eq!(
            detect(&snapshot(vec![PY], Some("teleport"), None)),
            Accelerator::Unknown
        );
    }

    #[test]
    fn settings_decide_only_without_frame_evidence() {
        let cuda = snapshot(vec![PY], None, Some("PYTORCH_CUDA_ALLOC_CONF"));
        assert_eq!(detect(&cuda), Accelerator::Cuda);
        let xpu = snapshot(vec![], None, Some("PYTORCH_ALLOC_CONF"));
        assert_eq!(detect(&xpu), Accelerator::Xpu);
        let npu = snapshot(
            vec![("c10_npu::x()", "")],
            None,
            Some("PYTORCH_CUDA_ALLOC_CONF"),
        );
        assert_eq!(detect(&npu), Accelerator::Npu);
    }

    #[test]
    fn no_evidence_is_unknown_shown_as_cuda() {
        let d = detected(vec![]);
        assert_eq!(d.accelerator, Accelerator::Unknown);
        assert_eq!(d.accelerator.device_prefix(), "cuda");
        // User frames that merely contain the letters are no evidence.
        let d = detected(vec![
            ("torch::autograd::InputBuffer::add(unsigned long)", "??"),
            (
                "hip_fracture_model",
                "/home/mtia/npu_experiments/xpu_notes.py",
            ),
        ]);
        assert_eq!(d.accelerator, Accelerator::Unknown, "{}", d.reason);
    }

    #[test]
    fn labels_and_serde_names() {
        let all = [
            (Accelerator::Cuda, "CUDA", "\"cuda\""),
            (Accelerator::Rocm, "ROCm (HIP)", "\"rocm\""),
            (Accelerator::Xpu, "Intel XPU", "\"xpu\""),
            (Accelerator::Mtia, "MTIA", "\"mtia\""),
            (Accelerator::Npu, "Ascend NPU", "\"npu\""),
            (Accelerator::Unknown, "unknown", "\"unknown\""),
        ];
        for (a, label, json) in all {
            assert_eq!(a.label(), label);
            assert_eq!(serde_json::to_string(&a).expect("json"), json);
        }
    }

    /// Every real snapshot in `shared/corpus/real` (CUDA, by their sources): CUDA or, where no
    /// frame or setting says so, unknown; never another accelerator.
    #[test]
    fn corpus() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/real");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            eprintln!("no corpus at {}", dir.display());
            return;
        };
        let mut paths: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "pickle" || x == "pkl"))
            .collect();
        paths.sort();
        assert!(!paths.is_empty());
        for p in paths {
            let bytes = std::fs::read(&p).expect("read");
            let snap = load_slice(&bytes).expect("load");
            let d = detect_with_reason(&snap);
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            eprintln!("{name}: {} ({})", d.accelerator.label(), d.reason);
            assert!(
                matches!(d.accelerator, Accelerator::Cuda | Accelerator::Unknown),
                "{name}: {d:?}"
            );
        }
    }
}
