// serve_load: N concurrent OpenAI transcription requests against a running `steno serve`, every one checked.
//
//   serve_load --port P [--host 127.0.0.1] [--requests 1000] [--testset DIR] [--timeout-s 300] [--warmup 2]
//              [--grace-ms 1000] [--out FILE.json]
//
// 1. Raises RLIMIT_NOFILE's soft limit to the hard limit (one descriptor per connection) and says so when even the
//    hard limit is too low for N connections.
// 2. Warm-up: --warmup requests one after another on one connection (excluded from the measurement).
// 3. Scrapes /metrics (before).
// 4. Opens N connections, all of them, before sending anything.
// 5. Writes N requests at once, one per connection (POST /v1/audio/transcriptions, multipart, the FLAC clips of
//    tests/data/testset/espeak cycled in order), then waits for every answer, up to --timeout-s from the first write.
// 6. Checks each answer: exactly one response, status 200, JSON {"text"} equal to the clip's line in
//    reference_transcripts.tsv. Connections stay open (keep-alive) for --grace-ms after the last answer, so that a
//    second response on any of them is seen and counted as a duplicate answer.
// 7. Scrapes /metrics again: the server's batches, mean batch size and batch-size histogram over the run.
// Prints the result as JSON (without the per-request rows) and writes it, with them, to --out: requests; ok
// (answered exactly once, 200, the right text); wrong (a 200 with another text); failed, by reason (connect,
// write or read errors, another status, no answer within --timeout-s, answered twice); duplicate_answers (responses
// beyond the first, over all connections: 0 unless the server answered a request twice); wall_s (first write to
// last answer) and requests/s (ok / wall_s); latency from each request's first write to its whole answer (mean and
// nearest-rank p50/p90/p95/p99, max); and server_metrics, the increase of /metrics's counters over the run
// (steno_batch_size: batches, mean batch size, histogram; nv_inference_*; stage durations; padding waste).
// Exit status 0 only when every request was answered exactly once, with status 200 and the right text (and the
// warm-up too); 1 otherwise; 2 for bad usage.
#include <sys/resource.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

#ifndef STENO_SOURCE_DIR
#define STENO_SOURCE_DIR "."
#endif

constexpr const char* kBoundary = "steno-serve-load-5b9e2c";
constexpr size_t kBodyLimit = 16u << 20;

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  int requests = 1000;
  std::string testset = std::string(STENO_SOURCE_DIR) + "/tests/data/testset/espeak";
  double timeout_s = 300;
  int warmup = 2;
  int grace_ms = 1000;
  std::string out;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "serve_load: %s\n"
               "usage: serve_load --port P [--host H] [--requests N] [--testset DIR] [--timeout-s S] [--warmup K]\n"
               "                  [--grace-ms MS] [--out FILE.json]\n",
               why.c_str());
  std::exit(2);
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--host") o.host = value();
      else if (a == "--port") o.port = std::stoi(value());
      else if (a == "--requests") o.requests = std::stoi(value());
      else if (a == "--testset") o.testset = value();
      else if (a == "--timeout-s") o.timeout_s = std::stod(value());
      else if (a == "--warmup") o.warmup = std::stoi(value());
      else if (a == "--grace-ms") o.grace_ms = std::stoi(value());
      else if (a == "--out") o.out = value();
      else if (a == "-h" || a == "--help") usage("N concurrent transcription requests, each checked");
      else usage("unknown argument " + a);
    } catch (const std::logic_error&) {
      usage("bad value for " + a);
    }
  }
  if (o.port <= 0 || o.port > 65535) usage("--port is required (1..65535)");
  if (o.requests < 1) usage("--requests must be >= 1");
  if (o.timeout_s <= 0) usage("--timeout-s must be > 0");
  return o;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---- the clips ------------------------------------------------------------------------------------------------

struct Clip {
  std::string name;      // "test-0000001.flac"
  std::string expected;  // its line in reference_transcripts.tsv
  double duration_s = 0;
  std::string body;     // the multipart body
  std::string head;     // the request line and headers, Content-Length included
};

std::vector<Clip> load_clips(const Options& o) {
  std::vector<Clip> clips;
  std::ifstream tsv(o.testset + "/reference_transcripts.tsv");
  if (!tsv) throw std::runtime_error("cannot read " + o.testset + "/reference_transcripts.tsv");
  std::string line;
  while (std::getline(tsv, line)) {
    if (line.empty()) continue;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) throw std::runtime_error("reference_transcripts.tsv: no tab in: " + line);
    Clip c;
    const std::string rel = line.substr(0, tab);
    c.name = rel.substr(rel.rfind('/') + 1);
    c.expected = line.substr(tab + 1);
    const std::string audio = read_file(o.testset + "/" + rel);
    c.body = std::string("--") + kBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" +
             c.name + "\"\r\nContent-Type: audio/flac\r\n\r\n" + audio + "\r\n--" + kBoundary +
             "\r\nContent-Disposition: form-data; name=\"response_format\"\r\n\r\njson\r\n--" + kBoundary +
             "--\r\n";
    c.head = "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: " + o.host + ":" + std::to_string(o.port) +
             "\r\nUser-Agent: steno-serve-load\r\nAccept: application/json\r\nContent-Type: multipart/form-data; "
             "boundary=" +
             kBoundary + "\r\nContent-Length: " + std::to_string(c.body.size()) + "\r\n\r\n";
    clips.push_back(std::move(c));
  }
  if (clips.empty()) throw std::runtime_error("no clips in " + o.testset + "/reference_transcripts.tsv");
  // Durations from manifest.jsonl, when present (for audio seconds per second).
  std::ifstream manifest(o.testset + "/manifest.jsonl");
  std::map<std::string, double> durations;
  while (manifest && std::getline(manifest, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("audio_filepath") || !j.contains("duration")) continue;
    const std::string p = j["audio_filepath"].get<std::string>();
    durations[p.substr(p.rfind('/') + 1)] = j["duration"].get<double>();
  }
  for (auto& c : clips)
    if (auto it = durations.find(c.name); it != durations.end()) c.duration_s = it->second;
  return clips;
}

// What one answer says: "" when it is right, else why not (the text compared exactly).
struct Verdict {
  bool ok = false;
  bool wrong_text = false;  // a 200 with well-formed JSON whose text differs
  std::string reason;       // for failures: "http 429", "bad json", ...
  std::string got;          // the text, when there was one
};

Verdict judge(const bhttp::response<bhttp::string_body>& r, const Clip& clip) {
  Verdict v;
  if (r.result_int() != 200) {
    v.reason = "http " + std::to_string(r.result_int());
    return v;
  }
  const auto j = nlohmann::json::parse(r.body(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("text") || !j["text"].is_string()) {
    v.reason = "200 without JSON {\"text\"}";
    return v;
  }
  v.got = j["text"].get<std::string>();
  if (v.got != clip.expected) {
    v.wrong_text = true;
    v.reason = "wrong text";
    return v;
  }
  v.ok = true;
  return v;
}

// ---- synchronous requests (warm-up, /metrics) -----------------------------------------------------------------

struct SyncResult {
  bool ok = false;
  std::string error;
  bhttp::response<bhttp::string_body> response;
};

SyncResult sync_request(tcp::socket& socket, const std::string& head, const std::string& body) {
  SyncResult r;
  error_code ec;
  const std::array<net::const_buffer, 2> bufs = {net::buffer(head), net::buffer(body)};
  net::write(socket, bufs, ec);
  if (ec) {
    r.error = "write: " + ec.message();
    return r;
  }
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(kBodyLimit);
  bhttp::read(socket, buffer, parser, ec);
  if (ec) {
    r.error = "read: " + ec.message();
    return r;
  }
  r.response = parser.release();
  r.ok = true;
  return r;
}

bool connect_to(tcp::socket& socket, const tcp::endpoint& ep, std::string& error) {
  error_code ec;
  socket.connect(ep, ec);
  if (ec) error = "connect: " + ec.message();
  return !ec;
}

// The Prometheus text of /metrics, as {"name{labels but model and version}": value}.
using Scrape = std::map<std::string, double>;

Scrape parse_prometheus(const std::string& text) {
  Scrape out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    std::string series = line.substr(0, space);
    double value = 0;
    try {
      value = std::stod(line.substr(space + 1));
    } catch (const std::logic_error&) {
      continue;
    }
    std::string key = series;
    if (const size_t brace = series.find('{'); brace != std::string::npos) {
      key = series.substr(0, brace);
      std::vector<std::string> kept;
      std::string labels = series.substr(brace + 1, series.rfind('}') - brace - 1);
      size_t pos = 0;
      while (pos < labels.size()) {
        const size_t eq = labels.find('=', pos);
        if (eq == std::string::npos) break;
        const size_t close = labels.find('"', labels.find('"', eq) + 1);
        const std::string name = labels.substr(pos, eq - pos);
        if (name != "model" && name != "version") kept.push_back(labels.substr(pos, close + 1 - pos));
        pos = close + 2;  // past '"' and ','
      }
      std::sort(kept.begin(), kept.end());
      if (!kept.empty()) {
        key += "{";
        for (size_t i = 0; i < kept.size(); ++i) key += (i ? "," : "") + kept[i];
        key += "}";
      }
    }
    out[key] += value;
  }
  return out;
}

std::optional<Scrape> scrape_metrics(const tcp::endpoint& ep, const Options& o, std::string& error) {
  net::io_context ioc;
  tcp::socket socket(ioc);
  if (!connect_to(socket, ep, error)) return std::nullopt;
  const std::string head = "GET /metrics HTTP/1.1\r\nHost: " + o.host + ":" + std::to_string(o.port) +
                           "\r\nConnection: close\r\n\r\n";
  SyncResult r = sync_request(socket, head, "");
  if (!r.ok) {
    error = r.error;
    return std::nullopt;
  }
  if (r.response.result_int() != 200) {
    error = "/metrics answered " + std::to_string(r.response.result_int());
    return std::nullopt;
  }
  return parse_prometheus(r.response.body());
}

double delta(const Scrape& before, const Scrape& after, const std::string& key) {
  const auto a = after.find(key);
  const auto b = before.find(key);
  return (a == after.end() ? 0 : a->second) - (b == before.end() ? 0 : b->second);
}

// A counter's increase as an integer (Prometheus serializes every value as a double).
int64_t count_of(double v) { return static_cast<int64_t>(std::llround(v)); }

std::string number(double v) {  // le="16" rather than le="16.000000"
  std::ostringstream s;
  s << v;
  return s.str();
}

Json server_side(const Scrape& before, const Scrape& after) {
  Json j;
  const double batches = delta(before, after, "steno_batch_size_count");
  const double batched_requests = delta(before, after, "steno_batch_size_sum");
  j["batches"] = count_of(batches);
  j["batched_requests"] = count_of(batched_requests);
  j["mean_batch_size"] = batches > 0 ? batched_requests / batches : 0.0;
  j["nv_inference_exec_count"] = count_of(delta(before, after, "nv_inference_exec_count"));
  j["nv_inference_count"] = count_of(delta(before, after, "nv_inference_count"));
  // The histogram's buckets (cumulative in Prometheus), as counts of batches per size range.
  std::vector<std::pair<double, double>> buckets;  // (le, cumulative count)
  for (const auto& [key, value] : after) {
    const std::string prefix = "steno_batch_size_bucket{le=\"";
    if (key.rfind(prefix, 0) != 0) continue;
    const std::string le = key.substr(prefix.size(), key.size() - prefix.size() - 2);
    const double bound = le == "+Inf" ? INFINITY : std::stod(le);
    buckets.emplace_back(bound, delta(before, after, key));
  }
  std::sort(buckets.begin(), buckets.end());
  Json hist = Json::object(), cumulative = Json::object();
  double prev_bound = 0, prev_count = 0;
  for (const auto& [bound, count] : buckets) {
    const std::string le = std::isinf(bound) ? "+Inf" : number(bound);
    cumulative[le] = count_of(count);
    // Batch sizes are integers: the bucket (prev, bound] holds sizes prev+1 .. bound.
    const std::string range = std::isinf(bound) ? number(prev_bound + 1) + "+"
                              : prev_bound + 1 == bound ? number(bound)
                                                        : number(prev_bound + 1) + "-" + number(bound);
    hist[range] = count_of(count - prev_count);
    prev_bound = bound;
    prev_count = count;
  }
  j["batch_size_histogram"] = hist;
  j["batch_size_buckets_cumulative"] = cumulative;
  const double success = delta(before, after, "nv_inference_request_success");
  j["nv_inference_request_success"] = count_of(success);
  Json failures = Json::object();
  for (const char* reason : {"REJECTED", "CANCELED", "BACKEND", "OTHER"})
    failures[reason] =
        count_of(delta(before, after, std::string("nv_inference_request_failure{reason=\"") + reason + "\"}"));
  j["nv_inference_request_failure"] = failures;
  if (success > 0) {
    j["queue_ms_mean"] = delta(before, after, "nv_inference_queue_duration_us") / success / 1000;
    j["compute_infer_ms_mean"] = delta(before, after, "nv_inference_compute_infer_duration_us") / success / 1000;
    j["request_ms_mean"] = delta(before, after, "nv_inference_request_duration_us") / success / 1000;
  }
  Json stages = Json::object();
  for (const char* stage : {"features", "encoder", "decoder", "detokenize"})
    stages[stage] = delta(before, after, std::string("steno_stage_duration_us{stage=\"") + stage + "\"}") / 1000;
  j["stage_ms_total"] = stages;
  const double pw_count = delta(before, after, "steno_padding_waste_count");
  j["padding_waste_mean"] = pw_count > 0 ? delta(before, after, "steno_padding_waste_sum") / pw_count : 0.0;
  j["audio_seconds"] = delta(before, after, "steno_audio_seconds_total");
  return j;
}

// ---- the concurrent run ---------------------------------------------------------------------------------------

enum class Result { kPending, kOk, kWrong, kFailed };

struct Slot {
  explicit Slot(net::io_context& ioc) : socket(ioc) {}
  int index = 0;
  int clip = 0;
  tcp::socket socket;
  bool connected = false;
  beast::flat_buffer buffer;
  std::optional<bhttp::response_parser<bhttp::string_body>> parser;
  Clock::time_point sent, answered;
  Result result = Result::kPending;
  int status = 0;
  std::string reason, got, request_id;
  int responses = 0;       // complete responses read on this connection
  size_t extra_bytes = 0;  // > 0: bytes after the first response that did not make a whole response
  bool closed = false;
};

class Run {
 public:
  Run(const Options& o, const std::vector<Clip>& clips, const tcp::endpoint& ep)
      : o_(o), clips_(clips), ep_(ep), deadline_(ioc_), grace_(ioc_) {
    for (int i = 0; i < o.requests; ++i) {
      slots_.push_back(std::make_unique<Slot>(ioc_));
      slots_.back()->index = i;
      slots_.back()->clip = i % static_cast<int>(clips.size());
    }
  }

  // Opens every connection; returns how many failed.
  int connect_all() {
    const auto start = Clock::now();
    for (auto& s : slots_) {
      Slot* slot = s.get();
      slot->socket.async_connect(ep_, [slot](error_code ec) {
        if (ec) {
          slot->result = Result::kFailed;
          slot->reason = "connect: " + ec.message();
          return;
        }
        slot->connected = true;
        error_code ignored;
        slot->socket.set_option(tcp::no_delay(true), ignored);
      });
    }
    ioc_.run();
    ioc_.restart();
    connect_s_ = std::chrono::duration<double>(Clock::now() - start).count();
    int failed = 0;
    for (auto& s : slots_) failed += !s->connected;
    return failed;
  }

  void send_all() {
    start_ = Clock::now();
    for (auto& s : slots_) {
      if (s->connected) {
        ++outstanding_;
        send(*s);
      }
    }
    deadline_.expires_after(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.timeout_s)));
    deadline_.async_wait([this](error_code ec) {
      if (ec) return;
      timed_out_ = true;
      for (auto& s : slots_) {
        if (s->result == Result::kPending) {
          s->result = Result::kFailed;
          s->reason = "no answer within " + number(o_.timeout_s) + " s";
        }
      }
      close_all();
    });
    if (outstanding_ == 0) finish();
    ioc_.run();
    end_ = last_answer_ == Clock::time_point{} ? Clock::now() : last_answer_;
  }

  Json result_json() const;
  bool clean() const;

 private:
  void send(Slot& s) {
    const Clip& clip = clips_[s.clip];
    s.parser.emplace();
    s.parser->body_limit(kBodyLimit);
    s.sent = Clock::now();
    const std::array<net::const_buffer, 2> bufs = {net::buffer(clip.head), net::buffer(clip.body)};
    net::async_write(s.socket, bufs, [this, &s](error_code ec, size_t) {
      if (ec) return fail(s, "write: " + ec.message());
      bhttp::async_read(s.socket, s.buffer, *s.parser, [this, &s](error_code ec, size_t) { on_response(s, ec); });
    });
  }

  void fail(Slot& s, const std::string& reason) {
    if (s.result != Result::kPending) return;
    s.result = Result::kFailed;
    s.reason = reason;
    s.answered = last_answer_ = Clock::now();
    done_one();
  }

  void on_response(Slot& s, error_code ec) {
    if (s.result != Result::kPending) return;  // timed out meanwhile
    if (ec) return fail(s, "read: " + ec.message());
    s.answered = last_answer_ = Clock::now();
    ++s.responses;
    const auto& r = s.parser->get();
    s.status = r.result_int();
    const auto id = r["X-Request-Id"];
    s.request_id.assign(id.data(), id.size());
    const Verdict v = judge(r, clips_[s.clip]);
    s.got = v.got;
    s.reason = v.reason;
    s.result = v.ok ? Result::kOk : v.wrong_text ? Result::kWrong : Result::kFailed;
    done_one();
    watch(s);
  }

  // After the answer: anything more the server sends on this connection is a second answer (or junk).
  void watch(Slot& s) {
    if (s.closed) return;
    s.parser.emplace();
    s.parser->body_limit(kBodyLimit);
    bhttp::async_read(s.socket, s.buffer, *s.parser, [this, &s](error_code ec, size_t) {
      if (s.closed) return;
      if (!ec) {
        ++s.responses;
        return watch(s);
      }
      if (s.parser->got_some()) s.extra_bytes += 1;  // a partial response: more than one answer began
      // end_of_stream: the server closed the connection, nothing more can arrive.
    });
  }

  void done_one() {
    if (--outstanding_ == 0) finish();
  }

  void finish() {
    deadline_.cancel();
    grace_.expires_after(std::chrono::milliseconds(o_.grace_ms));
    grace_.async_wait([this](error_code) { close_all(); });
  }

  void close_all() {
    for (auto& s : slots_) {
      if (s->closed) continue;
      s->closed = true;
      error_code ignored;
      s->socket.shutdown(tcp::socket::shutdown_both, ignored);
      s->socket.close(ignored);
    }
    grace_.cancel();
  }

  const Options& o_;
  const std::vector<Clip>& clips_;
  tcp::endpoint ep_;
  net::io_context ioc_{1};
  std::vector<std::unique_ptr<Slot>> slots_;
  net::steady_timer deadline_, grace_;
  int outstanding_ = 0;
  bool timed_out_ = false;
  double connect_s_ = 0;
  Clock::time_point start_, end_, last_answer_;
};

double nearest_rank(std::vector<double> sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

Json Run::result_json() const {
  Json j;
  int ok = 0, wrong = 0, failed = 0, duplicates = 0, extra = 0;
  std::map<std::string, int> reasons;
  std::set<std::string> ids;
  int with_id = 0;
  std::vector<double> latencies;
  double audio_s = 0;
  Json wrong_examples = Json::array(), per_request = Json::array();
  for (const auto& s : slots_) {
    // ok: answered exactly once, 200, the right text. A right first answer followed by another is a failure.
    Result result = s->result;
    std::string reason = s->reason;
    if (result == Result::kOk && (s->responses > 1 || s->extra_bytes > 0)) {
      result = Result::kFailed;
      reason = s->responses > 1 ? "answered " + std::to_string(s->responses) + " times" : "bytes after the answer";
    }
    ok += result == Result::kOk;
    wrong += result == Result::kWrong;
    if (result == Result::kFailed || result == Result::kPending) {
      ++failed;
      ++reasons[reason.empty() ? "unknown" : reason];
    }
    duplicates += std::max(0, s->responses - 1);
    extra += s->extra_bytes > 0;
    if (!s->request_id.empty()) {
      ++with_id;
      ids.insert(s->request_id);
    }
    const double latency_ms =
        s->responses > 0 ? std::chrono::duration<double, std::milli>(s->answered - s->sent).count() : -1;
    if (result == Result::kOk) {
      latencies.push_back(latency_ms);
      audio_s += clips_[s->clip].duration_s;
    }
    if (s->result == Result::kWrong && wrong_examples.size() < 20)
      wrong_examples.push_back(
          {{"request", s->index}, {"clip", clips_[s->clip].name}, {"expected", clips_[s->clip].expected},
           {"got", s->got}});
    Json r = {{"i", s->index}, {"clip", clips_[s->clip].name}, {"status", s->status},
              {"latency_ms", std::round(latency_ms * 1000) / 1000},
              {"result", result == Result::kOk      ? "ok"
                         : result == Result::kWrong ? "wrong"
                                                    : "failed"}};
    if (!reason.empty() && result != Result::kOk) r["reason"] = reason;
    if (s->responses > 1) r["responses"] = s->responses;
    if (!s->request_id.empty()) r["request_id"] = s->request_id;
    per_request.push_back(std::move(r));
  }
  const double wall_s = std::chrono::duration<double>(end_ - start_).count();
  std::vector<double> sorted = latencies;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double v : sorted) mean += v;
  if (!sorted.empty()) mean /= static_cast<double>(sorted.size());
  j["requests"] = slots_.size();
  j["connections"] = slots_.size();
  j["ok"] = ok;
  j["wrong"] = wrong;
  j["failed"] = failed;
  j["failed_by_reason"] = reasons;
  j["duplicate_answers"] = duplicates;
  j["connections_with_extra_bytes"] = extra;
  j["answers_with_request_id"] = with_id;
  j["distinct_request_ids"] = ids.size();
  j["timed_out"] = timed_out_;
  j["connect_s"] = connect_s_;
  j["wall_s"] = wall_s;
  j["requests_per_s"] = wall_s > 0 ? ok / wall_s : 0.0;
  j["audio_seconds"] = audio_s;
  j["audio_seconds_per_s"] = wall_s > 0 ? audio_s / wall_s : 0.0;
  j["latency_ms"] = {{"mean", mean},
                     {"p50", nearest_rank(sorted, 50)},
                     {"p90", nearest_rank(sorted, 90)},
                     {"p95", nearest_rank(sorted, 95)},
                     {"p99", nearest_rank(sorted, 99)},
                     {"max", sorted.empty() ? 0 : sorted.back()},
                     {"min", sorted.empty() ? 0 : sorted.front()}};
  j["wrong_examples"] = wrong_examples;
  j["per_request"] = per_request;
  return j;
}

bool Run::clean() const {
  std::set<std::string> ids;
  for (const auto& s : slots_) {
    if (s->result != Result::kOk || s->responses != 1 || s->extra_bytes > 0) return false;
    if (!s->request_id.empty() && !ids.insert(s->request_id).second) return false;  // two answers, one id
  }
  return true;
}

// ---- main -----------------------------------------------------------------------------------------------------

Json raise_nofile(int needed) {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  Json j;
  const auto value = [](rlim_t v) { return v == RLIM_INFINITY ? int64_t{-1} : static_cast<int64_t>(v); };
  j["soft_before"] = value(lim.rlim_cur);
  j["hard"] = value(lim.rlim_max);
  if (lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0)
      std::fprintf(stderr, "serve_load: cannot raise RLIMIT_NOFILE to %llu: %s\n",
                   static_cast<unsigned long long>(lim.rlim_max), std::strerror(errno));
  }
  getrlimit(RLIMIT_NOFILE, &lim);
  j["soft"] = value(lim.rlim_cur);
  std::fprintf(stderr, "serve_load: RLIMIT_NOFILE soft %s -> %s (hard %s)\n", j["soft_before"].dump().c_str(),
               j["soft"].dump().c_str(), j["hard"].dump().c_str());
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < static_cast<rlim_t>(needed) + 64)
    std::fprintf(stderr,
                 "serve_load: WARNING: RLIMIT_NOFILE is %llu even after raising the soft limit to the hard one, too "
                 "low for %d connections (+ a few); raise the hard limit (ulimit -Hn, limits.conf) or use fewer "
                 "--requests. Connections beyond it fail with 'Too many open files'.\n",
                 static_cast<unsigned long long>(lim.rlim_cur), needed);
  return j;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

int run(int argc, char** argv) {
  const Options o = parse_args(argc, argv);
  Json out;
  out["tool"] = "serve_load";
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  out["command"] = command;
  out["date_utc"] = utc_now();
  out["server"] = "http://" + o.host + ":" + std::to_string(o.port);
  out["endpoint"] = "POST /v1/audio/transcriptions (multipart, response_format=json)";
  out["rlimit_nofile"] = raise_nofile(o.requests);

  const std::vector<Clip> clips = load_clips(o);
  out["testset"] = o.testset;
  out["clips"] = clips.size();
  tcp::endpoint ep(net::ip::make_address(o.host), static_cast<unsigned short>(o.port));
  bool good = true;

  // Warm-up, one at a time on one connection.
  {
    Json w;
    int ok = 0;
    std::string error;
    net::io_context ioc;
    tcp::socket socket(ioc);
    if (o.warmup > 0 && !connect_to(socket, ep, error)) {
      std::fprintf(stderr, "serve_load: warm-up: %s\n", error.c_str());
      return 1;
    }
    for (int i = 0; i < o.warmup; ++i) {
      const Clip& clip = clips[i % clips.size()];
      SyncResult r = sync_request(socket, clip.head, clip.body);
      const Verdict v = r.ok ? judge(r.response, clip) : Verdict{false, false, r.error, ""};
      if (v.ok) ++ok;
      else std::fprintf(stderr, "serve_load: warm-up request %d (%s): %s\n", i, clip.name.c_str(), v.reason.c_str());
      if (!r.ok) break;
    }
    w["requests"] = o.warmup;
    w["ok"] = ok;
    out["warmup"] = w;
    good = good && ok == o.warmup;
  }

  std::string error;
  const std::optional<Scrape> before = scrape_metrics(ep, o, error);
  if (!before) std::fprintf(stderr, "serve_load: /metrics before the run: %s\n", error.c_str());

  Run load(o, clips, ep);
  const int connect_failures = load.connect_all();
  std::fprintf(stderr, "serve_load: %d connections open (%d failed); sending %d requests at once\n",
               o.requests - connect_failures, connect_failures, o.requests);
  load.send_all();
  Json client = load.result_json();
  good = good && load.clean();

  const std::optional<Scrape> after = scrape_metrics(ep, o, error);
  if (!after) std::fprintf(stderr, "serve_load: /metrics after the run: %s\n", error.c_str());

  Json per_request = std::move(client["per_request"]);
  client.erase("per_request");
  for (auto& [k, v] : client.items()) out[k] = v;
  out["server_metrics"] = before && after ? server_side(*before, *after) : Json(nullptr);
  out["pass"] = good;
  out["per_request"] = std::move(per_request);

  // The summary on stdout (without the per-request rows), the whole result in --out.
  Json summary = out;
  summary.erase("per_request");
  std::cout << summary.dump(2) << std::endl;
  if (!o.out.empty()) {
    std::ofstream f(o.out);
    f << out.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "serve_load: cannot write %s\n", o.out.c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "serve_load: %s: %d requests, %d ok, %d wrong, %d failed, %d duplicate answers, %.2f s\n",
               good ? "PASS" : "FAIL", o.requests, out["ok"].get<int>(), out["wrong"].get<int>(),
               out["failed"].get<int>(), out["duplicate_answers"].get<int>(), out["wall_s"].get<double>());
  return good ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "serve_load: %s\n", e.what());
    return 1;
  }
}
