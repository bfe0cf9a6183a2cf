// What must not outlive opprobe: the child processes it starts (compilers, workers, captured scripts) and the
// temporary folders it makes. Each is registered here while it exists. opprobe's main() installs the handlers:
//
//   SIGINT, SIGTERM, SIGHUP: the handler only wakes a thread (a byte on a pipe); that thread waits for any child or
//     folder being started to be registered (and holds back any later start), kills every registered child with
//     SIGKILL (a compiler's or worker's whole process group, with whatever it started), waits for them to die,
//     removes the registered folders and ends opprobe by the same signal (a shell sees 128+N). A second signal while
//     it works ends opprobe at once, after CleanUpNow.
//   SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGQUIT (a crash, or a core asked for): CleanUpNow in the handler, then
//     the signal's own action (the core dump, the status).
//   SIGKILL: nothing runs; the children die by PR_SET_PDEATHSIG (compiler_probe/subprocess.h), the folders stay.
//
// A signal that was ignored when opprobe started (`nohup`, a background job's SIGINT) stays ignored.
#pragma once

#include <sys/types.h>

#include <string>

namespace opprobe::exit_cleanup {

// Held while a child is started and registered (or a folder made and registered, or either forgotten): the cleanup
// waits for every holder, and once it has begun a new holder waits for the process to end, so nothing starts behind
// its back and nothing it kills is reaped under it. Async-signal-safe (atomics).
class StartGuard {
 public:
  StartGuard();
  ~StartGuard();
  StartGuard(const StartGuard&) = delete;
  StartGuard& operator=(const StartGuard&) = delete;
};

// Registers a child to end with opprobe, with a StartGuard held: `group` true kills its whole process group (the
// child leads its own), false the child alone (a script in opprobe's group). False when the table is full (then
// PR_SET_PDEATHSIG alone ends it with opprobe).
bool AddChild(pid_t pid, bool group);
// Called before the child is reaped, while its pid cannot have been given to another process.
void ForgetChild(pid_t pid);

// Registers a folder to remove, with a StartGuard held; false when the table is full or the path too long.
bool AddFolder(const std::string& path);
// Called after the folder was removed.
void ForgetFolder(const std::string& path);

// Installs the handlers above (opprobe's main(); once; later calls do nothing).
void InstallSignalHandlers();

// Kills the registered children and removes the registered folders with async-signal-safe calls only, for a path
// that ends the process at once (a crash handler, file_io's SIGBUS exit). Does nothing in a forked child.
void CleanUpNow() noexcept;

}  // namespace opprobe::exit_cleanup
