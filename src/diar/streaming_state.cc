#include "steno/diar/streaming_state.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "steno/core/error.h"

namespace steno::diar {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
// NeMo subtracts scale * log(0.5) from boosted scores and log(0.5) from every score; torch applies the Python
// double to an f32 tensor as an f32 constant, and so does this.
const float kLogHalf = static_cast<float>(std::log(0.5));

// Copies rows [first, first + n) of m.
FrameMatrix slice_rows(const FrameMatrix& m, int64_t first, int64_t n) {
  FrameMatrix out{m.width, {}};
  out.values.assign(m.values.begin() + first * m.width, m.values.begin() + (first + n) * m.width);
  return out;
}

// The k highest of values[i * stride] (i < n), ties to the earlier frame (torch leaves ties unspecified; scores
// are continuous, so exact ties at the boundary do not occur in practice).
std::vector<int64_t> top_k(const std::vector<float>& values, int64_t n, int64_t stride, int64_t offset, int64_t k) {
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min(k, n);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int64_t a, int64_t b) {
    const float va = values[a * stride + offset], vb = values[b * stride + offset];
    return va > vb || (va == vb && a < b);
  });
  idx.resize(static_cast<size_t>(k));
  return idx;
}

// NeMo's _get_silence_profile: frames whose probabilities sum below sil_threshold update the running mean.
void update_silence_profile(const SortformerModulesConfig& params, StreamingSortformerState& state,
                            const FrameMatrix& embs, const FrameMatrix& preds) {
  const float threshold = static_cast<float>(params.sil_threshold);
  std::vector<float> sum(static_cast<size_t>(embs.width), 0.0f);
  int64_t count = 0;
  for (int64_t t = 0; t < preds.rows(); ++t) {
    const auto p = preds.row(t);
    if (std::accumulate(p.begin(), p.end(), 0.0f) >= threshold) continue;
    ++count;
    const auto e = embs.row(t);
    for (size_t d = 0; d < sum.size(); ++d) sum[d] += e[d];
  }
  if (count == 0) return;
  const int64_t total = state.n_sil_frames + count;
  for (size_t d = 0; d < sum.size(); ++d)
    state.mean_sil_emb[d] =
        (state.mean_sil_emb[d] * static_cast<float>(state.n_sil_frames) + sum[d]) / static_cast<float>(total);
  state.n_sil_frames = total;
}

}  // namespace

StreamingSortformerState::StreamingSortformerState(int64_t d_model, int num_speakers)
    : spkcache{d_model, {}},
      spkcache_preds{num_speakers, {}},
      fifo{d_model, {}},
      fifo_preds{num_speakers, {}},
      mean_sil_emb(static_cast<size_t>(d_model), 0.0f) {}

void compress_speaker_cache(const SortformerModulesConfig& params, FrameMatrix& embs, FrameMatrix& preds,
                            std::span<const float> mean_sil_emb) {
  const int64_t n = preds.rows(), spk = preds.width, keep = params.spkcache_len;
  const int64_t sil = params.spkcache_sil_frames_per_spk;
  STENO_CHECK(n > keep && embs.rows() == n, "speaker cache: compressing {} frames ({} embeddings) to {}", n,
              embs.rows(), keep);
  const int64_t per_spk = keep / spk - sil;
  const auto strong = static_cast<int64_t>(std::floor(static_cast<double>(per_spk) * params.strong_boost_rate));
  const auto weak = static_cast<int64_t>(std::floor(static_cast<double>(per_spk) * params.weak_boost_rate));
  const auto min_pos = static_cast<int64_t>(std::floor(static_cast<double>(per_spk) * params.min_pos_scores_rate));

  // _get_log_pred_scores: high for confident speech of one speaker alone.
  const float floor_p = static_cast<float>(params.pred_score_threshold);
  std::vector<float> scores(static_cast<size_t>(n * spk));
  for (int64_t t = 0; t < n; ++t) {
    const auto p = preds.row(t);
    float log_1_sum = 0.0f;
    for (int64_t s = 0; s < spk; ++s) log_1_sum += std::log(std::max(1.0f - p[s], floor_p));
    for (int64_t s = 0; s < spk; ++s) {
      const float lp = std::log(std::max(p[s], floor_p)), l1 = std::log(std::max(1.0f - p[s], floor_p));
      scores[t * spk + s] = lp - l1 + log_1_sum - kLogHalf;
    }
  }
  // _disable_low_scores: non-speech out; overlapped (non-positive) speech out for speakers with enough clean frames.
  std::vector<int64_t> positives(static_cast<size_t>(spk), 0);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t s = 0; s < spk; ++s) {
      float& v = scores[t * spk + s];
      if (!(preds.row(t)[s] > 0.5f)) v = -kInf;
      if (v > 0) ++positives[s];
    }
  for (int64_t t = 0; t < n; ++t)
    for (int64_t s = 0; s < spk; ++s) {
      float& v = scores[t * spk + s];
      if (preds.row(t)[s] > 0.5f && !(v > 0) && positives[s] >= min_pos) v = -kInf;
    }
  // The frames that arrived since the last compression are preferred a little.
  const float boost_latest = static_cast<float>(params.scores_boost_latest);
  if (boost_latest > 0)
    for (int64_t t = keep; t < n; ++t)
      for (int64_t s = 0; s < spk; ++s) scores[t * spk + s] += boost_latest;
  // _boost_topk_scores: every speaker's best frames first (strong, x2), then more of them (weak, x1).
  for (const auto& [count, scale] : {std::pair{strong, 2.0f}, std::pair{weak, 1.0f}})
    for (int64_t s = 0; s < spk; ++s)
      for (const int64_t t : top_k(scores, n, spk, s, count)) scores[t * spk + s] -= scale * kLogHalf;

  // _get_topk_indices over speaker-major (speaker, frame) pairs, each speaker followed by `sil` silence slots of
  // score +inf; -inf picks and silence slots are disabled. Sorting the picks keeps speaker-then-time order, with
  // disabled -inf picks last (NeMo's max_index placeholder).
  const int64_t row = n + sil;
  std::vector<float> flat(static_cast<size_t>(spk * row));
  for (int64_t s = 0; s < spk; ++s) {
    for (int64_t t = 0; t < n; ++t) flat[s * row + t] = scores[t * spk + s];
    for (int64_t t = n; t < row; ++t) flat[s * row + t] = kInf;
  }
  constexpr int64_t kDisabled = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> picks = top_k(flat, spk * row, 1, 0, keep);
  for (int64_t& i : picks)
    if (flat[i] == -kInf) i = kDisabled;
  std::sort(picks.begin(), picks.end());

  FrameMatrix kept_embs{embs.width, {}}, kept_preds{spk, {}};
  kept_embs.values.reserve(static_cast<size_t>(keep * embs.width));
  const std::vector<float> zero_preds(static_cast<size_t>(spk), 0.0f);
  for (const int64_t i : picks) {
    const bool disabled = i == kDisabled || i % row >= n;
    kept_embs.append(disabled ? mean_sil_emb : embs.row(i % row));
    kept_preds.append(disabled ? std::span<const float>(zero_preds) : preds.row(i % row));
  }
  embs = std::move(kept_embs);
  preds = std::move(kept_preds);
}

std::vector<float> streaming_update(const SortformerModulesConfig& params, StreamingSortformerState& state,
                                    const FrameMatrix& chunk, const FrameMatrix& preds, int64_t lc, int64_t rc) {
  const int64_t cache_rows = state.spkcache.rows(), fifo_rows = state.fifo.rows();
  const int64_t chunk_len = chunk.rows() - lc - rc;
  STENO_CHECK(chunk_len >= 0 && lc >= 0 && rc >= 0, "streaming update: chunk of {} frames with context {} + {}",
              chunk.rows(), lc, rc);
  STENO_CHECK(preds.rows() == cache_rows + fifo_rows + chunk.rows(),
              "streaming update: {} predictions for {} cache + {} FIFO + {} chunk frames", preds.rows(), cache_rows,
              fifo_rows, chunk.rows());

  // The FIFO's predictions are refreshed from this pass; the chunk's own frames join the FIFO.
  state.fifo_preds = slice_rows(preds, cache_rows, fifo_rows);
  const FrameMatrix chunk_preds = slice_rows(preds, cache_rows + fifo_rows + lc, chunk_len);
  state.fifo.append(slice_rows(chunk, lc, chunk_len).values);
  state.fifo_preds.append(chunk_preds.values);

  if (fifo_rows + chunk_len > params.fifo_len) {
    int64_t pop = std::max<int64_t>(params.spkcache_update_period, chunk_len - params.fifo_len + fifo_rows);
    pop = std::min(pop, fifo_rows + chunk_len);
    const FrameMatrix pop_embs = slice_rows(state.fifo, 0, pop), pop_preds = slice_rows(state.fifo_preds, 0, pop);
    update_silence_profile(params, state, pop_embs, pop_preds);
    state.fifo.drop_front(pop);
    state.fifo_preds.drop_front(pop);
    state.spkcache.append(pop_embs.values);
    if (state.spkcache_preds_set) state.spkcache_preds.append(pop_preds.values);
    if (state.spkcache.rows() > params.spkcache_len) {
      if (!state.spkcache_preds_set) {  // the first compression: the cache's predictions from this pass
        state.spkcache_preds = slice_rows(preds, 0, cache_rows);
        state.spkcache_preds.append(pop_preds.values);
        state.spkcache_preds_set = true;
      }
      compress_speaker_cache(params, state.spkcache, state.spkcache_preds, state.mean_sil_emb);
      ++state.compressions;
    }
  }
  return chunk_preds.values;
}

}  // namespace steno::diar
