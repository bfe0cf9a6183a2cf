"""Phases and steps: which part of a training step a call belongs to. Forward by default; backward inside
torch.autograd.backward/grad (autograd's worker threads included), each backward call naming the forward call whose
autograd node runs it; optimizer inside an Optimizer's step or zero_grad. Steps: the boundaries a script marks
(xm.mark_step, torch_xla.sync, ...: the stand-ins call `boundary`), the tensors it moves to the XLA device and the
values it reads on the host (for steps.py's model of torch_xla's graphs).
"""

import functools
import sys
import types as _pytypes

import torch

from .call_sites import _rel_path

_TENSOR = torch.Tensor

# The key under which a forward call's place is kept in its autograd node's `metadata` dict, for the backward
# ops of that node to name it.
_FORWARD_KEY = "opprobe_forward"


class Phases(object):
    """The Recorder's phase half (its state, _phase_stack, _pending, _backward_loc, _backward_forward, step, graphs,
    ..., is the Recorder's)."""

    # -- forward calls of backward ops --------------------------------------------------------------
    def flush_pending(self):
        """Names the autograd node of the last forward call (autograd creates it after the call returns, so it is
        looked up at the next call) with that call's place."""
        refs, forward = self._pending
        self._pending = None
        self.sync_native()
        for ref in refs:
            t = ref()
            node = t.grad_fn if t is not None else None
            if node is not None:
                md = node.metadata
                if _FORWARD_KEY not in md:
                    md[_FORWARD_KEY] = forward

    def _forward_of_backward_call(self):
        """The forward call whose autograd node is running now (None: not known, e.g. AccumulateGrad)."""
        node_fn = self._autograd_node_fn
        if node_fn is None:
            return self._backward_forward  # PyTorch 1.13: set by the node pre-hooks (hook_backward_graph)
        node = node_fn()
        if node is None:
            return None
        return node.metadata.get(_FORWARD_KEY)

    def hook_backward_graph(self, roots):
        """PyTorch 1.13 has no torch._C._current_autograd_node: a pre-hook on every node of the graph below `roots`
        tells which node runs. Returns the hooks' handles."""
        handles = []
        seen = set()
        todo = []
        for t in roots:
            node = getattr(t, "grad_fn", None) if isinstance(t, _TENSOR) else None
            if node is not None:
                todo.append(node)
        keep = []  # the node objects stay alive while walking, so their ids stay unique
        while todo:
            node = todo.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            keep.append(node)
            try:
                forward = node.metadata.get(_FORWARD_KEY)
                handles.append(node.register_prehook(functools.partial(self._enter_node, forward)))
            except Exception:  # noqa: BLE001  (a node type without pre-hooks: its ops keep the previous node's)
                pass
            for nxt, _ in getattr(node, "next_functions", ()) or ():
                if nxt is not None:
                    todo.append(nxt)
        return handles

    def _enter_node(self, forward, grad_outputs):
        self._backward_forward = forward
        return None

    # -- phases: backward and optimizer entry points --------------------------------------------------
    def wrap_autograd(self):
        """Wraps torch.autograd.backward/grad: calls inside are in the backward phase (autograd worker threads
        included), located at the user's backward() line, and (1.13) the graph's nodes get pre-hooks."""
        rec = self
        for name in ("backward", "grad"):
            orig = getattr(torch.autograd, name, None)
            if orig is None:
                continue

            def make(orig, name):
                def wrapper(*args, **kwargs):
                    if rec._pending is not None:
                        rec.flush_pending()
                    if rec.native is not None:
                        rec.native.flush()
                    frame = sys._getframe(1)
                    while frame is not None and rec._is_internal(frame.f_code):
                        frame = frame.f_back
                    prev_loc = rec._backward_loc
                    prev_forward = rec._backward_forward
                    if frame is not None:
                        rec._backward_loc = (_rel_path(frame.f_code.co_filename), frame.f_lineno)
                    handles = ()
                    if rec._autograd_node_fn is None:
                        roots = args[0] if args else kwargs.get("tensors" if name == "backward" else "outputs")
                        try:
                            handles = rec.hook_backward_graph(roots if isinstance(roots, (list, tuple)) else [roots])
                        except Exception:  # noqa: BLE001  (never break the script: backward ops keep the line)
                            handles = ()
                    rec._phase_stack.append("backward")
                    rec.sync_native()
                    if rec.program is not None:
                        rec.program.on_backward()
                    try:
                        return orig(*args, **kwargs)
                    finally:
                        rec._phase_stack.pop()
                        rec.sync_native()
                        for h in handles:
                            h.remove()
                        rec._backward_loc = prev_loc
                        rec._backward_forward = prev_forward
                wrapper.__wrapped__ = orig
                wrapper.__name__ = getattr(orig, "__name__", name)
                wrapper.__doc__ = getattr(orig, "__doc__", None)
                return wrapper

            setattr(torch.autograd, name, make(orig, name))

    def wrap_optimizers(self):
        """Wraps step and zero_grad of every torch.optim.Optimizer subclass (those defined later too): calls inside
        are in the optimizer phase even from the user's own helpers (a closure, a custom step's functions)."""
        base = self._optimizer_cls
        if base is None:
            return
        rec = self

        def make(fn, name):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                rec._phase_stack.append("optimizer")
                rec.sync_native()
                try:
                    return fn(*args, **kwargs)
                finally:
                    rec._phase_stack.pop()
                    rec.sync_native()
                    if name == "step" and rec.program is not None and args and not rec._phase_stack:
                        rec.program.on_optimizer_step(args[0], rec._user_place(sys._getframe(1)))
            wrapper._opprobe_phase = True
            return wrapper

        def wrap_class(cls):
            for name in ("step", "zero_grad"):
                fn = cls.__dict__.get(name)
                if isinstance(fn, _pytypes.FunctionType) and not getattr(fn, "_opprobe_phase", False):
                    setattr(cls, name, make(fn, name))

        todo = [base]
        while todo:
            cls = todo.pop()
            wrap_class(cls)
            todo.extend(cls.__subclasses__())
        orig = base.__dict__.get("__init_subclass__")

        def init_subclass(cls, **kwargs):
            if orig is not None:
                orig.__func__(cls, **kwargs)
            else:
                super(base, cls).__init_subclass__(**kwargs)
            wrap_class(cls)
        base.__init_subclass__ = classmethod(init_subclass)

    def boundary(self, kind):
        """A step boundary (xm.mark_step, torch_xla.sync, ...): later calls belong to the next step."""
        self.step += 1
        self.boundaries[kind] = self.boundaries.get(kind, 0) + 1
        if self.graphs.active:
            self.graphs.on_boundary(kind, self._user_place(sys._getframe(1)))
        if self.program is not None:
            self.program.on_boundary(self._user_place(sys._getframe(1)))

    def on_sharding(self, tensor, mesh, partition_spec):
        """xs.mark_sharding: the script's own sharding of a tensor, for the step's program (--program)."""
        if self.program is not None:
            self.program.on_mark_sharding(tensor, mesh, partition_spec)

    def on_device(self, tensor):
        """A tensor the script moved to (or made on) the XLA device: the graph model starts with the first."""
        if not self.graphs.active:
            self.native_off()
        self.graphs.mark_device(tensor)

    def on_value_read(self, tensor, what, run):
        """The script reads a device tensor's values on the host without an aten call (printing it, .tolist(), ...):
        torch_xla runs its graph there. The formatting's own calls are no part of any graph."""
        graphs = self.graphs
        if not graphs.active or not graphs.on_device(tensor) or graphs.suspended:
            return run()
        graphs.value_read(tensor, what, self._user_place(sys._getframe(1)))
        graphs.suspended += 1
        try:
            return run()
        finally:
            graphs.suspended -= 1
