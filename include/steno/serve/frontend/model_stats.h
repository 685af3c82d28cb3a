// Per-model statistics in the shape of KServe's statistics extension (serving-protocols.md §2.5), measured where
// the front ends can see them: each request's outcome, its total time, its queue and compute times as the core
// reports them, the audio decode time (compute_input) and the response rendering time (compute_output). One
// table is shared by every front end of a server (HTTP and gRPC), so a model's statistics are the same whichever
// protocol asks for them.
//
// Batches are not visible here, only each request's batch size; execution_count and batch_stats are derived from
// them (a batch of n is n requests that each report batch_size n), which is exact as long as every request of a
// batch came through a front end that shares this table.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "steno/serve/service.h"

namespace steno::serve {

struct RequestSample {
  bool ok = false;
  uint64_t total_ns = 0;    // from the request's arrival at the front end to its response
  uint64_t queue_ns = 0;    // ok only: waiting for a batch
  uint64_t input_ns = 0;    // decoding and validating the audio
  uint64_t infer_ns = 0;    // ok only: the batch's compute time
  uint64_t output_ns = 0;   // ok only: rendering the response
  int batch_size = 0;       // ok only
};

// A cumulative count and duration (the extension's StatisticDuration).
struct StatDuration {
  uint64_t count = 0, ns = 0;
};

struct BatchSizeStats {
  int batch_size = 0;
  StatDuration compute_input, compute_infer, compute_output;
};

// One model's statistics at one moment.
struct ModelStatsSnapshot {
  std::string name;
  std::string version = "1";
  uint64_t last_inference_ms = 0;  // since the epoch; 0 = never
  uint64_t inference_count = 0;
  uint64_t execution_count = 0;
  StatDuration success, fail, queue, compute_input, compute_infer, compute_output;
  std::vector<BatchSizeStats> batches;  // by increasing batch size
};

class ModelStats {
 public:
  void record(const std::string& model, const RequestSample& sample);
  // A request refused before it reached the core (bad input): a failure of `received` -> now.
  void record_rejected(const std::string& model, Clock::time_point received);
  // A request the core answered: a failure for any outcome but kOk. `input_ms` is the audio decoding, `output_ms`
  // the rendering of the response (success only).
  void record_answer(const std::string& model, const TranscriptionResponse& response, Clock::time_point received,
                     double input_ms, double output_ms);

  // `models` in order, each with version "1"; models never used report zeros.
  std::vector<ModelStatsSnapshot> snapshot(const std::vector<std::string>& models) const;
  // {"model_stats": [...]}: the extension's JSON form of snapshot(models).
  nlohmann::json to_json(const std::vector<std::string>& models) const;

 private:
  struct BatchBucket {
    double batches = 0;  // requests / batch size
    double infer_ns = 0, input_ns = 0, output_ns = 0;
  };
  struct Entry {
    uint64_t last_inference_ms = 0;
    uint64_t inference_count = 0;
    double execution_count = 0;
    StatDuration success, fail, queue, compute_input, compute_infer, compute_output;
    std::map<int, BatchBucket> batches;
  };
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
};

// Milliseconds since `since`.
double ms_since(Clock::time_point since);

}  // namespace steno::serve
