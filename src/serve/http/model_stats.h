// Per-model statistics in the shape of KServe's statistics extension (serving-protocols.md §2.5), measured where
// the HTTP front end can see them: each request's outcome, its total time, its queue and compute times as the
// core reports them, the audio decode time (compute_input) and the response rendering time (compute_output).
//
// Batches are not visible here, only each request's batch size; execution_count and batch_stats are derived from
// them (a batch of n is n requests that each report batch_size n), which is exact as long as every request of a
// batch came through this front end.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace steno::serve::http {

struct RequestSample {
  bool ok = false;
  uint64_t total_ns = 0;    // from the HTTP request's dispatch to its response
  uint64_t queue_ns = 0;    // ok only: waiting for a batch
  uint64_t input_ns = 0;    // decoding and validating the audio
  uint64_t infer_ns = 0;    // ok only: the batch's compute time
  uint64_t output_ns = 0;   // ok only: rendering the response
  int batch_size = 0;       // ok only
};

class ModelStats {
 public:
  void record(const std::string& model, const RequestSample& sample);
  // {"model_stats": [...]} for `models`, each with version "1"; models never used report zeros.
  nlohmann::json to_json(const std::vector<std::string>& models) const;

 private:
  struct Duration {
    uint64_t count = 0, ns = 0;
  };
  struct BatchBucket {
    double batches = 0;  // requests / batch size
    double infer_ns = 0, input_ns = 0, output_ns = 0;
  };
  struct Entry {
    uint64_t last_inference_ms = 0;
    uint64_t inference_count = 0;
    double execution_count = 0;
    Duration success, fail, queue, compute_input, compute_infer, compute_output;
    std::map<int, BatchBucket> batches;
  };
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
};

}  // namespace steno::serve::http
