// The HTTP store (libcurl): GET/PUT/DELETE of blobs under `<base>/v1/`, one reused connection guarded by
// a mutex. Listing (for `cache stats` / `cache clear`) reads nginx's `autoindex_format json` folder
// listings; a server without listings still serves as a cache, only its entries cannot be counted.
#include <curl/curl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "compiler_probe/remote/store.h"
#include "support/numbers.h"

namespace opprobe::compiler_probe {

namespace {

size_t Collect(char* data, size_t size, size_t n, void* user) {
  auto* out = static_cast<std::string*>(user);
  if (out->size() > (64u << 20)) return 0;  // a cache entry is small; refuse a flood
  out->append(data, size * n);
  return size * n;
}

struct Upload {
  const std::string* data;
  size_t pos = 0;
};

size_t Feed(char* buf, size_t size, size_t n, void* user) {
  auto* u = static_cast<Upload*>(user);
  size_t k = std::min(size * n, u->data->size() - u->pos);
  std::copy_n(u->data->data() + u->pos, k, buf);
  u->pos += k;
  return k;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class HttpStore : public RemoteStore {
 public:
  HttpStore(std::string base, std::string user, RemoteSecrets secrets)
      : base_(std::move(base)), user_(std::move(user)), secrets_(std::move(secrets)), timeout_(RemoteTimeoutSeconds()) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    curl_ = curl_easy_init();
  }
  ~HttpStore() override {
    if (curl_) curl_easy_cleanup(curl_);
  }

  std::string Where() const override {
    if (user_.empty()) return base_;
    size_t p = base_.find("://") + 3;
    return base_.substr(0, p) + user_ + "@" + base_.substr(p);
  }

  StoreReply Get(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    return GetLocked(key);
  }

  StoreReply Put(const std::string& key, const std::string& value) override {
    std::lock_guard<std::mutex> lock(mu_);
    return PutLocked(key, value);
  }

  StoreReply Delete(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    Response r = Request("DELETE", Url(key), nullptr);
    if (!r.error.empty()) return Fault(r.error);
    if (r.code == 404 || (r.code >= 200 && r.code < 300)) return {};
    return Refused(fmt::format("DELETE answered HTTP {}", r.code));
  }

  // Best effort without server-side atomics: read the lease, write ours, read it back.
  StoreReply Claim(const std::string& key, const std::string& token, double ttl_seconds) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto live_holder = [&](const StoreReply& r) -> std::string {
      if (r.code != StoreReply::Code::kOk) return "";
      size_t sp = r.value.find(' ');
      if (sp == std::string::npos) return "";
      // A value not written as "holder expiry" holds nothing.
      std::optional<int64_t> expiry = support::ParseInteger(std::string_view(r.value).substr(sp + 1));
      return expiry && *expiry > NowMs() ? r.value.substr(0, sp) : "";
    };
    StoreReply cur = GetLocked(key);
    if (cur.code == StoreReply::Code::kFault || cur.code == StoreReply::Code::kRefused) return cur;
    std::string holder = live_holder(cur);
    if (!holder.empty() && holder != token) return {StoreReply::Code::kMissing, "", ""};
    StoreReply put = PutLocked(key, fmt::format("{} {}", token, NowMs() + static_cast<int64_t>(ttl_seconds * 1000)));
    if (!put.ok()) return put;
    StoreReply back = GetLocked(key);
    if (back.code == StoreReply::Code::kFault || back.code == StoreReply::Code::kRefused) return back;
    if (live_holder(back) != token) return {StoreReply::Code::kMissing, "", ""};
    return {};
  }

  void Release(const std::string& key, const std::string& token) override {
    std::lock_guard<std::mutex> lock(mu_);
    StoreReply cur = GetLocked(key);
    if (cur.ok() && cur.value.rfind(token + " ", 0) == 0) Request("DELETE", Url(key), nullptr);
  }

  StoreReply AddCounters(int64_t hits, int64_t misses, int64_t stores) override {
    std::lock_guard<std::mutex> lock(mu_);
    nlohmann::json j = {{"hits", hits}, {"misses", misses}, {"stores", stores}};
    static std::atomic<uint64_t> seq{0};
    std::string name = fmt::format("s/{:x}-{:x}-{}", NowMs(), static_cast<uint64_t>(::getpid()), seq.fetch_add(1));
    return PutLocked(name, j.dump());
  }

  Expected<RemoteStats> Stats() override {
    std::lock_guard<std::mutex> lock(mu_);
    RemoteStats s;
    s.where = Where();
    auto dirs = List("e/");
    if (!dirs.ok()) return dirs.status();
    if (!dirs->has_value()) {
      s.listed = false;
      return s;
    }
    for (const auto& d : **dirs) {
      if (!d.dir) continue;
      auto files = List("e/" + d.name + "/");
      if (!files.ok()) return files.status();
      RemoteStats::Backend b;
      for (const auto& f : files->value_or(std::vector<Item>{})) {
        if (f.dir) continue;
        ++b.entries;
        b.bytes += f.size;
      }
      if (b.entries == 0) continue;  // a folder left empty by `cache clear`
      StoreReply rec = GetLocked("b/" + d.name);
      if (rec.code == StoreReply::Code::kFault)
        return Unavailable(fmt::format("remote cache {}: {}", Where(), rec.error));
      nlohmann::json j = nlohmann::json::parse(rec.value, nullptr, false);
      if (j.is_object() && j.value("backend_id", nlohmann::json()).is_string()) b.id = j["backend_id"];
      if (j.is_object() && j.value("backend_version", nlohmann::json()).is_string()) b.version = j["backend_version"];
      if (b.id.empty()) b.id = "(unknown backend " + d.name + ")";
      s.entries += b.entries;
      s.bytes += b.bytes;
      s.backends.push_back(b);
    }
    std::sort(s.backends.begin(), s.backends.end(),
              [](const auto& a, const auto& b) { return std::tie(a.id, a.version) < std::tie(b.id, b.version); });
    auto runs = List("s/");
    if (!runs.ok()) return runs.status();
    for (const auto& f : runs->value_or(std::vector<Item>{})) {
      if (f.dir) continue;
      StoreReply r = GetLocked("s/" + f.name);
      nlohmann::json j = nlohmann::json::parse(r.value, nullptr, false);
      if (!r.ok() || !j.is_object()) continue;
      s.hits += j.value("hits", int64_t{0});
      s.misses += j.value("misses", int64_t{0});
      s.stores += j.value("stores", int64_t{0});
    }
    return s;
  }

  Expected<int64_t> Clear() override {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t removed = 0;
    for (const char* top : {"e/", "b/", "c/", "s/"}) {
      auto items = List(top);
      if (!items.ok()) return items.status();
      if (!items->has_value())
        return InvalidInput(
            fmt::format("remote cache {}: the server does not list its folders, so it cannot be cleared "
                        "from here (nginx: autoindex on; autoindex_format json;)",
                        Where()));
      for (const auto& it : **items) {
        std::vector<std::string> files;
        if (it.dir) {
          auto sub = List(std::string(top) + it.name + "/");
          if (!sub.ok()) return sub.status();
          for (const auto& f : sub->value_or(std::vector<Item>{}))
            if (!f.dir) files.push_back(std::string(top) + it.name + "/" + f.name);
        } else {
          files.push_back(std::string(top) + it.name);
        }
        for (const auto& f : files) {
          Response r = Request("DELETE", Url(f), nullptr);
          if (!r.error.empty()) return Unavailable(fmt::format("remote cache {}: {}", Where(), r.error));
          if (std::string(top) == "e/" && r.code >= 200 && r.code < 300) ++removed;
        }
        if (it.dir) Request("DELETE", Url(std::string(top) + it.name + "/"), nullptr);  // the emptied folder
      }
    }
    return removed;
  }

 private:
  struct Response {
    long code = 0;
    std::string body;
    std::string error;  // transport failure
  };
  struct Item {
    std::string name;
    bool dir = false;
    int64_t size = 0;
  };

  std::string Url(const std::string& key) const { return base_ + "/v1/" + key; }

  static StoreReply Fault(std::string e) { return {StoreReply::Code::kFault, "", std::move(e)}; }
  static StoreReply Refused(std::string e) { return {StoreReply::Code::kRefused, "", std::move(e)}; }

  StoreReply GetLocked(const std::string& key) {
    Response r = Request("GET", Url(key), nullptr);
    if (!r.error.empty()) return Fault(r.error);
    if (r.code == 200) return {StoreReply::Code::kOk, std::move(r.body), ""};
    if (r.code == 404) return {StoreReply::Code::kMissing, "", ""};
    return Fault(fmt::format("GET answered HTTP {}", r.code));
  }

  StoreReply PutLocked(const std::string& key, const std::string& value) {
    Response r = Request("PUT", Url(key), &value);
    if (!r.error.empty()) return Fault(r.error);
    if (r.code >= 200 && r.code < 300) return {};
    return Refused(fmt::format("PUT answered HTTP {}", r.code));
  }

  // A folder listing: nullopt when the server gives no JSON listing (or no such folder: an empty list).
  Expected<std::optional<std::vector<Item>>> List(const std::string& folder) {
    Response r = Request("GET", Url(folder), nullptr);
    if (!r.error.empty()) return Unavailable(fmt::format("remote cache {}: {}", Where(), r.error));
    if (r.code == 404) return std::optional<std::vector<Item>>(std::vector<Item>{});
    if (r.code != 200) return Unavailable(fmt::format("remote cache {}: GET answered HTTP {}", Where(), r.code));
    nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    if (!j.is_array()) return std::optional<std::vector<Item>>();
    std::vector<Item> items;
    for (const auto& e : j) {
      if (!e.is_object() || !e.value("name", nlohmann::json()).is_string()) continue;
      Item it;
      it.name = e["name"];
      it.dir = e.value("type", std::string()) == "directory";
      if (e.contains("size") && e["size"].is_number_integer()) it.size = e["size"];
      if (it.name.find('/') != std::string::npos || it.name == "." || it.name == "..") continue;
      items.push_back(std::move(it));
    }
    return std::optional<std::vector<Item>>(std::move(items));
  }

  Response Request(const char* method, const std::string& url, const std::string* body) {
    Response out;
    if (!curl_) {
      out.error = "cannot initialise libcurl";
      return out;
    }
    CURL* c = curl_;
    curl_easy_reset(c);
    char errbuf[CURL_ERROR_SIZE] = {};
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout_ * 1000));
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ * 1000));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, Collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &out.body);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    struct curl_slist* headers = nullptr;
    std::string auth;
    if (!secrets_.token.empty()) {
      auth = "Authorization: Bearer " + secrets_.token;
      headers = curl_slist_append(headers, auth.c_str());
    } else if (!user_.empty()) {
      curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
      curl_easy_setopt(c, CURLOPT_USERNAME, user_.c_str());
      curl_easy_setopt(c, CURLOPT_PASSWORD, secrets_.password.c_str());
    }
    Upload up{body, 0};
    if (std::string(method) == "PUT") {
      curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(c, CURLOPT_READFUNCTION, Feed);
      curl_easy_setopt(c, CURLOPT_READDATA, &up);
      curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(body->size()));
      headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
      headers = curl_slist_append(headers, "Expect:");
    } else if (std::string(method) == "DELETE") {
      curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
    }
    if (headers) curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    CURLcode rc = curl_easy_perform(c);
    if (headers) curl_slist_free_all(headers);
    if (rc != CURLE_OK) {
      std::string e = errbuf[0] ? errbuf : curl_easy_strerror(rc);
      for (char& ch : e)
        if (static_cast<unsigned char>(ch) < ' ') ch = ' ';
      out.error = e;
      return out;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out.code);
    return out;
  }

  std::string base_;
  std::string user_;
  RemoteSecrets secrets_;
  double timeout_;
  std::mutex mu_;
  CURL* curl_ = nullptr;
};

}  // namespace

Expected<std::unique_ptr<RemoteStore>> OpenHttpStore(const std::string& base_url, const std::string& user,
                                                     const RemoteSecrets& secrets) {
  return std::unique_ptr<RemoteStore>(std::make_unique<HttpStore>(base_url, user, secrets));
}

}  // namespace opprobe::compiler_probe
