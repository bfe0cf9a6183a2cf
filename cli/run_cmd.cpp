// `opprobe run FILE.hlo [--inputs FILE.json|FILE.npy ...] [-o OUT.json]`: evaluates a module's entry
// with the built-in evaluator (the `interp` runtime), for debugging a lowering. Inputs are given one
// file per entry parameter, in order; without --inputs, deterministic random inputs are used.
//
// Input files are JSON or NumPy .npy (hlo/literal_io.h). Exit codes: 0 evaluated; 2 bad
// usage, unreadable file, wrong input count/shape/dtype, inconsistent module; 3 the evaluator does not
// implement something in the module.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/literal_io.h"
#include "hlo/parser.h"
#include "support/file_io.h"

namespace opprobe::cli {
namespace {

using hlo::Literal;

struct RunArgs {
  std::string file;
  std::vector<std::string> inputs;
  std::string out;
  std::string module_name;
  uint64_t seed = 0;
};

std::string Describe(size_t index, const hlo::Instruction& p) {
  return fmt::format("input {} ({}, {})", index, p.name, p.shape.ToString(false));
}

int RunRun(const RunArgs& a) {
  auto text = io::ReadFile(a.file);
  if (!text.ok()) return ReportError(text.status());
  auto modules = hlo::ParseModules(*text, a.file);
  if (!modules.ok()) return ReportError(modules.status());
  if (modules->empty()) return ReportError(InvalidInput(fmt::format("{}: no HLO module in the file", a.file)));
  const hlo::Module* module = nullptr;
  if (!a.module_name.empty()) {
    for (const auto& m : *modules)
      if (m->name() == a.module_name) module = m.get();
    if (!module)
      return ReportError(InvalidInput(fmt::format("--module: {} has no module '{}'", a.file, a.module_name)));
  } else if (modules->size() == 1) {
    module = modules->front().get();
  } else {
    return ReportError(InvalidInput(fmt::format("{} holds {} modules; choose one with --module NAME (first: {})",
                                                a.file, modules->size(), modules->front()->name())));
  }
  if (!module->entry()) return ReportError(InvalidInput(fmt::format("{}: module has no entry computation", a.file)));
  auto params = module->entry()->parameters();
  std::vector<Literal> args;
  if (a.inputs.empty()) {
    args = hlo::RandomArguments(*module->entry(), a.seed);
  } else {
    if (a.inputs.size() != params.size())
      return ReportError(InvalidInput(fmt::format("{}: {} takes {} inputs, {} given with --inputs", a.file,
                                                  module->entry()->name(), params.size(), a.inputs.size())));
    for (size_t i = 0; i < params.size(); ++i) {
      auto lit = hlo::ReadLiteralFor(a.inputs[i], params[i]->shape,
                                     fmt::format("{} ({})", a.inputs[i], Describe(i, *params[i])));
      if (!lit.ok()) return ReportError(lit.status());
      args.push_back(std::move(lit).value());
    }
  }
  hlo::EvaluatorOptions options;
  options.seed = a.seed;
  auto result = hlo::Evaluate(*module, args, options);
  if (!result.ok()) {
    const Status& st = result.status();
    if (st.code() == ErrorCode::kUnimplemented)
      return ReportError(
          Unavailable(fmt::format("{}: the interpreter cannot evaluate this module: {}", a.file, st.message())));
    return ReportError(st.WithContext(a.file));
  }
  std::vector<const Literal*> outs;
  if (result->shape().IsTuple())
    for (const auto& e : result->tuple_elements()) outs.push_back(&e);
  else outs.push_back(&*result);
  if (!a.out.empty()) {
    nlohmann::json j;
    j["module"] = module->name();
    j["outputs"] = nlohmann::json::array();
    for (const Literal* o : outs) j["outputs"].push_back(hlo::LiteralToJson(*o));
    Status st = io::WriteFileAtomically(a.out, j.dump(1) + "\n");
    if (!st.ok()) return ReportError(st);
    return kExitOk;
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    std::string shape = outs[i]->shape().ToString(false);
    std::printf("%s%s %s\n", outs.size() > 1 ? fmt::format("[{}] ", i).c_str() : "", shape.c_str(),
                outs[i]->ValueToString().c_str());
  }
  return kExitOk;
}

}  // namespace

void RegisterRun(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "Evaluate an HLO module with the built-in interpreter and print its outputs");
  cmd->add_option("file", args->file, "HLO text file (.hlo / XLA dump)")->required();
  cmd->add_option("--inputs", args->inputs,
                  "One file per entry parameter, in order: JSON (nested lists or {shape,dtype,data}) or NumPy .npy; "
                  "random inputs when omitted")
      ->expected(1, -1);
  cmd->add_option("-o,--output", args->out, "Write the outputs as JSON to this file instead of printing them");
  cmd->add_option("--module", args->module_name, "Which module of a multi-module dump to run");
  cmd->add_option("--seed", args->seed, "Seed of the random inputs (default 0)");
  cmd->callback([args, &exit_code] { exit_code = RunRun(*args); });
}

}  // namespace opprobe::cli
