"""TDT beam search with optional token n-gram LM fusion and lexicon: the reference for steno's beam decoding (one
utterance).

Not NeMo's beam algorithms (default / maes / malsd): its own, stated exactly so that the C++ engine can reproduce
it token for token.

A hypothesis is (tokens, frame t, prediction-net state, score). Each round takes the hypotheses at the lowest
frame among those still inside the audio and expands each one from the joint at (t, its prediction output):
  - blank, for every duration d >= 1:           score + ln P(blank) + ln P(d)                        -> t + d
  - each of its `token_candidates` best tokens k (by ln P(k)), for every duration d (0 included):
        score + ln P(k) + ln P(d) + alpha * ln P_lm(k | <s> tokens) + beta                            -> t + d
where P(label) is the softmax over tokens and blank and P(d) the softmax over the duration outputs (the joint's
two heads, as TDT trains them). A token expansion with d = 0 at a frame that already holds `max_symbols` of the
hypothesis's tokens is not made (greedy decoding's rule, which steps the frame). Expansions with the same tokens
and frame merge, keeping the higher score (ties: the first made). Expansions past the last frame are finished;
the others join the hypotheses at higher frames, and the `beam` best of all unfinished ones (by score, ties in
the order made) go on, dropping any that trail the best finished score by more than `prune`. The result is the
finished hypothesis with the highest score (ties: the first finished).

With a lexicon (a word list) and its penalty P, a hypothesis also follows its last word's letters (a token whose
piece starts with U+2581 starts a new word; the others add their letters to the current one) and pays P once per
word outside the lexicon: in a token expansion's score, when the letters so far begin no listed word, or when a
word-starting token ends a word whose letters begin listed words but are none; and, for that last case, as the
hypothesis finishes (before it joins the finished ones).
"""
import bisect

import torch

WORD_START = "\u2581"


class Lexicon:
    """A word list and a model's pieces: what the beam search asks of it."""

    def __init__(self, words, pieces):
        self.words = sorted(set(words))
        self.starts = [p.startswith(WORD_START) for p in pieces]
        self.spelling = [p[len(WORD_START):] if p.startswith(WORD_START) else p for p in pieces]

    def is_word(self, w):
        i = bisect.bisect_left(self.words, w)
        return i < len(self.words) and self.words[i] == w

    def is_prefix(self, w):
        i = bisect.bisect_left(self.words, w)
        return i < len(self.words) and self.words[i].startswith(w)

    def end_cost(self, word, known, penalty):
        """The penalty of ending a word here (0 when empty, listed, or already paid)."""
        return penalty if known and word and not self.is_word(word) else 0.0

    def spell(self, word, known, k, penalty):
        """(cost, word, known) after token k, from the word state before it."""
        if self.starts[k]:
            w = self.spelling[k]
            ok = self.is_prefix(w)
            return self.end_cost(word, known, penalty) + (0.0 if ok else penalty), w, ok
        w = word + self.spelling[k]
        ok = known and self.is_prefix(w)
        return (penalty if known and not ok else 0.0), w, ok


@torch.no_grad()
def beam_tdt(model, encoded, lm=None, alpha=0.0, beta=0.0, beam=4, token_candidates=4, prune=10.0, lexicon=None,
             unknown_word_penalty=0.0):
    """encoded [T, d] (one utterance's encoder output, frames first) -> (tokens, score). lm: an object with
    ln_probs(history) -> list of ln p(token | history) for every token id, history starting with lm.bos;
    lexicon: a Lexicon."""
    joint, dec = model.joint, model.decoder
    blank = dec.blank
    durations = model.durations
    max_symbols = model.max_symbols
    f = joint.enc(encoded)
    T = f.shape[0]
    g, state = dec.predict(torch.tensor([blank]), dec.initial_state(1))
    # (score, tokens, t, symbols at t, state, prediction output); the prediction net's step per token prefix is
    # the same for every hypothesis holding that prefix, so it is computed once.
    hyps = [(0.0, (), 0, 0, state, joint.pred(g)[0])]
    pred_of = {}
    lm_of = {}
    word_of = {(): ("", True)}  # token prefix -> its last word's letters, and whether they begin a listed word
    done = []
    use_lm = lm is not None and alpha != 0.0
    while hyps:
        t0 = min(h[2] for h in hyps)
        merged = {}

        def add(h):
            key = (h[1], h[2])
            if key not in merged or merged[key][0] < h[0]:
                merged[key] = h

        for score, toks, t, syms, st, gp in (h for h in hyps if h[2] == t0):
            out = joint.joint_after_projection(f[t], gp, log_softmax=False)
            lp = torch.log_softmax(out[:blank + 1], -1).tolist()
            lpd = torch.log_softmax(out[blank + 1:], -1).tolist()
            for di, d in enumerate(durations):
                if d >= 1:
                    add((score + lp[blank] + lpd[di], toks, t + d, 0, st, gp))
            best = sorted(range(blank), key=lambda k: (-lp[k], k))[:token_candidates]
            lm_lp = None
            if use_lm:
                if toks not in lm_of:
                    lm_of[toks] = lm.ln_probs([lm.bos] + list(toks))
                lm_lp = lm_of[toks]
            for k in best:
                nt = toks + (k,)
                if nt not in pred_of:
                    g2, st2 = dec.predict(torch.tensor([k]), st)
                    pred_of[nt] = (st2, joint.pred(g2)[0])
                st2, gp2 = pred_of[nt]
                s2 = score + lp[k] + beta + (alpha * lm_lp[k] if use_lm else 0.0)
                if lexicon is not None:
                    cost, w, ok = lexicon.spell(*word_of[toks], k, unknown_word_penalty)
                    word_of[nt] = (w, ok)
                    s2 -= cost
                for di, d in enumerate(durations):
                    if d == 0 and syms + 1 >= max_symbols:
                        continue
                    add((s2 + lpd[di], nt, t + d, syms + 1 if d == 0 else 0, st2, gp2))
        pool = [h for h in hyps if h[2] != t0] + list(merged.values())
        finished = [h for h in pool if h[2] >= T]
        if lexicon is not None:
            finished = [(h[0] - lexicon.end_cost(*word_of[h[1]], unknown_word_penalty),) + h[1:] for h in finished]
        done += finished
        live = sorted((h for h in pool if h[2] < T), key=lambda h: -h[0])[:beam]
        if done:
            floor = max(h[0] for h in done) - prune
            live = [h for h in live if h[0] > floor]
        hyps = live
    best = max(done, key=lambda h: h[0]) if done else (0.0, ())
    return list(best[1]), best[0]
