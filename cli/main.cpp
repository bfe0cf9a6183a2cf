#include "cli/app.h"
#include "support/exit_cleanup.h"

int main(int argc, char** argv) {
  // Ctrl-C, SIGTERM, SIGHUP or a crash end the compilers and workers opprobe started and remove its temporary
  // folders (support/exit_cleanup.h). Here, not in Run: a test that calls Run keeps its own signal handling.
  opprobe::exit_cleanup::InstallSignalHandlers();
  return opprobe::cli::Run(argc, argv);
}
