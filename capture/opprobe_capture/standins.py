"""Stand-ins that let scripts written for an XLA device or for CUDA run unmodified under the capture.

opprobe analyzes the aten calls a script dispatches; it does not need the device the script was written
for. When that device's package is not importable (or, for CUDA, no GPU is present), the capture maps the
device to the CPU, where every aten call is still dispatched (and recorded), and turns the calls that end
a step into step boundaries recorded in the trace:

- PyTorch/XLA (`torch_xla`): the classic API (`torch_xla.core.xla_model`, `parallel_loader`,
  `xla_multiprocessing`, `runtime`, `debug.metrics`, `debug.profiler`, `amp`) and the 2.x API
  (`torch_xla.device()`, `sync()`, `step()`, `compile()`, `launch()`, `experimental.eager_mode()` and
  `experimental.compile()`). Step boundaries: `xm.mark_step`, `torch_xla.sync`, the end of
  `torch_xla.step()`, of a `compile`d function, of `xm.optimizer_step(..., barrier=True)`, and each batch of
  an `MpDeviceLoader`/`ParallelLoader` (as in torch_xla, which marks a step per batch).
- torchax / torch_xla2: `default_env()`, `env.to_xla(...)`, `with env:`, `enable_globally()`,
  `interop.jax_jit`, the `jax` device.
- CUDA (only when `torch.cuda.is_available()` is false): `torch.cuda.is_available()` answers True,
  `.cuda()`, `.to("cuda")`, `device="cuda"` in tensor factories, `torch.cuda.amp.autocast`/`GradScaler`
  (disabled: the analysis sees full precision), `torch.cuda.synchronize()` and the memory queries.
- `torch.compile(...)` (any backend, `openxla` included) returns the model or function unchanged, so its
  aten calls run eagerly where the capture sees them (a compiled graph would hide them); on PyTorch 1.13,
  which has no torch.compile, the same stand-in is provided.

A real package always wins: nothing here is installed for a module that can be imported.
"""

import contextlib
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

import torch

_CPU = torch.device("cpu")
_XLA_CPU = torch.device("cpu")  # what the torch_xla stand-in's xla_device() returns: the CPU, told apart by identity
_MAPPED_DEVICE_TYPES = set()  # device types mapped to the CPU: "xla", "cuda", "jax"
_CUDA_USED = [False]  # the script asked for CUDA (is_available, a cuda device, .cuda(), ...)

# Called at each step boundary with a short description (`xm.mark_step`); set by the recorder.
_boundary_hook = [None]


def _boundary(kind):
    hook = _boundary_hook[0]
    if hook is not None:
        hook(kind)


# Called with (tensor, mesh, partition_spec) at each xs.mark_sharding: the script's own SPMD shardings, which
# `--fit` compiles the step with (program.py); set by the recorder.
_sharding_hook = [None]


def _mark_sharding(t, mesh, partition_spec, *args, **kwargs):
    hook = _sharding_hook[0]
    if hook is not None:
        hook(t, mesh, partition_spec)
    return t


# Called with each tensor the script moves to (or makes on) the XLA device; set by the recorder (its graph model of
# torch_xla's steps, steps.py).
_device_hook = [None]


def _is_xla(dev):
    if isinstance(dev, torch.device):
        return dev is _XLA_CPU or dev.type == "xla"
    return isinstance(dev, str) and dev.split(":", 1)[0] == "xla"


def _xla_target(args, kwargs):
    return any(_is_xla(a) for a in args) or _is_xla(kwargs.get("device"))


def _on_xla_device(t):
    hook = _device_hook[0]
    if hook is not None and "xla" in _MAPPED_DEVICE_TYPES:
        hook(t)


# Called as hook(tensor, what, run) where the script reads a tensor's values on the host in a way that dispatches no
# aten call on the CPU (printing it, .tolist(), .numpy(), .cpu(), .to("cpu")): torch_xla runs the tensor's graph
# there. The hook returns run()'s result. Set by the recorder.
_read_hook = [None]


def _reading(tensor, what, run):
    hook = _read_hook[0]
    if hook is None or "xla" not in _MAPPED_DEVICE_TYPES:
        return run()
    return hook(tensor, what, run)


def _cpu_target(args, kwargs):
    """Whether a Tensor.to(...) asks for the host CPU itself (not the stand-in's XLA device, which is the CPU too)."""
    for d in list(args) + [kwargs.get("device")]:
        if isinstance(d, torch.device) and d.type == "cpu" and d is not _XLA_CPU:
            return True
        if isinstance(d, str) and d.split(":", 1)[0] == "cpu":
            return True
    return False


def _patch_value_reads():
    for name, what in (("__repr__", "Tensor.__repr__"), ("tolist", "Tensor.tolist"), ("numpy", "Tensor.numpy"),
                       ("cpu", "Tensor.cpu")):
        orig = getattr(torch.Tensor, name)

        def make(orig, what):
            @functools.wraps(orig)
            def read(self, *args, **kwargs):
                return _reading(self, what, lambda: orig(self, *args, **kwargs))
            return read

        setattr(torch.Tensor, name, make(orig, what))


# ---------------------------------------------------------------------------------------------------
# Device mapping
# ---------------------------------------------------------------------------------------------------

def _mapped(dev):
    """The CPU for a device of a mapped type (`cuda`, `cuda:0`, torch.device('xla:0'), ...), else dev."""
    if dev is None or not _MAPPED_DEVICE_TYPES:
        return dev
    if isinstance(dev, torch.device):
        kind = dev.type
    elif isinstance(dev, str):
        kind = dev.split(":", 1)[0]
    elif isinstance(dev, int) and not isinstance(dev, bool):
        kind = "cuda"  # `.to(0)` / `device=0`: a CUDA ordinal
    else:
        return dev
    if kind not in _MAPPED_DEVICE_TYPES:
        return dev
    if kind == "cuda":
        _CUDA_USED[0] = True
    return "cpu" if isinstance(dev, str) else _CPU


def _device_type(v):
    """The device type a `.to(...)` argument names (`jax` of "jax:0"), else None."""
    if isinstance(v, torch.device):
        return v.type
    if isinstance(v, str):
        return v.split(":", 1)[0]
    return None


def _map_args(args, kwargs):
    args = tuple(_mapped(a) if isinstance(a, (str, torch.device)) else a for a in args)
    if "device" in kwargs:
        kwargs["device"] = _mapped(kwargs["device"])
    return args, kwargs


_FACTORIES = (
    "tensor", "as_tensor", "asarray", "from_numpy", "zeros", "ones", "empty", "full", "rand", "randn", "randint",
    "randperm", "arange", "range", "linspace", "logspace", "eye", "zeros_like", "ones_like", "empty_like",
    "full_like", "rand_like", "randn_like", "randint_like", "empty_strided", "tril_indices", "triu_indices",
    "normal", "bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window",
    "scalar_tensor", "sparse_coo_tensor", "complex", "polar",
)

_patched = [False]


def _patch_device_mapping():
    """Wraps Tensor.to/.cuda, Module.cuda and the tensor factories so that a mapped device becomes the CPU."""
    if _patched[0]:
        return
    _patched[0] = True

    _patch_value_reads()
    orig_to = torch.Tensor.to

    @functools.wraps(orig_to)
    def to(self, *args, **kwargs):
        xla = _xla_target(args, kwargs)
        if _cpu_target(args, kwargs):
            return _reading(self, "Tensor.to(cpu)", lambda: orig_to(self, *args, **kwargs))
        args, kwargs = _map_args(args, kwargs)
        out = orig_to(self, *args, **kwargs)
        if xla:
            _on_xla_device(out)
        return out

    torch.Tensor.to = to

    orig_module_to = torch.nn.Module.to

    @functools.wraps(orig_module_to)
    def module_to(self, *args, **kwargs):
        # Module.to parses its device into a new torch.device: what it moved to the XLA device is marked here.
        xla = _xla_target(args, kwargs)
        # The `jax` device, which PyTorch does not know without torchax (it registers the name), is mapped here,
        # before Module.to parses it; other devices go on as given (Tensor.to maps them per tensor).
        if "jax" in _MAPPED_DEVICE_TYPES and any(_device_type(a) == "jax" for a in list(args) + [kwargs.get("device")]):
            args = tuple(_CPU if _device_type(a) == "jax" else a for a in args)
            if _device_type(kwargs.get("device")) == "jax":
                kwargs = dict(kwargs, device=_CPU)
        out = orig_module_to(self, *args, **kwargs)
        if xla:
            for t in list(self.parameters()) + list(self.buffers()):
                _on_xla_device(t)
        return out

    torch.nn.Module.to = module_to

    def tensor_cuda(self, device=None, non_blocking=False, memory_format=torch.preserve_format):
        _CUDA_USED[0] = True
        return orig_to(self, "cpu", non_blocking=non_blocking, memory_format=memory_format)

    torch.Tensor.cuda = tensor_cuda
    torch.Tensor.pin_memory = lambda self, *a, **k: self
    torch.Tensor.is_pinned = lambda self, *a, **k: False

    def module_cuda(self, device=None):
        _CUDA_USED[0] = True
        return self

    torch.nn.Module.cuda = module_cuda

    # torch.set_default_device (2.x) gives a device to the factories its DeviceContext finds in a set of torch's own
    # functions, made once on first use: made here, before the wrappers replace them, or a script's default device
    # (`meta`, to build a large model without its memory) would be lost and its model made for real on the CPU.
    try:
        import torch.utils._device as _torch_device
        _torch_device._device_constructors()
    except (ImportError, AttributeError):
        pass  # PyTorch 1.13: no default device
    for name in _FACTORIES:
        fn = getattr(torch, name, None)
        if fn is None:
            continue

        def make(fn):
            @functools.wraps(fn)
            def factory(*args, **kwargs):
                xla = False
                if "device" in kwargs:
                    xla = _is_xla(kwargs["device"])
                    kwargs["device"] = _mapped(kwargs["device"])
                out = fn(*args, **kwargs)
                if xla:
                    _on_xla_device(out)
                return out
            return factory

        wrapper = make(fn)
        setattr(torch, name, wrapper)
        # TorchScript resolves torch.zeros & co. through its builtin table: the wrapper stands for the same op.
        try:
            torch.jit._builtins._register_builtin(wrapper, "aten::" + name)
        except Exception:  # noqa: BLE001  (an older or newer torch without this table: scripting is rare)
            pass


def _map_device_type(device_type):
    _MAPPED_DEVICE_TYPES.add(device_type)
    _patch_device_mapping()


# ---------------------------------------------------------------------------------------------------
# Module building
# ---------------------------------------------------------------------------------------------------

_STANDIN_MODULES = {}  # full name -> module


def _module(name, doc, **attrs):
    m = types.ModuleType(name, doc)
    m.__path__ = []  # a package: submodules resolve through _StandinFinder
    m.__opprobe_standin__ = True
    for k, v in attrs.items():
        setattr(m, k, v)
    _STANDIN_MODULES[name] = m
    parent, _, child = name.rpartition(".")
    if parent and parent in _STANDIN_MODULES:
        setattr(_STANDIN_MODULES[parent], child, m)
    return m


class _StandinLoader(importlib.abc.Loader):
    def create_module(self, spec):
        return _STANDIN_MODULES[spec.name]

    def exec_module(self, module):
        pass


class _StandinFinder(importlib.abc.MetaPathFinder):
    """Serves the stand-in modules; a submodule the stand-in does not provide fails with a clear message."""

    def __init__(self, roots):
        self.roots = tuple(roots)

    def find_spec(self, fullname, path=None, target=None):
        root = fullname.split(".", 1)[0]
        if root not in self.roots:
            return None
        if fullname in _STANDIN_MODULES:
            return importlib.machinery.ModuleSpec(fullname, _StandinLoader(), is_package=True)
        raise ModuleNotFoundError(
            "No module named '%s' (opprobe capture: %s is not installed, and opprobe's stand-in for it does not "
            "provide this module; install %s in this Python to analyze the script as it is)" % (fullname, root, root),
            name=fullname)


class _NullContext(object):
    """A context manager that is also a decorator and does nothing (autocast, profiler traces)."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs)
        return wrapper


def _installed(name):
    if name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


# ---------------------------------------------------------------------------------------------------
# torch_xla
# ---------------------------------------------------------------------------------------------------

def _to_device(data, device):
    """Moves a batch (tensors in lists, tuples and dicts) to the device, as torch_xla's loaders do."""
    if isinstance(data, torch.Tensor):
        return data.to(device)
    if isinstance(data, (list, tuple)):
        moved = [_to_device(x, device) for x in data]
        return type(data)(moved) if not hasattr(data, "_fields") else type(data)(*moved)
    if isinstance(data, dict):
        return type(data)((k, _to_device(v, device)) for k, v in data.items())
    return data


def _xla_autocast(device=None, enabled=True, dtype=None, cache_enabled=None, **kwargs):
    """torch_xla.amp.autocast(device, ...): XLA's autocast is bfloat16 unless told otherwise; on the CPU where the
    capture runs, PyTorch's CPU autocast casts the same matmuls and convolutions (linear, addmm, mm, bmm, conv, ...)."""
    return torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=enabled)


def _patch_autocast_for_xla():
    """torch.autocast("xla", ...) as torch_xla gives it: PyTorch 1.13 refuses the device type (only cuda and cpu) and
    PyTorch 2.x without torch_xla casts nothing; both become the CPU autocast with XLA's default dtype, bfloat16."""
    cls = torch.autocast
    if getattr(cls, "__opprobe_xla__", False):
        return
    orig_init = cls.__init__

    @functools.wraps(orig_init)
    def init(self, *args, **kwargs):
        args = list(args)
        device_type = args[0] if args else kwargs.get("device_type")
        if isinstance(device_type, str) and device_type.split(":", 1)[0] == "xla":
            if args:
                args[0] = "cpu"
            else:
                kwargs["device_type"] = "cpu"
            if kwargs.get("dtype") is None and len(args) < 2:
                kwargs["dtype"] = torch.bfloat16
        orig_init(self, *args, **kwargs)

    cls.__init__ = init
    cls.__opprobe_xla__ = True


def _build_torch_xla():
    state = {"eager": False}

    def xla_device(n=None, devkind=None):
        # The XLA device is mapped to the CPU (device type `xla` is mapped too, for torch.device("xla")): a CPU device
        # object of its own, so that what the script moves to it is known (`.to(dev)`, `device=dev`).
        return _XLA_CPU

    def device(index=None):
        return xla_device(index)

    def mark_step(wait=False, reset_scope=True):
        _boundary("xm.mark_step")

    def sync(wait=False, reset_scope=True):
        _boundary("torch_xla.sync")

    @contextlib.contextmanager
    def step():
        try:
            yield
        finally:
            _boundary("torch_xla.step")

    def compile(f=None, full_graph=False, name=None, mode=None, **kwargs):  # noqa: A001  (torch_xla's name)
        def wrap(fn):
            @functools.wraps(fn)
            def compiled(*args, **kw):
                try:
                    return fn(*args, **kw)
                finally:
                    _boundary("torch_xla.compile")
            return compiled
        return wrap if f is None else wrap(f)

    def eager_mode(enable):
        state["eager"] = bool(enable)

    def is_eager_mode():
        return state["eager"]

    def spawn(fn, args=(), nprocs=None, join=True, daemon=False, start_method="spawn"):
        # Analyzed as one process: process 0 of a world of one.
        return fn(0, *args)

    def launch(fn, args=(), start_method="spawn", debug_single_process=False):
        return spawn(fn, args)

    def optimizer_step(optimizer, barrier=False, optimizer_args=None, groups=None, pin_layout=True):
        loss = optimizer.step(**(optimizer_args or {}))
        if barrier:
            mark_step()
        return loss

    def all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True):
        # One replica: the reduction of a single value is the value (times scale).
        if isinstance(inputs, torch.Tensor):
            return inputs * scale if scale != 1.0 else inputs
        if scale != 1.0:
            for t in inputs:
                t.mul_(scale)
        return inputs

    def master_print(*args, **kwargs):
        kwargs.pop("finalize", None)
        fd = kwargs.pop("fd", None)
        if fd is not None:
            kwargs["file"] = fd
        print(*args, **kwargs)

    def save(data, file_or_path, master_only=True, global_master=False):
        torch.save(data, file_or_path)

    def rendezvous(tag, payload=b"", replicas=None):
        return [payload]

    def mesh_reduce(tag, data, reduce_fn):
        return reduce_fn([data])

    def get_memory_info(device=None):
        return {"bytes_used": 0, "bytes_limit": 0, "kb_free": 0, "kb_total": 0}

    def get_rng_state(device=None):
        return 0

    root = _module("torch_xla", "opprobe capture stand-in for PyTorch/XLA (the real torch_xla is not installed); "
                   "XLA tensors live on the CPU so that their aten calls are recorded.",
                   __version__="0.0.0+opprobe.standin",
                   device=device, devices=lambda: [xla_device()], device_count=lambda: 1,
                   real_devices=lambda: ["CPU:0"], sync=sync, step=step, compile=compile, launch=launch,
                   manual_seed=lambda seed, device=None: torch.manual_seed(seed), version="0.0.0+opprobe.standin")
    _module("torch_xla.core", "")
    xm = _module(
        "torch_xla.core.xla_model", "opprobe stand-in for torch_xla.core.xla_model",
        xla_device=xla_device, mark_step=mark_step, optimizer_step=optimizer_step,
        get_ordinal=lambda defval=0: 0, get_local_ordinal=lambda defval=0: 0,
        world_size=lambda: 1, xrt_world_size=lambda defval=1: 1, is_master_ordinal=lambda local=True: True,
        master_print=master_print, rendezvous=rendezvous, all_reduce=all_reduce,
        all_gather=lambda value, dim=0, groups=None, output=None, pin_layout=True: value,
        reduce_scatter=lambda reduce_type, input, scale, scatter_dim, shard_count, groups=None, output=None,
        pin_layout=True: input * scale if scale != 1.0 else input,
        all_to_all=lambda value, *a, **k: value, collective_permute=lambda value, pairs: value,
        reduce_gradients=lambda optimizer, groups=None, pin_layout=True: None,
        mesh_reduce=mesh_reduce, save=save, wait_device_ops=lambda devices=None: None,
        get_xla_supported_devices=lambda devkind=None, max_devices=None: ["xla:0"],
        xla_real_devices=lambda devices=None: ["CPU:0"], xla_device_hw=lambda device: "CPU",
        is_xla_tensor=lambda tensor: isinstance(tensor, torch.Tensor), get_memory_info=get_memory_info,
        set_rng_state=lambda seed, device=None: torch.manual_seed(seed), get_rng_state=get_rng_state,
        REDUCE_SUM="sum", REDUCE_MUL="mul", REDUCE_AND="and", REDUCE_OR="or", REDUCE_MIN="min", REDUCE_MAX="max")

    class PerDeviceLoader(object):
        def __init__(self, loader, device):
            self._loader = loader
            self._device = device

        def __iter__(self):
            first = True
            for batch in self._loader:
                if not first:
                    _boundary("parallel_loader batch")
                first = False
                yield _to_device(batch, self._device)
            if not first:
                _boundary("parallel_loader batch")

        def __len__(self):
            return len(self._loader)

        next = None

    class ParallelLoader(object):
        def __init__(self, loader, devices, batchdrops=False, fixed_batch_size=False, loader_prefetch_size=8,
                     device_prefetch_size=4, host_to_device_transfer_threads=1, input_sharding=None):
            self._loader = loader
            self._devices = list(devices)

        def per_device_loader(self, device):
            return PerDeviceLoader(self._loader, device)

        def per_device_samples(self):
            return len(self._loader)

        def close(self):
            pass

    class MpDeviceLoader(object):
        def __init__(self, loader, device, **kwargs):
            self._loader = loader
            self._device = device

        def __iter__(self):
            return iter(PerDeviceLoader(self._loader, self._device))

        def __len__(self):
            return len(self._loader)

    _module("torch_xla.distributed", "")
    _module("torch_xla.distributed.parallel_loader", "opprobe stand-in: batches are moved to the device and each "
            "batch ends a step", ParallelLoader=ParallelLoader, MpDeviceLoader=MpDeviceLoader,
            PerDeviceLoader=PerDeviceLoader)

    class MpModelWrapper(object):
        def __init__(self, model):
            self._model = model

        def to(self, device):
            return self._model.to(device)

    class MpSerialExecutor(object):
        def run(self, fn):
            return fn()

    _module("torch_xla.distributed.xla_multiprocessing", "opprobe stand-in: spawn runs the function once, as "
            "process 0 of 1", spawn=spawn, MpModelWrapper=MpModelWrapper, MpSerialExecutor=MpSerialExecutor)
    _module("torch_xla.distributed.xla_backend", "opprobe stand-in (no `xla` process group is registered)")

    class Mesh(object):
        def __init__(self, device_ids, mesh_shape, axis_names=None):
            self.device_ids, self.mesh_shape, self.axis_names = device_ids, mesh_shape, axis_names

    _module("torch_xla.distributed.spmd", "opprobe stand-in: sharding annotations are recorded for --fit and "
            "change nothing else", Mesh=Mesh, mark_sharding=_mark_sharding, clear_sharding=lambda t: t,
            set_global_mesh=lambda mesh: None, get_global_mesh=lambda: None)
    _module("torch_xla.runtime", "opprobe stand-in for torch_xla.runtime: one CPU device",
            world_size=lambda: 1, global_ordinal=lambda: 0, local_ordinal=lambda: 0, process_index=lambda: 0,
            process_count=lambda: 1, local_process_count=lambda: 1, local_device_count=lambda: 1,
            global_device_count=lambda: 1, global_runtime_device_count=lambda: 1,
            addressable_device_count=lambda: 1, addressable_runtime_device_count=lambda: 1,
            device_type=lambda: "CPU", host_index=lambda: 0, use_spmd=lambda auto=False: None,
            is_spmd=lambda: False, initialize_cache=lambda path, readonly=False: None,
            xla_device=xla_device)
    _module("torch_xla.debug", "")
    _module("torch_xla.debug.metrics", "opprobe stand-in for torch_xla.debug.metrics: nothing is measured",
            metrics_report=lambda: "", short_metrics_report=lambda counter_names=None, metric_names=None: "",
            counter_names=lambda: [], metric_names=lambda: [], counter_value=lambda name: None,
            metric_data=lambda name: None, clear_all=lambda: None, clear_counters=lambda: None,
            clear_metrics=lambda: None, executed_fallback_ops=lambda: [])

    class StepTrace(_NullContext):
        def __exit__(self, *exc):
            _boundary("xp.StepTrace")
            return False

    _module("torch_xla.debug.profiler", "opprobe stand-in for torch_xla.debug.profiler: no profile is taken",
            start_server=lambda port, only_on_master=True: None, trace=lambda *a, **k: None,
            trace_detached=lambda *a, **k: None, Trace=_NullContext, StepTrace=StepTrace,
            trace_me=lambda name: (lambda fn: fn))
    _module("torch_xla.experimental", "", eager_mode=eager_mode, is_eager_mode=is_eager_mode, compile=compile)
    _module("torch_xla.amp", "opprobe stand-in: autocast as torch_xla's (bfloat16 by default), through PyTorch's CPU "
            "autocast", autocast=_xla_autocast, GradScaler=_disabled_grad_scaler())
    _patch_autocast_for_xla()
    _module("torch_xla.amp.syncfree", "opprobe stand-in: the torch.optim optimizers",
            SGD=torch.optim.SGD, Adam=torch.optim.Adam, AdamW=torch.optim.AdamW)
    _module("torch_xla.utils", "")
    _module("torch_xla.utils.utils", "", get_free_tcp_ports=lambda n=1: [0] * n)
    root.core = _STANDIN_MODULES["torch_xla.core"]
    return xm


def _disabled_grad_scaler():
    base = torch.cuda.amp.GradScaler

    class GradScaler(base):
        """A GradScaler that is always disabled: scale() returns the loss, step() calls optimizer.step()."""

        def __init__(self, *args, **kwargs):
            kwargs.pop("enabled", None)
            kwargs.pop("device", None)
            super(GradScaler, self).__init__(enabled=False)

    return GradScaler


# ---------------------------------------------------------------------------------------------------
# torchax / torch_xla2
# ---------------------------------------------------------------------------------------------------

def _build_torchax(name):
    def tree_map(fn, data):
        if isinstance(data, (list, tuple)):
            mapped = [tree_map(fn, x) for x in data]
            return type(data)(*mapped) if hasattr(data, "_fields") else type(data)(mapped)
        if isinstance(data, dict):
            return type(data)((k, tree_map(fn, v)) for k, v in data.items())
        return fn(data)

    class Environment(object):
        """The torchax environment: tensors stay torch tensors on the CPU, where their aten calls are recorded."""

        def __init__(self):
            self.config = types.SimpleNamespace(debug_print_each_op=False, debug_accuracy_for_each_op=False,
                                                use_int32_for_index=False)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def to_xla(self, data):
            return tree_map(lambda x: x.to("cpu") if isinstance(x, (torch.Tensor, torch.nn.Module)) else x, data)

        def t2j_copy(self, data):
            return data

        def j2t_copy(self, data):
            return data

        def t2j_iso(self, data):
            return data

        def j2t_iso(self, data):
            return data

    env = Environment()

    def default_env():
        return env

    def jax_jit(fn, kwargs_for_jax_jit=None):
        @functools.wraps(fn)
        def jitted(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            finally:
                _boundary(name + ".interop.jax_jit")
        return jitted

    root = _module(name, "opprobe capture stand-in for %s (not installed): the environment keeps tensors on the "
                   "CPU so that their aten calls are recorded." % name,
                   __version__="0.0.0+opprobe.standin", default_env=default_env, enable_globally=default_env,
                   disable_globally=lambda: None, enable_accuracy_mode=lambda: None,
                   enable_performance_mode=lambda: None, compile=lambda fn, options=None: fn,
                   extract_jax=lambda mod, *a, **k: (None, mod), Environment=Environment)
    _module(name + ".interop", "", jax_jit=jax_jit, torch_view=lambda x: x, jax_view=lambda x: x,
            call_jax=lambda fn, *a, **k: fn(*a, **k), call_torch=lambda fn, *a, **k: fn(*a, **k),
            jax_value_and_grad=None)
    _module(name + ".tensor", "", Environment=Environment)
    return root


# ---------------------------------------------------------------------------------------------------
# CUDA
# ---------------------------------------------------------------------------------------------------

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def _called_by_torch():
    """Whether the caller of the stand-in function is torch itself (not the user's script or a library)."""
    f = sys._getframe(2)
    return f is not None and os.path.abspath(f.f_code.co_filename).startswith(_TORCH_DIR)


def _install_cuda():
    cuda = torch.cuda
    real_is_available, real_device_count = cuda.is_available, cuda.device_count

    # The script sees a GPU; torch itself keeps seeing none (its optimizers, DataLoader and autocast pick their
    # CUDA paths from these answers and would then call into the missing driver).
    def is_available():
        if _called_by_torch():
            return real_is_available()
        _CUDA_USED[0] = True
        return True

    def device_count():
        return real_device_count() if _called_by_torch() else 1

    cuda.is_available = is_available
    cuda.device_count = device_count
    cuda.current_device = lambda: 0
    cuda.set_device = lambda device: None
    cuda.get_device_name = lambda device=None: "opprobe capture stand-in (CPU)"
    cuda.get_device_capability = lambda device=None: (8, 0)
    cuda.is_bf16_supported = lambda *a, **k: True
    cuda.synchronize = lambda device=None: None
    cuda.empty_cache = lambda: None
    for q in ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
              "memory_cached", "max_memory_cached"):
        setattr(cuda, q, lambda device=None: 0)
    cuda.reset_peak_memory_stats = lambda device=None: None
    cuda.manual_seed = lambda seed: None  # torch.manual_seed seeds the CPU generator the tensors use
    cuda.manual_seed_all = lambda seed: None
    amp = getattr(cuda, "amp", None)
    if amp is not None:
        amp.autocast = _NullContext
        amp.GradScaler = _disabled_grad_scaler()
    _map_device_type("cuda")


# ---------------------------------------------------------------------------------------------------
# torch.compile
# ---------------------------------------------------------------------------------------------------

def _install_eager_compile():
    def compile(model=None, *args, **kwargs):  # noqa: A001  (torch's name)
        if model is None:
            return lambda m: m
        return model

    torch.compile = compile


_ROOTS = []


def install(boundary_hook, device_hook=None, read_hook=None, sharding_hook=None, torchax_standin=False):
    """Installs the stand-ins this Python needs (those whose real package or device is missing). `torchax_standin`:
    the torchax and torch_xla2 stand-ins even where torchax is installed (`analyze --lowering torchax`)."""
    _boundary_hook[0] = boundary_hook
    _sharding_hook[0] = sharding_hook
    _device_hook[0] = device_hook
    _read_hook[0] = read_hook
    if not _installed("torch_xla"):
        _build_torch_xla()
        _ROOTS.append("torch_xla")
        _map_device_type("xla")
    real_torchax = _installed("torchax") and not torchax_standin
    for name in ("torchax", "torch_xla2"):
        # torch_xla2 is torchax's former name: where torchax is installed, real_torchax.py serves it as torchax.
        if torchax_standin or (not _installed(name) and not (name == "torch_xla2" and real_torchax)):
            _build_torchax(name)
            _ROOTS.append(name)
    if _ROOTS:
        if not real_torchax:  # the real torchax owns the `jax` device
            _map_device_type("jax")
        sys.meta_path.insert(0, _StandinFinder(_ROOTS))
    if not torch.cuda.is_available():
        _install_cuda()
    _install_eager_compile()
    return list(_ROOTS)


def used():
    """The stand-ins the script used: `torch_xla`, `torchax`, `torch_xla2` (imported), `cuda` (asked for)."""
    out = [r for r in _ROOTS if getattr(sys.modules.get(r), "__opprobe_standin__", False)]
    if _CUDA_USED[0]:
        out.append("cuda")
    return out
