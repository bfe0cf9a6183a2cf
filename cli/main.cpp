#include "cli/app.h"
#include "cli/exit_codes.h"
#include "support/exit_cleanup.h"
#include "support/file_io.h"

int main(int argc, char** argv) {
  // Ctrl-C, SIGTERM, SIGHUP or a crash end the compilers and workers opprobe started and remove its temporary
  // folders (support/exit_cleanup.h). Here, not in Run: a test that calls Run keeps its own signal handling.
  opprobe::exit_cleanup::InstallSignalHandlers();
  // An input file cut short while opprobe reads it mapped is bad input: the exit code says so (cli/exit_codes.h).
  opprobe::io::SetChangedInputExitStatus(opprobe::cli::ExitCodeFor(opprobe::InvalidInput("")));
  return opprobe::cli::Run(argc, argv);
}
