#include "serve_load_closed_loop.h"

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "serve_load_http.h"
#include "serve_load_metrics.h"
#include "steno/audio/decode.h"
#include "steno/bench/gpu_sampler.h"

namespace serve_load {

namespace {

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

}  // namespace

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

  const steno::bench::GpuSampler gpu;  // NVML, every 100 ms; on a machine without one the result says why not
  out["gpu"] = gpu.describe();
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
    p["gpu"] = gpu.summary(point.window_start_unix(), point.window_end_unix());
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

}  // namespace serve_load
