// The HLO verifier (hlo/verifier.h) and the shape inference it shares with the parser (hlo/shape_inference.h):
// one failing module per check, each asserting the located one-line message the parser gives (file, the line
// and column of the instruction's name, computation and instruction), valid modules of every checked opcode
// passing, and the checks that only a module built in memory can reach (proto, lowering).
#include "hlo/verifier.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hlo/attributes.h"
#include "hlo/parser.h"
#include "hlo/proto_io.h"

namespace opprobe::hlo {
namespace {

struct BadCase {
  std::string what;     // the check
  std::string comps;    // computations before the entry
  std::string body;     // the entry's instructions
  std::string at;       // the instruction (or computation) the error names
  std::string message;  // a part of the message
};

std::string ModuleText(const std::string& comps, const std::string& body) {
  return "HloModule t\n\n" + comps + "ENTRY main {\n" + body + "\n}\n";
}

// `test.hlo:LINE:COL: ` of the first `  NAME = ` (or `ROOT NAME = `, or a computation `NAME {`) in the text.
std::string PlaceOf(const std::string& text, const std::string& name) {
  size_t line_start = 0;
  for (int line = 1; line_start < text.size(); ++line) {
    size_t end = text.find('\n', line_start);
    std::string l = text.substr(line_start, end == std::string::npos ? std::string::npos : end - line_start);
    for (const std::string& form : {"  " + name + " = ", "ROOT " + name + " = ", name + " {", name + " ("}) {
      size_t at = l.find(form);
      if (at == std::string::npos || (form[0] != ' ' && at != 0 && form.rfind("ROOT", 0) != 0)) continue;
      size_t col = at + (form.rfind("  ", 0) == 0 ? 2 : form.rfind("ROOT ", 0) == 0 ? 5 : 0) + 1;
      return "test.hlo:" + std::to_string(line) + ":" + std::to_string(col) + ": ";
    }
    if (end == std::string::npos) break;
    line_start = end + 1;
  }
  return "(not found)";
}

const char* const kAdd = "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n\n";
const char* const kLess =
    "less {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT c = pred[] compare(x, y), direction=LT\n}\n\n";

const std::vector<BadCase>& BadCases() {
  static const std::vector<BadCase> cases = {
      {"elementwise result", "", "a = f32[2] parameter(0)\n  ROOT r = f32[3] negate(a)", "r",
       "computation 'main', instruction 'r': negate has shape f32[3], its operands and attributes give f32[2]"},
      {"elementwise element type", "", "a = f32[2] parameter(0)\n  ROOT r = s32[2] negate(a)", "r",
       "negate has shape s32[2], its operands and attributes give f32[2]"},
      {"implicit broadcast", "", "a = f32[2] parameter(0)\n  b = f32[3] parameter(1)\n  ROOT r = f32[2] add(a, b)", "r",
       "add: operand 1 is f32[3], operand 0 is f32[2] (HLO has no implicit broadcast)"},
      {"binary element types", "", "a = f32[2] parameter(0)\n  b = s32[2] parameter(1)\n  ROOT r = f32[2] add(a, b)",
       "r", "add: operand 1 is s32[2], operand 0 is f32[2]"},
      {"compare", "", "a = f32[2] parameter(0)\n  ROOT r = pred[3] compare(a, a), direction=LT", "r",
       "compare has shape pred[3], its operands and attributes give pred[2]"},
      {"select predicate", "", "p = s32[2] parameter(0)\n  a = f32[2] parameter(1)\n  ROOT r = f32[2] select(p, a, a)",
       "r", "select's predicate is s32[2], not pred"},
      {"clamp bound", "", "a = f32[2] parameter(0)\n  b = f32[3] parameter(1)\n  ROOT r = f32[2] clamp(b, a, a)", "r",
       "clamp bound 0 is f32[3], the operand f32[2]"},
      {"convert dimensions", "", "a = f32[2] parameter(0)\n  ROOT r = s32[3] convert(a)", "r",
       "convert: the operand is f32[2], the result s32[3]: the dimensions differ"},
      {"bitcast-convert widths", "", "a = f32[2] parameter(0)\n  ROOT r = s16[2] bitcast-convert(a)", "r",
       "bit widths 32 and 16 do not match the dimensions"},
      {"broadcast dimensions", "", "a = f32[2] parameter(0)\n  ROOT r = f32[3,4] broadcast(a), dimensions={1}", "r",
       "broadcast: operand dimension 0 (2) does not match result dimension 1 (4)"},
      {"reshape element count", "", "a = f32[2,3] parameter(0)\n  ROOT r = f32[5] reshape(a)", "r",
       "reshape: f32[2,3] has 6 elements, the result f32[5] has 5"},
      {"transpose permutation", "", "a = f32[2,3] parameter(0)\n  ROOT r = f32[3,2] transpose(a), dimensions={0,0}",
       "r", "transpose: dimensions is not a permutation of the operand's dimensions"},
      {"slice bounds", "", "a = f32[4] parameter(0)\n  ROOT r = f32[2] slice(a), slice={[3:5]}", "r",
       "slice: slice [3:5:1] of dimension 0 outside f32[4]"},
      {"dynamic-slice sizes", "",
       "a = f32[4] parameter(0)\n  i = s32[] parameter(1)\n  ROOT r = f32[5] dynamic-slice(a, i), "
       "dynamic_slice_sizes={5}",
       "r", "dynamic-slice: slice size 5 of dimension 0 outside f32[4]"},
      {"dynamic-slice index type", "",
       "a = f32[4] parameter(0)\n  i = f32[] parameter(1)\n  ROOT r = f32[2] dynamic-slice(a, i), "
       "dynamic_slice_sizes={2}",
       "r", "dynamic-slice: start index 0 is f32[], not an integer"},
      {"dynamic-update-slice update", "",
       "a = f32[4] parameter(0)\n  u = f32[5] parameter(1)\n  i = s32[] parameter(2)\n"
       "  ROOT r = f32[4] dynamic-update-slice(a, u, i)",
       "r", "dynamic-update-slice: the update f32[5] is larger than the operand f32[4]"},
      {"pad", "", "a = f32[4] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[4] pad(a, z), padding=1_1", "r",
       "pad has shape f32[4], its operands and attributes give f32[6]"},
      {"concatenate", "",
       "a = f32[2,3] parameter(0)\n  b = f32[2,4] parameter(1)\n  ROOT r = f32[4,3] concatenate(a, b), dimensions={0}",
       "r", "concatenate: operand 1 is f32[2,4], operand 0 is f32[2,3]: only dimension 0 may differ"},
      {"reduce result", kAdd,
       "a = f32[2,3] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[3] reduce(a, z), dimensions={1}, "
       "to_apply=add",
       "r", "reduce has shape f32[3], its operands and attributes give f32[2]"},
      {"reducer signature", kLess,
       "a = f32[2,3] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[2] reduce(a, z), dimensions={1}, "
       "to_apply=less",
       "r", "reduce: reducer less returns pred[]"},
      {"reduce-window", kAdd,
       "a = f32[8] parameter(0)\n  z = f32[] constant(0)\n"
       "  ROOT r = f32[8] reduce-window(a, z), window={size=3 stride=2}, to_apply=add",
       "r", "reduce-window has shape f32[8], its operands and attributes give f32[3]"},
      {"select-and-scatter source", std::string(kAdd) + kLess,
       "a = f32[8] parameter(0)\n  s = f32[3] parameter(1)\n  z = f32[] constant(0)\n"
       "  ROOT r = f32[8] select-and-scatter(a, s, z), window={size=2 stride=2}, select=less, scatter=add",
       "r", "select-and-scatter: the source is f32[3], the window over f32[8] gives f32[4]"},
      {"dot contracting sizes", "",
       "a = f32[2,3] parameter(0)\n  b = f32[4,5] parameter(1)\n"
       "  ROOT r = f32[2,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
       "r", "dot: contracting dimensions differ in size: 1 of f32[2,3] and 0 of f32[4,5]"},
      {"dot result", "",
       "a = f32[2,3] parameter(0)\n  b = f32[3,5] parameter(1)\n"
       "  ROOT r = f32[2,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
       "r", "dot has shape f32[2,4], its operands and attributes give f32[2,5]"},
      {"convolution", "",
       "x = f32[1,3,8,8] parameter(0)\n  k = f32[4,3,3,3] parameter(1)\n"
       "  ROOT r = f32[1,4,8,8] convolution(x, k), window={size=3x3}, dim_labels=bf01_oi01->bf01",
       "r", "convolution has shape f32[1,4,8,8], its operands and attributes give f32[1,4,6,6]"},
      {"convolution feature groups", "",
       "x = f32[1,4,8,8] parameter(0)\n  k = f32[4,3,3,3] parameter(1)\n"
       "  ROOT r = f32[1,4,6,6] convolution(x, k), window={size=3x3}, dim_labels=bf01_oi01->bf01",
       "r", "input features 4 are not the kernel's input features 3 times feature_group_count 1"},
      {"gather", "",
       "a = f32[4,8] parameter(0)\n  i = s32[2,1] parameter(1)\n"
       "  ROOT r = f32[2,4] gather(a, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
       "index_vector_dim=1, slice_sizes={1,8}",
       "r", "gather has shape f32[2,4], its operands and attributes give f32[2,8]"},
      {"scatter updates", kAdd,
       "a = f32[4,8] parameter(0)\n  i = s32[2,1] parameter(1)\n  u = f32[2] parameter(2)\n"
       "  ROOT r = f32[4,8] scatter(a, i, u), update_window_dims={1}, inserted_window_dims={0}, "
       "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add",
       "r", "scatter: updates 0 has rank 1, the dimension numbers need 2"},
      {"sort comparator", kLess,
       "a = f32[4] parameter(0)\n  b = s32[4] parameter(1)\n"
       "  ROOT r = (f32[4], s32[4]) sort(a, b), dimensions={0}, to_apply=less",
       "r", "sort: comparator less takes 2 parameter(s), 2 operand(s) need 4"},
      {"iota dimension", "", "ROOT r = s32[4] iota(), iota_dimension=1", "r",
       "iota: iota_dimension 1 outside the result s32[4]"},
      {"reverse dimension", "", "a = f32[4] parameter(0)\n  ROOT r = f32[4] reverse(a), dimensions={1}", "r",
       "reverse: dimension 1 outside f32[4]"},
      {"tuple", "", "a = f32[4] parameter(0)\n  ROOT r = (f32[4], s32[]) tuple(a, a)", "r",
       "tuple has shape (f32[4], s32[]), its operands and attributes give (f32[4], f32[4])"},
      {"get-tuple-element", "", "a = (f32[4], s32[]) parameter(0)\n  ROOT r = f32[4] get-tuple-element(a), index=1",
       "r", "get-tuple-element has shape f32[4], its operands and attributes give s32[]"},
      {"while body",
       "body {\n  s = (s32[], f32[2]) parameter(0)\n  ROOT i = s32[] get-tuple-element(s), index=0\n}\n\n"
       "cond {\n  s = (s32[], f32[2]) parameter(0)\n  ROOT t = pred[] constant(true)\n}\n\n",
       "a = (s32[], f32[2]) parameter(0)\n  ROOT r = (s32[], f32[2]) while(a), condition=cond, body=body", "r",
       "while: while body body returns s32[], the loop state is (s32[], f32[2])"},
      {"while condition",
       "body {\n  ROOT s = (s32[], f32[2]) parameter(0)\n}\n\n"
       "cond {\n  s = (s32[], f32[2]) parameter(0)\n  ROOT i = s32[] get-tuple-element(s), index=0\n}\n\n",
       "a = (s32[], f32[2]) parameter(0)\n  ROOT r = (s32[], f32[2]) while(a), condition=cond, body=body", "r",
       "while: while condition cond must return pred[]"},
      {"conditional branches",
       "one {\n  ROOT x = f32[2] parameter(0)\n}\n\ntwo {\n  x = f32[3] parameter(0)\n  ROOT n = f32[3] "
       "negate(x)\n}\n\n",
       "p = pred[] parameter(0)\n  a = f32[2] parameter(1)\n  b = f32[3] parameter(2)\n"
       "  ROOT r = f32[2] conditional(p, a, b), true_computation=one, false_computation=two",
       "r", "conditional: branch two returns f32[3], branch one returns f32[2]"},
      {"call parameters", "callee {\n  x = f32[2] parameter(0)\n  ROOT n = f32[2] negate(x)\n}\n\n",
       "a = f32[3] parameter(0)\n  ROOT r = f32[2] call(a), to_apply=callee", "r",
       "call: called computation callee parameter 0 is f32[2], is given f32[3]"},
      {"map", "neg {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT n = f32[] add(x, y)\n}\n\n",
       "a = f32[2] parameter(0)\n  ROOT r = f32[2] map(a), dimensions={0}, to_apply=neg", "r",
       "map: mapped computation neg takes 2 parameter(s), is given 1"},
      {"fusion", "fused {\n  x = f32[2] parameter(0)\n  ROOT n = f32[2] negate(x)\n}\n\n",
       "a = f32[2] parameter(0)\n  ROOT r = f32[3] fusion(a), kind=kLoop, calls=fused", "r",
       "fusion has shape f32[3], its operands and attributes give f32[2]"},
      {"all-reduce", kAdd, "a = f32[2] parameter(0)\n  ROOT r = f32[3] all-reduce(a), to_apply=add", "r",
       "all-reduce has shape f32[3], its operands and attributes give f32[2]"},
      {"all-gather", "", "a = f32[2,3] parameter(0)\n  ROOT r = f32[8,4] all-gather(a), dimensions={0}", "r",
       "all-gather: operand 0 is f32[2,3], the result f32[8,4]: dimension 1 differs"},
      {"reduce-scatter", kAdd,
       "a = f32[8] parameter(0)\n  ROOT r = f32[3] reduce-scatter(a), dimensions={0}, to_apply=add", "r",
       "reduce-scatter: operand 0 is f32[8], the result f32[3]: dimension 0 is not a multiple"},
      {"collective-permute", "",
       "a = f32[2] parameter(0)\n  ROOT r = f32[4] collective-permute(a), source_target_pairs={{0,1}}", "r",
       "collective-permute has shape f32[4], its operands and attributes give f32[2]"},
      {"async-start state", "wrapped {\n  x = f32[2] parameter(0)\n  ROOT n = f32[2] negate(x)\n}\n\n",
       "a = f32[2] parameter(0)\n  ROOT r = f32[2] async-start(a), calls=wrapped", "r",
       "async-start needs an async state, a tuple of at least (operands, result); its shape is f32[2]"},
      {"async-done operand", "", "a = f32[2] parameter(0)\n  ROOT r = f32[2] async-done(a)", "r",
       "async-done needs an async state, a tuple of at least (operands, result); its operand is f32[2]"},
      {"copy-done of a copy-start", "",
       "a = f32[2] parameter(0)\n  s = (f32[2], f32[2], u32[]) copy-start(a)\n  ROOT r = f32[3] copy-done(s)", "r",
       "copy-done has shape f32[3], its operand 's' gives f32[2]"},
      {"rng parameters", "", "a = f32[2] parameter(0)\n  ROOT r = f32[4] rng(a, a), distribution=rng_uniform", "r",
       "rng: rng parameter 0 is f32[2], not a scalar"},
      {"rng-bit-generator state", "",
       "s = u64[2] parameter(0)\n  ROOT r = (u64[3], u32[4]) rng-bit-generator(s), algorithm=rng_default", "r",
       "rng-bit-generator: the result (u64[3], u32[4]) must be a tuple of the state u64[2] and the output"},
      {"triangular-solve", "",
       "a = f32[3,3] parameter(0)\n  b = f32[4,2] parameter(1)\n"
       "  ROOT r = f32[4,2] triangular-solve(a, b), left_side=true, transpose_a=NO_TRANSPOSE",
       "r", "triangular-solve: a f32[3,3] does not match b f32[4,2] on the left side"},
      {"cholesky", "", "a = f32[3,4] parameter(0)\n  ROOT r = f32[3,4] cholesky(a)", "r",
       "cholesky: cholesky's operand must be square matrices, is f32[3,4]"},
      {"fft", "", "a = f32[8] parameter(0)\n  ROOT r = c64[8] fft(a), fft_type=RFFT, fft_length={8}", "r",
       "fft has shape c64[8], its operands and attributes give c64[5]"},
      {"batch-norm features", "",
       "a = f32[2,3] parameter(0)\n  s = f32[4] parameter(1)\n"
       "  ROOT r = f32[2,3] batch-norm-inference(a, s, s, s, s), epsilon=0.001, feature_index=1",
       "r", "batch-norm-inference: operand 1 is f32[4], the operand has 3 features"},
      {"get-dimension-size", "", "a = f32[2] parameter(0)\n  ROOT r = s32[] get-dimension-size(a), dimensions={1}", "r",
       "get-dimension-size: dimensions must name one dimension of f32[2]"},
      {"set-dimension-size", "",
       "a = f32[4] parameter(0)\n  n = f32[] parameter(1)\n  ROOT r = f32[<=4] set-dimension-size(a, n), "
       "dimensions={0}",
       "r", "set-dimension-size: the size operand is f32[], not an integer scalar"},
  };
  return cases;
}

TEST(HloVerifier, EachViolationIsOneLocatedLine) {
  for (const BadCase& c : BadCases()) {
    const std::string text = ModuleText(c.comps, "  " + c.body);
    auto m = ParseModule(text, "test.hlo");
    ASSERT_FALSE(m.ok()) << c.what << ": accepted\n" << text;
    const std::string& msg = m.status().message();
    EXPECT_EQ(m.status().code(), ErrorCode::kInvalidInput) << c.what;
    EXPECT_EQ(msg.rfind(PlaceOf(text, c.at), 0), 0u) << c.what << ": " << msg << "\nwant " << PlaceOf(text, c.at);
    EXPECT_NE(msg.find(c.message), std::string::npos) << c.what << ": " << msg << "\nwant " << c.message;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << c.what;
  }
}

TEST(HloVerifier, ValidModulesOfEveryCheckedOpcodePass) {
  const std::string comps = std::string(kAdd) + kLess +
                            "less2 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = s32[] parameter(2)\n"
                            "  d = s32[] parameter(3)\n  ROOT l = pred[] compare(a, b), direction=LT\n}\n\n"
                            "body {\n  ROOT s = (s32[], f32[2]) parameter(0)\n}\n\n"
                            "cond {\n  s = (s32[], f32[2]) parameter(0)\n  ROOT t = pred[] constant(true)\n}\n\n"
                            "callee {\n  x = f32[2] parameter(0)\n  ROOT n = f32[2] negate(x)\n}\n\n"
                            "wrapped {\n  x = f32[2] parameter(0)\n  ROOT n = f32[2] negate(x)\n}\n\n";
  const std::string body =
      "  a = f32[2,3] parameter(0)\n"
      "  v = f32[8] parameter(1)\n"
      "  i = s32[] parameter(2)\n"
      "  idx = s32[2,1] parameter(3)\n"
      "  st = (s32[], f32[2]) parameter(4)\n"
      "  x = f32[1,3,8,8] parameter(5)\n"
      "  k = f32[4,3,3,3] parameter(6)\n"
      "  p = pred[] parameter(7)\n"
      "  b16 = bf16[2,3] parameter(8)\n"
      "  z = f32[] constant(0)\n"
      "  mixed = f32[2,3] add(a, b16)\n"  // XLA's verifier allows mixed precision in loaded modules
      "  cmp = pred[2,3] compare(a, a), direction=LT\n"
      "  sel = f32[2,3] select(cmp, a, a)\n"
      "  clp = f32[2,3] clamp(z, a, z)\n"
      "  cvt = s32[2,3] convert(a)\n"
      "  bc = s16[2,3,2] bitcast-convert(a)\n"
      "  br = f32[4,2,3] broadcast(a), dimensions={1,2}\n"
      "  rs = f32[6] reshape(a)\n"
      "  tr = f32[3,2] transpose(a), dimensions={1,0}\n"
      "  sl = f32[1,2] slice(a), slice={[1:2], [0:3:2]}\n"
      "  ds = f32[2] dynamic-slice(v, i), dynamic_slice_sizes={2}\n"
      "  dus = f32[8] dynamic-update-slice(v, ds, i)\n"
      "  pd = f32[16] pad(v, z), padding=1_0_1\n"
      "  cc = f32[4,3] concatenate(a, a), dimensions={0}\n"
      "  rd = f32[2] reduce(a, z), dimensions={1}, to_apply=add\n"
      "  rw = f32[4] reduce-window(v, z), window={size=2 stride=2}, to_apply=add\n"
      "  sas = f32[8] select-and-scatter(v, rw, z), window={size=2 stride=2}, select=less, scatter=add\n"
      "  dt = f32[2,2] dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
      "  cv = f32[1,4,6,6] convolution(x, k), window={size=3x3}, dim_labels=bf01_oi01->bf01\n"
      "  ga = f32[2,3] gather(a, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
      "index_vector_dim=1, slice_sizes={1,3}\n"
      "  sc = f32[2,3] scatter(a, idx, ga), update_window_dims={1}, inserted_window_dims={0}, "
      "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n"
      "  io = s32[2,3] iota(), iota_dimension=1\n"
      "  so = (f32[2,3], s32[2,3]) sort(a, io), dimensions={1}, to_apply=less2\n"
      "  rv = f32[2,3] reverse(a), dimensions={0,1}\n"
      "  wh = (s32[], f32[2]) while(st), condition=cond, body=body\n"
      "  cl = f32[2] call(ds), to_apply=callee\n"
      "  co = f32[2] conditional(p, ds, ds), true_computation=callee, false_computation=callee\n"
      "  ar = f32[2,3] all-reduce(a), to_apply=add\n"
      "  ag = f32[4,3] all-gather(a), dimensions={0}, replica_groups={{0,1}}\n"
      "  rsc = f32[4] reduce-scatter(v), dimensions={0}, replica_groups={{0,1}}, to_apply=add\n"
      "  as = ((f32[2]), f32[2], s32[]) async-start(ds), calls=wrapped\n"
      "  ad = f32[2] async-done(as)\n"
      "  cs = (f32[2,3], f32[2,3], u32[]) copy-start(a)\n"
      "  cd = f32[2,3] copy-done(cs)\n"
      "  ft = c64[8,5] fft(b), fft_type=RFFT, fft_length={8}\n"
      "  b = f32[8,8] parameter(9)\n"
      "  ch = f32[8,8] cholesky(b), lower=true\n"
      "  ts = f32[8,8] triangular-solve(b, b), left_side=true, lower=true, transpose_a=NO_TRANSPOSE\n"
      "  gds = s32[] get-dimension-size(a), dimensions={1}\n"
      "  sds = f32[2,<=3] set-dimension-size(a, gds), dimensions={1}\n"
      "  gte = s32[] get-tuple-element(wh), index=0\n"
      "  ROOT t = (f32[2,3], f32[2,3]) tuple(mixed, sel)\n";
  const std::string text = ModuleText(comps, body);
  auto m = ParseModule(text, "test.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_FALSE(FindViolation(**m).has_value());
  // A lowering's result is held to XLA's strict element types: the bf16 operand of the f32 add is a violation.
  auto v = FindViolation(**m, VerifyOptions{ShapeCheckOptions{false}});
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(DescribeViolation(*v),
            "computation 'main', instruction 'mixed': add: operand 1 is bf16[2,3], operand 0 is f32[2,3]");
}

TEST(HloVerifier, ShapesTheTextLeavesOutAreInferredByTheSameRules) {
  auto m = ParseModule(ModuleText(kAdd,
                                  "  a = f32[2,3] parameter(0)\n  z = f32[] constant(0)\n"
                                  "  r = reduce(a, z), dimensions={0}, to_apply=add\n  ROOT t = tuple(r, a)"),
                       "test.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->entry()->root()->shape.ToString(false), "(f32[3], f32[2,3])");
  auto bad = ParseModule(ModuleText("", "  a = f32[2] parameter(0)\n  b = f32[3] parameter(1)\n  ROOT r = add(a, b)"),
                         "test.hlo");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("test.hlo:6:8: cannot infer the shape of add r: operand 1 is f32[3]"),
            std::string::npos)
      << bad.status().message();
}

TEST(HloVerifier, SignatureResultAgreesWithTheRoot) {
  const std::string text = "HloModule t\n\nENTRY main (a: f32[2]) -> f32[3] {\n  ROOT a = f32[2] parameter(0)\n}\n";
  auto m = ParseModule(text, "test.hlo");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "test.hlo:3:27: computation main returns f32[3], its root a is f32[2]");
}

TEST(HloVerifier, LiteralRangesAreCheckedAsXlaDoes) {
  auto parse = [](const std::string& constant) {
    return ParseModule("HloModule t\n\nENTRY main {\n  ROOT c = " + constant + "\n}\n", "test.hlo");
  };
  // f16's largest value is 65504; -65505 rounds to it, -65520 does not (XLA's ConstantF16Overflow).
  EXPECT_TRUE(parse("f16[] constant(-65505)").ok());
  auto f16 = parse("f16[] constant(-65520)");
  ASSERT_FALSE(f16.ok());
  EXPECT_EQ(f16.status().message(), "test.hlo:4:27: '-65520' is out of range for f16");
  EXPECT_TRUE(parse("bf16[] constant(-65505)").ok());
  auto bf16 = parse("bf16[2] constant({1, 1e100})");
  ASSERT_FALSE(bf16.ok());
  EXPECT_EQ(bf16.status().message(), "test.hlo:4:33: '1e100' is out of range for bf16");
  EXPECT_TRUE(parse("f32[] constant(inf)").ok());
  // NaN payloads: non-zero and within the mantissa.
  auto f32nan = parse("f32[] constant(nan(0x7fffff))");
  ASSERT_TRUE(f32nan.ok()) << f32nan.status().message();
  EXPECT_EQ((*f32nan)->entry()->root()->literal->Get<uint32_t>(0), 0x7fffffffu);
  auto bf16nan = parse("bf16[] constant(-nan(0x7f))");
  ASSERT_TRUE(bf16nan.ok()) << bf16nan.status().message();
  EXPECT_EQ((*bf16nan)->entry()->root()->literal->Get<uint16_t>(0), 0xffffu);
  auto too_big = parse("bf16[] constant(nan(0x80))");
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().message(), "test.hlo:4:28: NaN payload 'nan(0x80)' is out of range for bf16 (1 to 0x7f)");
  auto zero = parse("f16[] constant(nan(0x0))");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("NaN payload 'nan(0x0)' is out of range for f16 (1 to 0x3ff)"),
            std::string::npos);
}

// Checks a parsed text cannot reach (the parser refuses the text first): a module built or read otherwise.
TEST(HloVerifier, ModulesBuiltInMemory) {
  auto parse = [](const std::string& body, const std::string& comps = "") {
    auto m = ParseModule(ModuleText(comps, body), "test.hlo");
    EXPECT_TRUE(m.ok()) << m.status().message();
    return m.ok() ? std::move(*m) : nullptr;
  };
  auto m = parse("  a = f32[2] parameter(0)\n  ROOT r = f32[2] negate(a)");
  ASSERT_TRUE(m);
  Instruction* r = m->entry()->root();
  r->operands.push_back(r->operands[0]);
  EXPECT_EQ(DescribeViolation(*FindViolation(*m)),
            "computation 'main', instruction 'r': negate takes 1 operand(s), has 2");

  m = parse(
      "  a = f32[8] parameter(0)\n  z = f32[] constant(0)\n"
      "  ROOT r = f32[4] reduce-window(a, z), window={size=2 stride=2}, to_apply=add",
      kAdd);
  ASSERT_TRUE(m);
  m->entry()->root()->called_computations[0] = nullptr;
  EXPECT_EQ(DescribeViolation(*FindViolation(*m)),
            "computation 'main', instruction 'r': reduce-window needs to_apply=");

  m = parse("  a = f32[4] parameter(0)\n  ROOT r = f32[2] slice(a), slice={[0:2]}");
  ASSERT_TRUE(m);
  m->entry()->root()->slice.reset();
  EXPECT_EQ(DescribeViolation(*FindViolation(*m)), "computation 'main', instruction 'r': slice needs slice=");

  m = parse("  ROOT a = f32[4] parameter(0)");
  ASSERT_TRUE(m);
  m->entry()->set_root(nullptr);
  EXPECT_EQ(DescribeViolation(*FindViolation(*m)), "computation 'main': the computation has no root instruction");
  m->set_entry(nullptr);
  EXPECT_EQ(DescribeViolation(*FindViolation(*m)), "the module has no entry computation");

  // Parameter numbers (the text parser refuses a repeated or missing number itself).
  m = parse("  a = f32[2] parameter(0)\n  ROOT b = f32[2] parameter(1)");
  ASSERT_TRUE(m);
  m->entry()->root()->parameter_number = 0;
  EXPECT_EQ(DescribeViolation(*FindViolation(*m)),
            "computation 'main', instruction 'b': parameter number 0 is also 'a''s");
  m->entry()->root()->parameter_number = 2;
  EXPECT_EQ(DescribeViolation(*FindViolation(*m)),
            "computation 'main', instruction 'b': parameter number 2 outside 0..1 (the computation has 2 parameters)");

  m = parse("  ROOT c = f32[2] constant({1, 2})");
  ASSERT_TRUE(m);
  m->entry()->root()->shape = Shape::Array(PrimitiveType::F32, {3});
  EXPECT_EQ(DescribeViolation(*FindViolation(*m)),
            "computation 'main', instruction 'c': constant has shape f32[3], its literal f32[2]");
}

// The proto reader verifies what it reads, naming the module, computation and instruction.
TEST(HloVerifier, ProtoInputIsVerified) {
  auto m = ParseModule(ModuleText("", "  a = f32[2] parameter(0)\n  ROOT r = f32[2] negate(a)"), "test.hlo");
  ASSERT_TRUE(m.ok());
  (*m)->entry()->root()->shape = Shape::Array(PrimitiveType::F32, {5});
  auto bytes = ModuleToHloProtoBytes(**m);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto back = ModuleFromProtoBytes(*bytes, "m.hlo.pb");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(back.status().message(),
            "m.hlo.pb: module 't', computation 'main', instruction 'r': negate has shape f32[5], its operands and "
            "attributes give f32[2]");
}

}  // namespace
}  // namespace opprobe::hlo
