// The opprobe command line: `Run` parses argv, dispatches to a subcommand and returns the exit code.
#pragma once

namespace opprobe::cli {

int Run(int argc, char** argv);

}  // namespace opprobe::cli
