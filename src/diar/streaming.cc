#include "steno/diar/streaming.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "steno/core/error.h"
#include "steno/ops/copy.h"

namespace steno::diar {

namespace {

struct Preset {
  const char* name;
  int chunk_len, chunk_right_context, fifo_len, spkcache_update_period, spkcache_len;
};
constexpr Preset kPresets[] = {
    {"1.04s", 6, 7, 188, 144, 188},
    {"30.4s", 340, 40, 40, 300, 188},
};

// A tensor's values as host f32.
FrameMatrix to_host_rows(ops::Context& ctx, const Tensor& t) {
  const Tensor f32 = t.dtype() == DType::kF32 ? t : ops::to_context(ctx, t, DType::kF32);
  FrameMatrix out{t.dim(-1), std::vector<float>(static_cast<size_t>(t.numel()))};
  Tensor host = Tensor::wrap(out.values.data(), f32.shape(), DType::kF32);
  ops::copy(ctx, f32, host);
  ctx.synchronize();
  return out;
}

// Rows [first, end) of a [1, T, C] tensor, as a [1, end - first, C] view.
Tensor frame_rows(const Tensor& t, int64_t first, int64_t end) {
  return t.reshape({t.dim(1), t.dim(2)}).narrow0(first, end).reshape({1, end - first, t.dim(2)});
}

}  // namespace

std::vector<std::string> streaming_preset_names() {
  std::vector<std::string> names{"model"};
  for (const Preset& p : kPresets) names.emplace_back(p.name);
  return names;
}

SortformerModulesConfig streaming_preset(const SortformerModulesConfig& base, std::string_view name) {
  if (name == "model") return base;
  for (const Preset& p : kPresets) {
    if (name != p.name) continue;
    SortformerModulesConfig out = base;
    out.chunk_len = p.chunk_len;
    out.chunk_right_context = p.chunk_right_context;
    out.fifo_len = p.fifo_len;
    out.spkcache_update_period = p.spkcache_update_period;
    out.spkcache_len = p.spkcache_len;
    return out;
  }
  fail(ErrorCode::kInvalidArgument, "unknown streaming preset '{}' (one of: {})", name,
       fmt::join(streaming_preset_names(), ", "));
}

void set_streaming_parameter(SortformerModulesConfig& params, std::string_view assignment) {
  const size_t eq = assignment.find('=');
  STENO_CHECK(eq != std::string_view::npos && eq > 0, "streaming parameter '{}': expected field=value", assignment);
  const std::string_view field = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  std::pair<const char*, int*> ints[] = {
      {"chunk_len", &params.chunk_len},
      {"chunk_left_context", &params.chunk_left_context},
      {"chunk_right_context", &params.chunk_right_context},
      {"fifo_len", &params.fifo_len},
      {"spkcache_update_period", &params.spkcache_update_period},
      {"spkcache_len", &params.spkcache_len},
      {"spkcache_sil_frames_per_spk", &params.spkcache_sil_frames_per_spk},
  };
  std::pair<const char*, double*> reals[] = {
      {"pred_score_threshold", &params.pred_score_threshold},
      {"scores_boost_latest", &params.scores_boost_latest},
      {"sil_threshold", &params.sil_threshold},
      {"strong_boost_rate", &params.strong_boost_rate},
      {"weak_boost_rate", &params.weak_boost_rate},
      {"min_pos_scores_rate", &params.min_pos_scores_rate},
  };
  for (auto& [name, target] : ints) {
    if (field != name) continue;
    int v = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    STENO_CHECK(ec == std::errc() && end == value.data() + value.size(), "streaming parameter {}: '{}' is not an integer",
                field, value);
    *target = v;
    return;
  }
  for (auto& [name, target] : reals) {
    if (field != name) continue;
    const std::string text(value);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    STENO_CHECK(!text.empty() && end == text.c_str() + text.size() && std::isfinite(v),
                "streaming parameter {}: '{}' is not a number", field, value);
    *target = v;
    return;
  }
  fail(ErrorCode::kInvalidArgument,
       "unknown streaming parameter '{}' (chunk_len, chunk_left_context, chunk_right_context, fifo_len, "
       "spkcache_update_period, spkcache_len, spkcache_sil_frames_per_spk, pred_score_threshold, "
       "scores_boost_latest, sil_threshold, strong_boost_rate, weak_boost_rate, min_pos_scores_rate)",
       field);
}

double streaming_latency_seconds(const SortformerModulesConfig& params, double frame_seconds) {
  return (params.chunk_len + params.chunk_right_context) * frame_seconds;
}

SortformerStream::SortformerStream(const SortformerModel& model, const SortformerModulesConfig& params,
                                   bool whole_recording_features)
    : model_(model),
      params_(params),
      state_(model.config().encoder.d_model, model.num_speakers()),
      whole_recording_(whole_recording_features || model.config().preprocessor.normalize != "none") {
  SortformerConfig check = model.config();
  STENO_CHECK(params.num_spks == check.sortformer_modules.num_spks &&
                  params.fc_d_model == check.sortformer_modules.fc_d_model &&
                  params.tf_d_model == check.sortformer_modules.tf_d_model,
              "streaming parameters are for another model (speakers {}, widths {}/{})", params.num_spks,
              params.fc_d_model, params.tf_d_model);
  check.sortformer_modules = params;
  try {
    check.validate();  // the one place the streaming parameters' ranges are checked (NeMo's and steno's)
  } catch (const Error& e) {
    std::string why = e.what();
    if (why.starts_with("config.json: ")) why = why.substr(13);  // these came from the caller, not the file
    fail(e.code(), "streaming parameters: {}", why);
  }
  static std::atomic<bool> warned{false};  // once per process, not once per file
  if (whole_recording_ && !whole_recording_features && !warned.exchange(true))
    spdlog::warn("diarizer {}: its front end normalises per feature ('{}'), which needs the whole recording: the "
                 "stream keeps the audio until it ends",
                 model.directory(), model.config().preprocessor.normalize);
}

SortformerStream::~SortformerStream() = default;

std::vector<float> SortformerStream::push(ops::Context& ctx, std::span<const float> audio) {
  STENO_CHECK(!finished_, "streaming diarization: audio pushed after finish()");
  audio_.insert(audio_.end(), audio.begin(), audio.end());
  samples_pushed_ += static_cast<int64_t>(audio.size());
  return whole_recording_ ? std::vector<float>{} : run_ready_chunks(ctx);
}

std::vector<float> SortformerStream::finish(ops::Context& ctx) {
  STENO_CHECK(!finished_, "streaming diarization: finish() called twice");
  finished_ = true;
  total_frames_ = model_.features().valid_frames(samples_pushed_);
  return run_ready_chunks(ctx);
}

// NeMo's streaming_feat_loader, over features that grow: a chunk runs once the audio holds its right context
// (and a margin for the STFT window), or at the end with whatever context is left.
std::vector<float> SortformerStream::run_ready_chunks(ops::Context& ctx) {
  const int64_t sub = model_.config().encoder.subsampling_factor;
  const int64_t hop = model_.features().hop_length();
  const int64_t margin = model_.config().preprocessor.n_fft / hop + 1;  // frames whose windows reach past an edge
  std::vector<float> out;
  while (true) {
    const int64_t stt = next_frame_;
    const int64_t left = std::min<int64_t>(params_.chunk_left_context * sub, stt);
    int64_t end = stt + params_.chunk_len * sub, right = params_.chunk_right_context * sub;
    if (finished_) {
      if (stt >= total_frames_) break;
      end = std::min(end, total_frames_);
      right = std::min(right, total_frames_ - end);
    } else if (samples_pushed_ < (end + right + margin) * hop) {
      break;
    }
    const std::vector<float> preds = run_chunk(ctx, left, end, right);
    out.insert(out.end(), preds.begin(), preds.end());
    next_frame_ = end;
    if (!whole_recording_) {  // drop the audio no later chunk reads
      const int64_t keep_from =
          std::max<int64_t>(0, (next_frame_ - params_.chunk_left_context * sub - margin) * hop);
      if (keep_from > audio_start_) {
        audio_.erase(audio_.begin(), audio_.begin() + (keep_from - audio_start_));
        audio_start_ = keep_from;
      }
    }
  }
  return out;
}

Tensor SortformerStream::chunk_features(ops::Context& ctx, int64_t first, int64_t end) {
  if (whole_recording_) {
    if (!whole_features_.defined()) {
      asr::Features f = model_.compute_features(ctx, {std::span<const float>(audio_)}, false);
      whole_features_ = f.values;
      audio_.clear();
      audio_.shrink_to_fit();
    }
    return frame_rows(whole_features_, first, end);
  }
  // The audio around the frames, from a hop-aligned sample so that frame k of the excerpt is frame
  // k + s0 / hop of the recording; margins keep every STFT window and the pre-emphasis inside the excerpt.
  const int64_t hop = model_.features().hop_length();
  const int64_t margin = model_.config().preprocessor.n_fft / hop + 1;
  const int64_t s0 = std::max<int64_t>(0, first - margin) * hop;
  const int64_t e0 = std::min(samples_pushed_, (end + margin) * hop);
  STENO_CHECK(s0 >= audio_start_ && e0 <= audio_start_ + static_cast<int64_t>(audio_.size()),
              "streaming diarization: samples [{}, {}) are no longer buffered", s0, e0);
  const std::span<const float> excerpt(audio_.data() + (s0 - audio_start_), static_cast<size_t>(e0 - s0));
  asr::Features f = model_.compute_features(ctx, {excerpt}, false);
  const int64_t offset = first - s0 / hop;
  STENO_CHECK(f.lengths[0] >= offset + (end - first), "streaming diarization: {} feature frames for [{}, {})",
              f.lengths[0], first, end);
  return frame_rows(f.values, offset, offset + (end - first));
}

std::vector<float> SortformerStream::run_chunk(ops::Context& ctx, int64_t left, int64_t end, int64_t right) {
  const int64_t stt = next_frame_, sub = model_.config().encoder.subsampling_factor;
  const Tensor feats = ops::to_context(ctx, chunk_features(ctx, stt - left, end + right), model_.dtype());
  std::vector<int64_t> lengths{feats.dim(1)};
  const Tensor chunk_embs = model_.encoder().pre_encode(ctx, feats, lengths);
  FrameMatrix chunk = to_host_rows(ctx, chunk_embs);

  // [speaker cache; FIFO; chunk] through the Conformer layers, the Transformer and the head.
  FrameMatrix joined = state_.spkcache;
  joined.append(state_.fifo.values);
  joined.append(chunk.values);
  const Tensor host = Tensor::wrap(joined.values.data(), {1, joined.rows(), joined.width}, DType::kF32);
  const asr::EncoderOutput enc =
      model_.encoder().encode(ctx, ops::to_context(ctx, host, model_.dtype()), {joined.rows()});
  const FrameMatrix preds = to_host_rows(ctx, model_.speaker_probabilities(ctx, enc.encoded, enc.lengths));

  const int64_t lc = left / sub, rc = (right + sub - 1) / sub;  // NeMo: round(left / 8), ceil(right / 8)
  std::vector<float> chunk_preds = streaming_update(params_, state_, chunk, preds, lc, rc);
  frames_done_ += static_cast<int64_t>(chunk_preds.size()) / model_.num_speakers();
  ++chunks_done_;
  return chunk_preds;
}

StreamingDiarization diarize_streaming(const SortformerModel& model, ops::Context& ctx, std::span<const float> audio,
                                       const SortformerModulesConfig& params,
                                       const std::function<void(double, double)>& progress, double block_seconds) {
  SortformerStream stream(model, params);
  StreamingDiarization out;
  const auto block = static_cast<size_t>(std::max(1.0, block_seconds * model.sample_rate()));
  const double total = static_cast<double>(audio.size()) / model.sample_rate();
  for (size_t at = 0; at < audio.size(); at += block) {
    const std::vector<float> p = stream.push(ctx, audio.subspan(at, std::min(block, audio.size() - at)));
    out.probs.insert(out.probs.end(), p.begin(), p.end());
    if (progress) progress(static_cast<double>(std::min(at + block, audio.size())) / model.sample_rate(), total);
  }
  const std::vector<float> p = stream.finish(ctx);
  out.probs.insert(out.probs.end(), p.begin(), p.end());
  out.frames = stream.frames_done();
  out.chunks = stream.chunks_done();
  out.compressions = stream.state().compressions;
  return out;
}

}  // namespace steno::diar
