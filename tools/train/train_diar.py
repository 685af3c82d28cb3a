#!/usr/bin/env python3
"""Trains steno's bundled diarizer: steno_ref's Sortformer (NeMo's module and key names) on synthetic
conversations composed on the fly (diar_conversations.py), with NeMo's hybrid loss (binary cross-entropy against
arrival-ordered speakers plus its permutation-invariant form), then exports a steno model directory.

    train_diar.py --config tools/train/configs/diar-small.yaml --out CKPT_DIR [--resume] [--time-budget-s S]
                  [--pool POOL.npz] [--export MODEL_DIR [--export-dtype f16]] [--eval-testset DIR]

The speaker pool (training voices x utterances, synthesized with espeak-ng and flite) is built once and cached
in the folder --pool (memory-mapped by the workers). Each call trains until max_steps or --time-budget-s, then saves CKPT_DIR/ckpt.pt (optionally in parts,
--split-mb); --resume continues from it. --export writes config.json + model.safetensors (f16 by default) from the
checkpoint. Progress lines go to stdout and CKPT_DIR/train.log.
"""
import argparse
import copy
import itertools
import json
import math
import multiprocessing as mp
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import ckpt  # noqa: E402
import diar_conversations as dc  # noqa: E402
from convert_nemo import build_sortformer_config  # noqa: E402
from steno_ref.modeldir import save_model_dir  # noqa: E402
from steno_ref.sortformer import Sortformer  # noqa: E402

PERMS = None


def log(msg, logf=None):
    line = f"[{time.strftime('%H:%M:%S')}] {msg}"
    print(line, flush=True)
    if logf:
        logf.write(line + "\n")
        logf.flush()


def model_configs(y, name="steno-sortformer-small"):
    """(inference config as config.json has it, training config with the yaml's dropouts)."""
    cfg = build_sortformer_config(y["model"], name, "2.5")
    train_cfg = copy.deepcopy(cfg)
    m = y["model"]
    for section, keys in (("encoder", ("dropout", "dropout_att", "dropout_pre_encoder")),
                          ("transformer_encoder", ("dropout",)), ("sortformer_modules", ("dropout",))):
        for k in keys:
            if k in m.get(section, {}):
                train_cfg[section][k] = m[section][k]
    return cfg, train_cfg


# ---------------------------------------------------------------------------------------------------------------
# the speaker pool and the conversation workers

def save_pool(directory, names, pool):
    """The pool as memory-mappable files: audio.npy (every utterance, int16, end to end), offsets.npy (utterance k
    is audio[offsets[k]:offsets[k+1]]), voice.npy (its voice's index) and voices.json (the voices' names)."""
    os.makedirs(directory, exist_ok=True)
    utterances = [(i, u) for i in sorted(pool) for u in pool[i]]
    np.save(os.path.join(directory, "audio.npy"), np.concatenate([u for _, u in utterances]).astype(np.int16))
    np.save(os.path.join(directory, "offsets.npy"), np.cumsum([0] + [len(u) for _, u in utterances]).astype(np.int64))
    np.save(os.path.join(directory, "voice.npy"), np.array([i for i, _ in utterances], dtype=np.int32))
    with open(os.path.join(directory, "voices.json"), "w", encoding="utf-8") as f:
        json.dump(names, f)


def load_pool(directory):
    """(names, {voice index: [int16 utterance views]}) over memory-mapped files: every worker shares the pages."""
    with open(os.path.join(directory, "voices.json"), encoding="utf-8") as f:
        names = json.load(f)
    audio = np.load(os.path.join(directory, "audio.npy"), mmap_mode="r")
    offsets = np.load(os.path.join(directory, "offsets.npy"))
    voice = np.load(os.path.join(directory, "voice.npy"))
    pool = {i: [] for i in range(len(names))}
    for k, i in enumerate(voice):
        pool[int(i)].append(audio[offsets[k]:offsets[k + 1]])
    return names, pool


def load_or_build_pool(directory, n_voices, per_voice, seed, jobs, with_flite, logf=None):
    """The training voices' pool in `directory` (synthesized and saved there the first time)."""
    if os.path.exists(os.path.join(directory, "voices.json")):
        names, pool = load_pool(directory)
        log(f"pool: {len(pool)} voices from {directory}", logf)
        return names, pool
    voice_list = dc.voices("train", n_voices, seed, with_flite)
    t0 = time.time()
    pool = dc.build_pool(voice_list, per_voice, seed, jobs)
    pool = {i: u for i, u in pool.items() if len(u) >= 3}
    names = [voice_list[i].name for i in sorted(pool)]
    pool = {k: pool[i] for k, i in enumerate(sorted(pool))}
    hours = sum(len(u) for us in pool.values() for u in us) / dc.SR / 3600
    log(f"pool: {len(pool)} voices, {hours:.2f} h synthesized in {time.time() - t0:.0f} s", logf)
    save_pool(directory, names, pool)
    return load_pool(directory)


_POOL = None
_VOICE_NAMES = None


def _init_worker(pool, names):
    global _POOL, _VOICE_NAMES
    _POOL, _VOICE_NAMES = pool, names


def _init_worker_from(directory):
    _init_worker(*reversed(load_pool(directory)))


def distinct_speakers(rng, names, n):
    """n pool keys whose voices differ (not the same voice at another pitch or rate)."""
    out, used = [], set()
    for k in rng.permutation(len(names)):
        voice = names[k].split(":")[1]
        if voice not in used:
            used.add(voice)
            out.append(int(k))
        if len(out) == n:
            break
    return out


def make_example(args):
    seed, tcfg = args
    rng = np.random.default_rng(seed)
    n = int(rng.integers(tcfg["speakers"][0], tcfg["speakers"][1] + 1))
    seconds = float(rng.uniform(*tcfg["seconds"]))
    audio, segs = dc.compose(rng, _POOL, distinct_speakers(rng, _VOICE_NAMES, n), seconds)
    audio = dc.augment(rng, audio)
    # int16 halves what goes back through the pool's pipe (the main process was the bottleneck at float32)
    return np.clip(np.round(audio * 32767.0), -32768, 32767).astype(np.int16), segs


# ---------------------------------------------------------------------------------------------------------------
# loss and scoring

def hybrid_loss(probs, targets, mask, sort_weight):
    """probs, targets [B, T, S], mask [B, T]. Sort loss: BCE against arrival order; PIL: the best permutation's
    BCE per clip (NeMo's hybrid)."""
    global PERMS
    s = probs.shape[-1]
    if PERMS is None or PERMS.shape[1] != s:
        PERMS = torch.tensor(list(itertools.permutations(range(s))), device=probs.device)
    p = probs.clamp(1e-6, 1 - 1e-6)
    m = mask.unsqueeze(-1).float()
    denom = m.sum(dim=(1, 2)).clamp(min=1) * s
    sort = (F.binary_cross_entropy(p, targets, reduction="none") * m).sum(dim=(1, 2)) / denom
    permuted = targets[:, :, PERMS]  # [B, T, P, S]
    bce = -(permuted * torch.log(p).unsqueeze(2) + (1 - permuted) * torch.log(1 - p).unsqueeze(2))
    pil = ((bce * m.unsqueeze(2)).sum(dim=(1, 3)) / denom.unsqueeze(1)).min(dim=1).values
    return (sort_weight * sort + (1 - sort_weight) * pil).mean(), sort.mean(), pil.mean()


def frame_der(probs, targets, mask):
    """Frame-level DER with the best permutation per clip (0.5 threshold, no collar): a fast training signal."""
    global PERMS
    hyp = (probs > 0.5).float()
    errors, speech = 0.0, 0.0
    for b in range(probs.shape[0]):
        t = int(mask[b].sum())
        h, r = hyp[b, :t], targets[b, :t]
        n_ref, n_hyp = r.sum(-1), h.sum(-1)
        best = None
        for perm in PERMS:
            correct = (h[:, perm] * r).sum(-1)
            e = (torch.maximum(n_ref, n_hyp) - correct).sum()
            best = e if best is None else torch.minimum(best, e)
        errors += float(best)
        speech += float(n_ref.sum())
    return errors / max(speech, 1.0)


# ---------------------------------------------------------------------------------------------------------------

WORKER_TIMEOUT_S = 300  # a batch of conversations takes a worker seconds; past this it is stuck, and we say so


def batches(pool_dir, tcfg, seed, start_step, jobs, prefetch=3):
    """Yields (step, [(audio, segments)]) with about batch_seconds padded seconds a batch; the workers compose
    `prefetch` batches ahead of the training step. Example i of step s is the same whatever the worker count.
    Workers come from a fork server (a clean process: forking one that holds torch's threads can deadlock) and map
    the pool's files."""
    per_batch = max(2, int(tcfg["batch_seconds"] / tcfg["seconds"][1]))
    ctx = mp.get_context("forkserver")
    workers = ctx.Pool(jobs, initializer=_init_worker_from, initargs=(pool_dir,))

    def submit(s):
        return workers.map_async(make_example, [(seed * 1_000_003 + s * 4099 + i, tcfg) for i in range(per_batch)])

    pending = [(s, submit(s)) for s in range(start_step, start_step + prefetch)]
    try:
        while True:
            step, job = pending.pop(0)
            pending.append((step + prefetch, submit(step + prefetch)))
            try:
                yield step, job.get(timeout=WORKER_TIMEOUT_S)
            except mp.TimeoutError:
                raise RuntimeError(f"the conversation workers gave no batch for step {step} in "
                                   f"{WORKER_TIMEOUT_S} s") from None
    finally:
        # The end (the trainer stops taking batches): the prefetched jobs finish and the workers leave on their
        # own. Pool.terminate() with jobs in flight can wait for good on a queue lock a worker holds (the smoke
        # test hung at the end of a run, under load); it stays the fallback for workers that are stuck.
        workers.close()
        for _, job in pending:
            job.wait(WORKER_TIMEOUT_S)
        if all(job.ready() for _, job in pending):
            workers.join()
        else:
            workers.terminate()


def to_tensors(examples, num_spks, device):
    lengths = [len(a) for a, _ in examples]
    audio = torch.zeros(len(examples), max(lengths))
    for i, (a, _) in enumerate(examples):
        audio[i, :len(a)] = torch.from_numpy(a.astype(np.float32) / 32768.0 if a.dtype == np.int16 else a)
    frames = [int(n // 160 // 8) + 1 for n in lengths]
    targets = torch.zeros(len(examples), max(frames), num_spks)
    for i, (a, segs) in enumerate(examples):
        y = dc.frame_targets(segs, frames[i], num_spks)
        targets[i, :frames[i]] = torch.from_numpy(y)
    return audio.to(device), torch.tensor(lengths, device=device), targets.to(device)


def forward(model, audio, lengths, dev):
    audio, _ = model.peak_normalise(audio, lengths)
    feats, flen = model.preprocessor(audio, lengths)
    feats = feats[:, :, :int(flen.max())]
    with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
        enc, enc_len = model.encoder(feats, flen)
        x = enc.transpose(1, 2)
        if model.sortformer_modules.encoder_proj is not None:
            x = model.sortformer_modules.encoder_proj(x)
        x = model.transformer_encoder(x, enc_len)
        logits = model.sortformer_modules.speaker_logits(x)
    return torch.sigmoid(logits.float()), enc_len


def lr_at(step, tcfg, rewarm_from=None):
    """Linear warmup, cosine decay to min_lr at max_steps; after a restart without optimizer moments
    (rewarm_from = the first step of the run), a 100-step linear re-warmup."""
    if step < tcfg["warmup"]:
        return tcfg["lr"] * (step + 1) / tcfg["warmup"]
    progress = min(1.0, (step - tcfg["warmup"]) / max(1, tcfg["max_steps"] - tcfg["warmup"]))
    lr = tcfg["min_lr"] + 0.5 * (tcfg["lr"] - tcfg["min_lr"]) * (1 + math.cos(math.pi * progress))
    if rewarm_from is not None:
        lr *= min(1.0, (step - rewarm_from + 1) / 100)
    return lr


def validation_set(seed, count, tcfg, with_flite):
    """Conversations of held-out voices, fixed for the run (synthesized once, kept in memory)."""
    held = dc.voices("test", 13, seed, with_flite)
    pool = dc.build_pool(held, 6 if count >= 8 else 2, seed + 1)
    kept = [i for i in sorted(pool) if pool[i]]
    names = [held[i].name for i in kept]
    pool = {k: pool[i] for k, i in enumerate(kept)}
    _init_worker(pool, names)
    return [make_example((10_000_000 + i, tcfg)) for i in range(count)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--time-budget-s", type=float, default=None)
    ap.add_argument("--pool", default=None, help="folder caching the synthesized speaker pool (default: OUT/pool)")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--synthesizers", default="espeak,flite",
                    help="voices for the pool: espeak and/or flite (flite needs its 13 MB library at hand)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-steps", type=int, default=None, help="override train.max_steps")
    ap.add_argument("--split-mb", type=float, default=None)
    ap.add_argument("--optim-state", choices=ckpt.OPTIM_MODES, default="int8")
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--val-count", type=int, default=24, help="held-out conversations scored every --eval-every")
    ap.add_argument("--init-model", default=None, help="start from a steno model directory's weights")
    ap.add_argument("--start-step", type=int, default=0, help="with --init-model: the step the schedule resumes at")
    ap.add_argument("--export", default=None, help="write a steno model directory from the checkpoint and stop")
    ap.add_argument("--export-dtype", choices=["f32", "f16", "bf16"], default="f16")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args(argv)

    start_time = time.time()
    with open(args.config, encoding="utf-8") as f:
        y = yaml.safe_load(f)
    tcfg = dict(y["train"])
    if args.max_steps:
        tcfg["max_steps"] = args.max_steps
    cfg, train_cfg = model_configs(y)
    dev = torch.device(args.device)
    torch.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    ckpt_path = os.path.join(args.out, "ckpt.pt")
    model = Sortformer(train_cfg).to(dev)
    nparams = sum(p.numel() for n, p in model.named_parameters() if "hidden_to_spks" not in n or "single" in n)
    opt = torch.optim.AdamW(model.parameters(), lr=tcfg["lr"], betas=(0.9, 0.98),
                            weight_decay=tcfg["weight_decay"])
    step, rewarm_from = 0, None
    if args.init_model:  # a model directory's weights (e.g. the last export), the schedule from --start-step
        from steno_ref import safetensors_io
        from steno_ref.modeldir import load_weights
        arrays, _, _ = safetensors_io.load(os.path.join(args.init_model, "model.safetensors"))
        load_weights(model, arrays)
        model.to(dev)
        step = rewarm_from = args.start_step
    elif (args.resume or args.export) and ckpt.resolve(ckpt_path):
        state = ckpt.load_checkpoint(ckpt_path)
        model.load_state_dict(state["model"])
        if state.get("optim") is not None and not args.export:
            opt.load_state_dict(ckpt.decompress_optimizer(state["optim"], dev))
        step = int(state["step"])
        if state.get("optim") is None:
            rewarm_from = step
    elif args.export:
        raise SystemExit(f"--export: no checkpoint in {args.out}")

    if args.export:
        sd = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        save_model_dir(args.export, cfg, sd, None, args.export_dtype)
        print(f"wrote {args.export} (step {step}, {nparams:,} parameters, {args.export_dtype})")
        return 0

    with open(os.path.join(args.out, "train.log"), "a", encoding="utf-8") as logf:
        return train(args, tcfg, cfg, y, model, opt, step, rewarm_from, nparams, dev, ckpt_path, start_time, logf)


def train(args, tcfg, cfg, y, model, opt, step, rewarm_from, nparams, dev, ckpt_path, start_time, logf):
    log(f"model: {nparams:,} parameters; step {step}; device {dev}", logf)
    with_flite = "flite" in args.synthesizers.split(",")
    pool_dir = args.pool or os.path.join(args.out, "pool")
    load_or_build_pool(pool_dir, tcfg["pool_voices"], tcfg["pool_per_voice"], args.seed, args.jobs, with_flite, logf)
    val = validation_set(args.seed, args.val_count, {**tcfg, "seconds": [30, 60]}, with_flite)
    val_batch = to_tensors(val, cfg["sortformer_modules"]["num_spks"], dev)
    jobs = args.jobs or max(1, (os.cpu_count() or 2) - 1)
    spk = cfg["sortformer_modules"]["num_spks"]
    seen_s, t_last, losses = 0.0, time.time(), []
    for step, examples in batches(pool_dir, tcfg, args.seed, step, jobs):
        if step >= tcfg["max_steps"] or (args.time_budget_s and time.time() - start_time > args.time_budget_s):
            break
        model.train()
        for g in opt.param_groups:
            g["lr"] = lr_at(step, tcfg, rewarm_from)
        audio, lengths, targets = to_tensors(examples, spk, dev)
        probs, enc_len = forward(model, audio, lengths, dev)
        t = min(probs.shape[1], targets.shape[1])
        mask = torch.arange(t, device=dev)[None, :] < enc_len[:, None]
        loss, sort, pil = hybrid_loss(probs[:, :t], targets[:, :t], mask, tcfg["sort_loss_weight"])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), tcfg["grad_clip"])
        opt.step()
        losses.append(float(loss.detach()))
        seen_s += float(lengths.sum()) / dc.SR
        if (step + 1) % 50 == 0:
            rate = 50 / (time.time() - t_last)
            t_last = time.time()
            log(f"step {step + 1} loss {np.mean(losses):.4f} (sort {float(sort):.4f}, pil {float(pil):.4f}) "
                f"lr {lr_at(step, tcfg, rewarm_from):.2e} {rate:.2f} steps/s, {seen_s / 3600:.1f} h seen", logf)
            losses = []
        if (step + 1) % args.eval_every == 0:
            model.eval()
            with torch.no_grad():
                vp, vlen = forward(model, val_batch[0], val_batch[1], dev)
                vt = min(vp.shape[1], val_batch[2].shape[1])
                vmask = torch.arange(vt, device=dev)[None, :] < vlen[:, None]
                log(f"step {step + 1} held-out frame DER {100 * frame_der(vp[:, :vt], val_batch[2][:, :vt], vmask):.2f} %",
                    logf)
    state = {"model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
             "optim": ckpt.compress_optimizer(opt.state_dict(), args.optim_state), "step": step,
             "config": y}
    ckpt.save_checkpoint(state, ckpt_path, args.split_mb)
    log(f"saved {ckpt_path} at step {step} ({time.time() - start_time:.0f} s)", logf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
