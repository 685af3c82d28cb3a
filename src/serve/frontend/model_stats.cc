#include "steno/serve/frontend/model_stats.h"

#include <chrono>
#include <cmath>

namespace steno::serve {
namespace {

uint64_t to_ns(double ms) { return ms > 0 ? static_cast<uint64_t>(ms * 1e6) : 0; }
uint64_t rounded(double v) { return static_cast<uint64_t>(std::llround(v)); }

void add(StatDuration& d, uint64_t ns) {
  ++d.count;
  d.ns += ns;
}

nlohmann::json duration_json(const StatDuration& d) { return {{"count", d.count}, {"ns", d.ns}}; }

}  // namespace

double ms_since(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

void ModelStats::record(const std::string& model, const RequestSample& s) {
  const uint64_t now_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  std::lock_guard lock(mu_);
  Entry& e = entries_[model];
  if (!s.ok) {
    add(e.fail, s.total_ns);
    return;
  }
  e.last_inference_ms = now_ms;
  ++e.inference_count;
  add(e.success, s.total_ns);
  add(e.queue, s.queue_ns);
  add(e.compute_input, s.input_ns);
  add(e.compute_infer, s.infer_ns);
  add(e.compute_output, s.output_ns);
  const int n = s.batch_size > 0 ? s.batch_size : 1;
  e.execution_count += 1.0 / n;
  BatchBucket& b = e.batches[n];
  b.batches += 1.0 / n;
  b.infer_ns += static_cast<double>(s.infer_ns) / n;  // every member reports the batch's compute time
  b.input_ns += static_cast<double>(s.input_ns);
  b.output_ns += static_cast<double>(s.output_ns);
}

void ModelStats::record_rejected(const std::string& model, Clock::time_point received) {
  RequestSample s;
  s.total_ns = to_ns(ms_since(received));
  record(model, s);
}

void ModelStats::record_answer(const std::string& model, const TranscriptionResponse& response,
                               Clock::time_point received, double input_ms, double output_ms) {
  RequestSample s;
  s.input_ns = to_ns(input_ms);
  s.total_ns = to_ns(ms_since(received));
  if (response.outcome == Outcome::kOk) {
    s.ok = true;
    s.output_ns = to_ns(output_ms);
    s.queue_ns = to_ns(response.durations.queue_ms);
    s.infer_ns = to_ns(response.durations.compute_ms);
    s.batch_size = response.batch_size;
  }
  record(model, s);
}

std::vector<ModelStatsSnapshot> ModelStats::snapshot(const std::vector<std::string>& models) const {
  std::vector<ModelStatsSnapshot> out;
  std::lock_guard lock(mu_);
  for (const std::string& name : models) {
    const auto it = entries_.find(name);
    const Entry e = it == entries_.end() ? Entry{} : it->second;
    ModelStatsSnapshot s;
    s.name = name;
    s.last_inference_ms = e.last_inference_ms;
    s.inference_count = e.inference_count;
    s.execution_count = rounded(e.execution_count);
    s.success = e.success;
    s.fail = e.fail;
    s.queue = e.queue;
    s.compute_input = e.compute_input;
    s.compute_infer = e.compute_infer;
    s.compute_output = e.compute_output;
    for (const auto& [size, b] : e.batches) {
      const uint64_t count = rounded(b.batches);
      s.batches.push_back({size,
                           {count, rounded(b.input_ns)},
                           {count, rounded(b.infer_ns)},
                           {count, rounded(b.output_ns)}});
    }
    out.push_back(std::move(s));
  }
  return out;
}

nlohmann::json ModelStats::to_json(const std::vector<std::string>& models) const {
  nlohmann::json list = nlohmann::json::array();
  for (const ModelStatsSnapshot& s : snapshot(models)) {
    nlohmann::json batch_stats = nlohmann::json::array();
    for (const auto& b : s.batches)
      batch_stats.push_back({{"batch_size", b.batch_size},
                             {"compute_input", duration_json(b.compute_input)},
                             {"compute_infer", duration_json(b.compute_infer)},
                             {"compute_output", duration_json(b.compute_output)}});
    list.push_back({{"name", s.name},
                    {"version", s.version},
                    {"last_inference", s.last_inference_ms},
                    {"inference_count", s.inference_count},
                    {"execution_count", s.execution_count},
                    {"inference_stats",
                     {{"success", duration_json(s.success)},
                      {"fail", duration_json(s.fail)},
                      {"queue", duration_json(s.queue)},
                      {"compute_input", duration_json(s.compute_input)},
                      {"compute_infer", duration_json(s.compute_infer)},
                      {"compute_output", duration_json(s.compute_output)},
                      {"cache_hit", duration_json({})},
                      {"cache_miss", duration_json({})}}},
                    {"response_stats", nlohmann::json::object()},
                    {"batch_stats", batch_stats},
                    {"memory_usage", nlohmann::json::array()}});
  }
  return {{"model_stats", list}};
}

}  // namespace steno::serve
