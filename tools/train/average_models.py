#!/usr/bin/env python3
"""Average the weights of model directories that share one architecture (a "model soup").

Checkpoints fine-tuned from a common starting point lie in one basin of the loss, and their weighted average often
generalizes better than any of them: the bundled model's stage 3 and its continuation (stage 4) averaged 0.7 / 0.3
made fewer errors on the validation set than either, and on the test sets than stage 3 (tools/train/README.md).

  /usr/bin/python3 tools/train/average_models.py OUT_DIR WEIGHTS MODEL_DIR...
  e.g. average_models.py /tmp/soup 0.7,0.3 models/steno-tdt-small-en /tmp/stage4/model

WEIGHTS: one per model, summing to 1. Float tensors are averaged in float64 and stored in the first model's dtypes;
integer tensors must be equal in every model and are copied. config.json and tokenizer.model come from the first
model, and every model must have the same config.json: averaging weights of different shapes or meanings is refused.
Only how the model decodes by default may differ (decoding.strategy and its beam settings: a training export has
none, the release names its LM); the first model's is kept, with the LM file it names.
"""
import argparse
import json
import math
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from steno_ref import safetensors_io  # noqa: E402


def average(tensor_sets, weights):
    """{name: array} of each model, their weights -> the weighted average (a ValueError for any mismatch)."""
    if len(tensor_sets) != len(weights) or not tensor_sets:
        raise ValueError(f"{len(weights)} weights for {len(tensor_sets)} models")
    if not math.isclose(sum(weights), 1.0, abs_tol=1e-6) or min(weights) < 0:
        raise ValueError(f"weights {weights} must be non-negative and sum to 1")
    first = tensor_sets[0]
    out = {}
    for name, a0 in first.items():
        arrays = []
        for k, tensors in enumerate(tensor_sets):
            a = tensors.get(name)
            if a is None or a.shape != a0.shape:
                raise ValueError(f"model {k}: tensor {name} is {None if a is None else a.shape}, not {a0.shape}")
            arrays.append(a)
        if a0.dtype.kind == "f":
            out[name] = sum(w * a.astype(np.float64) for w, a in zip(weights, arrays)).astype(a0.dtype)
        else:
            if any(not np.array_equal(a, a0) for a in arrays[1:]):
                raise ValueError(f"integer tensor {name} differs between models: it cannot be averaged")
            out[name] = a0
    for k, tensors in enumerate(tensor_sets[1:], 1):
        extra = set(tensors) - set(first)
        if extra:
            raise ValueError(f"model {k} has tensors the first has not: {sorted(extra)[:5]}")
    return out


# config.json's decoding fields that say how to decode by default, not what the weights are (docs/model-format.md).
DEFAULT_DECODING_KEYS = ("strategy", "beam_size", "lm", "lm_alpha", "lm_beta", "lexicon", "unknown_word_penalty")


def architecture(config):
    """config.json without its default decoding: what models must share to be averaged."""
    c = dict(config)
    c["decoding"] = {k: v for k, v in c.get("decoding", {}).items() if k not in DEFAULT_DECODING_KEYS}
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("weights", help="comma-separated, one per model, summing to 1")
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    weights = [float(w) for w in args.weights.split(",")]
    configs = []
    for d in args.models:
        with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
            configs.append(json.load(f))
    if any(architecture(c) != architecture(configs[0]) for c in configs[1:]):
        sys.exit("average_models.py: the models' config.json differ: not one architecture")
    loaded = [safetensors_io.load(os.path.join(d, "model.safetensors")) for d in args.models]
    try:
        soup = average([tensors for tensors, _, _ in loaded], weights)
    except ValueError as e:
        sys.exit(f"average_models.py: {e}")
    tensors0, meta0, kinds0 = loaded[0]
    os.makedirs(args.out, exist_ok=True)
    bf16 = {name: "BF16" for name, kind in kinds0.items() if kind == "BF16"}  # load() widened them to f32
    safetensors_io.save(os.path.join(args.out, "model.safetensors"), soup, meta0, bf16)
    decoding = configs[0].get("decoding", {})
    files = tuple(decoding[k] for k in ("lm", "lexicon") if decoding.get(k))  # the default decoding's files
    for f in ("config.json", "tokenizer.model") + files:
        shutil.copy(os.path.join(args.models[0], f), args.out)
    print(f"average_models.py: {args.out} = " + " + ".join(f"{w} x {d}" for w, d in zip(weights, args.models)))


if __name__ == "__main__":
    main()
