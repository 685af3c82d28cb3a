#include "steno/asr/random_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <span>

#include "steno/asr/encoder.h"
#if STENO_HAVE_CUDA
#include "cuda/cuda_tdt_decoder.h"
#endif
#include "steno/asr/features.h"
#include "steno/asr/tdt_decoder.h"
#include "steno/asr/weight_names.h"
#include "steno/asr/weight_store.h"
#include "steno/core/logging.h"
#include "steno/core/safetensors.h"
#include "steno/ops/copy.h"
#include "steno/ops/gemm.h"
#include "steno/ops/lstm.h"

namespace steno::asr {

namespace fs = std::filesystem;

namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// xoshiro256**: small, fast, and the same numbers everywhere (unlike std:: distributions).
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& w : s_) w = splitmix64(seed);
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  float uniform01() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }  // [0, 1)
  float uniform(float bound) { return (2.0f * uniform01() - 1.0f) * bound; }
  float normal() {  // Box-Muller
    const double u1 = (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    const double u2 = static_cast<double>(next() >> 11) * 0x1.0p-53;
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

Tensor random_tensor(const WeightSpec& spec, uint64_t seed, int64_t blank_row) {
  Tensor t = Tensor::empty(spec.shape);
  float* x = t.data<float>();
  const int64_t n = t.numel();
  Rng rng(seed ^ fnv1a(spec.name));
  switch (spec.kind) {
    case WeightKind::kWeight: case WeightKind::kBias: case WeightKind::kPosBias: {
      const float bound = 1.0f / std::sqrt(static_cast<float>(std::max<int64_t>(spec.fan_in, 1)));
      for (int64_t i = 0; i < n; ++i) x[i] = rng.uniform(bound);
      break;
    }
    case WeightKind::kNormWeight: case WeightKind::kRunningVar:
      std::fill(x, x + n, 1.0f);
      break;
    case WeightKind::kNormBias: case WeightKind::kRunningMean: case WeightKind::kFilterbank: case WeightKind::kWindow:
      std::fill(x, x + n, 0.0f);
      break;
    case WeightKind::kEmbedding: {
      for (int64_t i = 0; i < n; ++i) x[i] = rng.normal();
      const int64_t cols = spec.shape[1];
      std::fill(x + blank_row * cols, x + (blank_row + 1) * cols, 0.0f);
      break;
    }
  }
  return t;
}


std::string human_bytes(uint64_t b) {
  if (b < 1000) return fmt::format("{} B", b);
  const char* units[] = {"kB", "MB", "GB", "TB"};
  double v = static_cast<double>(b);
  int u = -1;
  while (v >= 1000 && u < 3) { v /= 1000; ++u; }
  return fmt::format("{:.1f} {}", v, units[u]);
}

// ---- the placeholder tokenizer: SentencePiece's ModelProto in protobuf's wire format, written by hand (field
// numbers from sentencepiece_model.proto) so that steno needs no protobuf library for it.
namespace proto {

void varint(std::string& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out += static_cast<char>((v & 0x7f) | 0x80);
  out += static_cast<char>(v);
}
void key(std::string& out, int field, int wire_type) { varint(out, (static_cast<uint64_t>(field) << 3) | wire_type); }
void bytes(std::string& out, int field, const std::string& value) {  // strings and sub-messages
  key(out, field, 2);
  varint(out, value.size());
  out += value;
}
void integer(std::string& out, int field, int64_t value) {  // int32, bool, enum (negative: 10 bytes, as protobuf)
  key(out, field, 0);
  varint(out, static_cast<uint64_t>(value));
}
void float32(std::string& out, int field, float value) {
  key(out, field, 5);
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  for (int i = 0; i < 4; ++i) out += static_cast<char>((bits >> (8 * i)) & 0xff);
}

}  // namespace proto

// 0 -> "a", 25 -> "z", 26 -> "aa", ... (bijective base 26).
std::string letters(int n) {
  std::string s;
  for (++n; n > 0; n /= 26) {
    --n;
    s.insert(s.begin(), static_cast<char>('a' + n % 26));
  }
  return s;
}

// ---- joint calibration helpers (CPU, f32)

// Column means of x [N, C].
std::vector<double> column_means(const Tensor& x) {
  const int64_t n = x.dim(0), c = x.dim(1);
  std::vector<double> mean(static_cast<size_t>(c), 0.0);
  const float* p = x.data<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j) mean[j] += p[i * c + j];
  for (double& m : mean) m /= static_cast<double>(std::max<int64_t>(n, 1));
  return mean;
}

// The standard deviation (unbiased, over all elements) of x [N, C] after subtracting `centre` from each row, or
// of x around its overall mean when `centre` is empty (torch's Tensor.std()).
double deviation(const Tensor& x, int64_t col_begin, int64_t col_end, const std::vector<double>& centre = {}) {
  const int64_t n = x.dim(0), c = x.dim(1);
  const float* p = x.data<float>();
  double overall = 0;
  if (centre.empty()) {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = col_begin; j < col_end; ++j) overall += p[i * c + j];
    overall /= static_cast<double>(n * (col_end - col_begin));
  }
  double ss = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = col_begin; j < col_end; ++j) {
      const double v = p[i * c + j] - (centre.empty() ? overall : centre[j]);
      ss += v * v;
    }
  const double count = static_cast<double>(n * (col_end - col_begin));
  return count > 1 ? std::sqrt(ss / (count - 1)) : 0.0;
}

// The value as the model file stores it (f32, f16 or bf16), back in f32.
Tensor stored_as(const Tensor& t, DType dtype) {
  return dtype == DType::kF32 ? t.clone() : t.to(dtype).to(DType::kF32);
}

// y [N, out] = x [N, in] · wᵀ + b.
Tensor project(ops::Context& ctx, const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor y = Tensor::empty({x.dim(0), w.dim(0)});
  ops::linear(ctx, x, w, b, y);
  return y;
}

// Centres and scales a projection (weight [J, K], bias [J]) whose outputs over some inputs are `y`: afterwards
// those outputs have mean 0 per unit and standard deviation 1 overall. Returns the scale.
double standardize(const Tensor& y, Tensor& w, Tensor& b) {
  const std::vector<double> mean = column_means(y);
  const double sd = deviation(y, 0, y.dim(1), mean);
  STENO_CHECK(sd > 0, "joint calibration: a joint projection's output does not vary over the calibration audio");
  const double s = 1.0 / sd;
  float* pw = w.data<float>();
  for (int64_t i = 0; i < w.numel(); ++i) pw[i] = static_cast<float>(pw[i] * s);
  float* pb = b.data<float>();
  for (int64_t j = 0; j < b.numel(); ++j) pb[j] = static_cast<float>((pb[j] - mean[j]) * s);
  return s;
}

struct DecodeTally {
  int64_t tokens = 0, frames = 0, steps = 0;
  std::vector<int64_t> histogram;
};

}  // namespace

std::string with_commas(int64_t v) {
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out = v < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

ModelTemplate load_model_like(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(ErrorCode::kNotFound, "{} does not exist (expected a config file or a model directory)",
                                  path.string());
  ModelTemplate t;
  const bool dir = fs::is_directory(path, ec);
  t.config = dir ? ModelConfig::load(path) : ModelConfig::load_file(path);
  const fs::path tok = (dir ? path : path.parent_path()) / t.config.tokenizer.model;
  if (fs::is_regular_file(tok, ec)) t.tokenizer = tok;
  return t;
}

void write_random_model(const ModelConfig& config, const fs::path& out_dir, uint64_t seed, DType dtype,
                        const std::optional<fs::path>& tokenizer_src) {
  config.validate();
  STENO_CHECK(dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16,
              "random model weights must be f32, f16 or bf16, not {}", dtype_name(dtype));
  std::error_code ec;
  if (tokenizer_src && !fs::is_regular_file(*tokenizer_src, ec))
    fail(ErrorCode::kNotFound, "tokenizer {} does not exist", tokenizer_src->string());
  fs::create_directories(out_dir, ec);
  if (ec) fail(ErrorCode::kUnavailable, "cannot create {}: {}", out_dir.string(), ec.message());

  write_random_weights(expected_weights(config), out_dir / "model.safetensors", seed, dtype, config.blank_id());

  const fs::path tokenizer_dst = out_dir / config.tokenizer.model;
  if (tokenizer_src) {
    if (!fs::exists(tokenizer_dst, ec) || !fs::equivalent(*tokenizer_src, tokenizer_dst, ec)) {
      fs::create_directories(tokenizer_dst.parent_path(), ec);
      fs::copy_file(*tokenizer_src, tokenizer_dst, fs::copy_options::overwrite_existing, ec);
      if (ec) fail(ErrorCode::kUnavailable, "cannot copy {} to {}: {}", tokenizer_src->string(),
                   tokenizer_dst.string(), ec.message());
    }
  } else {
    write_placeholder_tokenizer(tokenizer_dst, config.decoder.vocab_size);
  }
  config.save(out_dir / "config.json");  // last: a directory with a config.json is complete
}

void write_random_weights(const std::vector<WeightSpec>& all_specs, const fs::path& file, uint64_t seed, DType dtype,
                          int64_t blank_row) {
  STENO_CHECK(dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16,
              "random model weights must be f32, f16 or bf16, not {}", dtype_name(dtype));
  std::vector<WeightSpec> specs;
  for (const WeightSpec& s : all_specs)
    if (!s.optional) specs.push_back(s);
  std::vector<SafeTensorsEntry> entries;
  for (const WeightSpec& s : specs) entries.push_back({s.name, dtype, s.shape});
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"generator", "steno model random"}, {"seed", std::to_string(seed)}};
  write_safetensors_streamed(file, entries, metadata,
                             [&](size_t i) { return random_tensor(specs[i], seed, blank_row).to(dtype); });
}

void write_placeholder_tokenizer(const fs::path& path, int vocab_size) {
  STENO_CHECK(vocab_size >= 1, "a tokenizer needs at least one piece, got vocab_size {}", vocab_size);
  std::string model;
  for (int id = 0; id < vocab_size; ++id) {
    // <unk> first (id 0, as steno's and NeMo's tokenizers have it), then word-initial ("▁" + letters) and
    // word-inner pieces in turn, all distinct.
    const std::string piece = id == 0       ? "<unk>"
                              : id % 2 == 1 ? "\xE2\x96\x81" + letters((id - 1) / 2)
                                            : letters(id / 2 - 1);
    std::string entry;
    proto::bytes(entry, 1, piece);                            // SentencePiece.piece
    proto::float32(entry, 2, -static_cast<float>(id));        // .score
    proto::integer(entry, 3, id == 0 ? 2 : 1);                // .type: UNKNOWN, NORMAL
    proto::bytes(model, 1, entry);                            // ModelProto.pieces
  }
  std::string trainer;
  proto::integer(trainer, 3, 2);           // TrainerSpec.model_type = BPE
  proto::integer(trainer, 4, vocab_size);  // .vocab_size
  proto::integer(trainer, 40, 0);          // .unk_id
  proto::integer(trainer, 41, -1);         // .bos_id: none
  proto::integer(trainer, 42, -1);         // .eos_id: none
  proto::integer(trainer, 43, -1);         // .pad_id: none
  proto::bytes(model, 2, trainer);         // ModelProto.trainer_spec
  std::string normalizer;
  proto::bytes(normalizer, 1, "identity");  // NormalizerSpec.name (no precompiled_charsmap: no normalization)
  proto::integer(normalizer, 3, 1);         // .add_dummy_prefix
  proto::integer(normalizer, 4, 1);         // .remove_extra_whitespaces
  proto::integer(normalizer, 5, 1);         // .escape_whitespaces
  proto::bytes(model, 3, normalizer);       // ModelProto.normalizer_spec

  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(model.data(), static_cast<std::streamsize>(model.size()));
  out.close();
  if (!out) fail(ErrorCode::kUnavailable, "cannot write {}", path.string());
}

std::string JointCalibrationResult::summary() const {
  std::string hist;
  for (int64_t h : duration_histogram) hist += fmt::format("{}{}", hist.empty() ? "" : " ", h);
  return fmt::format("{:.3f} tokens and {:.3f} decoding steps per encoder frame ({} tokens / {} frames), blank bias "
                     "{:.4g}, token durations [{}]",
                     tokens_per_frame, steps_per_frame, tokens, frames, blank_bias, hist);
}

JointCalibrationResult calibrate_joint(const fs::path& model_dir, const JointCalibration& cal) {
  STENO_CHECK(!cal.audio.empty(), "joint calibration needs audio (speech clips)");
  STENO_CHECK(cal.tokens_per_frame > 0 && cal.tokens_per_frame <= 1,
              "joint calibration: tokens per frame must be in (0, 1], got {}", cal.tokens_per_frame);
  STENO_CHECK(cal.duration0_fraction > 0 && cal.duration0_fraction < 1,
              "joint calibration: the first duration's share must be in (0, 1), got {}", cal.duration0_fraction);
  const ModelConfig config = ModelConfig::load(model_dir);
  const fs::path file = model_dir / "model.safetensors";
  const SafeTensorsFile stored = SafeTensorsFile::open(file);
  const std::string out_name = stored.has("joint.joint_net.2.weight") ? "joint.joint_net.2." : "joint.joint_net.1.";
  const int vocab = config.decoder.vocab_size, blank = config.blank_id();
  const int n_dur = static_cast<int>(config.decoding.durations.size());
  const int64_t n_out = config.joint.num_outputs();

  std::map<std::string, Tensor> joint;  // the calibrated joint tensors, f32 holding values the file's dtype can store
  JointCalibrationResult result;
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  {
    const WeightStore weights = WeightStore::open(file, config);
    const DType dt = weights.storage_dtype();
    ops::Context ctx = ops::Context::cpu(cal.threads);
    auto opt = [&](const char* n) { return weights.has(n) ? weights.get(n) : Tensor(); };
    const FeatureExtractor features(config.preprocessor, opt("preprocessor.featurizer.fb"),
                                    opt("preprocessor.featurizer.window"));
    const EncoderConfig& ec = config.encoder;
    const ConformerEncoder encoder(ec, config.preprocessor.frontend_version == FrontendVersion::kNeMo25,
                                   ops::AttentionWindow{ec.att_context_size[0], ec.att_context_size[1]}, weights);
    const TdtDecoder reference(config, weights);
    const TdtDecoder::Parameters base = reference.parameters();
    // The optional CUDA side: the encoder's device copy, and the encoder output kept there for the trial decodes.
    std::optional<ops::Context> gpu;
    std::optional<ConformerEncoder> gpu_encoder;
    std::vector<Tensor> gpu_encoded;
    if (!cal.device.is_cpu()) {
#if STENO_HAVE_CUDA
      gpu.emplace(ops::Context::cuda(cal.device.index));
      gpu_encoder.emplace(encoder.to_device(*gpu, cal.encoder_dtype, cal.encoder_fp8_linears));
#else
      fail(ErrorCode::kUnavailable, "joint calibration on {}: this build has no CUDA backend", cal.device.str());
#endif
    } else {
      STENO_CHECK(cal.encoder_dtype == DType::kF32 && !cal.encoder_fp8_linears,
                  "joint calibration: the CPU's encoder computes in f32; another precision needs a CUDA device");
    }

    // The encoder output of the calibration audio, in padded batches of up to 16 clips of similar lengths (too
    // short clips skipped).
    std::vector<EncoderOutput> encoded;
    std::vector<float> frame_rows;
    int64_t n_frames = 0;
    std::vector<std::span<const float>> usable;
    for (const auto& clip : cal.audio)
      if (features.valid_frames(static_cast<int64_t>(clip.size())) >= 2) usable.emplace_back(clip);
    STENO_CHECK(!usable.empty(), "joint calibration: every clip is too short");
    std::stable_sort(usable.begin(), usable.end(), [](auto a, auto b) { return a.size() < b.size(); });  // less padding
    for (size_t begin = 0; begin < usable.size(); begin += 16) {
      const std::vector<std::span<const float>> batch(usable.begin() + begin,
                                                     usable.begin() + std::min(usable.size(), begin + 16));
      const Features f = features.compute(ctx, batch);
      EncoderOutput e;
      if (gpu) {
        e = gpu_encoder->forward(*gpu, ops::to_context(*gpu, f.values, cal.encoder_dtype), f.lengths);
        e.encoded = ops::to_context(*gpu, e.encoded, DType::kF32);  // the decodes' input, in f32 whatever encoded it
        gpu_encoded.push_back(e.encoded);
        Tensor host = Tensor::empty(e.encoded.shape());
        ops::copy(*gpu, e.encoded, host);
        gpu->synchronize();
        e.encoded = host;
      } else {
        e = encoder.forward(ctx, f.values, f.lengths);
      }
      const int64_t t = e.encoded.dim(1), d = e.encoded.dim(2);
      for (size_t b = 0; b < batch.size(); ++b) {
        const float* rows = e.encoded.data<float>() + static_cast<int64_t>(b) * t * d;
        frame_rows.insert(frame_rows.end(), rows, rows + e.lengths[b] * d);
        n_frames += e.lengths[b];
      }
      encoded.push_back(std::move(e));
    }
    const Tensor frames = Tensor::from_vector(frame_rows, {n_frames, ec.d_model});
    frame_rows = {};
    spdlog::info("joint calibration: encoder output of {} clips ({} frames) after {:.1f} s", usable.size(), n_frames,
                 seconds());

    // Prediction-network outputs: the SOS step, then 12 random labels, for 8 label sequences.
    constexpr int kSequences = 8, kSteps = 13;
    Rng rng(cal.seed ^ fnv1a("joint calibration"));
    const int64_t embed_dim = base.embed.dim(1);
    Tensor x = Tensor::zeros({kSteps, kSequences, embed_dim});  // step 0: blank, the zero embedding row
    for (int s = 1; s < kSteps; ++s)
      for (int b = 0; b < kSequences; ++b) {
        const int64_t label = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(vocab));
        std::copy_n(base.embed.data<float>() + label * embed_dim, embed_dim,
                    x.data<float>() + (static_cast<int64_t>(s) * kSequences + b) * embed_dim);
      }
    for (size_t l = 0; l < base.w_ih.size(); ++l) {
      const int64_t hidden = base.w_hh[l].dim(1);
      Tensor h = Tensor::zeros({kSequences, hidden}), c = Tensor::zeros({kSequences, hidden});
      Tensor y = Tensor::empty({kSteps, kSequences, hidden});
      ops::lstm_layer(ctx, x, base.w_ih[l], base.w_hh[l], base.b_ih[l], base.b_hh[l], h, c, y);
      x = y;
    }
    const Tensor pred_in = x.reshape({kSteps * kSequences, x.dim(2)});

    // 1. Standardize both projections, then round them as the file will store them.
    Tensor enc_w = base.enc_w.clone(), enc_b = base.enc_b.clone();
    Tensor pred_w = base.pred_w.clone(), pred_b = base.pred_b.clone();
    standardize(project(ctx, frames, enc_w, enc_b), enc_w, enc_b);
    standardize(project(ctx, pred_in, pred_w, pred_b), pred_w, pred_b);
    enc_w = stored_as(enc_w, dt);
    enc_b = stored_as(enc_b, dt);
    pred_w = stored_as(pred_w, dt);
    pred_b = stored_as(pred_b, dt);
    const Tensor f = project(ctx, frames, enc_w, enc_b), p = project(ctx, pred_in, pred_w, pred_b);

    // 2. Joint hidden vectors of (frame, history) pairs: all pairs, or 16384 drawn at random.
    const int64_t nf = f.dim(0), np = p.dim(0), hid = f.dim(1);
    const int64_t n_pairs = std::min<int64_t>(nf * np, 16384);
    Tensor h = Tensor::empty({n_pairs, hid});
    for (int64_t s = 0; s < n_pairs; ++s) {
      const int64_t pair = nf * np <= 16384 ? s : static_cast<int64_t>(rng.next() % static_cast<uint64_t>(nf * np));
      const float* fa = f.data<float>() + (pair / np) * hid;
      const float* pa = p.data<float>() + (pair % np) * hid;
      float* ha = h.data<float>() + s * hid;
      for (int64_t j = 0; j < hid; ++j) ha[j] = std::max(fa[j] + pa[j], 0.0f);
    }
    Tensor out_w = base.out_w.clone();
    {
      const Tensor z = project(ctx, h, out_w, Tensor());
      const double token_scale = 4.0 / deviation(z, 0, blank + 1), dur_scale = 2.0 / deviation(z, blank + 1, n_out);
      float* w = out_w.data<float>();
      for (int64_t r = 0; r < n_out; ++r)
        for (int64_t j = 0; j < hid; ++j) w[r * hid + j] *= static_cast<float>(r <= blank ? token_scale : dur_scale);
      out_w = stored_as(out_w, dt);
    }
    const Tensor z = project(ctx, h, out_w, Tensor());
    const float* zp = z.data<float>();

    // Duration biases. The target histogram: duration0_fraction for the first duration (0 in Parakeet), the rest
    // in geometric proportions 1 : 0.6 : 0.36 ... (short jumps commoner than long ones), so that without blanks
    // tokens would come at about 0.58 per frame and the blank bias has room to bring the rate down to the target
    // with blank steps in between, as in a trained model. First fitted on the sampled pairs, then on the token
    // durations greedy decoding actually takes (the frames and label histories it visits are not the samples').
    std::vector<double> target(n_dur, 1.0);
    {
      double sum = 0;
      for (int k = 1; k < n_dur; ++k) sum += target[k] = std::pow(0.6, k - 1);
      for (int k = 1; k < n_dur; ++k) target[k] *= (1.0 - cal.duration0_fraction) / sum;
      if (n_dur > 1) target[0] = cal.duration0_fraction;
    }
    std::vector<double> shift(n_dur, 0.0);
    auto fit_durations = [&](const std::vector<double>& hist, double step) {
      double total = 0;
      for (double v : hist) total += v;
      for (int k = 0; k < n_dur && total > 0; ++k)
        shift[k] += step * std::log(target[k] / std::max(hist[k] / total, 1e-3));
    };
    for (int it = 0; it < 60 && n_dur > 1; ++it) {
      std::vector<double> hist(n_dur, 0.0);
      for (int64_t s = 0; s < n_pairs; ++s) {
        const float* row = zp + s * n_out + blank + 1;
        int best = 0;
        for (int k = 1; k < n_dur; ++k)
          if (row[k] + shift[k] > row[best] + shift[best]) best = k;
        hist[best] += 1.0;
      }
      fit_durations(hist, 0.5);
    }

    // 3. The blank bias: the start is where blank wins 30 % of the sampled pairs.
    std::vector<float> margin(static_cast<size_t>(n_pairs));  // best token logit - blank logit
    for (int64_t s = 0; s < n_pairs; ++s) {
      const float* row = zp + s * n_out;
      margin[s] = *std::max_element(row, row + vocab) - row[blank];
    }
    std::nth_element(margin.begin(), margin.begin() + n_pairs * 3 / 10, margin.end());
    const double start = margin[n_pairs * 3 / 10];

    auto out_bias = [&](double blank_bias) {
      Tensor b = Tensor::zeros({n_out});
      float* pb = b.data<float>();
      pb[blank] = static_cast<float>(blank_bias);
      for (int k = 0; k < n_dur; ++k) pb[blank + 1 + k] = static_cast<float>(shift[k]);
      return stored_as(b, dt);
    };
    auto decode_all = [&](const Tensor& bias) {
      TdtDecoder::Parameters params = base;
      params.enc_w = enc_w;
      params.enc_b = enc_b;
      params.pred_w = pred_w;
      params.pred_b = pred_b;
      params.out_w = out_w;
      params.out_b = bias;
      const TdtDecoder decoder(params);
      DecodeTally tally;
      tally.histogram.assign(n_dur, 0);
      DecodeStats stats;
#if STENO_HAVE_CUDA
      std::optional<CudaTdtDecoder> gpu_decoder;
      std::optional<CudaTdtDecoder::Workspace> workspace;
      if (gpu) {
        gpu_decoder.emplace(decoder, *gpu, DType::kF32);
        workspace.emplace();
      }
#endif
      for (size_t i = 0; i < encoded.size(); ++i) {
        const EncoderOutput& e = encoded[i];
        std::vector<Hypothesis> hyps;
#if STENO_HAVE_CUDA
        if (gpu) {
          hyps = gpu_decoder->decode(*gpu, *workspace, gpu_encoded[i], e.lengths, &stats);
        }
#endif
        if (!gpu) hyps = decoder.decode(ctx, e.encoded, e.lengths, false, &stats);
        for (const Hypothesis& hyp : hyps) {
          tally.tokens += static_cast<int64_t>(hyp.tokens.size());
          for (int d : hyp.durations) {
            const auto it = std::find(config.decoding.durations.begin(), config.decoding.durations.end(), d);
            if (it != config.decoding.durations.end()) ++tally.histogram[it - config.decoding.durations.begin()];
          }
        }
        for (int64_t len : e.lengths) tally.frames += len;
      }
      tally.steps = stats.steps;
      return tally;
    };
    auto rate = [](const DecodeTally& t) { return static_cast<double>(t.tokens) / std::max<int64_t>(t.frames, 1); };

    // Duration biases refined on decoding with few blanks (the bias well below the start): 8 damped steps.
    for (int it = 0; it < 8 && n_dur > 1; ++it) {
      const DecodeTally t = decode_all(out_bias(start - 16));
      fit_durations(std::vector<double>(t.histogram.begin(), t.histogram.end()), 0.5);
    }

    spdlog::info("joint calibration: durations fitted after {:.1f} s", seconds());

    // More blank bias, fewer tokens: bisect [start - 16, start + 16] (token logits have standard deviation 4),
    // keeping the stored bias whose rate came closest.
    double lo = start - 16, hi = start + 16;
    double best_err = INFINITY;
    for (int it = 0; it < 24; ++it) {
      const double mid = 0.5 * (lo + hi);
      const Tensor bias = out_bias(mid);
      const DecodeTally t = decode_all(bias);
      const double r = rate(t);
      if (std::abs(r - cal.tokens_per_frame) < best_err) {
        best_err = std::abs(r - cal.tokens_per_frame);
        result.blank_bias = bias.data<float>()[blank];
        result.tokens_per_frame = r;
        result.steps_per_frame = static_cast<double>(t.steps) / std::max<int64_t>(t.frames, 1);
        result.tokens = t.tokens;
        result.frames = t.frames;
        result.duration_histogram = t.histogram;
        joint[out_name + "bias"] = bias;
      }
      (r > cal.tokens_per_frame ? lo : hi) = mid;
    }
    spdlog::info("joint calibration: blank bias bisected after {:.1f} s", seconds());
    if (best_err > 0.05 * cal.tokens_per_frame)
      spdlog::warn("joint calibration: {:.3f} tokens per frame is the closest to the target {:.3f} this model and "
                   "audio reach",
                   result.tokens_per_frame, cal.tokens_per_frame);
    joint["joint.enc.weight"] = enc_w;
    joint["joint.enc.bias"] = enc_b;
    joint["joint.pred.weight"] = pred_w;
    joint["joint.pred.bias"] = pred_b;
    joint[out_name + "weight"] = out_w;
  }

  // Rewrite the file: the calibrated joint tensors, every other tensor's bytes as they were.
  std::vector<SafeTensorsEntry> entries;
  for (const std::string& n : stored.names()) entries.push_back({n, stored.info(n).dtype, stored.info(n).shape});
  std::map<std::string, std::string> metadata = stored.metadata();
  metadata["joint_calibration"] = result.summary();
  metadata["joint_calibration_target"] = fmt::format("{} tokens per frame", cal.tokens_per_frame);
  write_safetensors_streamed(file, entries, metadata, [&](size_t i) {
    const SafeTensorsEntry& e = entries[i];
    const auto it = joint.find(e.name);
    return it == joint.end() ? stored.get(e.name) : it->second.reshape(e.shape).to(e.dtype);
  });
  return result;
}

std::string describe_weights(const fs::path& model_dir, const std::vector<WeightSpec>& specs) {
  std::string out;
  std::error_code ec;
  const fs::path weights = model_dir / "model.safetensors";
  if (!fs::exists(weights, ec)) {
    out += "weights:      model.safetensors MISSING\n";
  } else {
    try {
      const SafeTensorsFile file = SafeTensorsFile::open(weights);
      std::map<std::string, int> dtypes;
      for (const std::string& n : file.names()) ++dtypes[dtype_name(file.info(n).dtype)];
      std::string dt;
      for (const auto& [name, count] : dtypes)
        dt += fmt::format("{}{} ({} tensor{})", dt.empty() ? "" : ", ", name, count, count == 1 ? "" : "s");
      out += fmt::format("weights:      model.safetensors, {}, {}\n", human_bytes(file.file_size()), dt);
      const bool fb = file.has("preprocessor.featurizer.fb"), win = file.has("preprocessor.featurizer.window");
      out += fmt::format("mel filters:  {}\n", fb && win   ? "from the checkpoint (fb and window)"
                                               : fb || win ? "partly from the checkpoint"
                                                           : "computed by steno");
      const std::vector<WeightProblem> problems = check_weights(specs, file);
      if (problems.empty()) {
        out += "check:        weights match config.json\n";
      } else {
        out += fmt::format("check:        {} problem{} against config.json\n", problems.size(),
                           problems.size() == 1 ? "" : "s");
        for (size_t i = 0; i < problems.size() && i < 10; ++i) out += "                " + problems[i].message + "\n";
        if (problems.size() > 10) out += fmt::format("                ... and {} more\n", problems.size() - 10);
      }
    } catch (const Error& e) {
      out += fmt::format("weights:      model.safetensors UNREADABLE: {}\n", e.what());
    }
  }

  return out;
}

std::string describe_disk_size(const fs::path& model_dir) {
  std::error_code ec;
  uint64_t total = 0;
  for (const auto& entry : fs::recursive_directory_iterator(model_dir, ec))
    if (entry.is_regular_file(ec)) total += entry.file_size(ec);
  return fmt::format("size on disk: {}\n", human_bytes(total));
}

std::string describe_model(const fs::path& model_dir) {
  const ModelConfig config = ModelConfig::load(model_dir);
  const PreprocessorConfig& p = config.preprocessor;
  std::string out;
  out += fmt::format("model:        {}\n", config.name.empty() ? model_dir.filename().string() : config.name);
  out += fmt::format("directory:    {}\n", model_dir.string());
  out += fmt::format("architecture: {}\n", config.summary());
  out += fmt::format("front end:    {} Hz, {} mels, n_fft {}, {} window {} / hop {} samples, normalize {}, NeMo {} "
                     "front end\n",
                     p.sample_rate, p.features, p.n_fft, p.window, p.win_length(), p.hop_length(), p.normalize,
                     frontend_version_name(p.frontend_version));
  out += fmt::format("parameters:   {}\n", with_commas(parameter_count(config)));

  out += describe_weights(model_dir, expected_weights(config));
  std::error_code ec;
  const fs::path tok = model_dir / config.tokenizer.model;
  if (fs::is_regular_file(tok, ec))
    out += fmt::format("tokenizer:    {} ({}, {})\n", config.tokenizer.model, config.tokenizer.type,
                       human_bytes(fs::file_size(tok, ec)));
  else
    out += fmt::format("tokenizer:    {} MISSING\n", config.tokenizer.model);

  out += describe_disk_size(model_dir);
  return out;
}

}  // namespace steno::asr
