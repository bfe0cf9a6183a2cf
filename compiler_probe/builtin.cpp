#include "compiler_probe/registry.h"
#include "compiler_probe/interp/interp_backend.h"

namespace opprobe::compiler_probe {

Registry Registry::Builtin() {
  Registry r;
  interp::Register(r);
  return r;
}

}  // namespace opprobe::compiler_probe
