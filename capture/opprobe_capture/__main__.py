"""The one entry point of opprobe's capture package, run by path: `python .../opprobe_capture ARGS` (the folder).

    python .../opprobe_capture --output TRACE.json [options] -- SCRIPT.py ARGS...   the capture (runner.py)
    python .../opprobe_capture --build-fastpath | --where-fastpath                 the fast path (native.py)
    python .../opprobe_capture torch-xla-watch OUT.json SCRIPT.py ARGS...          host fallbacks (torch_xla_watch.py)
    python .../opprobe_capture torchax-lower [--hlo] [--platform P] TRACE OUT      torchax's lowering (torchax_lower.py)

Python puts the folder it runs first on sys.path; here that entry becomes the folder above the package, which holds
nothing but the package (capture/ in the source tree, share/opprobe/capture installed, opprobe/_capture in the Python
package), so the package's modules import as `opprobe_capture.NAME` only: none of them can shadow a module of the
script or of a library it imports. The capture then gives that entry to the script's folder (runner.py), as
`python script.py` has it; the package's modules, imported by then, keep working through the package.
Kept free of syntax newer than Python 3.6.
"""

import os
import sys


def _main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) in (os.path.dirname(os.path.abspath(__file__)), root):
        sys.path[0] = root
    else:
        sys.path.insert(0, root)
    if argv and argv[0] == "torch-xla-watch":
        from opprobe_capture import torch_xla_watch
        return torch_xla_watch.main(argv)
    if argv and argv[0] == "torchax-lower":
        from opprobe_capture import torchax_lower
        return torchax_lower.main(argv[1:])
    if argv and argv[0] in ("--build-fastpath", "--where-fastpath"):
        from opprobe_capture import native
        return native.main(["--" + argv[0][2:].split("-")[0]] + argv[1:])
    from opprobe_capture import runner
    return runner.main(argv)


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
