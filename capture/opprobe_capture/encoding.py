"""Encoding: the values of a call (arguments and outputs, tensors as dtype and shape) as the trace has them, the
cheap raw key each call is first looked up by, and the trace file itself (schemas/trace.schema.json, format
"opprobe-trace", version 1).

Values are encoded as hashable tuples while recording (so identical calls dedup cheaply) and turned into JSON objects
when the trace is written. Kept free of PyTorch-2.x-only APIs, as the rest of the package.
"""

import json
import math
import os
import tempfile

import torch

from .schema_types import declared_arguments

TRACE_FORMAT = "opprobe-trace"
TRACE_VERSION = 1

# Namespaces of ops that never reach a device (profiler ranges and similar bookkeeping): counted in the
# trace's `host_only_ops`, not recorded as calls, as is any call outside aten that takes and returns no tensor (a
# library's own queries and configuration: torchaudio::is_sox_available). Every other namespace (aten, torchvision,
# quantized, a user's torch.library namespace, ...) is recorded.
BOOKKEEPING_NAMESPACES = ("profiler",)

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




# ---------------------------------------------------------------------------------------------------
# Schema: declared argument types. `str(arg.type)` erases ScalarType/Layout/MemoryFormat to int, so
# the declared types are parsed from the schema text (schema_types.py, shared with analyzer/loaders/gen_op_schemas.py),
# `aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor`.
# ---------------------------------------------------------------------------------------------------

def _declared_types(schema):
    args = list(schema.arguments)
    types = [t for t, _name in declared_arguments(str(schema))]
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


def call_json(key, count, step):
    """The trace's record of one distinct call: its encoded key, how many times it ran, the step of its first run."""
    op, overload, args, outs, file, line, module_path, phase, lib_loc, forward = key
    c = {
        "op": op,
        "overload": overload,
        "args": [{"name": n, "value": _value_json(v)} for n, v in args],
        "outputs": [_value_json(v) for v in outs],
        "loc": {"file": file, "line": line},
        "module_path": module_path,
        "phase": phase,
        "count": count,
        "step": step,
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
    return c


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
