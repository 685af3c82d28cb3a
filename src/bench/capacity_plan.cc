#include "steno/bench/capacity_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "steno/core/error.h"

namespace steno::bench {

bool meets_slo(const LoadPoint& p, const SloBounds& slo) {
  return p.ok > 0 && p.errors == 0 && p.mean_ms < slo.mean_ms && p.p99_ms < slo.p99_ms;
}

SloSearch search_slo(std::vector<LoadPoint> points, const SloBounds& slo) {
  std::stable_sort(points.begin(), points.end(),
                   [](const LoadPoint& a, const LoadPoint& b) { return a.load < b.load; });
  SloSearch out;
  size_t last = points.size();
  for (size_t i = 0; i < points.size(); ++i) {
    if (!meets_slo(points[i], slo)) continue;
    if (!out.best || points[i].requests_per_s > out.best->requests_per_s) out.best = points[i];
    last = i;
  }
  if (last == points.size()) return out;
  out.last_meeting = points[last];
  for (size_t i = last + 1; i < points.size(); ++i) {
    if (points[i].load > points[last].load && !meets_slo(points[i], slo)) {
      out.first_failing_above = points[i];
      break;
    }
  }
  return out;
}

namespace {

double number_at(const nlohmann::json& j, const char* key, const char* where) {
  if (!j.contains(key) || !j.at(key).is_number())
    fail(ErrorCode::kInvalidArgument, "result file: {} has no number '{}'", where, key);
  return j.at(key).get<double>();
}

}  // namespace

std::vector<LoadPoint> load_points_from_result(const nlohmann::json& result) {
  const nlohmann::json* sweep = &result;
  if (result.contains("sweep") && result.at("sweep").is_object()) sweep = &result.at("sweep");
  if (!sweep->contains("points") || !sweep->at("points").is_array())
    fail(ErrorCode::kInvalidArgument,
         "result file: no 'points' array (expected a load sweep: bench/seed_load.sh, bench/mix_load.sh or "
         "serve_load --closed-loop / --open-loop)");
  std::vector<LoadPoint> out;
  for (const auto& p : sweep->at("points")) {
    LoadPoint lp;
    // The load: the concurrency of a closed loop, or the arrival rate of an open loop (serve_load --open-loop).
    lp.load = p.contains("concurrency") ? number_at(p, "concurrency", "a point")
                                        : number_at(p, "rate_per_s", "a point");
    lp.requests_per_s = number_at(p, "requests_per_s", "a point");
    lp.audio_seconds_per_s = p.contains("audio_seconds_per_s") ? number_at(p, "audio_seconds_per_s", "a point") : 0;
    lp.ok = static_cast<int64_t>(number_at(p, "ok", "a point"));
    lp.errors = static_cast<int64_t>(number_at(p, "wrong", "a point") + number_at(p, "failed", "a point"));
    if (lp.ok > 0) {
      if (!p.contains("latency_ms") || !p.at("latency_ms").is_object())
        fail(ErrorCode::kInvalidArgument, "result file: a point with answers has no 'latency_ms'");
      lp.mean_ms = number_at(p.at("latency_ms"), "mean", "latency_ms");
      lp.p99_ms = number_at(p.at("latency_ms"), "p99", "latency_ms");
    }
    if (p.contains("server_metrics") && p.at("server_metrics").contains("queue_ms_mean"))
      lp.server_queue_ms = number_at(p.at("server_metrics"), "queue_ms_mean", "server_metrics");
    out.push_back(lp);
  }
  return out;
}

Plan plan_fleet(const PlanInput& in) {
  auto positive = [](double v, const char* flag) {
    if (!(v > 0) || !std::isfinite(v))
      fail(ErrorCode::kInvalidArgument, "{} must be a positive number, got {}", flag, v);
  };
  if (in.peak_requests_per_s.has_value() == in.items_per_week.has_value())
    fail(ErrorCode::kInvalidArgument, "give the traffic either as --peak-rps or as --per-week, not both or neither");
  if (!(in.headroom >= 0) || !std::isfinite(in.headroom))
    fail(ErrorCode::kInvalidArgument, "--headroom must be >= 0 (a fraction: 0.2 is 20 %), got {}", in.headroom);

  Plan plan;
  if (in.peak_requests_per_s) {
    positive(*in.peak_requests_per_s, "--peak-rps");
    plan.peak_requests_per_s = *in.peak_requests_per_s;
    plan.arithmetic.push_back(fmt::format("peak load: {:.4g} requests/s (given)", plan.peak_requests_per_s));
  } else {
    positive(*in.items_per_week, "--per-week");
    positive(in.requests_per_item, "--requests-per-item");
    positive(in.peak_factor, "--peak-factor");
    constexpr double kSecondsPerWeek = 7 * 24 * 3600.0;
    const double average = *in.items_per_week * in.requests_per_item / kSecondsPerWeek;
    plan.average_requests_per_s = average;
    plan.peak_requests_per_s = average * in.peak_factor;
    plan.arithmetic.push_back(fmt::format("average load: {:.0f} items/week x {:.4g} requests/item / {:.0f} s/week = "
                                          "{:.4g} requests/s",
                                          *in.items_per_week, in.requests_per_item, kSecondsPerWeek, average));
    plan.arithmetic.push_back(fmt::format("peak load: {:.4g} requests/s x peak factor {:.4g} = {:.4g} requests/s",
                                          average, in.peak_factor, plan.peak_requests_per_s));
  }

  if (in.mean_audio_s) {
    positive(*in.mean_audio_s, "--mean-audio-s");
    positive(in.capacity_audio_seconds_per_s, "the capacity's audio seconds/s");
    plan.capacity_requests_per_s = in.capacity_audio_seconds_per_s / *in.mean_audio_s;
    plan.arithmetic.push_back(fmt::format(
        "capacity per GPU: {:.4g} audio-s/s at the SLO / {:.4g} s of audio per request = {:.4g} requests/s "
        "(assumes throughput is bound by audio seconds, not by requests)",
        in.capacity_audio_seconds_per_s, *in.mean_audio_s, plan.capacity_requests_per_s));
  } else {
    positive(in.capacity_requests_per_s, "the capacity (--capacity-rps or the result file's SLO point)");
    plan.capacity_requests_per_s = in.capacity_requests_per_s;
    plan.arithmetic.push_back(
        fmt::format("capacity per GPU: {:.4g} requests/s at the SLO", plan.capacity_requests_per_s));
  }

  plan.gpus_exact = plan.peak_requests_per_s / plan.capacity_requests_per_s * (1 + in.headroom);
  // A figure a hair above an integer only through floating-point error (e.g. 2.0000000000000004) is that integer.
  plan.gpus = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(plan.gpus_exact - 1e-9)));
  plan.arithmetic.push_back(fmt::format("GPUs: ceil({:.4g} / {:.4g} x (1 + {:.4g} headroom)) = ceil({:.4g}) = {}",
                                        plan.peak_requests_per_s, plan.capacity_requests_per_s, in.headroom,
                                        plan.gpus_exact, plan.gpus));
  return plan;
}

}  // namespace steno::bench
