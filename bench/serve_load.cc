// serve_load: load runs against a running `steno serve`, every answer checked. Three modes:
//
//   serve_load --port P [--host 127.0.0.1] [--requests 1000] [--testset DIR] [--timeout-s 300] [--warmup 2]
//              [--grace-ms 1000] [--out FILE.json]
//   serve_load --closed-loop --port P --clip FILE [--concurrency "1 4 8 16 20 24 32 64 100"] [--duration-s 30]
//              [--warmup-s 5] [--sla-mean-ms 650] [--sla-p99-ms 1000] [--timeout-s 300] [--out FILE.json]
//   serve_load --make-clip OUT.wav [--clip-seconds 45] [--testset DIR]
//
// The default mode: N concurrent OpenAI transcription requests, all in flight at once.
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
//
// --closed-loop: the benchmark protocol's `seed` workload (docs/benchmark-protocol.md): one clip, re-sent.
// 1. The reference: --clip sent alone on one connection; its answer (200, JSON {"text"}) is the text every later
//    answer must have (the clip has no transcript of its own). --warmup and --requests do not apply.
// 2. For each concurrency c of --concurrency (spaces or commas), one point: c keep-alive connections, each sending
//    the same request (POST /v1/audio/transcriptions, multipart, as above) again as soon as its answer arrives, for
//    --warmup-s + --duration-s seconds; then no new requests, and those in flight are waited for (the drain). A
//    request counts in the point when it completes inside the measurement window [warm-up end, + duration);
//    warm-up and drain requests are checked and tallied apart. A connection that fails (connect, write or read
//    error, no answer within --timeout-s) is reopened after 100 ms; one the server closes is reopened at once.
// 3. Per point: requests, ok, wrong (a 200 with another text), failed by reason, requests/s (ok / duration),
//    audio seconds/s, latency of the ok requests from first write to whole answer (mean, nearest-rank
//    p50/p90/p95/p99, max), meets_sla (mean < --sla-mean-ms and p99 < --sla-p99-ms, at least one ok request and
//    none wrong or failed), server_metrics over the window (/metrics scraped, off the client's event loop, at the
//    window's start and end), the window's wall-clock bounds (Unix seconds, to line up GPU samples) and
//    per-request rows. A `progress` line per point on stderr; --out is rewritten after every point.
// 4. The headline: the point with the highest requests/s among those meeting the SLA (null when none).
// Exit status 0 only when the reference request and every request of every point (warm-up and drain included)
// were answered 200 with the reference text; 1 otherwise; 2 for bad usage.
//
// --make-clip: writes OUT.wav, a 16-bit PCM mono 16 kHz WAV of exactly --clip-seconds of speech: the FLAC clips of
// --testset's audio/ in name order, decoded with steno's audio library, concatenated, repeated as needed, cut.
// Prints what it made as JSON.
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
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "steno/audio/decode.h"

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
  // --closed-loop
  bool closed_loop = false;
  std::vector<int> concurrency = {1, 4, 8, 16, 20, 24, 32, 64, 100};  // the protocol's `seed` sweep
  double duration_s = 30;
  double warmup_s = 5;
  std::string clip;
  double sla_mean_ms = 650;
  double sla_p99_ms = 1000;
  // --make-clip
  std::string make_clip;
  double clip_seconds = 45;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "serve_load: %s\n"
               "usage: serve_load --port P [--host H] [--requests N] [--testset DIR] [--timeout-s S] [--warmup K]\n"
               "                  [--grace-ms MS] [--out FILE.json]\n"
               "       serve_load --closed-loop --port P --clip FILE [--host H] [--concurrency \"1 4 8 ...\"]\n"
               "                  [--duration-s 30] [--warmup-s 5] [--sla-mean-ms 650] [--sla-p99-ms 1000]\n"
               "                  [--timeout-s S] [--out FILE.json]\n"
               "       serve_load --make-clip OUT.wav [--clip-seconds 45] [--testset DIR]\n"
               "(the header of bench/serve_load.cc describes each mode)\n",
               why.c_str());
  std::exit(2);
}

// "1 4 8", "1,4,8" -> {1, 4, 8}; each >= 1.
std::vector<int> parse_int_list(const std::string& text) {
  std::vector<int> out;
  std::string item;
  std::istringstream in(text);
  while (in >> item) {
    std::istringstream parts(item);
    std::string part;
    while (std::getline(parts, part, ',')) {
      if (part.empty()) continue;
      size_t used = 0;
      const int v = std::stoi(part, &used);
      if (used != part.size() || v < 1) throw std::invalid_argument(part);
      out.push_back(v);
    }
  }
  if (out.empty()) throw std::invalid_argument(text);
  return out;
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
      else if (a == "--closed-loop") o.closed_loop = true;
      else if (a == "--concurrency") o.concurrency = parse_int_list(value());
      else if (a == "--duration-s") o.duration_s = std::stod(value());
      else if (a == "--warmup-s") o.warmup_s = std::stod(value());
      else if (a == "--clip") o.clip = value();
      else if (a == "--sla-mean-ms") o.sla_mean_ms = std::stod(value());
      else if (a == "--sla-p99-ms") o.sla_p99_ms = std::stod(value());
      else if (a == "--make-clip") o.make_clip = value();
      else if (a == "--clip-seconds") o.clip_seconds = std::stod(value());
      else if (a == "-h" || a == "--help") usage("transcription requests against steno serve, each checked");
      else usage("unknown argument " + a);
    } catch (const std::logic_error&) {
      usage("bad value for " + a);
    }
  }
  if (!o.make_clip.empty()) {
    if (!(o.clip_seconds > 0 && o.clip_seconds <= 3600)) usage("--clip-seconds must be in (0, 3600]");
    return o;
  }
  if (o.port <= 0 || o.port > 65535) usage("--port is required (1..65535)");
  if (o.requests < 1) usage("--requests must be >= 1");
  if (o.timeout_s <= 0) usage("--timeout-s must be > 0");
  if (o.closed_loop) {
    if (o.clip.empty()) usage("--closed-loop needs --clip FILE");
    if (!(o.duration_s > 0)) usage("--duration-s must be > 0");
    if (!(o.warmup_s >= 0)) usage("--warmup-s must be >= 0");
    if (!(o.sla_mean_ms > 0) || !(o.sla_p99_ms > 0)) usage("--sla-mean-ms and --sla-p99-ms must be > 0");
  }
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

// One OpenAI transcription request: POST /v1/audio/transcriptions, multipart (file, response_format=json).
struct Request {
  std::string body;  // the multipart body
  std::string head;  // the request line and headers, Content-Length included
};

Request transcription_request(const Options& o, const std::string& filename, const std::string& content_type,
                              const std::string& audio) {
  Request r;
  r.body = std::string("--") + kBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" +
           filename + "\"\r\nContent-Type: " + content_type + "\r\n\r\n" + audio + "\r\n--" + kBoundary +
           "\r\nContent-Disposition: form-data; name=\"response_format\"\r\n\r\njson\r\n--" + kBoundary +
           "--\r\n";
  r.head = "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: " + o.host + ":" + std::to_string(o.port) +
           "\r\nUser-Agent: steno-serve-load\r\nAccept: application/json\r\nContent-Type: multipart/form-data; "
           "boundary=" +
           kBoundary + "\r\nContent-Length: " + std::to_string(r.body.size()) + "\r\n\r\n";
  return r;
}

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
    Request r = transcription_request(o, c.name, "audio/flac", read_file(o.testset + "/" + rel));
    c.body = std::move(r.body);
    c.head = std::move(r.head);
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

Verdict judge(const bhttp::response<bhttp::string_body>& r, const std::string& expected) {
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
  if (v.got != expected) {
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
    const Verdict v = judge(r, clips_[s.clip].expected);
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

// Mean, nearest-rank p50/p90/p95/p99, max and min of latencies in ms (all 0 when there are none).
Json latency_json(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  double mean = 0;
  for (double v : values) mean += v;
  if (!values.empty()) mean /= static_cast<double>(values.size());
  return {{"mean", mean},
          {"p50", nearest_rank(values, 50)},
          {"p90", nearest_rank(values, 90)},
          {"p95", nearest_rank(values, 95)},
          {"p99", nearest_rank(values, 99)},
          {"max", values.empty() ? 0 : values.back()},
          {"min", values.empty() ? 0 : values.front()}};
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
  j["latency_ms"] = latency_json(latencies);
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

// ---- the closed loop (--closed-loop) --------------------------------------------------------------------------

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double round3(double v) { return std::round(v * 1000) / 1000; }

// When a request ended, relative to the measurement window.
enum class Phase { kWarmup, kWindow, kDrain };

const char* phase_name(Phase p) { return p == Phase::kWarmup ? "warmup" : p == Phase::kWindow ? "window" : "drain"; }

const char* result_name(Result r) { return r == Result::kOk ? "ok" : r == Result::kWrong ? "wrong" : "failed"; }

// One request of a point, as it ended.
struct Outcome {
  int conn = 0;
  Phase phase = Phase::kWindow;
  double sent_ms = 0;       // since the window's start (negative in the warm-up); when it ended, if never written
  double latency_ms = -1;   // first write to whole answer; -1 without an answer
  int status = 0;
  Result result = Result::kFailed;
  std::string reason;  // why it is not ok
  std::string got;     // a wrong answer's text
};

// One keep-alive connection of a point and its current request.
struct Conn {
  explicit Conn(net::io_context& ioc) : socket(ioc), timer(ioc) {}
  int index = 0;
  tcp::socket socket;
  net::steady_timer timer;  // the request's deadline while one is under way, else the pause before reopening
  beast::flat_buffer buffer;
  std::optional<bhttp::response_parser<bhttp::string_body>> parser;
  bool connected = false;
  bool written = false;     // the current request's write began
  uint64_t generation = 0;  // the current request's number: handlers of an earlier one do nothing
  Clock::time_point sent_at;
};

struct ScrapeResult {
  std::optional<Scrape> scrape;
  std::string error;
};

// /metrics scraped on a thread of its own, so that the client's event loop does not wait for it.
std::future<ScrapeResult> scrape_metrics_async(const tcp::endpoint& ep, const Options& o) {
  return std::async(std::launch::async, [ep, &o] {
    ScrapeResult r;
    r.scrape = scrape_metrics(ep, o, r.error);
    return r;
  });
}

// One point of the sweep: `concurrency` connections re-sending `request` for warmup_s + duration_s, then the drain
// (no new requests; those under way are waited for).
class ClosedLoopPoint {
 public:
  ClosedLoopPoint(const Options& o, const Request& request, const std::string& reference, const tcp::endpoint& ep,
                  int concurrency)
      : o_(o), request_(request), reference_(reference), ep_(ep), window_timer_(ioc_) {
    for (int i = 0; i < concurrency; ++i) {
      conns_.push_back(std::make_unique<Conn>(ioc_));
      conns_.back()->index = i;
    }
  }

  // Runs the point to its end: every connection closed, both /metrics scrapes in.
  void run() {
    start_ = Clock::now();
    window_start_ = start_ + seconds(o_.warmup_s);
    window_end_ = window_start_ + seconds(o_.duration_s);
    window_timer_.expires_at(window_start_);
    window_timer_.async_wait([this](error_code) { open_window(); });
    for (auto& c : conns_) start_request(*c);
    ioc_.run();
    end_ = Clock::now();
    before_ = before_future_.get();
    after_ = after_future_.get();
  }

  int concurrency() const { return static_cast<int>(conns_.size()); }
  const std::vector<Outcome>& outcomes() const { return outcomes_; }
  double window_start_unix() const { return window_start_unix_; }
  double window_end_unix() const { return window_end_unix_; }
  double drain_s() const { return std::chrono::duration<double>(end_ - window_end_).count(); }
  const ScrapeResult& metrics_before() const { return before_; }
  const ScrapeResult& metrics_after() const { return after_; }

 private:
  void open_window() {
    window_start_unix_ = unix_now();
    before_future_ = scrape_metrics_async(ep_, o_);
    window_timer_.expires_at(window_end_);
    window_timer_.async_wait([this](error_code) { close_window(); });
  }

  void close_window() {
    window_end_unix_ = unix_now();
    after_future_ = scrape_metrics_async(ep_, o_);
    stopping_ = true;  // connections close as their requests end
  }

  // The next request on `c`: (re)connects when needed, then writes it; nothing new once the window closed.
  void start_request(Conn& c) {
    if (stopping_) return drop(c);
    const uint64_t generation = ++c.generation;
    c.written = false;
    arm_deadline(c, generation);
    if (c.connected) return send(c, generation);
    c.buffer.clear();
    c.socket.async_connect(ep_, [this, &c, generation](error_code ec) {
      if (generation != c.generation) return;
      if (ec) return fail(c, "connect: " + ec.message());
      c.connected = true;
      error_code ignored;
      c.socket.set_option(tcp::no_delay(true), ignored);
      send(c, generation);
    });
  }

  void arm_deadline(Conn& c, uint64_t generation) {
    c.timer.expires_after(seconds(o_.timeout_s));
    c.timer.async_wait([this, &c, generation](error_code ec) {
      if (ec || generation != c.generation) return;
      fail(c, (c.connected ? "no answer within " : "no connection within ") + number(o_.timeout_s) + " s");
    });
  }

  void send(Conn& c, uint64_t generation) {
    c.parser.emplace();
    c.parser->body_limit(kBodyLimit);
    c.written = true;
    c.sent_at = Clock::now();
    const std::array<net::const_buffer, 2> bufs = {net::buffer(request_.head), net::buffer(request_.body)};
    net::async_write(c.socket, bufs, [this, &c, generation](error_code ec, size_t) {
      if (generation != c.generation) return;
      if (ec) return fail(c, "write: " + ec.message());
      bhttp::async_read(c.socket, c.buffer, *c.parser,
                        [this, &c, generation](error_code ec, size_t) { on_answer(c, generation, ec); });
    });
  }

  void on_answer(Conn& c, uint64_t generation, error_code ec) {
    if (generation != c.generation) return;
    if (ec) return fail(c, "read: " + ec.message());
    const auto& response = c.parser->get();
    const Verdict v = judge(response, reference_);
    Outcome out = outcome_now(c);
    out.latency_ms = ms_between(c.sent_at, Clock::now());
    out.status = response.result_int();
    out.result = v.ok ? Result::kOk : v.wrong_text ? Result::kWrong : Result::kFailed;
    out.reason = v.reason;
    if (v.wrong_text) out.got = v.got;
    const bool keep_alive = response.keep_alive();
    end_request(c, std::move(out));
    if (!keep_alive) drop(c);
    start_request(c);
  }

  // A request that got no answer: recorded, its connection closed and, after 100 ms, reopened.
  void fail(Conn& c, const std::string& reason) {
    Outcome out = outcome_now(c);
    out.reason = reason;
    end_request(c, std::move(out));
    drop(c);
    if (stopping_) return;
    const uint64_t generation = c.generation;
    c.timer.expires_after(std::chrono::milliseconds(100));
    c.timer.async_wait([this, &c, generation](error_code ec) {
      if (!ec && generation == c.generation) start_request(c);
    });
  }

  Outcome outcome_now(const Conn& c) const {
    const auto now = Clock::now();
    Outcome out;
    out.conn = c.index;
    out.phase = now < window_start_ ? Phase::kWarmup : now < window_end_ ? Phase::kWindow : Phase::kDrain;
    out.sent_ms = ms_between(window_start_, c.written ? c.sent_at : now);
    return out;
  }

  void end_request(Conn& c, Outcome out) {
    ++c.generation;  // the deadline's and the socket's pending handlers now do nothing
    c.timer.cancel();
    outcomes_.push_back(std::move(out));
  }

  void drop(Conn& c) {
    error_code ignored;
    c.socket.shutdown(tcp::socket::shutdown_both, ignored);
    c.socket.close(ignored);
    c.connected = false;
  }

  const Options& o_;
  const Request& request_;
  const std::string& reference_;
  tcp::endpoint ep_;
  net::io_context ioc_{1};
  net::steady_timer window_timer_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<Outcome> outcomes_;
  bool stopping_ = false;
  Clock::time_point start_, window_start_, window_end_, end_;
  double window_start_unix_ = 0, window_end_unix_ = 0;
  std::future<ScrapeResult> before_future_, after_future_;
  ScrapeResult before_, after_;
};

// Requests of one phase: how many, ok, wrong, failed and why.
struct Tally {
  int requests = 0, ok = 0, wrong = 0, failed = 0;
  std::map<std::string, int> failed_by_reason;
};

Tally tally(const std::vector<Outcome>& outcomes, Phase phase) {
  Tally t;
  for (const auto& o : outcomes) {
    if (o.phase != phase) continue;
    ++t.requests;
    t.ok += o.result == Result::kOk;
    t.wrong += o.result == Result::kWrong;
    if (o.result == Result::kFailed) {
      ++t.failed;
      ++t.failed_by_reason[o.reason.empty() ? "unknown" : o.reason];
    }
  }
  return t;
}

Json tally_json(const Tally& t) {
  return {{"requests", t.requests}, {"ok", t.ok}, {"wrong", t.wrong}, {"failed", t.failed},
          {"failed_by_reason", t.failed_by_reason}};
}

// The SLA's verdict on a point: its misses (empty when it meets it).
Json sla_misses(const Json& latency, const Tally& window, const Options& o) {
  Json misses = Json::array();
  if (window.ok == 0) misses.push_back("no ok request in the window");
  if (window.wrong + window.failed > 0) misses.push_back("wrong or failed requests in the window");
  if (!(latency["mean"].get<double>() < o.sla_mean_ms))
    misses.push_back("latency mean >= " + number(o.sla_mean_ms) + " ms");
  if (!(latency["p99"].get<double>() < o.sla_p99_ms))
    misses.push_back("latency p99 >= " + number(o.sla_p99_ms) + " ms");
  return misses;
}

// The distinct wrong texts of a point with how often each came (at most 5).
Json wrong_examples(const std::vector<Outcome>& outcomes) {
  std::map<std::string, int> counts;
  for (const auto& o : outcomes)
    if (o.result == Result::kWrong) ++counts[o.got];
  Json examples = Json::array();
  for (const auto& [text, n] : counts) {
    if (examples.size() == 5) break;
    examples.push_back({{"got", text}, {"times", n}});
  }
  return examples;
}

Json per_request_rows(const std::vector<Outcome>& outcomes) {
  Json rows = Json::array();
  for (const auto& o : outcomes) {
    Json r = {{"conn", o.conn},
              {"phase", phase_name(o.phase)},
              {"sent_ms", round3(o.sent_ms)},
              {"latency_ms", round3(o.latency_ms)},
              {"status", o.status},
              {"result", result_name(o.result)}};
    if (o.result != Result::kOk && !o.reason.empty()) r["reason"] = o.reason;
    rows.push_back(std::move(r));
  }
  return rows;
}

Json point_metrics(const ClosedLoopPoint& p) {
  const ScrapeResult& before = p.metrics_before();
  const ScrapeResult& after = p.metrics_after();
  if (before.scrape && after.scrape) return server_side(*before.scrape, *after.scrape);
  return {{"error", "/metrics: " + (before.scrape ? after.error : before.error)}};
}

// /proc/loadavg's first three fields (the client's machine is the server's on loopback); null where unreadable.
Json load_average() {
  std::ifstream f("/proc/loadavg");
  double one = 0, five = 0, fifteen = 0;
  if (!(f >> one >> five >> fifteen)) return nullptr;
  return {{"1min", one}, {"5min", five}, {"15min", fifteen}};
}

Json point_json(const ClosedLoopPoint& p, const Options& o, double clip_duration_s) {
  const Tally window = tally(p.outcomes(), Phase::kWindow);
  std::vector<double> latencies;
  for (const auto& out : p.outcomes())
    if (out.phase == Phase::kWindow && out.result == Result::kOk) latencies.push_back(out.latency_ms);
  Json j;
  j["concurrency"] = p.concurrency();
  j["window_s"] = o.duration_s;
  j["window_unix_s"] = {p.window_start_unix(), p.window_end_unix()};
  const Json counts = tally_json(window);
  for (const auto& [k, v] : counts.items()) j[k] = v;
  j["requests_per_s"] = window.ok / o.duration_s;
  j["audio_seconds_per_s"] = window.ok * clip_duration_s / o.duration_s;
  j["latency_ms"] = latency_json(latencies);
  const Json misses = sla_misses(j["latency_ms"], window, o);
  j["meets_sla"] = misses.empty();
  j["sla_misses"] = misses;
  j["warmup"] = tally_json(tally(p.outcomes(), Phase::kWarmup));
  j["drain"] = tally_json(tally(p.outcomes(), Phase::kDrain));
  j["drain_s"] = p.drain_s();
  j["load_average_after"] = load_average();
  j["server_metrics"] = point_metrics(p);
  j["wrong_examples"] = wrong_examples(p.outcomes());
  j["per_request"] = per_request_rows(p.outcomes());
  return j;
}

// The point with the highest requests/s among those that meet the SLA; null when none does.
Json headline_json(const Json& points) {
  const Json* best = nullptr;
  for (const auto& p : points)
    if (p["meets_sla"].get<bool>() && (!best || p["requests_per_s"] > (*best)["requests_per_s"])) best = &p;
  if (!best) return nullptr;
  const Json& b = *best;
  return {{"concurrency", b["concurrency"]},
          {"requests_per_s", b["requests_per_s"]},
          {"audio_seconds_per_s", b["audio_seconds_per_s"]},
          {"latency_ms", {{"mean", b["latency_ms"]["mean"]}, {"p99", b["latency_ms"]["p99"]}}}};
}

void print_progress(size_t index, size_t count, const Json& p) {
  const Json& m = p["server_metrics"];
  const std::string batches = m.contains("batches") ? std::to_string(m["batches"].get<int64_t>()) + " batches, mean " +
                                                          number(m["mean_batch_size"].get<double>())
                                                    : "no /metrics";
  std::fprintf(stderr,
               "serve_load: progress: point %zu/%zu, concurrency %d: %d ok, %d wrong, %d failed in the window: %.2f "
               "requests/s, latency mean %.0f ms, p99 %.0f ms, max %.0f ms: SLA %s; %s (warm-up %d, drain %d "
               "requests)\n",
               index + 1, count, p["concurrency"].get<int>(), p["ok"].get<int>(), p["wrong"].get<int>(),
               p["failed"].get<int>(), p["requests_per_s"].get<double>(), p["latency_ms"]["mean"].get<double>(),
               p["latency_ms"]["p99"].get<double>(), p["latency_ms"]["max"].get<double>(),
               p["meets_sla"].get<bool>() ? "met" : "missed", batches.c_str(), p["warmup"]["requests"].get<int>(),
               p["drain"]["requests"].get<int>());
}

// The result as JSON text, each point's per-request rows one to a line (a sweep holds tens of thousands).
std::string dump_result(Json result) {
  std::vector<std::string> rows;
  if (result.contains("points")) {
    for (auto& p : result["points"]) {
      if (!p.contains("per_request")) continue;
      std::string text;
      for (const auto& r : p["per_request"]) text += (text.empty() ? "\n        " : ",\n        ") + r.dump();
      rows.push_back("[" + text + (text.empty() ? "]" : "\n      ]"));
      p["per_request"] = "@ROWS" + std::to_string(rows.size() - 1) + "@";
    }
  }
  std::string text = result.dump(2);
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string placeholder = "\"@ROWS" + std::to_string(i) + "@\"";
    text.replace(text.find(placeholder), placeholder.size(), rows[i]);
  }
  return text + "\n";
}

bool write_result(const std::string& path, const Json& result) {
  if (path.empty()) return true;
  std::ofstream f(path);
  f << dump_result(result);
  if (!f) std::fprintf(stderr, "serve_load: cannot write %s\n", path.c_str());
  return static_cast<bool>(f);
}

// The clip sent in the closed loop.
struct ClipFile {
  std::string path, filename, content_type, format;
  std::string bytes;
  double duration_s = 0;
};

std::string content_type_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (ext == ".wav") return "audio/wav";
  if (ext == ".flac") return "audio/flac";
  if (ext == ".mp3") return "audio/mpeg";
  if (ext == ".ogg" || ext == ".opus") return "audio/ogg";
  return "application/octet-stream";
}

ClipFile load_clip_file(const std::string& path) {
  ClipFile c;
  c.path = path;
  c.filename = std::filesystem::path(path).filename().string();
  c.content_type = content_type_of(path);
  c.bytes = read_file(path);
  const steno::audio::DecodedAudio audio = steno::audio::load_audio_file(path);
  c.format = audio.format;
  c.duration_s = audio.duration_s();
  return c;
}

Json settings_json(const Options& o, const ClipFile& clip) {
  return {{"concurrency", o.concurrency},
          {"duration_s", o.duration_s},
          {"warmup_s", o.warmup_s},
          {"timeout_s", o.timeout_s},
          {"sla", {{"mean_ms_below", o.sla_mean_ms},
                   {"p99_ms_below", o.sla_p99_ms},
                   {"also", "at least one ok request and none wrong or failed in the window"}}},
          {"counted", "requests that complete inside [warm-up end, warm-up end + duration); requests/s = ok / "
                      "duration; latency of the ok ones, first write to whole answer, nearest-rank percentiles"},
          {"clip", {{"path", clip.path},
                    {"bytes", clip.bytes.size()},
                    {"content_type", clip.content_type},
                    {"format", clip.format},
                    {"duration_s", clip.duration_s}}}};
}

// The clip sent alone: its answer's text is the reference every later answer must equal.
struct Reference {
  bool ok = false;
  int status = 0;
  double latency_ms = 0;
  std::string text, error;
};

Reference reference_answer(const tcp::endpoint& ep, const Request& request) {
  Reference ref;
  net::io_context ioc;
  tcp::socket socket(ioc);
  if (!connect_to(socket, ep, ref.error)) return ref;
  const auto start = Clock::now();
  SyncResult r = sync_request(socket, request.head, request.body);
  ref.latency_ms = ms_between(start, Clock::now());
  if (!r.ok) {
    ref.error = r.error;
    return ref;
  }
  ref.status = r.response.result_int();
  const Verdict v = judge(r.response, "");  // any text is "wrong" against "": it is a 200 with JSON {"text"}
  ref.text = v.got;
  ref.ok = (v.ok || v.wrong_text) && !ref.text.empty();
  if (!ref.ok) ref.error = v.ok || v.wrong_text ? "the answer's text is empty" : v.reason;
  return ref;
}

int run_closed_loop(const Options& o, Json out) {
  out["mode"] = "closed-loop";
  out["rlimit_nofile"] = raise_nofile(*std::max_element(o.concurrency.begin(), o.concurrency.end()));
  const ClipFile clip = load_clip_file(o.clip);
  const Request request = transcription_request(o, clip.filename, clip.content_type, clip.bytes);
  out["settings"] = settings_json(o, clip);
  const tcp::endpoint ep(net::ip::make_address(o.host), static_cast<unsigned short>(o.port));

  const Reference ref = reference_answer(ep, request);
  out["reference"] = {{"ok", ref.ok}, {"status", ref.status}, {"latency_ms", ref.latency_ms}, {"text", ref.text}};
  if (!ref.ok) {
    out["reference"]["error"] = ref.error;
    out["pass"] = false;
    write_result(o.out, out);
    std::fprintf(stderr, "serve_load: FAIL: the reference request (%s alone): %s\n", clip.filename.c_str(),
                 ref.error.c_str());
    return 1;
  }
  std::fprintf(stderr, "serve_load: reference answer (%.0f ms, %zu characters): %.100s%s\n", ref.latency_ms,
               ref.text.size(), ref.text.c_str(), ref.text.size() > 100 ? "..." : "");

  out["headline"] = nullptr;
  out["points"] = Json::array();
  Tally total;
  for (size_t i = 0; i < o.concurrency.size(); ++i) {
    const int c = o.concurrency[i];
    std::fprintf(stderr, "serve_load: point %zu/%zu, concurrency %d: warm-up %s s, window %s s\n", i + 1,
                 o.concurrency.size(), c, number(o.warmup_s).c_str(), number(o.duration_s).c_str());
    ClosedLoopPoint point(o, request, ref.text, ep, c);
    point.run();
    for (Phase phase : {Phase::kWarmup, Phase::kWindow, Phase::kDrain}) {
      const Tally t = tally(point.outcomes(), phase);
      total.requests += t.requests;
      total.ok += t.ok;
      total.wrong += t.wrong;
      total.failed += t.failed;
    }
    Json p = point_json(point, o, clip.duration_s);
    print_progress(i, o.concurrency.size(), p);
    out["points"].push_back(std::move(p));
    out["headline"] = headline_json(out["points"]);
    write_result(o.out, out);  // what is done so far survives an interrupted sweep
  }
  const bool good = total.wrong == 0 && total.failed == 0;
  out["all_requests"] = {{"requests", total.requests}, {"ok", total.ok}, {"wrong", total.wrong},
                         {"failed", total.failed}, {"note", "warm-up, window and drain of every point"}};
  out["pass"] = good;

  Json summary = out;
  for (auto& p : summary["points"]) p.erase("per_request");
  std::cout << summary.dump(2) << std::endl;
  if (!write_result(o.out, out)) return 1;
  const Json& h = out["headline"];
  std::fprintf(stderr, "serve_load: %s: %d requests over %zu points, %d ok, %d wrong, %d failed; headline: %s\n",
               good ? "PASS" : "FAIL", total.requests, o.concurrency.size(), total.ok, total.wrong, total.failed,
               h.is_null() ? "none (no point meets the SLA)"
                           : (number(h["requests_per_s"].get<double>()) + " requests/s at concurrency " +
                              std::to_string(h["concurrency"].get<int>()))
                                 .c_str());
  return good ? 0 : 1;
}

// ---- the seed clip (--make-clip) ------------------------------------------------------------------------------

std::vector<std::filesystem::path> flac_files(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".flac") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw std::runtime_error("no .flac files in " + dir);
  return files;
}

void put_le(std::string& out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// A 16-bit PCM mono WAV (44-byte RIFF header); samples in [-1, 1] scaled by 32768, as the decoder reads them.
void write_wav_pcm16(const std::string& path, const std::vector<float>& samples, int sample_rate) {
  const uint32_t data_bytes = static_cast<uint32_t>(samples.size() * 2);
  std::string wav = "RIFF";
  put_le(wav, 36 + data_bytes, 4);
  wav += "WAVEfmt ";
  put_le(wav, 16, 4);               // fmt chunk size
  put_le(wav, 1, 2);                // PCM
  put_le(wav, 1, 2);                // mono
  put_le(wav, sample_rate, 4);      // sample rate
  put_le(wav, sample_rate * 2, 4);  // byte rate
  put_le(wav, 2, 2);                // block align
  put_le(wav, 16, 2);               // bits per sample
  wav += "data";
  put_le(wav, data_bytes, 4);
  for (float s : samples) {
    const long v = std::clamp(std::lround(static_cast<double>(s) * 32768.0), -32768L, 32767L);
    put_le(wav, static_cast<uint32_t>(static_cast<uint16_t>(static_cast<int16_t>(v))), 2);
  }
  std::ofstream f(path, std::ios::binary);
  f.write(wav.data(), static_cast<std::streamsize>(wav.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

int run_make_clip(const Options& o) {
  const auto files = flac_files(o.testset + "/audio");
  const size_t wanted = static_cast<size_t>(std::llround(o.clip_seconds * steno::audio::kSampleRate));
  std::vector<float> samples;
  Json sources = Json::array();
  for (size_t i = 0; samples.size() < wanted; ++i) {
    const auto& file = files[i % files.size()];
    const steno::audio::DecodedAudio audio = steno::audio::load_audio_file(file.string());
    if (audio.samples.empty()) throw std::runtime_error(file.string() + " has no samples");
    const size_t take = std::min(audio.samples.size(), wanted - samples.size());
    samples.insert(samples.end(), audio.samples.begin(), audio.samples.begin() + static_cast<std::ptrdiff_t>(take));
    sources.push_back({{"file", file.filename().string()}, {"seconds", audio.duration_s()},
                       {"used_seconds", static_cast<double>(take) / steno::audio::kSampleRate}});
  }
  write_wav_pcm16(o.make_clip, samples, steno::audio::kSampleRate);
  const Json made = {{"clip", o.make_clip},
                     {"format", "WAV, 16-bit PCM, mono, 16 kHz"},
                     {"samples", samples.size()},
                     {"seconds", static_cast<double>(samples.size()) / steno::audio::kSampleRate},
                     {"testset", o.testset},
                     {"how", "the FLAC clips of testset/audio in name order, decoded by steno's audio library "
                             "(16 kHz mono), concatenated, repeated as needed, cut to the length"},
                     {"sources", sources}};
  std::cout << made.dump(2) << std::endl;
  std::fprintf(stderr, "serve_load: wrote %s: %zu samples (%.3f s) from %zu clip files\n", o.make_clip.c_str(),
               samples.size(), static_cast<double>(samples.size()) / steno::audio::kSampleRate, sources.size());
  return 0;
}

int run(int argc, char** argv) {
  const Options o = parse_args(argc, argv);
  if (!o.make_clip.empty()) return run_make_clip(o);
  Json out;
  out["tool"] = "serve_load";
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  out["command"] = command;
  out["date_utc"] = utc_now();
  out["server"] = "http://" + o.host + ":" + std::to_string(o.port);
  out["endpoint"] = "POST /v1/audio/transcriptions (multipart, response_format=json)";
  if (o.closed_loop) return run_closed_loop(o, std::move(out));
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
      const Verdict v = r.ok ? judge(r.response, clip.expected) : Verdict{false, false, r.error, ""};
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
