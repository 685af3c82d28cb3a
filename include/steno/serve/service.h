// The contract between steno's front ends (HTTP, gRPC) and its inference core (batcher + executors).
//
// A front end decodes and validates untrusted input into a TranscriptionRequest (16 kHz PCM, never raw bytes),
// submits it, and gets exactly one TranscriptionResponse through the request's `done` callback: success, a
// rejection (queue full, deadline passed, cancelled, shutting down), or an error. The callback runs on an
// executor or batcher thread; front ends hand the response back to their own I/O thread from there.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "steno/asr/transcript.h"
#include "steno/core/error.h"

namespace steno::serve {

using Clock = std::chrono::steady_clock;

// Test-only (`steno serve --enable-fault-injection`, header X-Steno-Fault): what a worker process does when it
// runs a batch holding the request. See steno/serve/fleet/fault_injection.h.
enum class InjectedFault : uint8_t { kNone, kCrash, kHang, kDeviceFault, kOom };

struct TranscriptionRequest {
  std::string id;     // unique per request, for logs ("req-42")
  std::string model;  // the model's name as clients address it
  std::vector<float> pcm;  // 16 kHz mono in [-1, 1]
  // Lower values are served first (Triton's convention: 1 is the highest priority; 0 = the default level).
  int priority = 0;
  Clock::time_point arrival = Clock::now();
  Clock::time_point deadline = Clock::time_point::max();  // work not started by then is dropped
  // Set by the front end when the client goes away; queued work is then dropped without running.
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);

  InjectedFault fault = InjectedFault::kNone;  // tests only; kNone unless fault injection is enabled
  // How many times a batch holding this request was lost to a worker process crashing or hanging: the fleet's
  // poison detection fails a request alone once it reaches 2 instead of replaying it again.
  int worker_faults = 0;

  struct Response;
  std::function<void(Response)> done;  // called exactly once
};

// Why a request was not served (maps to HTTP 429/503/504/499 and gRPC RESOURCE_EXHAUSTED/UNAVAILABLE/...).
enum class Outcome { kOk, kQueueFull, kDeadlineExceeded, kCancelled, kShuttingDown, kUnknownModel, kError };
const char* outcome_name(Outcome o);

struct StageDurations {
  double queue_ms = 0;       // submit -> batch start: time in the batcher's queue (Triton's queue duration)
  double compute_ms = 0;     // the batch's features + encoder + decoder + detokenize
  double features_ms = 0, encoder_ms = 0, decoder_ms = 0, detokenize_ms = 0;
};

struct TranscriptionRequest::Response {
  Outcome outcome = Outcome::kOk;
  std::string message;          // for everything but kOk: what happened, for the client
  double retry_after_s = 0;     // kQueueFull: a hint for Retry-After
  asr::Transcript transcript;   // kOk only
  StageDurations durations;
  int batch_size = 0;           // the batch this request ran in
};
using TranscriptionResponse = TranscriptionRequest::Response;

// What front ends call. Implemented by the inference core; thread-safe.
class TranscriptionService {
 public:
  virtual ~TranscriptionService() = default;
  // Takes ownership; `done` is always called (possibly before submit returns, e.g. when the queue is full).
  virtual void submit(std::unique_ptr<TranscriptionRequest> request) = 0;
  // Names of the models served (the first is the default).
  virtual std::vector<std::string> models() const = 0;
  virtual bool ready() const = 0;
  // Stops taking requests, finishes what is queued and running, then returns.
  virtual void drain() = 0;
  // The metrics in Prometheus' text exposition format (the body of GET /metrics; Content-Type
  // "text/plain; version=0.0.4"). Empty when the implementation keeps none (test doubles need not override it).
  virtual std::string render_metrics() const { return {}; }
};

}  // namespace steno::serve
