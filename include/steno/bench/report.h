// `steno bench report`: one Markdown report with plots comparing the arms of a sweep, from their result files
// only (load sweeps: bench/seed_load.sh and bench/mix_load.sh, or serve_load's own). The plots are drawn by
// gnuplot (SVG): latency against throughput per arm with the SLO's bounds, the batch-size histogram of each arm's
// best point, and GPU utilization and memory over time where the results hold NVML samples.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "steno/bench/capacity_plan.h"

namespace steno::bench {

struct Arm {
  std::string name;  // as the report shows it (e.g. "single", "lanes+batch")
  std::string file;  // where the result came from
  nlohmann::json result;
};

struct ReportOutput {
  std::string markdown;            // path of report.md
  std::vector<std::string> plots;  // paths of the SVG files drawn
};

// Writes OUT_DIR/report.md, the gnuplot script and data it used, and the SVGs. kInvalidArgument for a result that
// is not a closed-loop sweep; kUnavailable, naming the Debian package, when gnuplot is not installed; kInternal
// with gnuplot's own message when it fails.
ReportOutput write_report(const std::vector<Arm>& arms, const std::string& out_dir, const SloBounds& slo);

}  // namespace steno::bench
