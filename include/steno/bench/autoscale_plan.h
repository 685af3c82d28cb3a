// From a fleet plan to an autoscaler's settings (docs/deployment.md): the replica floor and ceiling, and the mean
// queue time per request the autoscaler should hold the fleet at. `steno plan --emit k8s` prints the arithmetic
// and writes the numbers into a Kustomize overlay (kustomize_overlay.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "steno/bench/capacity_plan.h"

namespace steno::bench {

struct AutoscaleInput {
  double slo_mean_ms = 650;  // the SLO's mean latency bound
  // What a request spends outside steno's queue at the capacity (compute, audio decoding, rendering, transport):
  // read off the SLO search's best point (its mean latency less the server's queue time), or given.
  std::optional<LoadPoint> capacity_point;
  std::optional<double> outside_queue_ms;  // given (--compute-ms); takes precedence over the point
  int64_t min_replicas = 1;                // a floor below which availability matters more than cost
};

struct AutoscalePlan {
  int64_t min_replicas = 1;
  int64_t max_replicas = 1;
  double outside_queue_ms = 0;
  double queue_target_us = 0;          // whole microseconds, as nv_inference_queue_duration_us counts
  std::vector<std::string> arithmetic; // one line per step, with the numbers
};

// The floor is the fleet for the weekly average load with the plan's headroom (min_replicas when the traffic
// was given as a peak), the ceiling the plan's GPUs, the queue-time target the SLO's mean less the time outside
// the queue. kInvalidArgument when that time is unknown (a result without the server's queue time and no
// --compute-ms) or leaves no room for queueing.
AutoscalePlan plan_autoscaling(const Plan& fleet, double headroom, const AutoscaleInput& in);

}  // namespace steno::bench
