// Streaming Sortformer: a recording of any length diarized chunk by chunk in bounded memory, as NeMo's
// forward_streaming does it (synchronous update, one stream per recording; docs/diarization.md "Streaming").
//
// Features are cut into chunks of chunk_len output frames (x8 feature frames) with chunk_left_context and
// chunk_right_context frames of context; each chunk's pre-encode embeddings are encoded behind the speaker cache
// and the FIFO (streaming_state.h), and its probabilities are final as soon as it has run: a chunk's result is
// ready (chunk_len + chunk_right_context) frames after it starts, the latency the presets are named after.
//
// Like NeMo's streaming mode, the audio is not peak-normalised. Features are computed per chunk from the audio
// around it when the model's front end has no normalisation (Sortformer v2's "NA"), so memory stays bounded;
// a model with per-feature normalisation needs the whole recording's statistics, so its stream keeps the audio
// until finish() (memory grows with the recording; said in the log).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "steno/diar/sortformer_config.h"
#include "steno/diar/sortformer_model.h"
#include "steno/diar/streaming_state.h"
#include "steno/ops/context.h"

namespace steno::diar {

// The published operating points of Streaming Sortformer v2 (NeMo's model card), by latency:
//   "1.04s": chunk_len 6, chunk_right_context 7, fifo_len 188, spkcache_update_period 144, spkcache_len 188
//   "30.4s": chunk_len 340, chunk_right_context 40, fifo_len 40, spkcache_update_period 300, spkcache_len 188
// and "model": the model's own config.json values. Other fields keep the base's values.
std::vector<std::string> streaming_preset_names();
SortformerModulesConfig streaming_preset(const SortformerModulesConfig& base, std::string_view name);

// Applies "field=value" to a streaming parameter of `params` (the integer fields chunk_len, chunk_left_context,
// chunk_right_context, fifo_len, spkcache_update_period, spkcache_len, spkcache_sil_frames_per_spk; the real
// fields pred_score_threshold, scores_boost_latest, sil_threshold, strong_boost_rate, weak_boost_rate,
// min_pos_scores_rate), then validates; kInvalidArgument naming the field otherwise.
void set_streaming_parameter(SortformerModulesConfig& params, std::string_view assignment);

// Seconds from a frame's audio to its result: (chunk_len + chunk_right_context) frames.
double streaming_latency_seconds(const SortformerModulesConfig& params, double frame_seconds);

// One recording's stream. Not thread-safe; the model is shared read-only.
class SortformerStream {
 public:
  // whole_recording_features: compute the features of the whole recording at finish(), as NeMo does, instead of
  // chunk by chunk (always so for a front end that normalises per feature). The results are the same; tests
  // use it to show that.
  SortformerStream(const SortformerModel& model, const SortformerModulesConfig& params,
                   bool whole_recording_features = false);
  ~SortformerStream();

  // Appends audio (the model's sample rate, [-1, 1]) and runs every chunk whose right context it completes.
  // Returns the probabilities of the frames it finished, [frames, speakers] row-major.
  std::vector<float> push(ops::Context& ctx, std::span<const float> audio);
  // The end of the recording: runs the remaining chunks and returns their frames. Further calls are errors.
  std::vector<float> finish(ops::Context& ctx);

  int64_t frames_done() const { return frames_done_; }
  int64_t chunks_done() const { return chunks_done_; }
  int64_t samples_pushed() const { return samples_pushed_; }
  int64_t samples_buffered() const { return static_cast<int64_t>(audio_.size()); }
  const StreamingSortformerState& state() const { return state_; }
  const SortformerModulesConfig& params() const { return params_; }

 private:
  std::vector<float> run_ready_chunks(ops::Context& ctx);
  std::vector<float> run_chunk(ops::Context& ctx, int64_t left, int64_t end, int64_t right);
  Tensor chunk_features(ops::Context& ctx, int64_t first, int64_t end);  // feature frames [first, end), [1, n, mels]

  const SortformerModel& model_;
  SortformerModulesConfig params_;
  StreamingSortformerState state_;
  bool whole_recording_;              // per-feature normalisation: features of the whole recording at finish()
  Tensor whole_features_;             // [1, F, mels] once computed
  std::vector<float> audio_;          // the audio still needed, from sample audio_start_
  int64_t audio_start_ = 0;
  int64_t samples_pushed_ = 0;
  int64_t next_frame_ = 0;            // feature frame where the next chunk starts (NeMo's stt_feat)
  int64_t total_frames_ = -1;         // valid feature frames of the recording, once finished
  int64_t frames_done_ = 0, chunks_done_ = 0;
  bool finished_ = false;
};

struct StreamingDiarization {
  std::vector<float> probs;  // [frames, speakers]
  int64_t frames = 0;
  int64_t chunks = 0;
  int64_t compressions = 0;
};

// A whole recording through a SortformerStream, pushed in blocks of `block_seconds`; `progress` (optional) is
// called after each block with (seconds done, seconds total).
StreamingDiarization diarize_streaming(const SortformerModel& model, ops::Context& ctx, std::span<const float> audio,
                                       const SortformerModulesConfig& params,
                                       const std::function<void(double, double)>& progress = {},
                                       double block_seconds = 10.0);

}  // namespace steno::diar
