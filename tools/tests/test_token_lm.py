"""tools/lm/token_lm.py and tools/steno_ref/beam.py: the Kneser-Ney estimate against a hand computation and as a
distribution (sums to one after every history), its ARPA file read back giving the same probabilities (plain and
gzip), NeMo's token characters; the beam search against an exhaustive search on a tiny random model, its LM term
and its max_symbols rule.

  /usr/bin/python3 -m unittest discover -s tools/tests -p test_token_lm.py
"""
import itertools
import math
import os
import random
import sys
import tempfile
import unittest

import torch

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOOLS)
sys.path.insert(0, os.path.join(TOOLS, "lm"))

import token_lm  # noqa: E402
from steno_ref.beam import Lexicon, beam_tdt  # noqa: E402
from steno_ref.model import RNNTDecoder, RNNTJoint  # noqa: E402


def toy_sentences(seed=1, vocab=6, count=200):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        s = [rng.randrange(vocab)]
        for _ in range(rng.randrange(1, 8)):
            s.append((s[-1] + rng.choice((1, 1, 2, 3))) % vocab)  # some structure for the higher orders
        out.append(s)
    return out


class KneserNeyTest(unittest.TestCase):
    def test_a_bigram_by_hand(self):
        # Sentences "a b" and "a c" (a, b, c = 0, 1, 2), D = 0.75. Unigram counts are continuation counts: each of
        # a, b, c follows one distinct token, so p1 = (1 - 0.75) / 3 + 0.75 * 3 / 3 / 3 = 1/3 each. After a:
        # c(a .) = 2 over 2 types: p(b | a) = (1 - 0.75) / 2 + 0.75 * 2 / 2 * 1/3 = 0.375.
        lm = token_lm.KneserNey([[0, 1], [0, 2]], vocab=3, order=2)
        self.assertAlmostEqual(lm.prob([], 1), 1 / 3)
        self.assertAlmostEqual(lm.prob([0], 1), 0.375)
        self.assertAlmostEqual(lm.prob([0], 0), 0.75 * 1 / 3)  # a never follows a: the backoff share only
        # <s> a: two raw counts (n-grams that begin with <s> keep them), one type: (2 - 0.75) / 2 + 0.375 / 3.
        self.assertAlmostEqual(lm.prob([lm.bos], 0), 1.25 / 2 + 0.375 * 1 / 3)

    def test_every_history_gives_a_distribution(self):
        lm = token_lm.KneserNey(toy_sentences(), vocab=6, order=4, min_count=2)
        for h in [[], [lm.bos], [lm.bos, 2], [3, 4, 5], [0, 0, 0], [5, 1]]:
            self.assertAlmostEqual(sum(lm.prob(h, w) for w in range(6)), 1.0, places=12, msg=str(h))

    def test_the_arpa_file_reads_back_the_same_probabilities(self):
        # 64 tokens: ids 33 and 60 are written as U+0085 and U+00A0, which Python takes for white space.
        sents = [[(x * 7) % 64 for x in s] for s in toy_sentences(vocab=64, count=400)]
        lm = token_lm.KneserNey(sents, vocab=64, order=3, min_count=2)
        with tempfile.TemporaryDirectory() as d:
            for name in ("lm.arpa", "lm.arpa.gz"):
                path = os.path.join(d, name)
                lm.write_arpa(path)
                back = token_lm.Arpa(path, 64)
                self.assertEqual(back.order, 3)
                self.assertEqual(len(back.p), 64 + 1 + sum(len(lm.counts[k]) for k in (2, 3)))  # + <s>
                for h in [[lm.bos], [lm.bos, 33], [60, 33], [33, 60], [4, 4], []]:
                    ln = back.ln_probs(h)
                    for w in range(64):
                        # 4 decimals of log10 a number, up to 3 numbers a chain: 3 x 0.5e-4 x ln 10 < 5e-4
                        self.assertAlmostEqual(ln[w], math.log(lm.prob(h, w)), delta=5e-4, msg=f"{name} {h} {w}")

    def test_tokens_are_nemos_characters(self):
        lm = token_lm.KneserNey([[0, 1]], vocab=2, order=2)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "lm.arpa")
            lm.write_arpa(path)
            with open(path, encoding="utf-8") as f:
                text = f.read()
        lines = text.split("\n")
        # ids 0, 1 are chr(100), chr(101); the highest order has no backoff column.
        self.assertIn(f"{math.log10(0.625):.4f}\td e", lines)  # p(e | d) = (1 - 0.75) / 1 + 0.75 * 1/2
        self.assertTrue(any(line.endswith("\t<s> d") for line in lines))
        self.assertTrue(any(line.startswith("-99\t<s>\t") for line in lines))


def tiny_model(seed, vocab=3, hidden=8, durations=(0, 1, 2), max_symbols=2):
    torch.manual_seed(seed)

    class Model:
        pass

    m = Model()
    m.decoder = RNNTDecoder({"vocab_size": vocab, "pred_hidden": hidden, "pred_rnn_layers": 1})
    m.joint = RNNTJoint({"joint_hidden": hidden, "num_classes": vocab, "num_extra_outputs": len(durations)},
                        enc_hidden=hidden, pred_hidden=hidden)
    for p in list(m.decoder.parameters()) + list(m.joint.parameters()):
        torch.nn.init.normal_(p, std=1.0)
    m.durations, m.max_symbols = list(durations), max_symbols
    return m


class TableLM:
    """A fixed ln p(token | last token) table: an LM the test can compute by hand."""

    def __init__(self, vocab, seed):
        rng = random.Random(seed)
        self.vocab, self.bos = vocab, vocab
        self.table = {}
        for prev in range(vocab + 1):
            w = [rng.random() + 0.1 for _ in range(vocab)]
            self.table[prev] = [math.log(x / sum(w)) for x in w]

    def ln_probs(self, history):
        return self.table[history[-1]]


def unknown_words(pieces, tokens, words):
    """The words of a token sequence (SentencePiece's spelling) that are not in `words`."""
    text = "".join(pieces[k] for k in tokens).replace("\u2581", " ")
    return [w for w in text.split() if w not in words]


@torch.no_grad()
def exhaustive_best(m, enc, lm=None, alpha=0.0, beta=0.0, leaf_cost=lambda toks: 0.0):
    """The best path's score and tokens by depth-first search over every path: what an unbounded beam finds.
    leaf_cost(tokens) is taken off a whole path's score."""
    blank = m.decoder.blank
    f = m.joint.enc(enc)
    T = f.shape[0]
    best = [-math.inf, None]

    def walk(t, syms, toks, state, gp, score):
        if t >= T:
            score -= leaf_cost(toks)
            if score > best[0]:
                best[0], best[1] = score, toks
            return
        out = m.joint.joint_after_projection(f[t], gp, log_softmax=False)
        lp = torch.log_softmax(out[:blank + 1], -1).tolist()
        lpd = torch.log_softmax(out[blank + 1:], -1).tolist()
        for di, d in enumerate(m.durations):
            if d >= 1:
                walk(t + d, 0, toks, state, gp, score + lp[blank] + lpd[di])
        lm_lp = lm.ln_probs([lm.bos] + list(toks)) if lm is not None else None
        for k in range(blank):
            g2, st2 = m.decoder.predict(torch.tensor([k]), state)
            s2 = score + lp[k] + beta + (alpha * lm_lp[k] if lm is not None else 0.0)
            for di, d in enumerate(m.durations):
                if d == 0 and syms + 1 >= m.max_symbols:
                    continue
                walk(t + d, syms + 1 if d == 0 else 0, toks + (k,), st2, m.joint.pred(g2)[0], s2 + lpd[di])

    g, st = m.decoder.predict(torch.tensor([blank]), m.decoder.initial_state(1))
    walk(0, 0, (), st, m.joint.pred(g)[0], 0.0)
    return best[0], list(best[1])


class BeamTest(unittest.TestCase):
    def test_a_wide_beam_finds_the_best_path(self):
        for seed in range(6):
            m = tiny_model(seed)
            enc = torch.randn(3, 8)
            lm = TableLM(3, seed) if seed % 2 else None
            alpha, beta = (0.7, 0.3) if lm else (0.0, 0.0)
            want_score, want = exhaustive_best(m, enc, lm, alpha, beta)
            toks, score = beam_tdt(m, enc, lm, alpha, beta, beam=10000, token_candidates=3, prune=math.inf)
            self.assertEqual(toks, want, msg=f"seed {seed}")
            self.assertAlmostEqual(score, want_score, places=5)

    def test_the_lexicon_costs_each_unknown_word_once(self):
        # The beam search charges a word as it is spelled (its letters leave the lexicon's prefixes, or it ends a
        # mere prefix); over a whole path that is the penalty once per word not listed, what the exhaustive
        # search takes off each path's score at its end.
        pieces = ["\u2581a", "b", "\u2581b"]
        words = ["a", "abb", "bab"]
        lexicon = Lexicon(words, pieces)
        changed = 0
        for seed in range(6):
            m = tiny_model(seed)
            enc = torch.randn(3, 8)
            penalty = 1.5 + seed
            want_score, want = exhaustive_best(
                m, enc, leaf_cost=lambda toks: penalty * len(unknown_words(pieces, toks, words)))
            toks, score = beam_tdt(m, enc, beam=10000, token_candidates=3, prune=math.inf, lexicon=lexicon,
                                   unknown_word_penalty=penalty)
            self.assertEqual(toks, want, msg=f"seed {seed}")
            self.assertAlmostEqual(score, want_score, places=5)
            changed += toks != exhaustive_best(m, enc)[1]
        self.assertGreater(changed, 0)  # the lexicon decided some of these paths
        self.assertEqual(lexicon.spell("", True, 0, 2.0), (0.0, "a", True))
        self.assertEqual(lexicon.spell("a", True, 1, 2.0), (0.0, "ab", True))  # a prefix of "abb"
        self.assertEqual(lexicon.spell("ab", True, 2, 2.0), (2.0, "b", True))  # "ab" ends unlisted
        self.assertEqual(lexicon.spell("b", True, 1, 2.0), (2.0, "bb", False))  # no word begins "bb"
        self.assertEqual(lexicon.spell("bb", False, 1, 2.0), (0.0, "bbb", False))  # paid already
        self.assertEqual(lexicon.spell("bbb", False, 0, 2.0), (0.0, "a", True))
        self.assertEqual(lexicon.spell("b", True, 0, 2.0), (2.0, "a", True))  # "b" ends a mere prefix

    def test_a_narrow_beam_scores_no_better_than_the_best(self):
        for seed in range(6, 10):
            m = tiny_model(seed)
            enc = torch.randn(4, 8)
            best, _ = exhaustive_best(m, enc)
            _, score = beam_tdt(m, enc, beam=1, token_candidates=1)
            self.assertLessEqual(score, best + 1e-6)

    def test_max_symbols_bounds_the_tokens_of_a_frame(self):
        # With only duration 0 for tokens favoured and max_symbols 2, no frame holds more than 2 tokens, so one
        # frame of audio yields at most 2 tokens however wide the beam.
        m = tiny_model(3, durations=(0, 1), max_symbols=2)
        with torch.no_grad():
            m.joint.joint_net[2].bias[m.decoder.blank] -= 50.0  # blank never wins
            m.joint.joint_net[2].bias[m.decoder.blank + 1] += 50.0  # duration 0 always does
        toks, _ = beam_tdt(m, torch.randn(1, 8), beam=16, token_candidates=3)
        self.assertEqual(len(toks), 2)


if __name__ == "__main__":
    unittest.main()
