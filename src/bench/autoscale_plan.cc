#include "steno/bench/autoscale_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "steno/core/error.h"

namespace steno::bench {
namespace {

// A figure a hair above an integer only through floating-point error is that integer (as plan_fleet rounds).
int64_t ceil_count(double x) { return static_cast<int64_t>(std::ceil(x - 1e-9)); }

}  // namespace

AutoscalePlan plan_autoscaling(const Plan& fleet, double headroom, const AutoscaleInput& in) {
  if (in.min_replicas < 1) fail(ErrorCode::kInvalidArgument, "--min-replicas must be at least 1, got {}", in.min_replicas);
  AutoscalePlan out;

  // Replicas: the ceiling carries the peak; the floor the average, so that a quiet fleet still meets the SLO at
  // ordinary load while the autoscaler adds pods (each loading its model first) for the busy hours.
  out.max_replicas = std::max(fleet.gpus, in.min_replicas);
  if (fleet.average_requests_per_s) {
    const double exact = *fleet.average_requests_per_s / fleet.capacity_requests_per_s * (1 + headroom);
    out.min_replicas = std::min(out.max_replicas, std::max(in.min_replicas, ceil_count(exact)));
    out.arithmetic.push_back(fmt::format(
        "replica floor: max({}, ceil({:.4g} average requests/s / {:.4g} x (1 + {:.4g} headroom))) = max({}, "
        "ceil({:.4g})) = {}",
        in.min_replicas, *fleet.average_requests_per_s, fleet.capacity_requests_per_s, headroom, in.min_replicas,
        exact, out.min_replicas));
  } else {
    out.min_replicas = std::min(out.max_replicas, in.min_replicas);
    out.arithmetic.push_back(fmt::format(
        "replica floor: {} (--min-replicas; the traffic was given as a peak, so there is no average to size it by)",
        out.min_replicas));
  }
  out.arithmetic.push_back(fmt::format("replica ceiling: the GPUs for the peak = {}", out.max_replicas));

  // The queue-time target: the part of the SLO's mean latency a request may spend waiting. The rest it spends
  // being decoded, computed, rendered and carried, as measured at the capacity.
  if (in.outside_queue_ms) {
    if (!(*in.outside_queue_ms >= 0) || !std::isfinite(*in.outside_queue_ms))
      fail(ErrorCode::kInvalidArgument, "--compute-ms must be >= 0, got {}", *in.outside_queue_ms);
    out.outside_queue_ms = *in.outside_queue_ms;
    out.arithmetic.push_back(fmt::format("time outside the queue: {:.4g} ms (given)", out.outside_queue_ms));
  } else if (in.capacity_point && in.capacity_point->server_queue_ms) {
    const LoadPoint& p = *in.capacity_point;
    out.outside_queue_ms = p.mean_ms - *p.server_queue_ms;
    out.arithmetic.push_back(fmt::format(
        "time outside the queue at the capacity (c = {:g}): mean latency {:.4g} ms - steno's queue time {:.4g} ms "
        "= {:.4g} ms",
        p.load, p.mean_ms, *p.server_queue_ms, out.outside_queue_ms));
  } else {
    fail(ErrorCode::kInvalidArgument,
         "the queue-time target needs the time a request spends outside the queue: a --result whose points have "
         "the server's queue time (server_metrics.queue_ms_mean), or --compute-ms");
  }
  const double target_ms = in.slo_mean_ms - out.outside_queue_ms;
  if (!(target_ms > 0))
    fail(ErrorCode::kInvalidArgument,
         "the SLO's mean latency ({:g} ms) leaves no time for queueing after {:.4g} ms outside the queue",
         in.slo_mean_ms, out.outside_queue_ms);
  out.queue_target_us = std::round(target_ms * 1000);
  out.arithmetic.push_back(fmt::format("queue-time target: SLO mean {:g} ms - {:.4g} ms = {:.4g} ms = {:.0f} us",
                                       in.slo_mean_ms, out.outside_queue_ms, target_ms, out.queue_target_us));
  return out;
}

}  // namespace steno::bench
