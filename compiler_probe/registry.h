// Maps a backend spec string (`rules:neuron-trn1`, `cmd:TEMPLATE`, `interp`, `pjrt:PLUGIN.so,...`) to
// a backend. Registries are values, so tests can build their own with fake backends.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler_probe/backend.h"
#include "support/status.h"

namespace opprobe::compiler_probe {

class Registry {
 public:
  // `arg` is what follows `name:` in the spec (empty for `interp`).
  using Factory = std::function<Expected<std::unique_ptr<Backend>>(const std::string& arg, const BackendOptions&)>;

  struct Entry {
    std::string name;         // `rules`
    std::string usage;        // `rules:NAME|FILE`
    std::string description;  // one line for `opprobe backends`
    Factory factory;
  };

  void Register(Entry entry);
  // Unknown names are a usage error with a "did you mean" suggestion; a factory failure is returned as is
  // (kUnavailable for a missing compiler or plugin).
  Expected<std::unique_ptr<Backend>> Create(const std::string& spec, const BackendOptions& options = {}) const;
  const std::vector<Entry>& entries() const { return entries_; }
  // Optional per backend: what is installed (e.g. `jaxlib 0.10.2`), for `opprobe backends`; may run a program.
  void SetInstalled(const std::string& name, std::function<std::string()> describe) {
    installed_[name] = std::move(describe);
  }
  std::string Installed(const std::string& name) const {
    auto it = installed_.find(name);
    return it == installed_.end() ? "" : it->second();
  }

  // The registry with every built-in backend (one registration line per backend folder).
  static Registry Builtin();

 private:
  std::vector<Entry> entries_;
  std::map<std::string, std::function<std::string()>> installed_;
};

}  // namespace opprobe::compiler_probe
