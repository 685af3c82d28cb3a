// The TDT beam search (tdt_beam.h). The rules, tie-breaks and orders follow tools/steno_ref/beam.py rule for rule
// (the products are batched per round here, one hypothesis at a time there), so that both give the same
// hypothesis: read that docstring for the algorithm.
#include "steno/asr/tdt_beam.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "steno/core/error.h"
#include "steno/ops/gemm.h"
#include "steno/ops/lstm.h"

namespace steno::asr {

void validate(const BeamOptions& o, int vocab_size) {
  STENO_CHECK(o.beam >= 1 && o.beam <= 256, "beam size must be in 1..256, got {}", o.beam);
  STENO_CHECK(o.token_candidates >= 1, "token candidates must be >= 1, got {}", o.token_candidates);
  STENO_CHECK(std::isfinite(o.lm_alpha) && std::isfinite(o.lm_beta) && o.prune > 0,
              "LM alpha and beta must be finite and prune positive");
  STENO_CHECK(o.lm_alpha == 0.0 || o.lm != nullptr, "an LM weight (alpha {}) needs an LM", o.lm_alpha);
  if (o.lm)
    STENO_CHECK(o.lm->vocab_size() == vocab_size, "the LM is for {} tokens, the model has {}", o.lm->vocab_size(),
                vocab_size);
}

std::optional<BeamOptions> DecodingRequest::resolve(int vocab_size) const {
  STENO_CHECK(decoding.empty() || decoding == "greedy" || decoding == "beam", "decoding must be greedy or beam, got '{}'",
              decoding);
  const bool beam_search = decoding == "beam" || (decoding.empty() && !lm.empty());
  if (!beam_search) {
    STENO_CHECK(lm.empty() && !lm_alpha && !lm_beta, "an LM and its weights need beam decoding (--decoding beam)");
    return std::nullopt;
  }
  BeamOptions o;
  o.beam = beam_size;
  if (!lm.empty()) o.lm = std::make_shared<const TokenLm>(TokenLm::load(lm, vocab_size));
  STENO_CHECK(o.lm || !lm_alpha || *lm_alpha == 0.0, "an LM weight (--lm-alpha) needs an LM (--lm)");
  o.lm_alpha = o.lm ? lm_alpha.value_or(kDefaultLmAlpha) : 0.0;
  o.lm_beta = lm_beta.value_or(o.lm ? kDefaultLmBeta : 0.0);
  validate(o, vocab_size);
  return o;
}

namespace {

// The prediction network after a token prefix: its LSTM state and joint.pred's output.
struct PredState {
  std::vector<std::vector<float>> h, c;  // per layer, [H]
  std::vector<float> g;                  // [J]
};

struct Hyp {
  double score = 0;
  std::vector<int> tokens, frames, durations;
  int64_t t = 0;
  int syms = 0;  // tokens of this hypothesis at frame t (emitted with duration 0)
  // The prediction network after `tokens`; null until the hypothesis is expanded: then one step from `parent` on
  // tokens.back() (most token expansions are pruned before they are expanded, and never pay for the step).
  std::shared_ptr<const PredState> state, parent;
};

class ClipSearch {
 public:
  ClipSearch(ops::Context& ctx, const TdtDecoder::Parameters& p, const BeamOptions& o, DecodeStats* stats)
      : ctx_(ctx), p_(p), o_(o), stats_(stats), blank_(p.vocab_size),
        n_out_(p.out_w.dim(0)), joint_(p.out_w.dim(1)) {}

  Hypothesis run(const Tensor& encoded /* [T, d] */) {
    const int64_t frames = encoded.dim(0);
    enc_proj_ = Tensor::empty({frames, joint_});
    ops::linear(ctx_, encoded, p_.enc_w, p_.enc_b, enc_proj_);
    Hyp root;
    root.state = step({nullptr}, {blank_}).front();  // SOS: the blank row of the embedding is zeros
    cache_.clear();
    std::vector<Hyp> hyps{root}, done;
    const bool use_lm = o_.lm != nullptr && o_.lm_alpha != 0.0;
    std::vector<double> lp(static_cast<size_t>(blank_) + 1), lpd(p_.durations.size()), lm(use_lm ? blank_ : 0);
    std::vector<int> history;
    while (!hyps.empty()) {
      int64_t t0 = hyps[0].t;
      for (const Hyp& h : hyps) t0 = std::min(t0, h.t);
      std::vector<Hyp> merged;
      std::map<std::pair<std::vector<int>, int64_t>, size_t> at;
      auto add = [&](Hyp&& h) {
        auto key = std::make_pair(h.tokens, h.t);
        const auto it = at.find(key);
        if (it == at.end()) {
          at.emplace(std::move(key), merged.size());
          merged.push_back(std::move(h));
        } else if (merged[it->second].score < h.score) {
          merged[it->second] = std::move(h);
        }
      };
      // This round's hypotheses, their states (one batched prediction step for the prefixes not yet stepped) and
      // their joint outputs (one batched product): the same values as one at a time, in fewer, larger GEMMs.
      std::vector<const Hyp*> cur;
      for (const Hyp& h : hyps)
        if (h.t == t0) cur.push_back(&h);
      const std::vector<std::shared_ptr<const PredState>> states = states_of(cur);
      const Tensor logits = joint(enc_proj_.data<float>() + t0 * joint_, states);
      for (size_t i = 0; i < cur.size(); ++i) {
        const Hyp& h = *cur[i];
        const std::shared_ptr<const PredState>& state = states[i];
        const float* row = logits.data<float>() + static_cast<int64_t>(i) * n_out_;
        log_softmax(row, lp);
        log_softmax(row + lp.size(), lpd);
        for (size_t di = 0; di < p_.durations.size(); ++di) {
          const int d = p_.durations[di];
          if (d < 1) continue;
          Hyp b = h;
          b.score = h.score + lp[static_cast<size_t>(blank_)] + lpd[di];
          b.t = h.t + d;
          b.syms = 0;
          b.state = state;
          add(std::move(b));
        }
        std::vector<int> best(static_cast<size_t>(blank_));
        std::iota(best.begin(), best.end(), 0);
        const size_t n_best = std::min(best.size(), static_cast<size_t>(o_.token_candidates));
        std::partial_sort(best.begin(), best.begin() + static_cast<std::ptrdiff_t>(n_best), best.end(),
                          [&](int a, int b) { return lp[a] > lp[b] || (lp[a] == lp[b] && a < b); });
        if (use_lm) {
          history.assign(1, o_.lm->bos());
          history.insert(history.end(), h.tokens.begin(), h.tokens.end());
          o_.lm->ln_probs(history, lm);
        }
        for (size_t i = 0; i < n_best; ++i) {
          const int k = best[i];
          const double s2 = h.score + lp[static_cast<size_t>(k)] + o_.lm_beta + (use_lm ? o_.lm_alpha * lm[k] : 0.0);
          for (size_t di = 0; di < p_.durations.size(); ++di) {
            const int d = p_.durations[di];
            if (d == 0 && h.syms + 1 >= p_.max_symbols) continue;
            Hyp e;
            e.score = s2 + lpd[di];
            e.tokens = h.tokens;
            e.tokens.push_back(k);
            e.frames = h.frames;
            e.frames.push_back(static_cast<int>(h.t));
            e.durations = h.durations;
            e.durations.push_back(d);
            e.t = h.t + d;
            e.syms = d == 0 ? h.syms + 1 : 0;
            e.parent = state;  // e.state stays null until e is expanded
            add(std::move(e));
          }
        }
      }
      // The pool: the hypotheses at later frames first, then this round's, in the order made.
      std::vector<Hyp> pool;
      for (Hyp& h : hyps)
        if (h.t != t0) pool.push_back(std::move(h));
      for (Hyp& h : merged) pool.push_back(std::move(h));
      std::vector<Hyp> live;
      for (Hyp& h : pool) (h.t >= frames ? done : live).push_back(std::move(h));
      std::stable_sort(live.begin(), live.end(), [](const Hyp& a, const Hyp& b) { return a.score > b.score; });
      if (live.size() > static_cast<size_t>(o_.beam)) live.resize(static_cast<size_t>(o_.beam));
      if (!done.empty()) {
        double top = done[0].score;
        for (const Hyp& h : done) top = std::max(top, h.score);
        const double floor = top - o_.prune;
        std::erase_if(live, [&](const Hyp& h) { return !(h.score > floor); });
      }
      hyps = std::move(live);
    }
    Hypothesis out;
    if (done.empty()) return out;
    const Hyp* best = &done[0];
    for (const Hyp& h : done)
      if (h.score > best->score) best = &h;
    out.tokens = best->tokens;
    out.timestamps = best->frames;
    out.durations = best->durations;
    return out;
  }

 private:
  // The states after each hypothesis's tokens: a token prefix is stepped once, when a hypothesis holding it is
  // first expanded (most token expansions are pruned before), all of a round's new prefixes in one batch.
  std::vector<std::shared_ptr<const PredState>> states_of(const std::vector<const Hyp*>& hyps) {
    std::vector<const PredState*> from;
    std::vector<int> tokens;
    std::vector<const std::vector<int>*> prefixes;
    for (const Hyp* h : hyps) {
      if (h->state || cache_.count(h->tokens)) continue;
      if (std::find_if(prefixes.begin(), prefixes.end(), [&](auto* p) { return *p == h->tokens; }) != prefixes.end())
        continue;
      from.push_back(h->parent.get());
      tokens.push_back(h->tokens.back());
      prefixes.push_back(&h->tokens);
    }
    if (!tokens.empty()) {
      std::vector<std::shared_ptr<const PredState>> made = step(from, tokens);
      for (size_t i = 0; i < made.size(); ++i) cache_[*prefixes[i]] = std::move(made[i]);
    }
    std::vector<std::shared_ptr<const PredState>> out;
    for (const Hyp* h : hyps) out.push_back(h->state ? h->state : cache_.at(h->tokens));
    return out;
  }

  // One prediction-network step for each row: from from[i] (null: the zero state) on tokens[i].
  std::vector<std::shared_ptr<const PredState>> step(const std::vector<const PredState*>& from,
                                                     const std::vector<int>& tokens) {
    const int64_t m = static_cast<int64_t>(tokens.size()), in = p_.embed.dim(1);
    const size_t layers = p_.w_ih.size();
    Tensor x = Tensor::empty({m, in});
    for (int64_t i = 0; i < m; ++i)
      std::copy_n(p_.embed.data<float>() + static_cast<int64_t>(tokens[i]) * in, in, x.data<float>() + i * in);
    std::vector<std::shared_ptr<PredState>> next(static_cast<size_t>(m));
    for (auto& n : next) n = std::make_shared<PredState>();
    for (size_t l = 0; l < layers; ++l) {
      const int64_t hidden = p_.w_hh[l].dim(1);
      Tensor h = Tensor::zeros({m, hidden}), c = Tensor::zeros({m, hidden});
      for (int64_t i = 0; i < m; ++i)
        if (const PredState* f = from[static_cast<size_t>(i)]) {
          std::copy(f->h[l].begin(), f->h[l].end(), h.data<float>() + i * hidden);
          std::copy(f->c[l].begin(), f->c[l].end(), c.data<float>() + i * hidden);
        }
      ops::lstm_cell(ctx_, x, h, c, p_.w_ih[l], p_.w_hh[l], p_.b_ih[l], p_.b_hh[l], h, c);
      for (int64_t i = 0; i < m; ++i) {
        next[static_cast<size_t>(i)]->h.emplace_back(h.data<float>() + i * hidden, h.data<float>() + (i + 1) * hidden);
        next[static_cast<size_t>(i)]->c.emplace_back(c.data<float>() + i * hidden, c.data<float>() + (i + 1) * hidden);
      }
      x = h;
    }
    Tensor g = Tensor::empty({m, joint_});
    ops::linear(ctx_, x, p_.pred_w, p_.pred_b, g);
    for (int64_t i = 0; i < m; ++i)
      next[static_cast<size_t>(i)]->g.assign(g.data<float>() + i * joint_, g.data<float>() + (i + 1) * joint_);
    if (stats_) stats_->lstm_updates += m;
    return {next.begin(), next.end()};
  }

  // The joint's outputs [n, n_out] for n prediction states at one encoder frame.
  Tensor joint(const float* enc_row, const std::vector<std::shared_ptr<const PredState>>& states) {
    const int64_t n = static_cast<int64_t>(states.size());
    Tensor act = Tensor::empty({n, joint_}), logits = Tensor::empty({n, n_out_});
    for (int64_t i = 0; i < n; ++i) {
      float* a = act.data<float>() + i * joint_;
      const std::vector<float>& g = states[static_cast<size_t>(i)]->g;
      for (int64_t j = 0; j < joint_; ++j) a[j] = std::max(0.0f, enc_row[j] + g[static_cast<size_t>(j)]);
    }
    ops::linear(ctx_, act, p_.out_w, p_.out_b, logits);
    if (stats_) stats_->steps += n;
    return logits;
  }

  static void log_softmax(const float* x, std::vector<double>& out) {
    double m = x[0];
    for (size_t i = 1; i < out.size(); ++i) m = std::max(m, static_cast<double>(x[i]));
    double s = 0;
    for (size_t i = 0; i < out.size(); ++i) s += std::exp(x[i] - m);
    const double lse = m + std::log(s);
    for (size_t i = 0; i < out.size(); ++i) out[i] = x[i] - lse;
  }

  ops::Context& ctx_;
  const TdtDecoder::Parameters& p_;
  const BeamOptions& o_;
  DecodeStats* stats_;
  const int blank_;
  const int64_t n_out_, joint_;
  Tensor enc_proj_;
  std::map<std::vector<int>, std::shared_ptr<const PredState>> cache_;
};

}  // namespace

std::vector<Hypothesis> beam_decode(ops::Context& ctx, const TdtDecoder::Parameters& p, const Tensor& encoded,
                                    const std::vector<int64_t>& lengths, const BeamOptions& options,
                                    DecodeStats* stats) {
  STENO_CHECK(encoded.rank() == 3 && static_cast<int64_t>(lengths.size()) == encoded.dim(0) &&
                  encoded.device().is_cpu() && encoded.dtype() == DType::kF32,
              "beam decode: encoded must be f32 [B, T, d] on the CPU with B lengths, got {} and {} lengths",
              shape_str(encoded.shape()), lengths.size());
  validate(options, p.vocab_size);
  std::vector<Hypothesis> out(lengths.size());
  for (size_t b = 0; b < lengths.size(); ++b) {
    const int64_t frames = std::min(lengths[b], encoded.dim(1));
    if (frames <= 0) continue;
    const Tensor clip = encoded.narrow0(static_cast<int64_t>(b), static_cast<int64_t>(b) + 1)
                            .reshape({encoded.dim(1), encoded.dim(2)})
                            .narrow0(0, frames);
    out[b] = ClipSearch(ctx, p, options, stats).run(clip);
  }
  return out;
}

}  // namespace steno::asr
