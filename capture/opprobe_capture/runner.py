"""The runner of opprobe's capture: runs a PyTorch script and records every operator call it dispatches.

Usage (normally through `opprobe capture -o trace.json -- python script.py args...`), with the package's folder
(`capture/opprobe_capture` in the source tree, PREFIX/share/opprobe/capture/opprobe_capture installed):

    python .../opprobe_capture --output trace.json -- script.py args...

The script runs as `__main__` (runpy) with `sys.argv = [script, args...]` and its directory first on
`sys.path`, under a TorchDispatchMode that sees every aten call: forward, backward (autograd runs the
backward ops through the dispatcher) and optimizer steps. Each call is recorded with its op and
overload, every schema argument by name (defaults filled in from the schema), its outputs, the
innermost source line outside torch, the nn.Module path and the phase. Identical calls are counted,
not stored twice. The trace format is documented by schemas/trace.schema.json.

Scripts written for PyTorch/XLA, torchax/torch_xla2 or CUDA run unmodified: where the package (or the GPU) is
missing, standins.py maps the device to the CPU and records the step boundaries (xm.mark_step,
torch_xla.sync, ...) so each call carries the step it belongs to. Calls of every op namespace are recorded
(torchvision::nms, quantized::linear_dynamic, a user's torch.library op) except bookkeeping ones (profiler::*).

A script that raises or calls sys.exit(n) still leaves the trace recorded so far, with the error in
the trace; the shim then exits with the script's status (1 for an exception). The trace file is
written atomically (temp file + rename). Works with PyTorch 1.13 and 2.x.

`--progress tty` redraws a counter of the calls captured so far on stderr (a terminal) while the script runs;
`--progress lines` prints it as a plain line every few seconds (progress.py).

`--fake` runs the script on PyTorch's fake tensors (FakeTensorMode, PyTorch 2.x): every call is recorded with its
shapes while nothing is allocated or computed, so a model of any size can be captured. A script that needs a value
(`.item()`, a Python branch on a tensor, an op whose output size depends on the data such as nonzero) stops there with
a one-line message naming its line; the trace holds the calls before it.

`--program` also records the data flow of the script's first training step (program.py): the trace's
`program` lists the step's calls with the values each reads and makes, and the step's inputs and outputs (parameters,
buffers, optimizer state, gradients, the batch), so that opprobe builds the step as one program (`analyze --fit`).

Where torchax is installed, a script written for it runs on the real torchax and its aten calls are recorded where
torchax answers them (real_torchax.py). `--torchax-standin` uses the torchax stand-in instead, so that the script
runs to its end on the CPU (`analyze --lowering torchax` then lowers every call with torchax's own op table).
"""

import os
import runpy
import signal
import sys

USAGE = ("usage: python .../opprobe_capture --output TRACE.json [--quiet] [--fake] [--program] [--torchax-standin] "
         "[--progress tty|lines] -- "
         "SCRIPT.py [ARGS...]")


def _usage_error(message):
    sys.stderr.write("opprobe capture: %s\n%s\n" % (message, USAGE))
    return 2


def main(argv):
    output = None
    quiet = False
    fake = False
    program = False
    torchax_standin = False
    progress = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            i += 1
            break
        if a in ("-h", "--help"):
            sys.stdout.write(__doc__)
            return 0
        if a in ("-o", "--output"):
            if i + 1 >= len(argv):
                return _usage_error("%s needs a file name" % a)
            output = argv[i + 1]
            i += 2
            continue
        if a.startswith("--output="):
            output = a[len("--output="):]
            i += 1
            continue
        if a == "--quiet":
            quiet = True
            i += 1
            continue
        if a == "--fake":
            fake = True
            i += 1
            continue
        if a == "--program":
            program = True
            i += 1
            continue
        if a == "--torchax-standin":
            torchax_standin = True
            i += 1
            continue
        if a == "--progress":
            if i + 1 >= len(argv) or argv[i + 1] not in ("tty", "lines"):
                return _usage_error("--progress needs tty or lines")
            progress = argv[i + 1]
            i += 2
            continue
        if a.startswith("-"):
            return _usage_error("unknown option %s" % a)
        break  # first non-option: the script
    rest = argv[i:]
    if not output:
        return _usage_error("--output is required")
    if not rest:
        return _usage_error("no script given")
    script = rest[0]
    if not os.path.isfile(script):
        sys.stderr.write("opprobe capture: script not found: %s\n" % script)
        return 2
    try:
        import torch  # noqa: F401
    except Exception as e:  # noqa: BLE001  (any import failure means: no usable torch)
        sys.stderr.write("opprobe capture: cannot import torch with the Python interpreter %s (%s); give one that "
                         "has PyTorch, e.g. /usr/bin/python3 on Debian\n" % (sys.executable, e))
        return 2
    from . import native as capture_native  # noqa: E402  (native.py)
    if capture_native.mode() == "require" and capture_native.load() is None:
        sys.stderr.write("opprobe capture: OPPROBE_CAPTURE_FASTPATH=require, but the fast path is not built for the "
                         "PyTorch of %s (build it: %s %s --build-fastpath)\n"
                         % (sys.executable, sys.executable, os.path.dirname(os.path.abspath(__file__))))
        return 2
    return run_script(script, rest[1:], output, quiet=quiet, progress=progress, fake=fake,
                                      program=program, torchax_standin=torchax_standin)


# ---------------------------------------------------------------------------------------------------
# Running the script (run_script imports torch and the modules that import it, once main has checked that it can)
# ---------------------------------------------------------------------------------------------------

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


def run_script(script, script_args, output, quiet=False, progress=None, fake=False, program=False,
               torchax_standin=False):
    """Runs the script under the capture and writes the trace. `progress`: None, "tty" or "lines" (the counter of
    calls captured so far on stderr, progress.py). `fake`: on PyTorch's fake tensors (see the module's text).
    `program`: also record the first training step's data flow (program.py). `torchax_standin`: the
    torchax stand-in even where torchax is installed (`analyze --lowering torchax`: the script runs to its end on the
    CPU, and torchax's own table lowers each call afterwards)."""
    import torch
    from . import native as capture_native  # the fast path, where it is built
    from . import program as capture_program  # the first step's data flow, for --fit
    from .call_sites import _error_location, _print_script_traceback
    from .encoding import TRACE_FORMAT, TRACE_VERSION, _write_atomic
    from .recorder import Recorder, _CaptureMode, _fake_mode, _needs_a_value
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
    from . import standins as capture_standins  # the torch_xla/torchax/CUDA stand-ins
    from . import progress as capture_progress  # the counter of calls so far
    capture_standins.install(recorder.boundary, recorder.on_device, recorder.on_value_read,
                             sharding_hook=recorder.on_sharding, torchax_standin=torchax_standin)
    from . import real_torchax as capture_torchax  # the real torchax, where installed
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

