#!/usr/bin/env python3
"""A token-level n-gram language model over an ASR model's tokenizer: interpolated Kneser-Ney estimated from text,
written and read as ARPA in NeMo's token convention (each token id i is the one character chr(i + 100), NeMo's
DEFAULT_TOKEN_OFFSET), so that the same file serves NeMo's n-gram fusion and steno's beam search.

  /usr/bin/python3 tools/lm/token_lm.py train --corpus build-data/corpus.txt \\
      --tokenizer models/steno-tdt-small-en/tokenizer.model --order 4 --out lm.arpa[.gz]

--corpus takes build_corpus.py's TSV (SPLIT, SOURCE, SPEAK FORM; only the `train` split is read, so no test or
dev sentence is in the model) or, with --plain, one transcript a line. Sentences start with <s>; no </s> is
scored (greedy and beam decoding of a transducer have no end-of-sentence event).

The estimate (Chen & Goodman's interpolated Kneser-Ney with one absolute discount D per order):
  highest order N: c(h w) raw counts (n-grams seen fewer than --min-count times dropped);
  lower orders k < N: c(h w) = the number of distinct tokens seen before (h w) (continuation counts), except for
    n-grams that begin with <s>, which nothing precedes: raw counts (KenLM's adjusted counts);
  p_k(w | h) = max(c(h w) - D, 0) / c(h .) + gamma(h) p_{k-1}(w | h'),  gamma(h) = D * N1+(h .) / c(h .);
  p_1(w) interpolates with the uniform distribution over the vocabulary (every token id has a probability).
In ARPA's backoff form every listed n-gram carries its interpolated probability and every context h its gamma(h)
as the backoff weight: p(w | h) = P(h w) if listed, else bow(h) * p(w | h'), bow = 1 for an unlisted context.
"""
import argparse
import collections
import gzip
import io
import math
import os
import sys

TOKEN_OFFSET = 100
BOS = "<s>"
UNK = "<unk>"
LOG10_E = math.log10(math.e)


def token_char(i):
    return chr(i + TOKEN_OFFSET)


def char_token(c):
    return ord(c) - TOKEN_OFFSET


def open_text_for_writing(path):
    """A text file, gzip-compressed when the name ends in .gz, with neither a time nor a name in the gzip header:
    the same model gives the same bytes."""
    if not path.endswith(".gz"):
        return open(path, "w", encoding="utf-8")
    raw = open(path, "wb")
    return io.TextIOWrapper(gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0), encoding="utf-8")


class KneserNey:
    """Interpolated Kneser-Ney over token ids 0 .. vocab-1, with <s> as id `vocab` (a context only)."""

    def __init__(self, sentences, vocab, order, discount=0.75, min_count=1):
        if order < 1:
            raise ValueError("order must be at least 1")
        self.vocab, self.order, self.d = vocab, order, discount
        self.bos = vocab
        raw = [collections.Counter() for _ in range(order + 1)]
        for s in sentences:
            seq = [self.bos] + list(s)
            for i in range(1, len(seq)):
                for k in range(1, order + 1):
                    if i - k + 1 < 0:
                        break
                    raw[k][tuple(seq[i - k + 1:i + 1])] += 1
        counts = [None] * (order + 1)
        counts[order] = {g: c for g, c in raw[order].items() if c >= min_count}
        for k in range(order - 1, 0, -1):
            cont = collections.Counter()
            for g in raw[k + 1]:
                cont[g[1:]] += 1
            counts[k] = {g: (c if g[0] == self.bos else cont.get(g, 0)) for g, c in raw[k].items()}
            counts[k] = {g: c for g, c in counts[k].items() if c > 0}
        # <s> is a context, never predicted: out of the unigram estimate. Every prefix of a kept n-gram is itself
        # kept (it is a continuation of what precedes it, or begins with <s>), so each context ARPA needs to carry
        # a backoff weight is listed.
        counts[1].pop((self.bos,), None)
        self.counts = counts
        # Per order, per context: (total count, distinct followers).
        self.ctx = [None] * (order + 1)
        for k in range(1, order + 1):
            tot = collections.defaultdict(lambda: [0, 0])
            for g, c in counts[k].items():
                t = tot[g[:-1]]
                t[0] += c
                t[1] += 1
            self.ctx[k] = {h: tuple(v) for h, v in tot.items()}
        self._cache = {}

    def gamma(self, k, h):
        tot, types = self.ctx[k].get(h, (0, 0))
        return 1.0 if tot == 0 else self.d * types / tot

    def prob(self, history, w):
        """p(w | history): history a sequence of ids (the last order-1 are used; <s> is self.bos)."""
        h = tuple(history)[-(self.order - 1):] if self.order > 1 else ()
        p = 1.0 / self.vocab
        for k in range(1, self.order + 1):
            hk = h[len(h) - (k - 1):] if k > 1 else ()
            if k > 1 and len(hk) < k - 1:
                break
            tot, types = self.ctx[k].get(hk, (0, 0))
            if tot == 0:
                continue  # an unseen context: the lower order stands
            c = self.counts[k].get(hk + (w,), 0)
            p = max(c - self.d, 0.0) / tot + self.d * types / tot * p
        return p

    def write_arpa(self, path, token_name=token_char):
        """ARPA with log10 probabilities; <s> is listed with -99 as ARPA files do."""
        name = lambda i: BOS if i == self.bos else token_name(i)  # noqa: E731
        entries = [[] for _ in range(self.order + 1)]
        entries[1] = [((w,), self.prob((), w)) for w in range(self.vocab)]
        for k in range(2, self.order + 1):
            entries[k] = [(g, self.prob(g[:-1], g[-1])) for g in sorted(self.counts[k]) if g[-1] != self.bos]
        with open_text_for_writing(path) as f:
            f.write("\n\\data\\\n")
            f.write(f"ngram 1={len(entries[1]) + 2}\n")
            for k in range(2, self.order + 1):
                f.write(f"ngram {k}={len(entries[k])}\n")
            for k in range(1, self.order + 1):
                f.write(f"\n\\{k}-grams:\n")
                if k == 1:
                    f.write(f"{math.log10(1.0 / self.vocab):.4f}\t{UNK}\t0\n")
                    f.write(f"-99\t{BOS}\t{math.log10(self.gamma(2, (self.bos,))) if self.order > 1 else 0:.4f}\n")
                for g, p in entries[k]:
                    line = f"{math.log10(p):.4f}\t{' '.join(name(i) for i in g)}"
                    if k < self.order:
                        line += f"\t{math.log10(self.gamma(k + 1, g)):.4f}"
                    f.write(line + "\n")
            f.write("\n\\end\\\n")


class Arpa:
    """An ARPA backoff model read back, queried by token ids: what the decoders see."""

    def __init__(self, path, vocab):
        self.vocab = vocab
        self.bos = vocab
        self.p, self.bow = {}, {}
        self.order = 0
        self.unk = -100.0  # a token the file does not list is <unk> to it (as KenLM maps unknown words)
        opener = gzip.open if path.endswith(".gz") else open
        k = 0
        with opener(path, "rt", encoding="utf-8") as f:
            for line in f:
                # Only ASCII white space is markup: tokens 33 and 60 are U+0085 and U+00A0, which str.strip() and
                # str.split() would take for white space (and a token ending a line would be lost).
                line = line.rstrip("\r\n").strip(" \t")
                if not line or line.startswith("ngram ") or line == "\\data\\" or line == "\\end\\":
                    continue
                if line.endswith("-grams:"):
                    k = int(line[1:line.index("-")])
                    self.order = max(self.order, k)
                    continue
                parts = line.split("\t")
                words = parts[1].split(" ")
                if UNK in words:
                    if len(words) == 1:
                        self.unk = float(parts[0])
                    continue
                g = tuple(self.bos if w == BOS else char_token(w) for w in words)
                self.p[g] = float(parts[0])
                if len(parts) > 2:
                    self.bow[g] = float(parts[2])

    def log10_prob(self, history, w):
        h = tuple(history)[-(self.order - 1):] if self.order > 1 else ()
        bo = 0.0
        while True:
            if h + (w,) in self.p:
                return bo + self.p[h + (w,)]
            if not h:
                return bo + self.unk
            bo += self.bow.get(h, 0.0)
            h = h[1:]

    def ln_probs(self, history):
        """ln p(w | history) for every token id, as a list (what fusion adds, times alpha)."""
        return [self.log10_prob(history, w) / LOG10_E for w in range(self.vocab)]


def corpus_sentences(path, sp, plain=False):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data"))
    import textnorm  # noqa: E402  (tools/data)
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if plain:
                text = line
            else:
                split, _, speak = line.split("\t")
                if split != "train":
                    continue
                text = textnorm.transcript(speak)
            if text:
                yield sp.encode(text)


def write_golden(out_dir):
    """A small LM and what it must give, for the C++ reader's test (tests/data/lm): toy.arpa, toy.arpa.gz and
    toy_expected.json (histories and ln p of every token, from the estimate itself, not from the file)."""
    import json
    import random
    rng = random.Random(7)
    vocab = 64  # ids 33 and 60 are U+0085 and U+00A0, which Unicode counts as white space
    sents = []
    for _ in range(300):
        s = [rng.randrange(vocab)]
        for _ in range(rng.randrange(1, 9)):
            s.append((s[-1] + rng.choice((1, 2, 27))) % vocab)
        sents.append(s)
    lm = KneserNey(sents, vocab, order=3, min_count=2)
    os.makedirs(out_dir, exist_ok=True)
    for name in ("toy.arpa", "toy.arpa.gz"):
        lm.write_arpa(os.path.join(out_dir, name))
    histories = [[lm.bos], [lm.bos, 5], [3, 4], [32, 33], [33, 60], [59, 60], [63, 63], [1], []]
    expected = {"vocab": vocab, "order": 3, "histories": histories,
                "ln_probs": [[math.log(lm.prob(h, w)) for w in range(vocab)] for h in histories]}
    with open(os.path.join(out_dir, "toy_expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    go = sub.add_parser("golden", help="the C++ reader's test files (tests/data/lm)")
    go.add_argument("out_dir")
    tr = sub.add_parser("train", help="estimate from a corpus and write ARPA")
    tr.add_argument("--corpus", required=True)
    tr.add_argument("--plain", action="store_true", help="the corpus is one transcript a line")
    tr.add_argument("--tokenizer", required=True, help="the ASR model's SentencePiece model")
    tr.add_argument("--order", type=int, default=4)
    tr.add_argument("--discount", type=float, default=0.75)
    tr.add_argument("--min-count", type=int, default=1, help="drop highest-order n-grams seen fewer times")
    tr.add_argument("--out", required=True, help="ARPA file (.gz: gzip-compressed)")
    args = ap.parse_args(argv)
    if args.cmd == "golden":
        write_golden(args.out_dir)
        return 0
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=args.tokenizer)
    sents = list(corpus_sentences(args.corpus, sp, args.plain))
    lm = KneserNey(sents, sp.get_piece_size(), args.order, args.discount, args.min_count)
    lm.write_arpa(args.out)
    sizes = ", ".join(f"{k}-grams {len(lm.counts[k]):,}" for k in range(1, args.order + 1))
    print(f"token_lm: {len(sents):,} sentences -> {args.out} ({sizes})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
