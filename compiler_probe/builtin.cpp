#include "compiler_probe/chip/chip_backend.h"
#include "compiler_probe/cmd/cmd_backend.h"
#include "compiler_probe/interp/interp_backend.h"
#include "compiler_probe/iree/iree_backend.h"
#include "compiler_probe/pjrt/pjrt_backend.h"
#include "compiler_probe/registry.h"
#include "compiler_probe/rules/rules_backend.h"
#include "compiler_probe/xla/xla_backend.h"

namespace opprobe::compiler_probe {

Registry Registry::Builtin() {
  Registry r;
  rules::Register(r);
  cmd::Register(r);
  interp::Register(r);
  pjrt::Register(r);
  xla::Register(r);
  iree::Register(r);
  chip::Register(r);
  return r;
}

}  // namespace opprobe::compiler_probe
