// What the verifier (hlo/verifier.h) adds to loading HLO text: `verify_cost FILE...` parses each file (the parser
// runs the verifier before it returns) and runs the verifier again on the parsed module, best of N rounds, and
// prints parse time, verify time and their ratio. `--synthetic MB` adds a generated module of about that size (a
// long chain of elementwise ops, dots, reduces, broadcasts and reshapes, every shape written, as dumps are). A
// measurement, not a test: it asserts nothing (docs/hlo-compatibility.md records the figures).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "hlo/parser.h"
#include "hlo/verifier.h"
#include "support/file_io.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace opprobe;

std::string Synthetic(size_t bytes) {
  std::string t =
      "HloModule synthetic\n\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(x, y)\n}\n\nENTRY main {\n  p = f32[64,128]{1,0} parameter(0)\n"
      "  w = f32[128,128]{1,0} parameter(1)\n  z = f32[] constant(0)\n";
  std::string prev = "p";
  for (size_t i = 0; t.size() < bytes; ++i) {
    t += fmt::format(
        "  d.{0} = f32[64,128]{{1,0}} dot(f32[64,128]{{1,0}} {1}, f32[128,128]{{1,0}} w), "
        "lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, metadata={{op_type=\"aten__mm\" "
        "op_name=\"aten__mm\" source_file=\"model.py\" source_line={0}}}\n",
        i, prev);
    t += fmt::format(
        "  r.{0} = f32[64]{{0}} reduce(f32[64,128]{{1,0}} d.{0}, f32[] z), dimensions={{1}}, to_apply=add\n", i);
    t += fmt::format("  b.{0} = f32[64,128]{{1,0}} broadcast(f32[64]{{0}} r.{0}), dimensions={{0}}\n", i);
    t += fmt::format("  s.{0} = f32[64,128]{{1,0}} subtract(f32[64,128]{{1,0}} d.{0}, f32[64,128]{{1,0}} b.{0})\n", i);
    t += fmt::format("  e.{0} = f32[64,128]{{1,0}} exponential(f32[64,128]{{1,0}} s.{0})\n", i);
    t += fmt::format("  t.{0} = f32[128,64]{{0,1}} transpose(f32[64,128]{{1,0}} e.{0}), dimensions={{1,0}}\n", i);
    t += fmt::format("  h.{0} = f32[64,128]{{1,0}} reshape(f32[128,64]{{0,1}} t.{0})\n", i);
    prev = fmt::format("h.{}", i);
  }
  t += fmt::format("  ROOT out = f32[64,128]{{1,0}} copy(f32[64,128]{{1,0}} {})\n}}\n", prev);
  return t;
}

void Measure(const std::string& name, const std::string& text, int rounds) {
  double parse = 1e30, verify = 1e30;
  size_t instructions = 0;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = Clock::now();
    auto modules = hlo::ParseModules(text, name);
    auto t1 = Clock::now();
    if (!modules.ok()) {
      std::cerr << modules.status().message() << "\n";
      std::exit(2);
    }
    instructions = 0;
    for (const auto& m : *modules)
      for (const auto& c : m->computations()) instructions += c->instructions().size();
    auto t2 = Clock::now();
    for (const auto& m : *modules)
      if (hlo::FindViolation(*m)) std::exit(3);
    auto t3 = Clock::now();
    verify = std::min(verify, std::chrono::duration<double>(t3 - t2).count());
    parse = std::min(parse, std::chrono::duration<double>(t1 - t0).count());
  }
  // The parse figure includes one verifier run; the parser alone is parse - verify.
  const double alone = parse - verify;
  std::cout << fmt::format(
      "{:<60} {:>9.1f} KB {:>8} instructions  parse {:8.2f} ms  verify {:7.2f} ms  "
      "verify/parse-alone {:5.1f}%\n",
      name, static_cast<double>(text.size()) / 1024, instructions, alone * 1e3, verify * 1e3,
      alone > 0 ? 100 * verify / alone : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  std::vector<std::pair<std::string, std::string>> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (a == "--synthetic" && i + 1 < argc) {
      size_t mb = static_cast<size_t>(std::atol(argv[++i]));
      inputs.emplace_back(fmt::format("synthetic ({} MB)", mb), Synthetic(mb << 20));
    } else {
      auto text = io::ReadFile(a);
      if (!text.ok()) {
        std::cerr << text.status().message() << "\n";
        return 2;
      }
      inputs.emplace_back(a, std::move(*text));
    }
  }
  if (inputs.empty()) {
    std::cerr << "usage: verify_cost [--rounds N] [--synthetic MB] FILE...\n";
    return 2;
  }
  for (const auto& [name, text] : inputs) Measure(name, text, rounds);
  return 0;
}
