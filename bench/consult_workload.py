#!/usr/bin/env python3
"""The `consult` workload: synthetic consultations, speaker-attributed through `steno serve`.

    consult_workload.py make DIR [--conversations 8] [--seed 5]
    consult_workload.py run DIR --port P [--concurrency 2] [--out RESULT.json] [--steno STENO]

make: DIR/conv-NN.{wav,rttm,txt}, each a conversation of 2 to 4 speakers (uniform) lasting a log-normal length
(median 4 minutes, sigma 0.8, clipped to 1-30 minutes), drawn from a fixed seed and composed by
bench/make_long_conversation.py (held-out espeak-ng voices, its own seed per conversation); DIR/workload.json lists
them.

run: each conversation sent once to POST /v1/audio/transcriptions with response_format=diarized_json, by
--concurrency clients (longest first); per conversation its latency (curl's, upload included), the words' WER
against what was said (the normalisation of steno's evaluations: lowercase, letters, digits and apostrophes), the
speakers found against the speakers there, and the DER of the answer's speaker turns against the reference RTTM
(`steno der`, collar 0.25 s; turns span the pauses inside them, so this DER counts those as false alarms); totals:
audio hours, wall seconds, RTFx (audio / wall), latency percentiles, pooled WER and DER. Exit status 1 if any
request failed.

Offline tooling (numpy); needs curl and, for make, espeak-ng.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def normalize(text):
    return " ".join(re.sub(r"[^a-z0-9']+", " ", text.lower()).split())


def edit_distance(ref, hyp):
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


def make(args):
    os.makedirs(args.dir, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    items = []
    for i in range(args.conversations):
        seconds = float(np.clip(np.exp(rng.normal(np.log(240.0), 0.8)), 60, 1800))
        speakers = int(rng.integers(2, 5))
        stem = os.path.join(args.dir, f"conv-{i:02d}")
        subprocess.run([sys.executable, os.path.join(HERE, "make_long_conversation.py"), f"{seconds:.1f}",
                        stem + ".wav", stem + ".rttm", "--speakers", str(speakers), "--seed", str(100 + i),
                        "--text", stem + ".txt"], check=True, stdout=subprocess.DEVNULL)
        items.append({"name": f"conv-{i:02d}", "seconds": round(seconds, 1), "speakers": speakers})
        print(f"consult: conv-{i:02d}: {seconds:.0f} s, {speakers} speakers", file=sys.stderr)
    json.dump({"seed": args.seed, "rule": "log-normal length (median 240 s, sigma 0.8) clipped to [60, 1800] s; "
               "2-4 speakers uniform", "conversations": items}, open(os.path.join(args.dir, "workload.json"), "w"),
              indent=1)


def run_one(args, item):
    stem = os.path.join(args.dir, item["name"])
    start = time.time()
    p = subprocess.run(["curl", "-sS", "-w", "\n%{http_code}", "-F", f"file=@{stem}.wav", "-F",
                        "response_format=diarized_json", f"http://127.0.0.1:{args.port}/v1/audio/transcriptions"],
                       capture_output=True, text=True)
    latency = time.time() - start
    body, _, code = p.stdout.rpartition("\n")
    out = {"name": item["name"], "seconds": item["seconds"], "speakers": item["speakers"], "latency_s": latency,
           "http_code": int(code) if code.isdigit() else 0}
    if out["http_code"] != 200:
        out["error"] = (body or p.stderr)[:500]
    return out, body


def score(args, item, out, body):
    """Accuracy of one answer, after every request has been answered (so that scoring costs no wall time)."""
    if out["http_code"] != 200:
        return out
    stem = os.path.join(args.dir, item["name"])
    answer = json.loads(body)
    ref = normalize(open(stem + ".txt").read()).split()
    hyp = normalize(answer.get("text", "")).split()
    out["ref_words"], out["word_errors"] = len(ref), edit_distance(ref, hyp)
    out["speakers_found"] = len({s["speaker"] for s in answer.get("segments", [])})
    hyp_rttm = stem + ".hyp.rttm"
    with open(hyp_rttm, "w") as f:
        for s in answer.get("segments", []):
            f.write(f"SPEAKER {item['name']} 1 {s['start']:.3f} {s['end'] - s['start']:.3f} <NA> <NA> "
                    f"{s['speaker']} <NA> <NA>\n")
    der = subprocess.run([args.steno, "der", "--collar", "0.25", "-f", "json", stem + ".rttm", hyp_rttm],
                         capture_output=True, text=True)
    try:
        out["der"] = json.loads(der.stdout)
    except json.JSONDecodeError:
        out["der_error"] = der.stderr[:300]
    return out


def percentile(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(np.ceil(q / 100 * len(v))) - 1))] if v else None


def run(args):
    workload = json.load(open(os.path.join(args.dir, "workload.json")))
    items = sorted(workload["conversations"], key=lambda c: -c["seconds"])
    start = time.time()
    with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
        answered = list(pool.map(lambda it: run_one(args, it), items))
    wall = time.time() - start
    results = [score(args, it, out, body) for it, (out, body) in zip(items, answered)]
    ok = [r for r in results if r["http_code"] == 200]
    audio = sum(r["seconds"] for r in results)
    lat = [r["latency_s"] for r in ok]
    ders = [r["der"] for r in ok if "der" in r]
    summary = {
        "conversations": len(results), "ok": len(ok), "audio_hours": audio / 3600, "wall_s": wall,
        "rtfx": audio / wall if wall > 0 else None, "concurrency": args.concurrency,
        "latency_s": {"p50": percentile(lat, 50), "p90": percentile(lat, 90), "max": max(lat) if lat else None},
        "wer": sum(r["word_errors"] for r in ok) / max(1, sum(r["ref_words"] for r in ok)),
        "speaker_count_right": sum(r["speakers_found"] == r["speakers"] for r in ok),
        "der_mean": float(np.mean([d["total"]["der"] for d in ders])) if ders else None,
        "der_pooled": (sum(d["total"]["missed"] + d["total"]["false_alarm"] + d["total"]["confusion"] for d in ders) /
                       max(1e-9, sum(d["total"]["reference_speech"] for d in ders))) if ders else None,
    }
    doc = {"what": "consult workload: speaker-attributed transcripts of synthetic consultations through steno serve",
           "command": " ".join(sys.argv), "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "workload": workload, "summary": summary, "conversations": results}
    if args.out:
        json.dump(doc, open(args.out, "w"), indent=1)
    print(json.dumps(summary, indent=1))
    return 0 if len(ok) == len(results) else 1


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("dir")
    m.add_argument("--conversations", type=int, default=8)
    m.add_argument("--seed", type=int, default=5)
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--concurrency", type=int, default=2)
    r.add_argument("--out")
    r.add_argument("--steno", default=os.path.join(HERE, "..", "build", "apps", "steno", "steno"))
    args = ap.parse_args()
    if args.cmd == "make":
        make(args)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
