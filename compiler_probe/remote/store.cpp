#include "compiler_probe/remote/store.h"

#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support/file_io.h"

namespace opprobe::compiler_probe {

namespace {

bool StartsWith(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// The secret from $NAME, else from the file $NAME_FILE names (one trailing newline dropped).
Expected<std::string> SecretFromEnv(const char* name) {
  if (const char* v = std::getenv(name); v && *v) return std::string(v);
  std::string file_var = std::string(name) + "_FILE";
  const char* path = std::getenv(file_var.c_str());
  if (!path || !*path) return std::string();
  auto read = io::ReadFile(path, 1 << 16);
  if (!read.ok()) return read.status().WithContext("$" + file_var);
  std::string s = std::move(read).value();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

std::vector<StoreReply> RemoteStore::GetMany(const std::vector<std::string>& keys) {
  std::vector<StoreReply> out;
  out.reserve(keys.size());
  for (const std::string& k : keys) {
    if (!out.empty() && out.back().code == StoreReply::Code::kFault) {
      out.push_back(out.back());
      continue;
    }
    out.push_back(Get(k));
  }
  return out;
}

bool IsRemoteCacheUrl(const std::string& spec) {
  return StartsWith(spec, "redis://") || StartsWith(spec, "http://") || StartsWith(spec, "https://");
}

Expected<RemoteSecrets> ReadRemoteSecrets() {
  RemoteSecrets s;
  OPPROBE_ASSIGN_OR_RETURN(s.password, SecretFromEnv("OPPROBE_CACHE_PASSWORD"));
  OPPROBE_ASSIGN_OR_RETURN(s.token, SecretFromEnv("OPPROBE_CACHE_TOKEN"));
  return s;
}

double RemoteTimeoutSeconds() {
  const char* v = std::getenv("OPPROBE_CACHE_TIMEOUT");
  if (v && *v) {
    char* end = nullptr;
    double t = std::strtod(v, &end);
    if (end && *end == '\0' && t > 0 && t <= 600) return t;
  }
  return 5.0;
}

Expected<std::unique_ptr<RemoteStore>> OpenRemoteStore(const std::string& url) {
  auto bad = [&](const std::string& why) {
    return InvalidInput(
        fmt::format("remote cache URL: {} (expected redis://HOST:PORT[/DB] or http(s)://HOST[:PORT]/PATH)", why));
  };
  if (url.size() > 2048 || std::any_of(url.begin(), url.end(), [](char c) {
        return static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7f;
      }))
    return bad("it contains spaces or control characters");
  size_t scheme_end = url.find("://");
  if (!IsRemoteCacheUrl(url) || scheme_end == std::string::npos) return bad("unknown scheme");
  std::string scheme = url.substr(0, scheme_end);
  std::string rest = url.substr(scheme_end + 3);
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  std::string user;
  if (size_t at = authority.rfind('@'); at != std::string::npos) {
    user = authority.substr(0, at);
    authority = authority.substr(at + 1);
    if (user.find(':') != std::string::npos)
      return InvalidInput(
          "remote cache URL: a password does not belong in the URL (it would show in process lists and logs); "
          "put it in $OPPROBE_CACHE_PASSWORD or a file named by $OPPROBE_CACHE_PASSWORD_FILE");
  }
  if (authority.empty()) return bad("no host");
  OPPROBE_ASSIGN_OR_RETURN(RemoteSecrets secrets, ReadRemoteSecrets());
  // A server that goes away mid-write must be an error return, not a SIGPIPE that kills the run
  // (children the subprocess runner starts get the default disposition back).
  struct sigaction old = {};
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
  if (scheme == "redis") {
    std::string host = authority;
    int port = 6379;
    size_t colon = authority.rfind(':');
    if (colon != std::string::npos && authority.find(']', colon) == std::string::npos) {
      host = authority.substr(0, colon);
      std::string p = authority.substr(colon + 1);
      if (p.empty() || p.size() > 5 || !std::all_of(p.begin(), p.end(), ::isdigit)) return bad("bad port");
      port = std::stoi(p);
      if (port <= 0 || port > 65535) return bad("bad port");
    }
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    int db = 0;
    if (!path.empty() && path != "/") {
      std::string d = path.substr(1);
      if (d.empty() || d.size() > 4 || !std::all_of(d.begin(), d.end(), ::isdigit))
        return bad("the path must be a database number");
      db = std::stoi(d);
    }
    return OpenRedisStore(host, port, db, user, secrets);
  }
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path == "/") path.clear();
  if (path.find('?') != std::string::npos || path.find('#') != std::string::npos)
    return bad("no query or fragment, please");
  return OpenHttpStore(scheme + "://" + authority + path, user, secrets);
}

}  // namespace opprobe::compiler_probe
