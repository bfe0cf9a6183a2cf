"""The data flow of a script's first training step, for `--fit` (issue #30): which call made each input of each call,
which tensors the step reads from outside (parameters, buffers, optimizer state, the batch) and which it leaves
behind (updated state, gradients, the loss), so that opprobe builds the step as one HLO program with its own
lowerings and compiles it whole for the target (analyzer/program).

A value is a tensor's contents at one moment: a call's output makes a new value, and so does an in-place call on its
mutated argument. Tensors are told apart by where their data lives (storage, offset, sizes, strides, dtype), not by
their Python object, so a view or a tensor autograd saved for the backward (a new tensor object over the same
storage) is the value it was made from. A write through one view of a storage makes the values other views of it
held stale: a later read of one is a read of data the step changed in a way the capture cannot follow, taken as a
new input of the step and counted (`untracked_writes`).

The step is the first training step: from the first call made inside a module's forward, or the first call that
differentiates a tensor that requires grad, to the end of the first optimizer step (Optimizer.step returning); a
step boundary (xm.mark_step), a second forward after a backward with no optimizer step, or the script's end end it
too. Kept free of syntax newer than Python 3.6.
"""

import weakref

import torch

_TENSOR = torch.Tensor


def _storage_of(t):
    """The tensor's storage object (kept alive while the step is recorded, so its address names it), or None."""
    try:
        return t.untyped_storage()
    except (AttributeError, RuntimeError, NotImplementedError):
        pass
    try:
        s = t.storage()  # PyTorch 1.13: a TypedStorage over the untyped one
        return getattr(s, "_storage", s)
    except (AttributeError, RuntimeError, NotImplementedError):
        return None


def _key(t, storage):
    return (storage._cdata, t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)


class StepProgram(object):
    """Records the data flow of the first training step (see the module's docstring)."""

    BEFORE, IN, DONE = 0, 1, 2

    def __init__(self):
        self.state = StepProgram.BEFORE
        self._values = {}      # tensor key -> value id
        self._by_storage = {}  # storage address -> the keys over it
        self._stale = set()    # keys whose value a write through another view changed
        self._storages = []    # the storages of the step's values: alive until it ends, so no address is reused
        self._refs = {}        # value id -> weakref of the tensor that holds it
        self._next = 0
        self.calls = []        # [entry index, [input value ids], [output value ids (-1: not a tensor)]]
        self.inputs = []       # value ids read from outside the step, in order of first use
        self._input_keys = {}  # value id -> key, of the inputs
        self.untracked_writes = 0
        self.saw_backward = False
        self.begin = None      # (file, line) of the step's first call
        self.end = None        # (file, line) of what ended it
        self.end_kind = None   # `optimizer_step`, `step_boundary`, `second_forward`, `script_end`
        self._modules = []     # weakrefs of root modules whose forward ran in the step
        self._optimizers = []  # weakrefs of optimizers whose step ran
        self._mutated = {}     # id(_OpInfo) -> per schema argument: whether the op writes it
        self.outputs = None    # [(value id, kind, name, input index or None)] once the step ended
        self.input_names = None
        self._marks = {}       # tensor key -> (mesh, per dimension the mesh axes splitting it): xs.mark_sharding
        self._marked = []      # the marked tensors' storages, kept alive so no address is reused
        self.mesh = None       # (shape, devices) of the mesh the step's inputs are marked over
        self.input_shardings = None

    # -- the step's extent --------------------------------------------------------------------------
    def on_root_module(self, module):
        if self.state != StepProgram.DONE and not any(r() is module for r in self._modules):
            self._modules.append(weakref.ref(module))

    def on_backward(self):
        if self.state == StepProgram.IN:
            self.saw_backward = True

    def on_optimizer_step(self, optimizer, loc):
        if self.state == StepProgram.IN:
            if not any(r() is optimizer for r in self._optimizers):
                self._optimizers.append(weakref.ref(optimizer))
            self._finish("optimizer_step", loc)

    def on_boundary(self, loc):
        if self.state == StepProgram.IN and self.calls:
            self._finish("step_boundary", loc)

    def on_script_end(self):
        if self.state == StepProgram.IN:
            self._finish("script_end", None)

    def on_mark_sharding(self, t, mesh, partition_spec):
        """xs.mark_sharding(t, mesh, partition_spec): a tensor the script shards itself, before or during the step.
        Each entry of the spec is a mesh axis (its name or index), a tuple of them, or None (not split)."""
        if self.state == StepProgram.DONE or not isinstance(t, _TENSOR):
            return
        storage = _storage_of(t)
        shape = tuple(int(n) for n in getattr(mesh, "mesh_shape", ()) or ())
        if storage is None or not shape:
            return
        names = list(getattr(mesh, "axis_names", None) or ())

        def axis(a):
            if isinstance(a, str):
                return names.index(a) if a in names else None
            return int(a) if isinstance(a, int) and 0 <= a < len(shape) else None

        dims = []
        for entry in tuple(partition_spec):
            group = entry if isinstance(entry, (tuple, list)) else (entry,)
            axes = [axis(a) for a in group if a is not None]
            if any(a is None for a in axes):
                return  # an axis the mesh does not have: torch_xla refuses it too
            dims.append(axes)
        try:
            devices = [int(d) for d in list(getattr(mesh, "device_ids", ()))]
        except (TypeError, ValueError):
            return
        self._marks[_key(t, storage)] = ((shape, tuple(devices)), dims)
        self._marked.append(storage)

    # -- calls --------------------------------------------------------------------------------------
    def on_call(self, info, entry_index, args, kwargs, out, phase, in_module, grad_enabled, loc):
        if self.state == StepProgram.DONE:
            return
        mutated = self._mutated.get(id(info))
        if mutated is None:
            mutated = self._mutated[id(info)] = self._writes(info)
        values = info.values(args, kwargs)
        if self.state == StepProgram.BEFORE:
            if not (in_module or (grad_enabled and _requires_grad(values))):
                return
            self.state = StepProgram.IN
            self.begin = loc
        elif phase == "forward" and self.saw_backward and in_module:
            self._finish("second_forward", loc)
            return
        inputs = []
        written = []
        for v, writes in zip(values, mutated):
            for t in _tensors_of(v):
                inputs.append(self._read(t))
                if writes:
                    written.append(t)
        for t in written:
            self._overwritten(t)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        flat = []
        for o in outs:
            if isinstance(o, (tuple, list)) and o and all(isinstance(x, _TENSOR) for x in o):
                flat.extend(o)
            elif o is not None:
                flat.append(o)
        if not flat and written:
            flat = written  # an in-place op that returns nothing (_foreach_add_): its values are what it wrote
        out_ids = [self._made(o) if isinstance(o, _TENSOR) else -1 for o in flat]
        # An in-place call returns the tensor it wrote; on fake tensors over a real (or meta) one it returns the fake
        # copy, so the written tensor's own data is named the new value too.
        returned = [o for o in flat if isinstance(o, _TENSOR)]
        if written and len(returned) == len(written):
            for t, o, vid in zip(written, returned, [v for v in out_ids if v >= 0]):
                if o is not t:
                    storage = _storage_of(t)
                    if storage is not None:
                        self._put(_key(t, storage), vid, storage)
        self.calls.append([entry_index, inputs, out_ids])

    @staticmethod
    def _writes(info):
        schema = info.func._schema
        out = []
        for a in schema.arguments:
            alias = getattr(a, "alias_info", None)
            out.append(bool(alias is not None and getattr(alias, "is_write", False)))
        return out

    def _read(self, t):
        storage = _storage_of(t)
        if storage is None:
            return self._new_input(t, None, None)
        k = _key(t, storage)
        vid = self._values.get(k)
        if vid is not None:
            return vid
        if vid is None and k in self._stale:
            self.untracked_writes += 1
        return self._new_input(t, storage, k)

    def _overwritten(self, t):
        """A call wrote t: what the other views of its storage held is stale (t's own key gets the call's output)."""
        storage = _storage_of(t)
        if storage is None:
            return
        k = _key(t, storage)
        for other in self._by_storage.get(storage._cdata, ()):
            if other != k and self._values.pop(other, None) is not None:
                self._stale.add(other)

    def _put(self, k, vid, storage):
        self._values[k] = vid
        self._stale.discard(k)
        self._by_storage.setdefault(k[0], set()).add(k)
        self._storages.append(storage)

    def _new_input(self, t, storage, k):
        vid = self._next
        self._next += 1
        self.inputs.append(vid)
        if k is not None:
            self._put(k, vid, storage)
            self._input_keys[vid] = k
        self._refs[vid] = weakref.ref(t)
        return vid

    def _made(self, t):
        vid = self._next
        self._next += 1
        storage = _storage_of(t)
        if storage is not None:
            self._put(_key(t, storage), vid, storage)
        self._refs[vid] = weakref.ref(t)
        return vid

    # -- the end of the step ------------------------------------------------------------------------
    def _finish(self, kind, loc):
        self.state = StepProgram.DONE
        self.end_kind = kind
        self.end = loc
        names = self._known_tensors()
        # Every input by its kind and name.
        self.input_names = []
        for vid in self.inputs:
            k = self._input_keys.get(vid)
            self.input_names.append(names.get(k, ("data", "")))
        # The script's own shardings of its inputs, over the first mesh one of them is marked over.
        self.input_shardings = []
        for vid in self.inputs:
            mark = self._marks.get(self._input_keys.get(vid))
            if mark is not None and self.mesh is None:
                self.mesh = mark[0]
            self.input_shardings.append(mark[1] if mark is not None and mark[0] == self.mesh else None)
        self._marks = {}
        self._marked = []
        # The outputs: values still held by a live tensor whose data is still that value, in the order they were
        # made; a value written over an input's data is that input's update (aliased to it, donated).
        input_at = dict((k, i) for i, k in enumerate(self._input_keys.get(v) for v in self.inputs) if k is not None)
        outputs = []
        done = set()
        # An input whose data now holds another value: that value updates it (the input's tensor is alive: the
        # parameter, the optimizer's state).
        for k, i in input_at.items():
            vid = self._values.get(k)
            if vid is not None and vid != self.inputs[i]:
                kind_name = names.get(k, ("output", ""))
                outputs.append((vid, kind_name[0], kind_name[1], i))
                done.add(vid)
        made = set(v for v in self._refs if v not in self._input_keys and v not in done)
        for vid in sorted(made):
            t = self._refs[vid]()
            if t is None:
                continue
            storage = _storage_of(t)
            if storage is None:
                continue
            k = _key(t, storage)
            if self._values.get(k) != vid:
                continue
            kind_name = names.get(k, ("output", ""))
            outputs.append((vid, kind_name[0], kind_name[1], input_at.get(k)))
        outputs.sort(key=lambda o: o[0])  # in the order they were made
        self.outputs = outputs
        # Nothing of the step is needed any more.
        self._values = {}
        self._by_storage = {}
        self._stale = set()
        self._storages = []
        self._refs = {}

    def _known_tensors(self):
        """key -> (kind, name) of the tensors the step's modules and optimizers hold."""
        names = {}

        def put(t, kind, name):
            if isinstance(t, _TENSOR):
                s = _storage_of(t)
                if s is not None:
                    names.setdefault(_key(t, s), (kind, name))

        params = {}
        for i, ref in enumerate(self._modules):
            m = ref()
            if m is None:
                continue
            prefix = "" if len(self._modules) == 1 else "%d." % i
            for n, p in m.named_parameters():
                params[id(p)] = prefix + n
                put(p, "parameter", prefix + n)
                put(p.grad, "gradient", prefix + n + ".grad")
            for n, b in m.named_buffers():
                put(b, "buffer", prefix + n)
        for ref in self._optimizers:
            opt = ref()
            if opt is None:
                continue
            for group in opt.param_groups:
                for p in group["params"]:
                    name = params.get(id(p), "param")
                    put(p, "parameter", name)
                    put(p.grad, "gradient", name + ".grad")
                    for sk, sv in opt.state.get(p, {}).items():
                        put(sv, "optimizer_state", "%s.%s" % (name, sk))
        return names

    # -- the trace's `program` object ---------------------------------------------------------------
    def to_json(self):
        """None when no step began."""
        if self.state == StepProgram.BEFORE:
            return None
        if self.state == StepProgram.IN:
            self.on_script_end()

        def place(loc):
            return None if loc is None else {"file": loc[0], "line": loc[1]}

        out = {
            "scope": "first training step",
            "begin": place(self.begin),
            "end": place(self.end),
            "end_kind": self.end_kind,
            "calls": self.calls,
            "inputs": [dict([("value", v), ("kind", kn[0]), ("name", kn[1])] +
                            ([("sharding", sh)] if sh is not None else []))
                       for v, kn, sh in zip(self.inputs, self.input_names, self.input_shardings)],
            "outputs": [dict([("value", v), ("kind", kind), ("name", name)] +
                             ([("aliases", alias)] if alias is not None else [])) for v, kind, name, alias in
                        self.outputs],
        }
        if self.untracked_writes:
            out["untracked_writes"] = self.untracked_writes
        if self.mesh is not None:
            out["mesh"] = {"shape": list(self.mesh[0]), "devices": list(self.mesh[1])}
        return out


def _tensors_of(v):
    if isinstance(v, _TENSOR):
        return (v,)
    if isinstance(v, (list, tuple)):
        return tuple(x for x in v if isinstance(x, _TENSOR))
    return ()


def _requires_grad(values):
    for v in values:
        for t in _tensors_of(v):
            if t.requires_grad:
                return True
    return False
