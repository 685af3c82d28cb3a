#include "steno/ops/profiler.h"

#include <algorithm>
#include <map>

#include "steno/core/cuda.h"
#include "steno/core/error.h"
#include "steno/ops/context.h"
#if STENO_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace steno::ops {

#if STENO_HAVE_CUDA
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail(ErrorCode::kInternal, "op profiler: {}: {}", what, cudaGetErrorString(e));
}

}  // namespace

struct OpProfiler::Impl {
  struct Span {
    std::string op;
    size_t start, stop;  // indices into events
  };
  std::vector<cudaEvent_t> events;  // reused across clear()
  size_t used = 0;
  std::vector<Span> spans;
  std::vector<size_t> open;  // spans begun and not yet ended (nesting)

  size_t record(const Context& ctx) {
    if (used == events.size()) {
      cudaEvent_t e;
      check(cudaEventCreate(&e), "cudaEventCreate");
      events.push_back(e);
    }
    check(cudaEventRecord(events[used], static_cast<cudaStream_t>(ctx.stream().handle())), "cudaEventRecord");
    return used++;
  }
  ~Impl() {
    for (cudaEvent_t e : events) cudaEventDestroy(e);
  }
};

OpProfiler::OpProfiler() : impl_(std::make_unique<Impl>()) {}
OpProfiler::~OpProfiler() = default;

void OpProfiler::begin(const Context& ctx, const char* op) {
  if (ctx.device().is_cpu()) return;
  const size_t start = impl_->record(ctx);
  impl_->open.push_back(impl_->spans.size());
  impl_->spans.push_back({op, start, start});
}

void OpProfiler::end(const Context& ctx) {
  if (ctx.device().is_cpu() || impl_->open.empty()) return;
  impl_->spans[impl_->open.back()].stop = impl_->record(ctx);
  impl_->open.pop_back();
}

std::vector<OpProfiler::Entry> OpProfiler::summary() const {
  std::map<std::string, Entry> by_op;
  for (const auto& s : impl_->spans) {
    if (s.stop == s.start) continue;  // still open
    check(cudaEventSynchronize(impl_->events[s.stop]), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, impl_->events[s.start], impl_->events[s.stop]), "cudaEventElapsedTime");
    Entry& e = by_op[s.op];
    e.op = s.op;
    ++e.calls;
    e.ms += ms;
  }
  std::vector<Entry> out;
  for (auto& [name, e] : by_op) out.push_back(e);
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.ms > b.ms; });
  return out;
}

void OpProfiler::clear() {
  impl_->used = 0;
  impl_->spans.clear();
  impl_->open.clear();
}

#else  // no CUDA: nothing to time (CPU contexts ignore the profiler)

struct OpProfiler::Impl {};
OpProfiler::OpProfiler() : impl_(std::make_unique<Impl>()) {}
OpProfiler::~OpProfiler() = default;
void OpProfiler::begin(const Context&, const char*) {}
void OpProfiler::end(const Context&) {}
std::vector<OpProfiler::Entry> OpProfiler::summary() const { return {}; }
void OpProfiler::clear() {}

#endif

}  // namespace steno::ops
