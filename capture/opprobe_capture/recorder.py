"""The recorder behind opprobe_capture.py: a TorchDispatchMode that records aten calls.

Kept free of PyTorch-2.x-only APIs (every newer API is looked up with getattr and has a fallback),
so the same file works on Debian's PyTorch 1.13 and on 2.x.

Trace format: schemas/trace.schema.json (format "opprobe-trace", version 1).
"""

import functools
import json
import math
import os
import runpy
import signal
import sys
import sysconfig
import tempfile
import threading
import traceback
import types as _pytypes
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode

TRACE_FORMAT = "opprobe-trace"
TRACE_VERSION = 1

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_SHIM_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_AUTOGRAD_DIR = _TORCH_DIR + "autograd" + os.sep
_OPTIM_DIR = _TORCH_DIR + "optim" + os.sep
_RUNPY_FILE = os.path.abspath(runpy.__file__) if getattr(runpy, "__file__", None) else "<runpy>"

# Namespaces of ops that never reach a device (profiler ranges and similar bookkeeping): counted in the
# trace's `host_only_ops`, not recorded as calls, as is any call outside aten that takes and returns no tensor (a
# library's own queries and configuration: torchaudio::is_sox_available). Every other namespace (aten, torchvision,
# quantized, a user's torch.library namespace, ...) is recorded.
BOOKKEEPING_NAMESPACES = ("profiler",)


def _library_roots():
    """Folders whose files are libraries, not the user's own code: the standard library and site-packages."""
    roots = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            p = sysconfig.get_paths().get(key)
        except Exception:  # noqa: BLE001
            p = None
        if p:
            roots.add(os.path.abspath(p))
    for p in sys.path:
        if p and os.path.basename(p.rstrip(os.sep)) in ("site-packages", "dist-packages"):
            roots.add(os.path.abspath(p))
    # Longest first, so a path is made relative to its innermost root.
    return sorted((r.rstrip(os.sep) + os.sep for r in roots), key=len, reverse=True)


_LIBRARY_ROOTS = _library_roots()


def _library_path(ap):
    """The path of a library file relative to its library root (`torchvision/models/resnet.py`), else None."""
    if not ap or ap.startswith("<"):
        return None
    for root in _LIBRARY_ROOTS:
        if ap.startswith(root):
            return ap[len(root):]
    if os.sep + "site-packages" + os.sep in ap or os.sep + "dist-packages" + os.sep in ap:
        cut = ap.rfind("-packages" + os.sep)
        return ap[cut + len("-packages" + os.sep):]
    return None

# c10::ScalarType numbering: schema defaults such as `ScalarType? dtype=4` arrive as these ints.
_SCALAR_TYPES = [
    "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex32", "complex64",
    "complex128", "bool", "qint8", "quint8", "qint32", "bfloat16", "quint4x2", "quint2x4", "bits1x8",
    "bits2x4", "bits4x2", "bits8", "bits16", "float8_e5m2", "float8_e4m3fn", "float8_e5m2fnuz",
    "float8_e4m3fnuz", "uint16", "uint32", "uint64", "uint1", "uint2", "uint3", "uint4", "uint5", "uint6", "uint7",
    "int1", "int2", "int3", "int4", "int5", "int6", "int7", "float8_e8m0fnu", "float4_e2m1fn_x2",
]
# c10::Layout and c10::MemoryFormat numbering (same reason).
_LAYOUTS = ["strided", "sparse_coo", "sparse_csr", "mkldnn", "sparse_csc", "sparse_bsr", "sparse_bsc", "jagged"]
_MEMORY_FORMATS = ["contiguous_format", "preserve_format", "channels_last", "channels_last_3d"]

_SymInt = getattr(torch, "SymInt", None)
_SymFloat = getattr(torch, "SymFloat", None)
_SymBool = getattr(torch, "SymBool", None)


def _torch_enum_name(v):
    s = str(v)
    return s[6:] if s.startswith("torch.") else s


# The working directory the capture started in (the script may chdir): source files below it are recorded
# relative to it.
_START_CWD = os.getcwd()


def _abs(path):
    return os.path.normpath(os.path.join(_START_CWD, path))


def _rel_path(path):
    """Source file as recorded: relative to the starting working directory when below it, else absolute."""
    if not path or path.startswith("<"):
        return path
    ap = _abs(path)
    cwd = _START_CWD.rstrip(os.sep) + os.sep
    return ap[len(cwd):] if ap.startswith(cwd) else ap


# ---------------------------------------------------------------------------------------------------
# Schema: declared argument types. `str(arg.type)` erases ScalarType/Layout/MemoryFormat to int, so
# the declared types are parsed from the schema text, `aten::sum.dim_IntList(Tensor self, int[1]? dim,
# bool keepdim=False, *, ScalarType? dtype=None) -> Tensor`.
# ---------------------------------------------------------------------------------------------------

# The one top-level splitter of the Python side (capture/opprobe_capture/top_level.py, beside this file in every copy of
# the shim), shared with analyzer/loaders/gen_op_schemas.py.
from .top_level import split_top_level as _split_top_level  # noqa: E402
from . import native as capture_native  # noqa: E402  (native.py: the fast path, where it is built)
from . import steps as capture_steps  # noqa: E402  (steps.py: the graphs torch_xla would run)
from . import program as capture_program  # noqa: E402  (program.py: the first step's data flow, for --fit)


def _strip_alias(t):
    # `Tensor(a!)` -> `Tensor`, `Tensor(a)[]` -> `Tensor[]`, `Tensor(a!)?` -> `Tensor?`
    out, depth = [], 0
    for ch in t:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def _declared_types(schema):
    args = list(schema.arguments)
    text = str(schema)
    open_at = text.find("(")
    # the argument list ends at the `)` that matches the first `(`
    depth, close_at = 0, -1
    for k in range(open_at, len(text)):
        if text[k] == "(":
            depth += 1
        elif text[k] == ")":
            depth -= 1
            if depth == 0:
                close_at = k
                break
    types = []
    if open_at >= 0 and close_at > open_at:
        for part in _split_top_level(text[open_at + 1:close_at]):
            if part == "*":
                continue
            types.append(_strip_alias(part.split()[0]))
    if len(types) != len(args):  # unexpected schema text: fall back to the (erased) JIT types
        types = [str(a.type) for a in args]
    return types


class _OpInfo(object):
    __slots__ = ("func", "name", "overload", "qualified", "record", "aten", "args", "call")

    def __init__(self, func):
        self.func = func  # kept alive: the recorder finds this by id(func)
        schema = func._schema
        self.name = schema.name
        ov = schema.overload_name
        self.overload = ov if ov else "default"
        self.qualified = self.name + "." + ov if ov else self.name  # `aten::mul.Tensor`, `aten::relu`
        # The C++ operator behind the OpOverload: calling it directly skips OpOverload.__call__'s Python frame.
        self.call = getattr(func, "_op", func)
        self.record = self.name.split("::", 1)[0] not in BOOKKEEPING_NAMESPACES
        self.aten = self.name.startswith("aten::")
        self.args = []  # (name, declared type, kwarg_only, has_default, default)
        types = _declared_types(schema)
        for a, t in zip(schema.arguments, types):
            has_default = a.has_default_value() if hasattr(a, "has_default_value") else a.default_value is not None
            self.args.append((a.name, t, bool(a.kwarg_only), bool(has_default), a.default_value))

    def values(self, args, kwargs):
        """The call's argument values in schema order, schema defaults filled in (None where there is none)."""
        values = []
        npos = len(args)
        pos = 0
        for (name, _declared, kwarg_only, has_default, default) in self.args:
            if not kwarg_only and pos < npos:
                values.append(args[pos])
                pos += 1
            elif kwargs and name in kwargs:
                values.append(kwargs[name])
            elif has_default:
                values.append(default)
            else:
                values.append(None)
        return values


# ---------------------------------------------------------------------------------------------------
# Values. Encoded as hashable tuples while recording (so identical calls dedup cheaply) and turned
# into JSON objects when the trace is written.
# ---------------------------------------------------------------------------------------------------

def _sym_int(v):
    """(int value, symbolic) for an int or a SymInt."""
    if isinstance(v, bool):
        return int(v), False
    if isinstance(v, int):
        return v, False
    try:
        return int(v), False if _SymInt is None or not isinstance(v, _SymInt) else True
    except Exception:  # noqa: BLE001  (a SymInt without a hint)
        node = getattr(v, "node", None)
        hint = getattr(node, "hint", None)
        return (int(hint) if isinstance(hint, int) else 0), True


_DTYPE_NAMES = {}


def _dtype_name(dt):
    name = _DTYPE_NAMES.get(dt)
    if name is None:
        name = _DTYPE_NAMES[dt] = _torch_enum_name(dt)
    return name


def _tensor_meta(t):
    sizes = tuple(t.shape)
    if all(type(s) is int for s in sizes):
        return (_dtype_name(t.dtype), sizes, None)
    ints, dyn = [], []
    for s in sizes:
        if isinstance(s, int):
            ints.append(s)
            dyn.append(False)
        else:
            v, sym = _sym_int(s)
            ints.append(v)
            dyn.append(bool(sym))
    return (_dtype_name(t.dtype), tuple(ints), tuple(dyn) if any(dyn) else None)


def _float_value(x):
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _enum_from(v, names):
    if isinstance(v, int) and not isinstance(v, bool):
        return names[v] if 0 <= v < len(names) else str(v)
    return _torch_enum_name(v)


def _is_int_like(x):
    return (isinstance(x, int) and not isinstance(x, bool)) or (_SymInt is not None and isinstance(x, _SymInt))


def _encode(v, declared):
    """Encodes one argument or output value; `declared` is the schema type (`Tensor?`, `int[2]`, ...)."""
    base = declared.rstrip("?")
    if v is None:
        return ("none",)
    if isinstance(v, torch.Tensor):
        return ("tensor",) + _tensor_meta(v)
    if base == "ScalarType" or isinstance(v, torch.dtype):
        if isinstance(v, (int, torch.dtype)) and not isinstance(v, bool):
            return ("dtype", _enum_from(v, _SCALAR_TYPES))
    if base == "Layout" or isinstance(v, torch.layout):
        if isinstance(v, (int, torch.layout)) and not isinstance(v, bool):
            return ("layout", _enum_from(v, _LAYOUTS))
    if base == "MemoryFormat" or isinstance(v, torch.memory_format):
        if isinstance(v, (int, torch.memory_format)) and not isinstance(v, bool):
            return ("memory_format", _enum_from(v, _MEMORY_FORMATS))
    if isinstance(v, torch.device):
        return ("device", str(v))
    if base == "Device" and isinstance(v, str):
        return ("device", v)
    if isinstance(v, bool) or (_SymBool is not None and isinstance(v, _SymBool)):
        try:
            return ("bool", bool(v))
        except Exception:  # noqa: BLE001
            return ("other", "SymBool", str(v))
    if _is_int_like(v):
        iv, sym = _sym_int(v)
        if base.startswith("int[") or base.startswith("SymInt["):
            # `int[2] padding=1` style: a single int stands for the whole list.
            n = base[base.index("[") + 1:base.index("]")]
            reps = int(n) if n.isdigit() else 1
            return ("int_list", (iv,) * reps, sym)
        return ("int", iv, sym)
    if isinstance(v, float) or (_SymFloat is not None and isinstance(v, _SymFloat)):
        try:
            return ("float", _float_value(v))
        except Exception:  # noqa: BLE001
            return ("other", "SymFloat", str(v))
    if isinstance(v, complex):
        return ("complex", _float_value(v.real), _float_value(v.imag))
    if isinstance(v, str):
        return ("string", v)
    if isinstance(v, (list, tuple)):
        elem = base[:base.index("[")] if "[" in base else ""
        items = list(v)
        if elem.startswith("Tensor") or (items and all(x is None or isinstance(x, torch.Tensor) for x in items)):
            if all(x is None or isinstance(x, torch.Tensor) for x in items):
                return ("tensor_list", tuple(None if x is None else _tensor_meta(x) for x in items))
        if elem == "bool" or (items and all(isinstance(x, bool) for x in items)):
            if all(isinstance(x, bool) for x in items):
                return ("bool_list", tuple(items))
        if elem == "float" or (items and any(isinstance(x, float) for x in items)):
            if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in items):
                return ("float_list", tuple(_float_value(x) for x in items))
        if all(_is_int_like(x) for x in items):
            vals = [_sym_int(x) for x in items]
            return ("int_list", tuple(x for x, _ in vals), any(s for _, s in vals))
        if all(isinstance(x, str) for x in items):
            return ("string_list", tuple(items))
        return ("other", type(v).__name__, repr(v)[:200])
    return ("other", type(v).__name__, repr(v)[:200])


def _tensor_json(meta):
    dtype, shape, dyn = meta
    d = {"dtype": dtype, "shape": list(shape)}
    if dyn is not None:
        d["dynamic"] = list(dyn)
    return d


def _value_json(e):
    kind = e[0]
    if kind == "none":
        return {"kind": "none"}
    if kind == "tensor":
        d = {"kind": "tensor"}
        d.update(_tensor_json(e[1:]))
        return d
    if kind == "tensor_list":
        return {"kind": "tensor_list", "value": [None if m is None else _tensor_json(m) for m in e[1]]}
    if kind == "int":
        d = {"kind": "int", "value": e[1]}
        if e[2]:
            d["symbolic"] = True
        return d
    if kind == "int_list":
        d = {"kind": "int_list", "value": list(e[1])}
        if e[2]:
            d["symbolic"] = True
        return d
    if kind == "complex":
        return {"kind": "complex", "real": e[1], "imag": e[2]}
    if kind in ("float_list", "bool_list", "string_list"):
        return {"kind": kind, "value": list(e[1])}
    if kind == "other":
        return {"kind": "other", "type": e[1], "repr": e[2]}
    return {"kind": kind, "value": e[1]}


# ---------------------------------------------------------------------------------------------------
# The per-call key. Most calls repeat one seen before (a training loop runs the same ops at the same lines), so
# each call is first looked up by a raw key built from values that are cheap to read and compare: the
# OpOverload, each argument's type and value (a tensor's dtype and torch.Size), the outputs, the place and the
# phase. Only a raw key not seen before is encoded (schema defaults filled in, dtypes named), and several raw
# keys (the same call with an argument passed by keyword, or left at its default) share the encoded entry.
# ---------------------------------------------------------------------------------------------------

class _Unkeyable(Exception):
    """A value without a cheap, value-based raw key (a SymInt, a Generator, ...): the call takes the slow path."""


_TENSOR = torch.Tensor
_weakref = weakref.ref
# Types whose instances hash and compare by value (a torch.dtype, device, layout and memory format too).
_VALUE_TYPES = frozenset([int, float, bool, type(None), str, complex, torch.dtype, torch.device, torch.layout,
                          torch.memory_format])


def _raw(v):
    if isinstance(v, _TENSOR):
        return (v.dtype, v.shape)  # torch.Size of SymInts does not hash: TypeError, the slow path
    t = type(v)
    if t in _VALUE_TYPES:
        if t is float and v != v:
            return (t, "nan")  # nan != nan: every nan would be a new key
        return (t, v)
    if isinstance(v, (list, tuple)):
        return (t, tuple([_raw(x) for x in v]))
    raise _Unkeyable()


# The key under which a forward call's place is kept in its autograd node's `metadata` dict, for the backward
# ops of that node to name it.
_FORWARD_KEY = "opprobe_forward"
_SKIP = object()  # raw-key entry of a call that is not recorded (counted in host_only_ops)
_NATIVE_MARKS = {"backward": 4, "optimizer": 8}  # the phase a code object marks, for the fast path (native_classify)


# ---------------------------------------------------------------------------------------------------
# The recorder
# ---------------------------------------------------------------------------------------------------

class Recorder(object):
    def __init__(self):
        self.calls = {}        # encoded key -> [first sequence number, count, step of the first occurrence]
        self.order = []        # encoded keys in order of first occurrence
        self.total = 0
        self.skipped = {}      # calls that never reach a device (host_only_ops) -> count
        self.step = 0          # step boundaries seen so far (xm.mark_step, torch_xla.sync, ...)
        self.boundaries = {}   # boundary kind -> count
        self.internal_errors = {}  # recorder failures by message (the call itself still ran)
        self._fast = {}        # raw key -> the encoded entry (or _SKIP)
        self._ops = {}         # id(OpOverload) -> _OpInfo (OpOverload's __hash__ is a Python method: slow)
        self._code_cache = {}  # code object -> (kind, phase marker, file as recorded, library-relative file)
        self._autograd_node_fn = getattr(torch._C, "_current_autograd_node", None)  # 2.x
        self._grad_enabled = torch.is_grad_enabled
        self._module_stack = []   # [(module id, path)]
        # Where the forward hook cannot run after a forward that raised (PyTorch before 2.1: no always_call), the
        # frame of each entry's module call, by id, so that a later forward drops the entries whose call has ended.
        self.stale_check = False
        self._module_frames = []
        self._module_names = {}   # module id -> path, refreshed when a root module is entered
        self._phase_stack = []    # "backward" / "optimizer" while torch.autograd.backward/grad or a step runs
        self._backward_loc = None
        self._backward_forward = None  # PyTorch 1.13: the forward call of the autograd node running now
        self._pending = None      # (outputs, forward call) of the last forward call, until its node exists
        self._main_thread = threading.current_thread()
        self._main_ident = threading.get_ident()
        self._optimizer_cls = getattr(torch.optim, "Optimizer", None)
        # The fast path (fastpath.cpp, loaded by native.py; None without it): the calls it counts by
        # their key are added to the entries here when the capture stops (merge_native).
        self.native = None
        self._native_entries = []  # entry number -> entry (the list in self.calls)
        self._native_numbers = {}  # id(entry) -> entry number
        self._native_off = False   # the script entered a dispatch mode of its own: the Python path from then on
        self._contexts = {}        # (module path, phase) -> the context number the fast path keys calls with
        self._native_ops = {}      # (op name, overload name) -> OpOverload
        self._places = {}          # forward call place -> the same tuple (one object per distinct place)
        self._last_place = None    # the place of the last call that left a forward link
        self._last = None          # (entry or None, cacheable) of the last call recorded
        self.native_counted = 0    # calls the fast path counted (added by merge_native)
        # The graphs torch_xla would run (steps.py); followed once a tensor is moved to the XLA device, from
        # when on every call takes the Python path (the fast path does not see the data flow).
        self.graphs = capture_steps.StepGraphs()
        # The first training step's data flow (program.py), when asked for (--program): every call takes the
        # Python path then.
        self.program = None
        # Above zero while the real torchax answers a call the recorder recorded as one (real_torchax.py).
        self.suppress = 0

    # -- where: source line, phase ------------------------------------------------------------------
    def _code_info(self, code):
        """(kind, phase marker, recorded file name, library-relative file) of a code object, computed once per
        code object. kind: 0 torch or the shim (internal), 1 a library (site-packages, stdlib), 2 the user's."""
        f = code.co_filename
        ap = _abs(f) if f and not f.startswith("<") else f
        internal = bool(ap) and (ap.startswith(_TORCH_DIR) or ap.startswith(_SHIM_DIR) or
                                 f.startswith("<frozen") or ap == _RUNPY_FILE)
        marker = None
        if internal:
            if ap.startswith(_AUTOGRAD_DIR) and code.co_name in ("backward", "grad", "_engine_run_backward"):
                marker = "backward"
            elif ap.startswith(_OPTIM_DIR):
                marker = "optimizer"
        elif code.co_name in ("step", "zero_grad") and "self" in code.co_varnames + code.co_cellvars + code.co_freevars:
            marker = "optimizer?"  # a user-defined optimizer method: checked against `self` (a function without one
            # never is, and its calls stay countable by the fast path)
        lib = None if internal else _library_path(ap)
        info = (0 if internal else 1 if lib is not None else 2, marker, None if internal else _rel_path(f), lib)
        self._code_cache[code] = info
        return info

    def _is_internal(self, code):
        info = self._code_cache.get(code) or self._code_info(code)
        return info[0] == 0

    # -- forward calls of backward ops --------------------------------------------------------------
    def flush_pending(self):
        """Names the autograd node of the last forward call (autograd creates it after the call returns, so it is
        looked up at the next call) with that call's place."""
        refs, forward = self._pending
        self._pending = None
        self.sync_native()
        for ref in refs:
            t = ref()
            node = t.grad_fn if t is not None else None
            if node is not None:
                md = node.metadata
                if _FORWARD_KEY not in md:
                    md[_FORWARD_KEY] = forward

    def _forward_of_backward_call(self):
        """The forward call whose autograd node is running now (None: not known, e.g. AccumulateGrad)."""
        node_fn = self._autograd_node_fn
        if node_fn is None:
            return self._backward_forward  # PyTorch 1.13: set by the node pre-hooks (hook_backward_graph)
        node = node_fn()
        if node is None:
            return None
        return node.metadata.get(_FORWARD_KEY)

    def hook_backward_graph(self, roots):
        """PyTorch 1.13 has no torch._C._current_autograd_node: a pre-hook on every node of the graph below `roots`
        tells which node runs. Returns the hooks' handles."""
        handles = []
        seen = set()
        todo = []
        for t in roots:
            node = getattr(t, "grad_fn", None) if isinstance(t, _TENSOR) else None
            if node is not None:
                todo.append(node)
        keep = []  # the node objects stay alive while walking, so their ids stay unique
        while todo:
            node = todo.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            keep.append(node)
            try:
                forward = node.metadata.get(_FORWARD_KEY)
                handles.append(node.register_prehook(functools.partial(self._enter_node, forward)))
            except Exception:  # noqa: BLE001  (a node type without pre-hooks: its ops keep the previous node's)
                pass
            for nxt, _ in getattr(node, "next_functions", ()) or ():
                if nxt is not None:
                    todo.append(nxt)
        return handles

    def _enter_node(self, forward, grad_outputs):
        self._backward_forward = forward
        return None

    # -- recording ------------------------------------------------------------------------------------
    def op_info(self, func):
        info = self._ops.get(id(func))
        if info is None:
            info = _OpInfo(func)
            self._ops[id(func)] = info
        return info

    def record(self, func, info, args, kwargs, out, depth=2):
        """Records one call. `info` is op_info(func); `depth` the number of frames between this method and the
        code that dispatched the call."""
        if self.suppress:
            return  # torchax answers a call: the calls it makes for itself are not the script's (real_torchax.py)
        if self._pending is not None:
            self.flush_pending()
        if not info.record:
            self.skipped[info.name] = self.skipped.get(info.name, 0) + 1
            return
        # Where: the innermost frame in the user's own files, the innermost library frame inside it, and the
        # phase from the frames on the way (torch's autograd and optimizers) or from the wrapped entry points.
        try:
            frame = sys._getframe(depth)
        except ValueError:
            # A thread whose Python stack is shorter (the autograd engine's thread of a device such as torch_xla's
            # runs the backward's calls with no frame of the script): the phase says where they belong.
            frame = None
        cache = self._code_cache
        loc = lib_loc = first = phase = None
        while frame is not None:
            code = frame.f_code
            ci = cache.get(code)
            if ci is None:
                ci = self._code_info(code)
            marker = ci[1]
            if marker is not None and phase is None:
                if marker != "optimizer?":
                    phase = marker
                elif self._optimizer_cls is not None and isinstance(frame.f_locals.get("self"), self._optimizer_cls):
                    phase = "optimizer"
            kind = ci[0]
            if kind:
                if kind == 2:
                    loc = (ci[2], frame.f_lineno)
                    break
                line = frame.f_lineno
                if first is None:
                    first = (ci[2], line)
                if lib_loc is None:
                    lib_loc = (ci[3], line)
            frame = frame.f_back
        if loc is None:
            loc = first
            lib_loc = None
        main = threading.get_ident() == self._main_ident
        if phase is None:
            if self._phase_stack and (main or loc is None):
                phase = self._phase_stack[-1]  # an autograd worker thread has no Python frames of the script
            elif self._autograd_node_fn is not None and self._autograd_node_fn() is not None:
                phase = "backward"
            else:
                phase = "forward"
        if loc is None:
            loc = self._backward_loc if phase == "backward" and self._backward_loc is not None else ("", 0)
        if phase == "backward" or not main or not self._module_stack:
            module_path = ""
        else:
            module_path = self._module_stack[-1][1]
        forward = None
        if phase == "backward":
            try:
                forward = self._forward_of_backward_call()
            except Exception:  # noqa: BLE001  (no node or no metadata: the backward() line only)
                forward = None
        elif phase == "forward" and self._grad_enabled() and _requires_grad(args, kwargs):
            # Weak references: a reference the mode keeps to an output changes what PyTorch 2.x dispatches after
            # the call (a factory's output gets an extra aten::detach).
            if isinstance(out, _TENSOR):
                outs = (out,)
            elif isinstance(out, (tuple, list)):
                outs = tuple([o for o in out if isinstance(o, _TENSOR)])
            else:
                outs = ()
            if outs:
                place = (info.qualified, loc, lib_loc, module_path)
                # one object per distinct place: the fast path keys a backward call by its forward place's identity
                place = self._places.setdefault(place, place)
                self._last_place = place
                if self.native is not None and main:
                    self.native.take_pending(outs, place)  # the fast path names the node at the next call
                else:
                    self._pending = (tuple([_weakref(o) for o in outs]), place)
                    self.sync_native()

        try:
            # (A plain tensor's key inline: most arguments are tensors, and a call of _raw costs more than its body.)
            raw = (info, tuple([(a.dtype, a.shape) if type(a) is _TENSOR else _raw(a) for a in args]),
                   tuple([(k, _raw(v)) for k, v in kwargs.items()]) if kwargs else None,
                   (out.dtype, out.shape) if type(out) is _TENSOR else _raw(out), loc, lib_loc, module_path, phase,
                   forward)
            entry = self._fast.get(raw)
        except (_Unkeyable, TypeError):
            raw = entry = None
        if entry is None:
            entry = self._encoded_entry(info, args, kwargs, out, loc, lib_loc, module_path, phase, forward)
            if raw is not None:
                self._fast[raw] = entry
        elif entry is _SKIP:
            self.skipped[info.name] = self.skipped.get(info.name, 0) + 1
        else:
            self.total += 1
            entry[1] += 1
        # The fast path may count later calls with the same key only where nothing but its key decides the entry:
        # not another thread, and a backward call only on PyTorch 2.x, where the key holds the forward call that the
        # running autograd node names (1.13 knows it from the node pre-hooks, which the key does not see).
        self._last = (entry, entry is not _SKIP and main and
                      (phase != "backward" or self._autograd_node_fn is not None))
        if self.graphs.active and entry is not _SKIP and main:
            self.graphs.on_call(info, entry[3], args, kwargs, out)
        if self.program is not None and entry is not _SKIP:
            self.program.on_call(info, entry[4], args, kwargs, out, phase, bool(self._module_stack),
                                 self._grad_enabled(), loc)

    def _encoded_entry(self, info, args, kwargs, out, loc, lib_loc, module_path, phase, forward):
        """The slow path: encodes the call (schema defaults filled in), counts it, and returns its entry."""
        enc_args = [(a[0], _encode(v, a[1])) for a, v in zip(info.args, info.values(args, kwargs))]
        outs = out if isinstance(out, (tuple, list)) else (out,)
        enc_outs = []
        for o in outs:
            if isinstance(o, (tuple, list)) and o and all(isinstance(x, torch.Tensor) for x in o):
                enc_outs.extend(("tensor",) + _tensor_meta(x) for x in o)
            else:
                enc_outs.append(_encode(o, "Tensor" if isinstance(o, torch.Tensor) else ""))
        if not info.aten and not any(e[0] in ("tensor", "tensor_list") for e in
                                     [v for _, v in enc_args] + enc_outs):
            # A non-aten op that takes and returns no tensor (torchvision::_cuda_version) never reaches a device.
            self.skipped[info.name] = self.skipped.get(info.name, 0) + 1
            return _SKIP
        key = (info.name, info.overload, tuple(enc_args), tuple(enc_outs), loc[0], loc[1], module_path, phase,
               lib_loc, forward)
        self.total += 1
        entry = self.calls.get(key)
        if entry is None:
            # [number, count, step, key, index in the trace's calls]
            entry = self.calls[key] = [self.total, 1, self.step, key, len(self.order)]
            self.order.append(key)
        else:
            entry[1] += 1
        return entry

    # -- the fast path ----------------------------------------------------------------------------------
    def native_classify(self, code):
        """For the fast path's call-site key: 2 the user's own code, 1 a library's, 0 torch's or the shim's, plus 4
        where the code marks the backward phase and 8 where it marks the optimizer phase (record takes the phase of
        the innermost such frame); -1 a frame that makes the call a backward call on PyTorch 1.13, or whose phase
        depends on more than its code (a user-defined optimizer method): those calls take the Python path."""
        info = self._code_cache.get(code) or self._code_info(code)
        if info[1] == "optimizer?" or (info[1] == "backward" and self._autograd_node_fn is None):
            return -1
        return info[0] | _NATIVE_MARKS.get(info[1], 0)

    def native_record(self, name, overload, args, out):
        """A call the fast path has not seen under its key: recorded here as the dispatch mode would. `args` holds
        every schema argument in order. Returns the entry's number for the fast path to count later calls with the
        same key (or -1: hand every such call here), and the forward call's place that names the autograd node of
        the call's outputs, or None: the fast path keeps that link from now on, instead of the recorder."""
        func = self._native_ops.get((name, overload))
        if func is None:
            ns, op = name.split("::", 1)
            func = getattr(getattr(getattr(torch.ops, ns), op), overload or "default")
            self._native_ops[(name, overload)] = func
        info = self._ops.get(id(func))
        if info is None:
            info = self.op_info(func)
        pos, kw = [], {}
        for value, a in zip(args, info.args):
            if a[2]:
                kw[a[0]] = value
            else:
                pos.append(value)
        self._last = None
        self._last_place = None
        try:
            self.record(func, info, tuple(pos), kw, out, depth=2)
        except Exception as e:  # noqa: BLE001  (never break the user's script because of the recorder)
            self.note_internal_error(func, e)
            return -1, None
        forward = self._last_place
        entry, cacheable = self._last or (None, False)
        if not cacheable or entry is None:
            return -1, forward
        number = self._native_numbers.get(id(entry))
        if number is None:
            number = self._native_numbers[id(entry)] = len(self._native_entries)
            self._native_entries.append(entry)
        return number, forward

    def sync_native(self):
        """Tells the fast path what decides a call's module path and phase now (-1: the Python path); nothing without
        a fast path."""
        if self.native is None:
            return
        if self._native_off or self._pending is not None or (self._autograd_node_fn is None and
                                                              "backward" in self._phase_stack):
            context = -1
        else:
            key = (self._module_stack[-1][1] if self._module_stack else "",
                   self._phase_stack[-1] if self._phase_stack else "")
            context = self._contexts.get(key)
            if context is None:
                context = self._contexts[key] = len(self._contexts)
        self.native.set_context(context)

    def native_off(self):
        """The Python path from now on (the script entered a dispatch mode of its own, which must see the calls
        before the capture does)."""
        self._native_off = True
        self.sync_native()

    def merge_native(self):
        """Adds the calls the fast path counted to their entries."""
        if self.native is None:
            return
        for number, count in self.native.take_counts().items():
            self._native_entries[number][1] += count
            self.total += count
            self.native_counted += count

    def calls_so_far(self):
        """Calls recorded so far, those the fast path has counted included (for the progress counter)."""
        return self.total + (self.native.pending() if self.native is not None else 0)

    # -- module paths ---------------------------------------------------------------------------------
    def forward_pre_hook(self, module, inputs):
        if threading.current_thread() is not self._main_thread:
            return None
        mid = id(module)
        caller = None
        if self.stale_check:
            caller = sys._getframe(1)  # the module's call (Module._call_impl), alive while its forward runs
            if self._module_stack:
                live = set()
                f = caller.f_back
                while f is not None:
                    live.add(id(f))
                    f = f.f_back
                keep = len(self._module_frames)
                while keep > 0 and self._module_frames[keep - 1] not in live:
                    keep -= 1
                del self._module_stack[keep:]
                del self._module_frames[keep:]
        if not self._module_stack:
            self._module_names = {id(m): n for n, m in module.named_modules()}
            path = ""
            if self.program is not None:
                self.program.on_root_module(module)
        else:
            path = self._module_names.get(mid)
            if path is None:  # not a registered child of the root: name it by class under its caller
                parent = self._module_stack[-1][1]
                cls = type(module).__name__
                path = parent + "." + cls if parent else cls
        self._module_stack.append((mid, path))
        if self.stale_check:
            self._module_frames.append(id(caller))
        self.sync_native()
        return None

    def forward_hook(self, module, inputs, output):
        if threading.current_thread() is not self._main_thread:
            return None
        mid = id(module)
        # pop up to and including this module (a forward that raised leaves stale entries)
        for k in range(len(self._module_stack) - 1, -1, -1):
            if self._module_stack[k][0] == mid:
                del self._module_stack[k:]
                del self._module_frames[k:]
                break
        self.sync_native()
        return None

    # -- phases: backward and optimizer entry points --------------------------------------------------
    def wrap_autograd(self):
        """Wraps torch.autograd.backward/grad: calls inside are in the backward phase (autograd worker threads
        included), located at the user's backward() line, and (1.13) the graph's nodes get pre-hooks."""
        rec = self
        for name in ("backward", "grad"):
            orig = getattr(torch.autograd, name, None)
            if orig is None:
                continue

            def make(orig, name):
                def wrapper(*args, **kwargs):
                    if rec._pending is not None:
                        rec.flush_pending()
                    if rec.native is not None:
                        rec.native.flush()
                    frame = sys._getframe(1)
                    while frame is not None and rec._is_internal(frame.f_code):
                        frame = frame.f_back
                    prev_loc = rec._backward_loc
                    prev_forward = rec._backward_forward
                    if frame is not None:
                        rec._backward_loc = (_rel_path(frame.f_code.co_filename), frame.f_lineno)
                    handles = ()
                    if rec._autograd_node_fn is None:
                        roots = args[0] if args else kwargs.get("tensors" if name == "backward" else "outputs")
                        try:
                            handles = rec.hook_backward_graph(roots if isinstance(roots, (list, tuple)) else [roots])
                        except Exception:  # noqa: BLE001  (never break the script: backward ops keep the line)
                            handles = ()
                    rec._phase_stack.append("backward")
                    rec.sync_native()
                    if rec.program is not None:
                        rec.program.on_backward()
                    try:
                        return orig(*args, **kwargs)
                    finally:
                        rec._phase_stack.pop()
                        rec.sync_native()
                        for h in handles:
                            h.remove()
                        rec._backward_loc = prev_loc
                        rec._backward_forward = prev_forward
                wrapper.__wrapped__ = orig
                wrapper.__name__ = getattr(orig, "__name__", name)
                wrapper.__doc__ = getattr(orig, "__doc__", None)
                return wrapper

            setattr(torch.autograd, name, make(orig, name))

    def wrap_optimizers(self):
        """Wraps step and zero_grad of every torch.optim.Optimizer subclass (those defined later too): calls inside
        are in the optimizer phase even from the user's own helpers (a closure, a custom step's functions)."""
        base = self._optimizer_cls
        if base is None:
            return
        rec = self

        def make(fn, name):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                rec._phase_stack.append("optimizer")
                rec.sync_native()
                try:
                    return fn(*args, **kwargs)
                finally:
                    rec._phase_stack.pop()
                    rec.sync_native()
                    if name == "step" and rec.program is not None and args and not rec._phase_stack:
                        rec.program.on_optimizer_step(args[0], rec._user_place(sys._getframe(1)))
            wrapper._opprobe_phase = True
            return wrapper

        def wrap_class(cls):
            for name in ("step", "zero_grad"):
                fn = cls.__dict__.get(name)
                if isinstance(fn, _pytypes.FunctionType) and not getattr(fn, "_opprobe_phase", False):
                    setattr(cls, name, make(fn, name))

        todo = [base]
        while todo:
            cls = todo.pop()
            wrap_class(cls)
            todo.extend(cls.__subclasses__())
        orig = base.__dict__.get("__init_subclass__")

        def init_subclass(cls, **kwargs):
            if orig is not None:
                orig.__func__(cls, **kwargs)
            else:
                super(base, cls).__init_subclass__(**kwargs)
            wrap_class(cls)
        base.__init_subclass__ = classmethod(init_subclass)

    def boundary(self, kind):
        """A step boundary (xm.mark_step, torch_xla.sync, ...): later calls belong to the next step."""
        self.step += 1
        self.boundaries[kind] = self.boundaries.get(kind, 0) + 1
        if self.graphs.active:
            self.graphs.on_boundary(kind, self._user_place(sys._getframe(1)))
        if self.program is not None:
            self.program.on_boundary(self._user_place(sys._getframe(1)))

    def on_sharding(self, tensor, mesh, partition_spec):
        """xs.mark_sharding: the script's own sharding of a tensor, for the step's program (--program)."""
        if self.program is not None:
            self.program.on_mark_sharding(tensor, mesh, partition_spec)

    def on_device(self, tensor):
        """A tensor the script moved to (or made on) the XLA device: the graph model starts with the first."""
        if not self.graphs.active:
            self.native_off()
        self.graphs.mark_device(tensor)

    def on_value_read(self, tensor, what, run):
        """The script reads a device tensor's values on the host without an aten call (printing it, .tolist(), ...):
        torch_xla runs its graph there. The formatting's own calls are no part of any graph."""
        graphs = self.graphs
        if not graphs.active or not graphs.on_device(tensor) or graphs.suspended:
            return run()
        graphs.value_read(tensor, what, self._user_place(sys._getframe(1)))
        graphs.suspended += 1
        try:
            return run()
        finally:
            graphs.suspended -= 1

    def _user_place(self, frame):
        """(file, line) of the innermost frame in the user's own files, or ("", 0)."""
        while frame is not None:
            info = self._code_cache.get(frame.f_code) or self._code_info(frame.f_code)
            if info[0] == 2:
                return (info[2], frame.f_lineno)
            frame = frame.f_back
        return ("", 0)

    def note_internal_error(self, func, exc):
        msg = "%s: %s: %s" % (getattr(func, "__name__", str(func)), type(exc).__name__, exc)
        self.internal_errors[msg] = self.internal_errors.get(msg, 0) + 1

    # -- output ---------------------------------------------------------------------------------------
    def calls_json(self):
        out = []
        for key in self.order:
            op, overload, args, outs, file, line, module_path, phase, lib_loc, forward = key
            c = {
                "op": op,
                "overload": overload,
                "args": [{"name": n, "value": _value_json(v)} for n, v in args],
                "outputs": [_value_json(v) for v in outs],
                "loc": {"file": file, "line": line},
                "module_path": module_path,
                "phase": phase,
                "count": self.calls[key][1],
                "step": self.calls[key][2],
            }
            if lib_loc is not None:
                c["lib_loc"] = {"file": lib_loc[0], "line": lib_loc[1]}
            if forward is not None:
                f_op, f_loc, f_lib_loc, f_module_path = forward
                f = {"op": f_op, "loc": {"file": f_loc[0], "line": f_loc[1]}}
                if f_lib_loc is not None:
                    f["lib_loc"] = {"file": f_lib_loc[0], "line": f_lib_loc[1]}
                f["module_path"] = f_module_path
                c["forward"] = f
            out.append(c)
        return out


def _requires_grad(args, kwargs):
    """Whether a tensor among the arguments requires grad: only then does autograd give the outputs a node."""
    for a in (list(args) + list(kwargs.values())) if kwargs else args:
        if isinstance(a, _TENSOR):
            if a.requires_grad:
                return True
        elif isinstance(a, (list, tuple)):
            for x in a:
                if isinstance(x, _TENSOR) and x.requires_grad:
                    return True
    return False


def _is_dtype_mismatch(exc):
    msg = str(exc)
    return msg.startswith("Found dtype") or "expected scalar type" in msg or "must have the same dtype" in msg


def _promoted(args, kwargs):
    """args and kwargs with their tensors cast to their common (promoted) dtype; None when nothing changes."""
    tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
    if len(tensors) < 2 or len(set(t.dtype for t in tensors)) < 2:
        return None
    common = tensors[0].dtype
    for t in tensors[1:]:
        common = torch.promote_types(common, t.dtype)

    def cast(a):
        return a.to(common) if isinstance(a, torch.Tensor) and a.dtype != common else a
    return tuple(cast(a) for a in args), {k: cast(v) for k, v in kwargs.items()}


import torch.utils._python_dispatch as _python_dispatch  # noqa: E402

# PyTorch 1.13 keeps its stack of dispatch modes in Python: the one mode C++ calls is a helper that pops the top mode
# with a context manager on every call, which costs more than the recording itself. Where that is so, the capture
# installs its mode as the C++ mode directly (the "direct" protocol) and falls back to the stack as soon as the
# script enters a dispatch mode of its own. PyTorch 2.x keeps the stack in C++: the mode is entered as usual.
_SET_DISPATCH_MODE = getattr(torch._C, "_set_torch_dispatch_mode", None)
_DIRECT_PROTOCOL = _SET_DISPATCH_MODE is not None and hasattr(_python_dispatch, "_TorchDispatchStackMode")


class _CaptureMode(TorchDispatchMode):
    def __init__(self, recorder, promote_dtypes=False):
        super(_CaptureMode, self).__init__()
        self.recorder = recorder
        # With the XLA stand-in, an aten call whose CPU kernel rejects mixed dtypes that PyTorch/XLA's lowering
        # promotes (mse_loss_backward of a float output and an int64 target, as in Neuron's supported.py) runs
        # on the promoted tensors; the call is recorded as the script dispatched it. A callable: whether the
        # script is using an XLA stand-in.
        self.promote_dtypes = promote_dtypes or (lambda: False)
        self._direct = False
        self._stacked = False
        self._orig_push_mode = None
        self.fake = False  # the script runs on fake tensors (run_script: --fake): no fast path

    # -- entering and leaving -------------------------------------------------------------------------
    def start(self):
        if _DIRECT_PROTOCOL:
            self._direct = True
            _SET_DISPATCH_MODE(self)
            self._orig_push_mode = orig_push = _python_dispatch._push_mode
            mode = self

            def push_mode(m):
                if mode._direct and m is not mode:
                    mode._to_stack()
                return orig_push(m)
            _python_dispatch._push_mode = push_mode
        else:
            self.__enter__()
            self._stacked = True
            self._orig_push_mode = orig_push = _python_dispatch._push_mode
            rec = self.recorder

            def push_mode(m, *args, **kwargs):
                rec.native_off()
                return orig_push(m, *args, **kwargs)
            _python_dispatch._push_mode = push_mode
        # The fast path (fastpath.cpp), where it is built for this PyTorch: it sits just above this mode and
        # counts the calls it has seen before; everything else comes on to this mode.
        # Not on fake tensors: the fast path's kernel sits above the Python key, where FakeTensorMode answers.
        native = capture_native.load() if not self.fake else None
        if native is not None:
            self.recorder.native = native
            self.recorder.sync_native()
            native.start(self.recorder.native_classify, self.recorder.native_record, _FORWARD_KEY, self)

    def _to_stack(self):
        """The script enters a dispatch mode of its own (1.13): from now on the capture's mode is the bottom of
        PyTorch's mode stack, below the script's."""
        self._direct = False
        self.recorder.native_off()
        _SET_DISPATCH_MODE(None)
        self._orig_push_mode(self)
        self._stacked = True

    def stop(self):
        if self.recorder.native is not None:
            self.recorder.native.stop()
            self.recorder.merge_native()
        if self._direct:
            self._direct = False
            _SET_DISPATCH_MODE(None)
        elif self._stacked:
            self._stacked = False
            if _DIRECT_PROTOCOL:
                # modes the script left entered are above the capture's own
                while _python_dispatch._len_torch_dispatch_stack() > 0 and _python_dispatch._pop_mode() is not self:
                    pass
            else:
                self.__exit__(None, None, None)
        if self._orig_push_mode is not None:
            _python_dispatch._push_mode = self._orig_push_mode
            self._orig_push_mode = None

    # -- every call -----------------------------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        direct = self._direct
        if direct:
            _SET_DISPATCH_MODE(None)
        try:
            rec = self.recorder
            info = rec._ops.get(id(func))
            if info is None:
                info = rec.op_info(func)
            try:
                out = info.call(*args, **kwargs) if kwargs else info.call(*args)
            except RuntimeError as e:
                p = _promoted(args, kwargs or {}) if _is_dtype_mismatch(e) and self.promote_dtypes() else None
                if p is None:
                    raise
                out = info.call(*p[0], **p[1])
            if self.fake and _fake_tensors_own_call(info):
                return out
            try:
                rec.record(func, info, args, kwargs, out)
            except Exception as e:  # noqa: BLE001  (never break the user's script because of the recorder)
                rec.note_internal_error(func, e)
            return out
        finally:
            if direct:
                _SET_DISPATCH_MODE(self)


# ---------------------------------------------------------------------------------------------------
# Running the script
# ---------------------------------------------------------------------------------------------------

def _dumps_trace(doc):
    """JSON text with one call per line: small, and diffs line by line."""
    lines = ["{"]
    items = list(doc.items())
    for k, (key, value) in enumerate(items):
        sep = "," if k + 1 < len(items) else ""
        if key == "calls" and value:
            lines.append(" %s: [" % json.dumps(key))
            for j, call in enumerate(value):
                lines.append("  " + json.dumps(call, separators=(",", ":"), allow_nan=False) +
                             ("," if j + 1 < len(value) else ""))
            lines.append(" ]" + sep)
        else:
            lines.append(" %s: %s%s" % (json.dumps(key), json.dumps(value, allow_nan=False), sep))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _write_atomic(path, doc):
    path = os.path.abspath(path)
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(_dumps_trace(doc))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _error_location(tb):
    """Innermost frame of the traceback in the user's own files (not torch, the shim, the standard library or
    site-packages); the innermost frame outside torch and the shim when there is none."""
    loc = fallback = None
    for fs in traceback.extract_tb(tb):
        ap = _abs(fs.filename) if fs.filename and not fs.filename.startswith("<") else fs.filename
        if ap and not ap.startswith(_TORCH_DIR) and not ap.startswith(_SHIM_DIR) and ap != _RUNPY_FILE:
            here = {"file": _rel_path(fs.filename), "line": fs.lineno or 0}
            fallback = here
            if _library_path(ap) is None:
                loc = here
    return loc or fallback


class _Terminated(BaseException):
    """Raised in the script by SIGTERM, so that the trace recorded so far is still written."""


def _on_sigterm(signum, frame):
    raise _Terminated()


def _install_sigterm():
    try:
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):  # not the main thread, or no such signal
        pass


def _ignore_signals():
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (ValueError, OSError):
            pass


_PYTHON_DISPATCH_FILE = os.path.join(_TORCH_DIR, "utils", "_python_dispatch.py")
_OPS_FILE = os.path.join(_TORCH_DIR, "_ops.py")


def _is_shim_frame(filename):
    if not filename:
        return False
    if filename.startswith("<"):
        return filename.startswith("<frozen runpy")
    ap = _abs(filename)
    return ap.startswith(_SHIM_DIR) or ap == _RUNPY_FILE


def _script_frames(stack):
    """The frames a plain run of the script would show: without the shim's and runpy's frames, and without the
    dispatch-mode frames (torch/utils/_python_dispatch.py and the torch/_ops.py calls below it) that exist only
    because the capture records the aten calls."""
    out = []
    in_dispatch = False
    for fs in stack:
        if _is_shim_frame(fs.filename):
            continue
        ap = _abs(fs.filename) if fs.filename and not fs.filename.startswith("<") else fs.filename
        if ap == _PYTHON_DISPATCH_FILE:
            in_dispatch = True
            continue
        if in_dispatch and ap in (_OPS_FILE, _PYTHON_DISPATCH_FILE):
            continue
        in_dispatch = False
        out.append(fs)
    return out


def _drop_shim_frames(te, seen):
    """Removes the capture's own frames from a TracebackException and the exceptions chained to it."""
    if te is None or id(te) in seen:
        return
    seen.add(id(te))
    te.stack = traceback.StackSummary.from_list(_script_frames(te.stack))
    _drop_shim_frames(getattr(te, "__cause__", None), seen)
    _drop_shim_frames(getattr(te, "__context__", None), seen)
    for sub in getattr(te, "exceptions", None) or ():
        _drop_shim_frames(sub, seen)


def _print_script_traceback(exc_info, script_abs):
    """Prints the traceback as Python would for the script alone: no frame of the shim (stand-ins included)
    or of runpy."""
    etype, value, tb = exc_info
    te = traceback.TracebackException(etype, value, tb)
    _drop_shim_frames(te, set())
    sys.stderr.write("".join(te.format()))
    sys.stderr.flush()


def _fake_mode():
    """PyTorch's FakeTensorMode (2.x), or a one-line reason why there is none."""
    try:
        major = int(str(torch.__version__).split(".")[0])
    except ValueError:
        major = 0
    if major < 2:
        return None, ("--fake needs PyTorch 2.x (its FakeTensorMode); %s has PyTorch %s: give a Python with PyTorch "
                      "2.x (scripts/test makes one: $OPPROBE_VENV_ROOT/torch2/bin/python)" % (sys.executable,
                                                                                             torch.__version__))
    try:
        from torch._subclasses.fake_tensor import FakeTensorMode
    except Exception as e:  # noqa: BLE001
        return None, "--fake: PyTorch %s has no FakeTensorMode (%s)" % (torch.__version__, e)
    # Tensors the script makes from data it has (a numpy array, a Python list) become fake on their first use.
    return FakeTensorMode(allow_non_fake_inputs=True), None


_PARAMETER_NEW = getattr(getattr(torch.nn.Parameter, "__new__", None), "__code__", None)


def _fake_tensors_own_call(info):
    """A call only fake tensors make, which the script on real tensors does not: `prim::device` (a FakeTensor answers
    `.device` through dispatch) and the detach of nn.Parameter(fake) (a real tensor becomes a Parameter without any
    call). Left out of a --fake trace, so that it holds the calls of a real run."""
    if info.name.startswith("prim::"):
        return True
    if info.name != "aten::detach" or _PARAMETER_NEW is None:
        return False
    frame = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            return False
        if frame.f_code is _PARAMETER_NEW:
            return True
        frame = frame.f_back
    return False


def _needs_a_value(exc):
    """The op whose output a fake tensor cannot give (a value, or a size the data decides), or None."""
    name = type(exc).__name__
    if name in ("DataDependentOutputException", "DynamicOutputShapeException"):
        return str(getattr(exc, "func", None) or exc).split("(")[0]
    return None


def run_script(script, script_args, output, quiet=False, progress=None, fake=False, program=False,
               torchax_standin=False):
    """Runs the script under the capture and writes the trace. `progress`: None, "tty" or "lines" (the counter of
    calls captured so far on stderr, progress.py). `fake`: on PyTorch's fake tensors (see runner.py).
    `program`: also record the first training step's data flow (program.py). `torchax_standin`: the
    torchax stand-in even where torchax is installed (`analyze --lowering torchax`: the script runs to its end on the
    CPU, and torchax's own table lowers each call afterwards)."""
    fake_mode = None
    if fake:
        fake_mode, why = _fake_mode()
        if fake_mode is None:
            sys.stderr.write("opprobe capture: %s\n" % why)
            return 2
    output = os.path.abspath(output)  # before the script can chdir
    out_dir = os.path.dirname(output)
    if not os.path.isdir(out_dir) or not os.access(out_dir, os.W_OK):
        sys.stderr.write("opprobe capture: cannot write the trace %s: folder %s does not exist or is not writable\n"
                         % (output, out_dir))
        return 2
    recorder = Recorder()
    if program:
        recorder.program = capture_program.StepProgram()
        recorder.native_off()  # the fast path counts calls without their tensors
    hooks = []
    mod = torch.nn.modules.module
    if hasattr(mod, "register_module_forward_pre_hook"):
        hooks.append(mod.register_module_forward_pre_hook(recorder.forward_pre_hook))
    if hasattr(mod, "register_module_forward_hook"):
        try:
            # always_call (PyTorch 2.1+): the hook runs after a forward that raised too, so a script that catches a
            # model's exception and goes on to another model does not see its calls under the first one's path.
            hooks.append(mod.register_module_forward_hook(recorder.forward_hook, always_call=True))
        except TypeError:  # older PyTorch: the next forward drops the entries of calls that ended (forward_pre_hook)
            hooks.append(mod.register_module_forward_hook(recorder.forward_hook))
            recorder.stale_check = True
    recorder.wrap_autograd()
    recorder.wrap_optimizers()
    from . import standins as capture_standins  # noqa: E402  (standins.py)
    from . import progress as capture_progress  # noqa: E402  (progress.py)
    capture_standins.install(recorder.boundary, recorder.on_device, recorder.on_value_read,
                             sharding_hook=recorder.on_sharding, torchax_standin=torchax_standin)
    from . import real_torchax as capture_torchax  # noqa: E402  (real_torchax.py: the real torchax, where installed)
    if fake_mode is None and not torchax_standin:
        capture_torchax.install(recorder, recorder.boundary, lambda: _CaptureMode(recorder))

    script_abs = os.path.abspath(script)
    sys.argv = [script] + list(script_args)
    sys.path[0] = os.path.dirname(script_abs)

    exit_status = 0
    error = None
    _install_sigterm()
    mode = _CaptureMode(recorder, promote_dtypes=lambda: any(
        r in capture_standins.used() for r in ("torch_xla", "torchax", "torch_xla2")))
    mode.fake = fake_mode is not None
    counter = capture_progress.Counter(recorder, progress) if progress else None
    try:
        if counter is not None:
            counter.start()
        if fake_mode is not None:
            fake_mode.__enter__()  # below the capture's mode: the capture records each call, fake tensors answer it
        mode.start()
        try:
            runpy.run_path(script_abs, run_name="__main__")
        finally:
            mode.stop()
            if fake_mode is not None:
                fake_mode.__exit__(None, None, None)
            if counter is not None:
                counter.stop()
    except SystemExit as e:
        code = e.code
        if code is None:
            exit_status = 0
        elif isinstance(code, int):
            exit_status = code
        else:
            sys.stderr.write("%s\n" % (code,))
            exit_status = 1
        if exit_status != 0:
            error = {"type": "SystemExit", "message": "sys.exit(%r)" % (code,)}
    except KeyboardInterrupt:
        exit_status = 130
        error = {"type": "KeyboardInterrupt", "message": "interrupted"}
    except _Terminated:
        exit_status = 128 + signal.SIGTERM
        error = {"type": "SIGTERM", "message": "terminated by SIGTERM"}
    except BaseException as e:  # noqa: BLE001  (the script's own error: report it, keep the trace)
        exit_status = 1
        needs = _needs_a_value(e) if fake_mode is not None else None
        if needs is None:
            _print_script_traceback(sys.exc_info(), script_abs)
            error = {"type": type(e).__name__, "message": str(e)}
        else:  # one line, no traceback: the script needs a value fake tensors do not have
            error = {"type": "NeedsAValue", "message": "--fake: the script needs a tensor's value here (%s: .item(), a "
                     "Python branch on a tensor, or a size the data decides); fake tensors have none" % needs}
            loc = _error_location(sys.exc_info()[2])
            if loc:
                error["loc"] = loc
        loc = _error_location(sys.exc_info()[2])
        if loc:
            error["loc"] = loc
    finally:
        for h in hooks:
            h.remove()
        # A second Ctrl-C or SIGTERM must not cut the trace short while it is written.
        _ignore_signals()
    if error is not None:
        error["exit_status"] = exit_status

    doc = {
        "format": TRACE_FORMAT,
        "version": TRACE_VERSION,
        "torch_version": str(torch.__version__),
        "python_version": "%d.%d.%d" % sys.version_info[:3],
        "script": script,
        "argv": [script] + list(script_args),
        "status": "ok" if error is None else "error",
        "exit_status": exit_status,
        "total_calls": recorder.total,
        "steps": recorder.step,
        "calls": recorder.calls_json(),
    }
    if fake_mode is not None:
        doc["fake"] = True
    standins_used = capture_standins.used() + capture_torchax.aliased()
    if standins_used:
        doc["standins"] = standins_used
    if recorder.boundaries:
        doc["step_boundaries"] = dict(sorted(recorder.boundaries.items()))
    graphs = recorder.graphs.to_json()
    if graphs is not None:
        doc["graphs"] = graphs
    if recorder.program is not None:
        step = recorder.program.to_json()
        doc["program"] = step if step is not None else {"scope": "none: no call ran inside a module's forward or "
                                                                 "differentiated a tensor"}
    if error is not None:
        doc["error"] = error
    if recorder.skipped:
        # (named skipped_ops by opprobe before: the loader lists that older key's non-aten names as calls)
        doc["host_only_ops"] = dict(sorted(recorder.skipped.items()))
    if recorder.internal_errors:
        doc["recorder_errors"] = [{"message": m, "count": c} for m, c in sorted(recorder.internal_errors.items())]
    try:
        _write_atomic(output, doc)
    except OSError as e:
        sys.stderr.write("opprobe capture: cannot write %s: %s\n" % (output, e))
        return exit_status if exit_status != 0 else 2
    if capture_native.mode() == "require":
        sys.stderr.write("opprobe capture: the fast path counted %d of the %d calls\n"
                         % (recorder.native_counted, recorder.total))
    if quiet:
        pass
    elif error is not None:
        sys.stderr.write("opprobe capture: %s failed (%s: %s); the trace %s holds the %d calls recorded before "
                         "that (%d distinct)\n" % (script, error["type"], error["message"], output, recorder.total,
                                                   len(recorder.order)))
    elif not quiet:
        sys.stderr.write("opprobe capture: recorded %d aten calls (%d distinct) from %s into %s\n" %
                         (recorder.total, len(recorder.order), script, output))
    sys.stdout.flush()
    return exit_status
