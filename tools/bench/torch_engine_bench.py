#!/usr/bin/env python3
"""The engine benchmark's `torch` arm (docs/benchmarks.md): the same model directory in the PyTorch
reference (tools/steno_ref), on the same audio and batch shapes as bench/cuda_engine_bench.cc, eager, with
bf16 autocast around the encoder and the decoder (the front end in f32, as NeMo runs it).

  python3 tools/bench/torch_engine_bench.py --model DIR --workload DIR --out FILE.json [--model-name NAME]
      [--device cuda] [--dtype bf16|f16|f32] [--repeats 5] [--mix-repeats 2] [--no-mix] [--shapes b1x45s,...]

--workload is what `cuda_engine_bench --export_workload=DIR` wrote: speech.f32 (the test clips joined into one
stream) and workload.json (the shapes, the clip rule and the sorted `mix` lengths). Clip i of n samples is
stream[(i * clip_offset_samples + k) mod len(stream)], k < n, exactly as the C++ benchmark cuts it.

Each batch shape runs once untimed, then --repeats times; every stage is timed on the host clock between
torch.cuda.synchronize() calls (wall time, as the C++ side's real_time) and, on CUDA, with CUDA events (GPU
time); the JSON holds every run and the medians. Stages: features = the padded PCM copied to the device and the
log-mel front end; encoder; decoder = greedy TDT decoding with the hypotheses copied back to the host;
end_to_end = their sum in the same run (nothing overlaps: each stage waits for the previous one).

The decoder is NeMo's label-looping greedy search the way its PyTorch path runs without CUDA graphs
(GreedyBatchedTDTLabelLoopingComputer.torch_impl): all state on the device, one host sync per loop test
(`.any()`), labels written into a device tensor. steno_ref.decoding.greedy_tdt_batch is the same search
written for readability (it reads every emitted label back to the host); greedy_tdt_device gives the same
tokens (checked by tools/tests/test_torch_engine_bench.py).
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time

import numpy as np
import torch

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOOLS)
from steno_ref.modeldir import load_model_dir  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": None}


def log(msg):
    print(f"[torch-bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---- workload ------------------------------------------------------------------------------------------------

def load_workload(path):
    with open(os.path.join(path, "workload.json"), encoding="utf-8") as f:
        w = json.load(f)
    w["speech"] = np.fromfile(os.path.join(path, w["stream"]), dtype="<f4")
    if w["speech"].size != w["stream_samples"]:
        raise ValueError(f"{path}: speech stream has {w['speech'].size} samples, workload.json says "
                         f"{w['stream_samples']}")
    return w


def cut_clip(w, index, samples):
    s = w["speech"]
    start = (index * int(w["clip_offset_samples"])) % s.size
    return np.take(s, np.arange(start, start + samples) % s.size)


# ---- decoding ------------------------------------------------------------------------------------------------

@torch.no_grad()
def greedy_tdt_device(model, encoded, enc_lengths):
    """encoded [B, d, T], enc_lengths [B] -> (tokens [B, cap] int64 on the device, counts [B], joint steps).
    Same search and results as steno_ref.decoding.greedy_tdt_batch (tokens only), state kept on the device."""
    joint, decoder = model.joint, model.decoder
    dev = encoded.device
    B = encoded.size(0)
    blank = decoder.blank
    durations = torch.tensor(model.durations, dtype=torch.long, device=dev)
    nd = len(model.durations)
    max_symbols = model.max_symbols

    enc_proj = joint.enc(encoded.transpose(1, 2))  # [B, T, J], projected once
    lengths = enc_lengths.to(dev).long()
    T = enc_proj.size(1)
    cap = T * (max_symbols or 1) + 1  # the most tokens a clip can emit
    last_timestep = (lengths - 1).clamp(min=0)
    bidx = torch.arange(B, device=dev)
    tokens = torch.zeros(B, cap, dtype=torch.long, device=dev)
    counts = torch.zeros(B, dtype=torch.long, device=dev)
    t = torch.zeros(B, dtype=torch.long, device=dev)
    t_cur = torch.zeros(B, dtype=torch.long, device=dev)
    last_ts = torch.full((B,), -1, dtype=torch.long, device=dev)
    last_cnt = torch.zeros(B, dtype=torch.long, device=dev)
    steps = torch.zeros((), dtype=torch.long, device=dev)
    active = t < lengths

    labels = torch.full((B,), blank, dtype=torch.long, device=dev)  # SOS = blank -> zero embedding
    state = decoder.initial_state(B)
    g, state = decoder.predict(labels, state)
    dec_out = joint.pred(g)

    def step(at):
        logits = joint.joint_after_projection(enc_proj[bidx, torch.minimum(at, last_timestep)], dec_out,
                                              log_softmax=False)
        lab = logits[:, :-nd].argmax(dim=-1)
        dur = durations[logits[:, -nd:].argmax(dim=-1)]
        return lab, dur.masked_fill((dur == 0) & (lab == blank), 1)  # blank never stays on its frame

    while bool(active.any()):
        active_prev = active
        labels, dur = step(t)
        steps += active.sum()
        t_cur = t
        t = t + dur * active
        active = t < lengths
        advance = active & (labels == blank)
        while bool(advance.any()):  # rows that got blank look on from their new frame
            steps += advance.sum()
            more, dur = step(t)
            t_cur = torch.where(advance, t, t_cur)
            labels = torch.where(advance, more, labels)
            t = torch.where(advance, t + dur, t)
            active = t < lengths
            advance = active & (labels == blank)
        found = active_prev & (labels != blank)
        slot = counts.clamp(max=cap - 1)
        tokens[bidx, slot] = torch.where(found, labels, tokens[bidx, slot])
        counts = counts + found.long()
        last_cnt = torch.where(found, torch.where(last_ts == t_cur, last_cnt + 1, torch.ones_like(t)), last_cnt)
        last_ts = torch.where(found, t_cur, last_ts)
        g_new, state_new = decoder.predict(labels, state)
        dec_new = joint.pred(g_new)
        keep = found.view(1, B, 1)
        state = (torch.where(keep, state_new[0], state[0]), torch.where(keep, state_new[1], state[1]))
        dec_out = torch.where(found.unsqueeze(-1), dec_new, dec_out)
        if max_symbols is not None:  # after max_symbols tokens on one frame (duration 0), step one frame
            t = t + (active & found & (last_cnt >= max_symbols) & (last_ts == t)).long()
            active = t < lengths
    return tokens, counts, steps


def tokens_to_lists(tokens, counts):
    tokens, counts = tokens.cpu(), counts.cpu()
    return [tokens[b, :int(counts[b])].tolist() for b in range(tokens.size(0))]


# ---- timing --------------------------------------------------------------------------------------------------

class Timer:
    """Wall time between synchronizations, plus GPU time from CUDA events on CUDA."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def __call__(self, fn):
        self.sync()
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        t0 = time.perf_counter()
        result = fn()
        if self.cuda:
            end.record()
        self.sync()
        wall = (time.perf_counter() - t0) * 1e3
        gpu = start.elapsed_time(end) if self.cuda else wall
        return result, wall, gpu


def autocast(device, dtype):
    if DTYPES[dtype] is None:
        return torch.autocast(device.type, enabled=False)
    return torch.autocast(device.type, dtype=DTYPES[dtype])


@torch.no_grad()
def run_batch(model, clips, device, dtype, timer):
    """One transcription of `clips` (numpy f32): stage times (wall ms, GPU ms), token lists, encoder frames."""
    lengths = torch.tensor([len(c) for c in clips], dtype=torch.long)
    audio = torch.zeros(len(clips), int(lengths.max()))
    for i, c in enumerate(clips):
        audio[i, :len(c)] = torch.from_numpy(c)

    def features():
        with torch.autocast(device.type, enabled=False):  # NeMo's front end runs in f32
            return model.preprocessor(audio.to(device), lengths.to(device))

    (feats, feat_len), f_wall, f_gpu = timer(features)

    def encode():
        with autocast(device, dtype):
            return model.encoder(feats, feat_len)

    (enc, enc_len), e_wall, e_gpu = timer(encode)

    def decode():
        with autocast(device, dtype):
            tokens, counts, steps = greedy_tdt_device(model, enc, enc_len)
        return tokens_to_lists(tokens, counts), int(steps)

    (hyps, steps), d_wall, d_gpu = timer(decode)
    frames = int(enc_len.sum())
    return {"features_ms": f_wall, "encoder_ms": e_wall, "decoder_ms": d_wall,
            "end_to_end_ms": f_wall + e_wall + d_wall, "features_gpu_ms": f_gpu, "encoder_gpu_ms": e_gpu,
            "decoder_gpu_ms": d_gpu, "tokens": sum(len(h) for h in hyps), "steps": steps, "frames": frames,
            "padded_frames": int(enc.size(2))}, hyps


def median(runs, key):
    return statistics.median(r[key] for r in runs)


def bench_shape(model, w, shape, device, dtype, repeats, timer):
    n = int(round(shape["seconds"] * w["sample_rate"]))
    clips = [cut_clip(w, i, n) for i in range(shape["batch"])]
    run_batch(model, clips, device, dtype, timer)  # warm-up: cuBLAS handles, allocator, kernels
    runs = [run_batch(model, clips, device, dtype, timer)[0] for _ in range(repeats)]
    audio = shape["batch"] * shape["seconds"]
    out = {"name": shape["name"], "batch": shape["batch"], "seconds": shape["seconds"], "audio_seconds": audio,
           "repeats": repeats, "runs": runs}
    for k in ("features_ms", "encoder_ms", "decoder_ms", "end_to_end_ms", "features_gpu_ms", "encoder_gpu_ms",
              "decoder_gpu_ms"):
        out[k] = median(runs, k)
    out["rtfx"] = audio / (out["end_to_end_ms"] / 1e3)
    out["tokens_per_frame"] = runs[0]["tokens"] / runs[0]["frames"]
    out["steps_per_frame"] = runs[0]["steps"] / runs[0]["frames"]
    out["padded_frames"] = runs[0]["padded_frames"]
    return out


def bench_mix(model, w, batch, device, dtype, repeats, timer):
    lengths = w["mix_lengths_samples"]
    clips = [cut_clip(w, i, n) for i, n in enumerate(lengths)]
    audio = sum(lengths) / w["sample_rate"]

    def one_pass():
        t0 = time.perf_counter()
        stages = {"features_ms": 0.0, "encoder_ms": 0.0, "decoder_ms": 0.0, "tokens": 0, "frames": 0}
        for b in range(0, len(clips), batch):
            r, _ = run_batch(model, clips[b:b + batch], device, dtype, timer)
            for k in stages:
                stages[k] += r[k]
        stages["wall_s"] = time.perf_counter() - t0
        return stages

    one_pass()  # warm-up
    runs = [one_pass() for _ in range(repeats)]
    wall = statistics.median(r["wall_s"] for r in runs)
    return {"batch": batch, "clips": len(clips), "audio_seconds": audio, "repeats": repeats, "runs": runs,
            "wall_s": wall, "rtfx": audio / wall, "tokens_per_frame": runs[0]["tokens"] / runs[0]["frames"]}


# ---- main ----------------------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--model-name", default=None)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--mix-repeats", type=int, default=2)
    ap.add_argument("--no-mix", action="store_true")
    ap.add_argument("--shapes", default=None, help="comma-separated shape names (default: all of workload.json)")
    args = ap.parse_args(argv)

    device = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = False  # f32 means f32, as on the C++ side
    w = load_workload(args.workload)
    t0 = time.perf_counter()
    model, cfg = load_model_dir(args.model)
    model = model.to(device).eval()
    name = args.model_name or os.path.basename(os.path.normpath(args.model))
    log(f"loaded {name} ({sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters) on {device} in "
        f"{time.perf_counter() - t0:.1f} s")
    timer = Timer(device)
    result = {"context": {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(), "python": platform.python_version(), "torch": torch.__version__,
        "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "model": name, "model_dir": os.path.abspath(args.model), "dtype": args.dtype,
        "mode": f"eager, {args.dtype} autocast (encoder, decoder), f32 front end" if DTYPES[args.dtype]
        else "eager, f32", "threads": torch.get_num_threads(), "command": " ".join(sys.argv)},
        "shapes": [], "mix": []}
    wanted = set(args.shapes.split(",")) if args.shapes else None
    for shape in w["shapes"]:
        if wanted and shape["name"] not in wanted:
            continue
        r = bench_shape(model, w, shape, device, args.dtype, args.repeats, timer)
        result["shapes"].append(r)
        log(f"{name} {shape['name']}: features {r['features_ms']:.2f} ms, encoder {r['encoder_ms']:.2f} ms, "
            f"decoder {r['decoder_ms']:.2f} ms, end to end {r['end_to_end_ms']:.2f} ms (RTFx {r['rtfx']:.0f}), "
            f"{r['tokens_per_frame']:.3f} tokens/frame")
    if not args.no_mix:
        for batch in w["mix_batches"]:
            r = bench_mix(model, w, batch, device, args.dtype, args.mix_repeats, timer)
            result["mix"].append(r)
            log(f"{name} mix batch {batch}: {r['wall_s']:.2f} s for {r['audio_seconds']:.0f} s, RTFx {r['rtfx']:.0f}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
