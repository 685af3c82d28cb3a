// serve_load --closed-loop --grpc-port P --model NAME: the `seed` workload over KServe v2 gRPC (Triton's
// inference.GRPCInferenceService/ModelInfer, the stub generated from proto/grpc_service.proto): each of c threads
// keeps its own channel (its own connection) and re-sends the clip as one BYTES input `audio` as soon as the
// answer arrives; an answer is right when its output `text` equals the reference (the clip sent alone first, over
// gRPC too). The measurement window, the /metrics scrapes (over HTTP, --port) and the per-point results are the
// HTTP closed loop's. Built only with gRPC (STENO_SERVE_LOAD_GRPC).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "serve_load_closed_outcome.h"
#include "serve_load_common.h"
#include "serve_load_point.h"

namespace serve_load {

bool grpc_available();  // false in a serve_load built without gRPC

struct GrpcReference {
  bool ok = false;
  double latency_ms = 0;
  std::string text, error;
};

// The clip's bytes as the request every thread sends (kept opaque: the generated types stay in the .cc).
class GrpcClosedLoopPoint {
 public:
  GrpcClosedLoopPoint(const Options& o, const std::string& clip_bytes, const std::string& reference,
                      const tcp::endpoint& http_ep, int concurrency);
  ~GrpcClosedLoopPoint();

  // Runs the point: warm-up, window, drain; every thread joined and both /metrics scrapes in.
  void run();

  // The clip sent alone, for the reference text.
  static GrpcReference reference(const Options& o, const std::string& clip_bytes);

  int concurrency() const { return concurrency_; }
  const std::vector<ClosedOutcome>& outcomes() const { return outcomes_; }
  const MeasurementWindow& window() const { return window_; }

 private:
  struct Impl;
  void loop(int conn);

  const Options& o_;
  const std::string& reference_;
  int concurrency_;
  std::unique_ptr<Impl> impl_;
  net::io_context ioc_{1};
  MeasurementWindow window_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::vector<ClosedOutcome> outcomes_;
};

}  // namespace serve_load
