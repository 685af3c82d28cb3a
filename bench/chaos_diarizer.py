#!/usr/bin/env python3
"""Chaos on the two-service server's diarizer, while something else (bench/seed_load.sh --chaos) loads its
transcriber. Run as seed_load.sh's --chaos command, or by hand against a running server:

  bench/chaos_diarizer.py --port PORT --server-pid PID --out FILE [--clip tests/data/diar-testset/conv00.flac]
                          [--diarizer-dir-name steno-sortformer-small] [--gap-s 8] [--queue-burst 400]

The server must serve a diarizer in worker processes (--diarizer-share processes or mps, two or more of them) with
--enable-fault-injection and a --max-queue-size below --queue-burst. In turn, --gap-s apart:
  reference     one diarization of the clip (RTTM): every later answer of 200 must be this one;
  idle-kill     one diarizer worker SIGKILLed with no diarization in flight: it is replaced, the other worker is the
                same process (no GPU work was outstanding, so even under MPS its group keeps running), and the next
                diarization is the reference;
  kill          24 diarizations at once, and 0.2 s later one diarizer worker SIGKILLed (mid-batch or between two:
                the server's log says which): all answered, all the reference;
  device-fault  one diarization with X-Steno-Fault: device-fault beside four plain ones: the faulted one answered
                with a 5xx (poisoned after its replays), the plain ones the reference (on a GPU the fault is a
                trapping kernel: under MPS every client of the daemon dies with it, the transcriber's too);
  queue-full    --queue-burst diarizations at once: each either the reference or 429, at least one of each;
  after         one more diarization: the reference.
Writes FILE: {"events": [{"event", "start_unix_s", "end_unix_s", what it saw, "ok"}...]}; exit status 0 when every
event went as said, 1 otherwise (each failure on stderr). Standard library only.
"""
import argparse
import concurrent.futures
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from soak_load import multipart, post  # noqa: E402  (the soak's multipart body and POST)


def descendants(root):
    """Every live process under `root` (its children, theirs...): the server may be a wrapper's child."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = open(f"/proc/{name}/stat").read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(name))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def diarizer_workers(server_pid, dir_name):
    workers = []
    for pid in descendants(server_pid):
        try:
            cmdline = open(f"/proc/{pid}/cmdline").read().replace("\0", " ")
        except OSError:
            continue
        if " worker " in f" {cmdline} " and dir_name in cmdline:
            workers.append(pid)
    return workers


class Diarizer:
    def __init__(self, port, clip):
        self.port = port
        self.clip = clip
        self.bytes = open(clip, "rb").read()

    def __call__(self, headers=None):
        body, ctype = multipart([("response_format", "rttm")], os.path.basename(self.clip), self.bytes)
        h = {"Content-Type": ctype}
        h.update(headers or {})
        try:
            status, answer = post("127.0.0.1", self.port, "/v1/audio/diarizations", body, h, 120)
            return status, answer.decode(errors="replace")
        except OSError as e:
            return 0, f"{type(e).__name__}: {e}"

    def many(self, n, headers_of=lambda i: None, while_running=None):
        with concurrent.futures.ThreadPoolExecutor(max_workers=n) as pool:
            futures = [pool.submit(self, headers_of(i)) for i in range(n)]
            if while_running:
                while_running()
            return [f.result() for f in futures]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--server-pid", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--clip", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
                                                  "diar-testset", "conv00.flac"))
    p.add_argument("--diarizer-dir-name", default="steno-sortformer-small")
    p.add_argument("--gap-s", type=float, default=8)
    p.add_argument("--queue-burst", type=int, default=400)
    args = p.parse_args()

    diarize = Diarizer(args.port, args.clip)
    events = []
    failures = []

    def event(name, run):
        start = time.time()
        seen, ok, why = run()
        events.append(dict(event=name, start_unix_s=start, end_unix_s=time.time(), ok=ok, **seen))
        print(f"chaos: {name}: {'ok' if ok else 'FAILED: ' + why}: {json.dumps(seen)[:400]}", flush=True)
        if not ok:
            failures.append(f"{name}: {why}")
        time.sleep(args.gap_s)

    reference = {}

    def first():
        status, answer = diarize()
        reference["rttm"] = answer
        return dict(status=status, rttm_lines=answer.count("\n")), status == 200, f"status {status}: {answer[:200]}"

    def tally(answers):
        t = {}
        for status, answer in answers:
            key = "reference" if status == 200 and answer == reference["rttm"] else str(status)
            t[key] = t.get(key, 0) + 1
        return t

    def idle_kill():
        victims = diarizer_workers(args.server_pid, args.diarizer_dir_name)
        if len(victims) < 2:
            return dict(workers=victims), False, f"{len(victims)} diarizer workers found; --diarizer-lanes >= 2 needed"
        os.kill(victims[0], signal.SIGKILL)
        now = []
        for _ in range(300):  # its replacement within 30 s
            now = diarizer_workers(args.server_pid, args.diarizer_dir_name)
            if len(now) == len(victims) and victims[0] not in now:
                break
            time.sleep(0.1)
        kept = victims[1] in now
        status, answer = diarize()
        ok = kept and len(now) == len(victims) and status == 200 and answer == reference["rttm"]
        return (dict(killed=victims[0], workers_after=now, other_worker_kept=kept, status=status), ok,
                f"workers {victims} -> {now} (the other kept: {kept}), then status {status}")

    def kill():
        victims = diarizer_workers(args.server_pid, args.diarizer_dir_name)
        if len(victims) < 2:
            return dict(workers=victims), False, f"{len(victims)} diarizer workers found; --diarizer-lanes >= 2 needed"

        def strike():
            time.sleep(0.2)
            os.kill(victims[0], signal.SIGKILL)
        t = tally(diarize.many(24, while_running=strike))
        return dict(killed=victims[0], answers=t), t == {"reference": 24}, f"answers {t}"

    def device_fault():
        answers = diarize.many(5, headers_of=lambda i: {"X-Steno-Fault": "device-fault"} if i == 0 else None)
        faulted, plain = answers[0][0], tally(answers[1:])
        ok = 500 <= faulted < 600 and plain == {"reference": 4}
        return dict(faulted_status=faulted, plain=plain), ok, f"faulted {faulted}, plain {plain}"

    def queue_full():
        t = tally(diarize.many(args.queue_burst))
        ok = set(t) <= {"reference", "429"} and t.get("reference", 0) >= 1 and t.get("429", 0) >= 1
        return dict(answers=t), ok, f"answers {t} (want only the reference and 429, some of each)"

    def after():
        status, answer = diarize()
        ok = status == 200 and answer == reference["rttm"]
        return dict(status=status), ok, f"status {status}: {answer[:200]}"

    event("reference", first)
    if reference.get("rttm") is not None and events[-1]["ok"]:
        for name, run in (("idle-kill", idle_kill), ("kill", kill), ("device-fault", device_fault), ("queue-full", queue_full),
                          ("after", after)):
            event(name, run)
    with open(args.out, "w") as f:
        json.dump(dict(events=events, clip=os.path.basename(args.clip)), f, indent=1)
    for why in failures:
        print(f"chaos: FAIL: {why}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
