// support/file_io.h: size-capped reads with located errors; atomic writes; a FileSet replaces all its files or none.
#include "support/file_io.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "testing/temp_dir_test.h"

namespace opprobe::io {
namespace {

namespace fs = std::filesystem;

class FileIoTest : public opprobe::testing::TempDirTest {
 protected:
  void Write(const std::string& name, const std::string& text) { std::ofstream(Path(name), std::ios::binary) << text; }
  std::string Read(const std::string& name) {
    std::ifstream in(Path(name), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // Every name in the folder: no temporary or backup file may stay behind.
  std::vector<std::string> Names() {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

// FileBytes: a regular file mapped, the rest read; the same bytes and the same errors as ReadFile.
TEST_F(FileIoTest, FileBytesMapsRegularFilesAndReadsTheRest) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += std::to_string(i) + ",";
  Write("a.txt", text);
  auto bytes = FileBytes::Open(Path("a.txt"));
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_TRUE(bytes->mapped());
  EXPECT_EQ(bytes->view(), text);
  FileBytes moved = std::move(*bytes);  // the mapping goes with the object
  EXPECT_EQ(moved.view(), text);

  Write("empty.txt", "");
  auto empty = FileBytes::Open(Path("empty.txt"));
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->mapped());
  EXPECT_EQ(empty->view(), "");

  EXPECT_EQ(FileBytes::Open(Path("none.txt")).status().message(), Path("none.txt") + ": no such file");
  EXPECT_EQ(FileBytes::Open(dir_.string()).status().message(), dir_.string() + ": is a folder, not a file");
  EXPECT_EQ(FileBytes::Open(Path("a.txt"), 10).status().message(),
            fmt::format("{}: the file has {} bytes, more than the 10 this input may have", Path("a.txt"), text.size()));
}

// A mapped file cut short while it is read: one located line and the exit status the program chose
// (SetChangedInputExitStatus; opprobe's main sets its bad-input code), not a crash by SIGBUS.
TEST_F(FileIoTest, AMappedFileThatShrinksIsALocatedErrorNotACrash) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string text(3 * 4096, 'x');
  Write("big.hlo", text);
  EXPECT_EXIT(
      {
        SetChangedInputExitStatus(7);
        auto bytes = FileBytes::Open(Path("big.hlo"));
        if (!bytes.ok() || !bytes->mapped()) std::_Exit(1);
        fs::resize_file(Path("big.hlo"), 0);
        volatile char c = bytes->view()[2 * 4096];
        (void)c;
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(7), "big.hlo: cannot read: it changed while being read");
}

// hlo/ chooses no exit code: with none set, the located line is written and the fault goes on as SIGBUS would.
TEST_F(FileIoTest, AMappedFileThatShrinksEndsBySigbusWhenNoExitStatusIsSet) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string text(3 * 4096, 'x');
  Write("big.hlo", text);
  EXPECT_EXIT(
      {
        SetChangedInputExitStatus(-1);
        auto bytes = FileBytes::Open(Path("big.hlo"));
        if (!bytes.ok() || !bytes->mapped()) std::_Exit(1);
        fs::resize_file(Path("big.hlo"), 0);
        volatile char c = bytes->view()[2 * 4096];
        (void)c;
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGBUS), "big.hlo: cannot read: it changed while being read");
}

// FileReader: the whole file in pieces of any size, the same errors as ReadFile when it cannot be opened.
TEST_F(FileIoTest, FileReaderReadsInPieces) {
  std::string text;
  for (int i = 0; i < 10000; ++i) text += std::to_string(i) + ",";
  Write("a.txt", text);
  auto reader = FileReader::Open(Path("a.txt"));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  std::string got;
  char buf[777];
  for (;;) {
    auto n = reader->Read(buf, sizeof buf);
    ASSERT_TRUE(n.ok()) << n.status().message();
    if (*n == 0) break;
    got.append(buf, *n);
  }
  EXPECT_EQ(got, text);
  EXPECT_EQ(*reader->Read(buf, sizeof buf), 0u);  // stays at the end
  EXPECT_EQ(FileReader::Open(Path("missing")).status().message(), Path("missing") + ": no such file");
  EXPECT_EQ(FileReader::Open(dir_.string()).status().message(), dir_.string() + ": is a folder, not a file");
}

TEST_F(FileIoTest, ReadsWholeFilesAndHeads) {
  Write("a.txt", std::string("ab\0cd", 5));
  EXPECT_EQ(*ReadFile(Path("a.txt")), std::string("ab\0cd", 5));
  EXPECT_EQ(*ReadFileHead(Path("a.txt"), 2), "ab");
  EXPECT_EQ(*ReadFileHead(Path("a.txt"), 100), std::string("ab\0cd", 5));
  Write("empty", "");
  EXPECT_EQ(*ReadFile(Path("empty")), "");
}

TEST_F(FileIoTest, ReadErrorsNameTheFileOnOneLine) {
  auto missing = ReadFile(Path("nope.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(missing.status().message(), Path("nope.json") + ": no such file");
  auto folder = ReadFile(dir_.string());
  ASSERT_FALSE(folder.ok());
  EXPECT_EQ(folder.status().message(), dir_.string() + ": is a folder, not a file");
}

TEST_F(FileIoTest, ReadRefusesMoreThanTheCap) {
  Write("big", std::string(100, 'x'));
  EXPECT_TRUE(ReadFile(Path("big"), 100).ok());
  auto r = ReadFile(Path("big"), 99);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), Path("big") + ": the file has 100 bytes, more than the 99 this input may have");
  // A pipe has no size: the cap is found by reading.
  auto dev = ReadFile("/dev/zero", 1000);
  ASSERT_FALSE(dev.ok());
  EXPECT_NE(dev.status().message().find("more than the 1000 bytes"), std::string::npos) << dev.status().message();
}

TEST_F(FileIoTest, AtomicWriteReplacesAndLeavesNothingElse) {
  Write("r.json", "old");
  ASSERT_TRUE(WriteFileAtomically(Path("r.json"), "new contents").ok());
  EXPECT_EQ(Read("r.json"), "new contents");
  ASSERT_TRUE(WriteFileAtomically(Path("fresh.json"), "x", Durability::kNoSync).ok());
  EXPECT_EQ(Names(), (std::vector<std::string>{"fresh.json", "r.json"}));
  // An ordinary file's permissions (0666 less the umask), not mkstemp's 0600.
  mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st {};
  ASSERT_EQ(::stat(Path("fresh.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
}

TEST_F(FileIoTest, AFailedWriteChangesNothing) {
  auto st = WriteFileAtomically(Path("no/such/folder/r.json"), "x");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(st.message().rfind(Path("no/such/folder/r.json") + ": cannot write: ", 0), 0u) << st.message();
  EXPECT_FALSE(WriteFileAtomically("", "x").ok());
  EXPECT_TRUE(Names().empty());
}

TEST_F(FileIoTest, AFolderInTheWayStaysAndNoTemporaryFileIsLeft) {
  fs::create_directory(Path("taken"));
  Write("taken/inside", "x");
  EXPECT_FALSE(WriteFileAtomically(Path("taken"), "x").ok());
  EXPECT_TRUE(fs::is_directory(Path("taken")));
  EXPECT_EQ(Names(), (std::vector<std::string>{"taken"}));
}

TEST_F(FileIoTest, ARelativePathWritesInTheCurrentFolder) {
  auto old = fs::current_path();
  fs::current_path(dir_);
  Status st = WriteFileAtomically("plain.txt", "ok");
  fs::current_path(old);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(Read("plain.txt"), "ok");
}

TEST_F(FileIoTest, FileSetReplacesAllOrNone) {
  Write("a.json", "old a");
  Write("b.md", "old b");
  {
    // The second file cannot be written: the first stays as it was, and no temporary file is left.
    FileSet set;
    ASSERT_TRUE(set.Stage(Path("a.json"), "new a").ok());
    EXPECT_FALSE(set.Stage(Path("missing/b.md"), "new b").ok());
  }
  EXPECT_EQ(Read("a.json"), "old a");
  EXPECT_EQ(Names(), (std::vector<std::string>{"a.json", "b.md"}));
  {
    FileSet set;
    ASSERT_TRUE(set.Stage(Path("a.json"), "new a").ok());
    ASSERT_TRUE(set.Stage(Path("b.md"), "new b").ok());
    ASSERT_TRUE(set.Stage(Path("c.html"), "new c").ok());
    ASSERT_TRUE(set.Commit().ok());
  }
  EXPECT_EQ(Read("a.json"), "new a");
  EXPECT_EQ(Read("b.md"), "new b");
  EXPECT_EQ(Read("c.html"), "new c");
  EXPECT_EQ(Names(), (std::vector<std::string>{"a.json", "b.md", "c.html"}));
}

TEST_F(FileIoTest, FileSetPutsBackWhatARenameFailureReplaced) {
  Write("a.json", "old a");
  fs::create_directories(Path("b.md"));  // a folder where the second file should go: its rename fails
  Write("b.md/inside", "keeps the folder non-empty");
  FileSet set;
  ASSERT_TRUE(set.Stage(Path("a.json"), "new a").ok());
  ASSERT_TRUE(set.Stage(Path("b.md"), "new b").ok());
  ASSERT_TRUE(set.Stage(Path("c.txt"), "new c").ok());
  Status st = set.Commit();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind(Path("b.md") + ": cannot write: ", 0), 0u) << st.message();
  EXPECT_EQ(Read("a.json"), "old a");
  EXPECT_FALSE(fs::exists(Path("c.txt")));
}

TEST_F(FileIoTest, FileSetRemovesItsNewFilesOnFailure) {
  fs::create_directories(Path("b.md"));
  Write("b.md/inside", "x");
  {
    FileSet set;
    ASSERT_TRUE(set.Stage(Path("new.json"), "new").ok());
    ASSERT_TRUE(set.Stage(Path("b.md"), "new b").ok());
    EXPECT_FALSE(set.Commit().ok());
  }
  EXPECT_EQ(Names(), (std::vector<std::string>{"b.md"}));
}

}  // namespace
}  // namespace opprobe::io
