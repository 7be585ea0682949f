use super::*;
use crate::test_util::snapshot_of_stacks;

const USER: UserCode = UserCode::EMPTY;

fn kind(file: &str, name: &str) -> FrameKind {
    frame_kind(file, name, &USER)
}

#[test]
fn frame_kinds() {
    use FrameKind::*;
    assert_eq!(kind("/home/u/train.py", "main"), User);
    assert_eq!(kind("/tmp/ipykernel_1234/3456.py", "<module>"), User);
    assert_eq!(kind("<ipython-input-3-abc>", "f"), User);
    assert_eq!(kind("<stdin>", "<module>"), User);
    assert_eq!(kind("/usr/lib/python3.10/threading.py", "run"), Library);
    assert_eq!(
        kind("/opt/conda/envs/x/lib/python3.11/runpy.py", "_run_code"),
        Library
    );
    assert_eq!(
        kind("/venv/lib64/python3.9/contextlib.py", "inner"),
        Library
    );
    assert_eq!(kind("C:\\Python311\\Lib\\threading.py", "run"), Library);
    assert_eq!(
        kind(
            "/env/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py",
            "forward"
        ),
        Library
    );
    assert_eq!(
        kind(
            "/usr/local/lib/python3.10/dist-packages/vllm/worker.py",
            "x"
        ),
        Library
    );
    assert_eq!(
        kind(
            "D:\\p\\.venv\\Lib\\site-packages\\einops\\_backends.py",
            "einsum"
        ),
        Library
    );
    assert_eq!(
        kind("/home/u/pytorch/torch/nn/modules/module.py", "_call_impl"),
        Library
    );
    assert_eq!(kind("<frozen runpy>", "_run_code"), Library);
    assert_eq!(kind("<eval_with_key>.4", "forward"), Library);
    assert_eq!(
        kind("/tmp/torchinductor_me/l4/cl4iffgos7ugqf5f7x.py", "call"),
        Library
    );
    assert_eq!(kind("<string>", "__init__"), Library);
    // A user's vendored copy outside every library location is the user's.
    assert_eq!(kind("/mnt/mcx/select_n/lib/transformers/x.py", "f"), User);
    assert_eq!(kind("??", "_PyEval_EvalFrameDefault"), Interpreter);
    assert_eq!(kind("??", "PyObject_Call"), Interpreter);
    assert_eq!(kind("??", "slot_tp_call"), Interpreter);
    assert_eq!(
        kind("??", "method_vectorcall_VARARGS_KEYWORDS"),
        Interpreter
    );
    assert_eq!(
        kind("/usr/local/src/conda/python-3.10.16/Objects/call.c", "x"),
        Interpreter
    );
    assert_eq!(
        kind("/croot/p/work/build-static/Python/bytecodes.c", "x"),
        Interpreter
    );
    assert_eq!(kind("??", "at::native::add(at::Tensor const&)"), Native);
    assert_eq!(kind("??", "THPFunction_apply(_object*, _object*)"), Native);
    assert_eq!(kind("myext.cpp", "Pythonic::f"), Native);
}

#[test]
fn user_code_adds_files() {
    let u = UserCode::parse("transformers, /work/lib").expect("parses");
    let lib = "/env/lib/python3.11/site-packages/transformers/models/x.py";
    assert_eq!(frame_kind(lib, "f", &u), FrameKind::User);
    assert_eq!(
        frame_kind(
            "/env/lib/python3.11/site-packages/transformers_x/y.py",
            "f",
            &u
        ),
        FrameKind::Library
    );
    let r = UserCode::parse("/einops/").expect("regex");
    assert_eq!(
        frame_kind(
            "/v/lib/python3.12/site-packages/einops/_backends.py",
            "e",
            &r
        ),
        FrameKind::User
    );
    assert!(UserCode::parse("/(/").is_err());
    assert!(UserCode::parse("/a/,/b/").is_err());
    assert!(UserCode::parse("").expect("empty").is_default());
}

#[test]
fn autograd_nodes() {
    let n = "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)";
    assert_eq!(autograd_node(n), Some("MmBackward0"));
    assert_eq!(autograd_label("MmBackward0"), "backward of mm");
    assert_eq!(
        autograd_label("MaxPool2DWithIndicesBackward0"),
        "backward of max_pool2d_with_indices"
    );
    assert_eq!(
        autograd_label("CudnnBatchNormBackward0"),
        "backward of cudnn_batch_norm"
    );
    assert_eq!(
        autograd_label("MmBackward1"),
        "backward of mm (MmBackward1)"
    );
    assert_eq!(autograd_label("AccumulateGrad"), "autograd AccumulateGrad");
    assert_eq!(
        autograd_node("torch::autograd::generated::SliceBackward0_apply_functional(std::vector<at::Tensor>&&)"),
        Some("SliceBackward0")
    );
    assert_eq!(
        autograd_node("torch::autograd::generated::MulBackward0::release_variables()"),
        None
    );
    assert_eq!(autograd_node("at::native::mm(at::Tensor const&)"), None);
}

/// A snapshot whose trace has one alloc per stack, frames innermost first.
fn snap_of(stacks: &[Vec<(&str, i128, &str)>]) -> memviz_snapshot::Snapshot {
    snapshot_of_stacks(stacks, |_| 512)
}

fn site_at(snap: &memviz_snapshot::Snapshot, i: usize) -> Site {
    let stack = snap.trace(0).and_then(|t| t.stack(i)).expect("a stack");
    site_of(snap, stack, &UserCode::default())
}

const MALLOC: &str = "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)";
const EMPTY: &str = "at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)";
const SITE_PKG: &str = "/env/lib/python3.11/site-packages";

#[test]
fn sites_of_hand_made_stacks() {
    let llama = format!("{SITE_PKG}/transformers/models/llama/modeling_llama.py");
    let linear = format!("{SITE_PKG}/torch/nn/modules/linear.py");
    let module = format!("{SITE_PKG}/torch/nn/modules/module.py");
    let snap = snap_of(&[
        // 0: user line calling into transformers, then torch.
        vec![
            ("??", 0, MALLOC),
            ("??", 0, EMPTY),
            (&linear, 125, "forward"),
            (&module, 1784, "_call_impl"),
            (&llama, 216, "forward"),
            ("??", 0, "_PyEval_EvalFrameDefault"),
            ("/home/u/train.py", 88, "main"),
            ("/usr/lib/python3.10/runpy.py", 86, "_run_code"),
        ],
        // 1: only library Python frames (a worker thread).
        vec![
            ("??", 0, MALLOC),
            (&linear, 125, "forward"),
            (&format!("{SITE_PKG}/torch/nn/parallel/parallel_apply.py"), 103, "_worker"),
            ("/usr/lib/python3.11/threading.py", 982, "run"),
        ],
        // 2: backward: C++ only, with an autograd node.
        vec![
            ("??", 0, "torch::unwind::unwind()"),
            ("??", 0, MALLOC),
            ("??", 0, EMPTY),
            ("??", 0, "at::(anonymous namespace)::create_out(c10::ArrayRef<long>)"),
            ("RegisterCUDA.cpp", 0, "at::(anonymous namespace)::wrapper_CUDA_mm(at::Tensor const&)"),
            ("??", 0, "at::_ops::mm::call(at::Tensor const&, at::Tensor const&)"),
            ("??", 0, "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&)"),
            ("??", 0, "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&)"),
        ],
        // 3: C++ only, no node.
        vec![
            ("??", 0, MALLOC),
            ("??", 0, EMPTY),
            ("??", 0, "at::native::structured_sum_out::impl(at::Tensor const&, at::TensorIterator&)"),
            ("??", 0, "c10::impl::wrap_kernel_functor_unboxed_<x>::call()"),
            ("??", 0, "main"),
        ],
        // 4: an ipykernel cell, frozen and FX frames.
        vec![
            ("<eval_with_key>.4", 12, "forward"),
            ("<frozen runpy>", 88, "_run_code"),
            ("/tmp/ipykernel_77/1234.py", 3, "<module>"),
        ],
        // 5: nothing but allocator frames.
        vec![("??", 0, "torch::unwind::unwind()"), ("??", 0, MALLOC)],
    ]);
    let s = site_at(&snap, 0);
    assert_eq!(
        (s.kind, s.label.as_str()),
        (SiteKind::User, "train.py:88:main")
    );
    let d = s.detail.as_ref().expect("a detail");
    assert_eq!(
        d.label,
        "transformers/models/llama/modeling_llama.py:216:forward"
    );
    assert_eq!(
        s.display(),
        "train.py:88:main → transformers/models/llama/modeling_llama.py:216:forward"
    );
    assert_eq!(s.path(), "/home/u/train.py:88:main");

    let s = site_at(&snap, 1);
    assert_eq!(
        (s.kind, s.label.as_str()),
        (SiteKind::Library, "linear.py:125:forward")
    );
    assert!(s.detail.is_none());

    let s = site_at(&snap, 2);
    assert_eq!(s.kind, SiteKind::Autograd);
    assert_eq!(
        (s.label.as_str(), s.name.as_str()),
        ("backward of mm", "MmBackward0")
    );
    assert_eq!((s.file.as_str(), s.line), (AUTOGRAD_FILE, 0));

    let s = site_at(&snap, 3);
    assert_eq!(s.kind, SiteKind::Native);
    assert_eq!(
        s.name,
        "at::native::structured_sum_out::impl(at::Tensor const&, at::TensorIterator&)"
    );
    assert_eq!(s.label, "at::native::structured_sum_out::impl");
    assert_eq!(
        native_label(
            "void at::native::gpu_reduce_kernel<float, float, 4, f<a>>(at::TensorIterator&)"
        ),
        "at::native::gpu_reduce_kernel<…>"
    );
    assert_eq!(
        native_label("at::Tensor at::_sum_to<c10::SymInt>(at::Tensor, bool)"),
        "at::_sum_to<…>"
    );
    assert_eq!(
        native_label("(anonymous namespace)::f(int)"),
        "(anonymous namespace)::f"
    );

    let s = site_at(&snap, 4);
    assert_eq!(
        (s.kind, s.label.as_str()),
        (SiteKind::User, "1234.py:3:<module>")
    );
    assert_eq!(
        s.detail.as_ref().map(|d| d.label.as_str()),
        Some("<eval_with_key>.4:12:forward")
    );

    // Only plumbing: named, but never after the stack capture.
    let s = site_at(&snap, 5);
    assert_eq!(s.kind, SiteKind::Native);
    assert!(!s.name.contains("unwind"));

    // The cache gives the same sites, each distinct one once.
    let mut cache = SiteCache::default_for(&snap);
    for i in 0..6 {
        let stack = snap.trace(0).and_then(|t| t.stack(i)).expect("stack");
        assert_eq!(cache.site(&snap, stack), &site_at(&snap, i));
    }
    assert_eq!(
        cache.site(&snap, memviz_snapshot::StackId::EMPTY).kind,
        SiteKind::None
    );

    // --user-code transformers: the llama line becomes the site.
    let mut own = SiteCache::new(&snap, UserCode::parse("transformers").expect("parses"));
    let stack = snap.trace(0).and_then(|t| t.stack(0)).expect("stack");
    assert_eq!(
        own.site(&snap, stack).label,
        "modeling_llama.py:216:forward"
    );
}

#[test]
fn unique_labels_tell_sites_apart() {
    let snap = snap_of(&[
        vec![("/a/utils.py", 3, "f"), ("/home/u/train.py", 10, "main")],
        vec![("/a/utils.py", 3, "f"), ("/home/u/train.py", 20, "main")],
        vec![("/b/utils.py", 3, "f")],
        vec![("/c/x.py", 1, "g")],
    ]);
    let st = |i| snap.trace(0).and_then(|t| t.stack(i)).expect("stack");
    let mut cache = SiteCache::default_for(&snap);
    let entries: Vec<(memviz_snapshot::StackId, String)> = (0..4)
        .map(|i| (st(i), cache.site(&snap, st(i)).label.clone()))
        .collect();
    let labels = unique_labels(&snap, &entries, &mut cache);
    assert_eq!(labels[3], "x.py:1:g");
    let mut sorted = labels.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 4, "{labels:?}");
}

#[test]
fn unique_labels_name_the_op_when_only_cpp_frames_differ() {
    let snap = snap_of(&[
        vec![
            ("", 0, "at::_ops::empty_strided::call(long)"),
            ("/home/u/model.py", 9, "f"),
        ],
        vec![
            ("", 0, "at::_ops::bmm::call(at::Tensor const&)"),
            ("/home/u/model.py", 9, "f"),
        ],
    ]);
    let st = |i| snap.trace(0).and_then(|t| t.stack(i)).expect("stack");
    let mut cache = SiteCache::default_for(&snap);
    let entries: Vec<(memviz_snapshot::StackId, String)> = (0..2)
        .map(|i| (st(i), cache.site(&snap, st(i)).label.clone()))
        .collect();
    let labels = unique_labels(&snap, &entries, &mut cache);
    assert_eq!(
        labels,
        vec!["model.py:9:f [empty_strided]", "model.py:9:f [bmm]"]
    );
}

#[test]
fn unique_labels_prefer_the_users_callers() {
    const MODULE: &str = "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py";
    let snap = snap_of(&[
        vec![
            ("/home/u/model.py", 9, "f"),
            (MODULE, 1763, "_call_impl"),
            ("/home/u/model.py", 20, "block"),
        ],
        vec![
            ("/home/u/model.py", 9, "f"),
            (MODULE, 1763, "_call_impl"),
            ("/home/u/model.py", 30, "other"),
        ],
    ]);
    let st = |i| snap.trace(0).and_then(|t| t.stack(i)).expect("stack");
    let mut cache = SiteCache::default_for(&snap);
    let entries: Vec<(memviz_snapshot::StackId, String)> = (0..2)
        .map(|i| (st(i), cache.site(&snap, st(i)).label.clone()))
        .collect();
    let labels = unique_labels(&snap, &entries, &mut cache);
    assert_eq!(
        labels,
        vec![
            "model.py:9:f ← model.py:20:block",
            "model.py:9:f ← model.py:30:other"
        ]
    );
}
