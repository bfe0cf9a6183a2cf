// Nothing outlives opprobe (issue #29.1, support/exit_cleanup.h): the real binary is stopped while it probes, with
// every backend that runs something of its own (a `cmd:` compiler, the xla:cpu and iree:llvm-cpu Python workers and
// IREE's iree-compile under them, a real PJRT plugin's worker, the real TPU and GPU compilers' workers), by Ctrl-C
// (SIGINT to its process group, as a terminal sends it), SIGTERM, SIGHUP, a crash (SIGSEGV) or SIGKILL. Afterwards no
// process it started, or that those started, may still run, and no temporary folder it made may be left in $TMPDIR.
//
// The test process is a child subreaper (PR_SET_CHILD_SUBREAPER): whatever opprobe leaves orphaned becomes the test's
// child instead of init's, so that it is found (and reaped) here. Everything waits on events, polled: the compilers or
// the worker's first probes before the signal, opprobe's exit after it.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "testing/run_binary.h"
#include "testing/temp_dir_test.h"

namespace opprobe {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using testing::ReadWholeFile;

constexpr const char* kFakeCompiler = OPPROBE_FAKE_COMPILER;

struct Proc {
  pid_t pid = 0, ppid = 0, pgrp = 0;
  char state = '?';
  std::string comm;     // as the kernel keeps it: 15 characters at most
  std::string cmdline;  // its words joined by spaces
};

// Every process on the machine, by pid.
std::map<pid_t, Proc> ScanProc() {
  std::map<pid_t, Proc> procs;
  DIR* dir = ::opendir("/proc");
  if (!dir) return procs;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::string base = std::string("/proc/") + e->d_name;
    std::string stat = ReadWholeFile(base + "/stat");
    size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close + 2 >= stat.size()) continue;
    Proc p;
    p.pid = std::atoi(e->d_name);
    p.comm = stat.substr(open + 1, close - open - 1);
    p.state = stat[close + 2];
    int ppid = 0, pgrp = 0;
    if (std::sscanf(stat.c_str() + close + 3, " %d %d", &ppid, &pgrp) != 2) continue;
    p.ppid = ppid;
    p.pgrp = pgrp;
    p.cmdline = ReadWholeFile(base + "/cmdline");
    std::replace(p.cmdline.begin(), p.cmdline.end(), '\0', ' ');
    procs[p.pid] = std::move(p);
  }
  ::closedir(dir);
  return procs;
}

bool Running(const Proc& p) { return p.state != 'Z' && p.state != 'X'; }

// The processes below `root` (its children, theirs, ...), running or not.
std::vector<Proc> Descendants(pid_t root, const std::map<pid_t, Proc>& procs) {
  std::vector<Proc> out;
  for (const auto& [pid, p] : procs) {
    for (pid_t up = p.ppid; up > 1;) {
      if (up == root) {
        out.push_back(p);
        break;
      }
      auto it = procs.find(up);
      if (it == procs.end()) break;
      up = it->second.ppid;
    }
  }
  return out;
}

// Polls `done` every few milliseconds until it holds or `seconds` pass; whether it held.
bool WaitFor(const std::function<bool()>& done, double seconds) {
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::vector<std::string> FolderEntries(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  return names;
}

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

class NothingOutlivesOpprobe : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0) << std::strerror(errno);
    tmp_ = Path("tmp");
    fs::create_directories(tmp_);
  }

  void TearDown() override {
    // Whatever a failed test left running goes now, so that it does not outlive the test either.
    for (pid_t target : leftovers_) ::kill(target, SIGKILL);
    if (pid_ > 0) ::kill(pid_, SIGKILL);
    for (const auto& [pid, p] : ScanProc())
      if (p.ppid == ::getpid()) ::kill(pid, SIGKILL);  // orphans that came here
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {}
    TempDirTest::TearDown();
  }

  // Starts `opprobe args...` in its own process group (as a shell starts a job), with $TMPDIR a fresh folder, the
  // signals at their defaults (ctest may run with SIGINT ignored) and no core file.
  void Start(const std::vector<std::string>& args) {
    std::vector<std::string> argv_s{OPPROBE_BIN};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    out_path_ = Path("stdout"), err_path_ = Path("stderr");
    const std::string tmpdir = "TMPDIR=" + tmp_;
    pid_ = ::fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      ::setpgid(0, 0);
      for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV, SIGPIPE}) ::signal(sig, SIG_DFL);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      rlimit no_core{0, 0};
      ::setrlimit(RLIMIT_CORE, &no_core);
      ::putenv(const_cast<char*>(tmpdir.c_str()));
      int in = ::open("/dev/null", O_RDONLY);
      int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(in, 0), ::dup2(out, 1), ::dup2(err, 2);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);  // both sides, so that the group exists whichever runs first
  }

  bool Exited() {
    if (pid_ <= 0) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
    status_ = status;
    pid_ = -1;
    return true;
  }

  std::string Err() const { return ReadWholeFile(err_path_); }

  // Waits until `ready` (probing has begun) while opprobe runs; fails the test if opprobe ends first or it takes
  // minutes (a Python worker loading jaxlib on a loaded machine takes seconds).
  void WaitUntilProbing(const std::function<bool()>& ready, const std::string& what) {
    bool ok = WaitFor([&] { return Exited() || ready(); }, 300);
    ASSERT_GT(pid_, 0) << "opprobe ended before " << what << ": status " << status_ << "\n" << Err();
    ASSERT_TRUE(ok) << "no " << what << " after 300 s\n" << Err();
  }

  std::vector<Proc> Children() const { return Descendants(pid_, ScanProc()); }

  // Records what opprobe runs now (pids and process groups), sends `sig` (SIGINT to its process group, as a
  // terminal's Ctrl-C; any other to opprobe alone, as kill does) and waits for opprobe to end.
  void Stop(int sig) {
    started_ = Children();
    ASSERT_FALSE(started_.empty()) << "opprobe runs no child process\n" << Err();
    for (const Proc& p : started_) {
      pids_.insert(p.pid);
      if (p.pgrp != pid_) groups_.insert(p.pgrp);  // opprobe's own group holds only what shares it (a script)
      leftovers_.push_back(p.pid);
      if (p.pgrp != pid_ && p.pgrp > 1) leftovers_.push_back(-p.pgrp);
    }
    const pid_t opprobe = pid_;
    ASSERT_EQ(::kill(sig == SIGINT ? -opprobe : opprobe, sig), 0) << std::strerror(errno);
    ASSERT_TRUE(WaitFor([&] { return Exited(); }, 120)) << "opprobe did not end within 120 s of the signal\n" << Err();
  }

  // The processes still running that opprobe started (or that they started): the recorded ones, any in their
  // process groups, and any orphan that came to this process (the subreaper).
  std::vector<std::string> Survivors() {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {  // orphans that died meanwhile
    }
    std::vector<std::string> out;
    for (const auto& [pid, p] : ScanProc()) {
      if (!Running(p) || pid == ::getpid()) continue;
      if (pids_.count(pid) || groups_.count(p.pgrp) || p.ppid == ::getpid())
        out.push_back(std::to_string(pid) + " " + p.cmdline);
    }
    return out;
  }

  std::string Started() const {
    std::string s;
    for (const Proc& p : started_)
      s += "\n  " + std::to_string(p.pid) + " (group " + std::to_string(p.pgrp) + ") " + p.cmdline;
    return s;
  }

  // After Stop: opprobe ended by `sig` (a shell's status 128+sig), and neither a process nor a folder is left.
  // `grace`: how long the processes may take to die after opprobe has ended (0: they must be gone when it has; a
  // crash or a SIGKILL leaves their killing to the kernel, which is quick but not synchronous).
  void ExpectNothingLeft(int sig, double grace, bool folders = true) {
    ASSERT_TRUE(WIFSIGNALED(status_)) << "status " << status_ << "\n" << Err();
    EXPECT_EQ(WTERMSIG(status_), sig) << Err();
    std::vector<std::string> survivors;
    WaitFor([&] { return (survivors = Survivors()).empty(); }, grace);
    EXPECT_TRUE(survivors.empty()) << "still running after opprobe ended:\n  " << Joined(survivors)
                                   << "\nstarted:" << Started() << "\n"
                                   << Err();
    if (folders) { EXPECT_TRUE(FolderEntries(tmp_).empty()) << "left in $TMPDIR: " << Joined(FolderEntries(tmp_)); }
  }

  // Compilers `cmd:` runs (the fake compiler), by command line.
  int RunningCompilers() {
    int n = 0;
    for (const Proc& p : Children())
      if (Running(p) && p.cmdline.find("opprobe_fake_compiler") != std::string::npos && p.ppid == pid_) ++n;
    return n;
  }

  bool HasFolder(const std::string& prefix) {
    for (const auto& name : FolderEntries(tmp_))
      if (name.rfind(prefix, 0) == 0) return true;
    return false;
  }

  bool Probing() { return Err().find("opprobe: probed ") != std::string::npos; }

  bool RunsProgram(const std::string& name) {
    for (const Proc& p : Children())
      if (Running(p) && p.cmdline.find(name) != std::string::npos) return true;
    return false;
  }

  // `--backend cmd:` with the fake compiler given `flags`, three at a time, on `input` (the bundled ResNet-18 step).
  std::vector<std::string> CmdAnalysis(const std::string& flags,
                                       const std::string& input = "samples/traces/resnet18_train.json") {
    std::vector<std::string> args{"analyze",
                                  "--no-cache",
                                  "--no-progress",
                                  "-j",
                                  "3",
                                  "--backend",
                                  std::string("cmd:") + kFakeCompiler + " " + flags + " {hlo_txt}"};
    if (!input.empty()) args.insert(args.begin() + 1, input);
    return args;
  }

  // A worker backend on the bundled ResNet-18 step, one unit per compile (so that probing lasts), with progress lines.
  std::vector<std::string> WorkerAnalysis(const std::string& backend) {
    return {"analyze",
            "samples/traces/resnet18_train.json",
            "--no-cache",
            "--progress",
            "--probe-batch",
            "1",
            "--backend",
            backend,
            "-o",
            Path("report.json")};
  }

  void StopCompilers(int sig) {
    // --hang: each compiler also starts a child of its own, in its process group, and both sleep forever.
    ASSERT_NO_FATAL_FAILURE(Start(CmdAnalysis("--hang")));
    ASSERT_NO_FATAL_FAILURE(WaitUntilProbing([&] { return RunningCompilers() == 3 && HasFolder("opprobe-cmd-"); },
                                             "three running compilers"));
    ASSERT_NO_FATAL_FAILURE(Stop(sig));
    ExpectNothingLeft(sig, 0);
    EXPECT_NE(Err().find("stopping its compilers and workers"), std::string::npos) << Err();
  }

  void StopWorker(const std::string& backend, int sig, const std::function<bool()>& probing, const std::string& what) {
    ASSERT_NO_FATAL_FAILURE(Start(WorkerAnalysis(backend)));
    ASSERT_NO_FATAL_FAILURE(WaitUntilProbing(probing, what));
    ASSERT_NO_FATAL_FAILURE(Stop(sig));
    ExpectNothingLeft(sig, 0);
  }

  std::string tmp_;
  pid_t pid_ = -1;
  int status_ = 0;
  std::string out_path_, err_path_;
  std::vector<Proc> started_;
  std::set<pid_t> pids_, groups_;
  std::vector<pid_t> leftovers_;  // kill() targets for TearDown
};

TEST_F(NothingOutlivesOpprobe, CtrlCEndsEveryCompilerWithWhatItStartedAndRemovesTheWorkFolder) {
  StopCompilers(SIGINT);
}
TEST_F(NothingOutlivesOpprobe, SigtermEndsEveryCompiler) { StopCompilers(SIGTERM); }
TEST_F(NothingOutlivesOpprobe, SighupEndsEveryCompiler) { StopCompilers(SIGHUP); }

// `analyze -- script`: the captured trace's folder and the compilers' both go.
TEST_F(NothingOutlivesOpprobe, TheCapturedTracesFolderGoesToo) {
  std::vector<std::string> args = CmdAnalysis("--hang", "");
  for (const char* a : {"--", "/usr/bin/python3", "samples/scripts/unsupported.py"}) args.push_back(a);
  ASSERT_NO_FATAL_FAILURE(Start(args));
  ASSERT_NO_FATAL_FAILURE(WaitUntilProbing([&] { return RunningCompilers() == 3; }, "three running compilers"));
  EXPECT_EQ(FolderEntries(tmp_).size(), 2u) << Joined(FolderEntries(tmp_));  // opprobe-XXXXXX and opprobe-cmd-XXXXXX
  ASSERT_NO_FATAL_FAILURE(Stop(SIGTERM));
  ExpectNothingLeft(SIGTERM, 0);
}

TEST_F(NothingOutlivesOpprobe, CtrlCEndsTheXlaWorker) {
  StopWorker(
      "xla:cpu", SIGINT, [&] { return Probing(); }, "probing by XLA");
}

// iree-compile runs under the Python worker, in its process group: stopped in the middle of a compile.
TEST_F(NothingOutlivesOpprobe, SigtermEndsTheIreeWorkerAndTheCompileItRuns) {
  StopWorker(
      "iree:llvm-cpu", SIGTERM, [&] { return RunsProgram("iree-compile"); }, "iree-compile running");
}

// A real PJRT plugin from PyPI (scripts/test names it with OPPROBE_PJRT_CPU_PLUGIN, as tests/e2e/xla_e2e_test.cpp).
TEST_F(NothingOutlivesOpprobe, CtrlCEndsAPjrtPluginsWorker) {
  const char* plugin = std::getenv("OPPROBE_PJRT_CPU_PLUGIN");
  ASSERT_TRUE(plugin && *plugin)
      << "OPPROBE_PJRT_CPU_PLUGIN is not set: scripts/test installs requirements/pjrt-cpu.txt";
  StopWorker(
      std::string("pjrt:") + plugin, SIGINT, [&] { return Probing(); }, "probing by the PJRT plugin");
}

// The real TPU and GPU compilers (libtpu and XLA's CUDA plugin, found as tests/e2e/chip_e2e_test.cpp finds them).
TEST_F(NothingOutlivesOpprobe, SigtermEndsTheTpuCompilersWorker) {
  StopWorker(
      "tpu:v5e", SIGTERM, [&] { return Probing(); }, "probing by the TPU compiler");
}

// XLA's CUDA plugin runs ptxas for each kernel, in the worker's process group: stopped while one runs.
TEST_F(NothingOutlivesOpprobe, CtrlCEndsTheGpuCompilersWorkerAndItsPtxas) {
  StopWorker(
      "gpu:h100", SIGINT, [&] { return RunsProgram("ptxas"); }, "ptxas running");
}

// A crash: the handler kills the compilers' groups and removes the folder, then opprobe dies of its signal.
TEST_F(NothingOutlivesOpprobe, ACrashEndsEveryCompilerAndRemovesTheWorkFolder) {
  ASSERT_NO_FATAL_FAILURE(Start(CmdAnalysis("--hang")));
  ASSERT_NO_FATAL_FAILURE(WaitUntilProbing([&] { return RunningCompilers() == 3 && HasFolder("opprobe-cmd-"); },
                                           "three running compilers"));
  ASSERT_NO_FATAL_FAILURE(Stop(SIGSEGV));
  ExpectNothingLeft(SIGSEGV, 10);
}

// SIGKILL runs nothing in opprobe: its children die by PR_SET_PDEATHSIG (what they start themselves, and the folder,
// may stay: --sleep starts nothing).
TEST_F(NothingOutlivesOpprobe, SigkillStillEndsEveryCompilerAndWorker) {
  std::vector<std::string> args = CmdAnalysis("--sleep=600");
  args.insert(args.end(), {"--backend", "xla:cpu", "--probe-batch", "1"});
  ASSERT_NO_FATAL_FAILURE(Start(args));
  ASSERT_NO_FATAL_FAILURE(WaitUntilProbing([&] { return RunningCompilers() == 3 && RunsProgram(" xla:cpu "); },
                                           "three running compilers and the XLA worker"));
  ASSERT_NO_FATAL_FAILURE(Stop(SIGKILL));
  ExpectNothingLeft(SIGKILL, 10, /*folders=*/false);
}

// A capture that fails leaves no folder either (the trace's folder leaked on this path).
TEST_F(NothingOutlivesOpprobe, AFailedCaptureLeavesNoFolder) {
  ASSERT_NO_FATAL_FAILURE(Start({"analyze", "--no-cache", "--", "/usr/bin/python3", Path("no-such-script.py")}));
  ASSERT_TRUE(WaitFor([&] { return Exited(); }, 60)) << Err();
  ASSERT_TRUE(WIFEXITED(status_));
  EXPECT_EQ(WEXITSTATUS(status_), 2) << Err();
  EXPECT_NE(Err().find("script not found"), std::string::npos) << Err();
  EXPECT_TRUE(FolderEntries(tmp_).empty()) << "left in $TMPDIR: " << Joined(FolderEntries(tmp_));
}

}  // namespace
}  // namespace opprobe
