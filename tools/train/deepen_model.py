#!/usr/bin/env python3
"""Deepen a steno FastConformer-TDT model directory by conformer layers that start as the identity.

  /usr/bin/python3 tools/train/deepen_model.py IN_DIR OUT_DIR [--add 2 | --after 3,7]

The deeper model computes what IN_DIR computes (to float rounding), so training it (train.py --init-model OUT_DIR)
starts from the released model's accuracy instead of from scratch, and its checkpoints can still be averaged with
the released model deepened the same way (average_models.py).

Why it is exact: a conformer layer is r = x + 0.5 FF1(x) + MHSA(.) + Conv(.) + 0.5 FF2(.) (each branch behind its
own LayerNorm), then y = norm_out(r). A new layer whose four branches end in zero weights and biases
(feed_forward*.linear2, self_attn.linear_out, conv.pointwise_conv2) adds nothing, so it computes
norm_out'(x). Inserted after layer i, it takes over layer i's norm_out scale and shift, and layer i's norm_out
becomes the plain normalisation (scale 1, shift 0): layer i now emits n = normalize(r_i), the new layer passes n
through its branches unchanged and emits scale * normalize(n) + shift = scale * n + shift (n already has zero
mean and unit variance), which is what layer i emitted before.

The new layer's other weights are copies of the layer that follows it (of layer i itself when it is the last), so
that its branches start from features that mean something; the zeroed output projections get gradients at once
and the branches grow from nothing.
"""
import argparse
import json
import os
import re
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from steno_ref import safetensors_io  # noqa: E402

# The last op of each residual branch: zeroed, the branch adds nothing.
BRANCH_OUTPUTS = ("feed_forward1.linear2.", "feed_forward2.linear2.", "self_attn.linear_out.",
                  "conv.pointwise_conv2.")
LAYER_KEY = re.compile(r"^encoder\.layers\.(\d+)\.(.+)$")


def default_positions(n_layers, add):
    """Insert points spread evenly: for 8 layers and 2 new ones, after layers 3 and 7."""
    return [(k + 1) * n_layers // add - 1 for k in range(add)]


def deepen(tensors, n_layers, after):
    """{name: array} of an n_layers encoder, the layers to insert after (0-based, in the old numbering, each at
    most once) -> {name: array} of the deeper encoder. A ValueError for positions out of range or repeated."""
    if sorted(set(after)) != sorted(after) or any(not 0 <= i < n_layers for i in after):
        raise ValueError(f"insert positions {after} must be distinct layers of 0..{n_layers - 1}")
    layers = [dict() for _ in range(n_layers)]
    out = {}
    for name, a in tensors.items():
        m = LAYER_KEY.match(name)
        if m is None:
            out[name] = a
            continue
        i = int(m.group(1))
        if i >= n_layers:
            raise ValueError(f"tensor {name}: layer {i} but the config says {n_layers} layers")
        layers[i][m.group(2)] = a
    if any(not lay for lay in layers):
        raise ValueError("some encoder layers have no tensors")

    stack = []
    for i, lay in enumerate(layers):
        if i not in after:
            stack.append(lay)
            continue
        template = layers[i + 1] if i + 1 < n_layers else lay
        new = {k: v.copy() for k, v in template.items()}
        for k in new:
            if k.startswith(BRANCH_OUTPUTS):
                new[k] = np.zeros_like(new[k])
        new["norm_out.weight"] = lay["norm_out.weight"].copy()
        new["norm_out.bias"] = lay["norm_out.bias"].copy()
        old = dict(lay)
        old["norm_out.weight"] = np.ones_like(lay["norm_out.weight"])
        old["norm_out.bias"] = np.zeros_like(lay["norm_out.bias"])
        stack += [old, new]
    for j, lay in enumerate(stack):
        for k, v in lay.items():
            out[f"encoder.layers.{j}.{k}"] = v
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("model_dir")
    ap.add_argument("out_dir")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--add", type=int, default=2, help="how many layers to add, spread evenly (default 2)")
    where.add_argument("--after", default=None, help="comma-separated layers (0-based) to insert after")
    args = ap.parse_args()
    with open(os.path.join(args.model_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    n = int(cfg["encoder"]["n_layers"])
    if args.after is None and not 1 <= args.add <= n:
        sys.exit(f"deepen_model.py: --add must be 1..{n} (one new layer at most after each old one)")
    after = [int(v) for v in args.after.split(",")] if args.after else default_positions(n, args.add)
    tensors, meta, kinds = safetensors_io.load(os.path.join(args.model_dir, "model.safetensors"))
    try:
        deeper = deepen(tensors, n, after)
    except ValueError as e:
        sys.exit(f"deepen_model.py: {e}")
    cfg["encoder"]["n_layers"] = n + len(after)
    os.makedirs(args.out_dir, exist_ok=True)
    bf16 = {}
    for name in deeper:  # the stored dtypes as IN_DIR's (load() widened BF16 to f32)
        m = LAYER_KEY.match(name)
        src = f"encoder.layers.0.{m.group(2)}" if m else name
        if kinds.get(src) == "BF16":
            bf16[name] = "BF16"
    safetensors_io.save(os.path.join(args.out_dir, "model.safetensors"), deeper, meta, bf16)
    with open(os.path.join(args.out_dir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2, ensure_ascii=False)
        f.write("\n")
    for extra in ("tokenizer.model", "lm.arpa.gz"):
        if os.path.exists(os.path.join(args.model_dir, extra)):
            shutil.copy(os.path.join(args.model_dir, extra), args.out_dir)
    params = sum(v.size for k, v in deeper.items() if not k.startswith("preprocessor."))
    print(f"deepen_model.py: {args.out_dir}: {n} -> {n + len(after)} layers (new after {after}), "
          f"{params / 1e6:.2f} M parameters")


if __name__ == "__main__":
    main()
