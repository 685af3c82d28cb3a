#include "model_stats.h"

#include <chrono>
#include <cmath>

namespace steno::serve::http {

void ModelStats::record(const std::string& model, const RequestSample& s) {
  const uint64_t now_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  std::lock_guard lock(mu_);
  Entry& e = entries_[model];
  if (!s.ok) {
    ++e.fail.count;
    e.fail.ns += s.total_ns;
    return;
  }
  e.last_inference_ms = now_ms;
  ++e.inference_count;
  ++e.success.count;
  e.success.ns += s.total_ns;
  ++e.queue.count;
  e.queue.ns += s.queue_ns;
  ++e.compute_input.count;
  e.compute_input.ns += s.input_ns;
  ++e.compute_infer.count;
  e.compute_infer.ns += s.infer_ns;
  ++e.compute_output.count;
  e.compute_output.ns += s.output_ns;
  const int n = s.batch_size > 0 ? s.batch_size : 1;
  e.execution_count += 1.0 / n;
  BatchBucket& b = e.batches[n];
  b.batches += 1.0 / n;
  b.infer_ns += static_cast<double>(s.infer_ns) / n;  // every member reports the batch's compute time
  b.input_ns += static_cast<double>(s.input_ns);
  b.output_ns += static_cast<double>(s.output_ns);
}

nlohmann::json ModelStats::to_json(const std::vector<std::string>& models) const {
  auto duration = [](uint64_t count, uint64_t ns) { return nlohmann::json{{"count", count}, {"ns", ns}}; };
  auto rounded = [](double v) { return static_cast<uint64_t>(std::llround(v)); };
  nlohmann::json list = nlohmann::json::array();
  std::lock_guard lock(mu_);
  for (const std::string& name : models) {
    const auto it = entries_.find(name);
    const Entry e = it == entries_.end() ? Entry{} : it->second;
    nlohmann::json batch_stats = nlohmann::json::array();
    for (const auto& [size, b] : e.batches) {
      const uint64_t count = rounded(b.batches);
      batch_stats.push_back({{"batch_size", size},
                             {"compute_input", duration(count, rounded(b.input_ns))},
                             {"compute_infer", duration(count, rounded(b.infer_ns))},
                             {"compute_output", duration(count, rounded(b.output_ns))}});
    }
    list.push_back({{"name", name},
                    {"version", "1"},
                    {"last_inference", e.last_inference_ms},
                    {"inference_count", e.inference_count},
                    {"execution_count", rounded(e.execution_count)},
                    {"inference_stats",
                     {{"success", duration(e.success.count, e.success.ns)},
                      {"fail", duration(e.fail.count, e.fail.ns)},
                      {"queue", duration(e.queue.count, e.queue.ns)},
                      {"compute_input", duration(e.compute_input.count, e.compute_input.ns)},
                      {"compute_infer", duration(e.compute_infer.count, e.compute_infer.ns)},
                      {"compute_output", duration(e.compute_output.count, e.compute_output.ns)},
                      {"cache_hit", duration(0, 0)},
                      {"cache_miss", duration(0, 0)}}},
                    {"response_stats", nlohmann::json::object()},
                    {"batch_stats", batch_stats},
                    {"memory_usage", nlohmann::json::array()}});
  }
  return {{"model_stats", list}};
}

}  // namespace steno::serve::http
