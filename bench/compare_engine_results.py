#!/usr/bin/env python3
"""Side-by-side tables of the engine benchmark from its result files only: steno (cuda_engine_bench's Google
Benchmark JSON) against the PyTorch reference (tools/bench/torch_engine_bench.py's JSON) and NeMo's anchor
figures, with the engine's targets checked (both in docs/benchmarks.md). Writes Markdown.

  python3 bench/compare_engine_results.py RESULTS_DIR [--prefix h200-] [--out FILE.md]

RESULTS_DIR holds PREFIXcuda-engine-{0.6b,tiny}.json and PREFIXtorch-engine-{0.6b,tiny}.json (a missing file
leaves its columns empty), and optionally PREFIXengine-machine.txt and PREFIXmodel-0.6b.txt (the output of
`steno model random`, with its calibration line), all written by bench/run_gpu_engine_bench.sh. Encoder TFLOP/s
of the torch arm use steno's FLOP count for the same shape (the `gflop` counter): the same model and frames, so
the same work.
"""
import argparse
import json
import os
import re
import sys

MODELS = ("0.6b", "tiny")
SHAPES = ("b1x45s", "b8x45s", "b32x45s", "b128x10s")
SHAPE_TEXT = {"b1x45s": "1 × 45 s", "b8x45s": "8 × 45 s", "b32x45s": "32 × 45 s", "b128x10s": "128 × 10 s"}
LOOPS = ("persistent", "graph-while", "graph-unrolled", "eager")
# The loop the Transcriber decodes with at each shape: the persistent kernel up to 32 rows
# (CudaDecodeOptions::persistent_max_rows), the graph loop beyond. Results older than the persistent kernel have
# only the graph loop.
DEFAULT_LOOP = {"b1x45s": "persistent", "b8x45s": "persistent", "b32x45s": "persistent", "b128x10s": "graph-while"}


def default_decoder(s, sh):
    """The decoder benchmark of the loop end_to_end uses at shape sh (the graph loop where it is missing)."""
    return s.get(f"decoder/{DEFAULT_LOOP[sh]}/{sh}") or s.get(f"decoder/graph-while/{sh}")
# NeMo's own modules on the same H200, 0.6b shapes, bf16, full CUDA-graph decoding (docs/benchmarks.md).
NEMO = {"b1x45s": {"end_to_end_ms": 65.0, "encoder_ms": 35.9, "decoder_ms": 28.8},
        "b8x45s": {"end_to_end_ms": 98.0},
        "b32x45s": {"end_to_end_ms": 264.0, "encoder_ms": 190.0, "decoder_ms": 74.0},
        "b128x10s": {"end_to_end_ms": 140.0}}
NEMO_GEMM_PEAK = 790.0


def load_json(path):
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def base_name(row):
    """Google Benchmark's name without the /real_time, /repeats:N, /iterations:N decorations."""
    parts = row.get("run_name", row["name"]).split("/")
    return "/".join(p for p in parts if p != "real_time" and not re.match(r"(repeats|iterations|min_time):", p))


def steno_rows(gb):
    """name -> the row to quote: the median aggregate if the run had repetitions, else the (last) plain row."""
    rows = {}
    if not gb:
        return rows
    for r in gb.get("benchmarks", []):
        if r.get("error_occurred"):
            continue
        name = base_name(r)
        if r.get("run_type") == "aggregate":
            if r.get("aggregate_name") == "median":
                rows[name] = dict(r, _median=True)
        elif not rows.get(name, {}).get("_median"):
            rows[name] = r
    return rows


def ms(row):
    """A row's real time in milliseconds."""
    if row is None:
        return None
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[row.get("time_unit", "ns")]
    return row["real_time"] * scale


def fmt(v, digits=1, suffix=""):
    if v is None:
        return "—"
    if isinstance(v, float) and abs(v) >= 1000:
        return f"{v:,.0f}{suffix}"
    return f"{v:.{digits}f}{suffix}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def pct(v):
    return None if v is None else 100 * v


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def op_breakdown(s):
    """The encoder's GPU time by op (encoder_ops/ rows: CUDA events around every op), ms per pass and share."""
    prof = {sh: s.get(f"encoder_ops/{sh}") for sh in SHAPES}
    if not any(prof.values()):
        return []
    ops = sorted({k[3:-3] for r in prof.values() if r for k in r if k.startswith("op_") and k.endswith("_ms")},
                 key=lambda o: -max((r or {}).get(f"op_{o}_ms", 0) for r in prof.values()))
    rows = []
    for o in ops:
        row = [f"`{o}`"]
        for sh in SHAPES:
            r = prof[sh] or {}
            v, total = r.get(f"op_{o}_ms"), r.get("ops_total_ms")
            calls = r.get(f"op_{o}_calls")
            row.append("—" if v is None else
                       f"{fmt(v, 2)} ({fmt(pct(ratio(v, total)), 0, ' %')}, {fmt(calls, 0)}×)")
        rows.append(row)
    rows.append(["all ops"] + [fmt((prof[sh] or {}).get("ops_total_ms"), 2) for sh in SHAPES])
    return ["Encoder time by op (a profiled pass: CUDA events around every op; ms per pass, share, calls):", "",
            table(["op"] + [SHAPE_TEXT[sh] for sh in SHAPES], rows), ""]


def model_section(model, steno_gb, torch_res, notes):
    s = steno_rows(steno_gb)
    t = {x["name"]: x for x in (torch_res or {}).get("shapes", [])}
    tmix = {x["batch"]: x for x in (torch_res or {}).get("mix", [])}
    anchors = model == "0.6b"
    lines = [f"## `{model}`", ""]
    ctx = (steno_gb or {}).get("context", {})
    if ctx:
        lines.append(f"steno: {ctx.get('model_dir', '?')}, {ctx.get('dtype', '?')}; torch: "
                     f"{(torch_res or {}).get('context', {}).get('mode', '—')}.")
    if notes:
        lines.append(notes)
    lines.append("")

    # End to end
    rows, speedups = [], {}
    for sh in SHAPES:
        e2e = ms(s.get(f"end_to_end/{sh}"))
        te = t.get(sh, {}).get("end_to_end_ms")
        speedups[sh] = ratio(te, e2e)
        row = [SHAPE_TEXT[sh], fmt(e2e), fmt(s.get(f"end_to_end/{sh}", {}).get("rtfx"), 0), fmt(te),
               fmt(t.get(sh, {}).get("rtfx"), 0), fmt(speedups[sh], 2, "×")]
        if anchors:
            row += [fmt(NEMO[sh]["end_to_end_ms"]), fmt(ratio(NEMO[sh]["end_to_end_ms"], e2e), 2, "×")]
        rows.append(row)
    header = ["batch", "steno ms", "steno RTFx", "torch ms", "torch RTFx", "torch / steno"]
    if anchors:
        header += ["NeMo anchor ms", "NeMo / steno"]
    where = "GPU" if any("(GPU)" in (s.get(f"features/{sh}") or {}).get("label", "") for sh in SHAPES) else "CPU"
    lines += [f"End to end (audio in, transcripts out; steno's front end on the {where}, torch's on the GPU):", "",
              table(header, rows), ""]

    # Stages
    rows = []
    for sh in SHAPES:
        enc = s.get(f"encoder/{sh}")
        tt = t.get(sh, {})
        gflop = enc.get("gflop") if enc else None
        t_tflops = gflop / tt["encoder_ms"] if gflop and tt.get("encoder_ms") else None
        dec = {lp: ms(s.get(f"decoder/{lp}/{sh}")) for lp in LOOPS}
        row = [SHAPE_TEXT[sh], fmt(ms(s.get(f"features/{sh}")), 2), fmt(tt.get("features_ms"), 2),
               fmt(ms(enc), 2), fmt(enc.get("tflops") if enc else None, 0),
               fmt(pct(enc.get("frac_of_peak")) if enc else None, 0, " %"), fmt(tt.get("encoder_ms"), 2),
               fmt(t_tflops, 0), fmt(dec["persistent"], 2), fmt(dec["graph-while"], 2), fmt(dec["graph-unrolled"], 2),
               fmt(dec["eager"], 2), fmt(tt.get("decoder_ms"), 2),
               fmt(pct(ratio(ms(default_decoder(s, sh)), ms(enc))), 0, " %")]
        rows.append(row)
    lines += ["Stages, ms (steno encoder on device-resident features; decoder per batch, hypotheses on the host; "
              "TFLOP/s from the analytic count in cuda_engine_bench.cc):", "",
              table(["batch", "features steno", "features torch", "encoder steno", "TFLOP/s", "of peak",
                     "encoder torch", "torch TFLOP/s", "decoder persistent", "graph-while", "graph-unrolled",
                     "eager (no graphs)", "decoder torch", "decoder (default loop) / encoder"], rows), ""]
    if anchors:
        lines += ["NeMo anchor stages: 1 × 45 s features + encoder 35.9 ms, decoding 28.8 ms; 32 × 45 s encoder "
                  "190 ms (≈ 132 TFLOP/s by NeMo's count; 120 by this one), decoding 74 ms.", ""]

    lines += op_breakdown(s)

    rows = []
    for sh in SHAPES:
        d = default_decoder(s, sh) or {}
        tt = t.get(sh, {})
        rows.append([SHAPE_TEXT[sh], fmt(d.get("tokens_per_frame"), 3), fmt(d.get("steps_per_frame"), 3),
                     fmt(tt.get("tokens_per_frame"), 3), fmt(tt.get("steps_per_frame"), 3),
                     "persistent" if d.get("persistent_blocks") or d.get("persistent_grid") else
                     "graph-while" if d.get("while_node") == 1 else ("graph-unrolled (fallback)" if d else "—")])
    lines += ["Decoding work (tokens and joint steps per encoder frame; bf16 on both sides):", "",
              table(["batch", "steno tokens/frame", "steno steps/frame", "torch tokens/frame", "torch steps/frame",
                     "loop"], rows), ""]

    rows = []
    for b in (64, 128):
        r = s.get(f"offline_mix/b{b}")
        tr = tmix.get(b, {})
        rows.append([str(b), fmt(r.get("rtfx") if r else None, 0), fmt(ms(r) / 1e3 if r else None, 2),
                     fmt(tr.get("rtfx"), 0), fmt(tr.get("wall_s"), 2),
                     fmt(ratio(r.get("rtfx") if r else None, tr.get("rtfx")), 2, "×")])
    lines += ["Offline `mix` (1,000 clips, sorted, ≈ 7,400 s of audio):", "",
              table(["batch", "steno RTFx", "steno s", "torch RTFx", "torch s", "steno / torch"], rows), ""]
    stage_ratios = {}
    for sh in SHAPES:
        tt = t.get(sh, {})
        stage_ratios[sh] = (ratio(tt.get("encoder_ms"), ms(s.get(f"encoder/{sh}"))),
                            ratio(tt.get("decoder_ms"), ms(default_decoder(s, sh))))
    mix_ratios = {b: ratio((s.get(f"offline_mix/b{b}") or {}).get("rtfx"), tmix.get(b, {}).get("rtfx"))
                  for b in (64, 128)}
    return lines, s, (speedups, stage_ratios, mix_ratios)


def targets(s, peak):
    """The engine's targets on the 0.6b run (docs/benchmarks.md): (text, measured, ok) triples."""
    e32, e1, e128 = (ms(s.get(f"end_to_end/{x}")) for x in ("b32x45s", "b1x45s", "b128x10s"))
    enc32 = s.get("encoder/b32x45s")
    dec32 = ms(default_decoder(s, "b32x45s"))
    rtfx128 = s.get("end_to_end/b128x10s", {}).get("rtfx")
    frac = enc32.get("frac_of_peak") if enc32 else None
    frac = frac if frac else None  # 0 when no peak was measured
    dec_share = ratio(dec32, ms(enc32))
    out = [("32 × 45 s end to end ≤ 105 ms", fmt(e32, 1, " ms"), e32 is not None and e32 <= 105),
           ("128 × 10 s RTFx ≥ 18,000", fmt(rtfx128, 0), rtfx128 is not None and rtfx128 >= 18000),
           ("1 × 45 s end to end ≤ 25 ms", fmt(e1, 1, " ms"), e1 is not None and e1 <= 25),
           ("encoder ≥ 40 % of the bf16 GEMM peak (32 × 45 s)",
            f"{fmt(pct(frac), 0, ' %')} of {fmt(peak, 0)} TFLOP/s",
            frac is not None and frac >= 0.4),
           ("decoding ≤ 15 % of encoder time (32 × 45 s, the default loop)", fmt(pct(dec_share), 0, " %"),
            dec_share is not None and dec_share <= 0.15)]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("--prefix", default="")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    d, pre = args.results, args.prefix
    steno = {m: load_json(os.path.join(d, f"{pre}cuda-engine-{m}.json")) for m in MODELS}
    torch_ = {m: load_json(os.path.join(d, f"{pre}torch-engine-{m}.json")) for m in MODELS}
    if not any(steno.values()) and not any(torch_.values()):
        sys.exit(f"no result files in {d}")

    lines = ["# Engine benchmark on the GPU: steno, PyTorch and NeMo side by side", ""]
    gb_ctx = next((g["context"] for g in steno.values() if g), {})
    t_ctx = next((t["context"] for t in torch_.values() if t), {})
    lines.append(f"GPU: {gb_ctx.get('gpu', t_ctx.get('device', '?'))}; host {gb_ctx.get('host_name', '?')}, "
                 f"{gb_ctx.get('num_cpus', '?')} CPUs; run {gb_ctx.get('date', t_ctx.get('date', '?'))}; "
                 f"torch {t_ctx.get('torch', '—')} (CUDA {t_ctx.get('cuda', '—')}).")
    machine = os.path.join(d, f"{pre}engine-machine.txt")
    if os.path.exists(machine):
        with open(machine, encoding="utf-8") as f:
            commit = next((line.split(":", 1)[1].strip() for line in f if line.startswith("steno commit:")), None)
        if commit:
            lines.append(f"steno commit: {commit}.")
    peak = None
    for m in MODELS:
        row = steno_rows(steno[m]).get("gemm_peak")
        if row:
            peak = row.get("tflops")
            break
    lines += [f"bf16 GEMM peak measured in the same run (8192³ through ops::gemm): {fmt(peak, 0)} TFLOP/s "
              f"(protocol figure ≈ {NEMO_GEMM_PEAK:.0f}).", ""]
    calib = ""
    cal_file = os.path.join(d, f"{pre}model-0.6b.txt")
    if os.path.exists(cal_file):
        with open(cal_file, encoding="utf-8") as f:
            hit = [line.strip() for line in f if line.startswith("joint calibrated")]
        if hit:
            calib = ("`0.6b` model: random weights (`steno model random --like configs/parakeet-tdt-0.6b-v2.json "
                     "--token-rate 0.4`, calibrated on the benchmark's first 8 clips of 45 s and 16 of 10 s), "
                     + hit[0] + " (f32, on the calibration clips together; the bf16 decoding work of each "
                     "shape is below).")

    all_speedups = {}
    s06 = {}
    for m in MODELS:
        if not steno[m] and not torch_[m]:
            continue
        sec, s, ratios = model_section(m, steno[m], torch_[m], calib if m == "0.6b" else
                                         "`tiny`: the bundled model (trained weights).")
        lines += sec
        all_speedups[m] = ratios
        if m == "0.6b":
            s06 = s

    if s06:
        lines += ["## Targets (`0.6b`, NeMo anchor on the same H200)", "",
                  table(["target", "measured", "met"], [[a, b, "yes" if ok else "**no**"]
                                                         for a, b, ok in targets(s06, peak)]), ""]
    lines += ["## Closing note: steno against PyTorch at the same batch sizes", ""]
    for m, (sp, stages, mix) in all_speedups.items():
        parts = [f"{SHAPE_TEXT[sh]} {fmt(v, 2, '×')}" for sh, v in sp.items()]
        parts += [f"mix batch {b} {fmt(v, 2, '×')}" for b, v in mix.items()]
        values = list(sp.values()) + list(mix.values())
        known = [v for v in values if v is not None]
        verdict = ("steno is faster at every batch size" if known and len(known) == len(values) and min(known) > 1
                   else "steno is NOT faster at every batch size" if known else "no comparison")
        lines.append(f"- `{m}` end to end, torch time / steno time (mix: steno RTFx / torch RTFx): "
                     f"{', '.join(parts)}: {verdict}.")
        lines.append("  Encoder / decoder alone (torch / steno, the default loop): " + ", ".join(
            f"{SHAPE_TEXT[sh]} {fmt(e, 2, '×')} / {fmt(d_, 2, '×')}" for sh, (e, d_) in stages.items()) + ".")
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
