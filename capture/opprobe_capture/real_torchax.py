"""The real torchax under the capture: its aten calls recorded as the capture records them without it.

torchax (formerly torch_xla2) runs a script's torch code on JAX: its tensors wrap JAX arrays, and its
environment (`torchax.default_env()`, `enable_globally()`, `with env:`) answers every call itself, torch functions
(a TorchFunctionMode) and aten calls (a TorchDispatchMode above the capture's own), so none of them reaches the
capture's mode. Where torchax is installed, the script runs with it unchanged (the capture's stand-in is only for a
Python without it, standins.py), and this module hooks the one place every call passes, torchax's
`Environment.dispatch`:

- an aten call on torchax tensors is recorded there, with its torchax tensors' shapes and dtypes and its result,
  at the script's source line (the same stack walk as every call);
- a torch function torchax answers itself (`torch.randn(..., device="jax")`, `F.scaled_dot_product_attention`,
  `Tensor.to("jax")`) is replayed on meta tensors of the same shapes, under the capture's mode, so that the aten
  calls PyTorch decomposes it into are recorded: the calls the same script records without torchax;
- calls torchax makes for itself while it answers one (its own decompositions, its conversions between torch and
  JAX) are not recorded: the recorder is paused until the outer call returns.

`torchax.interop.jax_jit`'s functions end a step when they return (a step boundary, as with the stand-in). A script
that imports `torch_xla2` (torchax's former name, seed 001) gets the installed torchax under that name.
"""

import functools
import importlib.abc
import importlib.machinery
import sys
import threading

import torch

_recorder = [None]
_mode_factory = [None]  # a new capture mode (recorder._CaptureMode) recording into _recorder
_boundary = [None]
_state = threading.local()  # .depth: nesting of Environment.dispatch on this thread
_ALIASED = []  # "torch_xla2" once the script imported torchax under its former name


def _installed(name):
    """Whether the real package is on sys.path (the capture's stand-ins, served by a finder of their own, are not)."""
    mod = sys.modules.get(name)
    if mod is not None:
        return not getattr(mod, "__opprobe_standin__", False)
    try:
        return importlib.machinery.PathFinder.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _meta_like(x, is_torchax):
    if is_torchax(x):
        return torch.empty(tuple(int(s) for s in x.shape), dtype=x.dtype, device="meta")
    if isinstance(x, torch.Tensor) and not isinstance(x, torch.nn.Parameter) and x.device.type != "meta":
        return x.to("meta") if type(x) is torch.Tensor else x
    if isinstance(x, torch.nn.Parameter):
        return torch.empty(tuple(x.shape), dtype=x.dtype, device="meta")
    if isinstance(x, torch.device) and x.type in ("jax", "cpu"):
        return torch.device("meta")
    if isinstance(x, str) and x.split(":", 1)[0] in ("jax", "cpu"):
        return "meta"
    return x


def _patch(torchax_module):
    import torch.utils._pytree as pytree
    from torchax import tensor as tx_tensor
    from torchax import view as tx_view
    from torchax import interop as tx_interop

    TxTensor, TxView = tx_tensor.Tensor, tx_view.View
    constructors = getattr(tx_tensor, "TENSOR_CONSTRUCTORS", ())

    def is_torchax(x):
        return isinstance(x, (TxTensor, TxView))

    env_cls = tx_tensor.Environment
    if getattr(env_cls.dispatch, "__opprobe_capture__", False):
        return
    orig_dispatch = env_cls.dispatch

    from torch.utils._python_dispatch import _disable_current_modes

    def replay(func, args, kwargs):
        """The aten calls of a torch function torchax answers itself: the function again, on meta tensors, under a
        capture mode of its own (torchax's dispatch mode, above the capture's, would take them)."""
        try:
            with _disable_current_modes():
                margs, mkwargs = pytree.tree_map(lambda x: _meta_like(x, is_torchax), (args, kwargs or {}))
                with _mode_factory[0]():
                    func(*margs, **mkwargs)
        except Exception:  # noqa: BLE001  (a call meta tensors cannot make: data-dependent shapes, .item())
            pass

    def answers_itself(env, func, kwargs):
        """Whether torchax answers this torch function itself (else it falls back to PyTorch's aten calls, which
        come back here one by one)."""
        if func in constructors:
            return True
        try:
            env._get_op_or_decomp(func)
            return True
        except Exception:  # noqa: BLE001  (OperatorNotFound: no entry in torchax's table)
            return False

    @functools.wraps(orig_dispatch)
    def dispatch(self, func, types, args, kwargs):
        rec = _recorder[0]
        if rec is None or getattr(_state, "depth", 0):
            return orig_dispatch(self, func, types, args, kwargs)
        aten = isinstance(func, torch._ops.OpOverload)
        on_torchax = any(is_torchax(x) for x in pytree.tree_flatten((args, kwargs or {}))[0])
        if aten and not on_torchax:
            return orig_dispatch(self, func, types, args, kwargs)  # plain tensors: the capture's mode records them
        if not aten and not ((on_torchax or func in constructors) and answers_itself(self, func, kwargs)):
            return orig_dispatch(self, func, types, args, kwargs)
        _state.depth = 1
        try:
            if not aten:
                replay(func, args, kwargs)
            rec.suppress += 1
            try:
                out = orig_dispatch(self, func, types, args, kwargs)
            finally:
                rec.suppress -= 1
            if aten:
                try:
                    rec.record(func, rec.op_info(func), args, kwargs or {}, out)
                except Exception as e:  # noqa: BLE001  (never break the user's script because of the recorder)
                    rec.note_internal_error(func, e)
            return out
        finally:
            _state.depth = 0

    dispatch.__opprobe_capture__ = True
    env_cls.dispatch = dispatch

    orig_jax_jit = tx_interop.jax_jit

    @functools.wraps(orig_jax_jit)
    def jax_jit(torch_function, *a, **k):
        jitted = orig_jax_jit(torch_function, *a, **k)

        @functools.wraps(jitted)
        def run(*args, **kwargs):
            try:
                return jitted(*args, **kwargs)
            finally:
                if _boundary[0] is not None:
                    _boundary[0]("torchax.interop.jax_jit")
        return run

    tx_interop.jax_jit = jax_jit


class _AliasLoader(importlib.abc.Loader):
    """`torch_xla2[.x]` served as the installed `torchax[.x]`."""

    def create_module(self, spec):
        target = "torchax" + spec.name[len("torch_xla2"):]
        mod = importlib.import_module(target)
        if "torch_xla2" not in _ALIASED:
            _ALIASED.append("torch_xla2")
        return mod

    def exec_module(self, module):
        pass


class _Finder(importlib.abc.MetaPathFinder):
    """Patches torchax when the script imports it; serves torch_xla2 as torchax where torch_xla2 is missing."""

    def __init__(self, alias):
        self.alias = alias

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "torchax":
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is None or spec.loader is None:
                return None
            orig_exec = spec.loader.exec_module

            def exec_module(module):
                orig_exec(module)
                _patch(module)
            spec.loader.exec_module = exec_module
            return spec
        if self.alias and (fullname == "torch_xla2" or fullname.startswith("torch_xla2.")):
            return importlib.machinery.ModuleSpec(fullname, _AliasLoader(), is_package=True)
        return None


def install(recorder, boundary, mode_factory):
    """Where torchax is installed: hooks it (when the script imports it) and returns True; else False."""
    if not _installed("torchax"):
        return False
    _recorder[0] = recorder
    _boundary[0] = boundary
    _mode_factory[0] = mode_factory
    recorder.native_off()  # every call takes the Python path, where the pause above applies
    if "torchax" in sys.modules:
        _patch(sys.modules["torchax"])
    sys.meta_path.insert(0, _Finder(alias=not _installed("torch_xla2")))
    return True


def aliased():
    """`torch_xla2` when the script imported torchax under that name."""
    return list(_ALIASED)
