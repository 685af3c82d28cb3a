#!/usr/bin/env python3
"""Train steno's reference FastConformer-TDT (tools/steno_ref) with the TDT loss (tools/train/tdt_loss.py).

  python3 tools/train/train.py --config tools/train/configs/small.yaml --tokenizer TOK.model \
      --train-manifest train.jsonl --val-manifest val.jsonl --out OUTDIR \
      [--resume [CKPT]] [--time-budget-s 480] [--split-mb 15] [--max-steps N] [...]

Features are computed on the training device with steno_ref's front end, i.e. exactly the inference front end
(plus NeMo's training dither, and with --vtlp V a mel filterbank warped by a factor in [1 - V, 1 + V] per
utterance), then SpecAugment. --shape-quantum S --label-quantum K pad batches to multiples of S seconds and K
tokens: few distinct shapes, so that cuDNN's per-shape set-up is reused (a step on the GPU is host-bound). The
encoder and joint run under bf16 autocast on CUDA, the prediction LSTM and the loss in fp32 (the loss recursion
in fp64; in f32 with the CUDA lattice, --lattice-lib). Batches are bucketed by duration. Every random draw of
step s (dropout, dither, VTLP, SpecAugment, the omega branch) comes from generators seeded by (seed, s), and the
epoch's batches from (seed, epoch), so --resume continues exactly where the checkpoint left off (bit-exact on CPU
with --optim-state fp32).

OUTDIR gets last.pt (or last.pt.000, .001, ... with --split-mb), train.log and metrics.jsonl. The checkpoint is
written every save_every steps, at the end, on SIGTERM/SIGINT, and before --time-budget-s runs out (the budget
counts from process start, data loading included). tools/train/README.md has the recipe.
"""
import argparse
import glob
import json
import math
import os
import random
import signal
import sys
import time

T0 = time.time()

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import yaml  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import ckpt as ckptlib  # noqa: E402
from data import Corpus, iterate_batches, make_batches, normalize_text  # noqa: E402
from steno_ref.decoding import greedy_tdt_batch  # noqa: E402
from steno_ref import safetensors_io  # noqa: E402
from steno_ref.model import FastConformerTDT  # noqa: E402
from steno_ref.modeldir import load_weights  # noqa: E402
from tdt_loss import joint_logprobs, tdt_loss_from_logprobs  # noqa: E402
from wer import edit_distance  # noqa: E402

TRAIN_DEFAULTS = {
    "seed": 1234, "lr": 1e-3, "min_lr": 1e-5, "sched": "cosine", "warmup_steps": 400, "max_steps": 5000,
    "weight_decay": 1e-3, "betas": [0.9, 0.98], "grad_clip": 1.0, "batch_seconds": 480.0, "max_batch": 96,
    "max_duration": 20.0, "min_duration": 0.2, "amp": "bf16", "joint_chunk": 0, "sigma": 0.02, "omega": 0.1,
    "reduction": "mean_volume", "dither": 1e-5,
    "spec_augment": {"freq_masks": 2, "freq_width": 10, "time_masks": 2, "time_width": 0.05},
    "log_every": 50, "eval_every": 1000, "save_every": 1000, "val_max_utts": 300, "optim_state": "int8",
    "rewarm_steps": 200, "ctc_weight": 0.3, "shape_quantum": 0.0, "label_quantum": 0, "vtlp": 0.0,
}
# CLI flag -> train config key (None = not given: keep the config's / checkpoint's value)
OVERRIDES = ["seed", "lr", "min_lr", "sched", "warmup_steps", "max_steps", "weight_decay", "grad_clip",
             "batch_seconds", "max_batch", "max_duration", "min_duration", "amp", "joint_chunk", "sigma", "omega",
             "reduction", "dither", "log_every", "eval_every", "save_every", "val_max_utts", "optim_state",
             "rewarm_steps", "ctc_weight", "shape_quantum", "label_quantum", "vtlp"]


def log(msg, logf=None):
    line = f"[{time.time() - T0:7.1f}s] {msg}"
    print(line, flush=True)
    if logf is not None:
        logf.write(line + "\n")
        logf.flush()


# ---------------------------------------------------------------------------------------------- model

def build_model_cfg(mcfg, sp, name):
    """Training config's `model` section + tokenizer -> a complete steno config.json dict."""
    V = sp.get_piece_size()
    durations = [int(d) for d in mcfg["decoding"]["durations"]]
    cfg = {"format": "steno-model", "format_version": 1, "model_type": "fastconformer_tdt", "name": name,
           "preprocessor": dict(mcfg["preprocessor"]), "encoder": dict(mcfg["encoder"]),
           "decoder": dict(mcfg["decoder"]), "joint": dict(mcfg["joint"]),
           "decoding": {"durations": durations, "max_symbols": int(mcfg["decoding"].get("max_symbols", 10))},
           "tokenizer": {"type": "sentencepiece", "model": "tokenizer.model"},
           "labels": [sp.id_to_piece(i) for i in range(V)]}
    cfg["encoder"]["feat_in"] = int(cfg["preprocessor"]["features"])
    cfg["decoder"]["vocab_size"] = V
    cfg["joint"]["num_classes"] = V
    cfg["joint"]["num_extra_outputs"] = len(durations)
    return cfg


def with_init_model_shapes(mcfg, init_dir):
    """The training config's `model` section with the shapes of the model directory training starts from: that
    directory's config.json decides the architecture (a deepened model, tools/train/deepen_model.py, has more
    layers than configs/small.yaml), the training config adds what config.json lacks (the dropouts)."""
    with open(os.path.join(init_dir, "config.json"), encoding="utf-8") as f:
        init = json.load(f)
    merged = {}
    for section, values in mcfg.items():
        merged[section] = dict(values)
        if isinstance(init.get(section), dict):
            merged[section].update(init[section])  # vocabulary-sized fields come from the tokenizer after
    changed = [f"{s}.{k}: {mcfg[s][k]} -> {merged[s][k]}" for s in mcfg for k in mcfg[s]
               if k in merged[s] and merged[s][k] != mcfg[s][k]]
    return merged, changed


def init_model(cfg, seed):
    torch.manual_seed(seed)
    model = FastConformerTDT(cfg)
    # NeMo's LSTMDropout: forget-gate input bias 1.0, hidden-hidden biases of that gate 0
    lstm = model.decoder.prediction["dec_rnn"].lstm
    H = lstm.hidden_size
    with torch.no_grad():
        for name, p in lstm.named_parameters():
            if name.startswith("bias_ih"):
                p[H:2 * H].fill_(1.0)
            elif name.startswith("bias_hh"):
                p[H:2 * H].zero_()
    return model


def make_ctc_head(cfg, seed):
    """Auxiliary CTC head (NeMo hybrid TDT-CTC: ConvASRDecoder = 1x1 conv d_model -> V+1, blank = V), used in
    training only: it speeds up and steadies the encoder's alignment learning and is not exported."""
    torch.manual_seed(seed + 1)
    return torch.nn.Linear(int(cfg["encoder"]["d_model"]), int(cfg["decoder"]["vocab_size"]) + 1)


def count_params(model):
    return sum(p.numel() for p in model.parameters())


def prediction_all(model, labels, drop, training):
    """Prediction-net output for SOS(=blank) + every label: labels [B,U] -> [B,U+1,H] (fp32, zero state)."""
    dec = model.decoder
    B = labels.shape[0]
    y = torch.cat([torch.full((B, 1), dec.blank, dtype=torch.long, device=labels.device), labels], 1)
    emb = dec.prediction["embed"](y).transpose(0, 1)  # [U+1,B,H]
    g, _ = dec.prediction["dec_rnn"].lstm(emb)
    g = g.transpose(0, 1)
    return F.dropout(g, drop, True) if training and drop > 0 else g


def joint_lp(model, f, p, labels, num_durations, drop, training):
    h = torch.relu(f.unsqueeze(2) + p.unsqueeze(1))  # [B,T,U+1,H]
    if training and drop > 0:
        h = F.dropout(h, drop, True)
    logits = model.joint.joint_net[2](h)  # joint_net = ReLU, Dropout, Linear (NeMo)
    return joint_logprobs(logits, labels, num_durations)


def spec_augment(feats, flen, sa):
    """NeMo SpectrogramAugmentation on [B, n_mels, T]: freq_masks bands of width U[0, freq_width] and
    time_masks bands of width U[0, time_width * length] (time_width < 1) inside each valid length; value 0."""
    B, nf, T = feats.shape
    dev = feats.device
    mask = torch.zeros(B, nf, T, dtype=torch.bool, device=dev)
    fm, fw = int(sa.get("freq_masks", 0)), int(sa.get("freq_width", 0))
    if fm > 0 and fw > 0:
        w = torch.randint(0, fw + 1, (B, fm), device=dev)
        s = (torch.rand(B, fm, device=dev) * (nf - w + 1).float()).long()
        i = torch.arange(nf, device=dev)
        band = ((i >= s.unsqueeze(-1)) & (i < (s + w).unsqueeze(-1))).any(1)  # [B,F]
        mask |= band.unsqueeze(2)
    tm, tw = int(sa.get("time_masks", 0)), float(sa.get("time_width", 0))
    if tm > 0 and tw > 0:
        maxw = (tw * flen.float()).long() if tw < 1 else torch.full_like(flen, int(tw))
        w = (torch.rand(B, tm, device=dev) * (maxw.unsqueeze(1) + 1).float()).long()
        room = (flen.unsqueeze(1) - w + 1).clamp(min=1)
        s = (torch.rand(B, tm, device=dev) * room.float()).long()
        i = torch.arange(T, device=dev)
        band = ((i >= s.unsqueeze(-1)) & (i < (s + w).unsqueeze(-1))).any(1)  # [B,T]
        mask |= band.unsqueeze(1)
    return feats.masked_fill(mask, 0.0)


def vtlp_filterbanks(fb, alphas):
    """Vocal tract length perturbation (Jaitly & Hinton, 2013) as one mel filterbank per utterance: fb [1, M, K]
    (mel bands x FFT bins) and warp factors alphas [B] -> [B, M, K], each reading the spectrum with its frequency
    axis stretched by alpha: f -> alpha * f up to a knee at 80 % of the band, then a straight line to Nyquist so
    that the band stays whole. alpha > 1 moves the formants up (a shorter vocal tract), < 1 down; 1 is fb itself.
    Pitch and speaking rate stay as they are, which is what the speed perturbation cannot do."""
    K = fb.shape[-1]
    k = torch.arange(K, dtype=torch.float32, device=fb.device).unsqueeze(0)  # output bins [1, K]
    a = alphas.to(device=fb.device, dtype=torch.float32).unsqueeze(1)  # [B, 1]
    knee = 0.8 * (K - 1)
    below = k / a
    above = knee / a + (K - 1 - knee / a) * (k - knee) / (K - 1 - knee)
    src = torch.where(k <= knee, below, above).clamp(0, K - 1)  # the source bin each output bin reads [B, K]
    lo = src.floor().long().clamp(max=K - 2)
    w = (src - lo.float()).unsqueeze(-1)
    # interp [B, K(out), K(src)]: linear interpolation between the two source bins around src
    interp = (1 - w) * F.one_hot(lo, K).float() + w * F.one_hot(lo + 1, K).float()
    return torch.matmul(fb.float(), interp)  # mel = fb @ (interp @ mag): [B, M, K(src)]


def train_loss(model, batch, tcfg, dev, step_rng, ctc_head=None, lattice=None):
    """One batch -> (loss, number of utterances). Randomness: torch's global RNG (seeded per step by the caller)
    and step_rng (the omega draw). lattice: tdt_loss_from_logprobs' (None: the PyTorch lattice)."""
    audio = batch["audio"].to(dev, non_blocking=True).float() / 32768.0
    alen = batch["audio_len"].to(dev)
    labels = batch["labels"].to(dev)
    ulen = batch["label_len"].to(dev)
    mcfg = model.cfg
    amp = tcfg["amp"] == "bf16"
    with torch.no_grad():
        if tcfg["dither"] > 0:
            audio = audio + tcfg["dither"] * torch.randn_like(audio)
        fb = None
        v = float(tcfg.get("vtlp", 0.0) or 0.0)
        if v > 0:  # one warp factor per utterance, uniform in [1 - v, 1 + v]
            alphas = 1.0 + v * (2.0 * torch.rand(audio.shape[0], device=dev) - 1.0)
            fb = vtlp_filterbanks(model.preprocessor.featurizer.fb, alphas)
        feats, flen = model.preprocessor(audio, alen, fb=fb)
        feats = spec_augment(feats, flen, tcfg["spec_augment"])
    nd = len(model.durations)
    with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=amp):
        enc, elen = model.encoder(feats, flen)
        f = model.joint.enc(enc.transpose(1, 2))  # [B,T,H]
    with torch.autocast(device_type=dev.type, enabled=False):
        g = prediction_all(model, labels, float(mcfg["decoder"].get("dropout", 0.0)), True)
    jd = float(mcfg["joint"].get("dropout", 0.0))
    with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=amp):
        p = model.joint.pred(g)  # [B,U+1,H]
        chunk = int(tcfg.get("joint_chunk", 0) or 0)
        B = labels.shape[0]
        if chunk > 0:
            from torch.utils.checkpoint import checkpoint
            outs = [checkpoint(joint_lp, model, f[i:i + chunk], p[i:i + chunk], labels[i:i + chunk], nd, jd, True,
                               use_reentrant=False) for i in range(0, B, chunk)]
            lpb, lpl, lpd = (torch.cat([o[k] for o in outs], 0) for k in range(3))
        else:
            lpb, lpl, lpd = joint_lp(model, f, p, labels, nd, jd, True)
    loss = tdt_loss_from_logprobs(lpb, lpl, lpd, elen, ulen, model.durations, sigma=tcfg["sigma"],
                                  omega=tcfg["omega"], reduction=tcfg["reduction"], rng=step_rng, lattice=lattice)
    w = float(tcfg.get("ctc_weight", 0.0) or 0.0)
    if ctc_head is not None and w > 0:
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=amp):
            ctc_logits = ctc_head(enc.transpose(1, 2))  # [B,T,V+1]
        lp = torch.log_softmax(ctc_logits.float(), dim=-1).transpose(0, 1)  # [T,B,V+1]
        ctc = F.ctc_loss(lp, labels, elen, ulen, blank=model.decoder.blank, reduction="sum", zero_infinity=True)
        loss = (1.0 - w) * loss + w * ctc / ulen.sum().clamp(min=1).to(ctc.dtype)
    return loss


def lr_at(step, tcfg, rewarm_from=None):
    """Learning rate of optimizer step `step` (1-based): linear warmup, then cosine to min_lr at max_steps or
    inverse square root (noam); times a linear re-warmup after a resume without optimizer state."""
    peak, warm, lo = tcfg["lr"], max(1, int(tcfg["warmup_steps"])), tcfg["min_lr"]
    if step <= warm:
        lr = peak * step / warm
    elif tcfg["sched"] == "noam":
        lr = max(lo, peak * math.sqrt(warm / step))
    else:
        prog = min(1.0, (step - warm) / max(1, int(tcfg["max_steps"]) - warm))
        lr = lo + (peak - lo) * 0.5 * (1.0 + math.cos(math.pi * prog))
    if rewarm_from is not None:
        lr *= min(1.0, (step - rewarm_from) / max(1, int(tcfg["rewarm_steps"])))
    return lr


def seed_step(seed, step):
    torch.manual_seed((seed * 1000003 + step * 7919) % (2 ** 63))  # CPU and every CUDA device
    return random.Random(seed * 1000003 + step)


# ----------------------------------------------------------------------------------------------- eval

def word_errors(ref, hyp):
    r = ref.split()
    return edit_distance(r, hyp.split()), len(r)


@torch.no_grad()
def transcribe(model, sp, clips, dev, batch_seconds=300.0, max_batch=64):
    """Greedy transcripts (steno_ref decoding, fp32, eval mode) for int16 clips, batched by length."""
    was_training = model.training
    model.eval()
    order = sorted(range(len(clips)), key=lambda i: len(clips[i]))
    out = [None] * len(clips)
    k = 0
    while k < len(order):
        n = 1
        while (k + n < len(order) and n < max_batch
               and (n + 1) * len(clips[order[k + n]]) / 16000.0 <= batch_seconds):
            n += 1
        idx = order[k:k + n]
        k += n
        L = max(len(clips[i]) for i in idx)
        audio = torch.zeros(len(idx), L)
        for b, i in enumerate(idx):
            audio[b, :len(clips[i])] = torch.from_numpy(clips[i].astype(np.float32) / 32768.0)
        alen = torch.tensor([len(clips[i]) for i in idx], dtype=torch.long)
        feats, flen = model.preprocessor(audio.to(dev), alen.to(dev))
        enc, elen = model.encoder(feats, flen)
        hyps = greedy_tdt_batch(model, enc, elen)
        for b, i in enumerate(idx):
            out[i] = sp.decode([t for t in hyps[b]["tokens"] if t < model.decoder.blank])
    if was_training:
        model.train()
    return out


def evaluate(model, sp, corpus, dev, max_utts):
    n = min(len(corpus), max_utts) if max_utts else len(corpus)
    clips = [corpus.get_audio(i) for i in range(n)]
    hyps = transcribe(model, sp, clips, dev)
    errs = words = 0
    for i in range(n):
        e, w = word_errors(corpus.texts[i], normalize_text(hyps[i]))
        errs += e
        words += w
    return errs / max(1, words), n, [(corpus.texts[i], hyps[i]) for i in range(min(3, n))]


# ----------------------------------------------------------------------------------------------- main

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--config", help="YAML with model: and train: sections (default configs/small.yaml; "
                                     "ignored for the model when resuming)")
    ap.add_argument("--tokenizer", help="SentencePiece .model (taken from the checkpoint when resuming)")
    ap.add_argument("--train-manifest", action="append", default=[], help="JSONL manifest (repeatable)")
    ap.add_argument("--more-manifests", default=None, metavar="GLOB",
                    help="manifests that appear while training (checked at the end of every epoch; their "
                         "utterances join the next one): data that grows beside the trainer, as gpu_train_grow.sh "
                         "makes it. A resume then is not bit-exact (the epochs' batches depend on when data came)")
    ap.add_argument("--val-manifest", action="append", default=[])
    ap.add_argument("--out", required=False, help="output folder for last.pt, train.log, metrics.jsonl")
    ap.add_argument("--resume", nargs="?", const="", default=None,
                    help="continue from CKPT (file, NAME of NAME.000 parts, or folder with last.pt); without a "
                         "value: from --out. Starts fresh when there is no checkpoint there yet.")
    ap.add_argument("--name", default="steno-tdt-small-en", help="model name stored in the config")
    ap.add_argument("--init-model", default=None, metavar="DIR",
                    help="fresh start from a steno model directory's weights, tokenizer and shapes (e.g. the "
                         "committed models/steno-tdt-small-en): continues training a released model without "
                         "carrying a checkpoint; the config adds its dropouts and training settings")
    ap.add_argument("--time-budget-s", type=float, default=None,
                    help="stop (and save) before this many seconds since process start")
    ap.add_argument("--stop-step", type=int, default=None,
                    help="stop after this optimizer step (does not change the schedule, unlike --max-steps)")
    ap.add_argument("--split-mb", type=float, default=None, help="write the checkpoint in parts of <= this many MB")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--profile-steps", type=int, default=0, metavar="N",
                    help="profile N training steps (after 20 warm-up steps) with torch.profiler and log the ops "
                         "that took the most device and host time, then go on training")
    ap.add_argument("--lattice-lib", default=os.environ.get("STENO_TDT_LATTICE"), metavar="SO",
                    help="the loss lattice as one CUDA kernel (tools/train/build_tdt_lattice.sh; default "
                         "$STENO_TDT_LATTICE): checked against the PyTorch lattice at start, used if it matches")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    ap.add_argument("--workers", type=int, default=8, help="DataLoader workers when audio is not preloaded")
    ap.add_argument("--no-preload", action="store_true", help="read WAVs in DataLoader workers instead of RAM")
    ap.add_argument("--no-final-eval", action="store_true")
    ap.add_argument("--spec-augment", default=None, metavar="FM,FW,TM,TW",
                    help="SpecAugment freq masks, max freq width, time masks, max time width (fraction of the "
                         "length if < 1), e.g. 2,15,5,0.05; 'off' disables it")
    ap.add_argument("--count-params", action="store_true", help="print the parameter count and exit")
    ap.add_argument("--vocab-size", type=int, default=256, help="for --count-params without --tokenizer")
    for k in OVERRIDES:
        typ = str if k in ("sched", "amp", "reduction", "optim_state") else (
            int if k in ("seed", "warmup_steps", "max_steps", "max_batch", "joint_chunk", "log_every", "eval_every",
                         "save_every", "val_max_utts", "rewarm_steps", "label_quantum") else float)
        ap.add_argument("--" + k.replace("_", "-"), type=typ, default=None)
    return ap.parse_args(argv)


class _VocabOnly:
    def __init__(self, n):
        self.n = n

    def get_piece_size(self):
        return self.n

    def id_to_piece(self, i):
        return f"p{i}"


class StepProfiler:
    """torch.profiler over steps [first, first + n): where a training step's time goes (the log gets the ops that
    took the most device time and the most host time)."""

    def __init__(self, n, first, dev, logf):
        self.n, self.first, self.dev, self.logf, self.prof, self.t0 = n, first, dev, logf, None, 0.0

    def before(self, step):
        if self.n > 0 and step == self.first:
            acts = [torch.profiler.ProfilerActivity.CPU]
            if self.dev.type == "cuda":
                acts.append(torch.profiler.ProfilerActivity.CUDA)
                torch.cuda.synchronize(self.dev)
            self.prof = torch.profiler.profile(activities=acts)
            self.prof.__enter__()
            self.t0 = time.time()

    def after(self, step):
        if self.prof is None or step != self.first + self.n - 1:
            return
        if self.dev.type == "cuda":
            torch.cuda.synchronize(self.dev)
        wall = time.time() - self.t0
        self.prof.__exit__(None, None, None)
        events = self.prof.key_averages()
        log(f"profile of steps {self.first}..{step}: {1000 * wall / self.n:.1f} ms a step (wall)", self.logf)
        sort = "cuda_time_total" if self.dev.type == "cuda" else "self_cpu_time_total"
        log("by device time:\n" + events.table(sort_by=sort, row_limit=25), self.logf)
        log("by host time:\n" + events.table(sort_by="self_cpu_time_total", row_limit=15), self.logf)
        self.prof, self.n = None, 0


def grow_corpus(train, pattern, logf):
    """Adds the manifests matching `pattern` that the training corpus does not have yet."""
    new = sorted(p for p in glob.glob(pattern) if os.path.abspath(p) not in train.manifests)
    if not new:
        return
    t = time.time()
    n, nbytes = train.extend(new)
    log(f"data grew: {n} utts from {len(new)} manifest(s), {nbytes / 1e9:.2f} GB read in {time.time() - t:.1f}s; "
        f"now {len(train)} utts, {train.hours():.2f} h", logf)


def load_lattice(path, dev, logf):
    """The loss lattice as one CUDA kernel when asked for and it matches the PyTorch lattice on this machine;
    None (the PyTorch lattice) otherwise, with the reason in the log."""
    if not path or dev.type != "cuda":
        return None
    import tdt_lattice_cuda
    lattice = tdt_lattice_cuda.load(path)
    failures = tdt_lattice_cuda.check(lattice, device=dev) if lattice is not None else ["no library"]
    if failures:
        log(f"loss lattice: {path} not used ({'; '.join(failures)}); the PyTorch lattice instead", logf)
        return None
    log(f"loss lattice: the CUDA kernel {path} (matches the PyTorch lattice)", logf)
    return lattice


def main(argv=None):
    args = parse_args(argv)
    import sentencepiece as spm

    config_path = args.config or os.path.join(HERE, "configs", "small.yaml")
    with open(config_path, encoding="utf-8") as f:
        file_cfg = yaml.safe_load(f)

    if args.count_params:
        sp = spm.SentencePieceProcessor(model_file=args.tokenizer) if args.tokenizer else _VocabOnly(args.vocab_size)
        cfg = build_model_cfg(file_cfg["model"], sp, args.name)
        model = init_model(cfg, 0)
        n = count_params(model)
        enc = sum(p.numel() for k, p in model.named_parameters() if k.startswith("encoder."))
        print(json.dumps({"params": n, "encoder": enc, "decoder+joint": n - enc, "fp16_MB": round(n * 2 / 1e6, 2),
                          "fp32_MB": round(n * 4 / 1e6, 2), "vocab": sp.get_piece_size()}))
        return 0
    if not args.out:
        raise SystemExit("--out is required")
    os.makedirs(args.out, exist_ok=True)
    logf = open(os.path.join(args.out, "train.log"), "a", encoding="utf-8")
    metf = open(os.path.join(args.out, "metrics.jsonl"), "a", encoding="utf-8")

    if args.threads:
        torch.set_num_threads(args.threads)
    dev = torch.device("cuda" if (args.device == "auto" and torch.cuda.is_available()) else
                       ("cpu" if args.device == "auto" else args.device))

    # ---- resume or fresh start
    resume = None
    if args.resume is not None:
        src = args.resume or args.out
        if ckptlib.resolve(src):
            resume = ckptlib.load_checkpoint(src)
            log(f"resuming from {ckptlib.resolve(src)} at step {resume['step']}", logf)
        else:
            log(f"--resume: no checkpoint at {src}, starting fresh", logf)
    if resume is not None:
        tcfg = dict(resume["train_cfg"])
        cfg = resume["model_cfg"]
        tok_bytes = ckptlib.tensor_to_bytes(resume["tokenizer"])
    else:
        tcfg = dict(TRAIN_DEFAULTS)
        tcfg.update(file_cfg.get("train", {}) or {})
        tokenizer = os.path.join(args.init_model, "tokenizer.model") if args.init_model else args.tokenizer
        if not tokenizer:
            raise SystemExit("--tokenizer (or --init-model) is required for a fresh start")
        with open(tokenizer, "rb") as f:
            tok_bytes = f.read()
        cfg = None
    for k in OVERRIDES:
        v = getattr(args, k)
        if v is not None:
            tcfg[k] = v
    if args.spec_augment is not None:
        if args.spec_augment == "off":
            tcfg["spec_augment"] = {"freq_masks": 0, "freq_width": 0, "time_masks": 0, "time_width": 0}
        else:
            fm, fw, tm, tw = args.spec_augment.split(",")
            tcfg["spec_augment"] = {"freq_masks": int(fm), "freq_width": int(fw), "time_masks": int(tm),
                                    "time_width": float(tw)}
    if not 0.0 <= float(tcfg.get("vtlp", 0.0) or 0.0) <= 0.2:
        raise SystemExit("--vtlp must be in [0, 0.2] (warp factors below 0.8 would fold the band's top over)")
    sp = spm.SentencePieceProcessor(model_proto=tok_bytes)
    if cfg is None:
        mcfg = file_cfg["model"]
        if args.init_model:
            mcfg, changed = with_init_model_shapes(mcfg, args.init_model)
            if changed:
                log(f"shapes from {args.init_model}/config.json: " + ", ".join(changed), logf)
        cfg = build_model_cfg(mcfg, sp, args.name)
    elif args.tokenizer:
        with open(args.tokenizer, "rb") as f:
            if f.read() != tok_bytes:
                log("warning: --tokenizer differs from the checkpoint's; using the checkpoint's", logf)

    model = init_model(cfg, tcfg["seed"])
    if resume is not None:
        model.load_state_dict(resume["model"])
    elif args.init_model:
        arrays, _, _ = safetensors_io.load(os.path.join(args.init_model, "model.safetensors"))
        load_weights(model, {k: np.asarray(v, dtype=np.float32) for k, v in arrays.items()})
        log(f"initialised from {args.init_model} ({len(arrays)} tensors)", logf)
    ctc_head = make_ctc_head(cfg, tcfg["seed"]) if float(tcfg.get("ctc_weight", 0) or 0) > 0 else None
    if resume is not None and ctc_head is not None and resume.get("ctc_head") is not None:
        ctc_head.load_state_dict(resume["ctc_head"])
    model.to(dev).train()
    if ctc_head is not None:
        ctc_head.to(dev).train()
    lattice = load_lattice(args.lattice_lib, dev, logf)
    nparams = count_params(model)
    decay = [p for p in model.parameters()] + ([p for p in ctc_head.parameters()] if ctc_head is not None else [])
    opt_kw = dict(lr=tcfg["lr"], betas=tuple(tcfg["betas"]), weight_decay=tcfg["weight_decay"], eps=1e-8)
    opt = None
    if dev.type == "cuda":
        try:
            opt = torch.optim.AdamW(decay, fused=True, **opt_kw)
        except (TypeError, RuntimeError):
            opt = None
    if opt is None:
        opt = torch.optim.AdamW(decay, **opt_kw)
    step, epoch, batch_pos = 0, 0, 0
    rewarm_from = None
    history, best_wer = [], None
    if resume is not None:
        step, epoch, batch_pos = int(resume["step"]), int(resume["epoch"]), int(resume["batch_pos"])
        history, best_wer = list(resume.get("history", [])), resume.get("best_wer")
        if resume.get("optim") is not None and len(resume["optim"]["param_groups"][0]["params"]) != len(decay):
            log("optimizer state does not match the parameters (ctc_weight changed?): fresh moments", logf)
            resume["optim"] = None
        if resume.get("optim") is not None:
            opt.load_state_dict(ckptlib.decompress_optimizer(resume["optim"]))
            if resume["optim"]["mode"] != "fp32":
                log(f"optimizer moments restored from {resume['optim']['mode']} (approximate)", logf)
        else:
            rewarm_from = step
            log(f"checkpoint has no optimizer state: fresh moments, lr re-warmup over {tcfg['rewarm_steps']} steps",
                logf)
        rng = resume.get("rng", {})
        if "torch" in rng:
            torch.set_rng_state(rng["torch"])
        if dev.type == "cuda" and rng.get("cuda"):
            try:
                torch.cuda.set_rng_state_all(rng["cuda"])
            except RuntimeError:
                pass
        resume = None  # free memory

    log(f"device {dev} ({torch.cuda.get_device_name(dev) if dev.type == 'cuda' else 'cpu'}), torch "
        f"{torch.__version__}, params {nparams:,} ({nparams * 2 / 1e6:.1f} MB fp16), vocab {sp.get_piece_size()}",
        logf)
    log("train config: " + json.dumps(tcfg), logf)

    # ---- data
    if not args.train_manifest:
        raise SystemExit("--train-manifest is required")
    train = Corpus(args.train_manifest, sp, tcfg["max_duration"], tcfg["min_duration"])
    val = Corpus(args.val_manifest, sp, None, 0.0, tcfg["val_max_utts"]) if args.val_manifest else None
    if len(train) == 0:
        raise SystemExit("no training utterances")
    if not args.no_preload:
        nbytes = train.preload(16)
        if val is not None:
            val.preload(16)
        log(f"preloaded {len(train)} clips ({nbytes / 1e9:.2f} GB)", logf)
    log(f"train: {len(train)} utts, {train.hours():.2f} h ({train.dropped} dropped by duration); "
        f"val: {len(val) if val else 0} utts", logf)

    stop = {"signal": None}

    def on_signal(signum, frame):
        stop["signal"] = signum

    old_handlers = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        return _train_loop(**locals())
    finally:
        for s, h in old_handlers.items():
            signal.signal(s, h)
        logf.close()
        metf.close()


def _train_loop(args, tcfg, cfg, model, opt, sp, tok_bytes, train, val, dev, nparams, step, epoch, batch_pos,
                rewarm_from, history, best_wer, stop, logf, metf, ctc_head, lattice, **_):

    ckpt_path = os.path.join(args.out, "last.pt")
    save_est = [10.0]

    def save(reason):
        t = time.time()
        obj = {"format": "steno-train-ckpt", "version": 1, "model_cfg": cfg, "train_cfg": tcfg,
               "model": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
               "optim": ckptlib.compress_optimizer(opt.state_dict(), tcfg["optim_state"]),
               "step": step, "epoch": epoch, "batch_pos": batch_pos,
               "rng": {"torch": torch.get_rng_state(),
                       "cuda": torch.cuda.get_rng_state_all() if dev.type == "cuda" else []},
               "tokenizer": ckptlib.bytes_to_tensor(tok_bytes), "history": history, "best_wer": best_wer,
               "params": nparams, "torch_version": torch.__version__,
               "ctc_head": ({k: v.detach().cpu().clone() for k, v in ctc_head.state_dict().items()}
                            if ctc_head is not None else None)}
        files = ckptlib.save_checkpoint(obj, ckpt_path, args.split_mb)
        size = sum(os.path.getsize(p) for p in files)
        save_est[0] = max(2.0, 2.0 * (time.time() - t))
        log(f"saved {', '.join(os.path.basename(p) for p in files)} ({size / 1e6:.1f} MB, step {step}, {reason}) "
            f"in {time.time() - t:.1f}s", logf)

    eval_est = [30.0]

    def run_eval():
        nonlocal best_wer
        t = time.time()
        wer, n, ex = evaluate(model, sp, val, dev, tcfg["val_max_utts"])
        eval_est[0] = 1.2 * (time.time() - t) + 2.0
        best_wer = wer if best_wer is None else min(best_wer, wer)
        rec = {"step": step, "wer": wer, "n": n, "eval_s": round(time.time() - t, 1)}
        history.append(rec)
        metf.write(json.dumps(dict(rec, kind="eval")) + "\n")
        metf.flush()
        log(f"eval step {step}: WER {100 * wer:.2f}% on {n} utts ({time.time() - t:.1f}s)", logf)
        for ref, hyp in ex:
            log(f"   ref: {ref}\n             hyp: {hyp}", logf)

    def time_left():
        return None if args.time_budget_s is None else args.time_budget_s - (time.time() - T0)

    max_steps = int(tcfg["max_steps"])
    stop_step = min(max_steps, args.stop_step) if args.stop_step else max_steps
    step_est = 0.0
    win = {"loss": 0.0, "n": 0, "utts": 0, "secs": 0.0, "gn": 0.0, "t": time.time()}
    skipped = 0
    reason = None
    pin = dev.type == "cuda"
    workers = 0 if train.audio is not None else args.workers
    log(f"start at step {step} (epoch {epoch}, batch {batch_pos}), stop at step {stop_step}", logf)
    profiler = StepProfiler(args.profile_steps, step + 20, dev, logf)
    if step >= stop_step:
        reason = "max steps" if step >= max_steps else "stop step"
    while reason is None:
        quantum = float(tcfg.get("shape_quantum", 0.0) or 0.0)
        batches = make_batches(train.durations, tcfg["batch_seconds"], tcfg["max_batch"], tcfg["seed"], epoch,
                               quantum=quantum)
        if batch_pos == 0:
            log(f"epoch {epoch}: {len(batches)} batches", logf)
        for k, batch in iterate_batches(train, batches[batch_pos:], workers, pin,
                                        audio_multiple=int(round(quantum * 16000)),
                                        label_multiple=int(tcfg.get("label_quantum", 0) or 0)):
            t_step = time.time()
            step += 1
            step_rng = seed_step(tcfg["seed"], step)
            lr = lr_at(step, tcfg, rewarm_from)
            for g in opt.param_groups:
                g["lr"] = lr
            profiler.before(step)
            loss = train_loss(model, batch, tcfg, dev, step_rng, ctc_head, lattice)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(opt.param_groups[0]["params"], tcfg["grad_clip"])
            gnf, lf = float(gn), float(loss.detach())
            if math.isfinite(gnf) and math.isfinite(lf):
                opt.step()
            else:
                skipped += 1
                log(f"step {step}: non-finite loss {lf} / grad norm {gnf}, update skipped", logf)
            profiler.after(step)
            batch_pos += 1
            nb = int(batch["audio_len"].numel())
            win["loss"] += lf if math.isfinite(lf) else 0.0
            win["n"] += 1
            win["utts"] += nb
            win["secs"] += float(batch["audio_len"].sum()) / 16000.0
            win["gn"] += gnf if math.isfinite(gnf) else 0.0
            dt = time.time() - t_step
            step_est = dt if step_est == 0.0 else 0.9 * step_est + 0.1 * dt
            if step % tcfg["log_every"] == 0:
                el = time.time() - win["t"]
                rec = {"step": step, "epoch": epoch, "loss": win["loss"] / win["n"], "lr": lr,
                       "gnorm": win["gn"] / win["n"], "utt_s": win["utts"] / el, "audio_s_s": win["secs"] / el,
                       "elapsed": round(time.time() - T0, 1)}
                metf.write(json.dumps(dict(rec, kind="train")) + "\n")
                metf.flush()
                mem = (f" | {torch.cuda.max_memory_allocated(dev) / 2 ** 30:.1f} GiB"
                       if dev.type == "cuda" else "")
                log(f"step {step} ep {epoch} | loss {rec['loss']:.4f} | lr {lr:.2e} | gnorm {rec['gnorm']:.2f} | "
                    f"{rec['utt_s']:.1f} utt/s {rec['audio_s_s']:.0f} audio-s/s | {step_est * 1000:.0f} ms/step"
                    f"{mem}", logf)
                win = {"loss": 0.0, "n": 0, "utts": 0, "secs": 0.0, "gn": 0.0, "t": time.time()}
            if step >= stop_step:
                reason = "max steps" if step >= max_steps else "stop step"
                break
            left = time_left()
            if stop["signal"] is not None:
                reason = f"signal {stop['signal']}"
                break
            if left is not None and left < step_est * 1.5 + save_est[0] + 5.0:
                reason = "time budget"
                break
            if val is not None and tcfg["eval_every"] and step % tcfg["eval_every"] == 0:
                if left is None or left > eval_est[0] + save_est[0] + step_est + 10.0:
                    run_eval()
                else:
                    log(f"eval at step {step} skipped: {left:.0f}s left", logf)
            if tcfg["save_every"] and step % tcfg["save_every"] == 0:
                save("periodic")
        else:
            epoch += 1
            batch_pos = 0
            if args.more_manifests:
                grow_corpus(train, args.more_manifests, logf)
    log(f"stopping: {reason} at step {step}" + (f" ({skipped} updates skipped)" if skipped else ""), logf)
    left = time_left()
    if val is not None and not args.no_final_eval and (not history or history[-1]["step"] != step):
        if stop["signal"] is None and (left is None or left > eval_est[0] + save_est[0] + 5.0):
            run_eval()
    save(reason)
    log(f"done: step {step}, best WER {'n/a' if best_wer is None else f'{100 * best_wer:.2f}%'}", logf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
