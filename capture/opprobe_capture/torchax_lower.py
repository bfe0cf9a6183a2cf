"""torchax's own lowering of each call of a trace (`opprobe analyze --lowering torchax`).

    python .../opprobe_capture torchax-lower [--hlo] [--platform cpu|cuda|tpu] TRACE.json OUT.json

Run by opprobe with the script's Python, where torchax is installed. For every call of the trace (schemas/trace.schema
.json), in order, the call is rebuilt from its recorded arguments (tensors as JAX abstract values of their shapes and
dtypes) and lowered the way torchax runs it: torchax's environment dispatches the aten op to its own op table
(torchax's jaten/jtorch functions and its decompositions), inside `jax.jit(...)`, exported with `jax.export` (the
StableHLO module JAX would compile, the CHLO ops XLA expands given with their decompositions). OUT.json:

    {"torchax": "0.0.13", "jax": "0.10.2", "platform": "tpu",
     "calls": [{"op": "aten::addmm", "overload": "default", "mlir": "module @jit_call ..."},
               {"op": "aten::adaptive_max_pool2d", "overload": "default",
                "error": "torchax 0.0.13 has no lowering for aten::adaptive_max_pool2d (OperatorNotFound)"}, ...]}

One entry per call of the trace, in its order: opprobe converts each module with its StableHLO loader and probes it
with the chosen backend; a call torchax cannot lower is listed with its error at each of its call sites (failureAt
`torchax`), and the rest of the script is still analyzed. Calls with the same op and arguments are lowered once.

`--platform` is the JAX platform the modules are exported for (default cpu): JAX lowers some ops per platform (linear
algebra is LAPACK custom calls on cpu, the TPU's own on tpu), and exports for a platform without its device. `--hlo`
also writes each module as JAX's own HLO text of the CPU lowering (`"hlo"`), for the comparison with opprobe's
lowering (tests/agreement/torchax_compare.py).

Dtypes are the ones PyTorch recorded: JAX's 64-bit types are on (torchax's `enable_accuracy_mode()` does the same),
so an int64 index stays int64 rather than torchax's default int32.
"""

import json
import sys


def _fail(message):
    sys.stderr.write("opprobe --lowering torchax: %s\n" % message)
    return 2


class _Unrebuildable(Exception):
    """An argument the trace recorded in a form that cannot be rebuilt (kind `other`)."""


def _is_default(arg, value):
    """Whether `value` is the schema argument's default (then PyTorch does not pass it)."""
    if not getattr(arg, "has_default_value", lambda: False)():
        return False
    d = arg.default_value
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "__tensor__":
        return False
    try:
        if isinstance(d, (list, tuple)) or isinstance(value, (list, tuple)):
            return list(d) == list(value) if isinstance(d, (list, tuple)) and isinstance(value, (list, tuple)) \
                else False
        return type(d) is type(value) and d == value or (d is None and value is None)
    except Exception:  # noqa: BLE001
        return False


def exported_text(fn_and_args, lowered, platform):
    """The module as jax.export writes it: the CHLO ops XLA expands into arithmetic (acos, lgamma, ...) come as
    composites with their decomposition, which opprobe's StableHLO reader uses (jit(...).lower(...)'s text has the bare
    CHLO op). Where export refuses the function (a random op's key, on another platform), jit's own lowering for the
    CPU."""
    try:
        from jax import export
        fn, args = fn_and_args
        return export.export(fn, platforms=[platform])(*args).mlir_module()
    except Exception:  # noqa: BLE001  (a function export does not take: jit's own lowering, for the CPU)
        return lowered.as_text()


def main(argv):
    want_hlo, platform = False, "cpu"
    while argv and argv[0] in ("--hlo", "--platform"):
        if argv[0] == "--hlo":
            want_hlo, argv = True, argv[1:]
        elif len(argv) > 1 and argv[1] in ("cpu", "cuda", "tpu"):
            platform, argv = argv[1], argv[2:]
        else:
            return _fail("--platform needs cpu, cuda or tpu")
    if len(argv) != 2:
        return _fail("usage: python .../opprobe_capture torchax-lower [--hlo] [--platform cpu|cuda|tpu] TRACE.json "
                     "OUT.json")
    trace_path, out_path = argv
    try:
        import torch
        import jax
        import torchax
        from torchax import tensor as tx_tensor
        from torchax.ops import mappings
    except Exception as e:  # noqa: BLE001  (any import failure: torchax is not usable with this Python)
        return _fail("cannot import torchax with %s (%s: %s)" % (sys.executable, type(e).__name__, e))
    jax.config.update("jax_enable_x64", True)
    version = getattr(torchax, "__version__", "?")
    who = "torchax %s" % version
    try:
        with open(trace_path) as f:
            trace = json.load(f)
    except (OSError, ValueError) as e:
        return _fail("cannot read the trace %s: %s" % (trace_path, e))

    env = torchax.default_env()
    OperatorNotFound = getattr(tx_tensor, "OperatorNotFound", ())

    def torch_dtype(name):
        dt = getattr(torch, name, None)
        if not isinstance(dt, torch.dtype):
            raise _Unrebuildable("dtype %s" % name)
        return dt

    def abstract(meta):
        dt = torch_dtype(meta["dtype"])
        return jax.ShapeDtypeStruct(tuple(meta["shape"]), mappings.t2j_dtype(dt))

    def decode(value, tensors):
        """A recorded value as the argument torchax gets; tensors become slots filled inside the jitted function."""
        kind = value["kind"]
        if kind == "none":
            return None
        if kind == "tensor":
            tensors.append(abstract(value))
            return ("__tensor__", len(tensors) - 1)
        if kind == "tensor_list":
            out = []
            for m in value["value"]:
                if m is None:
                    out.append(None)
                else:
                    tensors.append(abstract(m))
                    out.append(("__tensor__", len(tensors) - 1))
            return out
        if kind in ("int", "float", "bool", "string", "int_list", "float_list", "bool_list", "string_list"):
            return value["value"]
        if kind == "complex":
            return complex(value["real"], value["imag"])
        if kind == "dtype":
            return torch_dtype(value["value"])
        if kind == "layout":
            return getattr(torch, value["value"])
        if kind == "memory_format":
            return getattr(torch, value["value"])
        if kind == "device":
            return "jax"  # the recorded device (cpu, or the stand-in's) is torchax's here
        raise _Unrebuildable("argument of kind %s (%s)" % (kind, value.get("type", "?")))

    def fill(x, arrays):
        if isinstance(x, tuple) and len(x) == 2 and x[0] == "__tensor__":
            return arrays[x[1]]
        if isinstance(x, list):
            return [fill(y, arrays) for y in x]
        return x

    def lower(call):
        ns, _, name = call["op"].partition("::")
        packet = getattr(getattr(torch.ops, ns, None), name, None)
        func = getattr(packet, call.get("overload", "default"), None) if packet is not None else None
        if func is None:
            return {"error": "%s: PyTorch %s has no operator %s.%s" % (who, torch.__version__, call["op"],
                                                                          call.get("overload", "default"))}
        try:
            env._get_op_or_decomp(func)
        except OperatorNotFound:
            return {"error": "%s has no lowering for %s (OperatorNotFound)" % (who, call["op"])}
        except Exception as e:  # noqa: BLE001
            return {"error": "%s has no lowering for %s (%s: %s)" % (who, call["op"], type(e).__name__, e)}
        direct = None
        if call["op"] == "aten::_local_scalar_dense":
            # `.item()`: the value leaves the device, which torchax does eagerly (a host read, no device computation);
            # in the program it is the scalar itself, as in opprobe's own lowering.
            direct = lambda t: t.reshape(())  # noqa: E731
        by_name = {a["name"]: a["value"] for a in call.get("args", [])}
        outputs = call.get("outputs", [])

        def build(default_dtype):
            """(abstract tensors, args, kwargs) of the call; `default_dtype`: a dtype left at None is given as the one
            PyTorch made (its default dtype, resolved where the call ran; JAX's in 64-bit mode is float64)."""
            tensors, args, kwargs, pending = [], [], {}, []
            for i, a in enumerate(func._schema.arguments):
                if a.name in by_name:
                    v = decode(by_name[a.name], tensors)
                elif i < len(call.get("args", [])) and "name" not in call["args"][i]:
                    v = decode(call["args"][i]["value"], tensors)
                else:
                    continue  # left at its default
                if default_dtype and a.name == "dtype" and v is None:
                    v = torch_dtype(outputs[0]["dtype"])
                if _is_default(a, v):
                    # PyTorch leaves an argument at its default out of what it hands a dispatch mode: so does this
                    # (torchax's functions take the arguments PyTorch passes them).
                    if not a.kwarg_only:
                        pending.append(v)
                    continue
                args.extend(pending)
                pending.clear()
                if a.kwarg_only:
                    kwargs[a.name] = v
                else:
                    args.append(v)
            return tensors, args, kwargs

        lowered_fn = [None]

        def attempt(default_dtype):
            tensors, args, kwargs = build(default_dtype)

            def run(*arrays):
                views = env.j2t_iso(list(arrays))
                a, k = fill(args, views), {n: fill(v, views) for n, v in kwargs.items()}
                with env:
                    out = env.dispatch(func, None, tuple(a), k) if direct is None else direct(*a, **k)
                flat = [x for x in torch.utils._pytree.tree_flatten(out)[0] if isinstance(x, torch.Tensor)]
                return tuple(env.t2j_iso(flat))

            jitted = jax.jit(run)
            out = jitted.lower(*tensors)
            lowered_fn[0] = (jitted, tensors)
            return out

        def recorded_dtype_differs(lowered):
            try:
                got = [str(x.dtype) for x in jax.tree_util.tree_leaves(lowered.out_info)]
            except Exception:  # noqa: BLE001
                return False
            want = [o["dtype"] for o in outputs if o.get("kind") == "tensor"]
            return bool(got) and bool(want) and got[0] != str(jax.numpy.dtype(mappings.t2j_dtype(torch_dtype(want[0]))))

        try:
            lowered = attempt(False)
            can_fill = bool(outputs) and outputs[0].get("kind") == "tensor" and any(
                a.name == "dtype" for a in func._schema.arguments) and by_name.get("dtype", {}).get("kind") == "none"
            if can_fill and recorded_dtype_differs(lowered):
                try:
                    lowered = attempt(True)
                except Exception:  # noqa: BLE001  (torchax's function takes no dtype: its own default stands)
                    pass
            text = exported_text(lowered_fn[0], lowered, platform)
            hlo = lowered.as_text(dialect="hlo") if want_hlo else None
        except _Unrebuildable as e:
            return {"error": "opprobe cannot rebuild the arguments of %s for %s: %s" % (call["op"], who, e)}
        except OperatorNotFound as e:
            return {"error": "%s has no lowering for an op %s decomposes into (OperatorNotFound: %s)"
                             % (who, call["op"], str(e).splitlines()[0] if str(e) else "")}
        except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError,
                jax.errors.TracerBoolConversionError, jax.errors.TracerIntegerConversionError) as e:
            return {"error": "%s runs %s only eagerly, on a value it reads to the host (its result depends on the "
                             "data): it cannot be compiled (%s)" % (who, call["op"], type(e).__name__)}
        except Exception as e:  # noqa: BLE001  (torchax's lowering raised: the call does not run under torchax)
            msg = str(e).strip().splitlines()
            return {"error": "%s cannot lower %s (%s: %s)" % (who, call["op"], type(e).__name__,
                                                              msg[0][:300] if msg else "")}
        return {"mlir": text, "hlo": hlo} if want_hlo else {"mlir": text}

    done = {}
    out_calls = []
    for call in trace.get("calls", []):
        key = json.dumps([call.get("op"), call.get("overload"), call.get("args")], sort_keys=True)
        entry = done.get(key)
        if entry is None:
            entry = done[key] = lower(call)
        rec = {"op": call.get("op"), "overload": call.get("overload", "default")}
        rec.update(entry)
        out_calls.append(rec)
    doc = {"torchax": version, "jax": jax.__version__, "platform": platform, "calls": out_calls}
    try:
        with open(out_path, "w") as f:
            json.dump(doc, f)
    except OSError as e:
        return _fail("cannot write %s: %s" % (out_path, e))
    return 0

