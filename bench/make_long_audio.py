#!/usr/bin/env python3
"""A long recording for the long-audio runs: the given conversations (16 kHz mono int16 WAV) repeated in a seeded
order with seeded gains and 0.2-2 s pauses until SECONDS, written as one 16 kHz int16 WAV.

    make_long_audio.py SECONDS OUT.wav IN.wav... [--seed N]

Offline tooling (numpy); the recording measures time and memory, not accuracy (its speakers repeat).
"""
import argparse
import wave

import numpy as np


def read(path):
    with wave.open(path, "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2 or w.getframerate() != 16000:
            raise SystemExit(f"{path}: need 16 kHz mono 16-bit PCM")
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("seconds", type=float)
    ap.add_argument("out")
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    clips = [read(p) for p in args.inputs]
    total = int(args.seconds * 16000)
    with wave.open(args.out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        at, n = 0, 0
        while at < total:
            piece = (clips[int(rng.integers(len(clips)))].astype(np.float32) * float(rng.uniform(0.5, 1.0)))
            piece = piece.astype("<i2")[: total - at]
            pause = np.zeros(min(int(rng.uniform(0.2, 2.0) * 16000), total - at - len(piece)), dtype="<i2")
            w.writeframes(piece.tobytes() + pause.tobytes())
            at += len(piece) + len(pause)
            n += 1
    print(f"{args.out}: {total / 16000:.0f} s from {n} pieces")


if __name__ == "__main__":
    main()
