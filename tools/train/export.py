#!/usr/bin/env python3
"""Training checkpoint -> NeMo-layout .nemo (-> steno model directory, checked against the checkpoint).

  /usr/bin/python3 tools/train/export.py CKPT OUT.nemo [--model-dir models/NAME] [--dtype f16] \
      [--name NAME] [--check-manifest M.jsonl] [--check-n 8] [--check-wav A.wav ...]

CKPT: a last.pt, NAME of NAME.000... parts, or a folder holding them (train.py's --out).
OUT.nemo is what NeMo's SaveRestoreConnector writes for an EncDecRNNTBPEModel with a TDT decoder: an
uncompressed tar with ./model_config.yaml (NeMo's field names and layout, the fields tools/convert_nemo.py reads
included), ./model_weights.ckpt (torch.save of the state dict under NeMo key names, preprocessor.featurizer.fb /
window and the BatchNorm running statistics included) and the tokenizer as ./<32 hex>_tokenizer.model,
./<32 hex>_tokenizer.vocab, ./<32 hex>_vocab.txt.

With --model-dir it then runs tools/convert_nemo.py OUT.nemo DIR --dtype DTYPE and decodes the check clips with
the checkpoint's model (fp32) and with the converted directory loaded by tools/steno_ref: the greedy transcripts
must be identical (exit status 1 otherwise).
"""
import argparse
import collections
import io
import os
import subprocess
import sys
import tarfile
import time

import torch
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
sys.path.insert(0, TOOLS)
sys.path.insert(0, HERE)

import ckpt as ckptlib  # noqa: E402
from steno_ref.model import FastConformerTDT  # noqa: E402
from steno_ref.nemo_tokenizer import tokenizer_members  # noqa: E402


class _NoAliasDumper(yaml.SafeDumper):
    def ignore_aliases(self, data):  # OmegaConf writes repeated lists out, not as &anchors
        return True


def nemo_config(cfg, tcfg, tok_names):
    """The model: section NeMo would save for this model (OmegaConf layout of EncDecRNNTBPEModel + TDT)."""
    p, e, d, j, dec = cfg["preprocessor"], cfg["encoder"], cfg["decoder"], cfg["joint"], cfg["decoding"]
    durations = [int(x) for x in dec["durations"]]
    sr = int(p.get("sample_rate", 16000))
    sa = (tcfg or {}).get("spec_augment", {}) or {}
    ds = {"manifest_filepath": None, "sample_rate": sr, "batch_size": 16, "shuffle": False,
          "use_start_end_token": False}
    labels = list(cfg["labels"])
    return {
        "sample_rate": sr,
        "compute_eval_loss": False,
        "log_prediction": True,
        "rnnt_reduction": (tcfg or {}).get("reduction", "mean_volume"),
        "skip_nan_grad": False,
        "model_defaults": {"enc_hidden": int(e["d_model"]), "pred_hidden": int(d["pred_hidden"]),
                           "joint_hidden": int(j["joint_hidden"]), "tdt_durations": durations,
                           "num_tdt_durations": len(durations)},
        "train_ds": dict(ds, shuffle=True, max_duration=float((tcfg or {}).get("max_duration", 20.0)),
                         min_duration=float((tcfg or {}).get("min_duration", 0.1))),
        "validation_ds": dict(ds),
        "test_ds": dict(ds),
        "tokenizer": {"dir": None, "type": "bpe", "model_path": f"nemo:{tok_names['model']}",
                      "vocab_path": f"nemo:{tok_names['vocab_txt']}",
                      "spe_tokenizer_vocab": f"nemo:{tok_names['spm_vocab']}"},
        "preprocessor": {
            "_target_": "nemo.collections.asr.modules.AudioToMelSpectrogramPreprocessor",
            "sample_rate": sr, "normalize": p.get("normalize", "per_feature"),
            "window_size": float(p.get("window_size", 0.025)), "window_stride": float(p.get("window_stride", 0.01)),
            "window": p.get("window", "hann"), "features": int(p["features"]), "n_fft": int(p.get("n_fft", 512)),
            "log": True, "frame_splicing": 1, "dither": float((tcfg or {}).get("dither", 1e-5)), "pad_to": 0,
            "pad_value": 0.0, "preemph": float(p.get("preemph", 0.97)), "lowfreq": float(p.get("lowfreq", 0.0)),
            "highfreq": float(p.get("highfreq") or sr / 2), "mag_power": float(p.get("mag_power", 2.0)),
            "log_zero_guard_type": "add", "log_zero_guard_value": float(p.get("log_zero_guard_value", 2 ** -24)),
        },
        "spec_augment": {"_target_": "nemo.collections.asr.modules.SpectrogramAugmentation",
                         "freq_masks": int(sa.get("freq_masks", 2)), "time_masks": int(sa.get("time_masks", 10)),
                         "freq_width": int(sa.get("freq_width", 27)), "time_width": float(sa.get("time_width", 0.05))},
        "encoder": {
            "_target_": "nemo.collections.asr.modules.ConformerEncoder",
            "feat_in": int(e["feat_in"]), "feat_out": -1, "n_layers": int(e["n_layers"]), "d_model": int(e["d_model"]),
            "use_bias": bool(e.get("use_bias", True)), "subsampling": e.get("subsampling", "dw_striding"),
            "subsampling_factor": int(e.get("subsampling_factor", 8)),
            "subsampling_conv_channels": int(e.get("subsampling_conv_channels", 256)),
            "causal_downsampling": False, "reduction": None, "reduction_position": None, "reduction_factor": 1,
            "ff_expansion_factor": int(e.get("ff_expansion_factor", 4)),
            "self_attention_model": e.get("self_attention_model", "rel_pos"), "n_heads": int(e["n_heads"]),
            "att_context_size": [int(a) for a in e.get("att_context_size", [-1, -1])],
            "att_context_style": "regular", "xscaling": bool(e.get("xscaling", True)), "untie_biases": True,
            "pos_emb_max_len": int(e.get("pos_emb_max_len", 5000)),
            "conv_kernel_size": int(e.get("conv_kernel_size", 9)),
            "conv_norm_type": e.get("conv_norm_type", "batch_norm"), "conv_context_size": None,
            "dropout": float(e.get("dropout", 0.1)), "dropout_pre_encoder": float(e.get("dropout_pre_encoder", 0.1)),
            "dropout_emb": 0.0, "dropout_att": float(e.get("dropout_att", 0.1)),
            "stochastic_depth_drop_prob": 0.0, "stochastic_depth_mode": "linear", "stochastic_depth_start_layer": 1,
        },
        "decoder": {
            "_target_": "nemo.collections.asr.modules.RNNTDecoder", "normalization_mode": None,
            "random_state_sampling": False, "blank_as_pad": True,
            "prednet": {"pred_hidden": int(d["pred_hidden"]), "pred_rnn_layers": int(d.get("pred_rnn_layers", 1)),
                        "t_max": None, "dropout": float(d.get("dropout", 0.2))},
            "vocab_size": int(d["vocab_size"]),
        },
        "joint": {
            "_target_": "nemo.collections.asr.modules.RNNTJoint", "log_softmax": None, "preserve_memory": False,
            "fuse_loss_wer": True, "fused_batch_size": 4,
            "jointnet": {"joint_hidden": int(j["joint_hidden"]), "activation": j.get("activation", "relu"),
                         "dropout": float(j.get("dropout", 0.2)),
                         "encoder_hidden": int(e["d_model"]), "pred_hidden": int(d["pred_hidden"])},
            "num_extra_outputs": len(durations), "num_classes": int(j["num_classes"]), "vocabulary": labels,
        },
        "decoding": {"strategy": "greedy_batch", "model_type": "tdt", "durations": durations,
                     "greedy": {"max_symbols": int(dec.get("max_symbols", 10))},
                     "beam": {"beam_size": 2, "return_best_hypothesis": False, "score_norm": True,
                              "tsd_max_sym_exp": 50, "alsd_max_target_len": 2.0}},
        "interctc": {"loss_weights": [], "apply_at_layers": []},
        "loss": {"loss_name": "tdt", "tdt_kwargs": {"fastemit_lambda": 0.0, "clamp": -1.0, "durations": durations,
                                                    "sigma": float((tcfg or {}).get("sigma", 0.02)),
                                                    "omega": float((tcfg or {}).get("omega", 0.1))}},
        "optim": {"name": "adamw", "lr": float((tcfg or {}).get("lr", 2e-3)),
                  "betas": [float(b) for b in (tcfg or {}).get("betas", [0.9, 0.98])],
                  "weight_decay": float((tcfg or {}).get("weight_decay", 1e-3)),
                  "sched": {"name": "CosineAnnealing", "warmup_steps": int((tcfg or {}).get("warmup_steps", 800)),
                            "min_lr": float((tcfg or {}).get("min_lr", 2e-5)),
                            "max_steps": int((tcfg or {}).get("max_steps", 8000))}},
        "labels": labels,
        "target": "nemo.collections.asr.models.rnnt_bpe_models.EncDecRNNTBPEModel",
        # the converter picks the front end from this: >= 2.5 -> "2.5" (what steno_ref trained with)
        "nemo_version": "2.5.0" if str(p.get("frontend_version", "2.5")) == "2.5" else "2.4.0",
    }


def write_nemo(ck, out_path):
    cfg, sd = ck["model_cfg"], ck["model"]
    tok = ckptlib.tensor_to_bytes(ck["tokenizer"])
    names, tok_members = tokenizer_members(tok)
    y = nemo_config(cfg, ck.get("train_cfg"), names)
    weights = collections.OrderedDict((k, v.detach().cpu().contiguous()) for k, v in sd.items())
    if float(y["joint"]["jointnet"]["dropout"]) == 0.0:  # NeMo's joint_net is [ReLU, Linear] without dropout
        weights = collections.OrderedDict((k.replace("joint.joint_net.2.", "joint.joint_net.1."), v)
                                          for k, v in weights.items())
    buf = io.BytesIO()
    torch.save(weights, buf)
    members = [("model_config.yaml", yaml.dump(y, Dumper=_NoAliasDumper, sort_keys=False,
                                               allow_unicode=True).encode("utf-8")),
               ("model_weights.ckpt", buf.getvalue()), *tok_members.items()]
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    now = int(time.time())
    with tarfile.open(out_path, "w:") as tar:  # NeMo >= 1.7: uncompressed, tar.add(dir, arcname=".")
        d = tarfile.TarInfo(".")
        d.type, d.mode, d.mtime = tarfile.DIRTYPE, 0o755, now
        tar.addfile(d)
        for name, data in members:
            ti = tarfile.TarInfo("./" + name)
            ti.size, ti.mode, ti.mtime = len(data), 0o644, now
            tar.addfile(ti, io.BytesIO(data))
    return y


def read_clip(path):
    """int16 samples of a 16 kHz mono WAV, or of a FLAC (the committed test sets) through the flac decoder."""
    from data import read_wav
    if not path.endswith(".flac"):
        return read_wav(path)
    import numpy as np
    raw = subprocess.run(["flac", "-d", "-s", "-c", "--force-raw-format", "--endian=little", "--sign=signed", path],
                         check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype="<i2").copy()


def check_clips(args, ck):
    from data import read_manifest
    clips = [read_clip(p) for p in args.check_wav]
    if args.check_manifest:
        for e in read_manifest(args.check_manifest)[:args.check_n]:
            clips.append(read_clip(e["audio"]))
    return clips


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("checkpoint")
    ap.add_argument("nemo")
    ap.add_argument("--model-dir", help="also convert to this steno model directory and check it")
    ap.add_argument("--dtype", choices=["f32", "f16", "bf16"], default="f16")
    ap.add_argument("--name", default=None, help="model name (default: the checkpoint's)")
    ap.add_argument("--check-manifest", help="decode the first --check-n clips of this manifest")
    ap.add_argument("--check-n", type=int, default=8)
    ap.add_argument("--check-wav", nargs="*", default=[])
    a = ap.parse_args(argv)

    ck = ckptlib.load_checkpoint(a.checkpoint)
    if a.name:
        ck["model_cfg"] = dict(ck["model_cfg"], name=a.name)
    name = ck["model_cfg"].get("name") or "steno-model"
    write_nemo(ck, a.nemo)
    n = sum(v.numel() for k, v in ck["model"].items() if not k.startswith("preprocessor.")
            and not k.endswith("num_batches_tracked") and not k.endswith("running_mean")
            and not k.endswith("running_var"))
    print(f"wrote {a.nemo} ({os.path.getsize(a.nemo) / 1e6:.1f} MB; step {ck['step']}, {n:,} parameters)")
    if not a.model_dir:
        return 0
    cmd = [sys.executable, os.path.join(TOOLS, "convert_nemo.py"), a.nemo, a.model_dir, "--dtype", a.dtype,
           "--name", name]
    print("+ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    print(r.stdout, end="", flush=True)
    if r.returncode != 0:
        print("export: convert_nemo.py failed", file=sys.stderr)
        return 1

    clips = check_clips(a, ck)
    if not clips:
        print("no check clips given (--check-manifest / --check-wav): conversion not checked by decoding")
        return 0
    import sentencepiece as spm
    from steno_ref.modeldir import load_model_dir
    from train import transcribe
    sp = spm.SentencePieceProcessor(model_proto=ckptlib.tensor_to_bytes(ck["tokenizer"]))
    trained = FastConformerTDT(ck["model_cfg"])
    trained.load_state_dict(ck["model"])
    trained.eval()
    converted, _ = load_model_dir(a.model_dir)
    dev = torch.device("cpu")
    want = transcribe(trained, sp, clips, dev)
    got = transcribe(converted, sp, clips, dev)
    bad = [i for i in range(len(clips)) if want[i] != got[i]]
    for i in range(len(clips)):
        flag = "OK " if i not in bad else "DIFF"
        print(f"  {flag} clip {i}: {got[i]!r}" + (f" (checkpoint: {want[i]!r})" if i in bad else ""))
    if bad:
        print(f"export: {len(bad)} of {len(clips)} transcripts differ between the checkpoint and {a.model_dir}",
              file=sys.stderr)
        return 1
    print(f"check: {len(clips)} transcripts identical (checkpoint fp32 vs {a.model_dir} {a.dtype})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
