//! What one frame is ([`FrameKind`]), from its filename and name only (docs/sites.md): the
//! rules the whole crate uses to tell the user's code from libraries, the interpreter and C++.

use super::UserCode;

/// What one frame is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum FrameKind {
    /// A Python frame of the user's own code: outside every library location, or matched by
    /// the [`UserCode`] the caller gave.
    User,
    /// A Python frame of a library: `site-packages` / `dist-packages`, the standard library,
    /// torch, and generated or frozen code (`<frozen …>`, `<eval_with_key>.N`, `<string>`).
    Library,
    /// A C frame of CPython itself (`_PyEval_EvalFrameDefault`, `slot_tp_call`, `Objects/*.c`…).
    Interpreter,
    /// Everything else: C++ / CUDA (torch's, a C extension's, libc's).
    Native,
}

impl FrameKind {
    /// `user`, `library`, `interpreter` or `native`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FrameKind::User => "user",
            FrameKind::Library => "library",
            FrameKind::Interpreter => "interpreter",
            FrameKind::Native => "native",
        }
    }

    /// A Python frame (user or library).
    #[must_use]
    pub fn is_python(self) -> bool {
        matches!(self, FrameKind::User | FrameKind::Library)
    }
}

/// The kind of a frame with this filename and name under `user`.
#[must_use]
pub fn frame_kind(file: &str, name: &str, user: &UserCode) -> FrameKind {
    if is_python_file(file) {
        if user.matches(file) || !is_library_file(file) {
            FrameKind::User
        } else {
            FrameKind::Library
        }
    } else if is_interpreter_frame(file, name) {
        FrameKind::Interpreter
    } else {
        FrameKind::Native
    }
}

/// Python source: a `.py` / `.pyw` file, or a `<…>` pseudo-file (`<stdin>`,
/// `<ipython-input-3-…>`, `<frozen runpy>`, `<eval_with_key>.4`, `<string>`).
#[must_use]
pub fn is_python_file(file: &str) -> bool {
    file.ends_with(".py") || file.ends_with(".pyw") || is_pseudo_file(file)
}

/// `<…>` (possibly followed by a suffix, as FX's `<eval_with_key>.4`).
fn is_pseudo_file(file: &str) -> bool {
    file.starts_with('<') && file.contains('>')
}

/// Pseudo-files the user typed: the REPL and notebook cells.
const USER_PSEUDO: [&str; 4] = ["<stdin>", "<ipython-input-", "<console>", "<input>"];

/// Where a library's files are: the part of `file` from the library root on, when `file` is
/// in one ([`library_root_end`]).
#[must_use]
pub fn is_library_file(file: &str) -> bool {
    if is_pseudo_file(file) {
        // Generated or frozen code (`<frozen …>`, `<eval_with_key>.N`, `<string>`,
        // `<__array_function__ internals>`): no file of the user's to open.
        return !USER_PSEUDO.iter().any(|p| file.starts_with(p));
    }
    library_root_end(file).is_some() || is_torch_file(file) || is_inductor_output(file)
}

/// Code torch.compile wrote: Inductor's output modules in its default cache directory
/// (`/tmp/torchinductor_<user>/<2 chars>/<hash>.py`). They are torch's generated code, not
/// the user's, so the site is the user's line that called the compiled function. A custom
/// `TORCHINDUCTOR_CACHE_DIR` without that name is not recognised (its files count as the
/// user's).
fn is_inductor_output(file: &str) -> bool {
    file.contains("/torchinductor_") || file.contains("\\torchinductor_")
}

/// A file of the torch package itself (wherever it is installed, a source checkout too).
#[must_use]
pub fn is_torch_file(file: &str) -> bool {
    file.contains("/torch/")
        || file.contains("\\torch\\")
        || file.starts_with("torch/")
        || file.starts_with("torch\\")
        || file.starts_with("<frozen")
        || file.starts_with("<eval_with_key")
}

/// The byte offset just past the library root of `file`: past `site-packages/`,
/// `dist-packages/`, `/lib/pythonX.Y/` (`lib64`, `pypy` too: the standard library and every
/// environment under it) or Windows' `\Lib\` (the standard library of a Windows install or
/// venv). `None` outside those.
#[must_use]
pub fn library_root_end(file: &str) -> Option<usize> {
    for marker in ["site-packages", "dist-packages"] {
        if let Some(i) = file.rfind(marker) {
            let end = i + marker.len();
            let next = file.as_bytes().get(end).copied();
            if matches!(next, Some(b'/' | b'\\')) {
                return Some(end + 1);
            }
        }
    }
    for marker in ["/lib/python", "/lib64/python", "/lib/pypy", "\\lib\\python"] {
        let mut from = 0;
        while let Some(i) = file.get(from..).and_then(|r| r.find(marker)) {
            let start = from + i + marker.len();
            let rest = file.get(start..).unwrap_or("");
            let digits = rest
                .bytes()
                .take_while(|b| b.is_ascii_digit() || *b == b'.')
                .count();
            if digits > 0 && matches!(rest.as_bytes().get(digits), Some(b'/' | b'\\')) {
                return Some(start + digits + 1);
            }
            from = start;
        }
    }
    file.find("\\Lib\\").map(|i| i + "\\Lib\\".len())
}

/// `file` as shown in a detail line: from its library root on
/// (`transformers/models/llama/modeling_llama.py`, `threading.py`), torch's files from
/// `torch/` on, others (the user's) by their basename.
#[must_use]
pub fn short_path(file: &str) -> &str {
    if let Some(end) = library_root_end(file) {
        return file.get(end..).unwrap_or(file);
    }
    if let Some(i) = file.rfind("/torch/").or_else(|| file.rfind("\\torch\\")) {
        return file.get(i + 1..).unwrap_or(file);
    }
    crate::frames::basename(file)
}

/// CPython's own C frames, by symbol (`Py…`, `_Py…`, `slot_tp_…`, `method_vectorcall…`,
/// `cfunction_…`, `vectorcall…`, `pymain_…`, `run_mod`, `run_eval_code_obj`, `builtin_exec`)
/// or by source file (`ceval.c`, `bytecodes.c`, `generated_cases.c.h`, and `.c` / `.h` files
/// under CPython's `Python/`, `Objects/`, `Modules/`, `Include/`).
#[must_use]
pub fn is_interpreter_frame(file: &str, name: &str) -> bool {
    let n = name.trim_start();
    let py_api = n.strip_prefix("Py").is_some_and(|r| {
        r.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_uppercase() || b == b'_')
    });
    if py_api
        || n.starts_with("_Py")
        || [
            "slot_tp_",
            "method_vectorcall",
            "cfunction_",
            "vectorcall",
            "pymain_",
            "run_mod",
            "run_eval_code_obj",
            "builtin_exec",
        ]
        .iter()
        .any(|p| n.starts_with(p))
    {
        return true;
    }
    let base = crate::frames::basename(file);
    if matches!(base, "ceval.c" | "bytecodes.c" | "generated_cases.c.h") {
        return true;
    }
    (base.ends_with(".c") || base.ends_with(".h"))
        && ["Python", "Objects", "Modules", "Include"].iter().any(|d| {
            file.contains(&format!("/{d}/"))
                || file.contains(&format!("\\{d}\\"))
                || file.starts_with(&format!("{d}/"))
        })
}

/// Native frames that never name a site (docs/sites.md): the stack capture itself, the
/// caching allocator and the tensor factories behind every allocation (`…Allocator…`,
/// `StorageImpl`, `at::empty…`, `at::detail::empty…`, `at::native::empty…`, `create_out`,
/// `set_output_raw_strided`, `TensorIterator…`, `at::meta::…`, `resize_output`), the
/// dispatcher (`c10::impl::…`, `c10::Dispatcher`, `c10::BoxedKernel`, `at::_ops::…`,
/// `core/boxing`, the generated `Register*.cpp`, `Redispatch*`, `VariableType`,
/// `ADInplaceOrView`), and thread / process start.
#[must_use]
pub fn is_native_plumbing(file: &str, name: &str) -> bool {
    const NAMES: [&str; 32] = [
        "unwind::unwind",
        "CapturedTraceback",
        "gather_with_cpp",
        "Allocator",
        "StorageImpl",
        "at::empty",
        "at::detail::empty",
        "at::detail::_empty",
        "_empty_generic",
        "_empty_strided_generic",
        "at::native::empty",
        "_CUDA_memory_format_empty",
        "_CUDA__empty",
        "empty_cuda",
        "empty_strided",
        "create_out",
        "set_output_raw_strided",
        "allocate_or_resize_outputs",
        "TensorIterator",
        "at::meta::",
        "resize_output",
        "c10::impl::",
        "c10::Dispatcher",
        "c10::BoxedKernel",
        "c10::KernelFunction",
        "at::_ops::",
        "VariableType::",
        "ADInplaceOrView",
        "__libc_start",
        "start_thread",
        "execute_native_thread_routine",
        "clone3",
    ];
    let head = symbol_head(name);
    if NAMES.iter().any(|p| head.contains(p)) || head.trim() == "_start" {
        return true;
    }
    let base = crate::frames::basename(file);
    file.contains("core/boxing")
        || base.starts_with("Register")
        || base.starts_with("Redispatch")
        || base.starts_with("VariableType")
        || base.starts_with("ADInplaceOrViewType")
        || matches!(base, "CUDACachingAllocator.cpp" | "EmptyTensor.cpp")
}

/// A C++ symbol without its parameter list (which names types such as `at::TensorIterator&`
/// that say nothing of the function): up to the first `(` that does not open
/// `(anonymous namespace)`.
fn symbol_head(name: &str) -> &str {
    let mut from = 0;
    while let Some(i) = name.get(from..).and_then(|r| r.find('(')) {
        let at = from + i;
        if name
            .get(at..)
            .is_some_and(|r| r.starts_with("(anonymous namespace)"))
        {
            from = at + 1;
            continue;
        }
        return name.get(..at).unwrap_or(name);
    }
    name
}

/// A native site's label: the C++ function's name, without its parameter list, its return
/// type or its template arguments (`void at::native::gpu_reduce_kernel<float, …>(…)` gives
/// `at::native::gpu_reduce_kernel<…>`), so a legend or a table row stays one short line; the
/// site's `name` keeps the whole symbol.
#[must_use]
pub fn native_label(name: &str) -> String {
    const ANON: &str = "(anonymous namespace)";
    const ANON_ONE_WORD: &str = "(anonymous\u{a0}namespace)";
    let head = symbol_head(name).replace(ANON, ANON_ONE_WORD);
    let mut out = String::with_capacity(head.len());
    let mut depth = 0usize;
    for c in head.chars() {
        match c {
            '<' => {
                if depth == 0 {
                    out.push_str("<…>");
                }
                depth += 1;
            }
            '>' => depth = depth.saturating_sub(1),
            // A space outside template arguments ends the return type: start again.
            ' ' if depth == 0 => out.clear(),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    if out.is_empty() {
        // Nothing before a `(` (or only spaces): the symbol as it is.
        out = name.trim().to_string();
    }
    out.replace(ANON_ONE_WORD, ANON)
}

/// The autograd node a C++ frame runs, from its symbol: `XBackward0` from
/// `torch::autograd::generated::XBackward0::apply(…)` (or `…::XBackward0_apply_functional(…)`),
/// `AccumulateGrad` from `torch::autograd::AccumulateGrad::apply(…)`, `CopySlices`, …: the
/// last `::` component before `::apply(`, `_apply_functional(` or `_apply_impl(`, when the
/// symbol is in `torch::autograd`. `release_variables` and other methods name none.
#[must_use]
pub fn autograd_node(name: &str) -> Option<&str> {
    if !name.contains("torch::autograd::") {
        return None;
    }
    for (marker, strip) in [
        ("::apply(", 0usize),
        ("_apply_functional(", 0),
        ("_apply_impl(", 0),
    ] {
        let Some(end) = name.find(marker) else {
            continue;
        };
        let head = name.get(..end)?;
        let node = head.rsplit("::").next()?.get(strip..)?;
        let ok = !node.is_empty()
            && node.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && node.as_bytes().first().is_some_and(u8::is_ascii_uppercase);
        if ok && node != "Node" {
            return Some(node);
        }
    }
    None
}

/// How an autograd node is shown: `backward of mm` for `MmBackward0`
/// (`backward of max_pool2d_with_indices` for `MaxPool2DWithIndicesBackward0`; a variant other
/// than `…Backward0` keeps its name: `backward of mm (MmBackward1)`), `autograd
/// AccumulateGrad` for nodes that are not an op's backward.
#[must_use]
pub fn autograd_label(node: &str) -> String {
    let Some(i) = node.rfind("Backward") else {
        return format!("autograd {node}");
    };
    let (op, tail) = (node.get(..i).unwrap_or(""), node.get(i..).unwrap_or(""));
    let variant = tail.trim_start_matches("Backward");
    if op.is_empty() || !variant.bytes().all(|b| b.is_ascii_digit()) {
        return format!("autograd {node}");
    }
    let op = snake_case(op);
    if variant == "0" || variant.is_empty() {
        format!("backward of {op}")
    } else {
        format!("backward of {op} ({node})")
    }
}

/// `MaxPool2DWithIndices` → `max_pool2d_with_indices`: a capital starts a word unless it
/// follows a digit or another capital that is not followed by a lower-case letter
/// (`CudnnRNN` → `cudnn_rnn`).
fn snake_case(s: &str) -> String {
    let b: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 4);
    for (i, &c) in b.iter().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            let prev = b.get(i - 1).copied().unwrap_or(' ');
            let next = b.get(i + 1).copied().unwrap_or(' ');
            let starts = prev.is_ascii_lowercase()
                || (prev.is_ascii_uppercase() && next.is_ascii_lowercase());
            if starts {
                out.push('_');
            }
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}
