// The state of one streaming Sortformer stream and NeMo's synchronous update of it (SortformerModules.
// streaming_update and the arrival-order speaker cache compression, docs/diarization.md "Streaming").
//
// Each chunk is encoded together with a speaker cache (frames chosen to represent every speaker heard so far, in
// arrival order) and a FIFO of the most recent frames. After the chunk, the update appends the chunk's frames to
// the FIFO; when the FIFO overflows, its oldest frames move to the speaker cache, and when the cache overflows it
// is compressed back to spkcache_len frames by per-speaker importance scores.
//
// Everything here is host arithmetic in f32 on small arrays (a few hundred frames): embeddings are the encoder's
// pre-encode outputs (d_model wide), predictions the model's sigmoids. Keeping the state on the host costs one
// small upload per chunk and keeps the bookkeeping exact and device-independent.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "steno/diar/sortformer_config.h"

namespace steno::diar {

// Row-major frames x width, growing and shrinking at either end.
struct FrameMatrix {
  int64_t width = 0;
  std::vector<float> values;  // rows() * width

  int64_t rows() const { return width == 0 ? 0 : static_cast<int64_t>(values.size()) / width; }
  std::span<const float> row(int64_t r) const { return {values.data() + r * width, static_cast<size_t>(width)}; }
  std::span<float> row(int64_t r) { return {values.data() + r * width, static_cast<size_t>(width)}; }
  void append(std::span<const float> rows_values) { values.insert(values.end(), rows_values.begin(), rows_values.end()); }
  // Removes the first n rows.
  void drop_front(int64_t n) { values.erase(values.begin(), values.begin() + n * width); }
};

// NeMo's StreamingSortformerState (synchronous form, one stream).
struct StreamingSortformerState {
  FrameMatrix spkcache;        // [<= spkcache_len, d_model]
  FrameMatrix spkcache_preds;  // [spkcache rows, speakers]; empty until the cache is first compressed
  bool spkcache_preds_set = false;
  FrameMatrix fifo;            // [<= fifo_len (+ one chunk while updating), d_model]
  FrameMatrix fifo_preds;      // [fifo rows, speakers]
  std::vector<float> mean_sil_emb;  // [d_model]: running mean of the frames judged silent on leaving the FIFO
  int64_t n_sil_frames = 0;
  int64_t compressions = 0;  // how often the cache was compressed (for logs and tests)

  StreamingSortformerState(int64_t d_model, int num_speakers);
};

// One chunk's update: `chunk` holds the chunk's pre-encode embeddings with lc left- and rc right-context frames
// [lc + chunk_len + rc, d_model]; `preds` the model's probabilities for [spkcache; fifo; chunk] (rows in that
// order). Returns the chunk's own predictions [chunk_len, speakers] (its rows lc .. lc + chunk_len).
std::vector<float> streaming_update(const SortformerModulesConfig& params, StreamingSortformerState& state,
                                    const FrameMatrix& chunk, const FrameMatrix& preds, int64_t lc, int64_t rc);

// The cache compression on its own: keeps spkcache_len of `embs`/`preds` rows ([n, d_model] / [n, speakers],
// n > spkcache_len) as NeMo's _compress_spkcache does at inference (no speaker permutation): importance scores,
// non-speech and (for speakers with enough clean frames) overlapped frames disabled, the newest frames boosted,
// each speaker's best frames boosted twice, spkcache_sil_frames_per_spk silence slots per speaker, then the
// top-scoring (speaker, frame) pairs in speaker-then-time order; disabled slots get the mean silence embedding
// and zero predictions. Exposed for tests.
void compress_speaker_cache(const SortformerModulesConfig& params, FrameMatrix& embs, FrameMatrix& preds,
                            std::span<const float> mean_sil_emb);

}  // namespace steno::diar
