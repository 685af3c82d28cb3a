// A profiled benchmark's GPU time by op (steno/ops/profiler.h) as Google Benchmark counters: op_<name>_ms and
// op_<name>_calls per pass (per iteration), and ops_total_ms. Shared by cuda_engine_bench and diar_bench.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>

#include "steno/ops/profiler.h"

namespace steno {

inline void set_op_counters(benchmark::State& state, const ops::OpProfiler& profiler) {
  const double passes = static_cast<double>(std::max<benchmark::IterationCount>(state.iterations(), 1));
  double total = 0;
  for (const auto& entry : profiler.summary()) {
    state.counters["op_" + entry.op + "_ms"] = entry.ms / passes;
    state.counters["op_" + entry.op + "_calls"] = static_cast<double>(entry.calls) / passes;
    total += entry.ms / passes;
  }
  state.counters["ops_total_ms"] = total;
}

}  // namespace steno
