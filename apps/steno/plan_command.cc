// `steno plan`: GPUs for a traffic figure, from a measured capacity (docs/benchmarks.md, "SLO, headline and
// capacity"). The capacity is a result file's SLO point (bench/seed_load.sh; the SLO search picks the
// highest requests/s meeting --sla-mean-ms / --sla-p99-ms) or a figure given with --capacity-rps.
// `--emit k8s` turns the plan into an autoscaler's settings (replica floor and ceiling, queue-time target) and
// prints them as a Kustomize overlay of deploy/overlays/keda, the arithmetic as its comments
// (docs/deployment.md).
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "steno/bench/autoscale_plan.h"
#include "steno/bench/capacity_plan.h"
#include "steno/bench/kustomize_overlay.h"
#include "steno/core/error.h"

namespace steno::cli {
namespace {

struct PlanOptions {
  std::string result;
  double capacity_rps = 0;
  double capacity_audio_s_per_s = 0;
  std::optional<double> peak_rps, per_week, mean_audio_s;
  bench::PlanInput input;
  bench::SloBounds slo;
  std::string emit;  // "" (text) or "k8s"
  bench::AutoscaleInput autoscale;
  bench::OverlayTarget overlay;
};

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(ErrorCode::kNotFound, "result file not found: {}", path);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorCode::kInvalidArgument, "{}: not JSON: {}", path, e.what());
  }
}

std::string describe(const bench::LoadPoint& p) {
  return fmt::format("c = {:g}: {:.4g} requests/s, mean {:.0f} ms, p99 {:.0f} ms{}", p.load, p.requests_per_s,
                     p.mean_ms, p.p99_ms, p.errors ? fmt::format(", {} errors", p.errors) : "");
}

// Fills the capacity from the result file's sweep; the SLO search's lines go to `lines`.
void capacity_from_result(PlanOptions& o, std::vector<std::string>& lines) {
  const auto points = bench::load_points_from_result(read_json(o.result));
  const bench::SloSearch s = bench::search_slo(points, o.slo);
  lines.push_back(fmt::format("SLO search in {} ({} points; mean < {:g} ms, p99 < {:g} ms, no errors):", o.result,
                              points.size(), o.slo.mean_ms, o.slo.p99_ms));
  if (!s.best)
    fail(ErrorCode::kInvalidArgument, "{}: no point of the sweep meets the SLO, so it gives no capacity",
         o.result);
  lines.push_back("  best:              " + describe(*s.best));
  lines.push_back("  last meeting:      " + describe(*s.last_meeting));
  lines.push_back("  first failing above: " + (s.first_failing_above ? describe(*s.first_failing_above)
                                                                     : "none measured (the capacity may be higher)"));
  o.input.capacity_requests_per_s = s.best->requests_per_s;
  o.input.capacity_audio_seconds_per_s = s.best->audio_seconds_per_s;
  o.autoscale.capacity_point = s.best;
}

int run_plan(PlanOptions& opt) {
  if (opt.result.empty() && !(opt.capacity_rps > 0))
    fail(ErrorCode::kInvalidArgument, "give the capacity: --result FILE or --capacity-rps R");
  if (!opt.emit.empty() && opt.emit != "k8s")
    fail(ErrorCode::kInvalidArgument, "--emit takes k8s (a Kustomize overlay), got '{}'", opt.emit);
  std::vector<std::string> lines;
  if (!opt.result.empty()) {
    capacity_from_result(opt, lines);
  } else {
    opt.input.capacity_requests_per_s = opt.capacity_rps;
    opt.input.capacity_audio_seconds_per_s = opt.capacity_audio_s_per_s;
  }
  opt.input.peak_requests_per_s = opt.peak_rps;
  opt.input.items_per_week = opt.per_week;
  opt.input.mean_audio_s = opt.mean_audio_s;
  const bench::Plan plan = bench::plan_fleet(opt.input);
  lines.insert(lines.end(), plan.arithmetic.begin(), plan.arithmetic.end());
  lines.push_back(fmt::format("GPUs: {}", plan.gpus));
  if (opt.emit.empty()) {
    for (const std::string& line : lines) std::printf("%s\n", line.c_str());
    return 0;
  }
  opt.autoscale.slo_mean_ms = opt.slo.mean_ms;
  const bench::AutoscalePlan autoscale = bench::plan_autoscaling(plan, opt.input.headroom, opt.autoscale);
  lines.insert(lines.end(), autoscale.arithmetic.begin(), autoscale.arithmetic.end());
  std::fputs(bench::kustomize_autoscale_overlay(autoscale, opt.overlay, lines).c_str(), stdout);
  return 0;
}

}  // namespace

Run add_plan_command(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand("plan", "GPUs needed for a traffic figure, from a measured capacity");
  auto* result = cmd->add_option("--result", o->result, "A closed-loop result file (bench/seed_load.sh) to take the "
                                                        "capacity from");
  auto* rps = cmd->add_option("--capacity-rps", o->capacity_rps, "Requests/s one GPU serves at the SLO (instead of "
                                                                 "--result)");
  result->excludes(rps);
  cmd->add_option("--capacity-audio-s-per-s", o->capacity_audio_s_per_s,
                  "Audio seconds/s one GPU transcribes at the SLO (with --capacity-rps and --mean-audio-s)");
  cmd->add_option("--peak-rps", o->peak_rps, "Peak traffic, requests/s");
  cmd->add_option("--per-week", o->per_week, "Traffic as items per week (e.g. consultations)");
  cmd->add_option("--requests-per-item", o->input.requests_per_item, "Requests one item makes (default 1)");
  cmd->add_option("--peak-factor", o->input.peak_factor, "Busiest-hour rate / weekly average rate (default 3)");
  cmd->add_option("--mean-audio-s", o->mean_audio_s,
                  "Mean audio length of a production request: converts the capacity through audio seconds/s");
  cmd->add_option("--headroom", o->input.headroom, "Spare capacity over the peak, a fraction (default 0.2)");
  cmd->add_option("--sla-mean-ms", o->slo.mean_ms, "SLO: mean latency bound for --result (default 650)");
  cmd->add_option("--sla-p99-ms", o->slo.p99_ms, "SLO: p99 latency bound for --result (default 1000)");
  auto* emit = cmd->add_option("--emit", o->emit,
                               "k8s: print the plan as a Kustomize overlay of deploy/overlays/keda (replica floor "
                               "and ceiling, queue-time target), the arithmetic as comments");
  cmd->add_option("--compute-ms", o->autoscale.outside_queue_ms,
                  "With --emit: mean time of a request outside steno's queue at the capacity, ms (default: the "
                  "result's SLO point, its mean latency less the server's queue time)")
      ->needs(emit);
  cmd->add_option("--min-replicas", o->autoscale.min_replicas, "With --emit: the lowest replica floor (default 1)")
      ->needs(emit);
  cmd->add_option("--k8s-base", o->overlay.resources,
                  "With --emit: the kustomization the overlay patches, relative to the overlay (default ../keda)")
      ->needs(emit);
  return [o]() -> int { return run_plan(*o); };
}

}  // namespace steno::cli
