// The TDT beam search (tdt_beam.h). The rules, tie-breaks and orders follow tools/steno_ref/beam.py rule for rule
// (the products are batched per round here, one hypothesis at a time there), so that both give the same
// hypothesis: read that docstring for the algorithm.
#include "steno/asr/tdt_beam.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "steno/asr/tokenizer.h"
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
  STENO_CHECK(std::isfinite(o.unknown_word_penalty) && o.unknown_word_penalty >= 0,
              "the unknown-word penalty must be finite and >= 0, got {}", o.unknown_word_penalty);
  STENO_CHECK(o.unknown_word_penalty == 0.0 || o.lexicon != nullptr, "an unknown-word penalty needs a lexicon");
  if (o.lexicon)
    STENO_CHECK(o.lexicon->vocab_size() == vocab_size, "the lexicon is for {} tokens, the model has {}",
                o.lexicon->vocab_size(), vocab_size);
}

std::optional<BeamOptions> DecodingRequest::resolve(int vocab_size) const {
  STENO_CHECK(lexicon.empty(), "a lexicon needs the model's tokenizer: resolve the request with the model");
  return resolve_tokens(vocab_size);
}

std::optional<BeamOptions> DecodingRequest::resolve_tokens(int vocab_size) const {
  STENO_CHECK(decoding.empty() || decoding == "greedy" || decoding == "beam", "decoding must be greedy or beam, got '{}'",
              decoding);
  const bool beam_search = decoding == "beam" || (decoding.empty() && (!lm.empty() || !lexicon.empty()));
  if (!beam_search) {
    STENO_CHECK(lm.empty() && !lm_alpha && !lm_beta, "an LM and its weights need beam decoding (--decoding beam)");
    STENO_CHECK(lexicon.empty() && !unknown_word_penalty, "a lexicon needs beam decoding (--decoding beam)");
    return std::nullopt;
  }
  STENO_CHECK(beam_size >= 0, "beam size must be in 1..256, got {}", beam_size);
  BeamOptions o;
  if (beam_size > 0) o.beam = beam_size;
  if (!lm.empty()) o.lm = std::make_shared<const TokenLm>(TokenLm::load(lm, vocab_size));
  STENO_CHECK(o.lm || !lm_alpha || *lm_alpha == 0.0, "an LM weight (--lm-alpha) needs an LM (--lm)");
  o.lm_alpha = o.lm ? lm_alpha.value_or(kDefaultLmAlpha) : 0.0;
  o.lm_beta = lm_beta.value_or(o.lm ? kDefaultLmBeta : 0.0);
  validate(o, vocab_size);
  return o;
}

std::optional<BeamOptions> DecodingRequest::resolve(const ModelConfig& model,
                                                    const std::filesystem::path& model_dir) const {
  const DecodingConfig& d = model.decoding;
  DecodingRequest r = *this;
  const bool model_default = decoding.empty() && lm.empty() && d.strategy == "beam";
  if (model_default) {
    r.decoding = "beam";
    if (r.beam_size == 0) r.beam_size = d.beam_size;
    if (!d.lm.empty()) {
      r.lm = (model_dir / d.lm).string();
      if (!r.lm_alpha) r.lm_alpha = d.lm_alpha;
      if (!r.lm_beta) r.lm_beta = d.lm_beta;
    }
    if (r.lexicon.empty() && !d.lexicon.empty()) {
      r.lexicon = (model_dir / d.lexicon).string();
      if (!r.unknown_word_penalty) r.unknown_word_penalty = d.unknown_word_penalty;
    }
  }
  std::optional<BeamOptions> o = r.resolve_tokens(model.blank_id());
  STENO_CHECK(!r.unknown_word_penalty || !r.lexicon.empty(), "an unknown-word penalty needs a lexicon (--lexicon)");
  if (!r.lexicon.empty()) {
    const Tokenizer tokenizer((model_dir / model.tokenizer.model).string());
    std::vector<std::string> pieces;
    for (int id = 0; id < tokenizer.vocab_size(); ++id) pieces.push_back(tokenizer.piece(id));
    o->lexicon = std::make_shared<const Lexicon>(Lexicon::load(r.lexicon, pieces));
    o->unknown_word_penalty = r.unknown_word_penalty.value_or(kDefaultUnknownWordPenalty);
    validate(*o, model.blank_id());
  }
  return o;
}

namespace {

// The prediction network after a token prefix: its LSTM state and joint.pred's output.
struct PredState {
  std::vector<std::vector<float>> h, c;  // per layer, [H]
  std::vector<float> g;                  // [J]
};

// Drops a chain of shared nodes linked by `parent` without recursing once per node: a clip's transcript can be
// tens of thousands of tokens long, and the default destructor's recursion would overflow the stack.
template <class Node>
void release_chain(std::shared_ptr<Node>& head) {
  std::shared_ptr<Node> node = std::move(head);
  while (node && node.use_count() == 1) node = std::move(node->parent);
}

// A token sequence, one node per distinct sequence within a clip's search (a trie): hypotheses with the same
// tokens hold the same node, so merging compares pointers, and a longer sequence shares its prefix's nodes, so a
// hypothesis costs the same however long its transcript (the search is linear in the audio's length, not
// quadratic). Nodes live while a hypothesis holds them or a sequence they begin.
struct Prefix {
  int token = -1;  // the last token; -1 at the root (no tokens)
  std::shared_ptr<Prefix> parent;
  std::vector<std::pair<int, std::weak_ptr<Prefix>>> children;  // the sequences made from this one, by token
  // With a lexicon: the last word's letters so far, and whether some listed word begins with them (else its
  // penalty is paid). Written by spell() whenever an expansion makes or reaches the node (the same values each time).
  std::string word;
  bool word_known = true;
  // The prediction network after these tokens, while a hypothesis holds it: each sequence is stepped once.
  std::weak_ptr<const PredState> state;
  ~Prefix() { release_chain(parent); }
};

// The sequence `prefix` followed by `token`: the existing node if there is one, so that equal sequences are equal
// pointers.
std::shared_ptr<Prefix> extend(const std::shared_ptr<Prefix>& prefix, int token) {
  std::pair<int, std::weak_ptr<Prefix>>* slot = nullptr;  // where to note a new node: a dead child's place
  for (auto& child : prefix->children) {
    if (child.first == token)
      if (std::shared_ptr<Prefix> live = child.second.lock()) return live;
    if (child.second.expired()) slot = &child;
  }
  auto node = std::make_shared<Prefix>();
  node->token = token;
  node->parent = prefix;
  if (slot)
    *slot = {token, node};
  else
    prefix->children.emplace_back(token, node);
  return node;
}

// Where a hypothesis emitted its last token (frame and duration), linked to where it emitted the one before:
// hypotheses that share their past share these nodes.
struct Emission {
  int frame = 0, duration = 0;
  std::shared_ptr<Emission> parent;
  ~Emission() { release_chain(parent); }
};

struct Hyp {
  double score = 0;
  int64_t t = 0;
  int syms = 0;  // tokens of this hypothesis at frame t (emitted with duration 0)
  std::shared_ptr<Prefix> tokens;
  std::shared_ptr<Emission> emitted;  // null before the first token
  // The last token's emission while the hypothesis is new: it becomes a node of `emitted` only if the hypothesis
  // survives its round (most token expansions are pruned, and a node each was a malloc each). -1: none pending.
  int pending_frame = -1, pending_duration = 0;
  // The prediction network after `tokens`; null until the hypothesis is expanded: then one step from `parent` on
  // its last token (most token expansions are pruned before they are expanded, and never pay for the step).
  std::shared_ptr<const PredState> state, parent;
};

struct MergeKey {
  const Prefix* tokens;
  int64_t t;
  bool operator==(const MergeKey&) const = default;
};
struct MergeKeyHash {
  size_t operator()(const MergeKey& k) const {
    return std::hash<const void*>()(k.tokens) ^ (std::hash<int64_t>()(k.t) * 0x9E3779B97F4A7C15ULL);
  }
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
    root.tokens = std::make_shared<Prefix>();
    root.state = step({nullptr}, {blank_}).front();  // SOS: the blank row of the embedding is zeros
    root.tokens->state = root.state;
    std::vector<Hyp> hyps{root};
    std::optional<Hyp> best;  // the finished hypothesis with the highest score (ties: the first finished)
    const bool use_lm = o_.lm != nullptr && o_.lm_alpha != 0.0;
    const bool use_lexicon = o_.lexicon != nullptr;
    std::vector<double> lp(static_cast<size_t>(blank_) + 1), lpd(p_.durations.size()), lm(use_lm ? blank_ : 0);
    std::vector<int> history;
    std::vector<Hyp> merged;
    std::unordered_map<MergeKey, size_t, MergeKeyHash> at;
    while (!hyps.empty()) {
      int64_t t0 = hyps[0].t;
      for (const Hyp& h : hyps) t0 = std::min(t0, h.t);
      merged.clear();
      at.clear();
      auto add = [&](Hyp&& h) {
        const auto [it, fresh] = at.try_emplace(MergeKey{h.tokens.get(), h.t}, merged.size());
        if (fresh)
          merged.push_back(std::move(h));
        else if (merged[it->second].score < h.score)
          merged[it->second] = std::move(h);
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
          Hyp b;
          b.score = h.score + lp[static_cast<size_t>(blank_)] + lpd[di];
          b.t = h.t + d;
          b.tokens = h.tokens;
          b.emitted = h.emitted;
          b.state = state;
          add(std::move(b));
        }
        best_tokens_.resize(static_cast<size_t>(blank_));
        std::iota(best_tokens_.begin(), best_tokens_.end(), 0);
        const size_t n_best = std::min(best_tokens_.size(), static_cast<size_t>(o_.token_candidates));
        std::partial_sort(best_tokens_.begin(), best_tokens_.begin() + static_cast<std::ptrdiff_t>(n_best),
                          best_tokens_.end(),
                          [&](int a, int b) { return lp[a] > lp[b] || (lp[a] == lp[b] && a < b); });
        if (use_lm) o_.lm->ln_probs(lm_history(*h.tokens, history), lm);
        for (size_t i = 0; i < n_best; ++i) {
          const int k = best_tokens_[i];
          const std::shared_ptr<Prefix> tokens = extend(h.tokens, k);
          const double s2 = h.score + lp[static_cast<size_t>(k)] + o_.lm_beta + (use_lm ? o_.lm_alpha * lm[k] : 0.0) +
                            (use_lexicon ? spell(*h.tokens, k, *tokens) : 0.0);
          for (size_t di = 0; di < p_.durations.size(); ++di) {
            const int d = p_.durations[di];
            if (d == 0 && h.syms + 1 >= p_.max_symbols) continue;
            Hyp e;
            e.score = s2 + lpd[di];
            e.t = h.t + d;
            e.syms = d == 0 ? h.syms + 1 : 0;
            e.tokens = tokens;
            e.emitted = h.emitted;
            e.pending_frame = static_cast<int>(h.t);
            e.pending_duration = d;
            e.parent = state;  // e.state stays null until e is expanded
            add(std::move(e));
          }
        }
      }
      // The pool: the hypotheses at later frames first, then this round's, in the order made.
      std::vector<Hyp> live;
      auto keep = [&](Hyp&& h) {
        if (h.t < frames) {
          live.push_back(std::move(h));
          return;
        }
        if (use_lexicon) h.score += word_end_score(*h.tokens);
        if (!best || h.score > best->score) best = std::move(h);
      };
      for (Hyp& h : hyps)
        if (h.t != t0) keep(std::move(h));
      for (Hyp& h : merged) keep(std::move(h));
      std::stable_sort(live.begin(), live.end(), [](const Hyp& a, const Hyp& b) { return a.score > b.score; });
      if (live.size() > static_cast<size_t>(o_.beam)) live.resize(static_cast<size_t>(o_.beam));
      if (best) {
        const double floor = best->score - o_.prune;
        std::erase_if(live, [&](const Hyp& h) { return !(h.score > floor); });
      }
      for (Hyp& h : live) settle(h);
      hyps = std::move(live);
    }
    Hypothesis out;
    if (!best) return out;
    settle(*best);
    for (const Prefix* p = best->tokens.get(); p->parent; p = p->parent.get()) out.tokens.push_back(p->token);
    for (const Emission* e = best->emitted.get(); e; e = e->parent.get()) {
      out.timestamps.push_back(e->frame);
      out.durations.push_back(e->duration);
    }
    std::reverse(out.tokens.begin(), out.tokens.end());
    std::reverse(out.timestamps.begin(), out.timestamps.end());
    std::reverse(out.durations.begin(), out.durations.end());
    return out;
  }

 private:
  // Makes a surviving hypothesis's pending emission a node of its chain.
  static void settle(Hyp& h) {
    if (h.pending_frame < 0) return;
    auto node = std::make_shared<Emission>();
    node->frame = h.pending_frame;
    node->duration = h.pending_duration;
    node->parent = std::move(h.emitted);
    h.emitted = std::move(node);
    h.pending_frame = -1;
  }

  // With a lexicon: what spelling token k after `from` adds to a hypothesis's score (0 or minus the penalty), and
  // the word state of the sequence it makes (`to`, whose token is k). A word outside the lexicon pays once: when
  // its letters so far begin no listed word, or when it ends (a token starts the next word, or the audio ends) a
  // prefix of listed words but not one itself.
  double spell(const Prefix& from, int k, Prefix& to) const {
    const Lexicon& lex = *o_.lexicon;
    if (lex.starts_word(k)) {
      to.word = lex.spelling(k);
      to.word_known = lex.is_prefix(to.word);
      return word_end_score(from) - (to.word_known ? 0.0 : o_.unknown_word_penalty);
    }
    to.word = from.word;
    to.word += lex.spelling(k);
    to.word_known = from.word_known && lex.is_prefix(to.word);
    return from.word_known && !to.word_known ? -o_.unknown_word_penalty : 0.0;
  }

  // What ending `tokens`'s last word here adds: the penalty, if its letters begin listed words but are none.
  double word_end_score(const Prefix& tokens) const {
    return tokens.word_known && !tokens.word.empty() && !o_.lexicon->is_word(tokens.word) ? -o_.unknown_word_penalty
                                                                                           : 0.0;
  }

  // The LM's history for `tokens`: <s> and the tokens, of which only the last order - 1 count (token_lm.h).
  std::span<const int> lm_history(const Prefix& tokens, std::vector<int>& history) const {
    const int64_t context = o_.lm->order() - 1;
    history.clear();
    for (const Prefix* p = &tokens; p->parent && static_cast<int64_t>(history.size()) < context; p = p->parent.get())
      history.push_back(p->token);
    if (static_cast<int64_t>(history.size()) < context) history.push_back(o_.lm->bos());
    std::reverse(history.begin(), history.end());
    return history;
  }

  // The states after each hypothesis's tokens: a token sequence is stepped when a hypothesis holding it is first
  // expanded (most token expansions are pruned before), all of a round's new sequences in one batch.
  std::vector<std::shared_ptr<const PredState>> states_of(const std::vector<const Hyp*>& hyps) {
    std::vector<std::shared_ptr<const PredState>> out(hyps.size());
    std::vector<const PredState*> from;
    std::vector<int> tokens;
    std::vector<Prefix*> stepped;
    for (size_t i = 0; i < hyps.size(); ++i) {
      const Hyp& h = *hyps[i];
      out[i] = h.state ? h.state : h.tokens->state.lock();
      if (out[i] || std::find(stepped.begin(), stepped.end(), h.tokens.get()) != stepped.end()) continue;
      from.push_back(h.parent.get());
      tokens.push_back(h.tokens->token);
      stepped.push_back(h.tokens.get());
    }
    if (tokens.empty()) return out;
    const std::vector<std::shared_ptr<const PredState>> made = step(from, tokens);
    for (size_t j = 0; j < made.size(); ++j) stepped[j]->state = made[j];
    for (size_t i = 0; i < hyps.size(); ++i)
      if (!out[i]) out[i] = hyps[i]->tokens->state.lock();
    return out;
  }

  // One prediction-network step for each row: from from[i] (null: the zero state) on tokens[i].
  std::vector<std::shared_ptr<const PredState>> step(const std::vector<const PredState*>& from,
                                                     const std::vector<int>& tokens) {
    const int64_t m = static_cast<int64_t>(tokens.size()), in = p_.embed.dim(1);
    const size_t layers = p_.w_ih.size();
    // The first layer's input product is looked up where the decoder made the table (tdt_decoder.h), else computed.
    const bool table = p_.input_gates.defined();
    const int64_t x_cols = table ? p_.input_gates.dim(1) : in;
    const float* x_rows = table ? p_.input_gates.data<float>() : p_.embed.data<float>();
    Tensor x = Tensor::empty({m, x_cols});
    for (int64_t i = 0; i < m; ++i)
      std::copy_n(x_rows + static_cast<int64_t>(tokens[i]) * x_cols, x_cols, x.data<float>() + i * x_cols);
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
      if (l == 0 && table)
        ops::lstm_cell_projected(ctx_, x, h, c, p_.w_hh[0], h, c);
      else
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
  std::vector<int> best_tokens_;
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
  // The clips are searched side by side, one per pool thread: a search's products have a handful of rows, which
  // gain little from a second thread, while clips are independent (the GEMMs inside a parallel_for chunk run on
  // its thread alone, the LM is only read).
  const int64_t clips = static_cast<int64_t>(lengths.size());
  std::vector<Hypothesis> out(lengths.size());
  std::vector<DecodeStats> clip_stats(lengths.size());
  auto search = [&](int64_t b) {
    const int64_t frames = std::min(lengths[b], encoded.dim(1));
    if (frames <= 0) return;
    const Tensor clip = encoded.narrow0(b, b + 1).reshape({encoded.dim(1), encoded.dim(2)}).narrow0(0, frames);
    out[b] = ClipSearch(ctx, p, options, &clip_stats[b]).run(clip);
  };
  if (clips == 1)
    search(0);  // all of the pool's threads for its products
  else
    ctx.pool().parallel_for(0, clips, 1, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) search(b);
    });
  if (stats)
    for (const DecodeStats& s : clip_stats) {
      stats->steps += s.steps;
      stats->lstm_updates += s.lstm_updates;
    }
  return out;
}

}  // namespace steno::asr
