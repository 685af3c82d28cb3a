#include "steno/nemo/hub_pull.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "nemo/curl_api.h"
#include "nemo/sha256.h"
#include "steno/core/error.h"
#include "steno/nemo/import.h"

namespace steno::nemo {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxMetadataBytes = 16u << 20;  // the Hub's answer for a repository of thousands of files: ~1 MB
constexpr size_t kMaxErrorBodyBytes = 4096;     // what an error page contributes to a message

// RFC 3986 percent-encoding of one path segment (or a revision, whose '/' must be encoded too).
std::string encode_segment(const std::string& s) {
  std::string out;
  for (const unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

// A repository file's path, each segment encoded; absolute paths and ".." are refused (the name is the Hub's).
std::string encode_file_path(const std::string& file) {
  STENO_CHECK(!file.empty() && file.front() != '/', "hub: bad file name '{}'", file);
  std::string out;
  size_t start = 0;
  while (start <= file.size()) {
    const size_t slash = std::min(file.find('/', start), file.size());
    const std::string segment = file.substr(start, slash - start);
    STENO_CHECK(!segment.empty() && segment != "." && segment != "..", "hub: bad file name '{}'", file);
    if (!out.empty()) out += '/';
    out += encode_segment(segment);
    start = slash + 1;
  }
  return out;
}

void check_repo(const std::string& repo) {
  const size_t slash = repo.find('/');
  const bool ok = !repo.empty() && repo.size() <= 200 && repo.find('/', slash == std::string::npos ? 0 : slash + 1) ==
                                                             std::string::npos &&
                  std::all_of(repo.begin(), repo.end(), [](unsigned char c) {
                    return std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '/';
                  });
  STENO_CHECK(ok && repo.front() != '/' && repo.back() != '/' && repo.find("..") == std::string::npos,
              "'{}' is not a Hugging Face repository name (OWNER/NAME, e.g. nvidia/parakeet-tdt-0.6b-v2)", repo);
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// One libcurl handle with the options every request shares.
class Request {
 public:
  Request(const std::string& url, const std::string& token, long connect_timeout_s) : url_(url) {
    const CurlApi& curl = curl_api();
    h_ = curl.easy_init();
    if (!h_) fail(ErrorCode::kInternal, "libcurl: cannot make a handle");
    curl.easy_setopt(h_, CURLOPT_URL, url.c_str());
    curl.easy_setopt(h_, CURLOPT_FOLLOWLOCATION, 1L);  // the Hub redirects file downloads to its CDN
    curl.easy_setopt(h_, CURLOPT_MAXREDIRS, 10L);
    curl.easy_setopt(h_, CURLOPT_CONNECTTIMEOUT, connect_timeout_s);
    curl.easy_setopt(h_, CURLOPT_LOW_SPEED_LIMIT, 1L);  // a connection silent for 60 s is broken off
    curl.easy_setopt(h_, CURLOPT_LOW_SPEED_TIME, 60L);
    curl.easy_setopt(h_, CURLOPT_USERAGENT, "steno");
    curl.easy_setopt(h_, CURLOPT_NOSIGNAL, 1L);
    curl.easy_setopt(h_, CURLOPT_ERRORBUFFER, error_);
    curl.easy_setopt(h_, CURLOPT_PROTOCOLS_STR, "http,https");
    curl.easy_setopt(h_, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    // libcurl sends a custom Authorization header only to the host it was set for, never to a redirect's.
    if (!token.empty()) headers_ = curl.slist_append(headers_, fmt::format("Authorization: Bearer {}", token).c_str());
    curl.easy_setopt(h_, CURLOPT_HTTPHEADER, headers_);
  }
  ~Request() {
    curl_api().slist_free_all(headers_);
    curl_api().easy_cleanup(h_);
  }
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  CURL* handle() { return h_; }
  const std::string& url() const { return url_; }
  long status() {
    long code = 0;
    curl_api().easy_getinfo(h_, CURLINFO_RESPONSE_CODE, &code);
    return code;
  }
  // libcurl's own words for a failed transfer.
  std::string describe(CURLcode rc) const { return *error_ ? error_ : curl_api().easy_strerror(rc); }

 private:
  std::string url_;
  CURL* h_ = nullptr;
  curl_slist* headers_ = nullptr;
  char error_[CURL_ERROR_SIZE] = {};
};

[[noreturn]] void fail_unreachable(const std::string& endpoint, Request& r, CURLcode rc) {
  fail(ErrorCode::kUnavailable,
       "cannot reach the Hugging Face Hub at {} ({}: {}); check the network, or point --hub-url or $HF_ENDPOINT at a "
       "mirror",
       endpoint, r.url(), r.describe(rc));
}

// The message for an HTTP error answer: the status, what it usually means, and the start of the body.
[[noreturn]] void fail_status(Request& r, long status, const std::string& body, const std::string& what) {
  std::string excerpt = body.substr(0, 300);
  std::replace(excerpt.begin(), excerpt.end(), '\n', ' ');
  const std::string detail = excerpt.empty() ? "" : fmt::format(" ({})", excerpt);
  if (status == 401 || status == 403)
    fail(ErrorCode::kUnavailable, "{}: the Hub refused access (HTTP {}) at {}{}; a gated or private model needs "
         "$HF_TOKEN, with its terms accepted on the model's page", what, status, r.url(), detail);
  if (status == 404)
    fail(ErrorCode::kNotFound, "{}: not found on the Hub (HTTP 404) at {}{}", what, r.url(), detail);
  fail(ErrorCode::kUnavailable, "{}: the Hub answered HTTP {} at {}{}", what, status, r.url(), detail);
}

size_t append_capped(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<std::pair<std::string, bool>*>(user);
  if (sink->first.size() + size * n > kMaxMetadataBytes) {
    sink->second = true;
    return 0;  // aborts the transfer
  }
  sink->first.append(data, size * n);
  return size * n;
}

struct Sibling {
  std::string name;
  std::optional<std::string> sha256;
  std::optional<uint64_t> size;
};

std::vector<Sibling> parse_siblings(const std::string& body, const std::string& url) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    fail(ErrorCode::kDataLoss, "{}: the answer is not the Hub's model metadata (not a JSON object)", url);
  const auto siblings = j.find("siblings");
  if (siblings == j.end() || !siblings->is_array())
    fail(ErrorCode::kDataLoss, "{}: the answer is not the Hub's model metadata (no 'siblings' list)", url);
  std::vector<Sibling> out;
  for (const nlohmann::json& s : *siblings) {
    const auto name = s.is_object() ? s.find("rfilename") : s.end();
    if (!s.is_object() || name == s.end() || !name->is_string())
      fail(ErrorCode::kDataLoss, "{}: a sibling without a file name ('rfilename') in the Hub's metadata", url);
    Sibling sib{name->get<std::string>(), {}, {}};
    if (const auto lfs = s.find("lfs"); lfs != s.end() && lfs->is_object()) {
      if (const auto sha = lfs->find("sha256"); sha != lfs->end()) {
        std::string hex = sha->is_string() ? sha->get<std::string>() : "";
        std::transform(hex.begin(), hex.end(), hex.begin(), [](unsigned char c) { return std::tolower(c); });
        if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
          fail(ErrorCode::kDataLoss, "{}: '{}' has a malformed lfs.sha256 in the Hub's metadata", url, sib.name);
        sib.sha256 = hex;
      }
      if (const auto size = lfs->find("size"); size != lfs->end()) {
        if (!size->is_number_unsigned())
          fail(ErrorCode::kDataLoss, "{}: '{}' has a malformed lfs.size in the Hub's metadata", url, sib.name);
        sib.size = size->get<uint64_t>();
      }
    }
    out.push_back(std::move(sib));
  }
  return out;
}

Sibling choose_nemo(const std::vector<Sibling>& siblings, const std::string& wanted, const std::string& repo) {
  std::vector<std::string> nemos;
  for (const Sibling& s : siblings)
    if (s.name.ends_with(".nemo")) nemos.push_back(s.name);
  const std::string listed = nemos.empty() ? "none" : fmt::format("{}", fmt::join(nemos, ", "));
  if (!wanted.empty()) {
    for (const Sibling& s : siblings)
      if (s.name == wanted) return s;
    fail(ErrorCode::kNotFound, "{} has no file '{}'; its .nemo files: {}", repo, wanted, listed);
  }
  if (nemos.size() != 1)
    fail(ErrorCode::kInvalidArgument, "{} has {} .nemo files ({}){}", repo, nemos.empty() ? "no" : "several", listed,
         nemos.empty() ? "; steno pulls NeMo checkpoints" : "; choose one with --file");
  for (const Sibling& s : siblings)
    if (s.name == nemos[0]) return s;
  fail(ErrorCode::kInternal, "unreachable");
}

uint64_t size_of(const fs::path& p) {
  std::error_code ec;
  const uintmax_t n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

// One download attempt's state, seen by libcurl's callbacks.
struct Transfer {
  Request* request = nullptr;
  int fd = -1;
  uint64_t have = 0;                // bytes in the part file
  std::optional<uint64_t> total;    // the Hub's size
  std::optional<uint64_t> range_start;  // this answer's Content-Range start
  bool started = false;             // the first body byte of the final answer was seen
  bool write_body = false;          // the answer is the file (200 or 206), not an error page
  std::string error_body;
  std::string failure;              // why a callback stopped the transfer
  const PullOptions* options = nullptr;
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string line(data, size * n);
  if (line.starts_with("HTTP/")) t->range_start.reset();  // a new answer (after a redirect)
  std::string lower = line;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.starts_with("content-range:")) {
    unsigned long long start = 0;
    if (std::sscanf(lower.c_str() + 14, " bytes %llu-", &start) == 1) t->range_start = start;
  }
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  if (!t->started) {
    t->started = true;
    const long status = t->request->status();
    t->write_body = status == 200 || status == 206;
    if (status == 206 && t->range_start != t->have) {
      t->failure = fmt::format("the server resumed at byte {} where {} were asked for",
                               t->range_start ? std::to_string(*t->range_start) : "?", t->have);
      return 0;
    }
    if (status == 200 && t->have > 0) {  // the server ignored the Range: start again
      if (::ftruncate(t->fd, 0) != 0) {
        t->failure = fmt::format("cannot truncate the part file: {}", std::strerror(errno));
        return 0;
      }
      t->have = 0;
    }
  }
  if (!t->write_body) {
    if (t->error_body.size() < kMaxErrorBodyBytes)
      t->error_body.append(data, std::min(bytes, kMaxErrorBodyBytes - t->error_body.size()));
    return bytes;
  }
  if (t->total && t->have + bytes > *t->total) {
    t->failure = fmt::format("the server sent more than the {} bytes the Hub's metadata gives", *t->total);
    return 0;
  }
  for (size_t done = 0; done < bytes;) {
    const ssize_t w = ::write(t->fd, data + done, bytes - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      t->failure = fmt::format("cannot write the part file: {}", std::strerror(errno));
      return 0;
    }
    done += static_cast<size_t>(w);
  }
  t->have += bytes;
  if (t->options->progress) t->options->progress(t->have, t->total.value_or(0));
  return bytes;
}

// The part file, open for appending and locked (flock) so that two pulls of one file take turns instead of
// writing it together. The holder renames it away when done, so a waiter that gets the lock checks that its
// descriptor is still the file at `path` and opens it again if not.
class PartFile {
 public:
  explicit PartFile(const fs::path& path) : path_(path) {
    for (;;) {
      fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (fd_ < 0) fail(ErrorCode::kUnavailable, "{}: cannot open: {}", path.string(), std::strerror(errno));
      while (::flock(fd_, LOCK_EX) != 0) {
        if (errno == EINTR) continue;
        const int e = errno;
        ::close(fd_);
        fail(ErrorCode::kUnavailable, "{}: cannot lock: {}", path.string(), std::strerror(e));
      }
      struct stat held {}, named {};
      if (::fstat(fd_, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
          held.st_dev == named.st_dev)
        return;
      ::close(fd_);
    }
  }
  ~PartFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  PartFile(const PartFile&) = delete;
  PartFile& operator=(const PartFile&) = delete;
  int fd() const { return fd_; }

 private:
  fs::path path_;
  int fd_ = -1;
};

bool transient(CURLcode rc) {
  switch (rc) {
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_COULDNT_CONNECT:
      return true;
    default:
      return false;
  }
}

std::string megabytes(uint64_t bytes) { return fmt::format("{:.1f} MB", bytes / 1e6); }

// Downloads `url` into `part`, resuming from what it holds, until it has the whole file (or `total` bytes).
void download(const std::string& url, const std::string& endpoint, const PartFile& file, const fs::path& part,
              std::optional<uint64_t> total, const PullOptions& o, const std::string& token) {
  for (int attempt = 1;; ++attempt) {
    Transfer t;
    t.fd = file.fd();
    t.have = size_of(part);
    t.total = total;
    t.options = &o;
    if (total && t.have == *total) return;  // complete (an earlier run's)
    if (total && t.have > *total) {
      if (::ftruncate(t.fd, 0) != 0) fail(ErrorCode::kUnavailable, "{}: cannot truncate", part.string());
      t.have = 0;
    }
    if (t.have > 0 && o.log)
      o.log(fmt::format("resuming at {} of {}", megabytes(t.have), total ? megabytes(*total) : "?"));
    Request r(url, token, o.connect_timeout_s);
    t.request = &r;
    curl_api().easy_setopt(r.handle(), CURLOPT_HEADERFUNCTION, on_header);
    curl_api().easy_setopt(r.handle(), CURLOPT_HEADERDATA, &t);
    curl_api().easy_setopt(r.handle(), CURLOPT_WRITEFUNCTION, on_body);
    curl_api().easy_setopt(r.handle(), CURLOPT_WRITEDATA, &t);
    if (t.have > 0) curl_api().easy_setopt(r.handle(), CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(t.have));
    const CURLcode rc = curl_api().easy_perform(r.handle());
    const long status = r.status();
    if (!t.failure.empty()) {
      fail(ErrorCode::kDataLoss, "downloading {}: {}; the part file {} is kept", url, t.failure, part.string());
    }
    if (rc == CURLE_OK && status == 416 && total && size_of(part) == *total) return;
    if (rc == CURLE_OK && status == 416) {  // the part is not a prefix the server knows: start again
      if (::ftruncate(t.fd, 0) != 0) fail(ErrorCode::kUnavailable, "{}: cannot truncate", part.string());
      if (attempt < o.attempts) continue;
    }
    if (rc == CURLE_OK && status >= 400) fail_status(r, status, t.error_body, fmt::format("downloading {}", url));
    if (rc == CURLE_OK && (status == 200 || status == 206)) {
      if (!total || size_of(part) == *total) return;
      // A complete answer that is shorter than the Hub says: try again from where it stopped.
    } else if (rc != CURLE_OK) {
      if (attempt == 1 && t.have == size_of(part) &&
          (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_OPERATION_TIMEDOUT))
        fail_unreachable(endpoint, r, rc);
      if (!transient(rc))
        fail(ErrorCode::kUnavailable, "downloading {}: {}; the part file {} is kept: run the command again to resume",
             url, r.describe(rc), part.string());
    } else {
      fail(ErrorCode::kUnavailable, "downloading {}: unexpected HTTP {}", url, status);
    }
    if (attempt >= o.attempts)
      fail(ErrorCode::kUnavailable,
           "downloading {}: broke off {} times (last: {}); {} of it is kept in {}: run the command again to resume",
           url, attempt, rc == CURLE_OK ? "a short answer" : r.describe(rc), megabytes(size_of(part)), part.string());
    if (o.log)
      o.log(fmt::format("the download broke off at {} ({}); resuming", megabytes(size_of(part)),
                        rc == CURLE_OK ? "a short answer" : r.describe(rc)));
    std::this_thread::sleep_for(std::chrono::seconds(attempt));
  }
}

// A name made safe as a file name (a part file's when the Hub gives no SHA-256).
std::string file_safe(const std::string& s) {
  std::string out;
  for (const unsigned char c : s)
    out += std::isalnum(c) || c == '-' || c == '.' || c == '_' ? static_cast<char>(c) : '_';
  return out;
}

}  // namespace

std::string hub_endpoint(const std::string& given) {
  std::string e = !given.empty() ? given : env_or("HF_ENDPOINT", "https://huggingface.co");
  while (!e.empty() && e.back() == '/') e.pop_back();
  STENO_CHECK(e.starts_with("http://") || e.starts_with("https://"), "hub URL '{}' is not http:// or https://", e);
  return e;
}

PullResult pull_model(const PullOptions& o) {
  check_repo(o.repo);
  STENO_CHECK(!o.revision.empty(), "--revision must not be empty");
  const std::string endpoint = hub_endpoint(o.endpoint);
  const std::string token = !o.token.empty() ? o.token : env_or("HF_TOKEN", "");
  const std::string what = fmt::format("{}@{}", o.repo, o.revision);

  // The repository's files, with the LFS sizes and hashes.
  const std::string api = fmt::format("{}/api/models/{}/revision/{}?blobs=true", endpoint, o.repo,
                                      encode_segment(o.revision));
  std::vector<Sibling> siblings;
  {
    Request r(api, token, o.connect_timeout_s);
    std::pair<std::string, bool> body{"", false};
    curl_api().easy_setopt(r.handle(), CURLOPT_WRITEFUNCTION, append_capped);
    curl_api().easy_setopt(r.handle(), CURLOPT_WRITEDATA, &body);
    curl_api().easy_setopt(r.handle(), CURLOPT_TIMEOUT, 120L);
    const CURLcode rc = curl_api().easy_perform(r.handle());
    if (body.second)
      fail(ErrorCode::kDataLoss, "{}: the answer is over {} MiB: not the Hub's model metadata", api,
           kMaxMetadataBytes >> 20);
    if (rc != CURLE_OK) fail_unreachable(endpoint, r, rc);
    if (r.status() != 200) fail_status(r, r.status(), body.first, what);
    siblings = parse_siblings(body.first, api);
  }
  const Sibling nemo = choose_nemo(siblings, o.file, what);
  const std::string base = fs::path(nemo.name).filename().string();
  const std::string name = base.ends_with(".nemo") ? base.substr(0, base.size() - 5) : base;
  const std::string url = fmt::format("{}/{}/resolve/{}/{}", endpoint, o.repo, encode_segment(o.revision),
                                      encode_file_path(nemo.name));

  PullResult result;
  result.file = nemo.name;
  auto cached = [&]() -> std::optional<PullResult> {
    if (!nemo.sha256 || !o.out.empty()) return std::nullopt;
    const fs::path dir = find_cached_model(o.cache, *nemo.sha256);
    if (dir.empty()) return std::nullopt;
    if (o.log) o.log(fmt::format("{} is in the cache already: {}", nemo.name, dir.string()));
    return PullResult{dir, *nemo.sha256, nemo.name, false};
  };
  if (auto done = cached()) return *done;

  const fs::path downloads = o.cache / "downloads";
  std::error_code ec;
  fs::create_directories(downloads, ec);
  if (ec) fail(ErrorCode::kUnavailable, "cannot create {}: {}", downloads.string(), ec.message());
  const fs::path part =
      downloads / ((nemo.sha256 ? *nemo.sha256 : file_safe(fmt::format("{}@{}@{}", o.repo, o.revision, nemo.name))) +
                   ".part");
  const PartFile file(part);  // held until the model is imported: another pull of it waits, then finds it cached
  if (auto done = cached()) {
    if (size_of(part) == 0) fs::remove(part, ec);  // the empty part this process made while it waited
    return *done;
  }
  if (o.log)
    o.log(fmt::format("downloading {} ({}) from {}", nemo.name, nemo.size ? megabytes(*nemo.size) : "size unknown",
                      url));
  download(url, endpoint, file, part, nemo.size, o, token);

  const std::string sha = sha256_of_file(part);
  if (nemo.sha256 && sha != *nemo.sha256) {
    fs::remove(part, ec);
    fail(ErrorCode::kDataLoss,
         "{}: the download's SHA-256 is {}, the Hub's is {}: corrupt or tampered with; deleted it, nothing imported",
         url, sha, *nemo.sha256);
  }
  // Complete and checked: named as the repository names it, so that the import names the model after it.
  const fs::path staged_dir = downloads / sha;
  fs::create_directories(staged_dir, ec);
  const fs::path staged = staged_dir / base;
  fs::rename(part, staged, ec);
  if (ec) fail(ErrorCode::kUnavailable, "cannot move {} to {}: {}", part.string(), staged.string(), ec.message());

  try {
    if (!o.out.empty()) {
      if (o.log) o.log(fmt::format("importing {} into {}", base, o.out.string()));
      ImportOptions options;
      options.name = name;
      import_nemo(staged, o.out, options);
      result.dir = o.out;
    } else {
      result.dir = cache_import(staged, sha, name, url, o.cache, o.log).dir;
    }
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("{} (the downloaded checkpoint is kept: {})", e.what(), staged.string()));
  }
  fs::remove_all(staged_dir, ec);  // the model directory is what is kept; the checkpoint goes
  result.sha256 = sha;
  result.downloaded = true;
  return result;
}

}  // namespace steno::nemo
