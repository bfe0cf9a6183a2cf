#include "compiler_probe/registry.h"

namespace opprobe::compiler_probe {

Registry Registry::Builtin() {
  Registry r;
  return r;
}

}  // namespace opprobe::compiler_probe
