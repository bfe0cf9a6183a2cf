// Runs a Python training/inference script under the capture (the Python package capture/opprobe_capture).
// Used by `opprobe capture` and by the one-step `opprobe analyze -- <python> script.py ...`.
#pragma once

#include <string>
#include <vector>

#include "cli/progress.h"
#include "support/status.h"

namespace opprobe::cli {

// The counter of calls captured so far that the shim redraws on stderr while the script runs
// (capture/opprobe_capture/progress.py): kTerminal redraws one line in place, kLines prints a plain line every 5 s.
enum class CaptureProgress { kOff, kTerminal, kLines };
// The counter for a progress mode, given whether stderr is a terminal: kAuto draws on a terminal only, kOn
// (--progress) also prints lines without one, kOff (--no-progress, -q) nothing.
CaptureProgress CaptureProgressFor(ProgressMode mode, bool stderr_is_tty);

// The capture's Python package, run by its folder's path: `python FOLDER ARGS` runs FOLDER/__main__.py, which puts
// the folder above the package (and nothing of the package itself) first on sys.path and picks the tool by ARGS: the
// capture, `torch-xla-watch` (torch_xla_run.cpp), `torchax-lower` (torchax_run.cpp).
inline constexpr const char* kCapturePackage = "opprobe_capture";
inline constexpr const char* kCaptureEntry = "__main__.py";

// The folder of the capture package: $OPPROBE_CAPTURE_SHIM when set (an error if it holds no __main__.py), else
// PREFIX/share/opprobe/capture/opprobe_capture beside an installed opprobe, else, for a program of the build tree, the
// source tree's capture/opprobe_capture (support/runtime_files.h).
Expected<std::string> FindCaptureShim();

// Runs `command` = {python, [python options...], script.py, args...} as a child process (fork/exec, no
// shell) with the capture inserted: `python [options] PACKAGE_FOLDER --output trace_path --quiet -- script.py args...`.
// The child inherits stdin/stdout/stderr, so the script's output streams through. While it runs, SIGINT,
// SIGQUIT and SIGTERM sent to this process are passed on to the child (which still writes the trace
// recorded so far); a Ctrl-C from the terminal reaches the child directly.
// Returns the script's exit status (128+N when killed by signal N). Errors: an empty command, a missing
// interpreter, a script given without an interpreter, or an unexecutable interpreter -> kInvalidInput;
// a child that wrote no trace (e.g. torch not importable) -> kInvalidInput naming the exit status.
// With `quiet` false the shim also prints its one-line summary on stderr; `progress` is its counter.
// `fake`: the script runs on PyTorch's fake tensors (FakeTensorMode, PyTorch 2.x): every call is recorded with its
// shapes and nothing is allocated or computed (`--fake`).
// What `--fake` does, as `capture --help` and `analyze --help` say it.
inline constexpr const char* kFakeHelp =
    "Run the script on PyTorch's fake tensors (FakeTensorMode, PyTorch 2.x): every call is recorded with its shapes, "
    "nothing is allocated or computed (a model of any size); a script that needs a value (.item(), a branch on a "
    "tensor) stops at that line";

// What `--program` does, as `capture --help` says it (`analyze --fit` asks for it).
inline constexpr const char* kProgramHelp =
    "Also record the data flow of the script's first training step (from the first call inside a module's forward to "
    "the end of the first optimizer step): which call made each input, the parameters, buffers and optimizer state it "
    "reads and updates, so that `analyze --fit` builds and compiles the step as one program";

// What the capture records besides the calls.
struct CaptureFlags {
  bool fake = false;     // `--fake`
  bool program = false;  // `--program`: the first step's data flow (trace `program`)
  // The torchax stand-in even where torchax is installed (`analyze --lowering torchax`: the script runs to its end on
  // the CPU; torchax's own table lowers the calls afterwards).
  bool torchax_standin = false;
};

Expected<int> RunCapture(const std::vector<std::string>& command, const std::string& trace_path, bool quiet = true,
                         CaptureProgress progress = CaptureProgress::kOff, CaptureFlags flags = {});

}  // namespace opprobe::cli
