#!/usr/bin/env python3
"""Transcribe a manifest's clips with the PyTorch reference (tools/steno_ref), each clip alone, and write
`audio_filepath<TAB>text` lines: the golden transcript list the C++ engine must reproduce on the bundled model's
test set (tests/engine/bundled_model_test.cc).

  /usr/bin/python3 tools/transcribe_ref.py MODEL_DIR MANIFEST.jsonl OUT.tsv

Audio is read with the `flac` command-line decoder (FLAC) or the wave module (WAV), as int16 / 32768, the way
steno reads it.
"""
import json
import os
import subprocess
import sys
import wave

import numpy as np
import sentencepiece as spm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from steno_ref.modeldir import load_model_dir  # noqa: E402
from steno_ref.run import int16_to_float, run_batch  # noqa: E402


def read_audio(path):
    if path.endswith(".flac"):
        raw = subprocess.run(["flac", "-d", "-s", "-c", "--force-raw-format", "--endian=little", "--sign=signed",
                              path], check=True, capture_output=True).stdout
        return int16_to_float(np.frombuffer(raw, dtype="<i2"))
    with wave.open(path, "rb") as w:
        if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (16000, 1, 2):
            raise ValueError(f"{path}: expected 16 kHz mono int16")
        return int16_to_float(np.frombuffer(w.readframes(w.getnframes()), dtype="<i2"))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    model_dir, manifest, out_path = sys.argv[1:]
    model, cfg = load_model_dir(model_dir)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, cfg["tokenizer"]["model"]))
    base = os.path.dirname(os.path.abspath(manifest))
    lines = []
    with open(manifest, encoding="utf-8") as f:
        for line in f:
            entry = json.loads(line)
            clip = read_audio(os.path.join(base, entry["audio_filepath"]))
            _, hyps = run_batch(model, [clip])
            lines.append(f"{entry['audio_filepath']}\t{sp.decode(list(map(int, hyps[0]['tokens'])))}\n")
    with open(out_path, "w", encoding="utf-8") as f:
        f.writelines(lines)
    print(f"wrote {out_path}: {len(lines)} transcripts")


if __name__ == "__main__":
    main()
