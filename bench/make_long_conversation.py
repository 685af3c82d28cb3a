#!/usr/bin/env python3
"""A long synthetic conversation with its reference: the same 2-4 held-out voices (those of
tests/data/diar-testset, never used in training) talking for SECONDS, composed as the test set's conversations are
(tools/train/diar_conversations.py), written as 16 kHz int16 WAV and RTTM. For the long-audio runs: time, memory
and DER of a recording hours long.

    make_long_conversation.py SECONDS OUT.wav OUT.rttm [--speakers 3] [--seed 11] [--text OUT.txt]

--text writes what is said, utterance by utterance in order of their starts (the reference for a WER).

Needs espeak-ng. Offline tooling (numpy).
"""
import argparse
import os
import sys
import wave

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "train"))
import diar_conversations as dc  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("seconds", type=float)
    ap.add_argument("wav")
    ap.add_argument("rttm")
    ap.add_argument("--speakers", type=int, default=3)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--text", help="also write the words said, in order of the utterances' starts")
    args = ap.parse_args()
    held = [v for v in dc.voices("test", 16, args.seed, with_flite=False)]
    chosen, used = [], set()
    for v in held:
        if v.voice not in used:
            used.add(v.voice)
            chosen.append(v)
        if len(chosen) == args.speakers:
            break
    texts = {}
    pool = dc.build_pool(chosen, 60, args.seed, texts=texts)
    rng = np.random.default_rng(args.seed)
    audio, segs = dc.compose(rng, pool, list(range(len(chosen))), args.seconds)
    audio = (audio * 0.5 / (np.max(np.abs(audio)) + 1e-9))
    with wave.open(args.wav, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(dc.SR)
        w.writeframes(np.clip(np.round(audio * 32767), -32768, 32767).astype("<i2").tobytes())
    if args.text:
        with open(args.text, "w", encoding="utf-8") as f:
            for s, a, _, k in sorted(segs, key=lambda seg: seg[1]):
                f.write(texts[s][k] + "\n")
    rec = os.path.splitext(os.path.basename(args.wav))[0]
    with open(args.rttm, "w", encoding="utf-8") as f:
        for s, a, b in dc.merged_segments(segs):
            f.write(f"SPEAKER {rec} 1 {a:.3f} {b - a:.3f} <NA> <NA> {chr(ord('A') + s)} <NA> <NA>\n")
    print(f"{args.wav}: {len(audio) / dc.SR:.0f} s, {len(chosen)} speakers ({', '.join(v.name for v in chosen)}), "
          f"overlap {100 * dc.overlap_fraction(segs):.1f} %")


if __name__ == "__main__":
    main()
