#include "serve_load_closed_loop.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "serve_load_closed_outcome.h"
#include "serve_load_grpc.h"
#include "serve_load_http.h"
#include "serve_load_point.h"
#include "serve_load_results.h"
#include "steno/audio/decode.h"
#include "steno/bench/gpu_sampler.h"

namespace serve_load {

namespace {

// The servers the connections go to: --ports's, or the one of --port.
std::vector<tcp::endpoint> servers_of(const Options& o, const tcp::endpoint& ep) {
  if (o.ports.empty()) return {ep};
  std::vector<tcp::endpoint> servers;
  for (int port : o.ports) servers.emplace_back(ep.address(), static_cast<unsigned short>(port));
  return servers;
}

// Each server's share of the window's answers (connection i went to server i mod N): equal shares are what a
// round-robin balancer promises; the report shows whether one server fell behind.
Json per_server_json(const std::vector<ClosedOutcome>& outcomes, const std::vector<int>& ports, double window_s) {
  Json servers = Json::array();
  for (size_t s = 0; s < ports.size(); ++s) {
    std::vector<ClosedOutcome> mine;
    for (const auto& out : outcomes)
      if (server_of_connection(out.conn, ports.size()) == s) mine.push_back(out);
    const Tally t = tally(mine, Phase::kWindow);
    servers.push_back({{"port", ports[s]}, {"ok", t.ok}, {"wrong", t.wrong}, {"failed", t.failed},
                       {"requests_per_s", t.ok / window_s},
                       {"latency_ms", latency_json(window_ok_latencies(mine))}});
  }
  return servers;
}

// One point of the sweep: `concurrency` connections re-sending `request` for warmup_s + duration_s, then the drain
// (no new requests; those under way are waited for).
class ClosedLoopPoint final : public RequestCycle<Conn> {
 public:
  ClosedLoopPoint(const Options& o, const Request& request, const std::string& reference, const tcp::endpoint& ep,
                  int concurrency)
      : RequestCycle(servers_of(o, ep), o.timeout_s), request_(request), reference_(reference),
        accept_differing_text_(o.accept_differing_text), window_(ioc_, ep, o) {
    for (int i = 0; i < concurrency; ++i) {
      conns_.push_back(std::make_unique<Conn>(ioc_));
      conns_.back()->index = i;
    }
  }

  // Runs the point to its end: every connection closed, both /metrics scrapes in.
  void run() {
    window_.start([this] { stopping_ = true; });  // connections close as their requests end
    for (auto& c : conns_) start_request(*c);
    progress_.start();
    ioc_.run();
    window_.finish();
  }

  int concurrency() const { return static_cast<int>(conns_.size()); }
  const std::vector<ClosedOutcome>& outcomes() const { return outcomes_; }
  const MeasurementWindow& window() const { return window_; }

 private:
  // The next request on `c`; nothing new once the window closed.
  void start_request(Conn& c) {
    if (stopping_) return drop(c);
    ++in_flight_;
    begin(c, request_);
  }

  void answered(Conn& c) override {
    const auto& response = c.parser->get();
    const Verdict v = judge(response, reference_);
    ClosedOutcome out = outcome_now(c);
    out.latency_ms = ms_between(c.sent_at, Clock::now());
    out.take(response.result_int(), v, accept_differing_text_);
    if (out.result == Result::kOk) {
      ++ok_since_tick_;
      latency_sum_since_tick_ += out.latency_ms;
    }
    const bool keep_alive = response.keep_alive();
    end_request(c, std::move(out));
    if (!keep_alive) drop(c);
    start_request(c);
  }

  // A request that got no answer: recorded, its connection closed and, after 100 ms, reopened.
  void fail(Conn& c, const std::string& reason) override {
    ClosedOutcome out = outcome_now(c);
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

  ClosedOutcome outcome_now(const Conn& c) const {
    const auto now = Clock::now();
    ClosedOutcome out;
    out.conn = c.index;
    out.phase = now < window_.opens() ? Phase::kWarmup : now < window_.closes() ? Phase::kWindow : Phase::kDrain;
    out.sent_ms = ms_between(window_.opens(), c.written ? c.sent_at : now);
    return out;
  }

  void end_request(Conn& c, ClosedOutcome out) {
    disarm(c);
    outcomes_.push_back(std::move(out));
    if (--in_flight_ == 0 && stopping_) progress_.stop();  // the drain is over: nothing more to show
  }

  // A line a second: where the point is, and the last second's answers and their mean latency.
  void print_progress() {
    const auto now = Clock::now();
    Tally so_far;
    count_all(so_far, outcomes_);
    std::fprintf(stderr,
                 "serve_load: concurrency %d, %s, %.0f s: %d in flight, %d ok, %d wrong or failed; last second %d ok "
                 "requests/s, mean %.0f ms\n",
                 concurrency(), point_stage(window_, now), std::chrono::duration<double>(now - window_.started()).count(),
                 in_flight_, so_far.ok, so_far.wrong + so_far.failed, ok_since_tick_,
                 ok_since_tick_ > 0 ? latency_sum_since_tick_ / ok_since_tick_ : 0.0);
    ok_since_tick_ = 0;
    latency_sum_since_tick_ = 0;
  }

  const Request& request_;
  const std::string& reference_;
  bool accept_differing_text_;
  net::io_context ioc_{1};
  MeasurementWindow window_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<ClosedOutcome> outcomes_;
  bool stopping_ = false;
  int in_flight_ = 0;  // requests begun and not yet ended
  ProgressTicker progress_{ioc_, [this] { return stopping_ && in_flight_ == 0; }, [this] { print_progress(); }};
  int ok_since_tick_ = 0;
  double latency_sum_since_tick_ = 0;
};

// A finished point (HTTP or gRPC: the same members) as its result entry.
template <class Point>
Json point_json(const Point& p, const Options& o, double clip_duration_s) {
  const Tally window = tally(p.outcomes(), Phase::kWindow);
  Json j;
  j["concurrency"] = p.concurrency();
  j["window_s"] = o.duration_s;
  j["window_unix_s"] = p.window().unix_bounds();
  put_tally(j, window);
  j["requests_per_s"] = window.ok / o.duration_s;
  j["audio_seconds_per_s"] = window.ok * clip_duration_s / o.duration_s;
  j["latency_ms"] = latency_json(window_ok_latencies(p.outcomes()));
  const Json misses = sla_misses(j["latency_ms"], window, o, /*bound_mean=*/true);
  j["meets_sla"] = misses.empty();
  j["sla_misses"] = misses;
  j["warmup"] = tally_json(tally(p.outcomes(), Phase::kWarmup));
  j["drain"] = tally_json(tally(p.outcomes(), Phase::kDrain));
  j["drain_s"] = p.window().drain_s();
  j["load_average_after"] = load_average();
  j["server_metrics"] = p.window().server_metrics();  // with --ports: the first server's
  if (o.ports.size() > 1) j["per_server"] = per_server_json(p.outcomes(), o.ports, o.duration_s);
  j["wrong_examples"] = wrong_examples(p.outcomes(), [](const ClosedOutcome&) { return -1; });
  j["differs_examples"] = differs_examples(p.outcomes(), [](const ClosedOutcome&) { return -1; });
  j["per_request"] = per_request_rows(p.outcomes(), [](const ClosedOutcome& out) -> Json {
    return {{"conn", out.conn}, {"phase", phase_name(out.phase)}, {"sent_ms", round3(out.sent_ms)}};
  });
  return j;
}

void print_progress(size_t index, size_t count, const Json& p) {
  std::fprintf(stderr,
               "serve_load: progress: point %zu/%zu, concurrency %d: %d ok%s, %d wrong, %d failed in the window: "
               "%.2f requests/s, %s (warm-up %d, drain %d requests)\n",
               index + 1, count, p["concurrency"].get<int>(), p["ok"].get<int>(),
               differs_text(p["differs"].get<int>()).c_str(), p["wrong"].get<int>(), p["failed"].get<int>(),
               p["requests_per_s"].get<double>(), latency_sla_text(p).c_str(), p["warmup"]["requests"].get<int>(),
               p["drain"]["requests"].get<int>());
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
          {"accept_differing_text", o.accept_differing_text},
          {"servers", o.ports.empty() ? std::vector<int>{o.port} : o.ports},
          {"balancing", o.ports.size() > 1 ? "connection i to server i mod N, kept alive (round robin); the reference "
                                             "answer and server_metrics from the first"
                                           : "one server"},
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
  const ReferenceText answer = reference_text(socket, request);
  ref.latency_ms = ms_between(start, Clock::now());
  ref.status = answer.status;
  ref.text = answer.text;
  ref.ok = answer.answered && !ref.text.empty();
  if (!ref.ok) ref.error = answer.answered ? "the answer's text is empty" : answer.error;
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

  const bool grpc = o.grpc_port != 0;
  Reference ref;
  if (grpc) {
    const GrpcReference g = GrpcClosedLoopPoint::reference(o, clip.bytes);
    ref.ok = g.ok;
    ref.status = g.ok ? 200 : 0;
    ref.latency_ms = g.latency_ms;
    ref.text = g.text;
    ref.error = g.error;
  } else {
    ref = reference_answer(ep, request);
  }
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
  const double sweep_start = unix_now();
  out["gpu"] = gpu.describe();
  out["headline"] = nullptr;
  out["points"] = Json::array();
  Tally total;
  for (size_t i = 0; i < o.concurrency.size(); ++i) {
    const int c = o.concurrency[i];
    std::fprintf(stderr, "serve_load: point %zu/%zu, concurrency %d: warm-up %s s, window %s s\n", i + 1,
                 o.concurrency.size(), c, number(o.warmup_s).c_str(), number(o.duration_s).c_str());
    Json p;
    auto measure = [&](auto& point) {
      point.run();
      count_all(total, point.outcomes());
      p = point_json(point, o, clip.duration_s);
      p["gpu"] = gpu.summary(point.window().opened_unix(), point.window().closed_unix());
    };
    if (grpc) {
      GrpcClosedLoopPoint point(o, clip.bytes, ref.text, ep, c);
      measure(point);
    } else {
      ClosedLoopPoint point(o, request, ref.text, ep, c);
      measure(point);
    }
    out["gpu_timeline"] = gpu.timeline(sweep_start);  // for the report's GPU plot
    print_progress(i, o.concurrency.size(), p);
    out["points"].push_back(std::move(p));
    out["headline"] = headline_json(out["points"], "requests_per_s",
                                    {"concurrency", "requests_per_s", "audio_seconds_per_s"});
    write_result(o.out, out);  // what is done so far survives an interrupted sweep
  }
  const bool good = total.wrong == 0 && total.failed == 0;
  out["all_requests"] = all_requests_json(total, "warm-up, window and drain of every point");
  out["pass"] = good;
  print_summary(out);
  if (!write_result(o.out, out)) return 1;
  print_verdict(good, total, o.concurrency.size(), out["headline"], [](const Json& h) {
    return number(h["requests_per_s"].get<double>()) + " requests/s at concurrency " +
           std::to_string(h["concurrency"].get<int>());
  });
  return good ? 0 : 1;
}

}  // namespace serve_load
