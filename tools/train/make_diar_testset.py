#!/usr/bin/env python3
"""The committed diarization test set (tests/data/diar-testset): conversations among HELD-OUT voices (espeak-ng
bases and variants, and a flite voice, that training never uses), 2-4 speakers, 5-20 % overlapped speech, as FLAC
with reference RTTM (speakers named A, B, ... in order of arrival) and a manifest holding every utterance's
speaker, times and words (the reference of speaker-attributed WER). Conversations end in a silence, never inside
an utterance.

    make_diar_testset.py OUT_DIR [--count 10] [--seed 5]

Deterministic for a given seed and synthesizer build. Needs espeak-ng, flite and flac.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import wave

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import diar_conversations as dc  # noqa: E402


def write_flac(path, audio):
    pcm = np.clip(np.round(audio * 32767.0), -32768, 32767).astype("<i2")
    with tempfile.TemporaryDirectory() as d:
        wav = os.path.join(d, "x.wav")
        with wave.open(wav, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(dc.SR)
            w.writeframes(pcm.tobytes())
        subprocess.run(["flac", "-s", "-8", "-f", "-o", path, wav], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=10)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    held = dc.voices("test", 16, args.seed)
    texts = {}
    pool = dc.build_pool(held, 8, args.seed, texts=texts)
    names = [held[i].name for i in range(len(held))]
    rng = np.random.default_rng(args.seed)
    manifest = []
    k = 0
    while k < args.count:
        n = 2 + k % 3
        order = rng.permutation(len(held))
        speakers, used = [], set()
        for i in order:
            voice = names[i].split(":")[1]
            if voice not in used and pool[int(i)]:
                used.add(voice)
                speakers.append(int(i))
            if len(speakers) == n:
                break
        audio, segs = dc.compose(rng, pool, speakers, float(rng.uniform(20, 35)))
        audio, segs = dc.without_cut_utterances(audio, segs)
        ov = dc.overlap_fraction(segs)
        if not 0.05 <= ov <= 0.20 or len({seg[0] for seg in segs}) != n:
            continue  # the range, and every speaker heard
        # Clean but for the level (noise would triple the FLAC size; the training data carries the noise).
        audio = (audio * 10 ** (rng.uniform(-12, -3) / 20) / (np.max(np.abs(audio)) + 1e-9)).astype(np.float32)
        name = f"conv{k:02d}"
        write_flac(os.path.join(args.out, name + ".flac"), audio)
        merged = dc.merged_segments(segs)
        first = {}
        for s, a, _ in sorted(merged, key=lambda x: x[1]):
            first.setdefault(s, chr(ord("A") + len(first)))
        with open(os.path.join(args.out, name + ".rttm"), "w", encoding="utf-8") as f:
            for s, a, b in merged:
                f.write(f"SPEAKER {name} 1 {a:.3f} {b - a:.3f} <NA> <NA> {first[s]} <NA> <NA>\n")
        # What was said, by whom, when: the reference of speaker-attributed WER (every utterance complete).
        said = [{"speaker": first[s], "start": round(a, 3), "end": round(b, 3),
                 "text": dc.transcript_of(texts[speakers[s]][k])} for s, a, b, k in sorted(segs, key=lambda x: x[1])]
        manifest.append({"file": name + ".flac", "rttm": name + ".rttm", "seconds": round(len(audio) / dc.SR, 3),
                         "speakers": {first[s]: names[speakers[s]] for s in sorted(first)},
                         "overlap": round(ov, 3), "utterances": said})
        print(f"{name}: {manifest[-1]['seconds']} s, {n} speakers, overlap {100 * ov:.1f} %")
        k += 1
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump({"seed": args.seed, "conversations": manifest}, f, indent=1)


if __name__ == "__main__":
    main()
