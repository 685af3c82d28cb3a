#!/usr/bin/env python3
"""The soak's client and sampler (bench/soak.sh starts the server and calls this; standard library only).

For --duration-s seconds it keeps a running `steno serve` under a mixed load, one thread per kind of traffic:
  good     OpenAI transcriptions of every clip of --clips (all lengths and formats) in every response format
           (json, text, srt, vtt, verbose_json with words, stream=true's events; diarized_json, diarize=true and
           /v1/audio/diarizations when a diarizer is served) and KServe v2 binary-extension infers, --good-workers
           threads, one request after another; every answer must be a 200 whose body equals the clip's reference
           (its first answer in that form, fetched alone before the soak) -- events are compared without their ids
  bad      the bad-input matrix: broken audio, wrong fields, malformed HTTP, unknown models, oversized headers;
           each must be answered with its 4xx, and the connection must not be reset before the answer
  cancel   a long clip sent, the connection dropped 0-500 ms later (the server must cancel the work)
  slow     a clip uploaded in 1 KiB pieces over ~2 s (answered 200), and a head that stalls (answered 408)
and every second it samples the server (pid --pid): resident memory, open descriptors and threads from /proc, the
queue depth from /metrics (nv_inference_pending_request_count, summed over models), the server's host caches and
glibc's free heap bytes from /metrics (steno_host_cache_bytes, steno_malloc_bytes: where resident memory that grows
sits), requests done so far.

The verdict: no good request failed or answered another body; every bad input answered its 4xx; after the warm-up
(--warmup-s) the resident memory grew <= --max-rss-growth-pct from the first minute after warm-up to the last minute
(medians), and descriptors and threads stayed flat (the last minute's median within the first's plus the client's
own connections). Writes --out (JSON: settings, per-kind tallies and latencies, samples, verdict) and the same path
with .svg (the samples plotted). Exit status 0 when the verdict passes, 1 otherwise, 2 on bad usage.
`soak_load.py --summarize RESULT.json` prints a result's tallies, verdict and 5-minute medians of the samples.
"""
import argparse
import base64
import http.client
import json
import os
import random
import re
import socket
import statistics
import sys
import threading
import time
import urllib.request
import uuid

AUDIO_TYPES = {".wav": "audio/wav", ".flac": "audio/flac", ".ogg": "audio/ogg", ".opus": "audio/ogg",
               ".mp3": "audio/mpeg", ".aiff": "audio/aiff"}


def multipart(fields, file_name, file_bytes):
    boundary = "soak" + uuid.uuid4().hex
    parts = []
    for name, value in fields:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    ctype = AUDIO_TYPES.get(os.path.splitext(file_name)[1], "application/octet-stream")
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{file_name}"\r\n'
                 f'Content-Type: {ctype}\r\n\r\n'.encode() + file_bytes + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


class Form:
    """One way of asking for a clip's answer: the route, the body and how to normalise the answer for comparison."""

    def __init__(self, name, path, fields=(), kserve_model=None, events=False):
        self.name, self.path, self.fields, self.kserve_model, self.events = name, path, list(fields), kserve_model, events

    def request(self, clip_name, audio):
        if self.kserve_model:
            header = json.dumps({"inputs": [{"name": "audio", "datatype": "BYTES", "shape": [1],
                                             "parameters": {"binary_data_size": 4 + len(audio)}}],
                                 "outputs": [{"name": "text"}]}).encode()
            body = header + len(audio).to_bytes(4, "little") + audio
            return body, {"Content-Type": "application/octet-stream",
                          "Inference-Header-Content-Length": str(len(header))}
        body, ctype = multipart(self.fields, clip_name, audio)
        return body, {"Content-Type": ctype}

    def normalise(self, body):
        if self.kserve_model:  # the text output (the response's id and model echo nothing of the audio)
            return json.dumps(json.loads(body)["outputs"], sort_keys=True)
        if self.events:  # server-sent events: the data lines, without per-request ids
            return re.sub(rb'"id":"[^"]*"', b'"id":""', body).decode("utf-8", "replace")
        return body.decode("utf-8", "replace")


def forms_for(models, diarizer):
    asr = models["asr"]
    forms = [Form(f"openai-{fmt}", "/v1/audio/transcriptions", [("model", asr), ("response_format", fmt)])
             for fmt in ("json", "text", "srt", "vtt")]
    forms.append(Form("openai-verbose-words", "/v1/audio/transcriptions",
                      [("model", asr), ("response_format", "verbose_json"), ("timestamp_granularities[]", "word")]))
    forms.append(Form("openai-stream", "/v1/audio/transcriptions", [("model", asr), ("stream", "true")], events=True))
    forms.append(Form("kserve-binary", f"/v2/models/{asr}/infer", kserve_model=asr))
    if diarizer:
        forms.append(Form("openai-diarized-json", "/v1/audio/transcriptions",
                          [("model", asr), ("response_format", "diarized_json")]))
        forms.append(Form("openai-diarize-words", "/v1/audio/transcriptions",
                          [("model", asr), ("response_format", "verbose_json"), ("diarize", "true"),
                           ("timestamp_granularities[]", "word")]))
        forms.append(Form("diarization-json", "/v1/audio/diarizations", [("model", diarizer)]))
        forms.append(Form("diarization-rttm", "/v1/audio/diarizations",
                          [("model", diarizer), ("response_format", "rttm")]))
    return forms


class Tally:
    """Per kind of traffic: counts by outcome and status, good requests' latencies."""

    def __init__(self):
        self.lock = threading.Lock()
        self.kinds = {}
        self.first_failures = []

    def add(self, kind, outcome, status=None, ms=None, detail=None):
        with self.lock:
            k = self.kinds.setdefault(kind, {"sent": 0, "outcomes": {}, "statuses": {}, "latency_ms": []})
            k["sent"] += 1
            k["outcomes"][outcome] = k["outcomes"].get(outcome, 0) + 1
            if status is not None:
                k["statuses"][str(status)] = k["statuses"].get(str(status), 0) + 1
            if ms is not None:
                k["latency_ms"].append(ms)
            if outcome not in ("ok", "expected") and len(self.first_failures) < 20:
                self.first_failures.append({"kind": kind, "outcome": outcome, "status": status, "detail": detail,
                                            "at_s": round(time.monotonic() - START, 1)})

    def done(self):
        with self.lock:
            return sum(k["sent"] for k in self.kinds.values())

    def summary(self):
        with self.lock:
            out = {}
            for name, k in sorted(self.kinds.items()):
                lat = sorted(k["latency_ms"])
                entry = {"sent": k["sent"], "outcomes": k["outcomes"], "statuses": k["statuses"]}
                if lat:
                    entry["latency_ms"] = {"mean": round(statistics.fmean(lat), 1),
                                           "p50": round(lat[len(lat) // 2], 1),
                                           "p99": round(lat[min(len(lat) - 1, int(len(lat) * 0.99))], 1),
                                           "max": round(lat[-1], 1)}
                out[name] = entry
            return out


START = time.monotonic()


def post(host, port, path, body, headers, timeout):
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("POST", path, body=body, headers=headers)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def raw_exchange(host, port, data, timeout):
    """Sends `data` on a new connection and reads the answer until the server closes (the requests say Connection:
    close, and an error answer closes anyway). The write side stays open: to steno a half-closed connection is a
    client that went away, whose request is cancelled unanswered. The status code, or what happened instead."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        try:
            s.sendall(data)
        except OSError:
            pass  # the server may answer and close before reading everything
        answer = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                answer += chunk
        except ConnectionResetError:
            if not answer:
                return "reset"
        except socket.timeout:
            return "timeout"
    m = re.match(rb"HTTP/1\.1 (\d{3})", answer)
    return int(m.group(1)) if m else "no-answer"


def request_head(host, path, length, headers, close=True):
    """A POST's head as raw bytes, for the clients that write the request themselves."""
    return (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {length}\r\n" +
            "".join(f"{k}: {v}\r\n" for k, v in headers.items()) +
            ("Connection: close\r\n" if close else "") + "\r\n").encode()


def bad_matrix(host, asr, clip_bytes):
    """(name, raw request bytes, expected status): what the server must refuse, each with its own 4xx."""
    def req(path, body, ctype):
        return request_head(host, path, len(body), {"Content-Type": ctype}) + body

    def form(fields, file_name, data):
        body, ctype = multipart(fields, file_name, data)
        return req("/v1/audio/transcriptions", body, ctype)

    noise = bytes(random.Random(7).getrandbits(8) for _ in range(20000))
    wav_header_only = b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x80\x3e\x00\x00" \
                      b"\x00\x7d\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00"
    return [
        ("noise-as-audio", form([("model", asr)], "noise.wav", noise), 400),
        ("truncated-audio", form([("model", asr)], "cut.flac", clip_bytes[: len(clip_bytes) // 7]), 200),
        ("empty-wav", form([("model", asr)], "empty.wav", wav_header_only), 400),
        ("no-file-field", req("/v1/audio/transcriptions", b"--x\r\nContent-Disposition: form-data; name=\"model\""
                              b"\r\n\r\nm\r\n--x--\r\n", "multipart/form-data; boundary=x"), 400),
        ("bad-response-format", form([("model", asr), ("response_format", "xml")], "a.flac", clip_bytes), 400),
        ("unknown-model", form([("model", "no-such-model")], "a.flac", clip_bytes), 404),
        ("broken-multipart", req("/v1/audio/transcriptions", b"--x\r\nnonsense", "multipart/form-data; boundary=x"),
         400),
        ("kserve-bad-json", req(f"/v2/models/{asr}/infer", b'{"inputs": [', "application/json"), 400),
        ("kserve-wrong-datatype", req(f"/v2/models/{asr}/infer", json.dumps(
            {"inputs": [{"name": "audio", "datatype": "INT8", "shape": [1], "data": [1]}]}).encode(),
            "application/json"), 400),
        ("kserve-base64-garbage", req(f"/v2/models/{asr}/infer", json.dumps(
            {"inputs": [{"name": "audio", "datatype": "BYTES", "shape": [1],
                         "data": [base64.b64encode(noise[:3000]).decode()]}]}).encode(), "application/json"), 400),
        ("malformed-http", b"GET / HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n", 400),
        ("huge-header", b"GET /v2/health/ready HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n", 431),
        ("body-over-limit", req("/v1/audio/transcriptions", b"", "multipart/form-data; boundary=x").replace(
            b"Content-Length: 0", b"Content-Length: 99999999999"), 413),
    ]


def run(args):
    clips = []
    for name in sorted(os.listdir(args.clips)):
        if os.path.splitext(name)[1] in AUDIO_TYPES:
            with open(os.path.join(args.clips, name), "rb") as f:
                clips.append((name, f.read()))
    if not clips:
        sys.exit(f"soak_load.py: no audio files in {args.clips}")
    models = {"asr": args.asr_model}
    forms = forms_for(models, args.diarizer_model)
    host, port, timeout = args.host, args.port, args.timeout_s
    tally = Tally()

    only = set(args.only.split(",")) if args.only else {"good", "bad", "cancel", "slow"}
    # References: each clip in each form, alone.
    refs = {}
    t0 = time.monotonic()
    for form in forms if "good" in only else []:
        for name, audio in clips:
            body, headers = form.request(name, audio)
            status, answer = post(host, port, form.path, body, headers, timeout)
            if status != 200:
                sys.exit(f"soak_load.py: reference {form.name} {name}: {status} {answer[:300]!r}")
            refs[(form.name, name)] = form.normalise(answer)
    print(f"soak_load.py: {len(refs)} references ({len(forms)} forms x {len(clips)} clips) in "
          f"{time.monotonic() - t0:.1f} s", flush=True)

    global START
    START = time.monotonic()
    stop_at = START + args.duration_s
    stopping = threading.Event()

    def good_worker(seed):
        rnd = random.Random(seed)
        while not stopping.is_set():
            form = rnd.choice(forms)
            name, audio = rnd.choice(clips)
            body, headers = form.request(name, audio)
            t = time.monotonic()
            try:
                status, answer = post(host, port, form.path, body, headers, timeout)
            except Exception as e:  # noqa: BLE001 -- any transport failure is a failed good request
                tally.add("good", "failed", detail=f"{form.name} {name}: {type(e).__name__}: {e}")
                continue
            ms = (time.monotonic() - t) * 1000
            if status != 200:
                tally.add("good", "failed", status, ms, f"{form.name} {name}: {answer[:200]!r}")
            elif form.normalise(answer) != refs[(form.name, name)]:
                tally.add("good", "differs", status, ms, f"{form.name} {name}")
            else:
                tally.add("good", "ok", status, ms)

    sample_clip = min(clips, key=lambda c: len(c[1]))[1]
    matrix = bad_matrix(host, args.asr_model, sample_clip)

    def bad_worker():
        rnd = random.Random(11)
        while not stopping.is_set():
            name, data, expected = rnd.choice(matrix)
            try:
                got = raw_exchange(host, port, data, timeout)
            except OSError as e:
                got = type(e).__name__
            tally.add("bad", "expected" if got == expected else "wrong-answer", got,
                      detail=None if got == expected else f"{name}: expected {expected}, got {got}")
            stopping.wait(0.05)

    longest = max(clips, key=lambda c: len(c[1]))

    def cancel_worker():
        rnd = random.Random(13)
        form = forms[0]
        while not stopping.is_set():
            body, headers = form.request(*longest)
            head = request_head(host, form.path, len(body), headers, close=False)
            try:
                with socket.create_connection((host, port), timeout=timeout) as s:
                    s.sendall(head + body)
                    time.sleep(rnd.uniform(0, 0.5))
                tally.add("cancel", "ok")
            except OSError as e:
                tally.add("cancel", "failed", detail=f"{type(e).__name__}: {e}")
            stopping.wait(rnd.uniform(0.2, 1.0))

    def slow_worker():
        form = forms[0]
        name, audio = min(clips, key=lambda c: len(c[1]))
        while not stopping.is_set():
            body, headers = form.request(name, audio)
            head = request_head(host, form.path, len(body), headers)
            t = time.monotonic()
            try:
                with socket.create_connection((host, port), timeout=timeout) as s:
                    s.sendall(head)
                    step = 1024
                    pause = 2.0 / max(1, len(body) // step)
                    for i in range(0, len(body), step):
                        s.sendall(body[i:i + step])
                        time.sleep(pause)
                    answer = b""
                    while True:
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        answer += chunk
                ok = answer.startswith(b"HTTP/1.1 200")
                tally.add("slow-upload", "ok" if ok else "failed", answer[9:12].decode() if answer else None,
                          (time.monotonic() - t) * 1000, None if ok else answer[:200])
            except OSError as e:
                tally.add("slow-upload", "failed", detail=f"{type(e).__name__}: {e}")
            # A head that never ends: the read timeout must answer 408 and close.
            try:
                got = raw_exchange(host, port, b"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\n",
                                   args.read_timeout_s + 10)
            except OSError as e:
                got = type(e).__name__
            tally.add("stalled-head", "expected" if got == 408 else "wrong-answer", got,
                      detail=None if got == 408 else f"expected 408, got {got}")

    samples = []

    def scrape():
        """From /metrics: the queue depth, and where the server's host memory sits (its caches fill towards a bound;
        glibc's heap holds freed bytes): what tells a leak from a cache when the resident set grows."""
        try:
            with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as r:
                text = r.read().decode()
        except OSError:
            return {"pending": None}

        def total(pattern):
            values = [float(m.group(1)) for m in re.finditer(pattern, text, re.M)]
            return round(sum(values) / 2**20, 1) if values else None
        pending = [float(m.group(1)) for m in
                   re.finditer(r"^nv_inference_pending_request_count\{[^}]*\} (\S+)$", text, re.M)]
        return {"pending": sum(pending),
                "cached_mb": total(r'^steno_host_cache_bytes\{[^}]*state="cached"[^}]*\} (\S+)$'),
                "pinned_mb": total(r'^steno_host_cache_bytes\{[^}]*pool="pinned"[^}]*\} (\S+)$'),
                "malloc_free_mb": total(r'^steno_malloc_bytes\{[^}]*state="free"[^}]*\} (\S+)$')}

    def sample():
        status = open(f"/proc/{args.pid}/status").read()
        rss_kb = int(re.search(r"^VmRSS:\s+(\d+)", status, re.M).group(1))
        threads = int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1))
        fds = len(os.listdir(f"/proc/{args.pid}/fd"))
        return {"t": round(time.monotonic() - START, 2), "rss_mb": round(rss_kb / 1024, 1), "threads": threads,
                "fds": fds, **scrape(), "done": tally.done()}

    kinds = {"bad": bad_worker, "cancel": cancel_worker, "slow": slow_worker}
    workers = [threading.Thread(target=good_worker, args=(i,), daemon=True)
               for i in range(args.good_workers if "good" in only else 0)]
    workers += [threading.Thread(target=f, daemon=True) for kind, f in kinds.items() if kind in only]
    for w in workers:
        w.start()
    next_print = START
    server_gone = None
    while time.monotonic() < stop_at:
        try:
            samples.append(sample())
        except (OSError, AttributeError) as e:
            server_gone = f"the server (pid {args.pid}) went away: {e}"
            break
        if time.monotonic() >= next_print:
            s = samples[-1]
            kinds = tally.summary()
            good = kinds.get("good", {}).get("outcomes", {})
            print(f"soak_load.py: {s['t']:7.0f} s  rss {s['rss_mb']} MB (cached {s.get('cached_mb')})  "
                  f"fds {s['fds']}  threads {s['threads']}  "
                  f"pending {s['pending']}  good ok {good.get('ok', 0)} failed {good.get('failed', 0)} "
                  f"differs {good.get('differs', 0)}  all {s['done']}", flush=True)
            next_print += args.progress_s
        time.sleep(max(0.0, 1.0 - (time.monotonic() - START) % 1.0))
    stopping.set()
    for w in workers:
        w.join(timeout + args.read_timeout_s + 15)

    verdict = judge(samples, tally.summary(), args, server_gone)
    result = {"settings": {k: v for k, v in vars(args).items() if k != "out"},
              "clips": [{"name": n, "bytes": len(b)} for n, b in clips], "forms": [f.name for f in forms],
              "kinds": tally.summary(), "first_failures": tally.first_failures, "verdict": verdict,
              "samples": samples}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.splitext(args.out)[0] + ".svg", "w") as f:
        f.write(plot(samples, args.warmup_s, verdict))
    print("soak_load.py: " + json.dumps(verdict), flush=True)
    return 0 if verdict["pass"] else 1


def window_median(samples, key, start, end):
    values = [s[key] for s in samples if start <= s["t"] < end and s.get(key) is not None]
    return statistics.median(values) if values else None


def judge(samples, kinds, args, server_gone):
    reasons = []
    if server_gone:
        reasons.append(server_gone)
    good = kinds.get("good", {}).get("outcomes", {})
    if good.get("failed"):
        reasons.append(f"{good['failed']} good requests failed")
    if good.get("differs") and not args.accept_differing_text:
        reasons.append(f"{good['differs']} good requests answered another body than their reference")
    for kind in ("bad", "stalled-head", "slow-upload", "cancel"):
        k = kinds.get(kind, {}).get("outcomes", {})
        wrong = sum(v for o, v in k.items() if o not in ("ok", "expected"))
        if wrong:
            reasons.append(f"{wrong} {kind} requests were not answered as they must be")
    end = samples[-1]["t"] if samples else 0
    first = (args.warmup_s, args.warmup_s + 60)
    last = (end - 60, end + 1)
    verdict = {"pass": False, "warmup_s": args.warmup_s, "windows_s": [first, last]}
    if end < args.warmup_s + 120:
        reasons.append(f"too short to judge growth: {end:.0f} s sampled, warm-up {args.warmup_s} s + 2 minutes needed")
    else:
        slack = args.good_workers + 4  # connections the client itself may hold open at a sample
        for key, limit_pct, extra in (("rss_mb", args.max_rss_growth_pct, 0), ("fds", 5, slack),
                                      ("threads", 5, slack)):
            a, b = window_median(samples, key, *first), window_median(samples, key, *last)
            growth = (b - a) / a * 100 if a else 0
            verdict[key] = {"after_warmup": a, "end": b, "growth_pct": round(growth, 2),
                            "max_after_warmup": max(s[key] for s in samples if s["t"] >= args.warmup_s)}
            if b > a * (1 + limit_pct / 100) + extra:
                reasons.append(f"{key} grew from {a} to {b} ({growth:.1f} %; at most {limit_pct} %"
                               f"{f' + {extra}' if extra else ''})")
        # Not judged, told: the resident set less what the host caches keep for reuse (bounded, and handed back
        # when idle), so a reader of a failed verdict sees whether the growth is the caches' or something else's.
        less = [dict(t=x["t"], v=x["rss_mb"] - x["cached_mb"]) for x in samples if x.get("cached_mb") is not None]
        a, b = window_median(less, "v", *first), window_median(less, "v", *last)
        if a and b:
            verdict["rss_less_cached_mb"] = {"after_warmup": a, "end": b, "growth_pct": round((b - a) / a * 100, 2)}
    verdict["reasons"] = reasons
    verdict["pass"] = not reasons
    return verdict


def plot(samples, warmup_s, verdict):
    """An SVG of the samples: one panel per quantity over time, the warm-up shaded."""
    panels = [("rss_mb", "resident memory (MB)"), ("fds", "open descriptors"), ("threads", "threads"),
              ("pending", "queued requests"), ("rate", "requests done per second")]
    rate = [0.0] + [max(0, b["done"] - a["done"]) / max(1e-6, b["t"] - a["t"]) for a, b in zip(samples, samples[1:])]
    w, h, left, gap = 900, 150, 70, 40
    end = max(samples[-1]["t"], 1) if samples else 1
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w + 20}" height="{len(panels) * (h + gap) + 40}" '
           f'font-family="sans-serif" font-size="12">',
           f'<text x="{left}" y="18">steno soak: {"PASS" if verdict["pass"] else "FAIL"} '
           f'({len(samples)} samples over {end:.0f} s)</text>']
    for i, (key, title) in enumerate(panels):
        y0 = 40 + i * (h + gap)
        values = rate if key == "rate" else [s[key] if s[key] is not None else 0 for s in samples]
        hi = max(values + [1e-9]) * 1.1
        lo = 0 if key in ("pending", "rate") else min(values + [hi]) * 0.95
        span = max(hi - lo, 1e-9)
        xs = [left + (s["t"] / end) * (w - left) for s in samples]
        ys = [y0 + h - (v - lo) / span * h for v in values]
        out.append(f'<rect x="{left}" y="{y0}" width="{(min(warmup_s, end) / end) * (w - left):.1f}" height="{h}" '
                   f'fill="#eee"/>')
        out.append(f'<rect x="{left}" y="{y0}" width="{w - left}" height="{h}" fill="none" stroke="#888"/>')
        out.append(f'<text x="{left}" y="{y0 - 5}">{title}</text>')
        out.append(f'<text x="{left - 5}" y="{y0 + 10}" text-anchor="end">{hi:.4g}</text>')
        out.append(f'<text x="{left - 5}" y="{y0 + h}" text-anchor="end">{lo:.4g}</text>')
        points = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys))
        out.append(f'<polyline fill="none" stroke="#1f5fbf" stroke-width="1" points="{points}"/>')
    out.append(f'<text x="{left}" y="{len(panels) * (h + gap) + 30}">time (s), 0 .. {end:.0f}; grey: warm-up</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def summarize(path, window_s=300):
    """A result file's tallies, verdict and per-window medians of the samples (the figures its README quotes)."""
    r = json.load(open(path))
    for kind, k in r["kinds"].items():
        print(f"{kind}: {k['sent']} sent, {k['outcomes']}, latency {k.get('latency_ms', '-')}")
    print("verdict:", json.dumps(r["verdict"]))
    samples = r["samples"]
    end = samples[-1]["t"] if samples else 0
    # The memory figures from /metrics are in results made since steno exported them (absent before). held_mb:
    # what steno holds in use, the resident set less what the host caches and glibc keep for reuse.
    for x in samples:
        if all(k in x for k in ("rss_mb", "cached_mb", "malloc_free_mb")):
            x["held_mb"] = x["rss_mb"] - x["cached_mb"] - x["malloc_free_mb"]
    for key in ("rss_mb", "fds", "threads", "cached_mb", "pinned_mb", "malloc_free_mb", "held_mb"):
        medians = [window_median(samples, key, t, t + window_s) for t in range(0, int(end), window_s)]
        if any(m is not None for m in medians):
            print(f"{key}, median per {window_s} s window:",
                  " ".join("-" if m is None else f"{m:.0f}" for m in medians))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--summarize":  # soak_load.py --summarize RESULT.json
        summarize(sys.argv[2])
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pid", type=int, required=True, help="the server's process, sampled through /proc")
    p.add_argument("--clips", required=True, help="a directory of audio files (.wav .flac .ogg .opus .mp3 .aiff)")
    p.add_argument("--asr-model", required=True)
    p.add_argument("--diarizer-model", default="", help="the diarizer's name when one is served")
    p.add_argument("--duration-s", type=float, default=3600)
    p.add_argument("--warmup-s", type=float, default=300)
    p.add_argument("--good-workers", type=int, default=4)
    p.add_argument("--timeout-s", type=float, default=300)
    p.add_argument("--read-timeout-s", type=float, default=30, help="the server's --read-timeout-s")
    p.add_argument("--max-rss-growth-pct", type=float, default=5)
    p.add_argument("--progress-s", type=float, default=10)
    p.add_argument("--accept-differing-text", action="store_true")
    p.add_argument("--only", default="", help="some of good,bad,cancel,slow (default all): to find which traffic "
                                              "makes memory grow")
    p.add_argument("--out", required=True)
    sys.exit(run(p.parse_args()))


if __name__ == "__main__":
    main()
