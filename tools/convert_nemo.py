#!/usr/bin/python3
"""Convert a NeMo checkpoint (.nemo) into a steno model directory: FastConformer-TDT (ASR) or Sortformer
(speaker diarization), told apart by model_config.yaml.

  /usr/bin/python3 tools/convert_nemo.py MODEL.nemo OUT_DIR [--frontend-version 2.4|2.5] [--dtype f32|f16|bf16]
      [--postprocessing NEMO_POSTPROCESSING.yaml]   (Sortformer only)

Writes OUT_DIR/config.json (docs/model-format.md), OUT_DIR/model.safetensors (NeMo key names,
num_batches_tracked dropped) and, for ASR, OUT_DIR/tokenizer.model. Settings that cannot be seen in the
weights (xscaling, front end, durations, attention context, streaming parameters) are copied from
model_config.yaml; a Sortformer's post-processing comes from a NeMo post-processing yaml (its `parameters:`)
when one is given, else NeMo's defaults. The result is loaded back into the reference model so shape errors
surface here, not in C++.
"""
import argparse
import io
import os
import sys
import tarfile

import torch
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from steno_ref.modeldir import load_weights, save_model_dir, state_dict_numpy  # noqa: E402
from steno_ref.model import FastConformerTDT  # noqa: E402
from steno_ref.sortformer import Sortformer  # noqa: E402


class ConvertError(Exception):
    pass


def open_nemo(path):
    """A .nemo is a tar: uncompressed since NeMo 1.7, gzip before. Returns {member name without ./: bytes}."""
    if not os.path.isfile(path):
        raise ConvertError(f"{path}: no such file")
    for mode in ("r:", "r:gz"):
        try:
            with tarfile.open(path, mode) as tar:
                out = {}
                for m in tar.getmembers():
                    if m.isfile():
                        name = m.name[2:] if m.name.startswith("./") else m.name
                        out[name] = tar.extractfile(m).read()
                return out
        except (tarfile.TarError, EOFError, OSError):
            continue
    raise ConvertError(f"{path}: not a .nemo file (neither a tar nor a gzip tar)")


def member(files, name, what):
    if name in files:
        return files[name]
    base = [k for k in files if os.path.basename(k) == name]
    if base:
        return files[base[0]]
    raise ConvertError(f"member {name!r} ({what}) missing from the .nemo; it has: {sorted(files)}")


def frontend_from_version(ver):
    """nemo_version >= 2.5 -> '2.5' (current front end), else '2.4' (docs/engine.md, "Front end")."""
    if not ver:
        return "2.5"
    parts = []
    for p in str(ver).split(".")[:2]:
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    while len(parts) < 2:
        parts.append(0)
    return "2.5" if tuple(parts) >= (2, 5) else "2.4"


def preprocessor_config(p, sr, frontend_version):
    # front-end settings the reference does not implement are refused rather than silently ignored
    for key, ok in (("log", True), ("frame_splicing", 1), ("exact_pad", False), ("log_zero_guard_type", "add")):
        if key in p and p[key] != ok:
            raise ConvertError(f"unsupported preprocessor.{key}={p[key]!r} (need {ok!r})")
    # NeMo's normalize_batch normalises for per_feature/all_features and passes anything else it does not know
    # through unchanged: Sortformer v2's "NA" (like None) means no normalisation.
    normalize = p.get("normalize", "per_feature")
    if normalize in (None, "NA", "none", "None"):
        normalize = "none"
    elif normalize not in ("per_feature", "all_features"):
        raise ConvertError(f"unsupported preprocessor.normalize={normalize!r}")
    guard = p.get("log_zero_guard_value", 2 ** -24)
    if isinstance(guard, str):
        raise ConvertError(f"unsupported preprocessor.log_zero_guard_value={guard!r}")
    return {
        "sample_rate": sr,
        "features": int(p.get("features", 64)),
        "n_fft": int(p.get("n_fft") or 2 ** (int(p.get("window_size", 0.02) * sr) - 1).bit_length()),
        "window_size": float(p.get("window_size", 0.02)),
        "window_stride": float(p.get("window_stride", 0.01)),
        "window": p.get("window", "hann"),
        "preemph": float(p.get("preemph", 0.97)),
        "normalize": normalize,
        "log_zero_guard_value": float(guard),
        "mag_power": float(p.get("mag_power", 2.0)),
        "lowfreq": float(p.get("lowfreq", 0.0) or 0.0),
        "highfreq": float(p.get("highfreq") or sr / 2),
        "frontend_version": frontend_version,
    }


def encoder_config(e, p):
    att = e.get("att_context_size", [-1, -1]) or [-1, -1]
    if isinstance(att[0], (list, tuple)):  # multi-lookahead models: NeMo's default is the first entry
        att = att[0]
    d_model = int(e["d_model"])
    sub_ch = int(e.get("subsampling_conv_channels", -1))
    return {
        "feat_in": int(e.get("feat_in", p.get("features", 64))),
        "d_model": d_model,
        "n_layers": int(e["n_layers"]),
        "n_heads": int(e.get("n_heads", 4)),
        "ff_expansion_factor": int(e.get("ff_expansion_factor", 4)),
        "conv_kernel_size": int(e.get("conv_kernel_size", 31)),
        "subsampling": e.get("subsampling", "striding"),
        "subsampling_factor": int(e.get("subsampling_factor", 4)),
        "subsampling_conv_channels": d_model if sub_ch == -1 else sub_ch,
        "use_bias": bool(e.get("use_bias", True)),
        "xscaling": bool(e.get("xscaling", True)),
        "self_attention_model": e.get("self_attention_model", "rel_pos"),
        "att_context_size": [int(a) for a in att],
        "pos_emb_max_len": int(e.get("pos_emb_max_len", 5000)),
        "conv_norm_type": e.get("conv_norm_type", "batch_norm"),
    }


def build_config(y, name, frontend_version):
    p, e, dec, j = y.get("preprocessor", {}), y.get("encoder", {}), y.get("decoder", {}), y.get("joint", {})
    dcfg = y.get("decoding", {}) or {}
    durations = dcfg.get("durations") or (y.get("model_defaults", {}) or {}).get("tdt_durations")
    model_type = dcfg.get("model_type")
    loss_name = (y.get("loss", {}) or {}).get("loss_name")
    n_extra = int(j.get("num_extra_outputs", 0) or 0)
    if not durations or n_extra != len(durations) or (model_type not in (None, "tdt") and loss_name != "tdt"):
        raise ConvertError(f"not a TDT model: decoding.model_type={model_type!r}, loss={loss_name!r}, "
                           f"durations={durations!r}, joint.num_extra_outputs={n_extra}")
    if "RNNTDecoder" not in str(dec.get("_target_", "RNNTDecoder")) or "ConformerEncoder" not in str(
            e.get("_target_", "ConformerEncoder")):
        raise ConvertError(f"unsupported modules: encoder {e.get('_target_')}, decoder {dec.get('_target_')}")
    sr = int(p.get("sample_rate", y.get("sample_rate", 16000)))
    labels = y.get("labels") or j.get("vocabulary")
    cfg = {
        "format": "steno-model",
        "format_version": 1,
        "model_type": "fastconformer_tdt",
        "name": name,
        "preprocessor": preprocessor_config(p, sr, frontend_version),
        "encoder": encoder_config(e, p),
        "decoder": {
            "vocab_size": int(dec["vocab_size"]),
            "pred_hidden": int(dec["prednet"]["pred_hidden"]),
            "pred_rnn_layers": int(dec["prednet"].get("pred_rnn_layers", 1)),
        },
        "joint": {
            "joint_hidden": int(j["jointnet"]["joint_hidden"]),
            "activation": j["jointnet"].get("activation", "relu"),
            "num_classes": int(j["num_classes"]),
            "num_extra_outputs": n_extra,
        },
        "decoding": {
            "durations": [int(d) for d in durations],
            "max_symbols": int(((dcfg.get("greedy") or {}).get("max_symbols")) or 10),
        },
        "tokenizer": {"type": "sentencepiece", "model": "tokenizer.model"},
    }
    if labels:
        cfg["labels"] = list(labels)
    return cfg


def resolve_interpolations(node, root):
    """NeMo configs may keep OmegaConf references such as ${model_defaults.fc_d_model}: resolve the plain ones."""
    if isinstance(node, dict):
        return {k: resolve_interpolations(v, root) for k, v in node.items()}
    if isinstance(node, list):
        return [resolve_interpolations(v, root) for v in node]
    if isinstance(node, str) and node.startswith("${") and node.endswith("}") and node.count("${") == 1:
        target = root
        for part in node[2:-1].split("."):
            if not isinstance(target, dict) or part not in target:
                raise ConvertError(f"cannot resolve {node} in model_config.yaml")
            target = target[part]
        return resolve_interpolations(target, root)
    return node


def is_sortformer(y):
    return "sortformer_modules" in y or "Sortformer" in str(y.get("target", ""))


# Streaming parameters of NeMo's SortformerModules that inference reads, with NeMo's class defaults.
SORTFORMER_STREAMING = {
    "spkcache_len": 188, "fifo_len": 0, "chunk_len": 188, "spkcache_update_period": 188, "chunk_left_context": 1,
    "chunk_right_context": 1, "spkcache_sil_frames_per_spk": 3, "pred_score_threshold": 0.25,
    "scores_boost_latest": 0.05, "sil_threshold": 0.2, "strong_boost_rate": 0.75, "weak_boost_rate": 1.5,
    "min_pos_scores_rate": 0.5,
}
POSTPROCESSING_KEYS = ("onset", "offset", "pad_onset", "pad_offset", "min_duration_on", "min_duration_off")


def load_postprocessing(path):
    """A NeMo post-processing yaml (examples/speaker_tasks/diarization/conf/post_processing/*.yaml): its
    `parameters:` mapping, or the mapping itself."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as ex:
        raise ConvertError(f"{path}: cannot read ({ex})")
    params = doc.get("parameters", doc) if isinstance(doc, dict) else None
    if not isinstance(params, dict):
        raise ConvertError(f"{path}: not a post-processing yaml (no `parameters:` mapping)")
    unknown = sorted(set(params) - set(POSTPROCESSING_KEYS))
    if unknown:
        raise ConvertError(f"{path}: unknown post-processing parameters {unknown}")
    return {k: float(params[k]) for k in POSTPROCESSING_KEYS if k in params}


def build_sortformer_config(y, name, frontend_version, postprocessing=None):
    y = resolve_interpolations(y, y)
    p, e = y.get("preprocessor", {}) or {}, y.get("encoder", {}) or {}
    t, m = y.get("transformer_encoder", {}) or {}, y.get("sortformer_modules", {}) or {}
    if "ConformerEncoder" not in str(e.get("_target_", "ConformerEncoder")):
        raise ConvertError(f"unsupported encoder {e.get('_target_')} (steno runs the FastConformer encoder)")
    if t.get("mask_future", False):
        raise ConvertError("unsupported transformer_encoder.mask_future=true")
    sr = int(p.get("sample_rate", y.get("sample_rate", 16000)))
    enc = encoder_config(e, p)
    defaults = y.get("model_defaults", {}) or {}
    modules = {
        "num_spks": int(m.get("num_spks", y.get("max_num_of_spks", 4))),
        "fc_d_model": int(m.get("fc_d_model", defaults.get("fc_d_model", enc["d_model"]))),
        "tf_d_model": int(m.get("tf_d_model", defaults.get("tf_d_model", t.get("hidden_size", 192)))),
    }
    for key, default in SORTFORMER_STREAMING.items():
        modules[key] = type(default)(m.get(key, default))
    sub = int(m.get("subsampling_factor", enc["subsampling_factor"]))
    if sub != enc["subsampling_factor"]:
        raise ConvertError(f"sortformer_modules.subsampling_factor {sub} != encoder.subsampling_factor "
                           f"{enc['subsampling_factor']}")
    post = {"onset": 0.5, "offset": 0.5, "pad_onset": 0.0, "pad_offset": 0.0, "min_duration_on": 0.0,
            "min_duration_off": 0.0}
    post.update(postprocessing or {})
    return {
        "format": "steno-model",
        "format_version": 1,
        "model_type": "sortformer",
        "name": name,
        "preprocessor": preprocessor_config(p, sr, frontend_version),
        "encoder": enc,
        "transformer_encoder": {
            "num_layers": int(t["num_layers"]),
            "hidden_size": int(t["hidden_size"]),
            "inner_size": int(t["inner_size"]),
            "num_attention_heads": int(t.get("num_attention_heads", 1)),
            "hidden_act": t.get("hidden_act", "relu"),
            "pre_ln": bool(t.get("pre_ln", False)),
        },
        "sortformer_modules": modules,
        "streaming_mode": bool(y.get("streaming_mode", False)),
        "postprocessing": post,
    }


def load_checkpoint(blob):
    try:
        try:
            sd = torch.load(io.BytesIO(blob), map_location="cpu", weights_only=True)
        except TypeError:  # torch without weights_only
            sd = torch.load(io.BytesIO(blob), map_location="cpu")
    except Exception as ex:  # noqa: BLE001 - any unpickling failure is a bad checkpoint
        raise ConvertError(f"model_weights.ckpt: cannot load ({ex})")
    if isinstance(sd, dict) and "state_dict" in sd and isinstance(sd["state_dict"], dict):
        sd = sd["state_dict"]
    if not isinstance(sd, dict) or not all(torch.is_tensor(v) for v in sd.values()):
        raise ConvertError("model_weights.ckpt is not a state dict of tensors")
    return sd


def convert(nemo_path, out_dir, frontend_version=None, dtype="f32", name=None, postprocessing=None):
    files = open_nemo(nemo_path)
    y = yaml.safe_load(member(files, "model_config.yaml", "model config").decode("utf-8"))
    if not isinstance(y, dict):
        raise ConvertError("model_config.yaml is not a mapping")
    fv = frontend_version or frontend_from_version(y.get("nemo_version"))
    name = name or os.path.splitext(os.path.basename(nemo_path))[0]
    if is_sortformer(y):
        return convert_sortformer(files, y, out_dir, fv, dtype, name, postprocessing)
    if postprocessing is not None:
        raise ConvertError("--postprocessing applies to Sortformer diarization models only")
    cfg = build_config(y, name, fv)
    sd = load_checkpoint(member(files, "model_weights.ckpt", "weights"))
    tok_ref = str((y.get("tokenizer") or {}).get("model_path", ""))
    if tok_ref.startswith("nemo:"):
        tok = member(files, tok_ref[len("nemo:"):], "SentencePiece tokenizer")
    else:
        cands = sorted(k for k in files if k.endswith("tokenizer.model"))
        if not cands:
            raise ConvertError("no SentencePiece tokenizer (*tokenizer.model) in the .nemo")
        tok = files[cands[0]]
    # check every tensor against the architecture the config describes (names + shapes)
    arrays, _ = state_dict_numpy(sd, "f32")
    try:
        load_weights(FastConformerTDT(cfg), arrays)
    except (KeyError, ValueError) as ex:
        raise ConvertError(f"checkpoint does not match its config: {ex}")
    save_model_dir(out_dir, cfg, sd, tok, dtype)
    return cfg


def convert_sortformer(files, y, out_dir, frontend_version, dtype, name, postprocessing_yaml):
    post = load_postprocessing(postprocessing_yaml) if postprocessing_yaml else None
    cfg = build_sortformer_config(y, name, frontend_version, post)
    sd = load_checkpoint(member(files, "model_weights.ckpt", "weights"))
    arrays, _ = state_dict_numpy(sd, "f32")
    try:
        load_weights(Sortformer(cfg), arrays)
    except (KeyError, ValueError) as ex:
        raise ConvertError(f"checkpoint does not match its config: {ex}")
    save_model_dir(out_dir, cfg, sd, None, dtype)
    return cfg


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("nemo")
    ap.add_argument("out_dir")
    ap.add_argument("--frontend-version", choices=["2.4", "2.5"], default=None,
                    help="default: from nemo_version in model_config.yaml (>=2.5 -> 2.5, else 2.4)")
    ap.add_argument("--dtype", choices=["f32", "f16", "bf16"], default="f32")
    ap.add_argument("--name", default=None, help="config name (default: the .nemo file name)")
    ap.add_argument("--postprocessing", default=None, metavar="YAML",
                    help="Sortformer: NeMo post-processing yaml whose parameters go into config.json "
                         "(default: NeMo's defaults, onset/offset 0.5, no padding or minimum durations)")
    a = ap.parse_args(argv)
    try:
        cfg = convert(a.nemo, a.out_dir, a.frontend_version, a.dtype, a.name, a.postprocessing)
    except ConvertError as ex:
        print(f"convert_nemo: error: {ex}", file=sys.stderr)
        return 1
    print(f"wrote {a.out_dir} ({cfg['model_type']}, frontend {cfg['preprocessor']['frontend_version']}, "
          f"dtype {a.dtype})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
