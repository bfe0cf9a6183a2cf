#include "compiler_probe/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <thread>

#include "support/exit_cleanup.h"

namespace opprobe::compiler_probe {
namespace {

SubprocessResult RunIt(std::vector<std::string> argv, double timeout = 10.0, size_t max_output = 64 * 1024) {
  SubprocessOptions o;
  o.argv = std::move(argv);
  o.timeout_seconds = timeout;
  o.max_output_bytes = max_output;
  auto r = RunSubprocess(o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : SubprocessResult{};
}

TEST(SubprocessTest, CapturesExitStatusAndBothStreams) {
  auto r = RunIt({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.signal, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.stdout_tail, "out\n");
  EXPECT_EQ(r.stderr_tail, "err\n");
  EXPECT_FALSE(r.exited_ok());
  EXPECT_EQ(r.Describe(), "exit status 3");
}

TEST(SubprocessTest, SuccessIsExitedOk) {
  auto r = RunIt({"true"});
  EXPECT_TRUE(r.exited_ok());
  EXPECT_EQ(r.exit_code, 0);
}

TEST(SubprocessTest, ReportsTheKillingSignal) {
  auto r = RunIt({"sh", "-c", "kill -SEGV $$"});
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_EQ(r.Describe(), "killed by signal 11 (SIGSEGV)");
}

TEST(SubprocessTest, TimeoutKillsTheWholeProcessGroup) {
  // The grandchild keeps stdout open; a group kill is needed for the call to come back.
  auto r = RunIt({"sh", "-c", "sleep 30 & sleep 30; echo never"}, 0.3);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_LT(r.wall_seconds, 10.0);
  EXPECT_EQ(r.stdout_tail, "");
  EXPECT_NE(r.Describe().find("timed out after"), std::string::npos);
}

TEST(SubprocessTest, LeftoverBackgroundProcessesDoNotBlock) {
  // The child exits at once but leaves a process holding the pipes; it is killed with the group.
  auto r = RunIt({"sh", "-c", "sleep 30 & echo done"}, 20.0);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_tail, "done\n");
  EXPECT_LT(r.wall_seconds, 10.0);
}

TEST(SubprocessTest, KeepsOnlyTheTailOfLargeOutput) {
  // 4 MB on each stream; only the last 1 KiB is kept, and the totals are counted.
  auto r = RunIt(
      {"sh", "-c", "head -c 4000000 /dev/zero | tr '\\0' a; echo END; head -c 4000000 /dev/zero >&2; echo TAIL >&2"},
      30.0, 1024);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_tail.size(), 1024u);
  EXPECT_EQ(r.stdout_tail.substr(r.stdout_tail.size() - 4), "END\n");
  EXPECT_EQ(r.stdout_bytes, 4000004);
  EXPECT_EQ(r.stderr_bytes, 4000005);
  EXPECT_EQ(r.stderr_tail.substr(r.stderr_tail.size() - 5), "TAIL\n");
}

TEST(SubprocessTest, RunsInTheGivenDirectoryWithExtraEnvironment) {
  auto dir = std::filesystem::temp_directory_path();
  SubprocessOptions o;
  o.argv = {"sh", "-c", "pwd; echo $OPPROBE_TEST_VAR"};
  o.cwd = dir.string();
  o.env = {{"OPPROBE_TEST_VAR", "hello"}};
  auto r = RunSubprocess(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stdout_tail, std::filesystem::canonical(dir).string() + "\nhello\n");
}

TEST(SubprocessTest, NoShellIsInvolved) {
  auto r = RunIt({"echo", "$HOME", "a;b", "*"});
  EXPECT_EQ(r.stdout_tail, "$HOME a;b *\n");
}

TEST(SubprocessTest, MissingProgramIsBackendUnavailable) {
  SubprocessOptions o;
  o.argv = {"opprobe-no-such-program-xyz"};
  auto r = RunSubprocess(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(r.status().message().find("opprobe-no-such-program-xyz"), std::string::npos);
}

// SpawnChild: a process group of its own and the descriptors as mapped.
TEST(SubprocessTest, ASpawnedChildLeadsItsOwnGroupWithTheDescriptorsMapped) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  SpawnSpec spec;
  spec.program = "/bin/sh";
  spec.argv = {"sh", "-c", "echo started $(cut -d' ' -f5 /proc/$$/stat) >&5; read x"};  // field 5: the group
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.fds = {{fds[1], 5}};
  pid_t pid = -1;
  ASSERT_EQ(SpawnChild(spec, pid), 0);
  ::close(fds[1]);
  std::string out;
  char buf[64];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  EXPECT_EQ(out, "started " + std::to_string(pid) + "\n");
  exit_cleanup::ForgetChild(pid);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status)) << status;  // `read` from /dev/null: end of file at once
}

// PR_SET_PDEATHSIG: the child dies with the thread that started it (here a thread that ends at once; in opprobe,
// opprobe itself, however it ends).
TEST(SubprocessTest, ASpawnedChildDiesWithTheThreadThatStartedIt) {
  SpawnSpec spec;
  spec.program = "/bin/sleep";
  spec.argv = {"sleep", "600"};
  pid_t pid = -1;
  int rc = -1;
  std::thread([&] { rc = SpawnChild(spec, pid); }).join();
  ASSERT_EQ(rc, 0) << std::strerror(rc);
  exit_cleanup::ForgetChild(pid);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);  // it would sleep ten minutes: only the death signal ends it now
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

TEST(SubprocessTest, ASpawnThatCannotRunTheProgramSaysWhy) {
  SpawnSpec spec;
  spec.program = "/nonexistent/compiler";
  spec.argv = {"compiler"};
  pid_t pid = 123;
  EXPECT_EQ(SpawnChild(spec, pid), ENOENT);
  EXPECT_EQ(pid, -1);
  spec.program = "/bin/true";
  spec.cwd = "/nonexistent";
  EXPECT_EQ(SpawnChild(spec, pid), ENOENT);
}

TEST(SubprocessTest, FindProgram) {
  EXPECT_TRUE(FindProgram("sh").has_value());
  EXPECT_FALSE(FindProgram("opprobe-no-such-program-xyz").has_value());
  EXPECT_FALSE(FindProgram("/nonexistent/x").has_value());
  EXPECT_FALSE(FindProgram("/etc/passwd").has_value());  // not executable
  EXPECT_FALSE(FindProgram("").has_value());
}

TEST(SubprocessTest, TailBufferKeepsTheLastBytes) {
  TailBuffer t(4);
  t.Append("ab", 2);
  EXPECT_EQ(t.str(), "ab");
  t.Append("cdef", 4);
  EXPECT_EQ(t.str(), "cdef");
  for (int i = 0; i < 100; ++i) t.Append("xyz", 3);
  EXPECT_EQ(t.str(), "zxyz");
  EXPECT_EQ(t.total(), 306);
  t.Append("0123456789", 10);
  EXPECT_EQ(t.str(), "6789");
}

TEST(SubprocessTest, SanitizeOutputMakesValidUtf8) {
  EXPECT_EQ(SanitizeOutput("plain\ttext\n"), "plain\ttext\n");
  EXPECT_EQ(SanitizeOutput("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(SanitizeOutput(std::string("a\xFF\x00z", 4)), "a\xEF\xBF\xBD z");
  EXPECT_EQ(SanitizeOutput("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong
  EXPECT_EQ(SanitizeOutput("\x1b[31mred"), " [31mred");
}

TEST(SubprocessTest, LastLines) {
  EXPECT_EQ(LastLines("one\ntwo\n\nthree\nfour\n\n", 3), "two | three | four");
  EXPECT_EQ(LastLines("  only  ", 3), "only");
  EXPECT_EQ(LastLines("", 3), "");
  std::string long_line(1000, 'x');
  EXPECT_EQ(LastLines(long_line + "END", 1, 10), "...xxxxxxxEND");
}

}  // namespace
}  // namespace opprobe::compiler_probe
