#!/usr/bin/env python3
"""Runs a command and reports what it cost: wall seconds, peak resident memory of the process tree (the kernel's
ru_maxrss of the largest child) and, on a CUDA machine, the peak GPU memory nvidia-smi saw it use (polled).

    measure_run.py OUT.json -- COMMAND ARGS...

Writes {"command", "exit_code", "wall_seconds", "peak_rss_mb", "peak_gpu_mb" (null without nvidia-smi), and the
command's stdout parsed as JSON under "output" when it is JSON (else "stdout_tail")} and prints it. stderr passes
through (progress lines). Offline tooling for the benchmark scripts; not part of steno.
"""
import json
import resource
import shutil
import subprocess
import sys
import threading
import time


def gpu_memory_mb(pid_set):
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    total = 0
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit() and int(parts[0]) in pid_set:
            total += int(parts[1])
    return total


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        raise SystemExit(__doc__)
    out_path, cmd = sys.argv[1], sys.argv[3:]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    peak_gpu = [None]
    done = threading.Event()

    def poll():
        while not done.is_set() and shutil.which("nvidia-smi"):
            m = gpu_memory_mb({proc.pid})
            if m is not None and (peak_gpu[0] is None or m > peak_gpu[0]):
                peak_gpu[0] = m
            done.wait(0.25)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    stdout, _ = proc.communicate()
    wall = time.monotonic() - start
    done.set()
    poller.join()
    result = {"command": cmd, "exit_code": proc.returncode, "wall_seconds": round(wall, 3),
              "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0, 1),
              "peak_gpu_mb": peak_gpu[0]}
    try:
        result["output"] = json.loads(stdout)
    except ValueError:
        result["stdout_tail"] = stdout[-4000:]
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    summary = {k: v for k, v in result.items() if k not in ("output", "stdout_tail")}
    print(json.dumps(summary))
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
