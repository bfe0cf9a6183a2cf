"""JAX programs for the StableHLO conformance test (tests/stablehlo/README.md).

Run with the xla environment's Python (requirements/xla.txt):

    PYTHON tests/stablehlo/jax_programs.py OUT_DIR [NAME...]

For every program below it writes, into OUT_DIR:
  NAME.mlir         jax.jit(f).lower(*args).as_text(): the pretty form JAX prints
  NAME.debug.mlir   the same with debug_info=True: loc(...) on every op and #loc aliases
  NAME.generic.mlir the same module in MLIR's generic form ("stablehlo.add"(%a, %b) : (...) -> ...)
  NAME.export.mlir  jax.export's module text (Exported.mlir_module()), only where it differs from NAME.mlir
  NAME.hlo.pb       jaxlib's own StableHLO -> HLO conversion of NAME.mlir (HloModuleProto bytes)
  NAME.hlo.txt      the same as HLO text, for people reading a failure
  NAME.export.hlo.pb  jaxlib's conversion of NAME.export.mlir, where that exists
  NAME.debug.hlo.txt  jaxlib's conversion of NAME.debug.mlir as HLO text with metadata, each instruction's stack
                    frame written as the source_file/source_line of its first (innermost) frame
and a list of the names in OUT_DIR/programs.txt.
"""

import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

jax.config.update("jax_enable_x64", True)


def f32(*shape):
    return jax.ShapeDtypeStruct(shape, jnp.float32)


def typed(dtype, *shape):
    return jax.ShapeDtypeStruct(shape, dtype)


def _maxpool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 3, 3), (1, 1, 2, 2), "SAME")


def _avgpool(x):
    return lax.reduce_window(x, jnp.float32(0), lax.add, (1, 1, 2, 2), (1, 1, 2, 2), "VALID") / 4.0


def _while(x):
    return lax.fori_loop(0, 10, lambda i, v: v * 2.0 + i.astype(jnp.float32), x)


def _while_tuple(x, n):
    def cond(s):
        return s[0] < n

    def body(s):
        return s[0] + 1, s[1] + jnp.sin(s[1])

    return lax.while_loop(cond, body, (0, x))[1]


def _argmax(x):
    return jnp.argmax(x, axis=1)


def _scatter_set(x, i, u):
    return x.at[i].set(u)


def _scatter_add(x, i, u):
    return x.at[i].add(u)


def _scatter_max2d(x, i, u):
    return x.at[i, 1:3].max(u)


@jax.jit
def _inner(a, b):
    return jnp.tanh(a) * b


def _call(a, b):
    return _inner(a, b) + _inner(b, a)


def _while_single(x):
    return lax.while_loop(lambda v: jnp.sum(v) < 100.0, lambda v: v * 2.0, x)


def _switch_captures(i, a, b):
    return lax.switch(i, [lambda a, b: a * b, lambda a, b: a + jnp.exp(b)], a, b)


def _cond_constants(p):
    return lax.cond(p, lambda: jnp.ones(3, jnp.float32), lambda: jnp.zeros(3, jnp.float32))


def _cond(p, x):
    return lax.cond(p, lambda v: jnp.sin(v), lambda v: jnp.cos(v), x)


def _switch(i, x):
    return lax.switch(i, [jnp.sin, jnp.cos, jnp.exp], x)


def _rng_bits(key):
    return lax.rng_bit_generator(key, (4, 5), dtype=jnp.uint32)


def _sort2(k, v):
    return lax.sort((k, v), dimension=0, num_keys=1)


def _conv_nchw(x, w):
    return lax.conv_general_dilated(x, w, (2, 2), ((1, 1), (2, 2)), rhs_dilation=(1, 2),
                                    dimension_numbers=("NCHW", "OIHW", "NCHW"))


def _conv_nhwc_grouped(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=2,
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _conv_transpose(x, w):
    return lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _maxpool_grad(x, g):
    return jax.vjp(_maxpool, x)[1](g)[0]


def _gelu_mlp(x, w1, w2):
    return jax.nn.gelu(x @ w1, approximate=False) @ w2


def _softmax_ce(logits, labels):
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * jax.nn.one_hot(labels, 10), axis=-1))


def _train_step(w, x, y):
    def loss(w):
        return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

    g = jax.grad(loss)(w)
    return w - 0.1 * g


def _cumsum(x):
    return jnp.cumsum(x, axis=1)


def _dynamic(x, i, u):
    s = lax.dynamic_slice(x, (i, jnp.int32(0)), (2, 3))
    return lax.dynamic_update_slice(x, s + u, (jnp.int32(0), i))


def _gather_take(x, i):
    return jnp.take_along_axis(x, i, axis=1)


def _gather_index(x, i):
    return x[i]


def _bits(a, b):
    return (a & b) | (a ^ (b << 2)) | (lax.shift_right_logical(a, b)) | lax.shift_right_arithmetic(a, b) | ~a


def _int_ops(a, b):
    return (lax.rem(a, b) + lax.div(a, b) + lax.population_count(a) + lax.clz(a) + jnp.maximum(a, b) +
            jnp.minimum(a, b) + jnp.abs(a) + jnp.sign(a) + lax.integer_pow(a, 3))


def _compare(a, b):
    return jnp.stack([a == b, a != b, a < b, a <= b, a > b, a >= b])


def _compare_u(a, b):
    return jnp.stack([a < b, a >= b])


def _complex(re, im):
    c = lax.complex(re, im)
    return jnp.real(c * c) + jnp.imag(jnp.exp(c)) + jnp.abs(c)


def _fft(x):
    return jnp.fft.rfft(x).real + jnp.fft.ifft(jnp.fft.fft(x)).real[..., :5]


def _unary(x):
    return (jnp.exp(x) + jnp.expm1(x) + jnp.log(jnp.abs(x) + 1) + jnp.log1p(jnp.abs(x)) + jax.nn.sigmoid(x) +
            jnp.sqrt(jnp.abs(x)) + lax.rsqrt(jnp.abs(x) + 1) + jnp.cbrt(x) + jnp.sin(x) + jnp.cos(x) + jnp.tan(x) +
            jnp.tanh(x) + jnp.floor(x) + jnp.ceil(x) + jnp.round(x) + lax.round(x) + jnp.sign(x) - x +
            jnp.isfinite(x).astype(jnp.float32) + lax.erf(x) + jnp.arctan2(x, x + 1))


def _binary(a, b):
    return (a + b, a - b, a * b, a / b, jnp.maximum(a, b), jnp.minimum(a, b), lax.rem(a, b), lax.pow(a, b),
            jnp.where(a > b, a, b), jnp.clip(a, -1.0, 1.0), lax.clamp(b, a, b + 1))


def _convert(x):
    return (x.astype(jnp.bfloat16), x.astype(jnp.float16), x.astype(jnp.int32), x.astype(jnp.uint8),
            x.astype(jnp.bool_), x.astype(jnp.float64), lax.bitcast_convert_type(x, jnp.int32),
            lax.reduce_precision(x, 5, 10))


def _shapes(x):
    y = jnp.transpose(x, (2, 0, 1)).reshape(4, 6)
    z = jnp.concatenate([y, y[:, ::2]], axis=1)
    p = lax.pad(z, jnp.float32(0), ((1, 2, 0), (0, 1, 1)))
    return jnp.flip(p, axis=(0, 1)), jnp.broadcast_to(x[:, :1, :], (2, 3, 4)), jnp.arange(6) * 2, x[1:, ::2, 1:3]


def _dots(a, b, c):
    bmm = jnp.einsum("bij,bjk->bik", a, b)
    hp = jnp.dot(a[0], b[0], precision=lax.Precision.HIGHEST)
    mixed = lax.dot_general(c, c, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32)
    return bmm, hp, mixed


def _reduces(x):
    return jnp.sum(x, axis=0), jnp.max(x, axis=1), jnp.min(x), jnp.prod(x, axis=(0, 1)), jnp.any(x > 0, axis=1)


def _topk(x):
    return lax.top_k(x, 3)


def _sort(x):
    return jnp.sort(x, axis=1), jnp.argsort(x, axis=0, stable=True)


def _layernorm(x, g, b):
    m = jnp.mean(x, axis=-1, keepdims=True)
    v = jnp.var(x, axis=-1, keepdims=True)
    return (x - m) * lax.rsqrt(v + 1e-5) * g + b


def _barrier(x, y):
    a, b = lax.optimization_barrier((x, y))
    return a + b


def _iota_consts(x):
    c = jnp.array([[1.5, -2.0, 3.25], [0.0, 1e30, -0.0]], jnp.float32)
    i = jnp.array([1, 2, 3], jnp.int64)
    return x + c, i * 2, jnp.array([True, False]), jnp.array([1 + 2j], jnp.complex64) * 2


def _cholesky_solve(a, b):
    return lax.linalg.triangular_solve(a, b, left_side=True, lower=True, transpose_a=True)


def _custom_jvp(x):
    return jax.nn.relu(x) + jax.nn.softplus(x) + jax.nn.silu(x)


def _expand_dims(x):
    return jnp.expand_dims(x, 1).squeeze(), jnp.tile(x, (2, 1))


def _select_n(i, a, b, c):
    return lax.select_n(i, a, b, c)


def _mixed_dtypes(x, h):
    return (x.astype(jnp.bfloat16) * h).astype(jnp.float32).sum()


# name -> (function, example arguments); the set covers the op families of StableHLO that JAX emits.
PROGRAMS = {
    "unary": (_unary, (f32(3, 4),)),
    "binary": (_binary, (f32(2, 3), f32(2, 3))),
    "int_ops": (_int_ops, (typed(jnp.int32, 5), typed(jnp.int32, 5))),
    "bits": (_bits, (typed(jnp.uint32, 4), typed(jnp.uint32, 4))),
    "compare": (_compare, (f32(3), f32(3))),
    "compare_int": (_compare, (typed(jnp.int64, 3), typed(jnp.int64, 3))),
    "compare_unsigned": (_compare_u, (typed(jnp.uint16, 3), typed(jnp.uint16, 3))),
    "complex": (_complex, (f32(4), f32(4))),
    "convert": (_convert, (f32(2, 2),)),
    "shapes": (_shapes, (f32(2, 3, 4),)),
    "iota_consts": (_iota_consts, (f32(2, 3),)),
    "dots": (_dots, (f32(2, 3, 4), f32(2, 4, 5), typed(jnp.bfloat16, 3, 4))),
    "conv_nchw": (_conv_nchw, (f32(1, 3, 9, 9), f32(4, 3, 3, 3))),
    "conv_nhwc_grouped": (_conv_nhwc_grouped, (f32(2, 8, 8, 4), f32(3, 3, 2, 6))),
    "conv_transpose": (_conv_transpose, (f32(1, 5, 5, 3), f32(3, 3, 3, 2))),
    "reduces": (_reduces, (f32(4, 5),)),
    "argmax": (_argmax, (f32(3, 7),)),
    "maxpool": (_maxpool, (f32(1, 2, 8, 8),)),
    "avgpool": (_avgpool, (f32(1, 2, 8, 8),)),
    "maxpool_grad": (_maxpool_grad, (f32(1, 2, 8, 8), f32(1, 2, 4, 4))),
    "cumsum": (_cumsum, (f32(3, 6),)),
    "gather_take": (_gather_take, (f32(4, 5), typed(jnp.int32, 4, 2))),
    "gather_index": (_gather_index, (f32(6, 3), typed(jnp.int32, 4))),
    "scatter_set": (_scatter_set, (f32(6, 3), typed(jnp.int32, 2), f32(2, 3))),
    "scatter_add": (_scatter_add, (f32(6,), typed(jnp.int32, 3), f32(3))),
    "scatter_max2d": (_scatter_max2d, (f32(5, 4), typed(jnp.int32, 2), f32(2, 2))),
    "dynamic_slice": (_dynamic, (f32(4, 5), typed(jnp.int32), f32(2, 3))),
    "while": (_while, (f32(3),)),
    "while_tuple": (_while_tuple, (f32(2, 2), typed(jnp.int32))),
    "cond": (_cond, (typed(jnp.bool_), f32(3))),
    "cond_constants": (_cond_constants, (typed(jnp.bool_),)),
    "while_single": (_while_single, (f32(3),)),
    "switch_captures": (_switch_captures, (typed(jnp.int32), f32(2), f32(2))),
    "switch": (_switch, (typed(jnp.int32), f32(3))),
    "call": (_call, (f32(2, 2), f32(2, 2))),
    "sort": (_sort, (f32(3, 4),)),
    "sort_pairs": (_sort2, (f32(5), typed(jnp.int32, 5))),
    "top_k": (_topk, (f32(2, 8),)),
    "rng_bit_generator": (_rng_bits, (typed(jnp.uint64, 2),)),
    "fft": (_fft, (f32(3, 8),)),
    "triangular_solve": (_cholesky_solve, (f32(3, 3), f32(3, 2))),
    "gelu_mlp": (_gelu_mlp, (f32(4, 8), f32(8, 16), f32(16, 2))),
    "softmax_ce": (_softmax_ce, (f32(4, 10), typed(jnp.int32, 4))),
    "train_step": (_train_step, (f32(3, 2), f32(5, 3), f32(5, 2))),
    "layernorm": (_layernorm, (f32(2, 8), f32(8), f32(8))),
    "barrier": (_barrier, (f32(2), f32(2))),
    "activations": (_custom_jvp, (f32(6),)),
    "expand_dims": (_expand_dims, (f32(3),)),
    "select_n": (_select_n, (typed(jnp.int32, 4), f32(4), f32(4), f32(4))),
    "mixed_dtypes": (_mixed_dtypes, (f32(4), typed(jnp.bfloat16, 4))),
}


def write(path, data):
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(path, mode) as f:
        f.write(data)


def generic_text(text):
    """The module printed in MLIR's generic op form, through jaxlib's MLIR bindings."""
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import ir

    with jmlir.make_ir_context():
        module = ir.Module.parse(text)
        return module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)


def resolve_stack_frames(text):
    """HLO text with its FileNames/FunctionNames/FileLocations/StackFrames tables turned into source_file and
    source_line on each instruction (its first frame), and the tables left out."""
    import re

    lines = text.splitlines()
    tables, body, section = {}, [], None
    for line in lines:
        if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            section = line
            tables[section] = {}
            continue
        if section and line.strip() == "":
            continue
        if section and re.match(r"^\d+ ", line):
            key, _, value = line.partition(" ")
            tables[section][int(key)] = value
            continue
        section = None
        body.append(line)
    files = {k: v.strip('"') for k, v in tables.get("FileNames", {}).items()}
    locations = {}
    for k, v in tables.get("FileLocations", {}).items():
        fields = dict(re.findall(r"(\w+)=(\d+)", v))
        locations[k] = (files.get(int(fields.get("file_name_id", 0)), ""), int(fields.get("line", 0)))
    frames = {}
    for k, v in tables.get("StackFrames", {}).items():
        fields = dict(re.findall(r"(\w+)=(\d+)", v))
        frames[k] = locations.get(int(fields.get("file_location_id", 0)), ("", 0))

    def replace(m):
        file, line = frames.get(int(m.group(1)), ("", 0))
        return 'source_file="{}" source_line={}'.format(file, line)

    return re.sub(r"stack_frame_id=(\d+)", replace, "\n".join(body)) + "\n"


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    out = argv[1]
    names = argv[2:] or list(PROGRAMS)
    os.makedirs(out, exist_ok=True)
    from jax._src.lib import _jax

    for name in names:
        fn, args = PROGRAMS[name]
        lowered = jax.jit(fn).lower(*args)
        text = lowered.as_text()
        write(os.path.join(out, name + ".mlir"), text)
        write(os.path.join(out, name + ".debug.mlir"), lowered.as_text(debug_info=True))
        write(os.path.join(out, name + ".generic.mlir"), generic_text(text))
        def convert(mlir):
            return _jax.mlir.mlir_module_to_xla_computation(mlir, use_tuple_args=False, return_tuple=False)

        computation = convert(text)
        write(os.path.join(out, name + ".hlo.pb"), computation.as_serialized_hlo_module_proto())
        write(os.path.join(out, name + ".hlo.txt"), computation.as_hlo_text())
        debug = convert(lowered.as_text(debug_info=True))
        write(os.path.join(out, name + ".debug.hlo.txt"), resolve_stack_frames(debug.get_hlo_module().to_string()))
        exported = jax.export.export(jax.jit(fn))(*args).mlir_module()
        if exported != text:
            write(os.path.join(out, name + ".export.mlir"), exported)
            write(os.path.join(out, name + ".export.hlo.pb"), convert(exported).as_serialized_hlo_module_proto())
    write(os.path.join(out, "programs.txt"), "".join(n + "\n" for n in names))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
