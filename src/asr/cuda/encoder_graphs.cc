#include "encoder_graphs.h"

#include <cuda_runtime.h>

#include <cstdlib>
#include <map>
#include <string>

#include "check_cuda.h"
#include "lengths_graph.h"  // src/ops/cuda
#include "steno/core/cuda.h"
#include "steno/core/error.h"
#include "steno/core/logging.h"
#include "steno/ops/copy.h"

namespace steno::asr {

EncoderGraphOptions default_encoder_graph_options() {
  EncoderGraphOptions o;
  o.enabled = false;
  if (const char* v = std::getenv("STENO_ENCODER_GRAPHS")) {
    const std::string s = v;
    STENO_CHECK(s == "0" || s == "1", "STENO_ENCODER_GRAPHS must be 0 or 1, got '{}'", s);
    o.enabled = s == "1";
  }
  return o;
}

struct EncoderGraphs::Bucket {
  Tensor input;   // [batch, frames, feat_in]: the graph reads its features here
  Tensor output;  // [batch, encoder frames, d_model]: and writes its output here
  std::optional<ops::cuda::LengthsGraph> graph;
  int64_t runs = 0;
  bool uncapturable = false;  // a capture failed: this bucket runs eagerly
  uint64_t last_use = 0;
};

struct EncoderGraphs::State {
  // The context the buckets were allocated and captured on (a copy keeps its stream and pool alive; declared
  // first, so destroyed after the buckets) and the encoder whose weights the graphs read.
  std::optional<ops::Context> ctx;
  const void* resources = nullptr;
  const ConformerEncoder* encoder = nullptr;
  std::map<std::pair<int64_t, int64_t>, Bucket> buckets;  // (batch, frames)
  uint64_t clock = 0;
};

EncoderGraphs::EncoderGraphs(EncoderGraphOptions options)
    : options_(options), state_(std::make_unique<State>()) {}
EncoderGraphs::~EncoderGraphs() { clear(); }
EncoderGraphs::EncoderGraphs(EncoderGraphs&&) noexcept = default;
EncoderGraphs& EncoderGraphs::operator=(EncoderGraphs&&) noexcept = default;

size_t EncoderGraphs::num_graphs() const {
  size_t n = 0;
  if (state_)
    for (const auto& [_, b] : state_->buckets) n += b.graph.has_value();
  return n;
}

void EncoderGraphs::clear() {
  if (!state_) return;
  // An executable graph is destroyed only once no launch of it is queued.
  if (state_->ctx) state_->ctx->synchronize();
  state_->buckets.clear();
  state_->ctx.reset();
  state_->resources = nullptr;
  state_->encoder = nullptr;
}

EncoderGraphs::Bucket& EncoderGraphs::bucket(ops::Context& ctx, const ConformerEncoder& encoder, int64_t batch,
                                             int64_t frames) {
  State& st = *state_;
  if (st.resources != &ctx.cuda_resources() || st.encoder != &encoder) {
    clear();
    st.ctx.emplace(ctx);
    st.resources = &ctx.cuda_resources();
    st.encoder = &encoder;
  }
  const auto key = std::make_pair(batch, frames);
  auto it = st.buckets.find(key);
  if (it == st.buckets.end()) {
    if (st.buckets.size() >= options_.max_buckets && !st.buckets.empty()) {
      auto oldest = st.buckets.begin();
      for (auto b = st.buckets.begin(); b != st.buckets.end(); ++b)
        if (b->second.last_use < oldest->second.last_use) oldest = b;
      ctx.synchronize();  // its graph may still be queued
      st.buckets.erase(oldest);
    }
    Bucket b;
    const EncoderConfig& cfg = encoder.config();
    b.input = ctx.scratch({batch, frames, cfg.feat_in}, encoder.dtype());
    b.output = ctx.scratch({batch, encoder.output_length(frames), cfg.d_model}, encoder.dtype());
    it = st.buckets.emplace(key, std::move(b)).first;
  }
  it->second.last_use = ++st.clock;
  return it->second;
}

std::optional<EncoderOutput> EncoderGraphs::run(ops::Context& ctx, const ConformerEncoder& encoder,
                                                const Tensor& features, const std::vector<int64_t>& lengths) {
  const int64_t batch = features.dim(0), frames = features.dim(1);
  // A bucket pads the batch to its frames: only an encoder that masks padding gives the eager batch's answer.
  if (!options_.enabled || ctx.device().is_cpu() || !encoder.masks_padding() || batch == 0 ||
      batch > options_.max_batch || frames > options_.max_frames || options_.max_buckets == 0)
    return std::nullopt;
  STENO_CHECK(features.rank() == 3 && features.device() == ctx.device() && features.dtype() == encoder.dtype(),
              "encoder graphs: features {} for an encoder on {} in {}", features.str(), encoder.device().str(),
              dtype_name(encoder.dtype()));
  const int64_t step = std::max<int64_t>(options_.frame_step, 1);
  const int64_t padded = (frames + step - 1) / step * step;
  Bucket& b = bucket(ctx, encoder, batch, padded);

  // Stage the features into the bucket's input, zeros past them (a previous batch may have left longer ones).
  const size_t row = static_cast<size_t>(features.dim(2)) * dtype_size(features.dtype());
  const auto s = static_cast<cudaStream_t>(ctx.stream().handle());
  check_cuda(cudaMemcpy2DAsync(b.input.raw(), padded * row, features.raw(), frames * row, frames * row, batch,
                               cudaMemcpyDeviceToDevice, s),
             "encoder graphs: staging the features");
  if (padded > frames)
    check_cuda(cudaMemset2DAsync(static_cast<char*>(b.input.raw()) + frames * row, padded * row, 0,
                                 (padded - frames) * row, batch, s),
               "encoder graphs: clearing the padding");

  const std::vector<std::vector<int64_t>> counts = encoder.frame_counts(lengths);
  if (!b.graph && b.runs > 0 && !b.uncapturable) {
    // Captured with every clip full: its frame counts differ from stage to stage, as the parameters must.
    const std::vector<int64_t> full(static_cast<size_t>(batch), padded);
    try {
      b.graph = ops::cuda::LengthsGraph::capture(ctx, encoder.frame_counts(full), [&] {
        const EncoderOutput out = encoder.forward(ctx, b.input, full);
        ops::copy(ctx, out.encoded, b.output);
      });
      ++captures_;
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kResourceExhausted) throw;
      b.uncapturable = true;
      spdlog::warn("encoder graphs: batch {} x {} frames runs without a graph: {}", batch, padded, e.what());
    }
  }
  ++b.runs;
  if (!b.graph) return encoder.forward(ctx, b.input, lengths);
  b.graph->replay(ctx, counts);
  ++replays_;
  EncoderOutput out;
  out.encoded = ops::clone(ctx, b.output);  // the bucket's output is the next replay's
  out.lengths = counts.back();
  return out;
}

}  // namespace steno::asr
