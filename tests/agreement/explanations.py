"""Why verdict sources differ on a unit: each known difference, stated once, matched to the units it explains.

scripts/agreement.py writes the matching explanation next to every disagreement in docs/agreement.md; a disagreement no
rule here explains reads "not known yet", so a new kind of difference is visible rather than silently accepted.
Each finding about IREE was reproduced outside opprobe (jax.jit's own HLO, converted and compiled the same way) before
it was written down here."""

import re

GENERAL = [
    "- Random number generators (`rng`, `rng-bit-generator`) run but are not compared: which numbers a",
    "  generator draws is the implementation's choice (XLA's and IREE's streams are not interp's).",
    "- Reductions (`reduce`, `reduce-window`, `select-and-scatter`) get their reducer's identity as init",
    "  value instead of a random one (add, multiply, and, or; maximum and minimum of floats and integers; the",
    "  (value, index) reducers of argmax/argmin as (lowest or largest value, 0)): XLA only defines reductions whose",
    "  init is an identity and may apply it any number of times or drop it, and a padded `reduce-window` pads with",
    "  it, so a random init would measure the compiler's reduction tree, not the op.",
    "- A `set-dimension-size`'s size is its bound, the one valid size whose every output element is defined: XLA's",
    "  CPU runtime dies with SIGSEGV on a negative size (reproduced with jaxlib 0.10.2: `f32[<=100]",
    "  set-dimension-size(f32[100], s32[])` runs with sizes 0 to 150 and crashes with -1 or -6, the random size it",
    "  was given before), and elements past a dynamic size are undefined.",
    "- `dot`, `convolution` and reductions are compared with an absolute tolerance of at least rtol times",
    "  the output's largest magnitude: summation order is the compiler's choice, and sums that cancel to near zero",
    "  differ by rounding.",
    "- Both compilers are fed what jaxlib's HloModuleProto-to-StableHLO converter makes of the unit (the converter",
    "  jax uses), so a unit the converter cannot import is unsupported on both with the converter's message.",
    "- IREE is asked to keep f64 as f64 (`--iree-input-demote-f64-to-f32=false`; IREE demotes it to f32 by default)",
    "  and to generate code for the host CPU (`--iree-llvmcpu-target-cpu=host`).",
]

# Why a backend does not run a unit that another runs: (backend or None for any, pattern on its reason or a predicate
# over the unit, why). The first match wins.
RULES = [
    (None, "LiteralProto has no layout",
     "opprobe's HloModuleProto writer left a constant literal's shape without a layout, which jaxlib's converter "
     "refuses, so neither compiler saw the unit; XLA compiles constants in any real module. A gap in opprobe, not in "
     "the compilers: fixed since (hlo/proto_write.cpp writes a constant's literal and shape with one layout; "
     "backend versions carry proto-2), so a run after the fix no longer meets this reason."),
    ("xla:cpu", r"No registered implementation for untyped custom call to LuDecomposition for Host",
     "XLA's CPU runtime has no implementation of the LuDecomposition custom call (only XLA's TPU compiler expands "
     "it); interp evaluates it, and rules:cpu says unsupported, as xla:cpu does. opprobe's own lowerings no longer "
     "emit it (LU is a plain-HLO loop); it reaches a unit only from an HLO input that has it."),
    (None, lambda u: u["opcode"] == "custom-call" and "AwsNeuron" in u["signature"],
     "AWS Neuron's custom calls exist only in neuronx-cc; neither XLA's CPU compiler nor IREE implements them."),
    ("iree:llvm-cpu", r"undefined symbol: (\w+)",
     "IREE's llvm-cpu executables link no C math library: an f64 transcendental (tanh, sin, fmod, ...) becomes an "
     "undefined symbol. IREE demotes f64 to f32 by default for this reason; with f64 kept (as here, so that f64 is "
     "probed as f64) these units do not compile."),
    ("iree:llvm-cpu", r"Dialect `mhlo' not found for custom op 'mhlo\.(erf|return)'",
     "jaxlib's converter keeps HLO instructions that StableHLO has no op for (`erf`; a `fusion`'s body) as MHLO "
     "ops, and IREE reads only StableHLO and CHLO. A JAX program reaches IREE with `chlo.erf` instead, which IREE "
     "compiles: this is the converter's limit, not IREE's."),
    ("iree:llvm-cpu", r"failed to legalize operation 'stablehlo\.(fft|triangular_solve|cholesky)'",
     "IREE's StableHLO input conversion has no lowering for this op (fft, triangular_solve, cholesky) on llvm-cpu "
     "(reproduced for cholesky with a one-op StableHLO module, `stablehlo.cholesky %a, lower = true : "
     "tensor<5x5xf32>`, without opprobe or the converter)."),
    ("iree:llvm-cpu", r"failed to legalize operation 'stablehlo\.select_and_scatter'",
     "IREE lowers `select_and_scatter` only when its windows do not overlap: reproduced with one-op StableHLO "
     "modules, a 2x2 window with stride 2 and a 3x3 window with stride 3 compile, a 3x3 window with stride 2 (the "
     "max-pool backward of ResNet's stem) fails to legalize. XLA compiles all three."),
    ("iree:llvm-cpu", lambda u: "SIGFPE" in u["verdicts"]["iree:llvm-cpu"]["reason"] and u["opcode"] in (
        "dot", "scatter") and re.search(r"\[(0|\d+(,\d+)*,0)[,\]]|\[0\]", u["signature"]) is not None,
     "an IREE compiler crash: `iree-compile` dies with SIGFPE (a division by zero in its tiling) on a `dot` whose "
     "contracting dimension is 0 and on a `scatter` of 0 updates. Reproduced without opprobe: jax.jit's own "
     "StableHLO of `a @ b` with a f32[2,0] and b f32[0,2] crashes iree-compile (the same with f32[2,1] x f32[1,2] "
     "compiles), as does an empty `scatter_add` (indices s64[0,1]). XLA compiles both (the result is zeros, or "
     "the operand)."),
    ("iree:llvm-cpu", r"offset 0 is out-of-bounds: 0 >= 0",
     "an IREE compiler bug: a `set_dimension_size` of a dimension of size 0 fails IREE's own verifier (`offset 0 is "
     "out-of-bounds: 0 >= 0` in the tensor.extract_slice it builds). Reproduced with a one-op StableHLO module: "
     "tensor<0x1xi64> fails, tensor<2x1xi64> compiles. XLA runs it (an empty result)."),
    ("iree:llvm-cpu", lambda u: "ScfWhileOpConversion" in u["verdicts"]["iree:llvm-cpu"]["tail"],
     "an IREE compiler crash: `iree-compile` dies inside its `scf.while` conversion (ScfWhileOpConversion, "
     "applySignatureConversion) on this loop, the Poisson sampler's `while` over (f32[4], f32[4], f32[4], pred[]): "
     "with SIGSEGV in one run and SIGABRT from LLVM's `report_bad_alloc_error` in another, and again when the unit "
     "is probed alone by a fresh worker (the crashed units' recheck): a memory error in IREE's compiler. XLA "
     "compiles and runs the loop."),
    ("iree:llvm-cpu", lambda u: u["opcode"] == "rng" and "rng_normal" in u["signature"] and
     not u["signature"].startswith("f32["),
     "IREE expands a normal-distribution `rng` with f32 arithmetic only: for f64, f16 and bf16 its expansion "
     "broadcasts an f32 value into the result type and fails its own verifier (`'stablehlo.broadcast' op requires "
     "the same element type`). Reproduced with a one-op StableHLO module (`stablehlo.rng ..., distribution = "
     "NORMAL` of tensor<10xf64> fails, of tensor<10xf32> compiles)."),
    ("iree:llvm-cpu", lambda u: u["opcode"] == "scatter",
     "IREE does not drop scatter updates whose indices are out of bounds, as StableHLO's scatter specifies (XLA "
     "and interp drop them): it writes outside the buffer, so a unit run with opprobe's random indices may crash "
     "(SIGSEGV, `double free or corruption`), fail in IREE's runtime (`OUT_OF_RANGE`, `PERMISSION_DENIED` on a "
     "buffer) or give other numbers. Reproduced with jax.jit's `lax.scatter_add` (mode PROMISE_IN_BOUNDS, so "
     "jax adds no masking) into f32[10,5]: in-bounds indices give XLA's values exactly, out-of-range ones crash "
     "iree's runtime with SIGSEGV in one run and give values off by up to 19 in the next. PyTorch checks its "
     "indices, so models are unaffected."),
    ("iree:llvm-cpu", r"failed to legalize operation 'stablehlo\.custom_call'",
     "a custom call names a target of one compiler (XLA's CPU runtime, LAPACK, Neuron); IREE implements none of "
     "them."),
    ("iree:llvm-cpu", r"'linalg\.generic' op inferred input/output operand",
     "an IREE compiler bug: a convolution whose 3x3 window with stride 2 and padding 1 covers a 2x2 input (a 1x1 "
     "output) fails IREE's own verifier; reproduced with jax.jit's StableHLO of the same convolution, without "
     "opprobe or the converter."),
    ("iree:llvm-cpu", r"'stream\.async\.splat' op operand #0 must be .* but got 'i128'",
     "IREE cannot fill a buffer with a 128-bit value: a c128 `pad` (its padding value) does not compile."),
]

# Numbers that differ from interp: (backend or None, pattern on the reason or a predicate over the unit, why).
NUMBER_RULES = [
    (None, lambda u: u["opcode"] == "custom-call" and 'custom_call_target="Eigh"' in u["signature"] and all(
        v["reason"].startswith("numerics: output 0 ") for v in u["verdicts"].values()
        if v["reason"].startswith("numerics: ")),
     "eigenvectors (output 0 of XLA's `Eigh`) are unique only up to sign (and order among equal eigenvalues): XLA's "
     "Jacobi solver and interp pick different ones (f32: the same magnitudes, opposite signs). And XLA's Jacobi "
     "iteration stops at the tolerance the custom call's backend_config gives it (the lowering's `15` sweeps, "
     "`1e-5`), so its f64 eigenvectors agree with interp's to about 1e-8, not the f64 comparison's rtol "
     "1e-9. The comparison stops at the first differing output; the conformance suite, which aligns signs before "
     "comparing, finds opprobe's eigh/svd lowerings right against PyTorch."),
    ("iree:llvm-cpu", lambda u: u["opcode"] == "sort" and "is_stable=true" in u["signature"],
     "IREE's sort is not stable: `is_stable=true` is not honored, so equal keys come out in another order and the "
     "indices sorted with them differ (reproduced with a 64-element sort of repeated keys through jax.jit's own HLO)."),
    ("iree:llvm-cpu", lambda u: u["opcode"] == "scatter",
     "IREE does not drop scatter updates whose indices are out of bounds, as StableHLO's scatter specifies (XLA "
     "and interp drop them), and writes outside the buffer instead: opprobe's random indices hold out-of-range "
     "ones. Reproduced with jax.jit's `lax.scatter_add` (mode PROMISE_IN_BOUNDS) into f32[10,5]: in-bounds indices "
     "give XLA's values exactly, out-of-range ones give values off by up to 19 (or a crash). PyTorch checks its "
     "indices, so models are unaffected."),
    ("iree:llvm-cpu", lambda u: u["opcode"] == "gather",
     "IREE does not clamp out-of-range gather start indices as StableHLO's gather specifies (XLA and interp clamp); "
     "opprobe's random inputs hold out-of-range indices. Reproduced with jax.jit: indices [30, 2] into 24 elements "
     "give IREE 0 (an unclamped read) where XLA gives 23. PyTorch checks its indices, so models are unaffected."),
]

# opprobe's lowering against torch_xla's HLO for the same aten call: (predicate over the comparison's row, why).
def _txla(ops, test):
    """A rule for the rows of the given aten ops (names without the `aten::` prefix and overload) that pass test."""
    return lambda r: r["op"].split("::")[-1].split(".")[0] in ops and test(r)


def _has(side, *pairs):
    """A test that the row's `missing` (torch_xla has, opprobe not) or `extra` (opprobe has) holds every (opcode,
    element type) pair; "*" matches any element type."""
    return lambda r: all(any(o == op and (ty == "*" or t.split(",")[0] == ty) for o, t in r[side]) for op, ty in pairs)


TORCH_XLA_RULES = [
    (_txla({"sort", "argmax", "argmin", "max", "min", "topk", "kthvalue", "median", "mode", "msort", "argsort"},
           _has("missing", ("iota", "s32"), ("convert", "s64"))),
     "torch_xla builds indices as s32 (`iota` s32, sorted or reduced with the values) and converts them to s64 at the "
     "end; opprobe's lowering carries s64 indices throughout. Same results; a backend sees s64 index arithmetic from "
     "opprobe where torch_xla would give it s32."),
    (_txla({"amax", "amin", "max", "min"}, _has("extra", ("or", "pred"), ("select", "*"))),
     "opprobe's lowering makes NaN win the reduction explicitly (a pred `or`-reduction and a `select`), as PyTorch "
     "specifies; torch_xla's is a plain `maximum`/`minimum` reduction and relies on the backend propagating NaN."),
    (_txla({"max_pool2d_with_indices", "max_pool3d_with_indices"}, _has("missing", ("while", "*"))),
     "torch_xla computes the indices of a max pool with a `while` loop of dynamic slices (and its own "
     "select-and-scatter); opprobe's lowering uses one variadic (value, index) `reduce-window`."),
    (_txla({"convolution", "conv2d", "conv1d", "conv3d", "_convolution"}, lambda r: r["missing"] and all(
        o == "transpose" for o, _ in r["missing"]) and not r["extra"]),
     "torch_xla transposes the kernel before the convolution; opprobe's lowering states the layout in the "
     "convolution's dim_labels instead."),
    (_txla({"index_select", "gather", "take", "index"}, _has("missing", ("convert", "u32"))),
     "torch_xla converts the indices to u32 before gathering; opprobe's lowering gathers with the s64 indices "
     "(reshaped)."),
    (_txla({"remainder", "fmod"}, _has("missing", ("sign", "*"))),
     "torch_xla corrects XLA's truncating `remainder` by adding the divisor where the signs differ, computed with "
     "`sign`, `abs`, `multiply` and u8/float `convert`s; opprobe's lowering makes the same correction with compares "
     "joined by `and` and a `select`."),
    (_txla({"div"}, _has("missing", ("select", "*"))),
     "with a rounding_mode, torch_xla's HLO guards the sign of a NaN quotient with a `compare`/`select` pair that "
     "opprobe's lowering does not emit (results: see \"Results that differ\" below)."),
    (_txla({"randint", "randint_like"}, _has("missing", ("rng-bit-generator", "u64"))),
     "torch_xla draws integers from a u64 `rng-bit-generator` with bit arithmetic; opprobe's lowering floors a "
     "uniform f64 `rng`. rules:tpu, recorded from the TPU compiler (libtpu 0.0.42.1), refuses that f64 `rng` (its X64 "
     "rewrite does not implement it) and accepts torch_xla's 64-bit `bitcast-convert`, so opprobe's module is "
     "unsupported there and torch_xla's is not (before the profile was recorded, the other way round). A deliberate "
     "choice: opprobe asks a backend for the distribution, not for torch_xla's generator (random ops are not compared "
     "by value either); on TPU the choice costs a refusal the real torch_xla would not meet."),
    (_txla({"linalg_inv_ex", "_linalg_slogdet", "linalg_lu_factor_ex", "linalg_lu", "lu_unpack", "_linalg_det",
            "linalg_solve_ex", "_linalg_solve_ex"}, _has("missing", ("custom-call", "*"))),
     "torch_xla inverts a matrix (and takes slogdet) through XLA's `Qr` and `ProductOfElementaryHouseholderReflectors` "
     "custom calls, which the neuron profiles refuse (unknown custom-call targets, NCC_EHCA005); opprobe factorizes "
     "with LU with partial pivoting as a plain-HLO `while` loop (dynamic slices, selects, a rank-1 update) and two "
     "triangular solves, which they accept. Deliberate: plain HLO runs on every backend (XLA's own `LuDecomposition` "
     "custom call has an implementation on TPU only), and the results match PyTorch's."),
    (_txla({"_linalg_svd", "linalg_pinv", "linalg_svd", "svd", "linalg_matrix_rank", "pinverse"},
           _has("missing", ("while", "*"))),
     "**Lowering gap** (for Neuron). opprobe's lowering computes the SVD with XLA's `Eigh` custom call (of a "
     "matrix built by `concatenate`), which the neuron profiles refuse (unknown custom-call target, NCC_EHCA005); "
     "torch_xla expands the SVD into Jacobi `while` loops of plain arithmetic, which they accept."),
    (_txla({"cummax", "cummin"}, _has("extra", ("or", "pred"))),
     "both carry s32 indices in a variadic `reduce-window` and convert them to s64 at the end; opprobe's (value, "
     "index) reducer makes NaN win and prefers the later index on ties with explicit pred logic (`and`, `or`, "
     "`not`), as PyTorch specifies, where torch_xla's picks the index with a `minimum`."),
    (_txla({"_embedding_bag_forward_only", "_embedding_bag"}, _has("missing", ("while", "*"))),
     "torch_xla loops over the bags with `while` and dynamic slices; opprobe's lowering gathers the rows, sums each "
     "bag with one f32 `scatter`-add and counts its rows with a compare and a sum (no integer scatter-reduce, which "
     "the neuron profiles refuse, so they accept both)."),
    (_txla({"masked_scatter"}, _has("missing", ("set-dimension-size", "*"))),
     "torch_xla's HLO has dynamic shapes (`set-dimension-size`) and a sort, which the neuron profiles refuse; "
     "opprobe's lowering stays static (a prefix sum and a `gather`). Deliberate: the static form runs on more "
     "backends."),
    (_txla({"clone", "alias", "detach", "contiguous"}, lambda r: not r["missing"] and not r["extra"]),
     "no instruction computes anything on either side: torch_xla's module returns its c64 parameter in a `tuple`, "
     "which the neuron profiles judge like any instruction (complex types, NCC_EVRF004), while opprobe's lowering is "
     "the parameter itself, with no instruction to judge. Reproduced: `opprobe analyze` of torch_xla's two-line "
     "module under rules:neuron-trn1 flags the `tuple`. In a model the c64 value comes from an op the profiles "
     "flag (an FFT, a complex view), so the model's verdict is the same; deliberate: opprobe judges what a lowering "
     "computes, not the module's result packaging."),
    (_txla({"where"}, lambda r: r["missing"] == [("reshape", "pred")] and not r["extra"]),
     "torch_xla reshapes the condition before its `select` (opprobe broadcasts it); no other difference."),
]


def _runs(v):
    return v["kind"] == "supported" or v["reason"].startswith("numerics: ")


def _matches(pattern, unit, reason):
    if callable(pattern):
        return pattern(unit)
    return re.search(pattern, reason) is not None


def explain(a, b, unit):
    """Why a and b disagree on whether the unit runs (the one that does not run is explained), or None."""
    loser = a if not _runs(unit["verdicts"][a]) else b
    reason = unit["verdicts"][loser]["reason"]
    for backend, pattern, why in RULES:
        if backend in (None, loser) and _matches(pattern, unit, reason):
            return why
    return None


def explain_numbers(backend, unit):
    reason = unit["verdicts"][backend]["reason"]
    for b, pattern, why in NUMBER_RULES:
        if b in (None, backend) and _matches(pattern, unit, reason):
            return why
    return None


def explain_torch_xla(row):
    for pred, why in TORCH_XLA_RULES:
        if pred(row):
            return why
    return None
