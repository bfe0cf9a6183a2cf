"""The capture's fast path (fastpath.cpp beside this file): building it for one PyTorch, and loading it.

The extension is compiled against the PyTorch of the Python that runs this file, into a cache folder named by that
PyTorch's version, its C++ ABI, the Python version and a hash of the source:
`${OPPROBE_CAPTURE_NATIVE_DIR:-${XDG_CACHE_HOME:-~/.cache}/opprobe/capture-native}/<that name>/`.

    python .../opprobe_capture --build-fastpath   # compiles it (needs a C++ compiler, ninja and PyTorch's headers)
    python .../opprobe_capture --where-fastpath   # prints the folder it is (or would be) in

The capture loads it when it is there and uses the Python recorder alone when it is not, or when
`OPPROBE_CAPTURE_FASTPATH=0` is set (the switch the tests use to compare traces both ways);
`OPPROBE_CAPTURE_FASTPATH=require` makes a capture without it an error (exit 2), and prints how many calls the
fast path counted. It never compiles during a capture. Kept free of syntax newer than Python 3.6.
"""

import hashlib
import importlib.machinery
import importlib.util
import os
import sys

_DIR = os.path.dirname(os.path.abspath(__file__))
_SOURCE = os.path.join(_DIR, "fastpath.cpp")
NAME = "opprobe_capture_fastpath"


def _cache_root():
    root = os.environ.get("OPPROBE_CAPTURE_NATIVE_DIR")
    if root:
        return root
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "opprobe", "capture-native")


def build_dir():
    """The folder of the extension for the PyTorch imported here; None when the source is not beside this file."""
    import torch
    try:
        with open(_SOURCE, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:16]
    except OSError:
        return None
    abi = int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", False)))
    name = "torch%s-abi%d-py%d%d-%s" % (torch.__version__.replace("+", "_"), abi, sys.version_info[0],
                                         sys.version_info[1], digest)
    return os.path.join(_cache_root(), name)


def mode():
    """OPPROBE_CAPTURE_FASTPATH: "0" (off), "require" or "1" (the default: used where built)."""
    return os.environ.get("OPPROBE_CAPTURE_FASTPATH", "1")


def load():
    """The extension module, or None: switched off, not built for this PyTorch, or not loadable."""
    if mode() == "0":
        return None
    if NAME in sys.modules:
        return sys.modules[NAME]
    try:
        d = build_dir()
    except Exception:  # noqa: BLE001  (no usable torch: the Python path)
        return None
    if d is None:
        return None
    path = os.path.join(d, NAME + ".so")
    if not os.path.isfile(path):
        return None
    try:
        loader = importlib.machinery.ExtensionFileLoader(NAME, path)
        spec = importlib.util.spec_from_file_location(NAME, path, loader=loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        sys.modules[NAME] = module
        return module
    except Exception:  # noqa: BLE001  (built for another PyTorch or broken: the Python path)
        return None


def build(verbose=False):
    """Compiles the extension into build_dir(); returns that folder."""
    from torch.utils import cpp_extension
    d = build_dir()
    if os.path.isfile(os.path.join(d, NAME + ".so")):
        return d  # the folder's name holds the source's hash and the PyTorch it is for
    os.makedirs(d, exist_ok=True)
    cpp_extension.load(name=NAME, sources=[_SOURCE], build_directory=d, extra_cflags=["-O2", "-g0"],
                       verbose=verbose, is_python_module=True)
    return d


def main(argv):
    if argv == ["--build"]:
        d = build()
        sys.stdout.write("opprobe capture fast path: %s\n" % os.path.join(d, NAME + ".so"))
        return 0
    if argv == ["--where"]:
        sys.stdout.write("%s\n" % build_dir())
        return 0
    sys.stderr.write("usage: python .../opprobe_capture --build-fastpath | --where-fastpath\n")
    return 2

