"""The recorder: a TorchDispatchMode (_CaptureMode) that sees every aten call of the script, and the Recorder that keys,
counts and records each call, with its place (call_sites.py), its phase (phases.py) and its values (encoding.py), and
that works with the fast path (native.py, fastpath.cpp) and the followers of torch_xla's graphs (steps.py) and of the
first step's data flow (program.py). The script itself is run by runner.py.

Kept free of PyTorch-2.x-only APIs (every newer API is looked up with getattr and has a fallback),
so the same file works on Debian's PyTorch 1.13 and on 2.x.
"""

import sys
import threading
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import native as capture_native  # the fast path, where it is built
from . import steps as capture_steps  # the graphs torch_xla would run
from .call_sites import CallSites
from .encoding import _OpInfo, _Unkeyable, _encode, _raw, _tensor_meta, call_json
from .phases import _FORWARD_KEY, Phases

_TENSOR = torch.Tensor
_weakref = weakref.ref
_SKIP = object()  # raw-key entry of a call that is not recorded (counted in host_only_ops)
_NATIVE_MARKS = {"backward": 4, "optimizer": 8}  # the phase a code object marks, for the fast path (native_classify)


# ---------------------------------------------------------------------------------------------------
# The recorder
# ---------------------------------------------------------------------------------------------------

class Recorder(CallSites, Phases):
    def __init__(self):
        self.calls = {}        # encoded key -> [first sequence number, count, step of the first occurrence]
        self.order = []        # encoded keys in order of first occurrence
        self.total = 0
        self.skipped = {}      # calls that never reach a device (host_only_ops) -> count
        self.step = 0          # step boundaries seen so far (xm.mark_step, torch_xla.sync, ...)
        self.boundaries = {}   # boundary kind -> count
        self.internal_errors = {}  # recorder failures by message (the call itself still ran)
        self._fast = {}        # raw key -> the encoded entry (or _SKIP)
        self._ops = {}         # id(OpOverload) -> _OpInfo (OpOverload's __hash__ is a Python method: slow)
        self._code_cache = {}  # code object -> (kind, phase marker, file as recorded, library-relative file)
        self._autograd_node_fn = getattr(torch._C, "_current_autograd_node", None)  # 2.x
        self._grad_enabled = torch.is_grad_enabled
        self._module_stack = []   # [(module id, path)]
        # Where the forward hook cannot run after a forward that raised (PyTorch before 2.1: no always_call), the
        # frame of each entry's module call, by id, so that a later forward drops the entries whose call has ended.
        self.stale_check = False
        self._module_frames = []
        self._module_names = {}   # module id -> path, refreshed when a root module is entered
        self._phase_stack = []    # "backward" / "optimizer" while torch.autograd.backward/grad or a step runs
        self._backward_loc = None
        self._backward_forward = None  # PyTorch 1.13: the forward call of the autograd node running now
        self._pending = None      # (outputs, forward call) of the last forward call, until its node exists
        self._main_thread = threading.current_thread()
        self._main_ident = threading.get_ident()
        self._optimizer_cls = getattr(torch.optim, "Optimizer", None)
        # The fast path (fastpath.cpp, loaded by native.py; None without it): the calls it counts by
        # their key are added to the entries here when the capture stops (merge_native).
        self.native = None
        self._native_entries = []  # entry number -> entry (the list in self.calls)
        self._native_numbers = {}  # id(entry) -> entry number
        self._native_off = False   # the script entered a dispatch mode of its own: the Python path from then on
        self._contexts = {}        # (module path, phase) -> the context number the fast path keys calls with
        self._native_ops = {}      # (op name, overload name) -> OpOverload
        self._places = {}          # forward call place -> the same tuple (one object per distinct place)
        self._last_place = None    # the place of the last call that left a forward link
        self._last = None          # (entry or None, cacheable) of the last call recorded
        self.native_counted = 0    # calls the fast path counted (added by merge_native)
        # The graphs torch_xla would run (steps.py); followed once a tensor is moved to the XLA device, from
        # when on every call takes the Python path (the fast path does not see the data flow).
        self.graphs = capture_steps.StepGraphs()
        # The first training step's data flow (program.py), when asked for (--program): every call takes the
        # Python path then.
        self.program = None
        # Above zero while the real torchax answers a call the recorder recorded as one (real_torchax.py).
        self.suppress = 0

    # -- recording ------------------------------------------------------------------------------------
    def op_info(self, func):
        info = self._ops.get(id(func))
        if info is None:
            info = _OpInfo(func)
            self._ops[id(func)] = info
        return info

    def record(self, func, info, args, kwargs, out, depth=2):
        """Records one call. `info` is op_info(func); `depth` the number of frames between this method and the
        code that dispatched the call."""
        if self.suppress:
            return  # torchax answers a call: the calls it makes for itself are not the script's (real_torchax.py)
        if self._pending is not None:
            self.flush_pending()
        if not info.record:
            self.skipped[info.name] = self.skipped.get(info.name, 0) + 1
            return
        # Where: the innermost frame in the user's own files, the innermost library frame inside it, and the
        # phase from the frames on the way (torch's autograd and optimizers) or from the wrapped entry points.
        try:
            frame = sys._getframe(depth)
        except ValueError:
            # A thread whose Python stack is shorter (the autograd engine's thread of a device such as torch_xla's
            # runs the backward's calls with no frame of the script): the phase says where they belong.
            frame = None
        cache = self._code_cache
        loc = lib_loc = first = phase = None
        while frame is not None:
            code = frame.f_code
            ci = cache.get(code)
            if ci is None:
                ci = self._code_info(code)
            marker = ci[1]
            if marker is not None and phase is None:
                if marker != "optimizer?":
                    phase = marker
                elif self._optimizer_cls is not None and isinstance(frame.f_locals.get("self"), self._optimizer_cls):
                    phase = "optimizer"
            kind = ci[0]
            if kind:
                if kind == 2:
                    loc = (ci[2], frame.f_lineno)
                    break
                line = frame.f_lineno
                if first is None:
                    first = (ci[2], line)
                if lib_loc is None:
                    lib_loc = (ci[3], line)
            frame = frame.f_back
        if loc is None:
            loc = first
            lib_loc = None
        main = threading.get_ident() == self._main_ident
        if phase is None:
            if self._phase_stack and (main or loc is None):
                phase = self._phase_stack[-1]  # an autograd worker thread has no Python frames of the script
            elif self._autograd_node_fn is not None and self._autograd_node_fn() is not None:
                phase = "backward"
            else:
                phase = "forward"
        if loc is None:
            loc = self._backward_loc if phase == "backward" and self._backward_loc is not None else ("", 0)
        if phase == "backward" or not main or not self._module_stack:
            module_path = ""
        else:
            module_path = self._module_stack[-1][1]
        forward = None
        if phase == "backward":
            try:
                forward = self._forward_of_backward_call()
            except Exception:  # noqa: BLE001  (no node or no metadata: the backward() line only)
                forward = None
        elif phase == "forward" and self._grad_enabled() and _requires_grad(args, kwargs):
            # Weak references: a reference the mode keeps to an output changes what PyTorch 2.x dispatches after
            # the call (a factory's output gets an extra aten::detach).
            if isinstance(out, _TENSOR):
                outs = (out,)
            elif isinstance(out, (tuple, list)):
                outs = tuple([o for o in out if isinstance(o, _TENSOR)])
            else:
                outs = ()
            if outs:
                place = (info.qualified, loc, lib_loc, module_path)
                # one object per distinct place: the fast path keys a backward call by its forward place's identity
                place = self._places.setdefault(place, place)
                self._last_place = place
                if self.native is not None and main:
                    self.native.take_pending(outs, place)  # the fast path names the node at the next call
                else:
                    self._pending = (tuple([_weakref(o) for o in outs]), place)
                    self.sync_native()

        try:
            # (A plain tensor's key inline: most arguments are tensors, and a call of _raw costs more than its body.)
            raw = (info, tuple([(a.dtype, a.shape) if type(a) is _TENSOR else _raw(a) for a in args]),
                   tuple([(k, _raw(v)) for k, v in kwargs.items()]) if kwargs else None,
                   (out.dtype, out.shape) if type(out) is _TENSOR else _raw(out), loc, lib_loc, module_path, phase,
                   forward)
            entry = self._fast.get(raw)
        except (_Unkeyable, TypeError):
            raw = entry = None
        if entry is None:
            entry = self._encoded_entry(info, args, kwargs, out, loc, lib_loc, module_path, phase, forward)
            if raw is not None:
                self._fast[raw] = entry
        elif entry is _SKIP:
            self.skipped[info.name] = self.skipped.get(info.name, 0) + 1
        else:
            self.total += 1
            entry[1] += 1
        # The fast path may count later calls with the same key only where nothing but its key decides the entry:
        # not another thread, and a backward call only on PyTorch 2.x, where the key holds the forward call that the
        # running autograd node names (1.13 knows it from the node pre-hooks, which the key does not see).
        self._last = (entry, entry is not _SKIP and main and
                      (phase != "backward" or self._autograd_node_fn is not None))
        if self.graphs.active and entry is not _SKIP and main:
            self.graphs.on_call(info, entry[3], args, kwargs, out)
        if self.program is not None and entry is not _SKIP:
            self.program.on_call(info, entry[4], args, kwargs, out, phase, bool(self._module_stack),
                                 self._grad_enabled(), loc)

    def _encoded_entry(self, info, args, kwargs, out, loc, lib_loc, module_path, phase, forward):
        """The slow path: encodes the call (schema defaults filled in), counts it, and returns its entry."""
        enc_args = [(a[0], _encode(v, a[1])) for a, v in zip(info.args, info.values(args, kwargs))]
        outs = out if isinstance(out, (tuple, list)) else (out,)
        enc_outs = []
        for o in outs:
            if isinstance(o, (tuple, list)) and o and all(isinstance(x, torch.Tensor) for x in o):
                enc_outs.extend(("tensor",) + _tensor_meta(x) for x in o)
            else:
                enc_outs.append(_encode(o, "Tensor" if isinstance(o, torch.Tensor) else ""))
        if not info.aten and not any(e[0] in ("tensor", "tensor_list") for e in
                                     [v for _, v in enc_args] + enc_outs):
            # A non-aten op that takes and returns no tensor (torchvision::_cuda_version) never reaches a device.
            self.skipped[info.name] = self.skipped.get(info.name, 0) + 1
            return _SKIP
        key = (info.name, info.overload, tuple(enc_args), tuple(enc_outs), loc[0], loc[1], module_path, phase,
               lib_loc, forward)
        self.total += 1
        entry = self.calls.get(key)
        if entry is None:
            # [number, count, step, key, index in the trace's calls]
            entry = self.calls[key] = [self.total, 1, self.step, key, len(self.order)]
            self.order.append(key)
        else:
            entry[1] += 1
        return entry

    # -- the fast path ----------------------------------------------------------------------------------
    def native_classify(self, code):
        """For the fast path's call-site key: 2 the user's own code, 1 a library's, 0 torch's or the shim's, plus 4
        where the code marks the backward phase and 8 where it marks the optimizer phase (record takes the phase of
        the innermost such frame); -1 a frame that makes the call a backward call on PyTorch 1.13, or whose phase
        depends on more than its code (a user-defined optimizer method): those calls take the Python path."""
        info = self._code_cache.get(code) or self._code_info(code)
        if info[1] == "optimizer?" or (info[1] == "backward" and self._autograd_node_fn is None):
            return -1
        return info[0] | _NATIVE_MARKS.get(info[1], 0)

    def native_record(self, name, overload, args, out):
        """A call the fast path has not seen under its key: recorded here as the dispatch mode would. `args` holds
        every schema argument in order. Returns the entry's number for the fast path to count later calls with the
        same key (or -1: hand every such call here), and the forward call's place that names the autograd node of
        the call's outputs, or None: the fast path keeps that link from now on, instead of the recorder."""
        func = self._native_ops.get((name, overload))
        if func is None:
            ns, op = name.split("::", 1)
            func = getattr(getattr(getattr(torch.ops, ns), op), overload or "default")
            self._native_ops[(name, overload)] = func
        info = self._ops.get(id(func))
        if info is None:
            info = self.op_info(func)
        pos, kw = [], {}
        for value, a in zip(args, info.args):
            if a[2]:
                kw[a[0]] = value
            else:
                pos.append(value)
        self._last = None
        self._last_place = None
        try:
            self.record(func, info, tuple(pos), kw, out, depth=2)
        except Exception as e:  # noqa: BLE001  (never break the user's script because of the recorder)
            self.note_internal_error(func, e)
            return -1, None
        forward = self._last_place
        entry, cacheable = self._last or (None, False)
        if not cacheable or entry is None:
            return -1, forward
        number = self._native_numbers.get(id(entry))
        if number is None:
            number = self._native_numbers[id(entry)] = len(self._native_entries)
            self._native_entries.append(entry)
        return number, forward

    def sync_native(self):
        """Tells the fast path what decides a call's module path and phase now (-1: the Python path); nothing without
        a fast path."""
        if self.native is None:
            return
        if self._native_off or self._pending is not None or (self._autograd_node_fn is None and
                                                              "backward" in self._phase_stack):
            context = -1
        else:
            key = (self._module_stack[-1][1] if self._module_stack else "",
                   self._phase_stack[-1] if self._phase_stack else "")
            context = self._contexts.get(key)
            if context is None:
                context = self._contexts[key] = len(self._contexts)
        self.native.set_context(context)

    def native_off(self):
        """The Python path from now on (the script entered a dispatch mode of its own, which must see the calls
        before the capture does)."""
        self._native_off = True
        self.sync_native()

    def merge_native(self):
        """Adds the calls the fast path counted to their entries."""
        if self.native is None:
            return
        for number, count in self.native.take_counts().items():
            self._native_entries[number][1] += count
            self.total += count
            self.native_counted += count

    def calls_so_far(self):
        """Calls recorded so far, those the fast path has counted included (for the progress counter)."""
        return self.total + (self.native.pending() if self.native is not None else 0)

    def note_internal_error(self, func, exc):
        msg = "%s: %s: %s" % (getattr(func, "__name__", str(func)), type(exc).__name__, exc)
        self.internal_errors[msg] = self.internal_errors.get(msg, 0) + 1

    # -- output ---------------------------------------------------------------------------------------
    def calls_json(self):
        out = []
        for key in self.order:
            op, overload, args, outs, file, line, module_path, phase, lib_loc, forward = key
            out.append(call_json(key, self.calls[key][1], self.calls[key][2]))
        return out


def _requires_grad(args, kwargs):
    """Whether a tensor among the arguments requires grad: only then does autograd give the outputs a node."""
    for a in (list(args) + list(kwargs.values())) if kwargs else args:
        if isinstance(a, _TENSOR):
            if a.requires_grad:
                return True
        elif isinstance(a, (list, tuple)):
            for x in a:
                if isinstance(x, _TENSOR) and x.requires_grad:
                    return True
    return False


def _is_dtype_mismatch(exc):
    msg = str(exc)
    return msg.startswith("Found dtype") or "expected scalar type" in msg or "must have the same dtype" in msg


def _promoted(args, kwargs):
    """args and kwargs with their tensors cast to their common (promoted) dtype; None when nothing changes."""
    tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
    if len(tensors) < 2 or len(set(t.dtype for t in tensors)) < 2:
        return None
    common = tensors[0].dtype
    for t in tensors[1:]:
        common = torch.promote_types(common, t.dtype)

    def cast(a):
        return a.to(common) if isinstance(a, torch.Tensor) and a.dtype != common else a
    return tuple(cast(a) for a in args), {k: cast(v) for k, v in kwargs.items()}


import torch.utils._python_dispatch as _python_dispatch  # noqa: E402

# PyTorch 1.13 keeps its stack of dispatch modes in Python: the one mode C++ calls is a helper that pops the top mode
# with a context manager on every call, which costs more than the recording itself. Where that is so, the capture
# installs its mode as the C++ mode directly (the "direct" protocol) and falls back to the stack as soon as the
# script enters a dispatch mode of its own. PyTorch 2.x keeps the stack in C++: the mode is entered as usual.
_SET_DISPATCH_MODE = getattr(torch._C, "_set_torch_dispatch_mode", None)
_DIRECT_PROTOCOL = _SET_DISPATCH_MODE is not None and hasattr(_python_dispatch, "_TorchDispatchStackMode")


class _CaptureMode(TorchDispatchMode):
    def __init__(self, recorder, promote_dtypes=False):
        super(_CaptureMode, self).__init__()
        self.recorder = recorder
        # With the XLA stand-in, an aten call whose CPU kernel rejects mixed dtypes that PyTorch/XLA's lowering
        # promotes (mse_loss_backward of a float output and an int64 target, as in Neuron's supported.py) runs
        # on the promoted tensors; the call is recorded as the script dispatched it. A callable: whether the
        # script is using an XLA stand-in.
        self.promote_dtypes = promote_dtypes or (lambda: False)
        self._direct = False
        self._stacked = False
        self._orig_push_mode = None
        self.fake = False  # the script runs on fake tensors (run_script: --fake): no fast path

    # -- entering and leaving -------------------------------------------------------------------------
    def start(self):
        if _DIRECT_PROTOCOL:
            self._direct = True
            _SET_DISPATCH_MODE(self)
            self._orig_push_mode = orig_push = _python_dispatch._push_mode
            mode = self

            def push_mode(m):
                if mode._direct and m is not mode:
                    mode._to_stack()
                return orig_push(m)
            _python_dispatch._push_mode = push_mode
        else:
            self.__enter__()
            self._stacked = True
            self._orig_push_mode = orig_push = _python_dispatch._push_mode
            rec = self.recorder

            def push_mode(m, *args, **kwargs):
                rec.native_off()
                return orig_push(m, *args, **kwargs)
            _python_dispatch._push_mode = push_mode
        # The fast path (fastpath.cpp), where it is built for this PyTorch: it sits just above this mode and
        # counts the calls it has seen before; everything else comes on to this mode.
        # Not on fake tensors: the fast path's kernel sits above the Python key, where FakeTensorMode answers.
        native = capture_native.load() if not self.fake else None
        if native is not None:
            self.recorder.native = native
            self.recorder.sync_native()
            native.start(self.recorder.native_classify, self.recorder.native_record, _FORWARD_KEY, self)

    def _to_stack(self):
        """The script enters a dispatch mode of its own (1.13): from now on the capture's mode is the bottom of
        PyTorch's mode stack, below the script's."""
        self._direct = False
        self.recorder.native_off()
        _SET_DISPATCH_MODE(None)
        self._orig_push_mode(self)
        self._stacked = True

    def stop(self):
        if self.recorder.native is not None:
            self.recorder.native.stop()
            self.recorder.merge_native()
        if self._direct:
            self._direct = False
            _SET_DISPATCH_MODE(None)
        elif self._stacked:
            self._stacked = False
            if _DIRECT_PROTOCOL:
                # modes the script left entered are above the capture's own
                while _python_dispatch._len_torch_dispatch_stack() > 0 and _python_dispatch._pop_mode() is not self:
                    pass
            else:
                self.__exit__(None, None, None)
        if self._orig_push_mode is not None:
            _python_dispatch._push_mode = self._orig_push_mode
            self._orig_push_mode = None

    # -- every call -----------------------------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        direct = self._direct
        if direct:
            _SET_DISPATCH_MODE(None)
        try:
            rec = self.recorder
            info = rec._ops.get(id(func))
            if info is None:
                info = rec.op_info(func)
            try:
                out = info.call(*args, **kwargs) if kwargs else info.call(*args)
            except RuntimeError as e:
                p = _promoted(args, kwargs or {}) if _is_dtype_mismatch(e) and self.promote_dtypes() else None
                if p is None:
                    raise
                out = info.call(*p[0], **p[1])
            if self.fake and _fake_tensors_own_call(info):
                return out
            try:
                rec.record(func, info, args, kwargs, out)
            except Exception as e:  # noqa: BLE001  (never break the user's script because of the recorder)
                rec.note_internal_error(func, e)
            return out
        finally:
            if direct:
                _SET_DISPATCH_MODE(self)


_PARAMETER_NEW = getattr(getattr(torch.nn.Parameter, "__new__", None), "__code__", None)


def _fake_tensors_own_call(info):
    """A call only fake tensors make, which the script on real tensors does not: `prim::device` (a FakeTensor answers
    `.device` through dispatch) and the detach of nn.Parameter(fake) (a real tensor becomes a Parameter without any
    call). Left out of a --fake trace, so that it holds the calls of a real run."""
    if info.name.startswith("prim::"):
        return True
    if info.name != "aten::detach" or _PARAMETER_NEW is None:
        return False
    frame = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            return False
        if frame.f_code is _PARAMETER_NEW:
            return True
        frame = frame.f_back
    return False


def _fake_mode():
    """PyTorch's FakeTensorMode (2.x), or a one-line reason why there is none."""
    try:
        major = int(str(torch.__version__).split(".")[0])
    except ValueError:
        major = 0
    if major < 2:
        return None, ("--fake needs PyTorch 2.x (its FakeTensorMode); %s has PyTorch %s: give a Python with PyTorch "
                      "2.x (scripts/test makes one: $OPPROBE_VENV_ROOT/torch2/bin/python)" % (sys.executable,
                                                                                             torch.__version__))
    try:
        from torch._subclasses.fake_tensor import FakeTensorMode
    except Exception as e:  # noqa: BLE001
        return None, "--fake: PyTorch %s has no FakeTensorMode (%s)" % (torch.__version__, e)
    # Tensors the script makes from data it has (a numpy array, a Python list) become fake on their first use.
    return FakeTensorMode(allow_non_fake_inputs=True), None


def _needs_a_value(exc):
    """The op whose output a fake tensor cannot give (a value, or a size the data decides), or None."""
    name = type(exc).__name__
    if name in ("DataDependentOutputException", "DynamicOutputShapeException"):
        return str(getattr(exc, "func", None) or exc).split("(")[0]
    return None
