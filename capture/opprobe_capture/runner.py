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
    from . import recorder as capture_recorder  # noqa: E402  (recorder.py; imports torch)
    from . import native as capture_native  # noqa: E402  (native.py)
    if capture_native.mode() == "require" and capture_native.load() is None:
        sys.stderr.write("opprobe capture: OPPROBE_CAPTURE_FASTPATH=require, but the fast path is not built for the "
                         "PyTorch of %s (build it: %s %s --build-fastpath)\n"
                         % (sys.executable, sys.executable, os.path.dirname(os.path.abspath(__file__))))
        return 2
    return capture_recorder.run_script(script, rest[1:], output, quiet=quiet, progress=progress, fake=fake,
                                      program=program, torchax_standin=torchax_standin)

