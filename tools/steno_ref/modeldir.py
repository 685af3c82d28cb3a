"""steno model directories (docs/model-format.md): config.json + model.safetensors + tokenizer.model."""
import json
import os
import shutil

import numpy as np
import torch

from . import safetensors_io
from .model import FastConformerTDT

ST_DTYPES = {"f32": None, "f16": "F16", "bf16": "BF16"}


def _optional_keys(model):
    # num_batches_tracked is dropped from steno files; it does not affect inference
    return {k for k in model.state_dict() if k.endswith("num_batches_tracked")}


def state_dict_numpy(sd, dtype="f32"):
    """torch state dict -> ({name: np array}, {name: safetensors dtype override}) with
    num_batches_tracked dropped and floats cast to dtype (f32|f16|bf16), except the preprocessor buffers."""
    if dtype not in ST_DTYPES:
        raise ValueError(f"dtype must be one of {sorted(ST_DTYPES)}")
    arrays, overrides = {}, {}
    for k, v in sd.items():
        if k.endswith("num_batches_tracked"):
            continue
        a = v.detach().cpu()
        if a.is_floating_point():
            a = a.float().numpy()
            if k.startswith("preprocessor."):
                pass  # fb/window stay F32: tiny, and the front end needs their exact values
            elif dtype == "f16":
                a = a.astype(np.float16)
            elif dtype == "bf16":
                overrides[k] = "BF16"
        else:
            a = a.numpy()
        arrays[k] = a
    return arrays, overrides


def load_weights(model, arrays):
    """Load {name: np array} into model; a missing, extra or mis-shaped tensor is an error naming it.
    joint.joint_net.1.* (NeMo joint with dropout 0) is accepted for joint.joint_net.2.*."""
    expected = model.state_dict()
    arrays = {(k.replace("joint.joint_net.1.", "joint.joint_net.2.") if k.startswith("joint.joint_net.1.") else k): v
              for k, v in arrays.items()}
    sd = {}
    for k, v in arrays.items():
        if k.endswith("num_batches_tracked"):
            continue
        if k not in expected:
            raise KeyError(f"unexpected tensor {k} {tuple(v.shape)}")
        if tuple(v.shape) != tuple(expected[k].shape):
            raise ValueError(f"tensor {k}: expected shape {tuple(expected[k].shape)}, got {tuple(v.shape)}")
        sd[k] = torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32))
    # fb/window may be absent: then the computed Slaney filterbank / symmetric Hann are used
    optional = _optional_keys(model) | {"preprocessor.featurizer.fb", "preprocessor.featurizer.window"}
    missing = [k for k in expected if k not in sd and k not in optional]
    if missing:
        raise KeyError(f"missing tensors: {missing}")
    model.load_state_dict(sd, strict=False)
    return model


def load_model_dir(path):
    with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    if cfg.get("format") != "steno-model" or cfg.get("model_type") != "fastconformer_tdt":
        raise ValueError(f"{path}: not a steno fastconformer_tdt model directory")
    model = FastConformerTDT(cfg)
    arrays, _, _ = safetensors_io.load(os.path.join(path, "model.safetensors"))
    load_weights(model, arrays)
    return model.eval(), cfg


def save_model_dir(path, cfg, state_dict, tokenizer_src, dtype="f32"):
    os.makedirs(path, exist_ok=True)
    arrays, overrides = state_dict_numpy(state_dict, dtype)
    safetensors_io.save(os.path.join(path, "model.safetensors"), arrays, dtypes=overrides)
    with open(os.path.join(path, "config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2, ensure_ascii=False)
        f.write("\n")
    if tokenizer_src is not None:
        dst = os.path.join(path, cfg.get("tokenizer", {}).get("model", "tokenizer.model"))
        if isinstance(tokenizer_src, (bytes, bytearray)):
            with open(dst, "wb") as f:
                f.write(tokenizer_src)
        elif os.path.abspath(tokenizer_src) != os.path.abspath(dst):
            shutil.copyfile(tokenizer_src, dst)
