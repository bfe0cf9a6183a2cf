"""opprobe.analyze: record the aten calls of one call of a model (with the capture recorder that
`opprobe capture` runs), then analyze them with the opprobe binary and return its JSON report."""
import json
import os
import subprocess
import sys
import tempfile

from opprobe._locate import OpprobeError, capture_dir, find_binary


def _recorder_module():
    d = capture_dir()  # the folder holding the package opprobe_capture alone
    if d not in sys.path:
        sys.path.insert(0, d)
    from opprobe_capture import recorder  # noqa: E402  (capture/opprobe_capture/recorder.py, the one recorder)
    return recorder


def _own_code_objects():
    """Code objects of this module's functions (nested ones included)."""
    todo = [f.__code__ for f in globals().values() if callable(f) and hasattr(f, "__code__")]
    seen = []
    while todo:
        c = todo.pop()
        if c.co_filename != __file__ or c in seen:
            continue
        seen.append(c)
        todo.extend(k for k in c.co_consts if hasattr(k, "co_filename"))
    return seen


def _new_recorder(cr):
    recorder = cr.Recorder()
    # This package's frames are not the user's code: the recorder treats them like its own (internal,
    # no phase marker), so calls are attributed to the model's code or to the line that called analyze().
    # (What the recorder computes for its own dispatch method: internal, no phase marker.)
    internal = recorder._code_info(cr._CaptureMode.__torch_dispatch__.__code__)
    for code in _own_code_objects():
        recorder._code_cache[code] = internal
    return recorder


def _tensors(x):
    import torch
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for e in x:
            yield from _tensors(e)
    elif isinstance(x, dict):
        for e in x.values():
            yield from _tensors(e)
    elif hasattr(x, "to_tuple"):  # transformers' ModelOutput
        yield from _tensors(x.to_tuple())


def _default_loss(output):
    """The sum of every floating-point output that requires grad (so backward reaches every parameter)."""
    parts = [t.float().sum() for t in _tensors(output) if t.is_floating_point() and t.requires_grad]
    if not parts:
        raise OpprobeError("train=True: the model's output has no floating-point tensor that requires grad; "
                           "pass loss_fn")
    loss = parts[0]
    for p in parts[1:]:
        loss = loss + p
    return loss


def _call(fn, example_inputs):
    if isinstance(example_inputs, dict):
        return fn(**example_inputs)
    if isinstance(example_inputs, (tuple, list)):
        return fn(*example_inputs)
    return fn(example_inputs)


def _to_meta(x):
    import torch
    if isinstance(x, torch.Tensor):
        return x if x.is_meta else x.to("meta")
    if isinstance(x, dict):
        return dict((k, _to_meta(v)) for k, v in x.items())
    if isinstance(x, (tuple, list)):
        return type(x)(_to_meta(v) for v in x)
    return x


def _ignored(call, ignore_ops):
    op = call["op"]
    short = op.split("::", 1)[-1]
    names = {op, short, op + "." + call.get("overload", ""), short + "." + call.get("overload", "")}
    return any(i in names for i in ignore_ops)


def _model_name(fn):
    import torch
    if isinstance(fn, torch.nn.Module):
        return "opprobe.analyze(%s)" % type(fn).__name__
    return "opprobe.analyze(%s)" % (getattr(fn, "__name__", None) or type(fn).__name__)


def record(model_or_function, example_inputs, *, train=False, loss_fn=None, optimizer=None, fake=False,
           program=False):
    """Runs one step (forward; with train=True also loss, backward and optimizer.step()) under the capture
    recorder and returns the trace document (schemas/trace.schema.json) as a dict. fake: on PyTorch's fake tensors
    (2.x): nothing is computed, the model's own tensors are left as they are. program: also record the step's data
    flow (the trace's `program`, for analyze(fit=True))."""
    import torch
    cr = _recorder_module()
    from opprobe_capture import program as capture_program  # noqa: E402  (the step's data flow)
    from opprobe_capture.encoding import TRACE_FORMAT, TRACE_VERSION  # noqa: E402
    fake_mode = None
    if fake:
        fake_mode, why = cr._fake_mode()
        if fake_mode is None:
            raise OpprobeError(why.replace("--fake", "fake=True"), 2)
        # FakeTensorMode lets real tensors in, and an in-place call (an optimizer's update) then changes them for real.
        if isinstance(model_or_function, torch.nn.Module):
            for name, t in list(model_or_function.named_parameters()) + list(model_or_function.named_buffers()):
                if not t.is_meta and type(t).__name__ != "FakeTensor" and not isinstance(t, type(None)):
                    if getattr(t, "fake_mode", None) is None:
                        raise OpprobeError(
                            "fake=True: the model's %s is a real tensor, which the step would change; build the model "
                            "on the meta device (with torch.device('meta'): ...) or pass fake=False" % name, 2)
        # The inputs go where the model is (a model on the meta device computes on meta inputs).
        example_inputs = _to_meta(example_inputs)
    recorder = _new_recorder(cr)
    if program:
        recorder.program = capture_program.StepProgram()
        recorder.native_off()
    hooks = []
    mod = torch.nn.modules.module
    if hasattr(mod, "register_module_forward_pre_hook"):
        hooks.append(mod.register_module_forward_pre_hook(recorder.forward_pre_hook))
    if hasattr(mod, "register_module_forward_hook"):
        hooks.append(mod.register_module_forward_hook(recorder.forward_hook))
    saved = {n: getattr(torch.autograd, n) for n in ("backward", "grad") if hasattr(torch.autograd, n)}
    recorder.wrap_autograd()
    try:
        grad = torch.enable_grad() if train else torch.no_grad()
        if fake_mode is not None:
            fake_mode.__enter__()  # below the capture's mode, as the capture of a script enters it
        try:
            mode = cr._CaptureMode(recorder)
            mode.fake = fake_mode is not None  # the calls only fake tensors make are left out, as in a script's capture
            with grad, mode:
                output = _call(model_or_function, example_inputs)
                if train:
                    loss = loss_fn(output) if loss_fn is not None else _default_loss(output)
                    loss.backward()
                    if optimizer is not None:
                        optimizer.step()
                        if recorder.program is not None:
                            recorder.program.on_optimizer_step(optimizer, None)
                        optimizer.zero_grad()
        finally:
            if fake_mode is not None:
                fake_mode.__exit__(None, None, None)
    finally:
        for h in hooks:
            h.remove()
        for n, f in saved.items():
            setattr(torch.autograd, n, f)
    name = _model_name(model_or_function)
    doc = {
        "format": TRACE_FORMAT,
        "version": TRACE_VERSION,
        "torch_version": str(torch.__version__),
        "python_version": "%d.%d.%d" % sys.version_info[:3],
        "script": name,
        "argv": [name],
        "status": "ok",
        "exit_status": 0,
        "total_calls": recorder.total,
        "calls": recorder.calls_json(),
    }
    if fake_mode is not None:
        doc["fake"] = True
    if recorder.program is not None:
        step = recorder.program.to_json()
        doc["program"] = step if step is not None else {"scope": "none: no call ran inside a module's forward"}
    return doc


def analyze(model_or_function, example_inputs, *, backend="interp", train=False, loss_fn=None, optimizer=None,
            verbosity=2, ignore_ops=(), args=(), trace_path=None, fake=False, fit=False, suggest=False):
    """Analyzes one call of `model_or_function` on `example_inputs` (a tuple of positional arguments, a dict
    of keyword arguments, or one tensor) and returns opprobe's JSON report (schemas/report.schema.json) as
    a dict: `support_percentage`, `supported_operators`, `unsupported_operators` (the keys
    torch_neuronx.analyze returns) and the rest of opprobe's report.

    backend: an `opprobe analyze --backend` spec (`interp`, `rules:neuron-trn1`, `tpu:v5e`, `gpu:h100`, `cmd:...`,
      `pjrt:...`), or a list of them: several targets in one report (the first at the top level, every one in
      `report["targets"]`).
    train: also run the loss (`loss_fn(output)`, default: the sum of the floating-point outputs), its
      backward and, when `optimizer` is given, `optimizer.step()` and `zero_grad()`; without it the call
      runs under torch.no_grad(). The model is left in the mode (train/eval) it is in.
    verbosity: the report's verbosity (2 aten ops, 1 adds HLO instructions, 0 per-instruction detail).
    ignore_ops: aten ops left out of the analysis (`aten::mul`, `mul` or `mul.Tensor`).
    fake: run the step on PyTorch's fake tensors (2.x): shapes only, nothing computed (the model's weights may be real
      or fake). fit: also build the whole step as one program and compile it for the backend (`analyze --fit`):
      report["program"] says whether it fits one device's memory. suggest: try the known rewrites of every
      unsupported call on the backend (`analyze --suggest`): each unsupported entry's "suggestions" and
      report["what_if_support_percentage"] (docs/suggest.md).
    args: further `opprobe analyze` options (e.g. ["--no-cache"]). trace_path: keep the recorded trace there.
    Raises OpprobeError when the binary is missing or exits with 2 (bad input) or 3 (backend unusable).
    """
    binary = find_binary()
    doc = record(model_or_function, example_inputs, train=train, loss_fn=loss_fn, optimizer=optimizer, fake=fake,
                 program=fit)
    if ignore_ops:
        ignore = set(ignore_ops)
        kept = [c for c in doc["calls"] if not _ignored(c, ignore)]
        doc["total_calls"] -= sum(c["count"] for c in doc["calls"] if _ignored(c, ignore))
        doc["calls"] = kept
    with tempfile.TemporaryDirectory(prefix="opprobe-py-") as tmp:
        trace = trace_path or os.path.join(tmp, "trace.json")
        with open(trace, "w") as f:
            json.dump(doc, f)
        report = os.path.join(tmp, "report.json")
        backends = [backend] if isinstance(backend, str) else list(backend)
        cmd = [binary, "analyze", trace] + [x for b in backends for x in ("--backend", b)] + [
            "--verbosity", str(verbosity), "-o", report, "-q", "--no-progress"] + (["--fit"] if fit else []) + (
            ["--suggest"] if suggest else []) + list(args)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        if p.returncode not in (0, 1) or not os.path.isfile(report):
            msg = (p.stderr.strip() or p.stdout.strip() or "no output").splitlines()[-1]
            raise OpprobeError("opprobe analyze exited with %d: %s" % (p.returncode, msg), p.returncode)
        with open(report) as f:
            return json.load(f)
