// The one place where outcomes become exit codes (DESIGN.md "Exit codes"; docs/architecture.md says where the
// code adds 4). Library errors carry an ErrorCode that says what went wrong; ExitCodeFor maps it here.
#pragma once

#include "support/status.h"

namespace opprobe::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitGateFailed = 1,   // a gate (--fail-under, --baseline) failed or `diff` found a regression
  kExitBadInput = 2,     // bad flags, arguments or input files; a script that failed or captured nothing
  kExitUnavailable = 3,  // the backend (or what it needs) cannot be used
  kExitInternal = 4,     // a bug in opprobe
};

inline int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case ErrorCode::kOk: return kExitOk;
    case ErrorCode::kInvalidInput: return kExitBadInput;
    case ErrorCode::kUnavailable: return kExitUnavailable;
    case ErrorCode::kUnimplemented:
    case ErrorCode::kInternal: return kExitInternal;
  }
  return kExitInternal;
}

}  // namespace opprobe::cli
