#include "serve_load_results.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>

namespace serve_load {

namespace {

// The result as JSON text, each point's per-request rows one to a line.
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

// A point's server side: "B batches, mean M", or "no /metrics".
std::string batches_text(const Json& m) {
  return m.contains("batches") ? std::to_string(m["batches"].get<int64_t>()) + " batches, mean " +
                                     number(m["mean_batch_size"].get<double>())
                               : "no /metrics";
}

}  // namespace

const char* phase_name(Phase p) { return p == Phase::kWarmup ? "warmup" : p == Phase::kWindow ? "window" : "drain"; }

const char* result_name(Result r) { return r == Result::kOk ? "ok" : r == Result::kWrong ? "wrong" : "failed"; }

void Outcome::take(int http_status, const Verdict& v, bool accept_differing_text) {
  status = http_status;
  result = result_of(v, accept_differing_text);
  differs = v.wrong_text && result == Result::kOk;
  reason = v.reason;
  if (v.wrong_text) got = v.got;
}

void Tally::count(const Outcome& o) {
  ++requests;
  ok += o.result == Result::kOk;
  wrong += o.result == Result::kWrong;
  differs += o.differs;
  if (o.result == Result::kFailed) {
    ++failed;
    ++failed_by_reason[o.reason.empty() ? "unknown" : o.reason];
  }
}

Json tally_json(const Tally& t) {
  return {{"requests", t.requests}, {"ok", t.ok}, {"wrong", t.wrong}, {"failed", t.failed}, {"differs", t.differs},
          {"failed_by_reason", t.failed_by_reason}};
}

void put_tally(Json& point, const Tally& window) {
  const Json counts = tally_json(window);
  for (const auto& [k, v] : counts.items()) point[k] = v;
}

Json all_requests_json(const Tally& total, const std::string& note) {
  return {{"requests", total.requests}, {"ok", total.ok}, {"wrong", total.wrong}, {"failed", total.failed},
          {"differs", total.differs}, {"note", note}};
}

Json sla_misses(const Json& latency, const Tally& window, const Options& o, bool bound_mean) {
  Json misses = Json::array();
  if (window.ok == 0) misses.push_back("no ok request in the window");
  if (window.wrong + window.failed > 0) misses.push_back("wrong or failed requests in the window");
  if (bound_mean && !(latency["mean"].get<double>() < o.sla_mean_ms))
    misses.push_back("latency mean >= " + number(o.sla_mean_ms) + " ms");
  if (!(latency["p99"].get<double>() < o.sla_p99_ms))
    misses.push_back("latency p99 >= " + number(o.sla_p99_ms) + " ms");
  return misses;
}

Json text_examples_json(const TextCounts& counts, size_t most) {
  Json examples = Json::array();
  for (const auto& [key, n] : counts) {
    if (examples.size() == most) break;
    Json example;
    if (key.first >= 0) example["clip"] = key.first;
    example["got"] = key.second;
    example["times"] = n;
    examples.push_back(std::move(example));
  }
  return examples;
}

Json request_row(Json row, const Outcome& o) {
  row["latency_ms"] = round3(o.latency_ms);
  row["status"] = o.status;
  row["result"] = result_name(o.result);
  if (o.result != Result::kOk && !o.reason.empty()) row["reason"] = o.reason;
  if (o.differs) row["differs"] = true;
  return row;
}

Json load_average() {
  std::ifstream f("/proc/loadavg");
  double one = 0, five = 0, fifteen = 0;
  if (!(f >> one >> five >> fifteen)) return nullptr;
  return {{"1min", one}, {"5min", five}, {"15min", fifteen}};
}

Json headline_json(const Json& points, const char* by, std::initializer_list<const char*> fields) {
  const Json* best = nullptr;
  for (const auto& p : points)
    if (p["meets_sla"].get<bool>() && (!best || p[by] > (*best)[by])) best = &p;
  if (!best) return nullptr;
  const Json& b = *best;
  Json h;
  for (const char* field : fields) h[field] = b[field];
  h["latency_ms"] = {{"mean", b["latency_ms"]["mean"]}, {"p99", b["latency_ms"]["p99"]}};
  return h;
}

std::string latency_sla_text(const Json& point) {
  const Json& latency = point["latency_ms"];
  char text[1024];  // room for three doubles of any size
  std::snprintf(text, sizeof text, "latency mean %.0f ms, p99 %.0f ms, max %.0f ms: SLA %s; ",
                latency["mean"].get<double>(), latency["p99"].get<double>(), latency["max"].get<double>(),
                point["meets_sla"].get<bool>() ? "met" : "missed");
  return text + batches_text(point["server_metrics"]);
}

std::string differs_text(int differs) {
  return differs > 0 ? " (" + std::to_string(differs) + " with differing text)" : "";
}

void print_summary(Json result) {
  for (auto& p : result["points"]) p.erase("per_request");
  std::cout << result.dump(2) << std::endl;
}

void print_verdict(bool pass, const Tally& total, size_t points, const Json& headline,
                   const std::function<std::string(const Json&)>& describe) {
  std::fprintf(stderr, "serve_load: %s: %d requests over %zu points, %d ok%s, %d wrong, %d failed; headline: %s\n",
               pass ? "PASS" : "FAIL", total.requests, points, total.ok, differs_text(total.differs).c_str(),
               total.wrong, total.failed,
               headline.is_null() ? "none (no point meets the SLA)" : describe(headline).c_str());
}

bool write_result(const std::string& path, const Json& result) {
  if (path.empty()) return true;
  std::ofstream f(path);
  f << dump_result(result);
  if (!f) std::fprintf(stderr, "serve_load: cannot write %s\n", path.c_str());
  return static_cast<bool>(f);
}

}  // namespace serve_load
