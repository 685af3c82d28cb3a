#include "steno/bench/report.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "steno/core/error.h"

namespace steno::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// One point of an arm's sweep with what the report shows besides the SLO search's fields.
struct PointView {
  LoadPoint p;
  double p50_ms = 0;
  double mean_batch = 0;
  json histogram;  // server_metrics.batch_size_histogram: bucket label -> batches
};

const json& sweep_of(const json& result) { return result.contains("sweep") ? result.at("sweep") : result; }

std::vector<PointView> points_of(const Arm& arm) {
  const std::vector<LoadPoint> pts = load_points_from_result(arm.result);
  const json& raw = sweep_of(arm.result).at("points");
  std::vector<PointView> out;
  for (size_t i = 0; i < pts.size(); ++i) {
    PointView v;
    v.p = pts[i];
    const json& r = raw[i];
    if (r.contains("latency_ms") && r.at("latency_ms").contains("p50")) v.p50_ms = r.at("latency_ms").value("p50", 0.0);
    if (r.contains("server_metrics") && r.at("server_metrics").is_object()) {
      const json& m = r.at("server_metrics");
      v.mean_batch = m.value("mean_batch_size", 0.0);
      if (m.contains("batch_size_histogram")) v.histogram = m.at("batch_size_histogram");
    }
    out.push_back(v);
  }
  return out;
}

// A file-name-safe form of an arm's name (the data files are per arm).
std::string slug(const std::string& name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s.empty() ? "arm" : s;
}

// A gnuplot string literal (single quotes: only the quote itself needs doubling).
std::string gp_str(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string fmt_or_dash(double v, const char* spec) { return v > 0 ? fmt::format(fmt::runtime(spec), v) : "—"; }

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path);
  if (!(f << text)) fail(ErrorCode::kInternal, "cannot write {}", path.string());
}

std::string latency_plot(const std::vector<Arm>& arms, const std::vector<std::vector<PointView>>& views,
                         const fs::path& dir, const SloBounds& slo) {
  std::string plots;
  for (size_t a = 0; a < arms.size(); ++a) {
    std::string dat = "# load requests_per_s mean_ms p50_ms p99_ms\n";
    for (const PointView& v : views[a])
      if (v.p.ok > 0)
        dat += fmt::format("{} {} {} {} {}\n", v.p.load, v.p.requests_per_s, v.p.mean_ms, v.p50_ms, v.p.p99_ms);
    const std::string file = "latency_" + slug(arms[a].name) + ".dat";
    write_file(dir / file, dat);
    plots += fmt::format("{}{} using 2:5 with linespoints lw 2 pt 7 lc {} title {}, "
                         "{} using 2:3 with linespoints lw 1 dt 2 pt 6 lc {} title {}",
                         plots.empty() ? "" : ", ", gp_str(file), a + 1, gp_str(arms[a].name + " p99"), gp_str(file),
                         a + 1, gp_str(arms[a].name + " mean"));
  }
  return fmt::format(
      "set output 'latency.svg'\n"
      "set title 'Latency against throughput (each point: one load of the sweep)'\n"
      "set xlabel 'requests/s answered correctly'\nset ylabel 'latency, ms'\nset key top left\nset grid\n"
      "set arrow 1 from graph 0, first {0} to graph 1, first {0} nohead dt 3 lc rgb 'red'\n"
      "set arrow 2 from graph 0, first {1} to graph 1, first {1} nohead dt 3 lc rgb 'orange'\n"
      "set label 1 'p99 bound {0:g} ms' at graph 0.01, first {0} offset 0,0.6 tc rgb 'red'\n"
      "set label 2 'mean bound {1:g} ms' at graph 0.01, first {1} offset 0,0.6 tc rgb 'orange'\n"
      "plot {2}\nunset arrow\nunset label\n",
      slo.p99_ms, slo.mean_ms, plots);
}

// The point whose batch sizes the histogram shows: the arm's best point under the SLO, else its highest load.
const PointView* shown_point(const std::vector<PointView>& views, const SloSearch& s) {
  if (views.empty()) return nullptr;
  if (s.best)
    for (const PointView& v : views)
      if (v.p.load == s.best->load) return &v;
  return &*std::max_element(views.begin(), views.end(),
                            [](const PointView& a, const PointView& b) { return a.p.load < b.p.load; });
}

std::string batch_plot(const std::vector<Arm>& arms, const std::vector<const PointView*>& shown, const fs::path& dir) {
  std::vector<std::string> buckets;
  for (const PointView* v : shown)
    if (v && v->histogram.is_object())
      for (const auto& [k, _] : v->histogram.items())
        if (std::find(buckets.begin(), buckets.end(), k) == buckets.end()) buckets.push_back(k);
  if (buckets.empty()) return "";
  // The JSON object lists its keys alphabetically ("1", "129+", "17-32", ...): order them by their first number.
  auto first_number = [](const std::string& b) { return std::atof(b.c_str()); };
  std::stable_sort(buckets.begin(), buckets.end(),
                   [&](const std::string& a, const std::string& b) { return first_number(a) < first_number(b); });
  std::string dat = "# bucket, then % of each arm's batches\n";
  for (const std::string& b : buckets) {
    dat += '"' + b + '"';
    for (const PointView* v : shown) {
      double total = 0, n = 0;
      if (v && v->histogram.is_object()) {
        for (const auto& [k, c] : v->histogram.items()) total += c.get<double>();
        n = v->histogram.value(b, 0.0);
      }
      dat += fmt::format(" {}", total > 0 ? 100 * n / total : 0.0);
    }
    dat += '\n';
  }
  write_file(dir / "batch_sizes.dat", dat);
  std::string plots;
  for (size_t a = 0; a < arms.size(); ++a)
    plots += fmt::format("{}'batch_sizes.dat' using {}{} title {}", a ? ", " : "", a + 2, a ? "" : ":xtic(1)",
                         gp_str(arms[a].name + (shown[a] ? fmt::format(" (load {:g})", shown[a]->p.load) : "")));
  return "set output 'batch_sizes.svg'\n"
         "set title 'Batch sizes the server ran (each arm at its best point under the SLO)'\n"
         "set xlabel 'batch size'\nset ylabel '% of batches'\nset key top right\nset grid ytics\n"
         "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
         "set yrange [0:*]\nplot " + plots + "\nunset style\nset yrange [*:*]\n";
}

// GPU timelines (serve_load's gpu_timeline), or "" when no arm has one.
std::string gpu_plot(const std::vector<Arm>& arms, const fs::path& dir) {
  std::string util, mem;
  for (size_t a = 0; a < arms.size(); ++a) {
    const json& s = sweep_of(arms[a].result);
    if (!s.contains("gpu_timeline") || !s.at("gpu_timeline").contains("gpus")) continue;
    for (const json& g : s.at("gpu_timeline").at("gpus")) {
      const auto& t = g.at("t_s");
      const auto& u = g.at("util_pct");
      const auto& m = g.at("mem_gib");
      std::string dat = "# t_s util_pct mem_gib\n";
      for (size_t i = 0; i < t.size() && i < u.size() && i < m.size(); ++i)
        dat += fmt::format("{} {} {}\n", t[i].get<double>(), u[i].get<double>(), m[i].get<double>());
      const std::string file = fmt::format("gpu_{}_{}.dat", slug(arms[a].name), g.value("gpu", 0));
      write_file(dir / file, dat);
      const std::string title = gp_str(fmt::format("{} GPU {}", arms[a].name, g.value("gpu", 0)));
      util += fmt::format("{}{} using 1:2 with lines lw 1 title {}", util.empty() ? "" : ", ", gp_str(file), title);
      mem += fmt::format("{}{} using 1:3 with lines lw 2 title {}", mem.empty() ? "" : ", ", gp_str(file), title);
    }
  }
  if (util.empty()) return "";
  return "set output 'gpu.svg'\nset multiplot layout 2,1 title 'GPU over the sweep (NVML, every 100 ms)'\n"
         "set xlabel 's since the sweep began'\nset grid\nset key top left\n"
         "set ylabel 'utilization, %'\nset yrange [0:105]\nplot " + util + "\n"
         "set ylabel 'memory used, GiB'\nset yrange [0:*]\nplot " + mem + "\nunset multiplot\nset yrange [*:*]\n";
}

void run_gnuplot(const fs::path& dir) {
  const std::string cmd = fmt::format("cd '{}' && gnuplot report.gp > gnuplot.log 2>&1", dir.string());
  const int status = std::system(cmd.c_str());
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (rc == 127)
    fail(ErrorCode::kUnavailable,
         "gnuplot not found: the report's plots need it (Debian: apt-get install gnuplot-nox)");
  if (rc != 0) {
    std::ifstream log(dir / "gnuplot.log");
    std::stringstream s;
    s << log.rdbuf();
    fail(ErrorCode::kInternal, "gnuplot failed (exit {}): {}", rc, s.str().substr(0, 2000));
  }
}

// The machine's GPUs as the load scripts record them: a string, or nvidia-smi's CSV lines (a header
// "name, driver_version, ...", one line per GPU, then its banner lines starting with '|').
std::string describe_gpus(const json& m) {
  if (!m.contains("gpu")) return "no GPU";
  const json& g = m.at("gpu");
  if (g.is_string()) return g.get<std::string>();
  std::string gpus;
  if (g.is_array())
    for (const json& line : g) {
      if (!line.is_string()) continue;
      const std::string s = line.get<std::string>();
      if (s.empty() || s.front() == '|' || s.rfind("name,", 0) == 0) continue;
      gpus += (gpus.empty() ? "" : "; ") + s;
    }
  return gpus.empty() ? "no GPU" : gpus;
}

std::string describe_machine(const json& result) {
  if (!result.contains("machine") || !result.at("machine").is_object()) return "—";
  const json& m = result.at("machine");
  return fmt::format("{}, {} cores; {}", m.value("cpu", std::string("?")), m.value("cores", 0), describe_gpus(m));
}

// first_best: the first arm's best requests/s (0 when it has none): the ratio column's denominator.
std::string headline_row(const Arm& arm, const SloSearch& s, double first_best) {
  const std::string commit = arm.result.value("commit", std::string("—"));
  if (!s.best)
    return fmt::format("| {} | `{}` | {} | none meets the SLO | — | — | — | — |\n", arm.name, arm.file, commit);
  const double ratio = first_best > 0 ? s.best->requests_per_s / first_best : 0;
  return fmt::format("| {} | `{}` | {} | **{:.4g}** | {:g} | {:.0f} | {:.0f} | {} |\n", arm.name, arm.file, commit,
                     s.best->requests_per_s, s.best->load, s.best->mean_ms, s.best->p99_ms,
                     ratio > 0 ? fmt::format("{:.2f}×", ratio) : "—");
}

std::string arm_section(const Arm& arm, const std::vector<PointView>& views, const SloSearch& s,
                        const SloBounds& slo) {
  std::string md = fmt::format("## {}\n\n`{}` ({}). ", arm.name, arm.file, describe_machine(arm.result));
  md += s.first_failing_above
            ? fmt::format("The SLO breaks between load {:g} and {:g}.\n\n", s.last_meeting->load,
                          s.first_failing_above->load)
            : (s.best ? "The sweep never broke the SLO above its last point: the capacity may be higher.\n\n"
                      : "No point meets the SLO.\n\n");
  md += "| load (concurrency or arrivals/s) | requests/s | audio s/s | mean ms | p50 ms | p99 ms | errors | "
        "mean batch | SLO |\n"
        "|---|---|---|---|---|---|---|---|---|\n";
  for (const PointView& v : views)
    md += fmt::format("| {:g} | {:.4g} | {} | {} | {} | {} | {} | {} | {} |\n", v.p.load, v.p.requests_per_s,
                      fmt_or_dash(v.p.audio_seconds_per_s, "{:.4g}"), fmt_or_dash(v.p.mean_ms, "{:.0f}"),
                      fmt_or_dash(v.p50_ms, "{:.0f}"), fmt_or_dash(v.p.p99_ms, "{:.0f}"), v.p.errors,
                      fmt_or_dash(v.mean_batch, "{:.2f}"), meets_slo(v.p, slo) ? "met" : "missed");
  return md + "\n";
}

}  // namespace

ReportOutput write_report(const std::vector<Arm>& arms, const std::string& out_dir, const SloBounds& slo) {
  if (arms.empty()) fail(ErrorCode::kInvalidArgument, "bench report: no result files given");
  const fs::path dir(out_dir);
  fs::create_directories(dir);
  std::vector<std::vector<PointView>> views;
  std::vector<SloSearch> searches;
  std::vector<const PointView*> shown;
  for (const Arm& arm : arms) {
    try {
      views.push_back(points_of(arm));
    } catch (const Error& e) {
      fail(ErrorCode::kInvalidArgument, "{}: {}", arm.file, e.what());
    }
    std::vector<LoadPoint> pts;
    for (const PointView& v : views.back()) pts.push_back(v.p);
    searches.push_back(search_slo(pts, slo));
  }
  for (size_t a = 0; a < arms.size(); ++a) shown.push_back(shown_point(views[a], searches[a]));

  std::string gp = "set terminal svg size 960,600 dynamic enhanced font 'sans,12' background rgb 'white'\n";
  gp += latency_plot(arms, views, dir, slo);
  ReportOutput out;
  out.plots.push_back((dir / "latency.svg").string());
  if (const std::string b = batch_plot(arms, shown, dir); !b.empty()) {
    gp += b;
    out.plots.push_back((dir / "batch_sizes.svg").string());
  }
  const std::string g = gpu_plot(arms, dir);
  if (!g.empty()) {
    gp += "set terminal svg size 960,760 dynamic enhanced font 'sans,12' background rgb 'white'\n" + g;
    out.plots.push_back((dir / "gpu.svg").string());
  }
  write_file(dir / "report.gp", gp);
  run_gnuplot(dir);

  std::string md = "# steno bench report\n\n";
  md += fmt::format("Generated by `steno bench report` from the result files only. SLO: mean < {:g} ms, p99 < {:g} ms, "
                    "no wrong or failed request; each arm's best point is its highest requests/s that meets it.\n\n",
                    slo.mean_ms, slo.p99_ms);
  md += fmt::format("| arm | result | commit | requests/s meeting the SLO | at load | mean ms | p99 ms | vs {} |\n"
                    "|---|---|---|---|---|---|---|---|\n",
                    arms.front().name);
  const double first = searches.front().best ? searches.front().best->requests_per_s : 0.0;
  for (size_t a = 0; a < arms.size(); ++a) md += headline_row(arms[a], searches[a], first);
  md += "\n![latency against throughput](latency.svg)\n\n";
  if (out.plots.size() > 1 && fs::path(out.plots[1]).filename() == "batch_sizes.svg")
    md += "![batch sizes](batch_sizes.svg)\n\n";
  if (!g.empty()) {
    md += "![GPU utilization and memory](gpu.svg)\n\n";
  } else {
    std::string why = "the results hold no GPU samples";
    const json& s = sweep_of(arms.front().result);
    if (s.contains("gpu") && s.at("gpu").contains("why")) why += " (" + s.at("gpu").at("why").get<std::string>() + ")";
    md += "No GPU plot: " + why + ".\n\n";
  }
  for (size_t a = 0; a < arms.size(); ++a) md += arm_section(arms[a], views[a], searches[a], slo);
  write_file(dir / "report.md", md);
  out.markdown = (dir / "report.md").string();
  return out;
}

}  // namespace steno::bench
