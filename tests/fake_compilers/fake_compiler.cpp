// A program that acts as a compiler for the `cmd` backend's tests: it reads the probe unit's HLO text
// and accepts or rejects it, or misbehaves, as its flags say. Flags combine; the last argument is the
// .hlo text file (a .hlo.pb argument is checked for existence when given with --pb=PATH).
//
//   --version               print a version line and exit 0
//   --reject-opcode=OP      exit 1 with "error: opcode OP is not supported" when the ROOT opcode is OP
//   --reject-type=TY        exit 1 when the ROOT line mentions element type TY (e.g. c64, f64)
//   --crash-opcode=OP       raise SIGSEGV when the ROOT opcode is OP
//   --hang-opcode=OP        sleep forever (with a child that sleeps too) when the ROOT opcode is OP
//   --hang                  always hang
//   --segv                  always raise SIGSEGV
//   --garbage               write binary garbage on stdout and stderr and exit 2
//   --flood=BYTES           write BYTES bytes on stdout and on stderr, then go on
//   --sleep=SECONDS         sleep first, then go on
//   --pb=PATH               fail (exit 4) unless PATH exists and is not empty
//   --fail-version          make --version exit 1
//   --log=FILE              append one line per probe (a hash of the unit's text, its ROOT opcode) to FILE,
//                           so that tests can count how often each unit was probed, across processes
// Without a rejecting flag, exit 0 (supported).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string RootLine(const std::string& text) {
  size_t entry = text.find("ENTRY");
  size_t root = text.find("ROOT ", entry == std::string::npos ? 0 : entry);
  if (root == std::string::npos) return "";
  size_t end = text.find('\n', root);
  return text.substr(root, end == std::string::npos ? std::string::npos : end - root);
}

// `ROOT %x = f32[4]{0} add(...)` or `ROOT %t = (f32[2]{0}, s32[]) tuple(...)`: the opcode.
std::string RootOpcode(const std::string& line) {
  size_t eq = line.find(" = ");
  if (eq == std::string::npos) return "";
  size_t i = eq + 3;
  if (i < line.size() && line[i] == '(') {
    int depth = 0;
    for (; i < line.size(); ++i) {
      if (line[i] == '(') ++depth;
      if (line[i] == ')' && --depth == 0) {
        ++i;
        break;
      }
    }
  } else {
    while (i < line.size() && line[i] != ' ') ++i;
  }
  while (i < line.size() && line[i] == ' ') ++i;
  size_t start = i;
  while (i < line.size() && line[i] != '(' && line[i] != ' ') ++i;
  return line.substr(start, i - start);
}

void Flood(long bytes) {
  std::string chunk(65536, 'x');
  for (size_t k = 0; k < chunk.size(); k += 80) chunk[k] = '\n';
  for (long done = 0; done < bytes; done += static_cast<long>(chunk.size())) {
    size_t n = static_cast<size_t>(std::min<long>(bytes - done, static_cast<long>(chunk.size())));
    fwrite(chunk.data(), 1, n, stdout);
    fwrite(chunk.data(), 1, n, stderr);
  }
  fflush(stdout);
  fflush(stderr);
}

[[noreturn]] void Hang() {
  if (fork() == 0) {
    for (;;) pause();
  }
  for (;;) pause();
}

[[noreturn]] void Segv() {
  std::fflush(stderr);
  std::signal(SIGSEGV, SIG_DFL);
  std::raise(SIGSEGV);
  std::abort();
}

}  // namespace

int main(int argc, char** argv) {
  std::string reject_opcode, reject_type, crash_opcode, hang_opcode, pb, log;
  bool hang = false, segv = false, garbage = false, fail_version = false, version = false;
  long flood = 0;
  double sleep_s = 0;
  std::string file;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&](const char* prefix) -> const char* {
      size_t n = std::char_traits<char>::length(prefix);
      return a.compare(0, n, prefix) == 0 ? argv[i] + n : nullptr;
    };
    if (a == "--version") version = true;
    else if (a == "--fail-version") fail_version = true;
    else if (a == "--hang") hang = true;
    else if (a == "--segv") segv = true;
    else if (a == "--garbage") garbage = true;
    else if (const char* v = val("--reject-opcode=")) reject_opcode = v;
    else if (const char* v = val("--reject-type=")) reject_type = v;
    else if (const char* v = val("--crash-opcode=")) crash_opcode = v;
    else if (const char* v = val("--hang-opcode=")) hang_opcode = v;
    else if (const char* v = val("--flood=")) flood = std::atol(v);
    else if (const char* v = val("--sleep=")) sleep_s = std::atof(v);
    else if (const char* v = val("--pb=")) pb = v;
    else if (const char* v = val("--log=")) log = v;
    else if (a.compare(0, 2, "--") == 0) {
      std::fprintf(stderr, "fake_compiler: unknown flag %s\n", a.c_str());
      return 64;
    } else {
      file = a;
    }
  }
  if (version) {
    if (fail_version) return 1;
    std::printf("fake_compiler 1.0 (opprobe test program)\nsecond line\n");
    return 0;
  }
  if (sleep_s > 0) usleep(static_cast<useconds_t>(sleep_s * 1e6));
  if (flood > 0) Flood(flood);
  if (hang) Hang();
  if (segv) Segv();
  if (garbage) {
    unsigned x = 12345;
    std::string g;
    for (int k = 0; k < 3000; ++k) {
      x = x * 1103515245u + 12345u;
      g.push_back(static_cast<char>(x >> 16));
    }
    fwrite(g.data(), 1, g.size(), stdout);
    fwrite(g.data(), 1, g.size(), stderr);
    return 2;
  }
  if (!pb.empty()) {
    struct stat st;
    if (stat(pb.c_str(), &st) != 0 || st.st_size == 0) {
      std::fprintf(stderr, "error: proto file %s missing or empty\n", pb.c_str());
      return 4;
    }
  }
  if (file.empty()) {
    std::fprintf(stderr, "usage: fake_compiler [flags] FILE.hlo\n");
    return 64;
  }
  std::ifstream in(file);
  if (!in) {
    std::fprintf(stderr, "error: cannot read %s\n", file.c_str());
    return 3;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string line = RootLine(ss.str());
  std::string opcode = RootOpcode(line);
  if (!log.empty()) {
    unsigned long long h = 1469598103934665603ull;
    for (unsigned char c : ss.str()) h = (h ^ c) * 1099511628211ull;
    char entry[256];
    int n = std::snprintf(entry, sizeof entry, "%016llx %s\n", h, opcode.c_str());
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);  // one write per line: atomic appends
    if (fd >= 0 && n > 0 && write(fd, entry, static_cast<size_t>(n)) < 0) std::perror("fake_compiler: --log");
    if (fd >= 0) close(fd);
  }
  if (!hang_opcode.empty() && opcode == hang_opcode) Hang();
  if (!crash_opcode.empty() && opcode == crash_opcode) {
    std::fprintf(stderr, "fake_compiler: internal error while lowering %s\n", opcode.c_str());
    Segv();
  }
  if (!reject_opcode.empty() && opcode == reject_opcode) {
    std::fprintf(stderr, "compiling %s\nerror: opcode %s is not supported\n", file.c_str(), opcode.c_str());
    return 1;
  }
  if (!reject_type.empty() && line.find(reject_type + "[") != std::string::npos) {
    std::fprintf(stderr, "error: element type %s is not supported (in %s)\n", reject_type.c_str(), opcode.c_str());
    return 1;
  }
  std::printf("compiled %s\n", opcode.c_str());
  return 0;
}
