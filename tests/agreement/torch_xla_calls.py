"""Records PyTorch's OpInfo samples as the conformance suite does (tests/conformance/gen_samples.py, run unchanged) and
replays every recorded aten call on the real torch_xla's XLA device (its CPU PJRT client): the HLO torch_xla builds
for the call's outputs (`_get_xla_tensors_hlo`), the values it computes, and the aten ops it ran on the CPU instead
(its fallback counters).

Run with the torch_xla environment's Python (requirements/torch_xla.txt). Same options as gen_samples.py, plus
`--progress FILE`; the output is gen_samples.py's document with, per recorded call, `torch_xla`: {"hlo": text,
"results": [values], "fallback": [aten ops], "error": message}. scripts/agreement.py compares it with opprobe's
lowerings (docs/agreement.md).
"""

import json
import os
import sys

os.environ.setdefault("PJRT_DEVICE", "CPU")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))

import torch  # noqa: E402
import torch_xla  # noqa: E402
import torch_xla.debug.metrics as met  # noqa: E402

import gen_samples  # noqa: E402

DEVICE = torch_xla.device()


def to_xla(v):
    if isinstance(v, torch.Tensor):
        if v.layout != torch.strided or v.is_quantized:
            raise ValueError("a {} tensor cannot move to the XLA device".format(v.layout))
        return v.detach().clone().to(DEVICE)
    if isinstance(v, (list, tuple)):
        return type(v)(to_xla(x) for x in v)
    if isinstance(v, dict):
        return {k: to_xla(x) for k, x in v.items()}
    if isinstance(v, torch.device):
        return DEVICE if v.type == "cpu" else v
    return v


def values_of(out):
    """The call's results in gen_samples.py's order (tensors, tensors of a list, then other values; None left out)."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    values = []
    for o in outs:
        if isinstance(o, (tuple, list)) and all(isinstance(x, torch.Tensor) for x in o):
            values += [gen_samples.tensor_value(x.cpu()) for x in o]
        elif isinstance(o, torch.Tensor):
            values.append(gen_samples.tensor_value(o.cpu()))
        elif o is not None:
            values.append(gen_samples.scalar_value(o))
    return values


def tensors_of(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    flat = []
    for o in outs:
        if isinstance(o, (tuple, list)):
            flat += [x for x in o if isinstance(x, torch.Tensor)]
        elif isinstance(o, torch.Tensor):
            flat.append(o)
    return flat


def one_line(e):
    text = str(e).strip().splitlines()
    return "{}: {}".format(type(e).__name__, text[0][:300] if text else "")


class XlaReplay(gen_samples.Recorder):
    """gen_samples' recorder, plus each recorded call replayed on the XLA device with copies of its inputs."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        try:  # copies taken before the CPU call: in-place ops change their inputs
            xla_args, xla_kwargs, copy_error = to_xla(args), to_xla(kwargs), None
        except Exception as e:  # noqa: BLE001
            xla_args, xla_kwargs, copy_error = None, None, one_line(e)
        n = len(self.calls)
        out = super().__torch_dispatch__(func, types, args, kwargs)
        if len(self.calls) == n or "skip" in self.calls[-1]:
            return out
        rec = self.calls[-1]
        x = rec["torch_xla"] = {"fallback": []}
        if copy_error:
            x["error"] = copy_error
            return out
        try:
            torch_xla.sync()
            met.clear_counters()
            xla_out = func(*xla_args, **xla_kwargs)
            ts = [t for t in tensors_of(xla_out) if t.device.type == "xla"]
            x["hlo"] = torch_xla._XLAC._get_xla_tensors_hlo(ts) if ts else ""
            x["results"] = values_of(xla_out)
            x["fallback"] = sorted(met.executed_fallback_ops())
            torch_xla.sync()
        except Exception as e:  # noqa: BLE001 - torch_xla's refusal, recorded as it is
            x["error"] = one_line(e)
        return out


def main(argv):
    """gen_samples.py's main with XlaReplay as its recorder; `--progress FILE` (ours) appends one JSON line per OpInfo
    entry started and per sample recorded, so that a run torch_xla crashes keeps what it did (torch_xla_compare.record
    starts another for the entries left)."""
    progress = None
    if "--progress" in argv:
        i = argv.index("--progress")
        progress = open(argv[i + 1], "a")
        del argv[i:i + 2]
    gen_samples.Recorder = XlaReplay
    if progress:
        from torch.testing._internal.common_methods_invocations import op_db

        def write(obj):
            progress.write(json.dumps(obj, separators=(",", ":")) + "\n")
            progress.flush()

        write({"entries": [gen_samples.entry_name(op) for op in op_db], "torch_version": torch.__version__})
        run_sample = gen_samples.run_sample

        def logged_run_sample(op, sample, max_elements):
            write({"start": gen_samples.entry_name(op)})
            calls, error = run_sample(op, sample, max_elements)
            t = sample.input if isinstance(sample.input, torch.Tensor) else None
            write({"entry": gen_samples.entry_name(op), "calls": calls, "error": error,
                   "dtype": gen_samples.cr._dtype_name(t.dtype) if t is not None else ""})
            return calls, error

        gen_samples.run_sample = logged_run_sample
    sys.argv = argv
    gen_samples.main()


if __name__ == "__main__":
    main(list(sys.argv))
