#include "serve_load_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

namespace serve_load {

namespace {

Scrape parse_prometheus(const std::string& text) {
  Scrape out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    std::string series = line.substr(0, space);
    double value = 0;
    try {
      value = std::stod(line.substr(space + 1));
    } catch (const std::logic_error&) {
      continue;
    }
    std::string key = series;
    if (const size_t brace = series.find('{'); brace != std::string::npos) {
      key = series.substr(0, brace);
      std::vector<std::string> kept;
      std::string labels = series.substr(brace + 1, series.rfind('}') - brace - 1);
      size_t pos = 0;
      while (pos < labels.size()) {
        const size_t eq = labels.find('=', pos);
        if (eq == std::string::npos) break;
        const size_t close = labels.find('"', labels.find('"', eq) + 1);
        const std::string name = labels.substr(pos, eq - pos);
        if (name != "model" && name != "version") kept.push_back(labels.substr(pos, close + 1 - pos));
        pos = close + 2;  // past '"' and ','
      }
      std::sort(kept.begin(), kept.end());
      if (!kept.empty()) {
        key += "{";
        for (size_t i = 0; i < kept.size(); ++i) key += (i ? "," : "") + kept[i];
        key += "}";
      }
    }
    out[key] += value;
  }
  return out;
}

double delta(const Scrape& before, const Scrape& after, const std::string& key) {
  const auto a = after.find(key);
  const auto b = before.find(key);
  return (a == after.end() ? 0 : a->second) - (b == before.end() ? 0 : b->second);
}

// A counter's increase as an integer (Prometheus serializes every value as a double).
int64_t count_of(double v) { return static_cast<int64_t>(std::llround(v)); }

}  // namespace

std::optional<Scrape> scrape_metrics(const tcp::endpoint& ep, const Options& o, std::string& error) {
  net::io_context ioc;
  tcp::socket socket(ioc);
  if (!connect_to(socket, ep, error)) return std::nullopt;
  const std::string head = "GET /metrics HTTP/1.1\r\nHost: " + o.host + ":" + std::to_string(o.port) +
                           "\r\nConnection: close\r\n\r\n";
  SyncResult r = sync_request(socket, head, "");
  if (!r.ok) {
    error = r.error;
    return std::nullopt;
  }
  if (r.response.result_int() != 200) {
    error = "/metrics answered " + std::to_string(r.response.result_int());
    return std::nullopt;
  }
  return parse_prometheus(r.response.body());
}

Json server_side(const Scrape& before, const Scrape& after) {
  Json j;
  const double batches = delta(before, after, "steno_batch_size_count");
  const double batched_requests = delta(before, after, "steno_batch_size_sum");
  j["batches"] = count_of(batches);
  j["batched_requests"] = count_of(batched_requests);
  j["mean_batch_size"] = batches > 0 ? batched_requests / batches : 0.0;
  j["nv_inference_exec_count"] = count_of(delta(before, after, "nv_inference_exec_count"));
  j["nv_inference_count"] = count_of(delta(before, after, "nv_inference_count"));
  // The histogram's buckets (cumulative in Prometheus), as counts of batches per size range.
  std::vector<std::pair<double, double>> buckets;  // (le, cumulative count)
  for (const auto& [key, value] : after) {
    const std::string prefix = "steno_batch_size_bucket{le=\"";
    if (key.rfind(prefix, 0) != 0) continue;
    const std::string le = key.substr(prefix.size(), key.size() - prefix.size() - 2);
    const double bound = le == "+Inf" ? INFINITY : std::stod(le);
    buckets.emplace_back(bound, delta(before, after, key));
  }
  std::sort(buckets.begin(), buckets.end());
  Json hist = Json::object(), cumulative = Json::object();
  double prev_bound = 0, prev_count = 0;
  for (const auto& [bound, count] : buckets) {
    const std::string le = std::isinf(bound) ? "+Inf" : number(bound);
    cumulative[le] = count_of(count);
    // Batch sizes are integers: the bucket (prev, bound] holds sizes prev+1 .. bound.
    const std::string range = std::isinf(bound) ? number(prev_bound + 1) + "+"
                              : prev_bound + 1 == bound ? number(bound)
                                                        : number(prev_bound + 1) + "-" + number(bound);
    hist[range] = count_of(count - prev_count);
    prev_bound = bound;
    prev_count = count;
  }
  j["batch_size_histogram"] = hist;
  j["batch_size_buckets_cumulative"] = cumulative;
  const double success = delta(before, after, "nv_inference_request_success");
  j["nv_inference_request_success"] = count_of(success);
  Json failures = Json::object();
  for (const char* reason : {"REJECTED", "CANCELED", "BACKEND", "OTHER"})
    failures[reason] =
        count_of(delta(before, after, std::string("nv_inference_request_failure{reason=\"") + reason + "\"}"));
  j["nv_inference_request_failure"] = failures;
  if (success > 0) {
    j["queue_ms_mean"] = delta(before, after, "nv_inference_queue_duration_us") / success / 1000;
    j["compute_infer_ms_mean"] = delta(before, after, "nv_inference_compute_infer_duration_us") / success / 1000;
    j["request_ms_mean"] = delta(before, after, "nv_inference_request_duration_us") / success / 1000;
  }
  Json stages = Json::object();
  for (const char* stage : {"features", "encoder", "decoder", "detokenize"})
    stages[stage] = delta(before, after, std::string("steno_stage_duration_us{stage=\"") + stage + "\"}") / 1000;
  j["stage_ms_total"] = stages;
  const double pw_count = delta(before, after, "steno_padding_waste_count");
  j["padding_waste_mean"] = pw_count > 0 ? delta(before, after, "steno_padding_waste_sum") / pw_count : 0.0;
  j["audio_seconds"] = delta(before, after, "steno_audio_seconds_total");
  return j;
}

}  // namespace serve_load
