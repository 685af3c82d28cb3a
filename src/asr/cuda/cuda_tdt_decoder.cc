#include "cuda_tdt_decoder.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

#include "steno/core/cuda.h"
#include "steno/core/logging.h"
#include "steno/ops/copy.h"
#include "steno/ops/gemm.h"
#include "tdt_kernels.h"
#include "tdt_persistent.h"

namespace steno::asr {

namespace kern = cuda_tdt;  // the launchers (tdt_kernels.h)

namespace {

void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    cudaGetLastError();
    fail(err == cudaErrorMemoryAllocation ? ErrorCode::kResourceExhausted : ErrorCode::kInternal,
         "CUDA TDT decoder: {} failed: {} ({})", what, cudaGetErrorString(err), cudaGetErrorName(err));
  }
}

cudaStream_t stream_of(const ops::Context& ctx) { return static_cast<cudaStream_t>(ctx.stream().handle()); }

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

std::atomic<uint64_t> next_decoder_id{1};

// An instantiated graph, destroyed with its owner.
struct GraphExec {
  cudaGraphExec_t exec = nullptr;
  GraphExec() = default;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  ~GraphExec() {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
  }
  explicit operator bool() const { return exec != nullptr; }
};

// A graph under construction, destroyed at scope exit (instantiation copies it).
struct GraphHolder {
  cudaGraph_t graph = nullptr;
  ~GraphHolder() {
    if (graph != nullptr) cudaGraphDestroy(graph);
  }
};

}  // namespace

namespace detail {

// Where the small per-bucket state lives in one device block. The host uploads [params | len] before each
// decode and downloads [ctrl | count | steps] after it, one copy each way.
struct TdtBlockLayout {
  explicit TdtBlockLayout(int64_t rows) {
    const size_t r = static_cast<size_t>(rows) * sizeof(int32_t);
    len = align_up(sizeof(kern::TdtCallParams), 16);
    ctrl = align_up(len + r, 16);
    count = ctrl + sizeof(kern::TdtControl);
    steps = count + r;
    t = steps + r;
    last_ts = t + r;
    sym = last_ts + r;
    active = sym + r;
    emitted = active + r;
    total = emitted + r;
  }
  size_t upload_bytes() const { return ctrl; }
  size_t download_bytes() const { return t - ctrl; }
  size_t len, ctrl, count, steps, t, last_ts, sym, active, emitted, total;
};

struct TdtBucket {
  explicit TdtBucket(int64_t r) : rows(r), layout(r) {}

  int64_t rows;
  TdtBlockLayout layout;
  Tensor block;    // device bytes, as layout says
  Tensor staging;  // pinned host bytes: [upload | download]
  kern::TdtDims dims;
  kern::TdtRows row_state{};
  kern::TdtCallParams* params = nullptr;  // device
  kern::TdtControl* ctrl = nullptr;       // device
  // The step's activations, [rows, ...] each, in the compute dtype unless noted.
  Tensor pred_proj;       // f32 [rows, J]: joint.pred(g) + bias, kept across steps
  Tensor hidden, logits;  // [rows, J], [rows, n_out]
  std::vector<Tensor> xh; // per layer [rows, In + H]: the layer's input | its h state (the GEMM's operand)
  std::vector<Tensor> c;  // per layer f32 [rows, H]
  Tensor gates;           // [rows, 4H]
  Tensor h_last;          // [rows, H]: the prediction network's output
  Tensor g_new;           // [rows, J]: joint.pred(h_last) without bias
  GraphExec while_graph, unrolled_graph;
  std::optional<TdtPersistent::Buffers> persistent;  // made at the bucket's first persistent decode

  uint8_t* upload_host() { return static_cast<uint8_t*>(staging.raw()); }
  uint8_t* download_host() { return static_cast<uint8_t*>(staging.raw()) + layout.upload_bytes(); }
};

}  // namespace detail

// ---- Workspace -------------------------------------------------------------------------------------------

struct CudaTdtDecoder::Workspace::State {
  uint64_t owner = 0;  // the decoder's id_ (0: none)
  std::optional<ops::Context> ctx;  // keeps the bound context's stream and cuBLASLt workspace alive
  bool while_supported = true;
  int persistent_grid = 0;    // co-resident blocks found on this context (0: not yet, -1: no cooperative launch)
  int persistent_blocks = 0;  // Workspace::persistent_blocks()
  bool persistent_dedicated = false;
  std::map<int64_t, std::unique_ptr<detail::TdtBucket>> buckets;
};

CudaTdtDecoder::Workspace::Workspace() : state_(std::make_unique<State>()) {}
CudaTdtDecoder::Workspace::~Workspace() {
  // Graphs and buffers may still be in use by queued work of the bound stream.
  if (state_ && state_->ctx) cudaStreamSynchronize(stream_of(*state_->ctx));
}
CudaTdtDecoder::Workspace::Workspace(Workspace&&) noexcept = default;
CudaTdtDecoder::Workspace& CudaTdtDecoder::Workspace::operator=(Workspace&&) noexcept = default;

int CudaTdtDecoder::Workspace::num_buckets() const { return static_cast<int>(state_->buckets.size()); }

int CudaTdtDecoder::Workspace::num_graphs() const {
  int n = 0;
  for (const auto& [rows, bk] : state_->buckets)
    n += static_cast<int>(static_cast<bool>(bk->while_graph)) + static_cast<int>(static_cast<bool>(bk->unrolled_graph));
  return n;
}

bool CudaTdtDecoder::Workspace::while_supported() const { return state_->while_supported; }
int CudaTdtDecoder::Workspace::persistent_blocks() const { return state_->persistent_blocks; }
bool CudaTdtDecoder::Workspace::persistent_dedicated() const { return state_->persistent_dedicated; }

void CudaTdtDecoder::Workspace::clear() {
  if (state_->ctx) state_->ctx->synchronize();
  state_->buckets.clear();
}

const char* tdt_loop_name(TdtLoop loop) {
  switch (loop) {
    case TdtLoop::kPersistent: return "persistent";
    case TdtLoop::kGraphWhile: return "graph-while";
    case TdtLoop::kGraphUnrolled: return "graph-unrolled";
    case TdtLoop::kEager: return "eager";
  }
  return "?";
}

// ---- weights ---------------------------------------------------------------------------------------------

CudaTdtDecoder::CudaTdtDecoder(const TdtDecoder& cpu, ops::Context& ctx, DType dtype)
    : id_(next_decoder_id++), device_(ctx.device()), dtype_(dtype) {
  STENO_CHECK(!device_.is_cpu(), "CUDA TDT decoder: the context runs on {}, not a CUDA device", device_.str());
  STENO_CHECK(dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16,
              "CUDA TDT decoder: compute dtype must be f32, f16 or bf16, got {}", dtype_name(dtype));
  const TdtDecoder::Parameters p = cpu.parameters();
  const int layers = static_cast<int>(p.w_ih.size());
  STENO_CHECK(layers >= 1, "CUDA TDT decoder: the prediction network has no LSTM layer");
  STENO_CHECK(!p.durations.empty() && p.durations.size() <= static_cast<size_t>(kern::kMaxDurations),
              "CUDA TDT decoder: {} durations (1 to {} supported)", p.durations.size(), kern::kMaxDurations);
  vocab_size_ = p.vocab_size;
  max_symbols_ = p.max_symbols;
  durations_ = p.durations;
  hidden_ = static_cast<int>(p.w_hh[0].dim(1));
  embed_dim_ = static_cast<int>(p.embed.dim(1));
  joint_hidden_ = static_cast<int>(p.enc_w.dim(0));
  d_model_ = p.enc_w.dim(1);
  n_out_ = static_cast<int>(p.out_w.dim(0));
  STENO_CHECK(p.embed.dim(0) == vocab_size_ + 1 && p.w_ih[0].dim(1) == embed_dim_ && p.pred_w.dim(1) == hidden_ &&
                  p.pred_w.dim(0) == joint_hidden_ && p.out_w.dim(1) == joint_hidden_ &&
                  n_out_ == vocab_size_ + 1 + static_cast<int>(durations_.size()),
              "CUDA TDT decoder: inconsistent shapes (embed {}, pred {}, joint out {})", shape_str(p.embed.shape()),
              shape_str(p.pred_w.shape()), shape_str(p.out_w.shape()));

  steno::cuda::set_device(device_.index);
  Allocator& alloc = steno::cuda::weight_allocator(device_.index);
  auto put = [&](const Tensor& host, DType t) { return ops::place(ctx, host, t, alloc); };
  auto put_bias = [&](const Tensor& host, int64_t n) {
    return host.defined() ? put(host, DType::kF32) : put(Tensor::zeros({n}), DType::kF32);
  };
  embed_ = put(p.embed, dtype);
  for (int l = 0; l < layers; ++l) {
    // [w_ih | w_hh] row by row: one GEMM over the concatenated [x | h] per layer and step.
    const int64_t n4 = p.w_ih[l].dim(0), in = p.w_ih[l].dim(1), hid = p.w_hh[l].dim(1);
    STENO_CHECK(n4 == 4 * hidden_ && hid == hidden_ && p.w_hh[l].dim(0) == n4 && (l == 0 || in == hidden_),
                "CUDA TDT decoder: LSTM layer {} has w_ih {} and w_hh {} for hidden size {}", l,
                shape_str(p.w_ih[l].shape()), shape_str(p.w_hh[l].shape()), hidden_);
    Tensor cat = Tensor::empty({n4, in + hid});
    for (int64_t r = 0; r < n4; ++r) {
      std::copy_n(p.w_ih[l].data<float>() + r * in, in, cat.data<float>() + r * (in + hid));
      std::copy_n(p.w_hh[l].data<float>() + r * hid, hid, cat.data<float>() + r * (in + hid) + in);
    }
    w_cat_.push_back(put(cat, dtype));
    Tensor bias = Tensor::zeros({n4});
    for (const Tensor* b : {&p.b_ih[l], &p.b_hh[l]}) {
      if (!b->defined()) continue;
      for (int64_t j = 0; j < n4; ++j) bias.data<float>()[j] += b->data<float>()[j];
    }
    lstm_bias_.push_back(put(bias, DType::kF32));
  }
  enc_w_ = put(p.enc_w, dtype);
  pred_w_ = put(p.pred_w, dtype);
  out_w_ = put(p.out_w, dtype);
  enc_b_ = put_bias(p.enc_b, joint_hidden_);
  pred_b_ = put_bias(p.pred_b, joint_hidden_);
  out_b_ = put_bias(p.out_b, n_out_);
  persistent_ = std::make_unique<detail::TdtPersistent>(p, ctx, dtype);
  if (!persistent_->usable())
    spdlog::info("CUDA TDT decoder: no persistent kernel for this model ({}); decoding step by step",
                 persistent_->why_not());
}

CudaTdtDecoder::~CudaTdtDecoder() = default;

bool CudaTdtDecoder::persistent_can_dedicate(int grid) const {
  return persistent_->usable() && persistent_->roles(grid).lstm_blocks > 0;
}

int64_t CudaTdtDecoder::bucket_size(int64_t batch) {
  int64_t b = 1;
  while (b < batch) b *= 2;
  return b;
}

// ---- buckets ---------------------------------------------------------------------------------------------

CudaTdtDecoder::Bucket& CudaTdtDecoder::bucket(ops::Context& ctx, Workspace& ws, int64_t rows) const {
  Workspace::State& st = *ws.state_;
  // A workspace serves one decoder and one context: its graphs hold their pointers. Rebinding starts over.
  if (st.owner != id_ || !st.ctx || &st.ctx->cuda_resources() != &ctx.cuda_resources()) {
    if (st.ctx) st.ctx->synchronize();
    st.buckets.clear();
    st.owner = id_;
    st.ctx.emplace(ctx);
    st.while_supported = true;
    st.persistent_grid = 0;
    st.persistent_blocks = 0;
  }
  auto& slot = st.buckets[rows];
  if (slot) return *slot;

  auto bk = std::make_unique<Bucket>(rows);
  const Device dev = device_;
  Allocator& alloc = steno::cuda::weight_allocator(dev.index);
  auto make = [&](const Shape& shape, DType t) {
    Tensor x = Tensor::empty(shape, t, dev, &alloc);
    steno::cuda::memset_async(x.raw(), 0, x.nbytes(), ctx.stream());  // no garbage (NaN) even in padding rows
    return x;
  };
  bk->block = make({static_cast<int64_t>(bk->layout.total)}, DType::kU8);
  bk->staging = Tensor::empty({static_cast<int64_t>(bk->layout.upload_bytes() + bk->layout.download_bytes())},
                              DType::kU8, Device::cpu(), &steno::cuda::default_pinned_allocator());
  uint8_t* base = static_cast<uint8_t*>(bk->block.raw());
  const auto& L = bk->layout;
  bk->params = reinterpret_cast<kern::TdtCallParams*>(base);
  bk->ctrl = reinterpret_cast<kern::TdtControl*>(base + L.ctrl);
  auto ints = [&](size_t offset) { return reinterpret_cast<int32_t*>(base + offset); };
  bk->row_state = {ints(L.len),   ints(L.t),     ints(L.last_ts), ints(L.sym),
                   ints(L.count), ints(L.steps), ints(L.active),  ints(L.emitted)};

  kern::TdtDims& d = bk->dims;
  d.rows = static_cast<int32_t>(rows);
  d.joint = joint_hidden_;
  d.hidden = hidden_;
  d.embed_dim = embed_dim_;
  d.blank = vocab_size_;
  d.n_out = n_out_;
  d.max_symbols = max_symbols_;
  d.n_durations = static_cast<int32_t>(durations_.size());
  std::copy(durations_.begin(), durations_.end(), d.durations);

  bk->pred_proj = make({rows, joint_hidden_}, DType::kF32);
  bk->hidden = make({rows, joint_hidden_}, dtype_);
  bk->logits = make({rows, n_out_}, dtype_);
  for (const Tensor& w : w_cat_) {
    bk->xh.push_back(make({rows, w.dim(1)}, dtype_));
    bk->c.push_back(make({rows, hidden_}, DType::kF32));
  }
  bk->gates = make({rows, 4 * static_cast<int64_t>(hidden_)}, dtype_);
  bk->h_last = make({rows, hidden_}, dtype_);
  bk->g_new = make({rows, joint_hidden_}, dtype_);
  // Each GEMM shape of the step once, eagerly: ops::linear picks its cuBLASLt algorithm on the first call of a
  // shape, which gemm_cuda.cc asks to happen outside a capture. The outputs are scratch until the loop starts.
  for (size_t l = 0; l < w_cat_.size(); ++l) ops::linear(ctx, bk->xh[l], w_cat_[l], Tensor(), bk->gates);
  ops::linear(ctx, bk->h_last, pred_w_, Tensor(), bk->g_new);
  ops::linear(ctx, bk->hidden, out_w_, Tensor(), bk->logits);
  slot = std::move(bk);
  return *slot;
}

// ---- the recorded sequences ------------------------------------------------------------------------------

void CudaTdtDecoder::record_prediction(ops::Context& ctx, Bucket& bk) const {
  const cudaStream_t s = stream_of(ctx);
  const int layers = static_cast<int>(w_cat_.size());
  for (int l = 0; l < layers; ++l) {
    ops::linear(ctx, bk.xh[l], w_cat_[l], Tensor(), bk.gates);
    const int32_t in_dim = static_cast<int32_t>(w_cat_[l].dim(1)) - hidden_;
    const bool last = l + 1 == layers;
    Tensor& next = last ? bk.h_last : bk.xh[l + 1];  // the next layer's input x sits at the start of its xh
    kern::launch_tdt_lstm_pointwise(detail::kernel_dt(dtype_), bk.dims, bk.row_state, bk.gates.raw(),
                                    lstm_bias_[l].data<float>(), bk.c[l].data<float>(), bk.xh[l].raw(), in_dim,
                                    next.raw(), static_cast<int32_t>(next.dim(1)), s);
  }
  ops::linear(ctx, bk.h_last, pred_w_, Tensor(), bk.g_new);
}

void CudaTdtDecoder::record_step(ops::Context& ctx, Bucket& bk, uint64_t handle, bool set_handle) const {
  const cudaStream_t s = stream_of(ctx);
  const kern::Dt dt = detail::kernel_dt(dtype_);
  kern::launch_tdt_joint_hidden(dt, bk.dims, bk.params, bk.row_state, bk.g_new.raw(), pred_b_.data<float>(),
                                enc_b_.data<float>(), bk.pred_proj.data<float>(), bk.hidden.raw(), s);
  ops::linear(ctx, bk.hidden, out_w_, Tensor(), bk.logits);
  kern::launch_tdt_update(dt, bk.dims, bk.params, bk.ctrl, bk.row_state, bk.logits.raw(), out_b_.data<float>(),
                          embed_.raw(), bk.xh[0].raw(), static_cast<int32_t>(bk.xh[0].dim(1)),
                          static_cast<cudaGraphConditionalHandle>(handle), set_handle, s);
  record_prediction(ctx, bk);
}

void CudaTdtDecoder::record_start(ops::Context& ctx, Bucket& bk) const {
  for (size_t l = 0; l < bk.xh.size(); ++l) {  // zero LSTM state (h lives in xh)
    steno::cuda::memset_async(bk.xh[l].raw(), 0, bk.xh[l].nbytes(), ctx.stream());
    steno::cuda::memset_async(bk.c[l].raw(), 0, bk.c[l].nbytes(), ctx.stream());
  }
  kern::launch_tdt_init(detail::kernel_dt(dtype_), bk.dims, bk.ctrl, bk.row_state, embed_.raw(), bk.xh[0].raw(),
                        static_cast<int32_t>(bk.xh[0].dim(1)), stream_of(ctx));
  record_prediction(ctx, bk);  // NeMo's SOS step: every row's LSTM on embed[blank] from zero state
}

// ---- graphs ----------------------------------------------------------------------------------------------

namespace {

// Captures what `record` queues on `s` into `into` (a conditional node's body) or, when null, into a new graph
// returned through `out`. Thread-local mode: other threads (lanes) may allocate while this one captures. If
// `record` throws, the capture is ended first so that the stream is usable again.
template <typename F>
void capture(cudaStream_t s, cudaGraph_t into, GraphHolder* out, F&& record) {
  if (into != nullptr)
    check_cuda(cudaStreamBeginCaptureToGraph(s, into, nullptr, nullptr, 0, cudaStreamCaptureModeThreadLocal),
               "cudaStreamBeginCaptureToGraph");
  else
    check_cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  cudaGraph_t graph = nullptr;
  try {
    record();
  } catch (...) {
    cudaStreamEndCapture(s, &graph);
    if (into == nullptr && graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();
    throw;
  }
  const cudaError_t err = cudaStreamEndCapture(s, &graph);
  if (into == nullptr) out->graph = graph;
  check_cuda(err, "cudaStreamEndCapture (a queued operation cannot be captured)");
}

}  // namespace

bool CudaTdtDecoder::capture_while(ops::Context& ctx, Bucket& bk) const {
  GraphHolder g;
  check_cuda(cudaGraphCreate(&g.graph, 0), "cudaGraphCreate");
  // The condition starts at 1 on every launch, so the body runs at least once; a step with no active row
  // changes nothing, and its decision kernel then sets the condition to 0.
  cudaGraphConditionalHandle handle = 0;
  cudaError_t err = cudaGraphConditionalHandleCreate(&handle, g.graph, 1, cudaGraphCondAssignDefault);
  cudaGraphNodeParams node{};
  node.type = cudaGraphNodeTypeConditional;
  node.conditional.handle = handle;
  node.conditional.type = cudaGraphCondTypeWhile;
  node.conditional.size = 1;
  cudaGraphNode_t while_node = nullptr;
  if (err == cudaSuccess) err = cudaGraphAddNode(&while_node, g.graph, nullptr, nullptr, 0, &node);
  if (err != cudaSuccess) {
    cudaGetLastError();
    spdlog::warn("CUDA TDT decoder: conditional graph nodes unavailable ({}); using unrolled graphs",
                 cudaGetErrorString(err));
    return false;
  }
  capture(stream_of(ctx), node.conditional.phGraph_out[0], nullptr,
          [&] { record_step(ctx, bk, static_cast<uint64_t>(handle), true); });
  err = cudaGraphInstantiate(&bk.while_graph.exec, g.graph, 0);
  if (err != cudaSuccess) {
    cudaGetLastError();
    bk.while_graph.exec = nullptr;
    spdlog::warn("CUDA TDT decoder: cannot instantiate the while-loop graph ({}); using unrolled graphs",
                 cudaGetErrorString(err));
    return false;
  }
  return true;
}

void CudaTdtDecoder::capture_unrolled(ops::Context& ctx, Bucket& bk) const {
  GraphHolder g;
  capture(stream_of(ctx), nullptr, &g, [&] {
    for (int i = 0; i < kUnrolledSteps; ++i) record_step(ctx, bk, 0, false);
  });
  check_cuda(cudaGraphInstantiate(&bk.unrolled_graph.exec, g.graph, 0), "cudaGraphInstantiate (unrolled steps)");
}

// ---- decoding --------------------------------------------------------------------------------------------

void CudaTdtDecoder::run_loop(ops::Context& ctx, Workspace& ws, Bucket& bk, TdtLoop loop) const {
  const cudaStream_t s = stream_of(ctx);
  if (loop == TdtLoop::kGraphWhile && ws.state_->while_supported) {
    if (!bk.while_graph && !capture_while(ctx, bk)) ws.state_->while_supported = false;
    if (bk.while_graph) {
      check_cuda(cudaGraphLaunch(bk.while_graph.exec, s), "cudaGraphLaunch (while loop)");
      return;
    }
  }
  if (loop != TdtLoop::kEager && !bk.unrolled_graph) capture_unrolled(ctx, bk);
  // Host-driven: kUnrolledSteps steps at a time, then a look at the pinned copy of the loop flags. Steps past
  // the end are no-ops (every row inactive), so overshooting by a few is harmless.
  auto* flags = reinterpret_cast<kern::TdtControl*>(bk.download_host());
  for (;;) {
    if (loop == TdtLoop::kEager) {
      for (int i = 0; i < kUnrolledSteps; ++i) record_step(ctx, bk, 0, false);
    } else {
      check_cuda(cudaGraphLaunch(bk.unrolled_graph.exec, s), "cudaGraphLaunch (unrolled steps)");
    }
    steno::cuda::memcpy_async(flags, bk.ctrl, sizeof(kern::TdtControl), ctx.stream());
    ctx.synchronize();
    if (flags->any_active == 0) return;  // done, or stopped at max_steps (flags->overflow says which)
  }
}

TdtLoop default_tdt_loop() {
  static const TdtLoop loop = [] {
    const char* v = std::getenv("STENO_TDT_LOOP");
    if (v == nullptr || *v == '\0') return TdtLoop::kPersistent;
    for (TdtLoop l : {TdtLoop::kPersistent, TdtLoop::kGraphWhile, TdtLoop::kGraphUnrolled, TdtLoop::kEager})
      if (std::strcmp(v, tdt_loop_name(l)) == 0) return l;
    fail(ErrorCode::kInvalidArgument, "STENO_TDT_LOOP={}: expected persistent, graph-while, graph-unrolled or eager",
         v);
  }();
  return loop;
}

std::vector<Hypothesis> CudaTdtDecoder::decode(ops::Context& ctx, Workspace& ws, const Tensor& encoded,
                                               const std::vector<int64_t>& lengths, DecodeStats* stats,
                                               bool use_graphs) const {
  CudaDecodeOptions options;
  options.loop = use_graphs ? default_tdt_loop() : TdtLoop::kEager;
  return decode(ctx, ws, encoded, lengths, options, stats);
}

std::vector<Hypothesis> CudaTdtDecoder::decode(ops::Context& ctx, Workspace& ws, const Tensor& encoded,
                                               const std::vector<int64_t>& lengths, const CudaDecodeOptions& options,
                                               DecodeStats* stats) const {
  if (options.keep_alignments)
    fail(ErrorCode::kUnimplemented,
         "TDT decode: alignments (per-step joint outputs) are recorded by the CPU decoder only; decode on a CPU "
         "context to get them");
  STENO_CHECK(ctx.device() == device_, "CUDA TDT decoder: weights on {} but the context runs on {}", device_.str(),
              ctx.device().str());
  STENO_CHECK(encoded.defined() && encoded.rank() == 3 && encoded.dim(2) == d_model_ &&
                  static_cast<int64_t>(lengths.size()) == encoded.dim(0),
              "CUDA TDT decode: encoded must be [B, T, {}] with B lengths, got {} and {} lengths", d_model_,
              encoded.defined() ? shape_str(encoded.shape()) : "undefined", lengths.size());
  STENO_CHECK(encoded.device() == device_ && encoded.dtype() == dtype_,
              "CUDA TDT decode: encoded must be {} on {}, got {}", dtype_name(dtype_), device_.str(), encoded.str());
  const int64_t batch = encoded.dim(0), frames = encoded.dim(1);
  int64_t longest = 0;
  for (size_t b = 0; b < lengths.size(); ++b) {
    STENO_CHECK(lengths[b] >= 0 && lengths[b] <= frames, "CUDA TDT decode: lengths[{}] = {} is outside [0, {}]", b,
                lengths[b], frames);
    longest = std::max(longest, lengths[b]);
  }
  std::vector<Hypothesis> hyps(static_cast<size_t>(batch));
  if (batch == 0) return hyps;
  // The CPU decoder counts one SOS prediction per row even when nothing is decoded.
  if (stats) stats->lstm_updates += batch;
  if (longest == 0) return hyps;
  STENO_CHECK(frames <= (int64_t{1} << 30) / (max_symbols_ + 1), "CUDA TDT decode: {} frames is too many", frames);

  steno::cuda::set_device(device_.index);
  Bucket& bk = bucket(ctx, ws, bucket_size(batch));

  // joint.enc over every frame at once (bias added in f32 by the joint kernel).
  Tensor enc_proj = ctx.scratch({batch * frames, joint_hidden_}, dtype_);
  ops::linear(ctx, encoded.reshape({batch * frames, d_model_}), enc_w_, Tensor(), enc_proj);

  // Tokens per row are at most frames * max_symbols; real speech stays far below one per frame, so the first
  // pass records up to frames + 16 and a row that emits more makes the decode run again with the full bound.
  const int64_t full_cap = frames * max_symbols_;
  const int64_t first_cap = options.initial_token_capacity > 0 ? options.initial_token_capacity : frames + 16;
  int64_t cap = std::min(full_cap, first_cap);
  const int32_t max_steps = static_cast<int32_t>(frames * (max_symbols_ + 1) + 1);
  const auto& L = bk.layout;
  for (;;) {
    Tensor out = ctx.scratch({batch, cap, 3}, DType::kI32);
    kern::TdtCallParams params;
    params.enc_proj = enc_proj.raw();
    params.out = out.data<int32_t>();
    params.frames = static_cast<int32_t>(frames);
    params.out_cap = static_cast<int32_t>(cap);
    params.max_steps = max_steps;
    params.batch = static_cast<int32_t>(batch);
    uint8_t* up = bk.upload_host();
    std::memset(up, 0, L.upload_bytes());
    std::memcpy(up, &params, sizeof params);
    auto* len = reinterpret_cast<int32_t*>(up + L.len);
    for (int64_t b = 0; b < batch; ++b) len[b] = static_cast<int32_t>(lengths[b]);  // padding rows stay 0
    steno::cuda::memcpy_async(bk.block.raw(), up, L.upload_bytes(), ctx.stream());

    bool done = false;
    if (options.loop == TdtLoop::kPersistent && persistent_->usable() && persistent_->fits(bk.rows) &&
        bk.rows >= options.persistent_min_rows && bk.rows <= options.persistent_max_rows &&
        ws.state_->persistent_grid >= 0) {
      if (!bk.persistent) bk.persistent = persistent_->make_buffers(ctx, bk.rows, bk.row_state, bk.ctrl);
      // A grid asked for by the caller is tried as is and not remembered as the context's bound.
      int& bound = ws.state_->persistent_grid;
      int grid = options.persistent_blocks > 0 ? options.persistent_blocks : bound;
      const bool dedicated = bk.rows <= options.persistent_dedicated_max_rows;
      const int launched = persistent_->launch(ctx, bk.dims, *bk.persistent, bk.params, grid, dedicated);
      if (launched == 0)
        bound = -1;
      else if (options.persistent_blocks == 0)
        bound = grid;
      ws.state_->persistent_blocks = launched > 0 ? launched : -1;
      ws.state_->persistent_dedicated = dedicated && launched > 0 && persistent_->roles(launched).lstm_blocks > 0;
      done = launched > 0;
    }
    if (!done) {
      record_start(ctx, bk);
      run_loop(ctx, ws, bk, options.loop == TdtLoop::kPersistent ? TdtLoop::kGraphWhile : options.loop);
    }

    uint8_t* down = bk.download_host();
    steno::cuda::memcpy_async(down, static_cast<uint8_t*>(bk.block.raw()) + L.ctrl, L.download_bytes(), ctx.stream());
    ctx.synchronize();
    if (done)
      persistent_->report_trace(ctx, *bk.persistent, ws.state_->persistent_blocks, ws.state_->persistent_dedicated);
    kern::TdtControl ctrl;
    std::memcpy(&ctrl, down, sizeof ctrl);
    const auto* count = reinterpret_cast<const int32_t*>(down + (L.count - L.ctrl));
    const auto* steps = reinterpret_cast<const int32_t*>(down + (L.steps - L.ctrl));
    if (ctrl.overflow != 0)
      fail(ErrorCode::kInternal, "CUDA TDT decode: the loop did not finish within {} steps", max_steps);
    int64_t most = 0;
    for (int64_t b = 0; b < batch; ++b) most = std::max<int64_t>(most, count[b]);
    STENO_ASSERT(most <= full_cap);
    if (most > cap) {
      cap = full_cap;
      continue;
    }

    // The tokens: one 2-D copy of the first `most` entries of each row.
    Tensor host = Tensor::empty({batch, std::max<int64_t>(most, 1), 3}, DType::kI32, Device::cpu(),
                                &steno::cuda::default_pinned_allocator());
    if (most > 0) {
      const size_t row_bytes = static_cast<size_t>(most) * 3 * sizeof(int32_t);
      check_cuda(cudaMemcpy2DAsync(host.raw(), row_bytes, out.raw(), static_cast<size_t>(cap) * 3 * sizeof(int32_t),
                                   row_bytes, static_cast<size_t>(batch), cudaMemcpyDeviceToHost, stream_of(ctx)),
                 "cudaMemcpy2DAsync (tokens)");
      ctx.synchronize();
    }
    const int32_t* h = host.data<int32_t>();
    for (int64_t b = 0; b < batch; ++b) {
      Hypothesis& hyp = hyps[b];
      const int n = count[b];
      hyp.tokens.resize(n);
      hyp.timestamps.resize(n);
      hyp.durations.resize(n);
      for (int i = 0; i < n; ++i) {
        const int32_t* o = h + (b * most + i) * 3;
        hyp.tokens[i] = o[0];
        hyp.timestamps[i] = o[1];
        hyp.durations[i] = o[2];
      }
      if (stats) {
        stats->steps += steps[b];
        stats->lstm_updates += n;
      }
    }
    return hyps;
  }
}

}  // namespace steno::asr
