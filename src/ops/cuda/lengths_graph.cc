#include "lengths_graph.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <utility>

#include "kernels.h"
#include "resources.h"
#include "steno/core/error.h"

namespace steno::ops::cuda {
namespace {

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    cudaGetLastError();
    fail(ErrorCode::kInternal, "{}: {}", what, cudaGetErrorString(err));
  }
}

}  // namespace

Tensor LengthsCaptureState::slot(const std::vector<int64_t>& lengths) {
  const int64_t n = static_cast<int64_t>(lengths.size());
  for (const auto& [vec, first] : given)
    if (vec == lengths) return buffer.narrow0(first * batch, (first + n / batch) * batch);
  if (n == 0 || n % batch != 0)
    fail(ErrorCode::kUnimplemented, "graph capture: an op was given {} lengths, not a multiple of the batch of {}", n,
         batch);
  const int64_t first = static_cast<int64_t>(pieces.size());
  if (first + n / batch > kMaxPieces)
    fail(ErrorCode::kUnimplemented, "graph capture: the ops took more than {} length vectors", kMaxPieces);
  for (int64_t at = 0; at < n; at += batch) {
    const std::vector<int64_t> piece(lengths.begin() + at, lengths.begin() + at + batch);
    const auto it = std::find(params->begin(), params->end(), piece);
    if (it == params->end())
      fail(ErrorCode::kUnimplemented, "graph capture: an op was given lengths that are not a graph parameter");
    pieces.push_back(static_cast<int>(it - params->begin()));
  }
  given.emplace_back(lengths, first);
  return buffer.narrow0(first * batch, (first + n / batch) * batch);
}

LengthsGraph LengthsGraph::capture(Context& ctx, const std::vector<std::vector<int64_t>>& params,
                                   const std::function<void()>& record) {
  STENO_CHECK(!params.empty(), "graph capture: no length parameters");
  const int64_t batch = static_cast<int64_t>(params.front().size());
  for (size_t i = 0; i < params.size(); ++i) {
    STENO_CHECK(static_cast<int64_t>(params[i].size()) == batch && batch > 0,
                "graph capture: length parameters of {} and {} clips", params[i].size(), batch);
    for (size_t j = 0; j < i; ++j)
      if (params[i] == params[j])
        fail(ErrorCode::kUnimplemented, "graph capture: length parameters {} and {} are equal", j, i);
  }
  CudaResources& res = ctx.cuda_resources();
  STENO_CHECK(res.capture == nullptr, "graph capture: one is already running on this context");
  LengthsGraph g;
  g.batch_ = batch;
  g.num_params_ = params.size();
  g.lengths_ = ctx.scratch({LengthsCaptureState::kMaxPieces * batch}, DType::kI32);

  LengthsCaptureState state;
  state.params = &params;
  state.batch = batch;
  state.buffer = g.lengths_;
  const cudaStream_t s = stream_of(ctx);
  check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  res.capture = &state;
  cudaGraph_t graph = nullptr;
  try {
    record();
  } catch (...) {
    res.capture = nullptr;
    cudaStreamEndCapture(s, &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();
    throw;
  }
  res.capture = nullptr;
  check(cudaStreamEndCapture(s, &graph), "cudaStreamEndCapture (an op queued something a graph cannot hold)");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  check(err, "cudaGraphInstantiate");
  g.exec_ = exec;
  g.pieces_ = std::move(state.pieces);
  return g;
}

LengthsGraph::LengthsGraph(LengthsGraph&& other) noexcept { *this = std::move(other); }

LengthsGraph& LengthsGraph::operator=(LengthsGraph&& other) noexcept {
  if (this != &other) {
    reset();
    batch_ = other.batch_;
    num_params_ = other.num_params_;
    pieces_ = std::move(other.pieces_);
    lengths_ = std::move(other.lengths_);
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

LengthsGraph::~LengthsGraph() { reset(); }

void LengthsGraph::reset() {
  // The owner destroys a graph only once no launch of it is queued (EncoderGraphs synchronizes first).
  if (exec_ != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  exec_ = nullptr;
}

void LengthsGraph::replay(Context& ctx, const std::vector<std::vector<int64_t>>& params) {
  STENO_CHECK(exec_ != nullptr, "graph replay: nothing was captured");
  STENO_CHECK(params.size() == num_params_, "graph replay: {} length parameters for a graph of {}", params.size(),
              num_params_);
  for (const auto& p : params)
    STENO_CHECK(static_cast<int64_t>(p.size()) == batch_, "graph replay: {} lengths for a graph of {} clips",
                p.size(), batch_);
  if (!pieces_.empty()) {
    std::vector<int32_t> host;
    host.reserve(pieces_.size() * static_cast<size_t>(batch_));
    for (int piece : pieces_)
      for (int64_t v : params[static_cast<size_t>(piece)]) host.push_back(static_cast<int32_t>(v));
    // Pageable: staged before the call returns, so `host` may go at once; ordered before the launch below.
    steno::cuda::memcpy_async(lengths_.raw(), host.data(), host.size() * sizeof(int32_t), ctx.stream());
  }
  check(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), stream_of(ctx)), "cudaGraphLaunch");
}

}  // namespace steno::ops::cuda
