// The StableHLO conformance check (tests/stablehlo/README.md): every program tests/stablehlo/jax_programs.py wrote
// into DIR is read by opprobe's StableHLO reader and compared, op by op, with the HLO jaxlib's own StableHLO -> HLO
// conversion made of the same text.
//
//   stablehlo_conformance_check DIR EXPECTATIONS [--show NAME]
//
// Per program:
//   - NAME.mlir (pretty form), NAME.generic.mlir (generic form) and NAME.debug.mlir (with locations) must convert to
//     the same HLO (canonical text, no metadata);
//   - the HLO of NAME.mlir against NAME.hlo.pb (jaxlib's): the sets of instruction signatures over every computation
//     (result shape with layout, opcode, operand shapes, the attributes the IR models, constant values; called
//     computations' names left out), which are the units a backend is probed with, must be equal; the same for
//     NAME.export.mlir against NAME.export.hlo.pb where jax.export's text differs;
//   - the metadata of NAME.debug.mlir against NAME.debug.hlo.txt (jaxlib's, stack frames resolved to their first
//     frame): every (op_name, source_file:source_line) jaxlib attached to an instruction is attached to one of
//     opprobe's.
// Differences are allowed only where EXPECTATIONS lists the program with the number of differing signatures and
// why (XLA runs module-wide simplifications before its translation that an op-by-op conversion does not); a listed
// count that no longer matches fails too, so the list stays exact. Exit 0 when everything holds, 1 otherwise.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/proto_io.h"
#include "hlo/stablehlo/stablehlo.h"
#include "support/file_io.h"

namespace fs = std::filesystem;
using opprobe::Expected;
using namespace opprobe::hlo;

namespace {

// Result shape, opcode, operand shapes (a constant's value), and the attributes the IR models, without the names of
// called computations. Left out: the attributes XLA's conversion carries over from MLIR's own (frontend attributes
// with Shardy's rules, sharding, custom calls' layout constraints, aliasing and API version), which the reader does
// not take from MLIR yet, and attributes the schema does not know.
std::string Signature(const Instruction& original) {
  Instruction i = original;
  i.mutable_rare().frontend_attributes.clear();
  i.sharding.reset();
  i.operand_layout_constraints.reset();
  i.mutable_rare().output_to_operand_aliasing.clear();
  i.mutable_rare().custom_call_api_version.clear();
  static const std::regex kCalled(
      R"(\b(to_apply|condition|body|calls|select|scatter|true_computation|false_computation)=[^,\s]+)");
  static const std::regex kCalledList(R"(\b(branch_computations|called_computations)=\{[^}]*\})");
  PrintOptions o = PrintOptions::Canonical();
  o.print_unknown_attributes = false;
  std::string operands;
  if (i.opcode == Opcode::kConstant && i.literal) {
    operands = LiteralToString(*i.literal);
  } else if (i.opcode == Opcode::kParameter) {
    operands = std::to_string(i.parameter_number);
  } else {
    for (size_t k = 0; k < i.operands.size(); ++k) operands += (k ? ", " : "") + i.operands[k]->shape.ToString();
  }
  std::string s = fmt::format("{} {}({}){}", i.shape.ToString(),
                              i.unknown_opcode.empty() ? std::string(OpcodeName(i.opcode)) : i.unknown_opcode, operands,
                              AttributesToString(i, o));
  s = std::regex_replace(s, kCalled, "$1=*");
  return std::regex_replace(s, kCalledList, "$1={*}");
}

std::map<std::string, int> Signatures(const Module& m) {
  std::map<std::string, int> out;
  for (const auto& c : m.computations())
    for (const auto& i : c->instructions()) ++out[Signature(*i)];
  return out;
}

// Instruction kinds (signatures) in one module and not the other: "+ sig" (only opprobe's), "- sig" (only
// jaxlib's). Kinds, not instances: these are the units a backend is probed with, and XLA's simplifier merges equal
// instructions (constants, broadcasts) that an op-by-op conversion keeps apart.
std::vector<std::string> Diff(const Module& ours, const Module& theirs, int& count) {
  auto a = Signatures(ours), b = Signatures(theirs);
  std::vector<std::string> out;
  std::set<std::string> keys;
  for (const auto& [k, v] : a) keys.insert(k);
  for (const auto& [k, v] : b) keys.insert(k);
  count = 0;
  for (const auto& k : keys) {
    if (a.count(k) && b.count(k)) continue;
    ++count;
    out.push_back(fmt::format("{} {}", a.count(k) ? "+" : "-", k));
  }
  return out;
}

std::string Canonical(const Module& m) { return ToString(m, PrintOptions::Canonical()); }

std::set<std::string> MetadataPairs(const Module& m) {
  std::set<std::string> out;
  for (const auto& c : m.computations())
    for (const auto& i : c->instructions()) {
      if (i->opcode == Opcode::kParameter || i->metadata->op_name.empty()) continue;
      out.insert(fmt::format("{} @ {}:{}", i->metadata->op_name, i->metadata->source_file, i->metadata->source_line));
    }
  return out;
}

Expected<std::unique_ptr<Module>> ReadMlir(const fs::path& p) {
  OPPROBE_ASSIGN_OR_RETURN(std::string text, opprobe::io::ReadFile(p.string()));
  return ParseStableHlo(text, p.filename().string());
}

struct Expectation {
  int count = 0;
  std::string why;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: stablehlo_conformance_check DIR EXPECTATIONS [--show NAME]\n";
    return 2;
  }
  const fs::path dir = argv[1];
  std::string show;
  if (argc >= 5 && std::string(argv[3]) == "--show") show = argv[4];

  std::map<std::string, Expectation> expected;
  {
    std::ifstream in(argv[2]);
    if (!in) {
      std::cerr << "cannot read " << argv[2] << "\n";
      return 2;
    }
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream ls(line);
      std::string name;
      Expectation e;
      ls >> name >> e.count;
      std::getline(ls, e.why);
      expected[name] = e;
    }
  }

  std::vector<std::string> names;
  {
    std::ifstream in(dir / "programs.txt");
    std::string n;
    while (in >> n) names.push_back(n);
  }
  if (names.empty()) {
    std::cerr << "no programs in " << (dir / "programs.txt") << "\n";
    return 1;
  }

  int failures = 0, exact = 0, explained = 0;
  std::map<std::string, int> seen_counts;
  auto fail = [&](const std::string& name, const std::string& what) {
    ++failures;
    std::cout << "FAIL " << name << ": " << what << "\n";
  };
  for (const auto& name : names) {
    auto pretty = ReadMlir(dir / (name + ".mlir"));
    auto generic = ReadMlir(dir / (name + ".generic.mlir"));
    auto debug = ReadMlir(dir / (name + ".debug.mlir"));
    if (!pretty.ok() || !generic.ok() || !debug.ok()) {
      const auto& st = !pretty.ok() ? pretty.status() : !generic.ok() ? generic.status() : debug.status();
      fail(name, "not read: " + st.message());
      continue;
    }
    if (Canonical(**pretty) != Canonical(**generic)) fail(name, "the pretty and the generic form convert differently");
    if (Canonical(**pretty) != Canonical(**debug)) fail(name, "the form with locations converts differently");

    auto bytes = opprobe::io::ReadFile((dir / (name + ".hlo.pb")).string());
    if (!bytes.ok()) {
      fail(name, bytes.status().message());
      continue;
    }
    auto theirs = ModuleFromProtoBytes(*bytes, name + ".hlo.pb");
    if (!theirs.ok()) {
      fail(name, "jaxlib's HLO not read: " + theirs.status().message());
      continue;
    }
    int count = 0;
    std::vector<std::string> diff = Diff(**pretty, **theirs, count);
    if (fs::exists(dir / (name + ".export.mlir"))) {
      auto exp = ReadMlir(dir / (name + ".export.mlir"));
      auto eb = opprobe::io::ReadFile((dir / (name + ".export.hlo.pb")).string());
      if (!exp.ok()) {
        fail(name, "jax.export's text not read: " + exp.status().message());
      } else if (!eb.ok()) {
        fail(name, eb.status().message());
      } else if (auto et = ModuleFromProtoBytes(*eb, name + ".export.hlo.pb"); !et.ok()) {
        fail(name, "jaxlib's HLO of jax.export's text not read: " + et.status().message());
      } else {
        int ecount = 0;
        for (auto& d : Diff(**exp, **et, ecount)) diff.push_back("export: " + d);
        count += ecount;
      }
    }
    // Metadata: what jaxlib attached, opprobe attaches too.
    auto dtext = opprobe::io::ReadFile((dir / (name + ".debug.hlo.txt")).string());
    if (dtext.ok()) {
      auto dmod = ParseModule(*dtext, name + ".debug.hlo.txt");
      if (!dmod.ok()) {
        fail(name, "jaxlib's HLO with metadata not read: " + dmod.status().message());
      } else {
        std::set<std::string> ours = MetadataPairs(**debug), want = MetadataPairs(**dmod);
        // Locations XLA merged while folding ops (`a;b`) have no one op on opprobe's side.
        for (const auto& w : want)
          if (w.find(';') == std::string::npos && !ours.count(w))
            fail(name, "metadata jaxlib attaches and opprobe does not: " + w);
      }
    } else {
      fail(name, dtext.status().message());
    }
    seen_counts[name] = count;
    auto e = expected.find(name);
    const int want = e == expected.end() ? 0 : e->second.count;
    if (count != want) {
      fail(name, fmt::format("{} instruction kind(s) differ from jaxlib's conversion, {} expected", count, want));
      for (const auto& d : diff) std::cout << "    " << d << "\n";
    } else if (count == 0) {
      ++exact;
    } else {
      ++explained;
    }
    if (name == show) {
      std::cout << "=== opprobe\n"
                << ToString(**pretty, PrintOptions::Short()) << "\n=== jaxlib\n"
                << ToString(**theirs, PrintOptions::Short()) << "\n";
      for (const auto& d : diff) std::cout << "    " << d << "\n";
    }
  }
  for (const auto& [name, e] : expected)
    if (!seen_counts.count(name)) fail(name, "listed in the expectations but not generated");
  std::cout << fmt::format(
      "stablehlo conformance: {} programs, {} identical to jaxlib's conversion, {} with listed "
      "differences, {} failure(s)\n",
      names.size(), exact, explained, failures);
  return failures ? 1 : 0;
}
