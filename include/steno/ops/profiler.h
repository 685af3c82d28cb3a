// GPU time per op, for benchmarks and diagnosis. Attached to a CUDA context (Context::set_profiler), it makes
// every op entry point record a CUDA event on the context's stream before and after the op's kernels; summary()
// waits for those events and gives, per op name, the calls and the milliseconds between them. Events cost a few
// microseconds per op, so a profiled run is for the breakdown, not for the total. CPU contexts ignore it, and it
// must not be attached while ops are captured into a CUDA graph.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace steno::ops {

class Context;

class OpProfiler {
 public:
  OpProfiler();
  ~OpProfiler();
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  struct Entry {
    std::string op;
    int64_t calls = 0;
    double ms = 0;  // summed over the calls
  };
  // Per op name, most time first. Waits for the recorded work.
  std::vector<Entry> summary() const;
  // Forgets what was recorded (the events are kept for reuse).
  void clear();

  // For the op entry points (src/ops/check.h): an op's start and end on ctx's stream. Ops may nest (an op
  // calling another); each is timed on its own, so nested time counts in both.
  void begin(const Context& ctx, const char* op);
  void end(const Context& ctx);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace steno::ops
