// A small JSON Schema (draft-07) validator for the subset of keywords the project's schemas use:
// type, properties, required, additionalProperties, items, enum, const, pattern, minimum, maximum,
// minLength, minItems, maxItems, uniqueItems, $ref (local "#/definitions/..."), anyOf, oneOf, allOf.
// Annotation keywords ($schema, $id, title, description, default, format, definitions) are accepted and
// not checked. Any other keyword is reported as an error, so a schema can never silently use more
// than this validator checks.
#pragma once

#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace opprobe::testing {

class JsonSchemaValidator {
 public:
  explicit JsonSchemaValidator(nlohmann::json schema) : root_(std::move(schema)) {}

  // Errors as "<json pointer>: <what>"; empty when `doc` is valid.
  std::vector<std::string> Validate(const nlohmann::json& doc) {
    errors_.clear();
    Check(root_, doc, "", 0);
    return errors_;
  }

 private:
  static std::string TypeOf(const nlohmann::json& j) {
    if (j.is_null()) return "null";
    if (j.is_boolean()) return "boolean";
    if (j.is_number_integer()) return "integer";
    if (j.is_number()) return "number";
    if (j.is_string()) return "string";
    if (j.is_array()) return "array";
    return "object";
  }
  static bool HasType(const nlohmann::json& j, const std::string& t) {
    std::string actual = TypeOf(j);
    return actual == t || (t == "number" && actual == "integer") ||
           (t == "integer" && j.is_number_float() &&
            j.get<double>() == static_cast<double>(static_cast<long long>(j.get<double>())));
  }
  static size_t Utf8Length(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  }

  const nlohmann::json& Resolve(const std::string& ref, const std::string& path) {
    static const nlohmann::json kEmpty = nlohmann::json::object();
    if (ref.rfind("#/", 0) != 0) {
      errors_.push_back(path + ": unsupported $ref " + ref);
      return kEmpty;
    }
    nlohmann::json::json_pointer ptr(ref.substr(1));
    if (!root_.contains(ptr)) {
      errors_.push_back(path + ": unresolved $ref " + ref);
      return kEmpty;
    }
    return root_.at(ptr);
  }

  // Validates without recording errors (for anyOf/oneOf branches).
  bool Quiet(const nlohmann::json& schema, const nlohmann::json& doc, const std::string& path, int depth) {
    auto saved = std::move(errors_);
    errors_.clear();
    Check(schema, doc, path, depth);
    bool ok = errors_.empty();
    errors_ = std::move(saved);
    return ok;
  }

  void Check(const nlohmann::json& schema, const nlohmann::json& doc, const std::string& path, int depth) {
    if (depth > 64) {
      errors_.push_back(path + ": schema nesting too deep");
      return;
    }
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) errors_.push_back(path + ": not allowed here");
      return;
    }
    if (!schema.is_object()) {
      errors_.push_back(path + ": schema is not an object");
      return;
    }
    static const std::set<std::string> kKnown = {"$schema",
                                                 "$id",
                                                 "$comment",
                                                 "id",
                                                 "title",
                                                 "description",
                                                 "default",
                                                 "format",
                                                 "definitions",
                                                 "type",
                                                 "properties",
                                                 "required",
                                                 "additionalProperties",
                                                 "items",
                                                 "enum",
                                                 "const",
                                                 "pattern",
                                                 "minimum",
                                                 "maximum",
                                                 "minLength",
                                                 "minItems",
                                                 "maxItems",
                                                 "uniqueItems",
                                                 "$ref",
                                                 "anyOf",
                                                 "oneOf",
                                                 "allOf"};
    for (const auto& [k, v] : schema.items())
      if (!kKnown.count(k)) errors_.push_back(path + ": schema keyword '" + k + "' is not supported by this validator");

    if (schema.contains("$ref")) Check(Resolve(schema["$ref"].get<std::string>(), path), doc, path, depth + 1);

    if (schema.contains("type")) {
      const auto& t = schema["type"];
      bool ok = false;
      if (t.is_string()) ok = HasType(doc, t.get<std::string>());
      else
        for (const auto& one : t) ok = ok || HasType(doc, one.get<std::string>());
      if (!ok) {
        errors_.push_back(path + ": expected type " + t.dump() + ", got " + TypeOf(doc));
        return;
      }
    }
    if (schema.contains("const") && doc != schema["const"])
      errors_.push_back(path + ": expected " + schema["const"].dump() + ", got " + doc.dump());
    if (schema.contains("enum")) {
      bool ok = false;
      for (const auto& e : schema["enum"]) ok = ok || e == doc;
      if (!ok) errors_.push_back(path + ": " + doc.dump() + " is not one of " + schema["enum"].dump());
    }
    if (doc.is_string()) {
      const std::string s = doc.get<std::string>();
      if (schema.contains("pattern") && !std::regex_search(s, std::regex(schema["pattern"].get<std::string>())))
        errors_.push_back(path + ": \"" + s + "\" does not match " + schema["pattern"].get<std::string>());
      if (schema.contains("minLength") && Utf8Length(s) < schema["minLength"].get<size_t>())
        errors_.push_back(path + ": string shorter than " + schema["minLength"].dump());
    }
    if (doc.is_number()) {
      double v = doc.get<double>();
      if (schema.contains("minimum") && v < schema["minimum"].get<double>())
        errors_.push_back(path + ": " + doc.dump() + " < minimum " + schema["minimum"].dump());
      if (schema.contains("maximum") && v > schema["maximum"].get<double>())
        errors_.push_back(path + ": " + doc.dump() + " > maximum " + schema["maximum"].dump());
    }
    if (doc.is_array()) {
      if (schema.contains("minItems") && doc.size() < schema["minItems"].get<size_t>())
        errors_.push_back(path + ": fewer than " + schema["minItems"].dump() + " items");
      if (schema.contains("maxItems") && doc.size() > schema["maxItems"].get<size_t>())
        errors_.push_back(path + ": more than " + schema["maxItems"].dump() + " items");
      if (schema.value("uniqueItems", false)) {
        std::set<std::string> seen;
        for (const auto& e : doc)
          if (!seen.insert(e.dump()).second) errors_.push_back(path + ": duplicate item " + e.dump());
      }
      if (schema.contains("items"))
        for (size_t i = 0; i < doc.size(); ++i)
          Check(schema["items"], doc[i], path + "/" + std::to_string(i), depth + 1);
    }
    if (doc.is_object()) {
      if (schema.contains("required"))
        for (const auto& r : schema["required"])
          if (!doc.contains(r.get<std::string>()))
            errors_.push_back(path + ": missing required \"" + r.get<std::string>() + "\"");
      const nlohmann::json* props = schema.contains("properties") ? &schema["properties"] : nullptr;
      for (const auto& [k, v] : doc.items()) {
        std::string child = path + "/" + k;
        if (props != nullptr && props->contains(k)) {
          Check((*props)[k], v, child, depth + 1);
        } else if (schema.contains("additionalProperties")) {
          Check(schema["additionalProperties"], v, child, depth + 1);
        }
      }
    }
    if (schema.contains("allOf"))
      for (const auto& s : schema["allOf"]) Check(s, doc, path, depth + 1);
    if (schema.contains("anyOf")) {
      bool ok = false;
      for (const auto& s : schema["anyOf"]) ok = ok || Quiet(s, doc, path, depth + 1);
      if (!ok) errors_.push_back(path + ": matches none of anyOf");
    }
    if (schema.contains("oneOf")) {
      int n = 0;
      for (const auto& s : schema["oneOf"]) n += Quiet(s, doc, path, depth + 1);
      if (n != 1) errors_.push_back(path + ": matches " + std::to_string(n) + " of oneOf (expected exactly 1)");
    }
  }

  nlohmann::json root_;
  std::vector<std::string> errors_;
};

}  // namespace opprobe::testing
