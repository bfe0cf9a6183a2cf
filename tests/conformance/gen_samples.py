#!/usr/bin/python3
"""Records PyTorch's OpInfo samples (torch.testing._internal op_db) as aten calls with real values.

For every OpInfo entry this runs up to --per-dtype samples in float32 and in one more dtype the
entry supports (the first of float64, int64/int32, complex64, bfloat16 it lists), eagerly on the
CPU under a TorchDispatchMode that records each aten call the sample dispatches: op, overload,
every schema argument by name (the capture shim's encoding, so the C++ trace parser reads it),
and the values of its tensor inputs (taken before the call, for in-place ops) and outputs.

Output: one JSON document (format "opprobe-conformance-samples") read by conformance_runner.

Usage: gen_samples.py -o samples.json [--per-dtype N] [--only NAME,...] [--max-elements N]
"""

import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # expecttest shim (op_db imports it)
sys.path.insert(0, os.path.join(HERE, "..", "..", "capture"))

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from opprobe_capture import encoding as cr  # noqa: E402  (the capture's argument encoding)

EXTRA_DTYPES = [torch.float64, torch.int64, torch.int32, torch.complex64, torch.bfloat16]

# aten ops whose results are random or uninitialized: only dtype and shape are compared.
NONDETERMINISTIC = {
    "aten::rand", "aten::rand_like", "aten::randn", "aten::randn_like", "aten::randint", "aten::randint_like",
    "aten::randperm", "aten::normal", "aten::normal_", "aten::uniform", "aten::uniform_", "aten::bernoulli",
    "aten::bernoulli_", "aten::native_dropout", "aten::multinomial", "aten::random_", "aten::exponential_",
    "aten::geometric_", "aten::log_normal_", "aten::cauchy_", "aten::empty", "aten::empty_like",
    "aten::empty_strided", "aten::empty_permuted", "aten::new_empty", "aten::new_empty_strided",
    "aten::rrelu_with_noise",
    "aten::_fused_dropout", "aten::poisson", "aten::_standard_gamma", "aten::binomial",
}

RANDOM_WITH_DROPOUT = {"aten::_scaled_dot_product_attention_forward", "aten::_scaled_dot_product_attention"}
# Outputs that PyTorch leaves partly uninitialized (at::empty): only dtype and shape are compared.
# _ctc_loss's log_alpha holds values only for the 2·target_length+1 states of each sample; mkldnn_rnn_layer's
# workspace is oneDNN's opaque buffer for its backward, whose bytes the lowering does not reproduce (zeros).
UNINITIALIZED_OUTPUTS = {"aten::_ctc_loss": [1], "aten::mkldnn_rnn_layer": [3]}


def tensor_value(t):
    """{"dtype", "shape", "data"} with NaN/inf as strings; complex interleaved (re, im)."""
    t = t.detach()
    d = {"dtype": cr._dtype_name(t.dtype), "shape": list(t.shape)}
    if t.is_sparse or t.layout != torch.strided or t.is_quantized:
        raise ValueError("non-strided tensor")
    flat = t.contiguous().reshape(-1)
    if t.is_complex():
        flat = torch.view_as_real(flat.resolve_conj()).reshape(-1).double()
    elif t.dtype == torch.bool:
        flat = flat.to(torch.int64)
    elif t.is_floating_point():
        flat = flat.double()
    data = []
    for x in flat.tolist():
        if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
            data.append("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))
        else:
            data.append(x)
    d["data"] = data
    return d


def scalar_value(v):
    if isinstance(v, bool):
        return {"scalar": int(v), "kind": "bool"}
    if isinstance(v, int):
        return {"scalar": v, "kind": "int"}
    if isinstance(v, float):
        return {"scalar": cr._float_value(v), "kind": "float"}
    if isinstance(v, complex):
        return {"scalar": [cr._float_value(v.real), cr._float_value(v.imag)], "kind": "complex"}
    return None


class TooLarge(Exception):
    pass


class Recorder(TorchDispatchMode):
    def __init__(self, max_elements):
        super().__init__()
        self.calls = []
        self.max_elements = max_elements
        self.ops = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        info = self.ops.get(func)
        if info is None:
            info = self.ops[func] = cr._OpInfo(func)
        if not info.record:
            return func(*args, **kwargs)
        # Schema-ordered argument values (the shim's rule: positional, then kwargs, then defaults).
        vals, npos, pos = [], len(args), 0
        for (name, declared, kwarg_only, has_default, default) in info.args:
            if not kwarg_only and pos < npos:
                v = args[pos]
                pos += 1
            elif name in kwargs:
                v = kwargs[name]
            elif has_default:
                v = default
            else:
                v = None
            vals.append((name, declared, v))
        inputs = []
        err = None
        try:
            total = 0
            for _, _, v in vals:
                ts = [v] if isinstance(v, torch.Tensor) else [x for x in v if isinstance(x, torch.Tensor)] \
                    if isinstance(v, (list, tuple)) else []
                for t in ts:
                    total += t.numel()
                    inputs.append(tensor_value(t))
            if total > self.max_elements:
                raise TooLarge()
        except Exception as e:  # noqa: BLE001
            err = "inputs not recordable: %s" % (type(e).__name__,)
        name = info.name
        rec = {
            "op": name,
            "overload": info.overload,
            # encoded before the call: in-place view ops (squeeze_, transpose_) change their input's shape
            "args": [{"name": n, "value": cr._value_json(cr._encode(v, d))} for n, d, v in vals],
            "count": 1,
        }
        out = func(*args, **kwargs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        enc_outs, results = [], []
        try:
            for o in outs:
                if isinstance(o, (tuple, list)) and all(isinstance(x, torch.Tensor) for x in o):
                    for x in o:
                        enc_outs.append(cr._value_json(("tensor",) + cr._tensor_meta(x)))
                        results.append(tensor_value(x))
                elif isinstance(o, torch.Tensor):
                    enc_outs.append(cr._value_json(("tensor",) + cr._tensor_meta(o)))
                    results.append(tensor_value(o))
                elif o is None:
                    enc_outs.append({"kind": "none"})
                else:
                    enc_outs.append(cr._value_json(cr._encode(o, "")))
                    sv = scalar_value(o)
                    if sv is None:
                        raise ValueError("unrecordable output")
                    results.append(sv)
        except Exception as e:  # noqa: BLE001
            err = err or "outputs not recordable: %s" % (type(e).__name__,)
        rec["outputs"] = enc_outs
        if err:
            rec["skip"] = err
        else:
            rec["inputs"] = inputs
            rec["results"] = results
        if name + "" in NONDETERMINISTIC:
            rec["random"] = True
        # Random only with dropout (scaled_dot_product_attention's dropout_p).
        if name in RANDOM_WITH_DROPOUT and any(n == "dropout_p" and isinstance(v, float) and v > 0 for n, _, v in vals):
            rec["random"] = True
        if name in UNINITIALIZED_OUTPUTS:
            rec["uninitialized_outputs"] = UNINITIALIZED_OUTPUTS[name]
        self.calls.append(rec)
        return out


def entry_name(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def pick_dtypes(op):
    try:
        supported = op.supported_dtypes("cpu")
    except Exception:  # noqa: BLE001
        supported = set()
    out = []
    if torch.float32 in supported:
        out.append(torch.float32)
    for dt in EXTRA_DTYPES:
        if dt in supported:
            out.append(dt)
            break
    if not out and supported:
        out.append(sorted(supported, key=str)[0])
    return out


def run_sample(op, sample, max_elements):
    rec = Recorder(max_elements)
    error = None
    try:
        with rec:
            op(sample.input, *sample.args, **sample.kwargs)
    except Exception as e:  # noqa: BLE001
        error = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "")
    return rec.calls, error


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--per-dtype", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--max-elements", type=int, default=20000)
    a = ap.parse_args()

    from torch.testing._internal.common_methods_invocations import op_db
    only = set(x for x in a.only.split(",") if x)
    torch.manual_seed(0)
    entries = []
    t0 = time.time()
    for op in op_db:
        name = entry_name(op)
        if only and name not in only and op.name not in only:
            continue
        e = {"name": name, "samples": []}
        dtypes = pick_dtypes(op)
        if not dtypes:
            e["skip"] = "no CPU dtypes"
        for dt in dtypes:
            torch.manual_seed(0)
            try:
                samples = op.sample_inputs("cpu", dt, requires_grad=False)
                taken = 0
                for s in samples:
                    if taken >= a.per_dtype:
                        break
                    calls, error = run_sample(op, s, a.max_elements)
                    taken += 1
                    e["samples"].append({"dtype": cr._dtype_name(dt), "calls": calls, "error": error})
            except Exception as ex:  # noqa: BLE001
                e["samples"].append({"dtype": cr._dtype_name(dt), "calls": [],
                                     "error": "sample_inputs: %s" % type(ex).__name__})
        entries.append(e)
    doc = {"format": "opprobe-conformance-samples", "version": 1, "torch_version": torch.__version__,
           "per_dtype": a.per_dtype, "seconds": round(time.time() - t0, 1), "entries": entries}
    tmp = a.output + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    os.replace(tmp, a.output)


if __name__ == "__main__":
    main()
