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
joins: its parakeet-cli is built there three ways (default; GGML_LLAMAFILE; GGML_BLAS with OpenBLAS). Its Parakeet
loader takes no encoder biases, so the peer's model is the bundled one without them (use_bias false; it still hears
the test set's words): written as one .nemo by tools/nemo/make_nemo.py, converted by whisper.cpp's converter (f32)
and imported for steno by `steno model import` (both need torch, numpy, pyyaml and sentencepiece:
$STENO_TORCH_PYTHON, default /usr/bin/python3 with Debian's packages). `transcribe` of each clip runs on that model
in every program ("bias-free N s"), 2 threads, no GPU, in the same rotation as steno's commands on the bundled
model itself, and the outputs are recorded so that the texts can be compared.
"""
import argparse
import json
import os
import platform
import re
import shutil
import statistics
import struct
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
# The encoder's biases that NeMo's use_bias covers (whisper.cpp's Parakeet loader takes none of them).
ENCODER_BIAS = re.compile(r"^encoder\.layers\.\d+\.(feed_forward[12]\.linear[12]|self_attn\.linear_(q|k|v|out)|"
                          r"conv\.(pointwise_conv[12]|depthwise_conv))\.bias$")


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


def strip_encoder_biases(src, dst):
    """The model directory SRC without its encoder biases (use_bias false) in DST: the safetensors file rewritten
    without those tensors, config.json with use_bias false, the tokenizer copied."""
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(src, "model.safetensors"), "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    meta = header.pop("__metadata__", None)
    kept, blobs, offset = {}, [], 0
    for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        if ENCODER_BIAS.match(name):
            continue
        blob = data[t["data_offsets"][0]:t["data_offsets"][1]]
        kept[name] = {"dtype": t["dtype"], "shape": t["shape"], "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    if meta is not None:
        kept["__metadata__"] = meta
    head = json.dumps(kept, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    cfg["encoder"]["use_bias"] = False
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    shutil.copy(os.path.join(src, "tokenizer.model"), dst)


def peer_model(src, steno, work):
    """The bundled model without its encoder biases as one .nemo (tools/nemo/make_nemo.py), converted by
    whisper.cpp's converter (f32) and imported by `steno model import`: (ggml path, steno directory), the same
    weights in both programs."""
    python = os.environ.get("STENO_TORCH_PYTHON", "/usr/bin/python3")
    stripped, nemo = os.path.join(work, "bias-free"), os.path.join(work, "bias-free.nemo")
    strip_encoder_biases(MODEL, stripped)
    subprocess.run([python, os.path.join(ROOT, "tools", "nemo", "make_nemo.py"), stripped, nemo], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([python, os.path.join(src, "models", "convert-parakeet-to-ggml.py"), "--model", nemo,
                    "--out-dir", work, "--use-f32"], check=True, stdout=subprocess.DEVNULL)
    steno_dir = os.path.join(work, "bias-free-steno")
    subprocess.run([steno, "model", "import", nemo, "--out", steno_dir], check=True, stdout=subprocess.DEVNULL)
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
    ap.add_argument("--whisper-cpp", help="a whisper.cpp source tree: its parakeet-cli joins on the bundled model "
                                          "without its encoder biases")
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
                    commands[(steno, f"bias-free {seconds} s{tag}")] = [steno, "transcribe", "-t", "2", *gemm,
                                                                        "--model", steno_dir, path]
        for name, options in PEER_BUILDS.items():
            cli = build_peer(args.whisper_cpp, name, options)
            for seconds, path in clips.items():
                commands[(f"whisper.cpp parakeet-cli ({name})", f"bias-free {seconds} s")] = [
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
