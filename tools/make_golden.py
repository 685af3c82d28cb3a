#!/usr/bin/python3
"""Write steno's committed golden sets for small random-weight FastConformer-TDT models.

  /usr/bin/python3 tools/make_golden.py [--out tests/data/golden] [--only NAME] [--nemo-tiny DIR]

For each config below: draw weights from a fixed seed, calibrate the joint so greedy TDT decoding behaves
like a real model (about 0.3-0.5 tokens per encoder frame, every duration used, some duration-0 tokens),
run the reference (tools/steno_ref) on three clips in one batch and singly, and write
tests/data/golden/<name>/{config.json, model.safetensors, tokenizer.model, golden.safetensors, golden.json}.
If a draw misses the targets or a greedy decision is closer than MIN_MARGIN, the next seed is tried.
tokenizer.model is the nemo-tiny SentencePiece model (128 pieces), stored once in tests/data/golden/ and
symlinked from each set.
"""
import argparse
import json
import os
import platform
import sys
import tarfile
import wave

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from steno_ref import safetensors_io  # noqa: E402
from steno_ref.decoding import decision_margins  # noqa: E402
from steno_ref.model import FastConformerTDT  # noqa: E402
from steno_ref.modeldir import save_model_dir  # noqa: E402
from steno_ref.run import int16_to_float, run_batch  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIN_MARGIN = 1e-3
TOKENS_PER_FRAME = (0.3, 0.5)

# Clips cut from the nemo-tiny wavs: (wav, first sample, samples). Lengths are deliberately not multiples
# of the 160-sample hop, and short enough to keep each golden set small.
CLIPS = [("clip0_1.7s.wav", 0, 13037), ("clip1_4.3s.wav", 4000, 27101), ("clip2_9.0s.wav", 16000, 43999)]


def default_nemo_tiny():
    """The project's copy (tests/data/nemo-tiny); --nemo-tiny DIR reads another."""
    return os.path.join(REPO, "tests", "data", "nemo-tiny")


def base_config(name, n_mels, frontend):
    return {
        "format": "steno-model", "format_version": 1, "model_type": "fastconformer_tdt", "name": name,
        "preprocessor": {"sample_rate": 16000, "features": n_mels, "n_fft": 512, "window_size": 0.025,
                         "window_stride": 0.01, "window": "hann", "preemph": 0.97, "normalize": "per_feature",
                         "log_zero_guard_value": 2 ** -24, "mag_power": 2.0, "lowfreq": 0.0, "highfreq": 8000.0,
                         "frontend_version": frontend},
        "encoder": {"feat_in": n_mels, "d_model": 96, "n_layers": 2, "n_heads": 4, "ff_expansion_factor": 2,
                    "conv_kernel_size": 9, "subsampling": "dw_striding", "subsampling_factor": 8,
                    "subsampling_conv_channels": 16, "use_bias": True, "xscaling": True,
                    "self_attention_model": "rel_pos", "att_context_size": [-1, -1], "pos_emb_max_len": 5000,
                    "conv_norm_type": "batch_norm"},
        "decoder": {"vocab_size": 128, "pred_hidden": 48, "pred_rnn_layers": 1},
        "joint": {"joint_hidden": 40, "activation": "relu", "num_classes": 128, "num_extra_outputs": 5},
        "decoding": {"durations": [0, 1, 2, 3, 4], "max_symbols": 10},
        "tokenizer": {"type": "sentencepiece", "model": "tokenizer.model"},
    }


def make_configs():
    # Sizes differ on purpose (pred_hidden != joint_hidden != d_model, ff factor 2, 16 subsampling
    # channels) so that a port that hard-codes Parakeet's ratios or mixes up dimensions fails loudly.
    a = base_config("mel80_bias_xscale", 80, "2.5")
    b = base_config("mel128_local_attn", 128, "2.4")
    b["encoder"].update(use_bias=False, xscaling=False, n_heads=3, conv_kernel_size=7,
                        self_attention_model="rel_pos_local_attn", att_context_size=[8, 8])
    b["decoder"]["pred_rnn_layers"] = 2
    return {"mel80_bias_xscale": (a, 1000), "mel128_local_attn": (b, 2000)}


def read_clips(nemo_tiny):
    clips = []
    for wav_name, start, n in CLIPS:
        with wave.open(os.path.join(nemo_tiny, wav_name), "rb") as w:
            pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        if start + n > len(pcm):
            raise ValueError(f"{wav_name} is shorter than {start + n} samples")
        clips.append(pcm[start:start + n])
    return clips


def extract_tokenizer(nemo_path):
    with tarfile.open(nemo_path, "r:") as tar:
        for m in tar.getmembers():
            if m.name.endswith("_tokenizer.model"):
                return tar.extractfile(m).read()
    raise ValueError(f"{nemo_path}: no *_tokenizer.model")


@torch.no_grad()
def randomize(model, seed):
    """Default PyTorch init from the seed, plus non-trivial norms, BN statistics and rel-pos biases
    (their defaults are identities/zeros, which would hide bugs in a port)."""
    torch.manual_seed(seed)
    for m in model.modules():
        if hasattr(m, "reset_parameters") and not isinstance(m, torch.nn.BatchNorm1d):
            m.reset_parameters()
    for name, p in model.named_parameters():
        if ".norm_" in name:
            p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.1 * torch.randn_like(p))
        elif "pos_bias_" in name:
            p.copy_(0.2 * torch.randn_like(p))
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm1d):
            m.weight.copy_(1.0 + 0.1 * torch.randn_like(m.weight))
            m.bias.copy_(0.1 * torch.randn_like(m.bias))
            m.running_mean.copy_(0.1 * torch.randn_like(m.running_mean))
            m.running_var.copy_(0.5 + torch.rand_like(m.running_var))
            m.num_batches_tracked.fill_(1000)
    emb = model.decoder.prediction["embed"].weight
    emb[model.decoder.blank].zero_()  # blank is the padding row: zero, as in NeMo


@torch.no_grad()
def calibrate_joint(model, clips, seed, blank_fraction, dur0_fraction, pred_ratio=1.0):
    """Scale the joint output rows and shift biases (like nemo-tiny's joint_calibration) using joint
    hidden vectors from real encoder frames x decoder outputs after random label sequences."""
    lin = model.joint.joint_net[2]
    V, nd = model.decoder.blank, len(model.durations)
    out, _ = run_batch(model, clips)
    enc = torch.from_numpy(out["encoded"]).transpose(1, 2)
    frames = torch.cat([enc[i, :n] for i, n in enumerate(out["encoded_lengths"])])
    f = model.joint.enc(frames)
    gen = torch.Generator().manual_seed(seed + 7)
    labels = torch.randint(0, V, (8, 12), generator=gen)
    state, gs = model.decoder.initial_state(8), []
    g, state = model.decoder.predict(torch.full((8,), V), state)
    gs.append(g)
    for k in range(labels.shape[1]):
        g, state = model.decoder.predict(labels[:, k], state)
        gs.append(g)
    p = model.joint.pred(torch.cat(gs))
    # Centre and scale both projections so the joint input varies with the audio frame *and* the label
    # history (random weights otherwise give a near-constant offset that makes every step decide alike).
    enc_scale = 1.0 / float((f - f.mean(0)).std())
    pred_scale = pred_ratio / float((p - p.mean(0)).std())
    for layer, x, s in ((model.joint.enc, f, enc_scale), (model.joint.pred, p, pred_scale)):
        layer.bias.copy_(s * (layer.bias - x.mean(0)))
        layer.weight.mul_(s)
    f, p = enc_scale * (f - f.mean(0)), pred_scale * (p - p.mean(0))
    lin.bias.zero_()
    h = torch.relu(f[:, None] + p[None]).reshape(-1, f.shape[1])
    z = h @ lin.weight.T + lin.bias
    tok_scale = 4.0 / float(z[:, :V + 1].std())
    dur_scale = 2.0 / float(z[:, V + 1:].std())
    lin.weight[:V + 1] *= tok_scale
    lin.bias[:V + 1] *= tok_scale
    lin.weight[V + 1:] *= dur_scale
    lin.bias[V + 1:] *= dur_scale
    z = h @ lin.weight.T + lin.bias
    # duration biases: argmax histogram -> dur0_fraction for d=0, the rest spread evenly
    target = torch.tensor([dur0_fraction] + [(1 - dur0_fraction) / (nd - 1)] * (nd - 1))
    shift = torch.zeros(nd)
    for _ in range(60):
        hist = torch.bincount((z[:, V + 1:] + shift).argmax(1), minlength=nd).float() / z.shape[0]
        shift += 0.5 * torch.log(target / hist.clamp(min=1e-3))
    lin.bias[V + 1:] += shift
    # blank bias: bisection on the fraction of samples whose token argmax is blank
    lo, hi = -30.0, 30.0
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        zz = z[:, :V + 1].clone()
        zz[:, V] += mid
        frac = float((zz.argmax(1) == V).float().mean())
        lo, hi = (lo, mid) if frac > blank_fraction else (mid, hi)
    lin.bias[V] += 0.5 * (lo + hi)
    return {"enc_scale": enc_scale, "pred_scale": pred_scale, "pred_to_enc_std_ratio": pred_ratio,
            "token_scale": tok_scale, "duration_scale": dur_scale,
            "duration_bias_shift": [round(float(s), 6) for s in shift], "blank_bias_shift": 0.5 * (lo + hi),
            "target_blank_fraction": blank_fraction, "target_duration0_fraction": dur0_fraction,
            "sample_pairs": int(z.shape[0])}


@torch.no_grad()
def tune_blank_on_decoding(model, clips_f, nd, target=0.4, steps=12):
    """Sample pairs are not the frames greedy decoding visits, so finish with a bisection of the blank
    bias on the actual batch decode's tokens per frame."""
    bias = model.joint.joint_net[2].bias
    V = model.decoder.blank
    base = float(bias[V])
    lo, hi = -8.0, 8.0
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        bias[V] = base + mid
        tpf = decode_stats(run_batch(model, clips_f)[0], nd)["tokens_per_frame"]
        lo, hi = (mid, hi) if tpf > target else (lo, mid)  # more tokens than wanted -> raise blank
    bias[V] = base + 0.5 * (lo + hi)
    return 0.5 * (lo + hi)


def decode_stats(out, nd):
    tokens = sum(len(out[f"hyp{i}.tokens"]) for i in range(len(out["encoded_lengths"])))
    frames = int(out["encoded_lengths"].sum())
    used = np.concatenate([out[f"hyp{i}.durations_used"] for i in range(len(out["encoded_lengths"]))])
    return {"tokens": tokens, "encoder_frames": frames, "tokens_per_frame": tokens / frames,
            "duration_histogram": np.bincount(used, minlength=nd).tolist()}


def run_all(model, clips_f):
    batch, _ = run_batch(model, clips_f, capture_layers=True, alignments=True)
    singles = [run_batch(model, [c], capture_layers=False, alignments=True)[0] for c in clips_f]
    return batch, singles


def margins(batch, singles, nd):
    tm, dm = float("inf"), float("inf")
    for out in [batch] + singles:
        for i in range(len(out["encoded_lengths"])):
            t, d = decision_margins(torch.from_numpy(out[f"hyp{i}.align_logits"]), nd)
            tm, dm = min(tm, t), min(dm, d)
    return tm, dm


def build(name, cfg, seed0, clips_i16, weights_dtype="f32", max_tries=40):
    clips_f = [int16_to_float(c) for c in clips_i16]
    nd = len(cfg["decoding"]["durations"])
    for seed in range(seed0, seed0 + max_tries):
        model = FastConformerTDT(cfg)
        randomize(model, seed)
        cal = calibrate_joint(model, clips_f, seed, blank_fraction=0.3, dur0_fraction=0.1)
        cal["decode_blank_bias_shift"] = tune_blank_on_decoding(model, clips_f, nd)
        if weights_dtype == "f16":  # round once so the goldens are exact for the weights as stored
            with torch.no_grad():
                for k, v in model.state_dict().items():
                    if v.is_floating_point() and not k.startswith("preprocessor."):  # as modeldir stores them
                        v.copy_(v.half().float())
        batch, singles = run_all(model, clips_f)
        st = decode_stats(batch, nd)
        tm, dm = margins(batch, singles, nd)
        hist = st["duration_histogram"]
        ok = (TOKENS_PER_FRAME[0] <= st["tokens_per_frame"] <= TOKENS_PER_FRAME[1]
              and min(hist[1:]) > 0 and 2 <= hist[0] <= 0.25 * st["tokens"] and min(tm, dm) >= MIN_MARGIN)
        print(f"{name}: seed {seed}: {st['tokens']} tokens / {st['encoder_frames']} frames, "
              f"durations {st['duration_histogram']}, margins {tm:.2e} {dm:.2e} -> {'ok' if ok else 'redraw'}")
        if ok:
            return model, seed, cal, batch, singles, st, (tm, dm)
    raise RuntimeError(f"{name}: no acceptable draw in {max_tries} seeds")


def golden_arrays(batch, singles, clips_i16):
    arrays = {f"audio.clip{i}": int16_to_float(c) for i, c in enumerate(clips_i16)}
    skip = ("pos_emb", "pre_encode_lengths")
    arrays.update({f"batch.{k}": v for k, v in batch.items() if k not in skip})
    for i, s in enumerate(singles):
        for k, v in s.items():
            if k in skip or ".align_" in k or k.startswith("layer") or k == "pre_encode":
                continue  # alignments/internals for the batch only, to keep the set small
            if k == "features":
                continue  # size: 2.5 singles equal the batch's valid frames (tools/tests checks this)
            arrays[f"single{i}.{k}"] = v
    return arrays


def batch_vs_single(batch, singles):
    res = {}
    for i, s in enumerate(singles):
        n, nf = int(s["encoded_lengths"][0]), int(s["features_lengths"][0])
        res[f"clip{i}"] = {
            "features_max_abs_diff_valid": float(np.abs(batch["features"][i, :, :nf] - s["features"][0, :, :nf]).max()),
            "encoded_max_abs_diff_valid": float(np.abs(batch["encoded"][i, :, :n] - s["encoded"][0, :, :n]).max()),
            "tokens_equal": bool(np.array_equal(batch[f"hyp{i}.tokens"], s["hyp0.tokens"])),
            "timestamps_equal": bool(np.array_equal(batch[f"hyp{i}.timestamps"], s["hyp0.timestamps"])),
            # NeMo's batched duration record can differ from the jump taken (steno_ref/decoding.py)
            "nemo_batch_duration_record_differs_at": [
                int(j) for j in np.nonzero(batch[f"hyp{i}.durations"] != batch[f"hyp{i}.durations_used"])[0]],
        }
    return res


def write_set(root, name, cfg, seed0, clips_i16, tok_bytes, weights_dtype="f32"):
    import sentencepiece as spm
    model, seed, cal, batch, singles, st, (tm, dm) = build(name, cfg, seed0, clips_i16, weights_dtype)
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    sp = spm.SentencePieceProcessor(model_proto=tok_bytes)
    cfg = dict(cfg, labels=[sp.id_to_piece(i) for i in range(sp.get_piece_size())])
    save_model_dir(d, cfg, model.state_dict(), None, weights_dtype)
    link = os.path.join(d, "tokenizer.model")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.join("..", "tokenizer.model"), link)
    fv = cfg["preprocessor"]["frontend_version"]
    arrays = golden_arrays(batch, singles, clips_i16)
    safetensors_io.save(os.path.join(d, "golden.safetensors"), arrays, metadata={"generator": "tools/make_golden.py"})
    texts = {f"batch.hyp{i}.text": sp.decode_ids(batch[f"hyp{i}.tokens"].tolist()) for i in range(len(singles))}
    texts.update({f"single{i}.hyp0.text": sp.decode_ids(s["hyp0.tokens"].tolist()) for i, s in enumerate(singles)})
    meta = {
        "generator": "tools/make_golden.py (reference: tools/steno_ref)",
        "seed": seed, "torch": torch.__version__, "numpy": np.__version__, "python": platform.python_version(),
        "torch_num_threads": torch.get_num_threads(), "frontend_version": fv, "weights_dtype": weights_dtype,
        "clips": [{"wav": w, "start": s, "samples": n} for w, s, n in CLIPS],
        "clip_source": "tests/data/nemo-tiny (espeak-ng), int16 / 32768",
        "durations": cfg["decoding"]["durations"], "max_symbols": cfg["decoding"]["max_symbols"],
        "joint_calibration": cal, "decode_stats_batch": st,
        "decision_margins": {"min_token_margin": tm, "min_duration_margin": dm,
                             "over": "every joint call of the batch run and the three single runs"},
        "batch_vs_single": batch_vs_single(batch, singles),
        "arrays": "batch.*: everything incl. pre_encode, layerK, align_*; singleN.*: lengths, encoded, "
                  "hyp0 tokens/timestamps/durations(_used); no single features (size)",
    }
    with open(os.path.join(d, "golden.json"), "w", encoding="utf-8") as f:
        json.dump({"texts": texts, "meta": meta}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    sizes = {fn: os.path.getsize(os.path.join(d, fn)) for fn in sorted(os.listdir(d))
             if not os.path.islink(os.path.join(d, fn))}
    print(f"wrote {d}: {sizes} total {sum(sizes.values())} bytes")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "golden"))
    ap.add_argument("--only", default=None)
    ap.add_argument("--nemo-tiny", default=default_nemo_tiny())
    ap.add_argument("--weights-dtype", choices=["f32", "f16"], default="f32",
                    help="f16 halves model.safetensors; weights are rounded before the reference runs")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)  # deterministic reductions; the sets are tiny
    os.makedirs(a.out, exist_ok=True)
    tok = extract_tokenizer(os.path.join(a.nemo_tiny, "model.nemo"))
    with open(os.path.join(a.out, "tokenizer.model"), "wb") as f:
        f.write(tok)
    clips = read_clips(a.nemo_tiny)
    for name, (cfg, seed0) in make_configs().items():
        if a.only and name != a.only:
            continue
        write_set(a.out, name, cfg, seed0, clips, tok, a.weights_dtype)
    return 0


if __name__ == "__main__":
    sys.exit(main())
