#!/usr/bin/env python3
"""NeMo's own streaming Sortformer outputs for a steno Sortformer model directory: the golden files of steno's
streaming path (tests/data/sortformer-tiny-streaming).

    sortformer_streaming_golden.py --nemo NEMO_SRC --model MODEL_DIR --out golden.npz \
        --params NAME:key=value,... [--params ...] WAV...

NeMo's streaming code runs as NeMo wrote it, not as a transcription of it:
  * `nemo/collections/asr/modules/sortformer_modules.py` (SortformerModules: streaming_feat_loader,
    streaming_update, the speaker-cache compression, the speaker head) is executed from the NeMo source tree
    NEMO_SRC, with its three framework imports (NeuralModule, Exportable, logging) replaced by torch.nn.Module,
    object and Python's logging;
  * SortformerEncLabelModel's forward_streaming, forward_streaming_step, frontend_encoder and forward_infer are
    taken by name out of `nemo/collections/asr/models/sortformer_diar_models.py` and run as methods of a small
    shim that holds steno_ref's front end, FastConformer encoder and Transformer (which reproduce NeMo's own to
    1e-5 on reference/sortformer-tiny; tools/tests/test_sortformer_reference.py).
The audio goes in as NeMo's streaming_mode takes it: int16 / 32768, no peak normalisation, features of the whole
clip, one clip per batch (what steno serves: every stream is its own).

--params NAME:k=v,...  one streaming configuration (sortformer_modules fields: chunk_len, chunk_left_context,
                       chunk_right_context, fifo_len, spkcache_update_period, spkcache_len, ...); repeatable.

golden.npz keys: `<NAME>.clip<i>.preds` [T, speakers], `<NAME>.clip<i>.spkcache` / `.spkcache_preds` / `.fifo` /
`.fifo_preds` / `.mean_sil_emb` / `.n_sil_frames` (the state after the last chunk; empty parts left out),
`<NAME>.clip<i>.chunk_frames` (output frames per chunk), `offline.clip<i>.preds` (the offline path without peak
normalisation) and `meta_json` (NeMo commit, parameters, the wav names: the audio is not repeated).
"""
import argparse
import ast
import json
import logging
import math
import os
import random
import subprocess
import sys
import types
import wave

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from steno_ref import safetensors_io  # noqa: E402
from steno_ref.modeldir import load_weights  # noqa: E402
from steno_ref.run import int16_to_float  # noqa: E402
from steno_ref.sortformer import Sortformer  # noqa: E402

MODULES_PY = "nemo/collections/asr/modules/sortformer_modules.py"
MODELS_PY = "nemo/collections/asr/models/sortformer_diar_models.py"
MODEL_METHODS = ("forward_streaming", "forward_streaming_step", "frontend_encoder", "forward_infer")


def load_nemo_sortformer_modules(nemo_src):
    """Executes NeMo's sortformer_modules.py with its framework imports stubbed; returns the module."""
    stubs = {
        "nemo": types.ModuleType("nemo"),
        "nemo.core": types.ModuleType("nemo.core"),
        "nemo.core.classes": types.ModuleType("nemo.core.classes"),
        "nemo.core.classes.exportable": types.ModuleType("nemo.core.classes.exportable"),
        "nemo.core.classes.module": types.ModuleType("nemo.core.classes.module"),
        "nemo.utils": types.ModuleType("nemo.utils"),
    }
    stubs["nemo.core.classes.exportable"].Exportable = object
    stubs["nemo.core.classes.module"].NeuralModule = torch.nn.Module
    stubs["nemo.utils"].logging = logging.getLogger("nemo")
    sys.modules.update(stubs)
    path = os.path.join(nemo_src, MODULES_PY)
    module = types.ModuleType("nemo_sortformer_modules")
    module.__file__ = path
    with open(path, encoding="utf-8") as f:
        exec(compile(f.read(), path, "exec"), module.__dict__)  # noqa: S102 (NeMo's own source, read for testing)
    return module


def load_nemo_model_methods(nemo_src):
    """SortformerEncLabelModel's streaming methods, compiled out of sortformer_diar_models.py by name."""
    path = os.path.join(nemo_src, MODELS_PY)
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SortformerEncLabelModel")
    funcs = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name in MODEL_METHODS]
    missing = set(MODEL_METHODS) - {f.name for f in funcs}
    if missing:
        raise SystemExit(f"{path}: SortformerEncLabelModel has no {sorted(missing)}")
    for f in funcs:
        f.decorator_list = []
    namespace = {"torch": torch, "math": math, "random": random, "dist": torch.distributed, "logging": logging,
                 "tqdm": lambda it, **kw: it}
    exec(compile(ast.Module(body=funcs, type_ignores=[]), path, "exec"), namespace)  # noqa: S102
    return {name: namespace[name] for name in MODEL_METHODS}


class EncoderShim(torch.nn.Module):
    """NeMo's ConformerEncoder interface (pre_encode, bypass_pre_encode) over steno_ref's encoder."""

    def __init__(self, enc, subsampling_factor):
        super().__init__()
        self.enc = enc
        self.subsampling_factor = subsampling_factor
        self.att_context_size = [-1, -1]

    def pre_encode(self, x, lengths):
        return self.enc.pre_encode(x, lengths, self.enc.masked_subsampling)

    def forward(self, audio_signal, length, bypass_pre_encode=False):
        if not bypass_pre_encode:
            raise ValueError("the shim only runs NeMo's bypass_pre_encode path")
        x, pos_emb = self.enc.pos_enc(audio_signal)
        pad_mask, att_mask = self.enc._masks(length, x.size(1))
        for layer in self.enc.layers:
            x = layer(x, pos_emb, att_mask, pad_mask)
        return x.transpose(1, 2), length


class TransformerShim(torch.nn.Module):
    """NeMo's TransformerEncoder call (encoder_states, encoder_mask) over steno_ref's."""

    def __init__(self, tf):
        super().__init__()
        self.tf = tf
        self.diag = None

    def forward(self, encoder_states, encoder_mask):
        return self.tf(encoder_states, encoder_mask.sum(dim=1))


def make_model_shim(ref, nemo_modules, methods, modules_kwargs):
    shim = types.SimpleNamespace()
    sm = nemo_modules.SortformerModules(**modules_kwargs)
    sd = {k.split("sortformer_modules.", 1)[1]: v for k, v in ref.state_dict().items()
          if k.startswith("sortformer_modules.")}
    sm.load_state_dict(sd, strict=False)  # encoder_proj is always built by NeMo; steno_ref's equal widths drop it
    if ref.sortformer_modules.encoder_proj is None:
        sm.encoder_proj = None
    sm.eval()
    shim.sortformer_modules = sm
    shim.encoder = EncoderShim(ref.encoder, modules_kwargs["subsampling_factor"])
    shim.transformer_encoder = TransformerShim(ref.transformer_encoder)
    shim.spec_augmentation = None
    shim.training = False
    shim.async_streaming = False
    shim.negative_init_val = -99
    shim.device = torch.device("cpu")
    for name, fn in methods.items():
        setattr(shim, name, types.MethodType(fn, shim))
    return shim


def read_wav(path):
    with wave.open(path, "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise SystemExit(f"{path}: expected mono 16-bit PCM")
        return np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)


def parse_params(text):
    name, _, body = text.partition(":")
    if not name or not body:
        raise SystemExit(f"--params {text!r}: expected NAME:key=value,...")
    out = {}
    for item in body.split(","):
        k, _, v = item.partition("=")
        out[k.strip()] = float(v) if "." in v else int(v)
    return name, out


def nemo_commit(nemo_src):
    try:
        return subprocess.run(["git", "-C", nemo_src, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nemo", required=True, help="NeMo source tree (holds nemo/collections/...)")
    ap.add_argument("--nemo-commit", default=None, help="recorded in meta_json (default: git rev-parse in --nemo)")
    ap.add_argument("--model", required=True, help="steno Sortformer model directory")
    ap.add_argument("--out", required=True)
    ap.add_argument("--params", action="append", required=True)
    ap.add_argument("wavs", nargs="+")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)

    with open(os.path.join(args.model, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    ref = Sortformer(cfg)
    arrays, _, _ = safetensors_io.load(os.path.join(args.model, "model.safetensors"))
    load_weights(ref, arrays)
    ref.eval()

    nemo_modules = load_nemo_sortformer_modules(args.nemo)
    methods = load_nemo_model_methods(args.nemo)
    base = dict(cfg["sortformer_modules"])
    base["subsampling_factor"] = int(cfg["encoder"].get("subsampling_factor", 8))
    base.pop("dropout", None)

    out = {}
    clips = [read_wav(p) for p in args.wavs]
    meta = {"nemo_commit": args.nemo_commit or nemo_commit(args.nemo),
            "wavs": [os.path.basename(p) for p in args.wavs], "configs": {}}
    with torch.inference_mode():
        feats_per_clip = []
        for i, clip in enumerate(clips):
            audio = torch.from_numpy(int16_to_float(clip))[None]
            lengths = torch.tensor([audio.shape[1]])
            feats, feat_len = ref.preprocessor(audio, lengths)
            feats = feats[:, :, :int(feat_len.max())]
            feats_per_clip.append((feats, feat_len))
            enc, enc_len = ref.encoder(feats, feat_len)
            x = enc.transpose(1, 2)
            if ref.sortformer_modules.encoder_proj is not None:
                x = ref.sortformer_modules.encoder_proj(x)
            logits = ref.sortformer_modules.speaker_logits(ref.transformer_encoder(x, enc_len))
            out[f"offline.clip{i}.preds"] = torch.sigmoid(logits)[0].numpy()
        for spec in args.params:
            name, overrides = parse_params(spec)
            kwargs = {**base, **overrides}
            unknown = set(overrides) - set(base)
            if unknown:
                raise SystemExit(f"--params {name}: unknown fields {sorted(unknown)}")
            meta["configs"][name] = kwargs
            shim = make_model_shim(ref, nemo_modules, methods, kwargs)
            shim.sortformer_modules._check_streaming_parameters()
            for i, (feats, feat_len) in enumerate(feats_per_clip):
                chunk_frames, state_box = [], {}
                step = shim.forward_streaming_step

                def recording_step(**kw):
                    before = kw["total_preds"].shape[1]
                    state, total = step(**kw)
                    chunk_frames.append(total.shape[1] - before)
                    state_box["state"] = state
                    return state, total

                shim.forward_streaming_step = recording_step
                preds = shim.forward_streaming(feats, feat_len)
                shim.forward_streaming_step = step
                key = f"{name}.clip{i}"
                out[f"{key}.preds"] = preds[0].numpy()
                out[f"{key}.chunk_frames"] = np.array(chunk_frames, dtype=np.int64)
                st = state_box["state"]
                state = {"spkcache": st.spkcache, "spkcache_preds": st.spkcache_preds, "fifo": st.fifo,
                         "fifo_preds": st.fifo_preds, "mean_sil_emb": st.mean_sil_emb}
                for name_, t in state.items():
                    if t is not None and t.numel() > 0:  # empty parts (no compression yet, no FIFO) are left out
                        out[f"{key}.{name_}"] = t[0].numpy()
                out[f"{key}.n_sil_frames"] = st.n_sil_frames.numpy()
                p = out[f"{key}.preds"]
                print(f"{key}: {p.shape[0]} frames in {len(chunk_frames)} chunks, spkcache {tuple(st.spkcache.shape)}"
                      f", speech {(p > 0.5).mean():.2f} of frame-speakers, silence frames {int(st.n_sil_frames[0])}")
    out["meta_json"] = np.array(json.dumps(meta, indent=1))
    np.savez_compressed(args.out, **out)


if __name__ == "__main__":
    main()
