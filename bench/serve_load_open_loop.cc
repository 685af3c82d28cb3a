#include "serve_load_open_loop.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mix_workload.h"
#include "serve_load_http.h"
#include "serve_load_mix.h"
#include "serve_load_point.h"
#include "serve_load_results.h"
#include "steno/audio/decode.h"
#include "steno/bench/gpu_sampler.h"

namespace serve_load {

namespace {

namespace mix = steno::bench_workload;

constexpr uint64_t kArrivalSeed = 20240502;
// A pooled connection idle this long is closed rather than reused: far inside the server's idle timeout (60 s by
// default), so that a request is never written to a connection the server is closing.
constexpr double kMaxIdleS = 5;

// ---- the arrival schedule -------------------------------------------------------------------------------------

// Arrival times at rate 1 (cumulative Exp(1) gaps from a fixed seed) up to `until`; the schedule at rate r is this
// one divided by r, so every point of a sweep sees the same pattern, only faster. The uniforms are drawn by hand
// (std::exponential_distribution differs between standard libraries).
std::vector<double> unit_rate_arrivals(double until) {
  std::mt19937_64 rng(kArrivalSeed);
  std::vector<double> out;
  double t = 0;
  while (true) {
    const double u = (static_cast<double>(rng() >> 11) + 1.0) * 0x1.0p-53;  // in (0, 1]: log(u) is finite
    t -= std::log(u);
    if (t >= until) return out;
    out.push_back(t);
  }
}

// Seconds from the point's start at which requests arrive at `rate` over `span_s`.
std::vector<double> arrivals_at(const std::vector<double>& unit, double rate, double span_s) {
  std::vector<double> out;
  for (double t : unit) {
    if (t / rate >= span_s) break;
    out.push_back(t / rate);
  }
  return out;
}

// ---- one point ------------------------------------------------------------------------------------------------

// One request of a point, as it ended (latency from its scheduled arrival, connecting included); its phase says
// when it arrived.
struct OpenOutcome : Outcome {
  int64_t n = 0;  // arrival number in the point
  int clip = 0;
  double audio_s = 0;
  int conn = -1;          // -1: never had a connection (client_overload)
  double arrival_ms = 0;  // scheduled, since the window's start (negative in the warm-up)
  double lag_ms = -1;     // first write after the scheduled arrival; -1 when never written
  double done_ms = 0;     // when it ended, since the window's start
};

// A pooled keep-alive connection and the request it carries, if any.
struct PooledConn : Conn {
  using Conn::Conn;
  Clock::time_point idle_since;
  // The request under way.
  int64_t n = 0;
  const MixClip* clip = nullptr;
  Clock::time_point arrival;
};

// Nearest-rank p99 of `values` (0 when empty), without sorting them all: the progress line's.
double p99_of(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(values.size())));
  const auto nth = values.begin() + static_cast<std::ptrdiff_t>(std::clamp<size_t>(rank, 1, values.size()) - 1);
  std::nth_element(values.begin(), nth, values.end());
  return *nth;
}

// One point of the sweep: requests sent at the scheduled arrival times of `rate`, whatever the answers, then the
// drain (the requests under way waited for).
class OpenLoopPoint final : public RequestCycle<PooledConn> {
 public:
  OpenLoopPoint(const Options& o, const std::vector<MixClip>& clips, const tcp::endpoint& ep, double rate,
                std::vector<double> arrivals)
      : RequestCycle(ep, o.timeout_s), o_(o), clips_(clips), rate_(rate), arrivals_(std::move(arrivals)),
        window_(ioc_, ep, o), arrival_timer_(ioc_) {}

  // Runs the point to its end: every request ended, every connection closed, both /metrics scrapes in.
  void run() {
    window_.start([this] {
      window_closed_ = true;
      finish_if_done();
    });
    schedule_next_arrival();
    progress_.start();
    ioc_.run();
    window_.finish();
  }

  double rate() const { return rate_; }
  const std::vector<OpenOutcome>& outcomes() const { return outcomes_; }
  const MeasurementWindow& window() const { return window_; }
  size_t peak_in_flight() const { return peak_in_flight_; }
  size_t connections() const { return conns_.size(); }

 private:
  Clock::time_point arrival_time(size_t n) const { return window_.started() + seconds(arrivals_[n]); }

  void schedule_next_arrival() {
    if (next_ >= arrivals_.size()) return;
    arrival_timer_.expires_at(arrival_time(next_));
    arrival_timer_.async_wait([this](error_code) { send_due_arrivals(); });
  }

  // Every arrival whose time has come, the late ones included (the loop was busy): open loop never skips one.
  void send_due_arrivals() {
    const auto now = Clock::now();
    while (next_ < arrivals_.size() && arrival_time(next_) <= now) arrive(next_++);
    schedule_next_arrival();
    finish_if_done();
  }

  void arrive(size_t n) {
    const MixClip& clip = clips_[n % clips_.size()];
    if (in_flight_ >= static_cast<size_t>(o_.max_in_flight)) return refuse(n, clip);
    PooledConn& c = take_conn();
    c.n = static_cast<int64_t>(n);
    c.clip = &clip;
    c.arrival = arrival_time(n);
    ++in_flight_;
    peak_in_flight_ = std::max(peak_in_flight_, in_flight_);
    begin(c, clip.request);
  }

  // An arrival beyond --max-in-flight: failed at once, so that the client's descriptors stay bounded.
  void refuse(size_t n, const MixClip& clip) {
    OpenOutcome out = outcome_for(static_cast<int64_t>(n), clip, arrival_time(n));
    out.reason = "client_overload";
    record(std::move(out));
  }

  // The most recently idle pooled connection (reconnected when idle too long), else a new one: the pool grows to
  // the most requests ever in flight at once.
  PooledConn& take_conn() {
    if (!idle_.empty()) {
      PooledConn* c = idle_.back();
      idle_.pop_back();
      if (c->connected && Clock::now() - c->idle_since >= seconds(kMaxIdleS)) drop(*c);
      return *c;
    }
    conns_.push_back(std::make_unique<PooledConn>(ioc_));
    conns_.back()->index = static_cast<int>(conns_.size()) - 1;
    return *conns_.back();
  }

  void answered(PooledConn& c) override {
    const auto& response = c.parser->get();
    const Verdict v = judge(response, c.clip->reference);
    OpenOutcome out = outcome_now(c);
    out.latency_ms = ms_between(c.arrival, Clock::now());
    out.take(response.result_int(), v, o_.accept_differing_text);
    if (!response.keep_alive()) drop(c);
    end_request(c, std::move(out));
  }

  // A request that got no answer: recorded, its connection closed (the next request on it reconnects).
  void fail(PooledConn& c, const std::string& reason) override {
    OpenOutcome out = outcome_now(c);
    out.reason = reason;
    drop(c);
    end_request(c, std::move(out));
  }

  OpenOutcome outcome_for(int64_t n, const MixClip& clip, Clock::time_point arrival) const {
    OpenOutcome out;
    out.n = n;
    out.clip = clip.index;
    out.audio_s = clip.seconds;
    out.phase = arrival < window_.opens() ? Phase::kWarmup : Phase::kWindow;
    out.arrival_ms = ms_between(window_.opens(), arrival);
    out.done_ms = ms_between(window_.opens(), Clock::now());
    return out;
  }

  OpenOutcome outcome_now(const PooledConn& c) const {
    OpenOutcome out = outcome_for(c.n, *c.clip, c.arrival);
    out.conn = c.index;
    if (c.written) out.lag_ms = ms_between(c.arrival, c.sent_at);
    return out;
  }

  // The request on `c` is over: its handlers disarmed, the connection back in the pool.
  void end_request(PooledConn& c, OpenOutcome out) {
    disarm(c);
    c.clip = nullptr;
    c.idle_since = Clock::now();
    idle_.push_back(&c);
    --in_flight_;
    record(std::move(out));
    finish_if_done();
  }

  void record(OpenOutcome out) {
    if (out.result == Result::kOk) {
      ok_latencies_.push_back(out.latency_ms);
      ++ok_since_tick_;
    }
    outcomes_.push_back(std::move(out));
  }

  // The point is over once every arrival was sent, every request ended and the window closed.
  void finish_if_done() {
    if (finished_ || !window_closed_ || next_ < arrivals_.size() || in_flight_ > 0) return;
    finished_ = true;
    progress_.stop();
    for (auto& c : conns_) drop(*c);
  }

  // Long points show they are alive: where the point is, and what the server does now.
  void print_progress() {
    const auto now = Clock::now();
    Tally so_far;
    count_all(so_far, outcomes_);
    std::fprintf(stderr,
                 "serve_load: rate %s/s, %s, %.0f s: %zu of %zu sent, %zu in flight, %d ok, %d wrong or failed; "
                 "last second %d ok requests/s; p99 so far %.0f ms\n",
                 number(rate_).c_str(), point_stage(window_, now),
                 std::chrono::duration<double>(now - window_.started()).count(), next_, arrivals_.size(), in_flight_,
                 so_far.ok, so_far.wrong + so_far.failed, ok_since_tick_, p99_of(ok_latencies_));
    ok_since_tick_ = 0;
  }

  const Options& o_;
  const std::vector<MixClip>& clips_;
  double rate_;
  std::vector<double> arrivals_;  // seconds from the point's start
  net::io_context ioc_{1};
  MeasurementWindow window_;
  net::steady_timer arrival_timer_;
  ProgressTicker progress_{ioc_, [this] { return finished_; }, [this] { print_progress(); }};
  std::vector<std::unique_ptr<PooledConn>> conns_;
  std::vector<PooledConn*> idle_;  // a stack: the most recently idle on top
  std::vector<OpenOutcome> outcomes_;
  std::vector<double> ok_latencies_;
  int ok_since_tick_ = 0;
  size_t next_ = 0, in_flight_ = 0, peak_in_flight_ = 0;
  bool window_closed_ = false, finished_ = false;
};

// ---- the point's result ---------------------------------------------------------------------------------------

// What the server delivered during the window: the ok answers that completed inside it, whenever they arrived.
struct Delivered {
  int ok = 0;
  double audio_s = 0;
};

Delivered delivered_in_window(const std::vector<OpenOutcome>& outcomes, double window_ms) {
  Delivered d;
  for (const auto& o : outcomes) {
    if (o.result != Result::kOk || o.done_ms < 0 || o.done_ms >= window_ms) continue;
    ++d.ok;
    d.audio_s += o.audio_s;
  }
  return d;
}

// How late the client wrote its requests after their scheduled arrival: a lagging client understates the load.
Json client_lag_json(const std::vector<OpenOutcome>& outcomes) {
  std::vector<double> lags;
  for (const auto& o : outcomes)
    if (o.lag_ms >= 0) lags.push_back(o.lag_ms);
  const Json all = latency_json(lags);
  return {{"mean", all["mean"]}, {"p99", all["p99"]}, {"max", all["max"]}};
}

// Window arrivals answered after the window closed: the backlog an overloaded server carries out of it.
int answered_after_window(const std::vector<OpenOutcome>& outcomes, double window_ms) {
  int n = 0;
  for (const auto& o : outcomes) n += o.phase == Phase::kWindow && o.done_ms >= window_ms;
  return n;
}

// A request's own columns in its per-request row.
Json request_columns(const OpenOutcome& o) {
  return {{"n", o.n},
          {"clip", o.clip},
          {"audio_s", round3(o.audio_s)},
          {"phase", phase_name(o.phase)},
          {"conn", o.conn},
          {"arrival_ms", round3(o.arrival_ms)},
          {"lag_ms", round3(o.lag_ms)}};
}

Json point_json(const OpenLoopPoint& p, const Options& o) {
  const double window_ms = o.duration_s * 1000;
  const Tally window = tally(p.outcomes(), Phase::kWindow);
  const Delivered delivered = delivered_in_window(p.outcomes(), window_ms);
  Json j;
  j["rate_per_s"] = p.rate();
  j["window_s"] = o.duration_s;
  j["window_unix_s"] = p.window().unix_bounds();
  j["offered_per_s"] = window.requests / o.duration_s;
  put_tally(j, window);
  j["requests_per_s"] = delivered.ok / o.duration_s;
  j["audio_seconds_per_s"] = delivered.audio_s / o.duration_s;
  j["latency_ms"] = latency_json(window_ok_latencies(p.outcomes()));
  // The mean is bounded only when asked for: the protocol's `mix` SLO is p99 and no errors.
  const Json misses = sla_misses(j["latency_ms"], window, o, /*bound_mean=*/o.sla_mean_given);
  j["meets_sla"] = misses.empty();
  j["sla_misses"] = misses;
  j["client_lag_ms"] = client_lag_json(p.outcomes());
  j["answered_after_window"] = answered_after_window(p.outcomes(), window_ms);
  j["peak_in_flight"] = p.peak_in_flight();
  j["connections"] = {{"pooled", p.connections()}, {"connects", p.connects()}};
  j["warmup"] = tally_json(tally(p.outcomes(), Phase::kWarmup));
  j["drain_s"] = p.window().drain_s();
  j["load_average_after"] = load_average();
  j["server_metrics"] = p.window().server_metrics();
  j["wrong_examples"] = wrong_examples(p.outcomes(), [](const OpenOutcome& out) { return out.clip; });
  j["differs_examples"] = differs_examples(p.outcomes(), [](const OpenOutcome& out) { return out.clip; });
  j["per_request"] = per_request_rows(p.outcomes(), request_columns);
  return j;
}

void print_point(size_t index, size_t count, const Json& p) {
  std::fprintf(stderr,
               "serve_load: progress: point %zu/%zu, rate %s/s: %d arrived in the window (%.2f/s): %d ok%s, %d "
               "wrong, %d failed; %.2f ok requests/s, %.2f audio s/s; %s (warm-up %d requests, drain %.1f s)\n",
               index + 1, count, number(p["rate_per_s"].get<double>()).c_str(), p["requests"].get<int>(),
               p["offered_per_s"].get<double>(), p["ok"].get<int>(), differs_text(p["differs"].get<int>()).c_str(),
               p["wrong"].get<int>(), p["failed"].get<int>(), p["requests_per_s"].get<double>(),
               p["audio_seconds_per_s"].get<double>(), latency_sla_text(p).c_str(), p["warmup"]["requests"].get<int>(),
               p["drain_s"].get<double>());
}

// ---- the sweep ------------------------------------------------------------------------------------------------

Json settings_json(const Options& o, const std::vector<MixClip>& clips, size_t stream_samples) {
  std::vector<int64_t> used, all = mix::mix_lengths_as_drawn(steno::audio::kSampleRate);
  for (const auto& c : clips) used.push_back(c.samples);
  return {
      {"workload", o.workload},
      {"rates_per_s", o.rates},
      {"duration_s", o.duration_s},
      {"warmup_s", o.warmup_s},
      {"timeout_s", o.timeout_s},
      {"max_in_flight", o.max_in_flight},
      {"accept_differing_text", o.accept_differing_text},
      {"sla", {{"p99_ms_below", o.sla_p99_ms},
               {"mean_ms_below", o.sla_mean_given ? Json(o.sla_mean_ms) : Json(nullptr)},
               {"also", "at least one ok request and none wrong or failed among the window's arrivals"}}},
      {"arrivals", {{"process", "Poisson: exponential gaps of mean 1/rate, drawn from mt19937_64 with a fixed seed; "
                                "the same draws at every rate (the schedule at rate r = the one at rate 1 / r)"},
                    {"seed", kArrivalSeed}}},
      {"connections", "a pool of keep-alive connections that grows as needed; a request never waits for another's "
                      "answer; a connection idle for " + number(kMaxIdleS) + " s is closed rather than reused"},
      {"counted", "requests arriving inside [warm-up end, warm-up end + duration): ok / wrong / failed and latency "
                  "(scheduled arrival to whole answer, connecting included; nearest-rank percentiles); requests/s "
                  "and audio s/s = ok answers completed inside the window / duration"},
      {"clips", {{"rule", "request n of a point sends mix clip (n mod clips); mix clip i of s samples = "
                          "stream[(i * clip_offset_samples + k) mod stream_samples], k < s (bench/mix_workload.h, "
                          "as cuda_engine_bench cuts its clips)"},
                 {"mix_clips_flag", o.mix_clips},
                 {"note", "the first `clips` of the mix's lengths in the order drawn (a random order): --mix-clips, "
                          "or fewer when the busiest point has fewer arrivals; each needs a reference request"},
                 {"used", lengths_summary(used)},
                 {"mix", lengths_summary(all)},
                 {"mix_seed", mix::kMixSeed},
                 {"format", "WAV, 16-bit PCM, mono, 16 kHz, built in memory"},
                 {"testset", o.testset},
                 {"stream_samples", stream_samples},
                 {"clip_offset_samples", static_cast<int64_t>(mix::kClipOffsetSeconds * steno::audio::kSampleRate)}}}};
}

// The number of distinct clips sent: --mix-clips, or fewer when no point has that many arrivals.
int clips_needed(const Options& o, const std::vector<double>& unit) {
  const double span = o.warmup_s + o.duration_s;
  size_t most = 0;
  for (double r : o.rates) most = std::max(most, arrivals_at(unit, r, span).size());
  return static_cast<int>(std::clamp<size_t>(most, 1, static_cast<size_t>(o.mix_clips)));
}

// The result on stdout (without the per-request rows and the references' texts) and the closing line on stderr.
void print_end(const Json& out, const Tally& total, size_t points) {
  Json summary = out;
  summary["references"].erase("texts");
  print_summary(std::move(summary));
  print_verdict(out["pass"].get<bool>(), total, points, out["headline"], [](const Json& h) {
    return "arrival rate " + number(h["rate_per_s"].get<double>()) + "/s (" +
           number(h["requests_per_s"].get<double>()) + " ok requests/s, p99 " +
           number(std::round(h["latency_ms"]["p99"].get<double>())) + " ms)";
  });
}

}  // namespace

int run_open_loop(const Options& o, Json out) {
  out["mode"] = "open-loop";
  out["rlimit_nofile"] = raise_nofile(o.max_in_flight);
  const double span = o.warmup_s + o.duration_s;
  const double max_rate = *std::max_element(o.rates.begin(), o.rates.end());
  const std::vector<double> unit = unit_rate_arrivals(max_rate * span);
  const std::vector<float> stream = speech_stream(o.testset);
  std::vector<MixClip> clips = make_mix_clips(o, stream, clips_needed(o, unit));
  out["settings"] = settings_json(o, clips, stream.size());
  const tcp::endpoint ep(net::ip::make_address(o.host), static_cast<unsigned short>(o.port));

  std::fprintf(stderr, "serve_load: references: %zu mix clips, each sent alone\n", clips.size());
  const ReferencePass refs = fetch_references(ep, clips);
  out["references"] = references_json(refs, clips);
  if (!refs.ok) {
    out["pass"] = false;
    write_result(o.out, out);
    std::fprintf(stderr, "serve_load: FAIL: a reference request (%s)\n", refs.error.c_str());
    return 1;
  }
  std::fprintf(stderr, "serve_load: references in %.1f s (%d empty)\n", refs.seconds, refs.empty_texts);

  const steno::bench::GpuSampler gpu;  // NVML, every 100 ms; on a machine without one the result says why not
  const double sweep_start = unix_now();
  out["gpu"] = gpu.describe();
  out["headline"] = nullptr;
  out["points"] = Json::array();
  Tally total;
  for (size_t i = 0; i < o.rates.size(); ++i) {
    const double r = o.rates[i];
    std::vector<double> arrivals = arrivals_at(unit, r, span);
    std::fprintf(stderr, "serve_load: point %zu/%zu, rate %s/s: %zu arrivals over warm-up %s s + window %s s\n",
                 i + 1, o.rates.size(), number(r).c_str(), arrivals.size(), number(o.warmup_s).c_str(),
                 number(o.duration_s).c_str());
    OpenLoopPoint point(o, clips, ep, r, std::move(arrivals));
    point.run();
    count_all(total, point.outcomes());
    Json p = point_json(point, o);
    p["gpu"] = gpu.summary(point.window().opened_unix(), point.window().closed_unix());
    out["gpu_timeline"] = gpu.timeline(sweep_start);  // for the report's GPU plot
    print_point(i, o.rates.size(), p);
    out["points"].push_back(std::move(p));
    out["headline"] = headline_json(out["points"], "rate_per_s",
                                    {"rate_per_s", "offered_per_s", "requests_per_s", "audio_seconds_per_s"});
    write_result(o.out, out);  // what is done so far survives an interrupted sweep
  }
  const bool good = total.wrong == 0 && total.failed == 0;
  out["all_requests"] = all_requests_json(total, "warm-up and window arrivals of every point");
  out["pass"] = good;
  print_end(out, total, o.rates.size());
  if (!write_result(o.out, out)) return 1;
  return good ? 0 : 1;
}

}  // namespace serve_load
