#include "steno/asr/tdt_decoder.h"

#include <algorithm>

#include "steno/asr/weight_store.h"
#include "steno/ops/gemm.h"
#include "steno/ops/lstm.h"

namespace steno::asr {
namespace {

// Parameters::input_gates: for every token, what lstm_cell adds up before h·w_hhᵀ: the two biases, then the
// embedding's product (ops::linear fills the bias rows and accumulates the product, as lstm_cell does).
Tensor first_layer_input_gates(ops::Context& ctx, const Tensor& embed, const Tensor& w_ih, const Tensor& b_ih,
                               const Tensor& b_hh) {
  STENO_CHECK(embed.rank() == 2 && w_ih.rank() == 2, "TDT decoder: embedding {} and first LSTM layer {} must be 2-D",
              shape_str(embed.shape()), shape_str(w_ih.shape()));
  const int64_t n4 = w_ih.dim(0);
  Tensor bias;
  if (b_ih.defined() || b_hh.defined()) {
    STENO_CHECK((!b_ih.defined() || b_ih.numel() == n4) && (!b_hh.defined() || b_hh.numel() == n4),
                "TDT decoder: the first LSTM layer's biases must have {} entries", n4);
    bias = Tensor::zeros({n4});
    float* sum = bias.data<float>();
    for (const Tensor* b : {&b_ih, &b_hh})
      if (b->defined())
        for (int64_t j = 0; j < n4; ++j) sum[j] += b->data<float>()[j];
  }
  Tensor z = Tensor::empty({embed.dim(0), n4});
  ops::linear(ctx, embed, w_ih, bias, z);
  return z;
}

}  // namespace

TdtDecoder::TdtDecoder(const ModelConfig& config, const WeightStore& w)
    : vocab_size_(config.decoder.vocab_size),
      joint_hidden_(config.joint.joint_hidden),
      max_symbols_(config.decoding.max_symbols),
      durations_(config.decoding.durations) {
  STENO_CHECK(!durations_.empty(), "TDT decoder: no durations");
  STENO_CHECK(max_symbols_ >= 1, "TDT decoder: max_symbols must be >= 1, got {}", max_symbols_);
  if (config.joint.activation != "relu")
    fail(ErrorCode::kUnimplemented, "joint.activation '{}': steno implements relu only", config.joint.activation);
  embed_ = w.get("decoder.prediction.embed.weight");
  for (int l = 0; l < config.decoder.pred_rnn_layers; ++l) {
    const std::string p = "decoder.prediction.dec_rnn.lstm.";
    const std::string s = "_l" + std::to_string(l);
    w_ih_.push_back(w.get(p + "weight_ih" + s));
    w_hh_.push_back(w.get(p + "weight_hh" + s));
    b_ih_.push_back(w.get(p + "bias_ih" + s));
    b_hh_.push_back(w.get(p + "bias_hh" + s));
  }
  enc_w_ = w.get("joint.enc.weight");
  enc_b_ = w.get("joint.enc.bias");
  pred_w_ = w.get("joint.pred.weight");
  pred_b_ = w.get("joint.pred.bias");
  // NeMo's joint_net is Sequential(ReLU, Dropout, Linear): the Linear is index 2, or 1 when built without dropout.
  const std::string out = w.has("joint.joint_net.2.weight") ? "joint.joint_net.2." : "joint.joint_net.1.";
  out_w_ = w.get(out + "weight");
  out_b_ = w.get(out + "bias");
  const int64_t expected = vocab_size_ + 1 + static_cast<int64_t>(durations_.size());
  STENO_CHECK(out_w_.dim(0) == expected, "TDT joint emits {} logits, expected vocab {} + blank + {} durations",
              out_w_.dim(0), vocab_size_, durations_.size());
}

TdtDecoder::TdtDecoder(const Parameters& p)
    : vocab_size_(p.vocab_size),
      joint_hidden_(p.enc_w.defined() ? static_cast<int>(p.enc_w.dim(0)) : 0),
      max_symbols_(p.max_symbols),
      durations_(p.durations),
      embed_(p.embed),
      w_ih_(p.w_ih),
      w_hh_(p.w_hh),
      b_ih_(p.b_ih),
      b_hh_(p.b_hh),
      enc_w_(p.enc_w),
      enc_b_(p.enc_b),
      pred_w_(p.pred_w),
      pred_b_(p.pred_b),
      out_w_(p.out_w),
      out_b_(p.out_b) {
  STENO_CHECK(!durations_.empty(), "TDT decoder: no durations");
  STENO_CHECK(max_symbols_ >= 1, "TDT decoder: max_symbols must be >= 1, got {}", max_symbols_);
  const int64_t n_out = vocab_size_ + 1 + static_cast<int64_t>(durations_.size());
  STENO_CHECK(embed_.rank() == 2 && embed_.dim(0) == vocab_size_ + 1, "TDT decoder: embed must have {} rows, got {}",
              vocab_size_ + 1, shape_str(embed_.shape()));
  STENO_CHECK(!w_ih_.empty() && w_hh_.size() == w_ih_.size() && b_ih_.size() == w_ih_.size() &&
                  b_hh_.size() == w_ih_.size(),
              "TDT decoder: LSTM weights of {} layers are incomplete", w_ih_.size());
  STENO_CHECK(enc_w_.rank() == 2 && pred_w_.rank() == 2 && pred_w_.dim(0) == joint_hidden_ && out_w_.rank() == 2 &&
                  out_w_.dim(0) == n_out && out_w_.dim(1) == joint_hidden_ && out_b_.numel() == n_out,
              "TDT decoder: joint shapes do not fit (enc {}, pred {}, out {}, out bias {}; {} outputs expected)",
              shape_str(enc_w_.shape()), shape_str(pred_w_.shape()), shape_str(out_w_.shape()),
              shape_str(out_b_.shape()), n_out);
}

TdtDecoder::Parameters TdtDecoder::parameters() const {
  return {vocab_size_, max_symbols_, durations_, embed_, w_ih_, w_hh_, b_ih_, b_hh_, enc_w_, enc_b_, pred_w_, pred_b_,
          out_w_, out_b_};
}

TdtDecoder::Parameters TdtDecoder::parameters(ops::Context& ctx) const {
  Parameters p = parameters();
  p.input_gates = input_gates(ctx);
  return p;
}

const Tensor& TdtDecoder::input_gates(ops::Context& ctx) const {
  STENO_CHECK(ctx.device().is_cpu(), "TDT decoder: decodes on the CPU (the CUDA decoder is CudaTdtDecoder)");
  std::call_once(input_gates_->once,
                 [&] { input_gates_->table = first_layer_input_gates(ctx, embed_, w_ih_[0], b_ih_[0], b_hh_[0]); });
  return input_gates_->table;
}

namespace {

// Gathers rows `idx` of src [N, C] into a new [idx.size(), C] tensor.
Tensor gather_rows(ops::Context& ctx, const Tensor& src, const std::vector<int64_t>& idx) {
  const int64_t c = src.dim(1);
  Tensor out = ctx.scratch({static_cast<int64_t>(idx.size()), c});
  for (size_t i = 0; i < idx.size(); ++i)
    std::copy_n(src.data<float>() + idx[i] * c, c, out.data<float>() + i * c);
  return out;
}

void scatter_rows(const Tensor& src, const std::vector<int64_t>& idx, Tensor& dst) {
  const int64_t c = dst.dim(1);
  for (size_t i = 0; i < idx.size(); ++i)
    std::copy_n(src.data<float>() + i * c, c, dst.data<float>() + idx[i] * c);
}

}  // namespace

std::vector<Hypothesis> TdtDecoder::decode(ops::Context& ctx, const Tensor& encoded,
                                           const std::vector<int64_t>& lengths, bool keep_alignments,
                                           DecodeStats* stats) const {
  STENO_CHECK(encoded.rank() == 3 && static_cast<int64_t>(lengths.size()) == encoded.dim(0),
              "TDT decode: encoded must be [B, T, d] with B lengths, got {} and {} lengths",
              shape_str(encoded.shape()), lengths.size());
  const int64_t batch = encoded.dim(0), frames = encoded.dim(1);
  const int64_t hidden = embed_.dim(1), joint = joint_hidden_;
  const int blank = blank_id();
  const int64_t n_out = out_w_.dim(0), n_tokens = blank + 1;
  const int n_layers = static_cast<int>(w_ih_.size());
  std::vector<Hypothesis> hyps(static_cast<size_t>(batch));
  if (batch == 0) return hyps;
  const Tensor& input_gates = this->input_gates(ctx);

  // Project the whole encoder output once: [B*T, joint].
  Tensor enc_proj = ctx.scratch({batch, frames, joint});
  ops::linear(ctx, encoded, enc_w_, enc_b_, enc_proj);

  // Prediction network state per element and layer, and its projected output.
  std::vector<Tensor> h(n_layers), c(n_layers);
  for (int l = 0; l < n_layers; ++l) {
    h[l] = Tensor::zeros({batch, hidden});
    c[l] = Tensor::zeros({batch, hidden});
  }
  Tensor pred_proj = ctx.scratch({batch, joint});

  // Runs the prediction network on `labels` for elements `idx`, updating their state and pred_proj.
  auto predict = [&](const std::vector<int64_t>& idx, const std::vector<int>& labels) {
    const int64_t n = static_cast<int64_t>(idx.size());
    Tensor x;
    for (int l = 0; l < n_layers; ++l) {
      Tensor hl = gather_rows(ctx, h[l], idx), cl = gather_rows(ctx, c[l], idx);
      if (l == 0) {
        Tensor z = ctx.scratch({n, input_gates.dim(1)});
        for (int64_t i = 0; i < n; ++i)
          std::copy_n(input_gates.data<float>() + static_cast<int64_t>(labels[i]) * z.dim(1), z.dim(1),
                      z.data<float>() + i * z.dim(1));
        ops::lstm_cell_projected(ctx, z, hl, cl, w_hh_[0], hl, cl);
      } else {
        ops::lstm_cell(ctx, x, hl, cl, w_ih_[l], w_hh_[l], b_ih_[l], b_hh_[l], hl, cl);
      }
      scatter_rows(hl, idx, h[l]);
      scatter_rows(cl, idx, c[l]);
      x = hl;
    }
    Tensor g = ctx.scratch({n, joint});
    ops::linear(ctx, x, pred_w_, pred_b_, g);
    scatter_rows(g, idx, pred_proj);
    if (stats) stats->lstm_updates += n;
  };

  std::vector<int64_t> all(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) all[b] = b;
  predict(all, std::vector<int>(static_cast<size_t>(batch), blank));  // SOS: the blank row is zeros

  std::vector<int64_t> t(static_cast<size_t>(batch), 0), last_ts(static_cast<size_t>(batch), -1);
  std::vector<int> symbols_on_frame(static_cast<size_t>(batch), 0);
  Tensor hidden_act = ctx.scratch({batch, joint});
  Tensor logits = ctx.scratch({batch, n_out});
  const float* ep = enc_proj.data<float>();

  for (;;) {
    std::vector<int64_t> active;
    for (int64_t b = 0; b < batch; ++b)
      if (t[b] < lengths[b]) active.push_back(b);
    if (active.empty()) break;

    // Inner loop: every active element steps until it finds a non-blank label or runs past its end.
    std::vector<int64_t> searching = active, found;
    std::vector<int> found_label(static_cast<size_t>(batch), blank);
    std::vector<int64_t> found_frame(static_cast<size_t>(batch), 0);
    std::vector<int> found_duration(static_cast<size_t>(batch), 0);
    while (!searching.empty()) {
      const int64_t n = static_cast<int64_t>(searching.size());
      float* ha = hidden_act.data<float>();
      for (int64_t i = 0; i < n; ++i) {
        const int64_t b = searching[i];
        const int64_t frame = std::min(t[b], lengths[b] - 1);
        const float* e = ep + (b * frames + frame) * joint;
        const float* g = pred_proj.data<float>() + b * joint;
        for (int64_t j = 0; j < joint; ++j) ha[i * joint + j] = std::max(0.0f, e[j] + g[j]);
      }
      Tensor act = hidden_act.narrow0(0, n), lg = logits.narrow0(0, n);
      ops::linear(ctx, act, out_w_, out_b_, lg);
      if (stats) stats->steps += n;

      std::vector<int64_t> still;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t b = searching[i];
        const float* row = lg.data<float>() + i * n_out;
        const int k = static_cast<int>(std::max_element(row, row + n_tokens) - row);
        const int d_idx = static_cast<int>(std::max_element(row + n_tokens, row + n_out) - (row + n_tokens));
        int d = durations_[d_idx];
        if (k == blank && d == 0) d = 1;  // a blank never stays on its frame
        if (keep_alignments) {
          hyps[b].step_logits.emplace_back(row, row + n_out);
          hyps[b].step_labels.push_back(k);
          hyps[b].step_frames.push_back(static_cast<int>(std::min(t[b], lengths[b] - 1)));
        }
        const int64_t t_label = t[b];
        t[b] += d;
        if (k != blank) {
          found.push_back(b);
          found_label[b] = k;
          found_frame[b] = t_label;
          found_duration[b] = d;
        } else if (t[b] < lengths[b]) {
          still.push_back(b);
        }
      }
      searching = std::move(still);
    }
    if (found.empty()) continue;

    std::sort(found.begin(), found.end());
    std::vector<int> labels;
    for (int64_t b : found) {
      auto& hyp = hyps[b];
      hyp.tokens.push_back(found_label[b]);
      hyp.timestamps.push_back(static_cast<int>(found_frame[b]));
      hyp.durations.push_back(found_duration[b]);
      symbols_on_frame[b] = found_frame[b] == last_ts[b] ? symbols_on_frame[b] + 1 : 1;
      last_ts[b] = found_frame[b];
      labels.push_back(found_label[b]);
    }
    predict(found, labels);
    // Force progress only when stuck: max_symbols tokens on one frame and the last one had duration 0.
    for (int64_t b : found)
      if (symbols_on_frame[b] >= max_symbols_ && last_ts[b] == t[b]) t[b] += 1;
  }
  return hyps;
}

}  // namespace steno::asr
