// main() of opprobe-pjrt-worker (built by compiler_probe/CMakeLists.txt with OPPROBE_PJRT_WORKER_MAIN);
// in the opprobe_compiler_probe library this file compiles to nothing.
#ifdef OPPROBE_PJRT_WORKER_MAIN
#include "compiler_probe/pjrt/worker.h"

int main(int argc, char** argv) { return opprobe::compiler_probe::pjrt::WorkerMainEntry(argc, argv); }
#endif
