#include "hlo/literal_io.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <sstream>

#include "support/file_io.h"
#include "support/quote.h"

namespace opprobe::hlo {

namespace {

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
  if (IsComplex(t)) {
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
  if ((IsInteger(t)) && v.is_number_integer()) {
    if (t == PrimitiveType::U64 && v.is_number_unsigned()) l.Set<uint64_t>(i, v.get<uint64_t>());
    else l.SetFromInt64(i, v.get<int64_t>());
    return Status::Ok();
  }
  double d;
  if (!number(v, d)) return InvalidInput(fmt::format("{}: element {} is not a number", where, i));
  l.SetFromDouble(i, d);
  return Status::Ok();
}

nlohmann::json ElementJson(const Literal& l, int64_t i) {
  PrimitiveType t = l.shape().element_type();
  auto real = [](double v) -> nlohmann::json {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
  };
  if (t == PrimitiveType::PRED) return l.data()[static_cast<size_t>(i)] != 0;
  if (IsSignedInteger(t)) return l.GetAsInt64(i);
  if (IsUnsignedInteger(t)) return l.GetAsUint64(i);
  if (IsComplex(t)) {
    auto c = l.GetAsComplex(i);
    return nlohmann::json::array({real(c.real()), real(c.imag())});
  }
  return real(l.GetAsDouble(i));
}

bool IsNpy(std::string_view bytes) { return bytes.substr(0, 6) == std::string_view("\x93NUMPY", 6); }

}  // namespace

Expected<Literal> ParseNpy(std::string_view bytes, const std::string& where) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return InvalidInput(fmt::format("{}: not a NumPy .npy file", where));
  int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len =
        static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return InvalidInput(fmt::format("{}: truncated .npy header", where));
    header_len = 0;
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + static_cast<size_t>(i)])) << (8 * i);
    header_start = 12;
  } else {
    return InvalidInput(fmt::format("{}: unsupported .npy version {}", where, major));
  }
  if (header_start + header_len > bytes.size()) return InvalidInput(fmt::format("{}: truncated .npy header", where));
  std::string header(bytes.substr(header_start, header_len));
  auto field = [&](const std::string& key) -> std::string {
    auto k = header.find("'" + key + "'");
    if (k == std::string::npos) return "";
    auto colon = header.find(':', k);
    if (colon == std::string::npos) return "";
    size_t v = header.find_first_not_of(' ', colon + 1);
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
  if (descr.empty() || shape_text.empty())
    return InvalidInput(fmt::format("{}: .npy header lacks descr or shape", where));
  if (fortran.rfind("True", 0) == 0) return InvalidInput(fmt::format("{}: Fortran-order .npy is not supported", where));
  if (descr[0] == '>' && descr.substr(1) != "i1" && descr.substr(1) != "u1" && descr.substr(1) != "b1")
    return InvalidInput(fmt::format("{}: big-endian .npy ({}) is not supported", where, support::Quote(descr)));
  std::string kind = descr[0] == '<' || descr[0] == '|' || descr[0] == '=' || descr[0] == '>' ? descr.substr(1) : descr;
  static const std::pair<const char*, PrimitiveType> kTypes[] = {
      {"f2", PrimitiveType::F16}, {"f4", PrimitiveType::F32},  {"f8", PrimitiveType::F64}, {"i1", PrimitiveType::S8},
      {"i2", PrimitiveType::S16}, {"i4", PrimitiveType::S32},  {"i8", PrimitiveType::S64}, {"u1", PrimitiveType::U8},
      {"u2", PrimitiveType::U16}, {"u4", PrimitiveType::U32},  {"u8", PrimitiveType::U64}, {"b1", PrimitiveType::PRED},
      {"c8", PrimitiveType::C64}, {"c16", PrimitiveType::C128}};
  std::optional<PrimitiveType> type;
  for (const auto& [name, t] : kTypes)
    if (kind == name) type = t;
  if (!type) return InvalidInput(fmt::format("{}: .npy dtype {} is not supported", where, support::Quote(descr)));
  std::vector<int64_t> dims;
  std::string inner = shape_text.substr(1, shape_text.size() - 2);
  std::stringstream ss(inner);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    size_t a = tok.find_first_not_of(' '), b = tok.find_last_not_of(" L");
    if (a == std::string::npos) continue;
    try {
      dims.push_back(std::stoll(tok.substr(a, b - a + 1)));
    } catch (...) { return InvalidInput(fmt::format("{}: bad .npy shape {}", where, support::Quote(shape_text))); }
    if (dims.back() < 0) return InvalidInput(fmt::format("{}: bad .npy shape {}", where, support::Quote(shape_text)));
  }
  Shape shape = Shape::Array(*type, dims);
  auto n = shape.ElementCount();
  if (!n.ok()) return InvalidInput(fmt::format("{}: {}", where, n.status().message()));
  size_t data_start = header_start + header_len;
  size_t need = static_cast<size_t>(*n) * static_cast<size_t>(ByteWidth(*type));
  if (bytes.size() - data_start != need)
    return InvalidInput(fmt::format("{}: .npy holds {} data bytes, shape {} needs {}", where, bytes.size() - data_start,
                                    shape.ToString(false), need));
  Literal l(shape);
  if (need) std::memcpy(l.data().data(), bytes.data() + data_start, need);
  return l;
}

Expected<Literal> ParseJsonLiteral(std::string_view text, const std::string& where, PrimitiveType param_type) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return InvalidInput(fmt::format("{}: invalid JSON: {}", where, support::OneLine(e.what())));
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
      auto pt = PrimitiveTypeFromName(j["dtype"].get<std::string>());
      if (!pt || !IsArrayType(*pt))
        return InvalidInput(fmt::format("{}: unknown dtype {}", where, support::Quote(j["dtype"].get<std::string>())));
      t = *pt;
    }
    Shape s = Shape::Array(t, dims);
    auto n = s.ElementCount();
    if (!n.ok()) return InvalidInput(fmt::format("{}: {}", where, n.status().message()));
    if (static_cast<int64_t>(j["data"].size()) != *n)
      return InvalidInput(
          fmt::format("{}: data has {} elements, shape {} needs {}", where, j["data"].size(), s.ToString(false), *n));
    Literal l(s);
    for (int64_t i = 0; i < *n; ++i)
      OPPROBE_RETURN_IF_ERROR(SetJsonElement(l, i, j["data"][static_cast<size_t>(i)], where));
    return l;
  }
  // Nested lists: dims from the nesting (complex leaves are [re, im] pairs).
  bool complex = IsComplex(param_type);
  std::vector<int64_t> dims;
  const nlohmann::json* cur = &j;
  auto is_leaf = [&](const nlohmann::json& x) {
    return !x.is_array() || (complex && x.size() == 2 && !x[0].is_array());
  };
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
  for (size_t i = 0; i < leaves.size(); ++i)
    OPPROBE_RETURN_IF_ERROR(SetJsonElement(l, static_cast<int64_t>(i), *leaves[i], where));
  return l;
}

Expected<Literal> ParseLiteral(std::string_view bytes, const std::string& where, PrimitiveType default_type) {
  return IsNpy(bytes) ? ParseNpy(bytes, where) : ParseJsonLiteral(bytes, where, default_type);
}

Expected<Literal> ReadLiteralFor(const std::string& path, const Shape& want, const std::string& where) {
  if (!want.IsArray()) return InvalidInput(fmt::format("{}: tuple-shaped parameters cannot be given as files", where));
  OPPROBE_ASSIGN_OR_RETURN(std::string bytes, io::ReadFile(path));
  OPPROBE_ASSIGN_OR_RETURN(Literal lit, ParseLiteral(bytes, where, want.element_type()));
  const Shape& got = lit.shape();
  if (got.element_type() != want.element_type())
    return InvalidInput(fmt::format("{}: dtype {} where {} is expected", where, PrimitiveTypeName(got.element_type()),
                                    PrimitiveTypeName(want.element_type())));
  bool empty_match = got.elements() == 0 && want.elements() == 0;
  if (got.dimensions() != want.dimensions() && !empty_match)
    return InvalidInput(
        fmt::format("{}: shape {} where {} is expected", where, got.ToString(false), want.ToString(false)));
  Literal fixed(want);
  fixed.data() = lit.data();
  return fixed;
}

nlohmann::json LiteralToJson(const Literal& l) {
  if (l.shape().IsTuple()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& e : l.tuple_elements()) a.push_back(LiteralToJson(e));
    return {{"tuple", a}};
  }
  nlohmann::json data = nlohmann::json::array();
  for (int64_t i = 0; i < l.element_count(); ++i) data.push_back(ElementJson(l, i));
  return {{"shape", l.shape().dimensions()},
          {"dtype", std::string(PrimitiveTypeName(l.shape().element_type()))},
          {"data", data}};
}

}  // namespace opprobe::hlo
