// Real cache servers for tests: `redis-server` and nginx (WebDAV PUT/DELETE, JSON folder listings) from
// Debian's packages, started on a loopback port chosen at run time with their files in a test folder,
// and stopped (SIGKILL, then reaped) when the object goes. Also starts the opprobe binary in the
// background with extra environment variables, for tests that run several processes at once.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace opprobe::testing {

// A loopback port nobody listens on right now.
inline int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

inline bool PortAccepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

// fork + execve with the current environment plus `env`; stdout/stderr to files (or /dev/null).
inline pid_t Spawn(const std::vector<std::string>& argv_s, const std::map<std::string, std::string>& env = {},
                   const std::string& out_path = "/dev/null", const std::string& err_path = "/dev/null") {
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string k = kv.substr(0, kv.find('='));
    if (!env.count(k)) env_s.push_back(kv);
  }
  for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  std::vector<std::string> a = argv_s;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : env_s) envp.push_back(s.data());
  envp.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int in = open("/dev/null", O_RDONLY);
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    setpgid(0, 0);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

inline int WaitExit(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class TestServer {
 public:
  TestServer() = default;
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;
  ~TestServer() { Kill(); }

  int port() const { return port_; }
  const std::string& url() const { return url_; }
  // Ends the server at once, as a crash would.
  void Kill() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      WaitExit(pid_);
      pid_ = -1;
    }
  }

  // redis-server without persistence; `password` sets requirepass.
  void StartRedis(const std::filesystem::path& dir, const std::string& password = "") {
    std::filesystem::create_directories(dir);
    port_ = FreeLoopbackPort();
    std::vector<std::string> argv{"/usr/bin/redis-server",
                                  "--port",
                                  std::to_string(port_),
                                  "--bind",
                                  "127.0.0.1",
                                  "--save",
                                  "",
                                  "--appendonly",
                                  "no",
                                  "--dir",
                                  dir.string(),
                                  "--daemonize",
                                  "no",
                                  "--logfile",
                                  (dir / "redis.log").string()};
    if (!password.empty()) {
      argv.push_back("--requirepass");
      argv.push_back(password);
    }
    pid_ = Spawn(argv);
    url_ = "redis://127.0.0.1:" + std::to_string(port_);
    WaitReady("redis-server");
  }

  // nginx in one process (no master, no user switch) serving `dir`/www with WebDAV PUT/DELETE.
  void StartNginx(const std::filesystem::path& dir) {
    std::filesystem::create_directories(dir / "www" / "cache");
    std::filesystem::create_directories(dir / "tmp");
    port_ = FreeLoopbackPort();
    std::string d = dir.string();
    std::ofstream(dir / "nginx.conf") << "daemon off;\nmaster_process off;\nworker_processes 1;\n"
                                      << "error_log " << d << "/error.log;\npid " << d << "/nginx.pid;\n"
                                      << "events { worker_connections 256; }\n"
                                      << "http {\n  access_log off;\n"
                                      << "  client_body_temp_path " << d << "/tmp/body;\n"
                                      << "  proxy_temp_path " << d << "/tmp/proxy;\n"
                                      << "  fastcgi_temp_path " << d << "/tmp/fastcgi;\n"
                                      << "  uwsgi_temp_path " << d << "/tmp/uwsgi;\n"
                                      << "  scgi_temp_path " << d << "/tmp/scgi;\n"
                                      << "  server {\n    listen 127.0.0.1:" << port_ << ";\n"
                                      << "    root " << d << "/www;\n"
                                      << "    location /cache/ {\n      dav_methods PUT DELETE;\n"
                                      << "      create_full_put_path on;\n      client_max_body_size 16m;\n"
                                      << "      autoindex on;\n      autoindex_format json;\n    }\n  }\n}\n";
    pid_ = Spawn({"/usr/sbin/nginx", "-e", d + "/error.log", "-p", d, "-c", d + "/nginx.conf"});
    url_ = "http://127.0.0.1:" + std::to_string(port_) + "/cache";
    WaitReady("nginx");
  }

 private:
  void WaitReady(const char* what) {
    for (int i = 0; i < 200; ++i) {
      if (PortAccepts(port_)) return;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error(std::string(what) + " exited at start");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error(std::string(what) + " did not start listening");
  }

  pid_t pid_ = -1;
  int port_ = 0;
  std::string url_;
};

}  // namespace opprobe::testing
