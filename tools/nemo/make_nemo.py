#!/usr/bin/python3
"""A .nemo in NeMo's layout made from a steno model directory, for measuring `steno model import` on checkpoints of
real size without downloading one (docs/model-format.md).

    build/apps/steno/steno model random --like configs/parakeet-tdt-0.6b-v2.json --out /tmp/p06
    /usr/bin/python3 tools/nemo/make_nemo.py /tmp/p06 /tmp/p06.nemo

Writes an uncompressed tar, as NeMo >= 1.7 does, of ./model_config.yaml (the sections and keys NeMo writes for a
FastConformer-TDT model, values from config.json), ./<hex>_tokenizer.model with NeMo's ./<hex>_tokenizer.vocab and
./<hex>_vocab.txt beside it (whisper.cpp's converter reads the first) and ./model_weights.ckpt (torch.save of
the state dict: f32 tensors under NeMo's names, BatchNorm's num_batches_tracked counters added as NeMo has them).
Only FastConformer-TDT directories; the file is for measurements, never committed.
"""
import collections
import io
import json
import os
import sys
import tarfile

import torch
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from steno_ref import safetensors_io  # noqa: E402
from steno_ref.nemo_tokenizer import tokenizer_members  # noqa: E402


def model_config(cfg, tok_names):
    p, e, d, j = cfg["preprocessor"], cfg["encoder"], cfg["decoder"], cfg["joint"]
    return {
        "sample_rate": p["sample_rate"],
        "model_defaults": {"enc_hidden": e["d_model"], "pred_hidden": d["pred_hidden"],
                           "joint_hidden": j["joint_hidden"], "tdt_durations": cfg["decoding"]["durations"],
                           "num_tdt_durations": len(cfg["decoding"]["durations"])},
        "tokenizer": {"dir": None, "type": "bpe", "model_path": f"nemo:{tok_names['model']}",
                      "vocab_path": f"nemo:{tok_names['vocab_txt']}",
                      "spe_tokenizer_vocab": f"nemo:{tok_names['spm_vocab']}"},
        "preprocessor": {
            "_target_": "nemo.collections.asr.modules.AudioToMelSpectrogramPreprocessor",
            "sample_rate": p["sample_rate"], "normalize": p["normalize"], "window_size": p["window_size"],
            "window_stride": p["window_stride"], "window": p["window"], "features": p["features"],
            "n_fft": p["n_fft"], "log": True, "frame_splicing": 1, "dither": 1.0e-05, "pad_to": 0, "pad_value": 0.0,
        },
        "encoder": {
            "_target_": "nemo.collections.asr.modules.ConformerEncoder",
            "feat_in": e["feat_in"], "feat_out": -1, "n_layers": e["n_layers"], "d_model": e["d_model"],
            "use_bias": e["use_bias"], "subsampling": e["subsampling"],
            "subsampling_factor": e["subsampling_factor"],
            "subsampling_conv_channels": e["subsampling_conv_channels"],
            "ff_expansion_factor": e["ff_expansion_factor"], "self_attention_model": e["self_attention_model"],
            "n_heads": e["n_heads"], "att_context_size": e["att_context_size"], "xscaling": e["xscaling"],
            "pos_emb_max_len": e["pos_emb_max_len"], "conv_kernel_size": e["conv_kernel_size"],
            "conv_norm_type": e["conv_norm_type"], "dropout": 0.1,
        },
        "decoder": {
            "_target_": "nemo.collections.asr.modules.RNNTDecoder", "blank_as_pad": True,
            "prednet": {"pred_hidden": d["pred_hidden"], "pred_rnn_layers": d["pred_rnn_layers"], "dropout": 0.2},
            "vocab_size": d["vocab_size"],
        },
        "joint": {
            "_target_": "nemo.collections.asr.modules.RNNTJoint",
            "jointnet": {"joint_hidden": j["joint_hidden"], "activation": j["activation"], "dropout": 0.2,
                         "encoder_hidden": e["d_model"], "pred_hidden": d["pred_hidden"]},
            "num_extra_outputs": j["num_extra_outputs"], "num_classes": j["num_classes"],
        },
        "decoding": {"strategy": "greedy_batch", "model_type": "tdt", "durations": cfg["decoding"]["durations"],
                     "greedy": {"max_symbols": cfg["decoding"]["max_symbols"]}},
        "loss": {"loss_name": "tdt"},
        "target": "nemo.collections.asr.models.rnnt_bpe_models.EncDecRNNTBPEModel",
        "nemo_version": "2.4.0" if p.get("frontend_version") == "2.4" else "2.5.0",
    }


def state_dict(model_dir):
    arrays, _, _ = safetensors_io.load(os.path.join(model_dir, "model.safetensors"))
    sd = collections.OrderedDict()
    for name in arrays:
        sd[name] = torch.from_numpy(arrays[name].astype("float32"))
        if name.endswith(".running_var"):  # NeMo's BatchNorm keeps a step counter beside its statistics
            sd[name[: -len("running_var")] + "num_batches_tracked"] = torch.tensor(0, dtype=torch.int64)
    return sd


def add(tar, name, data):
    info = tarfile.TarInfo("./" + name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    model_dir, out = argv[1], argv[2]
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    if cfg.get("model_type", "fastconformer_tdt") != "fastconformer_tdt":
        print("make_nemo: only FastConformer-TDT model directories", file=sys.stderr)
        return 1
    weights = io.BytesIO()
    torch.save(state_dict(model_dir), weights)
    with open(os.path.join(model_dir, "tokenizer.model"), "rb") as f:
        names, tok_members = tokenizer_members(f.read())
    with tarfile.open(out, "w:") as tar:
        add(tar, "model_config.yaml", yaml.safe_dump(model_config(cfg, names), sort_keys=False).encode("utf-8"))
        for name, data in tok_members.items():
            add(tar, name, data)
        add(tar, "model_weights.ckpt", weights.getbuffer())
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
