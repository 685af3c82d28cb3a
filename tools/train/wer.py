"""Word error counting for the training tools, as steno's C++ scorer (src/asr/wer.cc) counts: its normalisation and
the word edit distance (substitutions, deletions and insertions all cost 1)."""


def normalize(text):
    """Lower-case ASCII; letters, digits, apostrophes and non-ASCII kept, everything else a word break."""
    out = []
    for ch in text:
        keep = ord(ch) >= 0x80 or ch.isascii() and (ch.isalnum() or ch == "'")
        out.append((ch.lower() if ch.isascii() else ch) if keep else " ")  # wer.cc lowers ASCII only
    return " ".join("".join(out).split())


def edit_distance(ref, hyp):
    """Word edit distance between two word lists."""
    prev = list(range(len(hyp) + 1))
    for i in range(1, len(ref) + 1):
        cur = [i] + [0] * len(hyp)
        for j in range(1, len(hyp) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ref[i - 1] != hyp[j - 1]))
        prev = cur
    return prev[-1]
