#!/usr/bin/env python3
"""Start-up cost of the steno command line on the CPU, whole process (issue: the CPU path starts in milliseconds).

For each steno binary given (a CPU-only build, and a CUDA build whose CPU path must cost the same), paired runs of:
`steno --help`, `steno model info` on the bundled model, and `steno transcribe -t 2` of 1 s, 9 s and 60 s clips
made from the committed espeak test set (the bundled model), in rotation so that a drift of the machine touches
every command alike. Reports the median wall time and the largest resident set (ru_maxrss) of each, and the
transcripts (so that a comparison with another program can check it heard the same words).

  bench/startup.py --steno build/apps/steno/steno [--steno build-gpu/apps/steno/steno] [--runs 21] [--out FILE]
                   [--whisper-cpp SRC] [--gemm onednn,openblas]

With --whisper-cpp, a whisper.cpp source tree (fetched for the benchmark, never kept in this repository), the peer
joins: its parakeet-cli is built there three ways (default; GGML_LLAMAFILE; GGML_BLAS with OpenBLAS), the NeMo
reference model tests/data/nemo-tiny/model.nemo is converted with its converter (f32; the converter needs torch,
numpy and pyyaml: $STENO_TORCH_PYTHON, default /usr/bin/python3 with Debian's python3-torch) and imported for steno
(`steno model import`), and `transcribe` of each clip runs on that model in every program, 2 threads, no GPU, in
the same rotation. nemo-tiny is bias-free; the bundled model has biases, which whisper.cpp's Parakeet loader does
not take, so it is steno's alone here.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import wave

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "models", "steno-tdt-small-en")
CLIPS = os.path.join(ROOT, "tests", "data", "testset", "espeak", "audio")


def make_clip(seconds, path):
    """The test clips one after another (decoded by sox) until `seconds`, as 16 kHz mono 16-bit WAV."""
    files = sorted(os.path.join(CLIPS, f) for f in os.listdir(CLIPS) if f.endswith(".flac"))
    raw = b""
    want = int(seconds * 16000) * 2
    i = 0
    while len(raw) < want:
        raw += subprocess.run(["sox", files[i % len(files)], "-t", "raw", "-r", "16000", "-c", "1", "-b", "16",
                               "-e", "signed-integer", "-"], check=True, capture_output=True).stdout
        i += 1
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(raw[:want])


PEER_BUILDS = {  # name: extra CMake options of whisper.cpp's build
    "default": [],
    "llamafile": ["-DGGML_LLAMAFILE=ON"],
    "openblas": ["-DGGML_BLAS=ON", "-DGGML_BLAS_VENDOR=OpenBLAS"],
}
NEMO_TINY = os.path.join(ROOT, "tests", "data", "nemo-tiny", "model.nemo")


def build_peer(src, name, options):
    """whisper.cpp's parakeet-cli built in SRC/build-steno-NAME (kept between runs); its path."""
    build = os.path.join(src, f"build-steno-{name}")
    cli = os.path.join(build, "bin", "parakeet-cli")
    if not os.path.exists(cli):
        subprocess.run(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DWHISPER_BUILD_TESTS=OFF"]
                       + options, check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", build, "--target", "parakeet-cli", "-j", str(os.cpu_count())],
                       check=True, stdout=subprocess.DEVNULL)
    return cli


def peer_model(src, steno, work):
    """nemo-tiny as whisper.cpp's ggml file and as a steno model directory: (ggml path, steno directory)."""
    python = os.environ.get("STENO_TORCH_PYTHON", "/usr/bin/python3")
    subprocess.run([python, os.path.join(src, "models", "convert-parakeet-to-ggml.py"), "--model", NEMO_TINY,
                    "--out-dir", work, "--use-f32"], check=True, stdout=subprocess.DEVNULL)
    steno_dir = os.path.join(work, "nemo-tiny-steno")
    subprocess.run([steno, "model", "import", NEMO_TINY, "--out", steno_dir], check=True, stdout=subprocess.DEVNULL)
    return os.path.join(work, "ggml-model-f32.bin"), steno_dir


def run_once(cmd):
    """Wall milliseconds and stdout of one run of `cmd` (which must succeed)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate()
    wall = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        sys.exit(f"startup.py: {' '.join(cmd)} failed ({proc.returncode}): {err.decode()[-500:]}")
    return wall, out.decode()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steno", action="append", required=True, help="a steno binary (repeatable)")
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--out", help="result JSON (default: stdout)")
    ap.add_argument("--whisper-cpp", help="a whisper.cpp source tree: its parakeet-cli joins on nemo-tiny")
    ap.add_argument("--clip-seconds", default="1,9,60", help="comma-separated clip lengths (default 1,9,60)")
    ap.add_argument("--gemm", default="",
                    help="comma-separated --gemm values for steno's transcribe commands, each an arm of its own "
                         "(default: none given, the command's own default)")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="steno-startup-")
    clips = {}
    for seconds in (int(x) for x in args.clip_seconds.split(",")):
        clips[seconds] = os.path.join(work, f"clip-{seconds}s.wav")
        make_clip(seconds, clips[seconds])

    # Each --gemm value an arm: "(openblas)" after the command's name; none given, the command's default.
    gemms = [(f" ({g})", ["--gemm", g]) for g in args.gemm.split(",") if g] or [("", [])]
    commands = {}
    for binary in args.steno:
        b = os.path.abspath(binary)
        commands[(b, "--help")] = [b, "--help"]
        commands[(b, "model info")] = [b, "model", "info", MODEL]
        for seconds, path in clips.items():
            for tag, gemm in gemms:
                commands[(b, f"transcribe {seconds} s{tag}")] = [b, "transcribe", "-t", "2", *gemm, "--model",
                                                                 MODEL, path]

    if args.whisper_cpp:
        ggml, steno_dir = peer_model(args.whisper_cpp, os.path.abspath(args.steno[0]), work)
        for steno in map(os.path.abspath, args.steno):  # every steno beside the peer: a before/after pair too
            for seconds, path in clips.items():
                for tag, gemm in gemms:
                    commands[(steno, f"nemo-tiny {seconds} s{tag}")] = [steno, "transcribe", "-t", "2", *gemm,
                                                                        "--model", steno_dir, path]
        for name, options in PEER_BUILDS.items():
            cli = build_peer(args.whisper_cpp, name, options)
            for seconds, path in clips.items():
                commands[(f"whisper.cpp parakeet-cli ({name})", f"nemo-tiny {seconds} s")] = [
                    cli, "-m", ggml, "-f", path, "-t", "2", "-ng"]

    walls = {key: [] for key in commands}
    rss = {key: 0.0 for key in commands}
    texts = {}
    for _ in range(args.runs):
        for key, cmd in commands.items():
            wall, out = run_once(cmd)
            walls[key].append(wall)
            texts[key] = out.strip()
    # The resident set from one more run of each under /usr/bin/time (the children's ru_maxrss is a running
    # maximum over all of them).
    for key, cmd in commands.items():
        r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, text=True, check=True)
        rss[key] = int(r.stderr.strip().splitlines()[-1]) / 1024

    results = []
    for (binary, name), w in walls.items():
        results.append({"binary": binary, "command": name, "runs": len(w), "median_ms": statistics.median(w),
                        "min_ms": min(w), "max_ms": max(w), "max_rss_mib": rss[(binary, name)],
                        "output": texts[(binary, name)] if " s" in name else None})
    doc = {"machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                       "kernel": platform.release()},
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "runs": args.runs, "results": results}
    text = json.dumps(doc, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    for r in results:
        print(f"{r['median_ms']:8.1f} ms  {r['max_rss_mib']:6.1f} MiB  {r['command']:28s} {r['binary']}")


if __name__ == "__main__":
    main()
