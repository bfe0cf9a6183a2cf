#include "analyzer/lowering/lowering.h"

namespace opprobe::analyzer {

const LoweringTable& LoweringTable::Builtin() {
  static const LoweringTable* table = [] {
    auto* t = new LoweringTable();
    return t;
  }();
  return *table;
}

}  // namespace opprobe::analyzer
