// The Redis store (hiredis): one connection, guarded by a mutex, made on first use and again after a
// fault. Keys live under `opprobe/v1/`; entries never expire on their own (size the server with a
// maxmemory policy such as allkeys-lru).
#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "compiler_probe/remote/store.h"
#include "support/numbers.h"

namespace opprobe::compiler_probe {

namespace {

constexpr const char* kPrefix = "opprobe/v1/";

struct ReplyDeleter {
  void operator()(redisReply* r) const {
    if (r) freeReplyObject(r);
  }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

timeval ToTimeval(double s) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(s);
  tv.tv_usec = static_cast<suseconds_t>((s - std::floor(s)) * 1e6);
  return tv;
}

// Error text from the server or hiredis, as one printable line.
std::string OneLine(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < ' ' || static_cast<unsigned char>(c) >= 0x7f) c = ' ';
  if (s.size() > 200) s = s.substr(0, 200) + "...";
  return s;
}

class RedisStore : public RemoteStore {
 public:
  RedisStore(std::string host, int port, int db, std::string user, RemoteSecrets secrets)
      : host_(std::move(host)),
        port_(port),
        db_(db),
        user_(std::move(user)),
        secrets_(std::move(secrets)),
        timeout_(RemoteTimeoutSeconds()) {}
  ~RedisStore() override {
    if (ctx_) redisFree(ctx_);
  }

  std::string Where() const override {
    return fmt::format("redis://{}{}:{}/{}", user_.empty() ? "" : user_ + "@", host_, port_, db_);
  }

  StoreReply Get(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string k = kPrefix + key;
    return Run(
        [&](redisContext* c) { return Reply(static_cast<redisReply*>(redisCommand(c, "GET %b", k.data(), k.size()))); },
        [](redisReply* r, StoreReply& out) {
          if (r->type == REDIS_REPLY_NIL) out.code = StoreReply::Code::kMissing;
          else if (r->type == REDIS_REPLY_STRING) out.value.assign(r->str, r->len);
          else return false;
          return true;
        });
  }

  std::vector<StoreReply> GetMany(const std::vector<std::string>& keys) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<StoreReply> out(keys.size());
    auto fault_from = [&](size_t i, const std::string& error) {
      for (; i < keys.size(); ++i) {
        out[i].code = StoreReply::Code::kFault;
        out[i].error = error;
      }
    };
    if (std::string e = Connect(); !e.empty()) {
      fault_from(0, e);
      return out;
    }
    constexpr size_t kBatch = 256;  // GETs in flight at once: bounded, so neither side buffers a whole run's replies
    for (size_t begin = 0; begin < keys.size(); begin += kBatch) {
      const size_t end = std::min(keys.size(), begin + kBatch);
      for (size_t i = begin; i < end; ++i) {
        const std::string k = kPrefix + keys[i];
        const char* argv[] = {"GET", k.data()};
        const size_t lens[] = {3, k.size()};
        if (redisAppendCommandArgv(ctx_, 2, argv, lens) != REDIS_OK) {
          fault_from(begin, LostError());
          Drop();
          return out;
        }
      }
      for (size_t i = begin; i < end; ++i) {
        void* raw = nullptr;
        if (redisGetReply(ctx_, &raw) != REDIS_OK || !raw) {
          fault_from(i, LostError());
          Drop();
          return out;
        }
        Reply r(static_cast<redisReply*>(raw));
        if (r->type == REDIS_REPLY_NIL) {
          out[i].code = StoreReply::Code::kMissing;
        } else if (r->type == REDIS_REPLY_STRING) {
          out[i].value.assign(r->str, r->len);
        } else if (r->type == REDIS_REPLY_ERROR) {
          ServerError(r.get(), out[i]);
        } else {
          out[i].code = StoreReply::Code::kFault;
          out[i].error = "unexpected reply";
        }
      }
    }
    return out;
  }

  StoreReply Put(const std::string& key, const std::string& value) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string k = kPrefix + key;
    return Run(
        [&](redisContext* c) {
          return Reply(
              static_cast<redisReply*>(redisCommand(c, "SET %b %b", k.data(), k.size(), value.data(), value.size())));
        },
        StatusOk);
  }

  StoreReply Delete(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string k = kPrefix + key;
    return Run(
        [&](redisContext* c) { return Reply(static_cast<redisReply*>(redisCommand(c, "DEL %b", k.data(), k.size()))); },
        AnyInteger);
  }

  StoreReply Claim(const std::string& key, const std::string& token, double ttl_seconds) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string k = kPrefix + key;
    std::string ms = std::to_string(std::max<long long>(1, static_cast<long long>(ttl_seconds * 1000)));
    return Run(
        [&](redisContext* c) {
          return Reply(static_cast<redisReply*>(
              redisCommand(c, "SET %b %b NX PX %s", k.data(), k.size(), token.data(), token.size(), ms.c_str())));
        },
        [](redisReply* r, StoreReply& out) {
          if (r->type == REDIS_REPLY_NIL) out.code = StoreReply::Code::kMissing;
          else if (r->type != REDIS_REPLY_STATUS) return false;
          return true;
        });
  }

  void Release(const std::string& key, const std::string& token) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string k = kPrefix + key;
    static const char* kScript =
        "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
    Run(
        [&](redisContext* c) {
          return Reply(static_cast<redisReply*>(
              redisCommand(c, "EVAL %s 1 %b %b", kScript, k.data(), k.size(), token.data(), token.size())));
        },
        AnyInteger);
  }

  StoreReply AddCounters(int64_t hits, int64_t misses, int64_t stores) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string k = std::string(kPrefix) + "stats";
    StoreReply r;
    for (auto [field, n] : {std::pair<const char*, int64_t>{"hits", hits}, {"misses", misses}, {"stores", stores}}) {
      if (n == 0) continue;
      std::string v = std::to_string(n);
      r = Run(
          [&](redisContext* c) {
            return Reply(
                static_cast<redisReply*>(redisCommand(c, "HINCRBY %b %s %s", k.data(), k.size(), field, v.c_str())));
          },
          AnyInteger);
      if (!r.ok()) return r;
    }
    return r;
  }

  Expected<RemoteStats> Stats() override {
    std::lock_guard<std::mutex> lock(mu_);
    RemoteStats s;
    s.where = Where();
    std::vector<std::string> keys;
    OPPROBE_ASSIGN_OR_RETURN(keys, Scan(std::string(kPrefix) + "e/*"));
    std::map<std::string, RemoteStats::Backend> by_hash;
    for (const auto& k : keys) {
      std::string rest = k.substr(std::string(kPrefix).size() + 2);
      std::string hash = rest.substr(0, rest.find('/'));
      auto& b = by_hash[hash];
      ++b.entries;
      ++s.entries;
      StoreReply r = Run(
          [&](redisContext* c) {
            return Reply(static_cast<redisReply*>(redisCommand(c, "STRLEN %b", k.data(), k.size())));
          },
          [&](redisReply* rep, StoreReply&) {
            if (rep->type != REDIS_REPLY_INTEGER) return false;
            b.bytes += rep->integer;
            s.bytes += rep->integer;
            return true;
          });
      if (!r.ok()) return Fail(r);
    }
    for (auto& [hash, b] : by_hash) {
      std::string k = std::string(kPrefix) + "b/" + hash;
      StoreReply r = Run(
          [&](redisContext* c) {
            return Reply(static_cast<redisReply*>(redisCommand(c, "GET %b", k.data(), k.size())));
          },
          [](redisReply* rep, StoreReply& out) {
            if (rep->type == REDIS_REPLY_STRING) out.value.assign(rep->str, rep->len);
            return rep->type == REDIS_REPLY_STRING || rep->type == REDIS_REPLY_NIL;
          });
      if (!r.ok()) return Fail(r);
      nlohmann::json j = nlohmann::json::parse(r.value, nullptr, false);
      if (j.is_object() && j.value("backend_id", nlohmann::json()).is_string()) b.id = j["backend_id"];
      if (j.is_object() && j.value("backend_version", nlohmann::json()).is_string()) b.version = j["backend_version"];
      if (b.id.empty()) b.id = "(unknown backend " + hash + ")";
      s.backends.push_back(b);
    }
    std::sort(s.backends.begin(), s.backends.end(),
              [](const auto& a, const auto& b) { return std::tie(a.id, a.version) < std::tie(b.id, b.version); });
    std::string k = std::string(kPrefix) + "stats";
    StoreReply r = Run(
        [&](redisContext* c) {
          return Reply(static_cast<redisReply*>(redisCommand(c, "HGETALL %b", k.data(), k.size())));
        },
        [&](redisReply* rep, StoreReply&) {
          if (rep->type != REDIS_REPLY_ARRAY) return false;
          for (size_t i = 0; i + 1 < rep->elements; i += 2) {
            std::string f(rep->element[i]->str ? rep->element[i]->str : "", rep->element[i]->len);
            const redisReply* value = rep->element[i + 1];
            int64_t v = value->str ? support::ParseInteger(std::string_view(value->str, value->len)).value_or(0) : 0;
            if (f == "hits") s.hits = v;
            if (f == "misses") s.misses = v;
            if (f == "stores") s.stores = v;
          }
          return true;
        });
    if (!r.ok()) return Fail(r);
    return s;
  }

  Expected<int64_t> Clear() override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> keys;
    OPPROBE_ASSIGN_OR_RETURN(keys, Scan(std::string(kPrefix) + "*"));
    int64_t entries = 0;
    for (const auto& k : keys) {
      StoreReply r = Run(
          [&](redisContext* c) {
            return Reply(static_cast<redisReply*>(redisCommand(c, "DEL %b", k.data(), k.size())));
          },
          AnyInteger);
      if (!r.ok()) return Fail(r);
      if (k.compare(0, std::string(kPrefix).size() + 2, std::string(kPrefix) + "e/") == 0) ++entries;
    }
    return entries;
  }

 private:
  static bool StatusOk(redisReply* r, StoreReply&) { return r->type == REDIS_REPLY_STATUS; }
  static bool AnyInteger(redisReply* r, StoreReply&) { return r->type == REDIS_REPLY_INTEGER; }

  Status Fail(const StoreReply& r) const { return Unavailable(fmt::format("remote cache {}: {}", Where(), r.error)); }

  // Connects (with AUTH and SELECT) when there is no live connection; empty string on success.
  std::string Connect() {
    if (ctx_) return "";
    redisContext* c = redisConnectWithTimeout(host_.c_str(), port_, ToTimeval(timeout_));
    if (!c) return "cannot allocate a connection";
    if (c->err) {
      std::string e = OneLine(c->errstr);
      redisFree(c);
      return "cannot connect: " + e;
    }
    redisSetTimeout(c, ToTimeval(timeout_));
    auto check = [&](Reply r, const char* what) -> std::string {
      if (!r) return fmt::format("{} failed: {}", what, c->err ? OneLine(c->errstr) : "no reply");
      if (r->type == REDIS_REPLY_ERROR)
        return fmt::format("{} refused: {}", what, OneLine(std::string(r->str, r->len)));
      return "";
    };
    std::string err;
    if (!secrets_.password.empty()) {
      Reply r(static_cast<redisReply*>(
          user_.empty() ? redisCommand(c, "AUTH %b", secrets_.password.data(), secrets_.password.size())
                        : redisCommand(c, "AUTH %b %b", user_.data(), user_.size(), secrets_.password.data(),
                                       secrets_.password.size())));
      err = check(std::move(r), "AUTH");
    }
    if (err.empty() && db_ != 0)
      err = check(Reply(static_cast<redisReply*>(redisCommand(c, "SELECT %d", db_))), "SELECT");
    if (!err.empty()) {
      redisFree(c);
      return err;
    }
    ctx_ = c;
    return "";
  }

  // Why the connection failed mid-command, as one line.
  std::string LostError() const {
    std::string e = ctx_->err ? OneLine(ctx_->errstr) : "no reply";
    return e.empty() ? "connection lost" : e;
  }
  // A connection that failed mid-command is dropped and made again on next use.
  void Drop() {
    redisFree(ctx_);
    ctx_ = nullptr;
  }
  // An error answer: NOAUTH / WRONGPASS / NOPERM are faults of the whole cache; READONLY, OOM refuse writes only.
  static void ServerError(const redisReply* r, StoreReply& out) {
    std::string e = OneLine(std::string(r->str, r->len));
    bool refused = e.rfind("READONLY", 0) == 0 || e.rfind("OOM", 0) == 0 || e.rfind("MISCONF", 0) == 0;
    out.code = refused ? StoreReply::Code::kRefused : StoreReply::Code::kFault;
    out.error = "the server answered: " + e;
  }

  // Runs one command; `accept` reads a non-error reply (false: an unexpected reply type, a fault).
  template <typename Cmd, typename Accept>
  StoreReply Run(Cmd cmd, Accept accept) {
    StoreReply out;
    if (std::string e = Connect(); !e.empty()) {
      out.code = StoreReply::Code::kFault;
      out.error = e;
      return out;
    }
    Reply r = cmd(ctx_);
    if (!r) {
      out.code = StoreReply::Code::kFault;
      out.error = LostError();
      Drop();
      return out;
    }
    if (r->type == REDIS_REPLY_ERROR) {
      ServerError(r.get(), out);
      return out;
    }
    if (!accept(r.get(), out)) {
      out.code = StoreReply::Code::kFault;
      out.error = "unexpected reply";
    }
    return out;
  }

  Expected<std::vector<std::string>> Scan(const std::string& pattern) {
    std::vector<std::string> keys;
    std::string cursor = "0";
    do {
      StoreReply r = Run(
          [&](redisContext* c) {
            return Reply(static_cast<redisReply*>(
                redisCommand(c, "SCAN %s MATCH %b COUNT 1000", cursor.c_str(), pattern.data(), pattern.size())));
          },
          [&](redisReply* rep, StoreReply&) {
            if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 || rep->element[0]->type != REDIS_REPLY_STRING ||
                rep->element[1]->type != REDIS_REPLY_ARRAY)
              return false;
            cursor.assign(rep->element[0]->str, rep->element[0]->len);
            for (size_t i = 0; i < rep->element[1]->elements; ++i)
              keys.emplace_back(rep->element[1]->element[i]->str, rep->element[1]->element[i]->len);
            return true;
          });
      if (!r.ok()) return Fail(r);
    } while (cursor != "0");
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    return keys;
  }

  std::string host_;
  int port_;
  int db_;
  std::string user_;
  RemoteSecrets secrets_;
  double timeout_;
  std::mutex mu_;
  redisContext* ctx_ = nullptr;
};

}  // namespace

Expected<std::unique_ptr<RemoteStore>> OpenRedisStore(const std::string& host, int port, int db,
                                                      const std::string& user, const RemoteSecrets& secrets) {
  return std::unique_ptr<RemoteStore>(std::make_unique<RedisStore>(host, port, db, user, secrets));
}

}  // namespace opprobe::compiler_probe
