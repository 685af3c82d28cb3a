#!/usr/bin/env python3
"""Build the text corpus for the synthetic-speech data set from English text in Debian packages plus generated
sentences. Stdlib only; deterministic (same packages -> byte-identical output).

Sources (Debian 12 packages: fortunes fortunes-min wordnet-base wamerican):
  fortune   /usr/share/games/fortunes/*           fortune cookies, split into sentences
  wn-ex     /usr/share/wordnet/data.*             WordNet's usage examples ("the dog barked all night")
  wn-def    /usr/share/wordnet/data.*             WordNet's glosses (definitions), a deterministic subset
  gen       gensent.py                            numbers, dates, times, names, amounts, addresses, phones
  words     /usr/share/dict/american-english      short lists of random dictionary words (vocabulary coverage)

Every line is normalised (textnorm.py): lowercase letters, apostrophes and single spaces in the transcript, 2-30
words, numbers in words; anything that cannot be verbalised is dropped. Duplicates (same transcript) are dropped.
The split of a sentence depends only on a hash of its transcript, so it does not move when sources are added:
  test  (hash % 1000 < 15), dev (15 <= hash % 1000 < 30), train (the rest).

Output (TSV, sorted): SPLIT <tab> SOURCE <tab> SPEAK_FORM, where the transcript is the speak form without
, . ? ! (textnorm.transcript). Also OUT.stats.json.

  /usr/bin/python3 tools/data/build_corpus.py --out build-data/corpus.txt
"""

import argparse
import hashlib
import json
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gensent  # noqa: E402
import textnorm  # noqa: E402

FORTUNE_DIR = "/usr/share/games/fortunes"
FORTUNE_SKIP = {"art", "ascii-art", "perl", "translate-me", "debian", "linux", "linuxcookie", "computers"}
WORDNET_DIR = "/usr/share/wordnet"
DICT = "/usr/share/dict/american-english"

NO_SPLIT_AFTER = {"mr.", "mrs.", "ms.", "dr.", "st.", "jr.", "sr.", "vs.", "prof.", "mt.", "no.", "capt.", "gen.",
                  "sgt.", "gov.", "sen.", "rev.", "lt.", "e.g.", "i.e.", "etc.", "u.s.", "a.m.", "p.m.", "approx.",
                  "dept.", "vol.", "ch.", "fig.", "inc.", "co.", "ltd."}


def stable_hash(text):
    return int(hashlib.sha1(text.encode("utf-8")).hexdigest()[:12], 16)


def split_of(transcript):
    h = stable_hash(transcript) % 1000
    return "test" if h < 15 else ("dev" if h < 30 else "train")


def split_sentences(text):
    """Split running text into sentences at . ! ? followed by space and a capital (or quote/paren + capital),
    except after common abbreviations and initials ("R. A. Heinlein")."""
    out, start = [], 0
    for m in re.finditer(r"[.!?]+[\"')\]]*\s+(?=[\"'(\[]?[A-Z])", text):
        before = text[start:m.end()].split()
        last = before[-1].lower() if before else ""
        last_core = last.strip("\"'()[]")
        if last_core in NO_SPLIT_AFTER or re.fullmatch(r"[a-z]\.", last_core):
            continue
        out.append(text[start:m.end()].strip())
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def chunk_long(sentence, max_words):
    """A sentence over max_words is cut at ; : or ' -- ' into pieces (each must still fit)."""
    if len(sentence.split()) <= max_words:
        return [sentence]
    parts = [p.strip() for p in re.split(r"(?<=[;:])\s+|\s+--\s+", sentence) if p.strip()]
    return parts if len(parts) > 1 else [sentence]


def fortune_texts():
    files = sorted(f for f in os.listdir(FORTUNE_DIR)
                   if "." not in f and f not in FORTUNE_SKIP and os.path.isfile(os.path.join(FORTUNE_DIR, f)))
    for name in files:
        with open(os.path.join(FORTUNE_DIR, name), "rb") as fh:
            raw = fh.read().decode("utf-8", errors="replace")
        for cookie in raw.split("\n%\n"):
            lines = []
            for line in cookie.split("\n"):
                if re.match(r"^\s*(--|-- |\u2014)", line) or re.match(r"^\s{6,}-", line):
                    break  # attribution: drop it and what follows
                if not line.strip():
                    lines.append("\n")
                    continue
                letters = sum(c.isalpha() for c in line)
                if letters < 0.5 * len(line.strip()):
                    lines = None  # ascii art, tables, code
                    break
                lines.append(line.strip())
            if not lines:
                continue
            text = " ".join(lines)
            for para in text.split("\n"):
                para = " ".join(para.split())
                if not para:
                    continue
                for sent in split_sentences(para):
                    for piece in chunk_long(sent, 30):
                        yield piece


def wordnet_texts():
    examples, glosses = [], []
    for pos in ("noun", "verb", "adj", "adv"):
        with open(os.path.join(WORDNET_DIR, "data." + pos), encoding="latin-1") as fh:
            for line in fh:
                if line.startswith("  "):
                    continue  # licence header
                _, _, gloss = line.partition(" | ")
                gloss = gloss.strip()
                for ex in re.findall(r'"([^"]+)"', gloss):
                    examples.append(ex)
                for d in re.sub(r'"[^"]*"', "", gloss).split(";"):
                    d = d.strip(" ;,-")
                    if d and not d.startswith("(") and len(d.split()) >= 4:
                        glosses.append(d)
    return examples, glosses


def word_lists(rng, count):
    with open(DICT, encoding="utf-8") as fh:
        words = sorted({w.strip() for w in fh if re.fullmatch(r"[a-z]{3,}", w.strip())})
    for _ in range(count):
        n = rng.randint(3, 8)
        yield " ".join(rng.choice(words) for _ in range(n)) + "."


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build-data/corpus.txt")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--generated", type=int, default=30000, help="generated sentences (before dedup)")
    ap.add_argument("--word-lists", type=int, default=5000, help="random word-list lines")
    ap.add_argument("--glosses", type=int, default=15000, help="WordNet glosses kept (hash-ordered subset)")
    ap.add_argument("--max-words", type=int, default=30)
    args = ap.parse_args()

    for path in (FORTUNE_DIR, WORDNET_DIR, DICT):
        if not os.path.exists(path):
            sys.exit("missing %s: apt-get install fortunes fortunes-min wordnet-base wamerican" % path)

    seen = {}  # transcript -> (source, speak)
    stats = {"sources": {}, "dropped": {}}

    def add(source, texts):
        kept = dropped = dup = 0
        for t in texts:
            speak = textnorm.normalise(t, 2, args.max_words)
            if speak is None:
                dropped += 1
                continue
            tr = textnorm.transcript(speak)
            assert textnorm.is_valid_transcript(tr), (t, speak)
            if tr in seen:
                dup += 1
                continue
            seen[tr] = (source, speak)
            kept += 1
        stats["sources"][source] = kept
        stats["dropped"][source] = {"unverbalisable_or_length": dropped, "duplicate": dup}
        print("%-8s kept %6d  dropped %6d  duplicates %6d" % (source, kept, dropped, dup), file=sys.stderr)

    add("fortune", fortune_texts())
    examples, glosses = wordnet_texts()
    add("wn-ex", examples)
    glosses = sorted(set(glosses), key=lambda g: (stable_hash(g), g))[: args.glosses]
    add("wn-def", glosses)
    rng = random.Random(args.seed)
    add("gen", (gensent.sentence(rng) for _ in range(args.generated)))
    add("words", word_lists(random.Random(args.seed + 1), args.word_lists))

    rows = sorted((split_of(tr), src, speak) for tr, (src, speak) in seen.items())
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="ascii", newline="\n") as fh:
        for split, src, speak in rows:
            fh.write("%s\t%s\t%s\n" % (split, src, speak))

    counts = {}
    for split, src, _ in rows:
        counts.setdefault(split, {}).setdefault(src, 0)
        counts[split][src] += 1
    train_vocab = set()
    for split, _, speak in rows:
        if split == "train":
            train_vocab.update(textnorm.transcript(speak).split())
    oov = {}
    for sp in ("dev", "test"):
        toks = [w for s, _, speak in rows if s == sp for w in textnorm.transcript(speak).split()]
        oov[sp] = round(sum(w not in train_vocab for w in toks) / max(1, len(toks)), 4)
    stats.update({
        "sentences": len(rows),
        "splits": {k: sum(v.values()) for k, v in counts.items()},
        "splits_by_source": counts,
        "train_vocabulary": len(train_vocab),
        "oov_rate_vs_train": oov,
        "words": sum(len(speak.split()) for _, _, speak in rows),
        "bytes": os.path.getsize(args.out),
    })
    with open(args.out + ".stats.json", "w") as fh:
        json.dump(stats, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print(json.dumps({k: stats[k] for k in ("sentences", "splits", "train_vocabulary", "oov_rate_vs_train",
                                           "words", "bytes")}), file=sys.stderr)


if __name__ == "__main__":
    main()
