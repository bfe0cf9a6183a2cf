#!/usr/bin/python3
"""Test-only tool: writes `.pt2` archives in the real torch 2.8+ PT2-archive layout (schema 8.x JSON)
from graphs captured with Debian's PyTorch 1.13, whose torch.export does not exist.

The aten graph comes from torch.fx.experimental.proxy_tensor.make_fx (the same post-autograd aten ops a
TorchDispatchMode capture sees); the ExportedProgram JSON (target, inputs with schema argument names and
trailing defaults omitted, outputs, tensor_values, signature, metadata stack_trace / nn_module_stack) and
the zip container (root folder, STORED entries, flag 0x0808 with data descriptors, `FB` extra field padding
every record to 64 bytes, optional zip64) are written here, following research/formats.md Part A and the
real files in ../shared/corpus/pt2 (executorch_linear.pt2).

Weights are written as empty `data/weights/weight_<i>` records (the PT2 layout for fake tensors) unless
--weights is given, so fixtures stay small.

Usage (from the repository root):
    /usr/bin/python3 tests/tools/write_pt2.py --model resnet18 --out tests/fixtures/pt2/resnet18.pt2
    /usr/bin/python3 tests/tools/write_pt2.py --all tests/fixtures/pt2      # regenerates every fixture
Models: resnet18, resnet50, vit_b_16 (torchvision), linear, mlp, defaults, two_programs (see MODELS).
"""
import argparse
import json
import os
import struct
import sys
import traceback
import zlib

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx

try:
    from torch.func import functional_call  # torch >= 2.0
except ImportError:  # torch 1.13
    from torch.nn.utils.stateless import functional_call

# ---------------------------------------------------------------------------------------------------
# Serialized enums (torch/_export/serde/schema.py numbering; formats.md A.7)
# ---------------------------------------------------------------------------------------------------
SCALAR_TYPES = {
    torch.uint8: 1, torch.int8: 2, torch.int16: 3, torch.int32: 4, torch.int64: 5, torch.float16: 6,
    torch.float32: 7, torch.float64: 8, torch.complex32: 9, torch.complex64: 10, torch.complex128: 11,
    torch.bool: 12, torch.bfloat16: 13,
}
LAYOUTS = {torch.sparse_coo: 1, torch.sparse_csr: 2, torch.strided: 7}
MEMORY_FORMATS = {torch.contiguous_format: 1, torch.channels_last: 2, torch.channels_last_3d: 3,
                  torch.preserve_format: 4}


# ---------------------------------------------------------------------------------------------------
# Tracing with module stack and stack traces
# ---------------------------------------------------------------------------------------------------
_TOOL_FILE = os.path.abspath(__file__)
_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(_TOOL_FILE))) + os.sep
_SKIP_FRAME_PARTS = ("/torch/fx/", "/torch/_subclasses/", "/torch/utils/_python_dispatch", "/torch/_ops.py",
                     "/torch/overrides.py", "/torch/_tensor.py", "/torch/nn/utils/stateless.py",
                     "/torch/_functorch/", "/torch/_prims", "/torch/_refs", "/torch/_decomp",
                     "/torch/nn/modules/module.py", "/torch/utils/_pytree.py", "/torch/_jit_internal.py",
                     "/torch/autograd/", "/torch/_C")


class _ModuleStack:
    def __init__(self, model):
        self.stack = []
        self.handles = []
        for name, mod in model.named_modules():
            key = "L__self__" + ("_" + name.replace(".", "_") if name else "")
            qual = type(mod).__module__ + "." + type(mod).__qualname__
            self.handles.append(mod.register_forward_pre_hook(self._pre(key, name, qual)))
            self.handles.append(mod.register_forward_hook(self._post()))

    def _pre(self, key, name, qual):
        def hook(mod, args):
            self.stack.append((key, name, qual))
        return hook

    def _post(self):
        def hook(mod, args, out):
            self.stack.pop()
        return hook

    def close(self):
        for h in self.handles:
            h.remove()


def _user_stack_trace():
    frames = traceback.extract_stack()
    kept, started = [], False
    for fr in frames:
        fn = os.path.abspath(fr.filename)
        if fn == _TOOL_FILE and fr.name == "_call_model":
            started = True  # frames below the tool's own call into the model
            continue
        if not started or fr.filename.startswith("<") or any(p in fn for p in _SKIP_FRAME_PARTS):
            continue
        if fn == _TOOL_FILE and fr.name in ("create_node", "_user_stack_trace"):
            continue
        if fn.startswith(_REPO_ROOT):  # repository files are recorded relative to the root (stable fixtures)
            fr = traceback.FrameSummary(os.path.relpath(fn, _REPO_ROOT), fr.lineno, fr.name, line=fr.line)
        kept.append(fr)
    return "".join(traceback.format_list(kept)).rstrip("\n")


def trace(model, inputs):
    """make_fx of the model's forward with parameters and buffers lifted to inputs."""
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    mstack = _ModuleStack(model)
    from torch.fx.experimental import proxy_tensor
    tracer_cls = proxy_tensor.PythonKeyTracer
    original = tracer_cls.create_node

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = original(self, kind, target, args, kwargs, name, type_expr)
        if kind == "call_function":
            node.meta["nn_module_stack_list"] = list(mstack.stack)
            node.meta["user_stack_trace"] = _user_stack_trace()
        return node

    def _call_model(p, b, *xs):
        return functional_call(model, {**p, **b}, tuple(xs))

    tracer_cls.create_node = create_node
    try:
        gm = make_fx(_call_model)(params, buffers, *inputs)
    finally:
        tracer_cls.create_node = original
        mstack.close()
    return gm, params, buffers


# ---------------------------------------------------------------------------------------------------
# ExportedProgram JSON (schema 8.x)
# ---------------------------------------------------------------------------------------------------
def _sym_ints(xs):
    return [{"as_int": int(x)} for x in xs]


def tensor_meta(t, requires_grad=False):
    return {"dtype": SCALAR_TYPES[t.dtype], "sizes": _sym_ints(t.shape), "requires_grad": bool(requires_grad),
            "device": {"type": "cpu", "index": None}, "strides": _sym_ints(t.stride()),
            "storage_offset": {"as_int": int(t.storage_offset())}, "layout": LAYOUTS.get(t.layout, 0)}


class Serializer:
    def __init__(self, gm, values, names):
        self.gm = gm
        self.values = values  # fx node -> runtime value
        self.names = names    # fx node -> serialized name
        self.tensor_values = {}

    def tensor_ref(self, node):
        name = self.names[node]
        if name not in self.tensor_values:
            self.tensor_values[name] = tensor_meta(self.values[node])
        return {"name": name}

    def argument(self, a, declared):
        base = declared.rstrip("?")
        if isinstance(a, torch.fx.Node):
            return {"as_tensor": self.tensor_ref(a)}
        if a is None:
            return {"as_none": True}
        if isinstance(a, bool):
            return {"as_bool": a}
        if isinstance(a, int):
            return {"as_int": a}
        if isinstance(a, float):
            if a != a or a in (float("inf"), float("-inf")):
                return {"as_float": "NaN" if a != a else ("Infinity" if a > 0 else "-Infinity")}
            return {"as_float": a}
        if isinstance(a, str):
            return {"as_string": a}
        if isinstance(a, torch.dtype):
            return {"as_scalar_type": SCALAR_TYPES[a]}
        if isinstance(a, torch.layout):
            return {"as_layout": LAYOUTS.get(a, 0)}
        if isinstance(a, torch.memory_format):
            return {"as_memory_format": MEMORY_FORMATS.get(a, 0)}
        if isinstance(a, torch.device):
            return {"as_device": {"type": a.type, "index": a.index}}
        if isinstance(a, (list, tuple)):
            items = list(a)
            if not items:  # empty lists are typed from the schema
                if base.startswith("Tensor"):
                    return {"as_tensors": []}
                if base.startswith("float"):
                    return {"as_floats": []}
                if base.startswith("bool"):
                    return {"as_bools": []}
                return {"as_ints": []}
            if all(isinstance(x, torch.fx.Node) for x in items):
                return {"as_tensors": [self.tensor_ref(x) for x in items]}
            if all(x is None or isinstance(x, torch.fx.Node) for x in items):
                return {"as_optional_tensors": [{"as_none": True} if x is None else {"as_tensor": self.tensor_ref(x)}
                                                for x in items]}
            if all(isinstance(x, bool) for x in items):
                return {"as_bools": items}
            if all(isinstance(x, int) and not isinstance(x, bool) for x in items):
                return {"as_ints": items}
            if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in items):
                return {"as_floats": [float(x) for x in items]}
            if all(isinstance(x, str) for x in items):
                return {"as_strings": items}
        raise TypeError("cannot serialize argument %r (%s)" % (a, declared))

    def node(self, node, getitems):
        schema = node.target._schema
        inputs = []
        for i, a in enumerate(node.args):
            sa = schema.arguments[i]
            inputs.append({"name": sa.name, "arg": self.argument(a, str(sa.type)), "kind": 1})
        by_name = {sa.name: sa for sa in schema.arguments}
        for k, a in node.kwargs.items():
            inputs.append({"name": k, "arg": self.argument(a, str(by_name[k].type)), "kind": 2})
        val = self.values[node]
        if isinstance(val, (tuple, list)) and len(schema.returns) > 1:
            outs = []
            users = getitems.get(node, {})
            for i, v in enumerate(val):
                if i in users:
                    outs.append({"as_tensor": self.tensor_ref(users[i])})
                else:
                    name = "%s_unused_%d" % (self.names[node], i)
                    self.tensor_values[name] = tensor_meta(v)
                    outs.append({"as_tensor": {"name": name}})
        elif isinstance(val, (tuple, list)):
            outs = [{"as_tensors": [self.tensor_ref(u) for _, u in sorted(getitems.get(node, {}).items())]}]
        elif isinstance(val, torch.Tensor):
            outs = [{"as_tensor": self.tensor_ref(node)}]
        else:
            outs = [{"as_none": True}]
        meta = {}
        if node.meta.get("user_stack_trace"):
            meta["stack_trace"] = node.meta["user_stack_trace"]
        if node.meta.get("nn_module_stack_list"):
            meta["nn_module_stack"] = ";".join("%s,%s,%s" % e for e in node.meta["nn_module_stack_list"])
        return {"target": "torch.ops.%s" % str(node.target).replace("::", "."), "inputs": inputs,
                "outputs": outs, "metadata": meta, "is_hop_single_tensor_return": None}


def program_json(model, inputs, input_names=None):
    gm, params, buffers = trace(model, inputs)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    n_p, n_b = len(params), len(buffers)
    flat = list(params.values()) + list(buffers.values()) + list(inputs)
    values = {}
    interp = torch.fx.Interpreter(gm)
    orig_run_node = interp.run_node

    def snapshot(v):
        # Metadata as of this node: later in-place ops (squeeze_, relu_) must not change what is recorded.
        if isinstance(v, torch.Tensor):
            return torch.empty_strided(tuple(v.shape), tuple(v.stride()), dtype=v.dtype, device="meta")
        if isinstance(v, (list, tuple)):
            return type(v)(snapshot(x) for x in v)
        return v

    def run_node(n):
        r = orig_run_node(n)
        values[n] = snapshot(r)
        return r

    interp.run_node = run_node
    with torch.no_grad():
        interp.run(*flat)

    names, specs = {}, []
    user_names = input_names or ["x" if len(inputs) == 1 else "x%d" % i for i in range(len(inputs))]
    for i, ph in enumerate(placeholders):
        if i < n_p:
            fqn = list(params)[i]
            names[ph] = "p_" + fqn.replace(".", "_")
            specs.append({"parameter": {"arg": {"name": names[ph]}, "parameter_name": fqn}})
        elif i < n_p + n_b:
            fqn = list(buffers)[i - n_p]
            names[ph] = "b_" + fqn.replace(".", "_")
            specs.append({"buffer": {"arg": {"name": names[ph]}, "buffer_name": fqn, "persistent": True}})
        else:
            names[ph] = user_names[i - n_p - n_b]
            specs.append({"user_input": {"arg": {"as_tensor": {"name": names[ph]}}}})
    getitems = {}
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target is __import__("operator").getitem:
            getitems.setdefault(n.args[0], {})[n.args[1]] = n
        if n not in names:
            names[n] = n.name
    ser = Serializer(gm, values, names)
    graph_inputs = [{"as_tensor": ser.tensor_ref(ph)} for ph in placeholders]
    for ph, spec in zip(placeholders, specs):
        if "parameter" in spec:
            ser.tensor_values[names[ph]]["requires_grad"] = True
    nodes = []
    for n in gm.graph.nodes:
        if n.op != "call_function" or not isinstance(n.target, torch._ops.OpOverload):
            continue
        nodes.append(ser.node(n, getitems))
    out_node = [n for n in gm.graph.nodes if n.op == "output"][0]
    outs = torch.fx.node.map_arg(out_node.args[0], lambda x: x)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    graph_outputs = [{"as_tensor": ser.tensor_ref(o)} for o in outs if isinstance(o, torch.fx.Node)]
    output_specs = [{"user_output": {"arg": a}} for a in graph_outputs]
    return {
        "graph_module": {
            "graph": {"inputs": graph_inputs, "outputs": graph_outputs, "nodes": nodes,
                      "tensor_values": ser.tensor_values, "sym_int_values": {}, "sym_bool_values": {},
                      "is_single_tensor_return": False, "custom_obj_values": {}, "sym_float_values": {}},
            "signature": {"input_specs": specs, "output_specs": output_specs},
            "module_call_graph": [{"fqn": "", "signature": None}],
            "metadata": {}, "treespec_namedtuple_fields": {}},
        "opset_version": {"aten": 10},
        "range_constraints": {},
        "schema_version": {"major": 8, "minor": 12},
        "verifiers": ["TRAINING"],
        "torch_version": "%s (opprobe tests/tools/write_pt2.py, make_fx)" % torch.__version__,
    }, params, buffers


# ---------------------------------------------------------------------------------------------------
# PT2 archive container (PyTorchStreamWriter layout; formats.md A.3)
# ---------------------------------------------------------------------------------------------------
class Pt2ZipWriter:
    ALIGN = 64

    def __init__(self, path, root, force_zip64=False):
        self.f = open(path, "wb")
        self.root = root
        self.central = []
        self.force_zip64 = force_zip64

    def write(self, name, data, zeros=0):
        """Writes one record; with zeros=N the record is N zero bytes written as a sparse hole."""
        full = (self.root + "/" + name).encode()
        offset = self.f.tell()
        size = zeros or len(data)
        zip64 = self.force_zip64 or size >= 0xFFFFFFFF or offset >= 0xFFFFFFFF
        base = offset + 30 + len(full) + 4
        pad = (-base) % self.ALIGN
        extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
        # Local header: sizes and CRC 0 (bit 3: they follow in the data descriptor), flag 0x0808.
        self.f.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 45 if zip64 else 0, 0x0808, 0, 0, 0, 0, 0, 0,
                                 len(full), len(extra)))
        self.f.write(full)
        self.f.write(extra)
        assert self.f.tell() % self.ALIGN == 0
        if zeros:
            self.f.seek(zeros, os.SEEK_CUR)
            crc, chunk, left = 0, bytes(64 << 20), zeros
            while left:
                n = min(left, len(chunk))
                crc = zlib.crc32(chunk[:n] if n < len(chunk) else chunk, crc)
                left -= n
            crc &= 0xFFFFFFFF
        else:
            self.f.write(data)
            crc = zlib.crc32(data) & 0xFFFFFFFF
        if zip64:
            self.f.write(struct.pack("<IIQQ", 0x08074B50, crc, size, size))
        else:
            self.f.write(struct.pack("<IIII", 0x08074B50, crc, size, size))
        self.central.append((full, crc, size, offset, zip64))

    def close(self):
        cd_start = self.f.tell()
        for full, crc, size, offset, zip64 in self.central:
            if zip64:
                extra = struct.pack("<HHQQQ", 1, 24, size, size, offset)
                s32, o32 = 0xFFFFFFFF, 0xFFFFFFFF
            else:
                extra, s32, o32 = b"", size, offset
            self.f.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45 if zip64 else 0, 45 if zip64 else 0,
                                     0x0808, 0, 0, 0, crc, s32, s32, len(full), len(extra), 0, 0, 0, 0, o32))
            self.f.write(full)
            self.f.write(extra)
        cd_end = self.f.tell()
        n = len(self.central)
        if self.force_zip64 or cd_end >= 0xFFFFFFFF or n >= 0xFFFF:
            self.f.write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, n, n, cd_end - cd_start, cd_start))
            self.f.write(struct.pack("<IIQI", 0x07064B50, 0, cd_end, 1))
            self.f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0))
        else:
            self.f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, cd_end - cd_start, cd_start, 0))
        self.f.close()


def write_pt2(path, programs, weights=False, force_zip64=False, big_weight=0):
    """programs: list of (model name, program json, params, buffers); big_weight: bytes of an extra
    all-zero weight record (sparse on disk) that makes a multi-gigabyte archive for memory tests."""
    root = os.path.splitext(os.path.basename(path))[0]
    w = Pt2ZipWriter(path, root, force_zip64)
    if big_weight:
        w.write("data/weights/weight_big", b"", zeros=big_weight)
    records = []
    for model_name, _prog, params, buffers in programs:
        config = {}
        for fqn, t in list(params.items()) + list(buffers.items()):
            rec = "weight_%d" % len(records)
            data = t.detach().contiguous().numpy().tobytes() if weights else b""
            records.append((rec, data))
            config[fqn] = {"path_name": rec, "is_param": fqn in params, "use_pickle": False,
                           "tensor_meta": tensor_meta(t, fqn in params)}
        w_cfg = json.dumps({"config": config}).encode()
        records.append(("__config__" + model_name, w_cfg))
    for rec, data in records:
        if rec.startswith("__config__"):
            w.write("data/weights/%s_weights_config.json" % rec[len("__config__"):], data)
        else:
            w.write("data/weights/" + rec, data)
    for model_name, prog, _, _ in programs:
        w.write("data/constants/%s_constants_config.json" % model_name, b'{"config": {}}')
        w.write("models/%s.json" % model_name, json.dumps(prog).encode())
    w.write("archive_format", b"pt2")
    w.write("archive_version", b"0")
    w.write(".data/version", b"6\n")
    w.write("byteorder", b"little")
    names = "".join(r for r, _ in records)
    w.write(".data/serialization_id", ("%020d%020d" % (zlib.crc32(names.encode()), len(records))).encode())
    w.close()


# ---------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------
class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.act = torch.nn.GELU()
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return torch.softmax(self.fc2(self.act(self.fc1(x))), dim=-1)


class Defaults(torch.nn.Module):
    """Ops whose trailing arguments are left at their schema defaults (so the file omits them)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x):
        y = torch.nn.functional.max_pool2d(self.conv(x), 2)
        return y.sum(dim=[2, 3]) + y.mean() + torch.clamp(y, min=0.0).sum()


def _torchvision(name):
    import torchvision
    return getattr(torchvision.models, name)()


MODELS = {
    "linear": (lambda: torch.nn.Linear(3, 3), lambda: [torch.randn(3)]),
    "mlp": (Mlp, lambda: [torch.randn(2, 8)]),
    "defaults": (Defaults, lambda: [torch.randn(1, 3, 8, 8)]),
    # as samples/scripts/resnet18_train.py
    "resnet18": (lambda: _torchvision("resnet18"), lambda: [torch.rand(2, 3, 64, 64)]),
    "resnet50": (lambda: _torchvision("resnet50"), lambda: [torch.randn(1, 3, 224, 224)]),
    "vit_b_16": (lambda: _torchvision("vit_b_16"), lambda: [torch.randn(1, 3, 224, 224)]),
}

# Fixtures checked in under tests/fixtures/pt2 (name -> models, one program each).
FIXTURES = {
    "linear.pt2": ["linear"],
    "mlp.pt2": ["mlp"],
    "defaults.pt2": ["defaults"],
    "two_programs.pt2": ["linear", "mlp"],
    "resnet18.pt2": ["resnet18"],
    "resnet50.pt2": ["resnet50"],
    "vit_b_16.pt2": ["vit_b_16"],
}


def build(models, train=True):
    progs = []
    for m in models:
        make_model, make_inputs = MODELS[m]
        torch.manual_seed(0)
        model = make_model()
        model.train(train)
        prog, params, buffers = program_json(model, make_inputs())
        progs.append((m if len(models) > 1 else "model", prog, params, buffers))
    return progs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", choices=sorted(MODELS), help="model (repeat for several programs)")
    ap.add_argument("--out", help="output .pt2 path")
    ap.add_argument("--all", metavar="DIR", help="write every fixture of FIXTURES into DIR")
    ap.add_argument("--eval", action="store_true", help="trace in eval mode (default: train mode, as the capture)")
    ap.add_argument("--weights", action="store_true", help="write the real weight bytes")
    ap.add_argument("--zip64", action="store_true", help="write zip64 records even when not needed")
    ap.add_argument("--json", help="also write the (first) program JSON here")
    ap.add_argument("--big-weight-gib", type=float, default=0,
                    help="add an all-zero weight record of this many GiB (sparse file; zip64 offsets past 4 GiB)")
    args = ap.parse_args()
    if args.all:
        for fname, models in FIXTURES.items():
            write_pt2(os.path.join(args.all, fname), build(models, not args.eval))
            print("wrote", os.path.join(args.all, fname))
        write_pt2(os.path.join(args.all, "linear_zip64.pt2"), build(["linear"], not args.eval), force_zip64=True)
        print("wrote", os.path.join(args.all, "linear_zip64.pt2"))
        return 0
    if not args.model or not args.out:
        ap.error("--model and --out (or --all DIR) are required")
    progs = build(args.model, not args.eval)
    write_pt2(args.out, progs, weights=args.weights, force_zip64=args.zip64,
              big_weight=int(args.big_weight_gib * (1 << 30)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(progs[0][1], f)
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
