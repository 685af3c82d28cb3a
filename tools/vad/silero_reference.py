#!/usr/bin/env python3
"""Reference speech probabilities of Silero VAD (v6.2) from onnxruntime, for steno's parity test.

Offline tooling only (numpy and onnxruntime; never on the serving path). The input is a 16-bit mono 16 kHz WAV
with `--lead` seconds of digital silence before it and `--tail` seconds of deterministic noise after it (the same
generator as tests/vad/golden_input.h, so the C++ test rebuilds the exact samples from the committed FLAC). The
model runs as Silero's own OnnxWrapper.audio_forward runs it: 512-sample chunks, each after the previous chunk's
last 64 samples (zeros before the first), the LSTM state carried, the last chunk zero-padded.

  python3 tools/vad/silero_reference.py --onnx silero_vad.onnx --wav clip.wav --source <path of the FLAC> \
      --lead 1.0 --tail 1.0 --noise-amplitude 0.02 --out tests/data/vad/silero_golden.json
"""
import argparse
import json
import wave

import numpy as np
import onnxruntime

CHUNK = 512
CONTEXT = 64


def noise(n, amplitude, seed=12345):
    """Uniform noise in [-amplitude, amplitude) from a 32-bit LCG (Numerical Recipes' constants), as in C++."""
    out = np.empty(n, dtype=np.float32)
    x = seed
    for i in range(n):
        x = (1664525 * x + 1013904223) & 0xFFFFFFFF
        out[i] = np.float32(((x >> 8) / float(1 << 24) * 2.0 - 1.0) * amplitude)
    return out


def read_wav(path):
    with wave.open(path, "rb") as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2 and w.getframerate() == 16000, path
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return pcm.astype(np.float32) / 32768.0


def probabilities(session, audio):
    audio = np.concatenate([audio, np.zeros((-len(audio)) % CHUNK, dtype=np.float32)])
    state = np.zeros((2, 1, 128), dtype=np.float32)
    context = np.zeros((1, CONTEXT), dtype=np.float32)
    out = []
    for i in range(0, len(audio), CHUNK):
        x = np.concatenate([context, audio[None, i:i + CHUNK]], axis=1)
        prob, state = session.run(None, {"input": x, "state": state, "sr": np.array(16000, dtype=np.int64)})
        out.append(float(prob[0, 0]))
        context = x[:, -CONTEXT:]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--onnx", required=True)
    p.add_argument("--wav", required=True)
    p.add_argument("--source", required=True, help="the clip's path in the repository, recorded in the golden")
    p.add_argument("--lead", type=float, default=1.0)
    p.add_argument("--tail", type=float, default=1.0)
    p.add_argument("--noise-amplitude", type=float, default=0.02)
    p.add_argument("--out", required=True)
    p.add_argument("--model-label", default="silero_vad.onnx (v6.2; snakers4/silero-vad at 806dcba, src/silero_vad/data/)")
    a = p.parse_args()
    opts = onnxruntime.SessionOptions()
    opts.inter_op_num_threads = 1
    opts.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(a.onnx, sess_options=opts, providers=["CPUExecutionProvider"])
    clip = read_wav(a.wav)
    audio = np.concatenate([np.zeros(int(round(a.lead * 16000)), dtype=np.float32), clip,
                            noise(int(round(a.tail * 16000)), a.noise_amplitude)])
    probs = probabilities(session, audio)
    doc = {"model": a.model_label, "onnxruntime": onnxruntime.__version__,
           "source": a.source, "clip_samples": len(clip), "lead_seconds": a.lead, "tail_seconds": a.tail,
           "noise_amplitude": a.noise_amplitude, "noise_seed": 12345, "chunk": CHUNK,
           "probabilities": [round(v, 6) for v in probs]}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
