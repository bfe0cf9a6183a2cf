"""The graphs torch_xla would compile for a captured script: its steps as lazy-tensor graphs (issue #28).

torch_xla runs nothing when a call is made: it records the call into a graph, and compiles and runs the graph when
a value is needed. A step boundary (xm.mark_step, torch_xla.sync, ...) runs the graph of every live tensor; a value
read on the host (`.item()`, printing a tensor, a Python branch on one: aten::_local_scalar_dense) runs the graph of
that tensor; an op torch_xla has no device lowering for (a CPU fallback: aten::nonzero) runs the graph of its inputs
and brings its outputs back as data. Each graph is compiled once per distinct structure: the same calls with the
same shapes and the same values where torch_xla bakes a value into the graph (sizes and indices from Python ints,
the exponent of pow, the special scalars 0 and 1 (and -1.0)), and not where it passes a value as data (any other
Scalar argument: a learning rate, a loss scale).

The capture runs the script on the CPU; a tensor is on the XLA device when the script moved it there
(`.to(xla_device)`, a factory with device=xla, `Module.to`) or a device tensor made it. StepGraphs follows the data
flow from call to call (which call made each input), and at each of the three kinds of cut builds the graph torch_xla
would build: the calls the cut's tensors depend on, in order, with the wiring between them. Kept free of syntax newer
than Python 3.6.
"""

import hashlib
import os
import weakref

import torch

# Ops torch_xla 2.9 has no device lowering for, run on the host: their inputs are materialized (a cut) and their
# outputs come back as device data. Each was seen in torch_xla's own `aten::` fallback counters (tests/e2e).
CPU_FALLBACK_OPS = frozenset(["aten::nonzero", "aten::masked_select", "aten::_unique2", "aten::unique_dim",
                              "aten::unique_consecutive"])
# A value read on the host: runs the graph of its input.
VALUE_READ_OPS = frozenset(["aten::_local_scalar_dense"])
# (op, argument) pairs whose Scalar torch_xla bakes into the graph whatever its value (seen: a pow exponent that
# changes each step compiles a new graph each step; a multiplier that changes does not).
BAKED_SCALARS = frozenset([("aten::pow", "exponent")])
_TENSOR = torch.Tensor


def _special(kind, v):
    """torch_xla's special scalars, kept in the graph as constants: integer 0 and 1, float 0.0 and +-1.0."""
    if kind == "int":
        return v in (0, 1)
    if kind == "float":
        return v == 0.0 or abs(v) == 1.0
    return False


def _ir_arg(op, name, declared, enc):
    """What of one encoded argument is part of torch_xla's graph: a tensor's dtype and shape, a baked value, or only
    that a Scalar is there (passed as data)."""
    kind = enc[0]
    if kind == "tensor":
        return ("T",) + tuple(enc[1:3])
    if declared.rstrip("?") == "Scalar" and kind in ("int", "float") and (op, name) not in BAKED_SCALARS:
        return enc[:2] if _special(kind, enc[1]) else ("scalar", kind)
    return enc


def _show(enc):
    """A short text of an encoded argument for a report: `f32[4,8]`, `3`, `[2, 4]`."""
    kind = enc[0]
    if kind == "tensor":
        return "%s%s" % (enc[1], list(enc[2]))
    if kind in ("int", "float", "bool", "string", "device", "dtype"):
        return str(enc[1])
    if kind in ("int_list", "float_list", "bool_list"):
        return str(list(enc[1]))
    if kind == "tensor_list":
        return "[%s]" % ", ".join("None" if m is None else "%s%s" % (m[0], list(m[1])) for m in enc[1])
    if kind == "none":
        return "None"
    return kind


def _tensors(v, out):
    if isinstance(v, _TENSOR):
        out.append(v)
    elif isinstance(v, (list, tuple)):
        for x in v:
            if isinstance(x, _TENSOR):
                out.append(x)
    return out


class _Event(object):
    __slots__ = ("ir", "inputs", "op", "loc", "shown", "dynamic")

    def __init__(self, ir, inputs, op, loc, shown, dynamic):
        self.ir = ir            # hashable: what torch_xla's graph holds of the call
        self.inputs = inputs    # per tensor input: ("e", event index, output position) or ("d", dtype, shape)
        self.op = op            # `aten::addmm`
        self.loc = loc          # (file, line)
        self.shown = shown      # the call's arguments as a report shows them
        self.dynamic = dynamic  # (op, loc) of a data-dependent op whose output this call reads, or None


class StepGraphs(object):
    """Follows the script's device calls and the graphs their cuts make (see the module's docstring)."""

    def __init__(self):
        self.active = False       # a tensor was moved to the XLA device
        self._device = {}         # id(tensor) -> weakref: tensors on the device
        self._producer = {}       # id(tensor) -> (weakref, event index, output position) for pending calls
        self._dynamic = {}        # id(tensor) -> (weakref, (op, loc)): outputs of a CPU fallback (data-dependent)
        self._pending = []        # _Event of calls not yet run
        self.step = 0
        self.graphs = []          # distinct graphs: {"events", "trigger", "step" that first ran it}
        self._by_signature = {}
        self.executions = []      # (step, graph index, trigger kind, trigger op, loc)
        self.suspended = 0        # > 0 while the host formats a tensor it read: those calls are no graph's
        self._declared = {}       # id(_OpInfo) -> {argument name: declared type}

    # -- where tensors live ------------------------------------------------------------------------
    def mark_device(self, t):
        if isinstance(t, _TENSOR):
            self._device[id(t)] = weakref.ref(t)
            self.active = True

    def on_device(self, t):
        r = self._device.get(id(t))
        return r is not None and r() is t

    def value_read(self, tensor, what, loc):
        """A read of a tensor's values that dispatches no aten call (printing it, .tolist(), .cpu(), ...)."""
        self._cut([tensor], "value_read", what, loc)

    def _ref(self, t):
        p = self._producer.get(id(t))
        if p is not None and p[0]() is t:
            return ("e", p[1], p[2])
        return ("d", str(t.dtype).replace("torch.", ""), tuple(t.shape))

    def _dynamic_of(self, tensors):
        for t in tensors:
            d = self._dynamic.get(id(t))
            if d is not None and d[0]() is t:
                return d[1]
        return None

    # -- calls ---------------------------------------------------------------------------------------
    def on_call(self, info, key, args, kwargs, out):
        """One recorded call; `key` is the recorder's key of it (op, overload, encoded args, encoded outputs, file,
        line, ...)."""
        if self.suspended:
            return
        flat = []
        for a in list(args) + (list(kwargs.values()) if kwargs else []):
            _tensors(a, flat)
        if not any(self.on_device(t) for t in flat):
            return  # a host computation (data loading, the model's initialisation before .to(device))
        op = key[0]
        loc = (key[4], key[5])
        outs = _tensors(out if isinstance(out, (list, tuple)) else [out], [])
        if op in VALUE_READ_OPS:
            self._cut(flat, "value_read", op, loc)
            return
        if op in CPU_FALLBACK_OPS:
            self._cut(flat, "cpu_fallback", op, loc)
            for o in outs:  # back on the device as data, of a size only the data decides
                self.mark_device(o)
                self._producer.pop(id(o), None)
                self._dynamic[id(o)] = (weakref.ref(o), (op, loc))
            return
        declared = self._declared.get(id(info))
        if declared is None:  # once per op (the recorder keeps one _OpInfo per op)
            declared = self._declared[id(info)] = dict((a[0], a[1]) for a in info.args)
        ir_args = tuple(_ir_arg(op, n, declared.get(n, ""), e) for n, e in key[2])
        refs = tuple(self._ref(t) for t in flat)
        ir = (op, key[1], ir_args, tuple(key[3]))
        shown = "%s(%s)" % (op, ", ".join(_show(e) for _, e in key[2] if e[0] != "none"))
        dynamic = self._dynamic_of(flat)
        index = len(self._pending)
        self._pending.append(_Event(ir, refs, op, loc, shown, dynamic))
        for pos, o in enumerate(outs):
            self.mark_device(o)
            self._producer[id(o)] = (weakref.ref(o), index, pos)
            if dynamic is not None:
                self._dynamic[id(o)] = (weakref.ref(o), dynamic)

    def on_boundary(self, kind, loc):
        """A step boundary: the graph of every live tensor runs."""
        roots = set()
        for ref, index, pos in list(self._producer.values()):
            if ref() is not None:
                roots.add((index, pos))
        self._run(roots, "step_end", kind, loc)
        self._pending = []
        self._producer = {}
        self.step += 1
        for table in (self._device, self._dynamic):  # forget tensors that are gone
            for k in [k for k, v in table.items() if (v() if isinstance(v, weakref.ref) else v[0]()) is None]:
                del table[k]

    # -- graphs --------------------------------------------------------------------------------------
    def _cut(self, tensors, kind, op, loc):
        roots = set()
        for t in tensors:
            r = self._ref(t)
            if r[0] == "e":
                roots.add((r[1], r[2]))
        self._run(roots, kind, op, loc)
        for t in tensors:  # now device data
            self._producer.pop(id(t), None)

    def _run(self, roots, kind, op, loc):
        if not roots:
            return  # nothing pending: torch_xla runs no graph
        keep = set()
        stack = [i for i, _ in roots]
        while stack:
            i = stack.pop()
            if i in keep:
                continue
            keep.add(i)
            for r in self._pending[i].inputs:
                if r[0] == "e":
                    stack.append(r[1])
        order = sorted(keep)
        local = dict((i, k) for k, i in enumerate(order))
        canon = []
        for i in order:
            ev = self._pending[i]
            ins = tuple(("e", local[r[1]], r[2]) if r[0] == "e" else r for r in ev.inputs)
            canon.append((ev.ir, ins))
        canon.append(tuple(sorted((local[i], p) for i, p in roots)))
        signature = hashlib.sha1(repr(canon).encode("utf-8")).hexdigest()
        graph = self._by_signature.get(signature)
        if graph is None:
            graph = self._by_signature[signature] = len(self.graphs)
            self.graphs.append({"events": [self._pending[i] for i in order], "trigger": (kind, op, loc),
                                "step": self.step})
        self.executions.append((self.step, graph, kind, op, loc))

    # -- the trace's `graphs` object -----------------------------------------------------------------
    def to_json(self):
        """None when the script never used the XLA device."""
        if not self.active:
            return None
        recompilations = []
        for g in range(1, len(self.graphs)):
            recompilations.append(self._explain(g))
        cuts = {}
        for _step, graph, kind, op, loc in self.executions:
            if kind == "step_end":
                continue
            c = cuts.setdefault((kind, op, loc), {"kind": kind, "op": op, "loc": {"file": loc[0], "line": loc[1]},
                                                  "count": 0, "graphs": set()})
            c["count"] += 1
            c["graphs"].add(graph)
        cut_list = []
        for c in sorted(cuts.values(), key=lambda c: (c["loc"]["file"], c["loc"]["line"], c["op"])):
            c["extra_graphs"] = len(c.pop("graphs"))
            cut_list.append(c)
        return {
            "model": "torch_xla lazy tensor",
            "steps": self.step,
            "executed_graphs": len(self.executions),
            "distinct_graphs": len(self.graphs),
            "recompilations": recompilations,
            "cuts": cut_list,
        }

    def _explain(self, g):
        """The first call of graph g that differs from the closest earlier graph, and why in words."""
        new = self.graphs[g]
        events = new["events"]
        best, best_prefix = 0, -1
        for k in range(g):
            old = self.graphs[k]["events"]
            n = 0
            while n < len(old) and n < len(events) and old[n].ir == events[n].ir:
                n += 1
            if n > best_prefix:
                best, best_prefix = k, n
        old = self.graphs[best]["events"]
        kind, op, loc = new["trigger"]
        out = {"step": new["step"], "graph": g, "closest": best,
               "trigger": {"kind": kind, "op": op, "loc": {"file": loc[0], "line": loc[1]}}}
        n = best_prefix
        if n < len(events):
            after = events[n]
            out["call"] = {"op": after.op, "loc": {"file": after.loc[0], "line": after.loc[1]}, "after": after.shown}
            if n < len(old):
                out["call"]["before"] = old[n].shown
            out["cause"] = self._cause(old[n] if n < len(old) else None, after, new["trigger"],
                                       self.graphs[best]["trigger"])
        else:
            out["cause"] = self._cut_cause(new["trigger"]) or "the graph stops earlier"
        return out

    @staticmethod
    def _cut_what(trigger):
        """What a cut was (`a CPU fallback (aten::nonzero) at train.py:37`); None for a step boundary."""
        kind, op, loc = trigger
        where = "%s:%d" % (os.path.basename(loc[0]), loc[1])
        if kind == "value_read":
            return "a value read on the host at %s (.item(), printing a tensor, a Python branch on one)" % where
        if kind == "cpu_fallback":
            return "a CPU fallback (%s) at %s" % (op, where)
        return None

    @staticmethod
    def _cut_cause(trigger):
        cut = StepGraphs._cut_what(trigger)
        return cut and cut + " cut the graph"

    def _cause(self, before, after, trigger, closest_trigger):
        if after.dynamic is not None:
            d_op, d_loc = after.dynamic
            return "a data-dependent shape: the output of %s at %s:%d" % (d_op, os.path.basename(d_loc[0]), d_loc[1])
        if trigger[0] != closest_trigger[0] and trigger[0] == "step_end" and self._cut_what(closest_trigger):
            # the rest of a step that a cut split in two
            return "the rest of the step after " + self._cut_what(closest_trigger)
        if before is None:
            return self._cut_cause(trigger) or "the graph holds more calls"
        if before.op != after.op:
            return self._cut_cause(trigger) or "a different call here (a Python branch or another code path)"
        b_args, a_args = before.ir[2], after.ir[2]
        b_shapes = [a for a in b_args if a[0] == "T"]
        a_shapes = [a for a in a_args if a[0] == "T"]
        if b_shapes != a_shapes:
            if any(r[0] == "d" for r in after.inputs):
                return "an input's shape changed"
            return "a shape changed upstream"
        if b_args != a_args:
            return "a size or value from Python baked into the graph changed"
        return self._cut_cause(trigger) or "a different graph around this call"
