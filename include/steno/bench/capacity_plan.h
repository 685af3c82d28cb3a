// Capacity planning from measured load (docs/benchmarks.md, "SLO, headline and capacity"): the SLO search over a
// load sweep's points, and the fleet size for a traffic figure. Pure arithmetic on result files, no I/O beyond
// parsing the JSON given; `steno plan` prints what plan_fleet() returns, arithmetic included.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace steno::bench {

// The latency bounds a load point must stay under (the benchmarks' SLO: mean < 650 ms, p99 < 1000 ms).
struct SloBounds {
  double mean_ms = 650;
  double p99_ms = 1000;
};

// One point of a sweep: the offered load (concurrency or arrival rate) and what was measured there.
struct LoadPoint {
  double load = 0;                 // concurrency (closed loop) or requests/s offered (open loop)
  double requests_per_s = 0;       // answered correctly, per second of the measurement window
  double audio_seconds_per_s = 0;  // audio transcribed per second (0 when unknown)
  double mean_ms = 0, p99_ms = 0;  // latency of the answered requests
  int64_t ok = 0;
  int64_t errors = 0;  // wrong answers and failures
  // The server's mean queue time per request over the same window (the result's server_metrics.queue_ms_mean,
  // from nv_inference_queue_duration_us), when the result has it: what the autoscaler's query measures.
  std::optional<double> server_queue_ms;
};

// A point meets the SLO when it answered something, made no error, and both latencies are under their bounds.
bool meets_slo(const LoadPoint& p, const SloBounds& slo);

struct SloSearch {
  std::optional<LoadPoint> best;                // the highest requests/s among the points meeting the SLO
  std::optional<LoadPoint> last_meeting;        // the highest load that meets it...
  std::optional<LoadPoint> first_failing_above; // ...and the lowest load above that one that does not
};

// Over the points of one sweep in any order (sorted by load here). best and last_meeting differ when throughput
// falls before latency breaks (a saturated server); first_failing_above is empty when the sweep never broke the
// SLO above its last meeting point (the capacity may be higher than measured).
SloSearch search_slo(std::vector<LoadPoint> points, const SloBounds& slo);

// The points of a sweep's result file: seed_load.sh's or mix_load.sh's (the sweep under "sweep") or serve_load's
// own (top level); the load is the concurrency (closed loop) or the arrival rate (open loop). kInvalidArgument
// naming what is missing for anything else.
std::vector<LoadPoint> load_points_from_result(const nlohmann::json& result);

// What the fleet must carry, and what one GPU carries at the SLO.
struct PlanInput {
  // Peak load: given directly, or derived from a weekly volume.
  std::optional<double> peak_requests_per_s;
  std::optional<double> items_per_week;  // e.g. consultations
  double requests_per_item = 1;          // requests one item makes (a long recording sent in parts)
  double peak_factor = 3;                // busiest-hour rate / average rate (diurnal peak)
  // Capacity of one GPU at the SLO: requests/s as measured, optionally converted through audio throughput to the
  // traffic's own audio length (capacity = audio_seconds_per_s / mean_audio_s) when the benchmark's clip length
  // differs from production's.
  double capacity_requests_per_s = 0;
  double capacity_audio_seconds_per_s = 0;  // needed when mean_audio_s is set
  std::optional<double> mean_audio_s;
  double headroom = 0.2;  // spare capacity on top of the peak (failures, deploys, bursts)
};

struct Plan {
  std::optional<double> average_requests_per_s;  // when the traffic was given per week
  double peak_requests_per_s = 0;
  double capacity_requests_per_s = 0;  // per GPU, after any audio-length conversion
  double gpus_exact = 0;               // peak / capacity x (1 + headroom)
  int64_t gpus = 0;                    // rounded up, at least 1
  std::vector<std::string> arithmetic; // one line per step, with the numbers
};

// kInvalidArgument for missing or non-positive figures (naming the flag), or both or neither peak form given.
Plan plan_fleet(const PlanInput& in);

}  // namespace steno::bench
