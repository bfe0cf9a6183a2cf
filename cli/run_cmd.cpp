// `opprobe run FILE.hlo [--inputs FILE.json|FILE.npy ...] [-o OUT.json]`: evaluates a module's entry
// with the built-in evaluator (the `interp` runtime), for debugging a lowering. Inputs are given one
// file per entry parameter, in order; without --inputs, deterministic random inputs are used.
//
// Input files: JSON nested lists (`[[1, 2], [3, 4]]`, the parameter's dtype), or
// `{"shape": [2, 2], "dtype": "f32", "data": [1, 2, 3, 4]}` (complex elements as [re, im]); or NumPy
// .npy (little-endian, C order; f2 f4 f8 i1..i8 u1..u8 b1 c8 c16). Exit codes: 0 evaluated; 2 bad
// usage, unreadable file, wrong input count/shape/dtype, inconsistent module; 3 the evaluator does not
// implement something in the module.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/parser.h"
#include "reports/report.h"

namespace opprobe::cli {
namespace {

using hlo::Literal;
using hlo::PrimitiveType;
using hlo::Shape;

struct RunArgs {
  std::string file;
  std::vector<std::string> inputs;
  std::string out;
  std::string module_name;
  uint64_t seed = 0;
};

Expected<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidInput(fmt::format("{}: cannot read the file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Describe(size_t index, const hlo::Instruction& p) {
  return fmt::format("input {} ({}, {})", index, p.name, p.shape.ToString(false));
}

// ---- .npy ----

Expected<Literal> ReadNpy(const std::string& bytes, const std::string& where) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return InvalidInput(fmt::format("{}: not a NumPy .npy file", where));
  int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return InvalidInput(fmt::format("{}: truncated .npy header", where));
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + static_cast<size_t>(i)])) << (8 * i);
    header_start = 12;
  } else {
    return InvalidInput(fmt::format("{}: unsupported .npy version {}", where, major));
  }
  if (header_start + header_len > bytes.size()) return InvalidInput(fmt::format("{}: truncated .npy header", where));
  std::string header = bytes.substr(header_start, header_len);
  auto field = [&](const std::string& key) -> std::string {
    auto k = header.find("'" + key + "'");
    if (k == std::string::npos) return "";
    auto colon = header.find(':', k);
    if (colon == std::string::npos) return "";
    size_t v = header.find_first_not_of(" ", colon + 1);
    if (v == std::string::npos) return "";
    if (header[v] == '\'') {
      auto e = header.find('\'', v + 1);
      return e == std::string::npos ? "" : header.substr(v + 1, e - v - 1);
    }
    if (header[v] == '(') {
      auto e = header.find(')', v);
      return e == std::string::npos ? "" : header.substr(v, e - v + 1);
    }
    auto e = header.find_first_of(",}", v);
    return header.substr(v, e == std::string::npos ? std::string::npos : e - v);
  };
  std::string descr = field("descr"), fortran = field("fortran_order"), shape_text = field("shape");
  if (descr.empty() || shape_text.empty()) return InvalidInput(fmt::format("{}: .npy header lacks descr or shape", where));
  if (fortran.rfind("True", 0) == 0) return InvalidInput(fmt::format("{}: Fortran-order .npy is not supported", where));
  if (descr[0] == '>' && descr.substr(1) != "i1" && descr.substr(1) != "u1" && descr.substr(1) != "b1")
    return InvalidInput(fmt::format("{}: big-endian .npy ({}) is not supported", where, descr));
  std::string kind = descr[0] == '<' || descr[0] == '|' || descr[0] == '=' || descr[0] == '>' ? descr.substr(1) : descr;
  static const std::pair<const char*, PrimitiveType> kTypes[] = {
      {"f2", PrimitiveType::F16}, {"f4", PrimitiveType::F32}, {"f8", PrimitiveType::F64}, {"i1", PrimitiveType::S8},
      {"i2", PrimitiveType::S16}, {"i4", PrimitiveType::S32}, {"i8", PrimitiveType::S64}, {"u1", PrimitiveType::U8},
      {"u2", PrimitiveType::U16}, {"u4", PrimitiveType::U32}, {"u8", PrimitiveType::U64}, {"b1", PrimitiveType::PRED},
      {"c8", PrimitiveType::C64}, {"c16", PrimitiveType::C128}};
  std::optional<PrimitiveType> type;
  for (const auto& [name, t] : kTypes)
    if (kind == name) type = t;
  if (!type) return InvalidInput(fmt::format("{}: .npy dtype '{}' is not supported", where, descr));
  std::vector<int64_t> dims;
  std::string inner = shape_text.substr(1, shape_text.size() - 2);
  std::stringstream ss(inner);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    size_t a = tok.find_first_not_of(" "), b = tok.find_last_not_of(" L");
    if (a == std::string::npos) continue;
    try {
      dims.push_back(std::stoll(tok.substr(a, b - a + 1)));
    } catch (...) {
      return InvalidInput(fmt::format("{}: bad .npy shape {}", where, shape_text));
    }
    if (dims.back() < 0) return InvalidInput(fmt::format("{}: bad .npy shape {}", where, shape_text));
  }
  Shape shape = Shape::Array(*type, dims);
  auto n = shape.ElementCount();
  if (!n.ok()) return InvalidInput(fmt::format("{}: {}", where, n.status().message()));
  size_t data_start = header_start + header_len;
  size_t need = static_cast<size_t>(*n) * static_cast<size_t>(hlo::ByteWidth(*type));
  if (bytes.size() - data_start != need)
    return InvalidInput(fmt::format("{}: .npy holds {} data bytes, shape {} needs {}", where, bytes.size() - data_start,
                                    shape.ToString(false), need));
  Literal l(shape);
  if (need) std::memcpy(l.data().data(), bytes.data() + data_start, need);
  return l;
}

// ---- JSON ----

Status SetJsonElement(Literal& l, int64_t i, const nlohmann::json& v, const std::string& where) {
  PrimitiveType t = l.shape().element_type();
  auto number = [&](const nlohmann::json& x, double& out) -> bool {
    if (x.is_number()) {
      out = x.get<double>();
      return true;
    }
    if (x.is_boolean()) {
      out = x.get<bool>() ? 1.0 : 0.0;
      return true;
    }
    if (x.is_string()) {
      std::string s = x.get<std::string>();
      if (s == "nan" || s == "NaN") out = NAN;
      else if (s == "inf" || s == "Infinity") out = INFINITY;
      else if (s == "-inf" || s == "-Infinity") out = -INFINITY;
      else return false;
      return true;
    }
    return false;
  };
  if (hlo::IsComplex(t)) {
    double re = 0, im = 0;
    if (v.is_array() && v.size() == 2 && number(v[0], re) && number(v[1], im)) {
      l.SetFromComplex(i, {re, im});
      return Status::Ok();
    }
    if (number(v, re)) {
      l.SetFromComplex(i, {re, 0.0});
      return Status::Ok();
    }
    return InvalidInput(fmt::format("{}: element {} is not a complex number ([re, im])", where, i));
  }
  if ((hlo::IsInteger(t)) && v.is_number_integer()) {
    if (t == PrimitiveType::U64 && v.is_number_unsigned()) l.Set<uint64_t>(i, v.get<uint64_t>());
    else l.SetFromInt64(i, v.get<int64_t>());
    return Status::Ok();
  }
  double d;
  if (!number(v, d)) return InvalidInput(fmt::format("{}: element {} is not a number", where, i));
  l.SetFromDouble(i, d);
  return Status::Ok();
}

Expected<Literal> ReadJsonInput(const std::string& text, const std::string& where, PrimitiveType param_type) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return InvalidInput(fmt::format("{}: invalid JSON: {}", where, e.what()));
  }
  if (j.is_object()) {
    if (!j.contains("shape") || !j.contains("data") || !j["shape"].is_array() || !j["data"].is_array())
      return InvalidInput(fmt::format("{}: expected {{\"shape\": [...], \"dtype\": ..., \"data\": [...]}}", where));
    std::vector<int64_t> dims;
    for (const auto& d : j["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) return InvalidInput(fmt::format("{}: bad shape", where));
      dims.push_back(d.get<int64_t>());
    }
    PrimitiveType t = param_type;
    if (j.contains("dtype")) {
      if (!j["dtype"].is_string()) return InvalidInput(fmt::format("{}: dtype must be a string", where));
      auto pt = hlo::PrimitiveTypeFromName(j["dtype"].get<std::string>());
      if (!pt || !hlo::IsArrayType(*pt))
        return InvalidInput(fmt::format("{}: unknown dtype '{}'", where, j["dtype"].get<std::string>()));
      t = *pt;
    }
    Shape s = Shape::Array(t, dims);
    auto n = s.ElementCount();
    if (!n.ok()) return InvalidInput(fmt::format("{}: {}", where, n.status().message()));
    if (static_cast<int64_t>(j["data"].size()) != *n)
      return InvalidInput(fmt::format("{}: data has {} elements, shape {} needs {}", where, j["data"].size(),
                                      s.ToString(false), *n));
    Literal l(s);
    for (int64_t i = 0; i < *n; ++i) OPPROBE_RETURN_IF_ERROR(SetJsonElement(l, i, j["data"][static_cast<size_t>(i)], where));
    return l;
  }
  // Nested lists: dims from the nesting (complex leaves are [re, im] pairs).
  bool complex = hlo::IsComplex(param_type);
  std::vector<int64_t> dims;
  const nlohmann::json* cur = &j;
  auto is_leaf = [&](const nlohmann::json& x) { return !x.is_array() || (complex && x.size() == 2 && !x[0].is_array()); };
  while (!is_leaf(*cur)) {
    dims.push_back(static_cast<int64_t>(cur->size()));
    if (cur->empty()) break;
    cur = &(*cur)[0];
  }
  Literal l(Shape::Array(param_type, dims));
  std::vector<const nlohmann::json*> leaves;
  std::function<Status(const nlohmann::json&, size_t)> walk = [&](const nlohmann::json& x, size_t depth) -> Status {
    if (depth == dims.size()) {
      if (!is_leaf(x)) return InvalidInput(fmt::format("{}: ragged nested lists", where));
      leaves.push_back(&x);
      return Status::Ok();
    }
    if (is_leaf(x) || static_cast<int64_t>(x.size()) != dims[depth])
      return InvalidInput(fmt::format("{}: ragged nested lists", where));
    for (const auto& e : x) OPPROBE_RETURN_IF_ERROR(walk(e, depth + 1));
    return Status::Ok();
  };
  OPPROBE_RETURN_IF_ERROR(walk(j, 0));
  for (size_t i = 0; i < leaves.size(); ++i) OPPROBE_RETURN_IF_ERROR(SetJsonElement(l, static_cast<int64_t>(i), *leaves[i], where));
  return l;
}

Expected<Literal> LoadInput(const std::string& path, size_t index, const hlo::Instruction& param) {
  OPPROBE_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  std::string where = fmt::format("{} ({})", path, Describe(index, param));
  PrimitiveType want = param.shape.IsArray() ? param.shape.element_type() : PrimitiveType::F32;
  Expected<Literal> lit = bytes.compare(0, 6, "\x93NUMPY") == 0 ? ReadNpy(bytes, where) : ReadJsonInput(bytes, where, want);
  if (!lit.ok()) return lit.status();
  const Shape& got = lit->shape();
  if (!param.shape.IsArray())
    return InvalidInput(fmt::format("{}: tuple-shaped parameters cannot be given as files", where));
  if (got.element_type() != want)
    return InvalidInput(fmt::format("{}: dtype {} where {} is expected", where, hlo::PrimitiveTypeName(got.element_type()),
                                    hlo::PrimitiveTypeName(want)));
  bool empty_match = got.elements() == 0 && param.shape.elements() == 0;
  if (got.dimensions() != param.shape.dimensions() && !empty_match)
    return InvalidInput(fmt::format("{}: shape {} where {} is expected", where, got.ToString(false),
                                    param.shape.ToString(false)));
  Literal fixed(param.shape);
  fixed.data() = lit->data();
  return fixed;
}

// ---- output ----

nlohmann::json ElementJson(const Literal& l, int64_t i) {
  PrimitiveType t = l.shape().element_type();
  auto real = [](double v) -> nlohmann::json {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
  };
  if (t == PrimitiveType::PRED) return l.data()[static_cast<size_t>(i)] != 0;
  if (hlo::IsSignedInteger(t)) return l.GetAsInt64(i);
  if (hlo::IsUnsignedInteger(t)) return l.GetAsUint64(i);
  if (hlo::IsComplex(t)) {
    auto c = l.GetAsComplex(i);
    return nlohmann::json::array({real(c.real()), real(c.imag())});
  }
  return real(l.GetAsDouble(i));
}

nlohmann::json LiteralJson(const Literal& l) {
  if (l.shape().IsTuple()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& e : l.tuple_elements()) a.push_back(LiteralJson(e));
    return {{"tuple", a}};
  }
  nlohmann::json data = nlohmann::json::array();
  for (int64_t i = 0; i < l.element_count(); ++i) data.push_back(ElementJson(l, i));
  return {{"shape", l.shape().dimensions()}, {"dtype", std::string(hlo::PrimitiveTypeName(l.shape().element_type()))},
          {"data", data}};
}

int RunRun(const RunArgs& a) {
  auto text = ReadFile(a.file);
  if (!text.ok()) return ReportError(text.status());
  auto modules = hlo::ParseModules(*text, a.file);
  if (!modules.ok()) return ReportError(modules.status());
  if (modules->empty()) return ReportError(InvalidInput(fmt::format("{}: no HLO module in the file", a.file)));
  const hlo::Module* module = nullptr;
  if (!a.module_name.empty()) {
    for (const auto& m : *modules)
      if (m->name() == a.module_name) module = m.get();
    if (!module) return ReportError(UsageError(fmt::format("--module: {} has no module '{}'", a.file, a.module_name)));
  } else if (modules->size() == 1) {
    module = modules->front().get();
  } else {
    return ReportError(UsageError(fmt::format("{} holds {} modules; choose one with --module NAME (first: {})", a.file,
                                              modules->size(), modules->front()->name())));
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
      auto lit = LoadInput(a.inputs[i], i, *params[i]);
      if (!lit.ok()) return ReportError(lit.status());
      args.push_back(std::move(lit).value());
    }
  }
  hlo::EvaluatorOptions options;
  options.seed = a.seed;
  auto result = hlo::Evaluate(*module, args, options);
  if (!result.ok()) {
    const Status& st = result.status();
    if (st.code() == ErrorCode::kUnimplemented) {
      std::fprintf(stderr, "opprobe: %s: the interpreter cannot evaluate this module: %s\n", a.file.c_str(),
                   st.message().c_str());
      return 3;
    }
    return ReportError(st.WithContext(a.file));
  }
  std::vector<const Literal*> outs;
  if (result->shape().IsTuple())
    for (const auto& e : result->tuple_elements()) outs.push_back(&e);
  else
    outs.push_back(&*result);
  if (!a.out.empty()) {
    nlohmann::json j;
    j["module"] = module->name();
    j["outputs"] = nlohmann::json::array();
    for (const Literal* o : outs) j["outputs"].push_back(LiteralJson(*o));
    Status st = reports::WriteFileAtomically(a.out, j.dump(1) + "\n");
    if (!st.ok()) return ReportError(st);
    return 0;
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    std::string shape = outs[i]->shape().ToString(false);
    std::printf("%s%s %s\n", outs.size() > 1 ? fmt::format("[{}] ", i).c_str() : "", shape.c_str(),
                outs[i]->ValueToString().c_str());
  }
  return 0;
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
