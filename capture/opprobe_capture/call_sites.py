"""Call sites: where a call was made. The innermost frame of the user's own files (relative to the working directory
the capture started in), the innermost library frame inside it (relative to its library root: site-packages, the
standard library), torch's and the capture's own frames skipped, and the nn.Module path of the module whose forward is
running (module hooks). Each code object is classified once (CallSites._code_info), which also says which phase a
frame of torch's autograd or optimizers marks (phases.py).
"""

import os
import runpy
import sys
import sysconfig
import threading
import traceback

import torch

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_SHIM_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep  # the capture package's own files
_AUTOGRAD_DIR = _TORCH_DIR + "autograd" + os.sep
_OPTIM_DIR = _TORCH_DIR + "optim" + os.sep
_RUNPY_FILE = os.path.abspath(runpy.__file__) if getattr(runpy, "__file__", None) else "<runpy>"


def _library_roots():
    """Folders whose files are libraries, not the user's own code: the standard library and site-packages."""
    roots = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            p = sysconfig.get_paths().get(key)
        except Exception:  # noqa: BLE001
            p = None
        if p:
            roots.add(os.path.abspath(p))
    for p in sys.path:
        if p and os.path.basename(p.rstrip(os.sep)) in ("site-packages", "dist-packages"):
            roots.add(os.path.abspath(p))
    # Longest first, so a path is made relative to its innermost root.
    return sorted((r.rstrip(os.sep) + os.sep for r in roots), key=len, reverse=True)


_LIBRARY_ROOTS = _library_roots()


def _library_path(ap):
    """The path of a library file relative to its library root (`torchvision/models/resnet.py`), else None."""
    if not ap or ap.startswith("<"):
        return None
    for root in _LIBRARY_ROOTS:
        if ap.startswith(root):
            return ap[len(root):]
    if os.sep + "site-packages" + os.sep in ap or os.sep + "dist-packages" + os.sep in ap:
        cut = ap.rfind("-packages" + os.sep)
        return ap[cut + len("-packages" + os.sep):]
    return None


# The working directory the capture started in (the script may chdir): source files below it are recorded
# relative to it.
_START_CWD = os.getcwd()


def _abs(path):
    return os.path.normpath(os.path.join(_START_CWD, path))


def _rel_path(path):
    """Source file as recorded: relative to the starting working directory when below it, else absolute."""
    if not path or path.startswith("<"):
        return path
    ap = _abs(path)
    cwd = _START_CWD.rstrip(os.sep) + os.sep
    return ap[len(cwd):] if ap.startswith(cwd) else ap


class CallSites(object):
    """The Recorder's call-site half: code classification, the user's place of a frame, and module paths (the state,
    _code_cache, _module_stack, _module_frames, _module_names, stale_check, _main_thread, program, is the
    Recorder's)."""

    # -- where: source line, phase ------------------------------------------------------------------
    def _code_info(self, code):
        """(kind, phase marker, recorded file name, library-relative file) of a code object, computed once per
        code object. kind: 0 torch or the shim (internal), 1 a library (site-packages, stdlib), 2 the user's."""
        f = code.co_filename
        ap = _abs(f) if f and not f.startswith("<") else f
        internal = bool(ap) and (ap.startswith(_TORCH_DIR) or ap.startswith(_SHIM_DIR) or
                                 f.startswith("<frozen") or ap == _RUNPY_FILE)
        marker = None
        if internal:
            if ap.startswith(_AUTOGRAD_DIR) and code.co_name in ("backward", "grad", "_engine_run_backward"):
                marker = "backward"
            elif ap.startswith(_OPTIM_DIR):
                marker = "optimizer"
        elif code.co_name in ("step", "zero_grad") and "self" in code.co_varnames + code.co_cellvars + code.co_freevars:
            marker = "optimizer?"  # a user-defined optimizer method: checked against `self` (a function without one
            # never is, and its calls stay countable by the fast path)
        lib = None if internal else _library_path(ap)
        info = (0 if internal else 1 if lib is not None else 2, marker, None if internal else _rel_path(f), lib)
        self._code_cache[code] = info
        return info

    def _is_internal(self, code):
        info = self._code_cache.get(code) or self._code_info(code)
        return info[0] == 0

    def _user_place(self, frame):
        """(file, line) of the innermost frame in the user's own files, or ("", 0)."""
        while frame is not None:
            info = self._code_cache.get(frame.f_code) or self._code_info(frame.f_code)
            if info[0] == 2:
                return (info[2], frame.f_lineno)
            frame = frame.f_back
        return ("", 0)

    # -- module paths ---------------------------------------------------------------------------------
    def forward_pre_hook(self, module, inputs):
        if threading.current_thread() is not self._main_thread:
            return None
        mid = id(module)
        caller = None
        if self.stale_check:
            caller = sys._getframe(1)  # the module's call (Module._call_impl), alive while its forward runs
            if self._module_stack:
                live = set()
                f = caller.f_back
                while f is not None:
                    live.add(id(f))
                    f = f.f_back
                keep = len(self._module_frames)
                while keep > 0 and self._module_frames[keep - 1] not in live:
                    keep -= 1
                del self._module_stack[keep:]
                del self._module_frames[keep:]
        if not self._module_stack:
            self._module_names = {id(m): n for n, m in module.named_modules()}
            path = ""
            if self.program is not None:
                self.program.on_root_module(module)
        else:
            path = self._module_names.get(mid)
            if path is None:  # not a registered child of the root: name it by class under its caller
                parent = self._module_stack[-1][1]
                cls = type(module).__name__
                path = parent + "." + cls if parent else cls
        self._module_stack.append((mid, path))
        if self.stale_check:
            self._module_frames.append(id(caller))
        self.sync_native()
        return None

    def forward_hook(self, module, inputs, output):
        if threading.current_thread() is not self._main_thread:
            return None
        mid = id(module)
        # pop up to and including this module (a forward that raised leaves stale entries)
        for k in range(len(self._module_stack) - 1, -1, -1):
            if self._module_stack[k][0] == mid:
                del self._module_stack[k:]
                del self._module_frames[k:]
                break
        self.sync_native()
        return None


def _error_location(tb):
    """Innermost frame of the traceback in the user's own files (not torch, the shim, the standard library or
    site-packages); the innermost frame outside torch and the shim when there is none."""
    loc = fallback = None
    for fs in traceback.extract_tb(tb):
        ap = _abs(fs.filename) if fs.filename and not fs.filename.startswith("<") else fs.filename
        if ap and not ap.startswith(_TORCH_DIR) and not ap.startswith(_SHIM_DIR) and ap != _RUNPY_FILE:
            here = {"file": _rel_path(fs.filename), "line": fs.lineno or 0}
            fallback = here
            if _library_path(ap) is None:
                loc = here
    return loc or fallback


_PYTHON_DISPATCH_FILE = os.path.join(_TORCH_DIR, "utils", "_python_dispatch.py")
_OPS_FILE = os.path.join(_TORCH_DIR, "_ops.py")


def _is_shim_frame(filename):
    if not filename:
        return False
    if filename.startswith("<"):
        return filename.startswith("<frozen runpy")
    ap = _abs(filename)
    return ap.startswith(_SHIM_DIR) or ap == _RUNPY_FILE


def _script_frames(stack):
    """The frames a plain run of the script would show: without the shim's and runpy's frames, and without the
    dispatch-mode frames (torch/utils/_python_dispatch.py and the torch/_ops.py calls below it) that exist only
    because the capture records the aten calls."""
    out = []
    in_dispatch = False
    for fs in stack:
        if _is_shim_frame(fs.filename):
            continue
        ap = _abs(fs.filename) if fs.filename and not fs.filename.startswith("<") else fs.filename
        if ap == _PYTHON_DISPATCH_FILE:
            in_dispatch = True
            continue
        if in_dispatch and ap in (_OPS_FILE, _PYTHON_DISPATCH_FILE):
            continue
        in_dispatch = False
        out.append(fs)
    return out


def _drop_shim_frames(te, seen):
    """Removes the capture's own frames from a TracebackException and the exceptions chained to it."""
    if te is None or id(te) in seen:
        return
    seen.add(id(te))
    te.stack = traceback.StackSummary.from_list(_script_frames(te.stack))
    _drop_shim_frames(getattr(te, "__cause__", None), seen)
    _drop_shim_frames(getattr(te, "__context__", None), seen)
    for sub in getattr(te, "exceptions", None) or ():
        _drop_shim_frames(sub, seen)


def _print_script_traceback(exc_info, script_abs):
    """Prints the traceback as Python would for the script alone: no frame of the shim (stand-ins included)
    or of runpy."""
    etype, value, tb = exc_info
    te = traceback.TracebackException(etype, value, tb)
    _drop_shim_frames(te, set())
    sys.stderr.write("".join(te.format()))
    sys.stderr.flush()
