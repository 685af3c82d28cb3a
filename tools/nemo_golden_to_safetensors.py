#!/usr/bin/python3
"""Convert a nemo-tiny golden .npz into steno's golden-file format (docs/model-format.md).

  /usr/bin/python3 tools/nemo_golden_to_safetensors.py NPZ OUT_DIR [--wav-dir DIR]

OUT_DIR/golden.safetensors gets every numeric array under its npz name (audio.clipN as F32 = int16/32768);
OUT_DIR/golden.json gets {"texts": {...}, "scores": {...}, "meta": <meta_json parsed>}. Strings and the
float64 hypothesis scores go to JSON. golden_nemo24.npz carries no audio, so audio.clipN is then read from
the wavs named in meta["wavs"], looked up in --wav-dir (default: the npz's directory).
Runs at CI test time: numpy only, no torch import.
"""
import argparse
import json
import os
import sys
import wave

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from steno_ref import safetensors_io  # noqa: E402  (torch-free)


def read_wav_int16(path):
    with wave.open(path, "rb") as w:
        if w.getsampwidth() != 2 or w.getnchannels() != 1:
            raise ValueError(f"{path}: need mono 16-bit PCM")
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")


def convert(npz_path, out_dir, wav_dir=None):
    g = np.load(npz_path, allow_pickle=False)
    meta = json.loads(str(g["meta_json"])) if "meta_json" in g.files else {}
    arrays, texts, scores = {}, {}, {}
    for k in g.files:
        if k == "meta_json":
            continue
        a = g[k]
        if a.dtype.kind == "U":
            texts[k] = str(a)
        elif k.endswith(".score"):
            scores[k] = float(a)
        elif k.startswith("audio."):
            arrays[k] = a.astype(np.float32) / np.float32(32768.0) if a.dtype == np.int16 else a.astype(np.float32)
        elif a.dtype in (np.float32, np.int64, np.int32):
            arrays[k] = a
        elif a.dtype == np.float64:
            arrays[k] = a.astype(np.float32)
        else:
            raise ValueError(f"{k}: unexpected dtype {a.dtype}")
    if not any(k.startswith("audio.") for k in arrays):
        wav_dir = wav_dir or os.path.dirname(os.path.abspath(npz_path))
        for i, name in enumerate(meta.get("wavs", [])):
            pcm = read_wav_int16(os.path.join(wav_dir, name))
            arrays[f"audio.clip{i}"] = pcm.astype(np.float32) / np.float32(32768.0)
    os.makedirs(out_dir, exist_ok=True)
    safetensors_io.save(os.path.join(out_dir, "golden.safetensors"), arrays,
                        metadata={"source": os.path.basename(npz_path)})
    with open(os.path.join(out_dir, "golden.json"), "w", encoding="utf-8") as f:
        json.dump({"texts": texts, "scores": scores, "meta": meta}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return arrays


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("npz")
    ap.add_argument("out_dir")
    ap.add_argument("--wav-dir", default=None)
    a = ap.parse_args(argv)
    try:
        arrays = convert(a.npz, a.out_dir, a.wav_dir)
    except (OSError, ValueError, KeyError) as ex:
        print(f"nemo_golden_to_safetensors: error: {ex}", file=sys.stderr)
        return 1
    print(f"wrote {a.out_dir}: {len(arrays)} arrays")
    return 0


if __name__ == "__main__":
    sys.exit(main())
