// Which build of opprobe's code is running: the GNU build ID (the linker's hash of the linked output) of the
// executable or shared object this code was linked into. Anything derived from opprobe's own code (a lowering's
// units) can be memoized under it: a rebuilt opprobe has another ID and derives afresh.
#pragma once

#include <string>

namespace opprobe::analyzer {

// Lowercase hex of the build ID note of the object holding this function; empty when that object has none (linked
// with --build-id=none), and then nothing may be memoized.
const std::string& BuildId();

}  // namespace opprobe::analyzer
