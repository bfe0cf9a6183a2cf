"""Runs a script under the real torch_xla for `opprobe analyze --lowering torch_xla`, and writes which aten calls
torch_xla ran on the host CPU instead of the device, with their call sites.

    python .../opprobe_capture torch-xla-watch OUT.json script.py args...

The script runs unchanged as __main__ (runpy), with sys.argv as it would have. torch_xla counts every call it
hands to the CPU in a metrics counter named after the op (`aten::nonzero`; `aten::_local_scalar_dense` is a value
read on the host: `.item()`, printing a tensor, a Python branch on one). A dispatch mode reads the op's counter before
and after each call: a call that raised it ran on the CPU, and its place is the innermost frame of the user's own
files. OUT.json is written when the script ends (also when it raises or calls sys.exit):

    {"torch_xla": "2.9.0", "compiles": N,
     "fallbacks": [{"op": "aten::nonzero", "overload": "default", "file": "train.py", "line": 34, "count": 6}, ...]}

Started by opprobe (cli/torch_xla_run.cpp, through the capture package's __main__.py); kept free of syntax newer than
Python 3.8.
"""

import json
import os
import runpy
import sys
import threading


def _is_library(filename, here):
    if not filename or filename.startswith("<"):
        return True
    path = os.path.abspath(filename)
    return (path.startswith(here) or "site-packages" in path or "dist-packages" in path or
            path.startswith(sys.prefix + os.sep + "lib"))


def main(argv):
    if len(argv) < 3:
        sys.stderr.write("usage: python .../opprobe_capture torch-xla-watch OUT.json script.py [args...] (started by "
                         "opprobe)\n")
        return 64
    out_path, script = argv[1], argv[2]
    import torch  # noqa: F401 (PyTorch loaded before torch_xla, as a script has it)
    from torch.utils._python_dispatch import TorchDispatchMode
    import torch_xla
    import torch_xla.debug.metrics as metrics

    counter = torch_xla._XLAC._xla_counter_value
    here = os.path.dirname(os.path.abspath(__file__)) + os.sep  # the capture package's files are not the script's
    sites = {}  # (op, overload, file, line) -> calls
    lock = threading.Lock()

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func._schema.name
            before = counter(name) or 0
            out = func(*args, **(kwargs or {}))
            after = counter(name) or 0
            if after > before:
                frame = sys._getframe(1)
                while frame is not None and _is_library(frame.f_code.co_filename, here):
                    frame = frame.f_back
                where = (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("", 0)
                key = (name, func._overloadname, where[0], where[1])
                with lock:
                    sites[key] = sites.get(key, 0) + (after - before)
            return out

    def write():
        compiles = metrics.metric_data("CompileTime")
        doc = {
            "torch_xla": getattr(torch_xla, "__version__", ""),
            "compiles": compiles[0] if compiles else 0,
            "fallbacks": [{"op": k[0], "overload": k[1], "file": k[2], "line": k[3], "count": n}
                          for k, n in sorted(sites.items())],
        }
        tmp = out_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, out_path)

    sys.argv = argv[2:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # the script's folder, as `python script.py` has it
    try:
        with Watch():
            runpy.run_path(script, run_name="__main__")
    finally:
        write()
    return 0

