#!/usr/bin/env python3
"""A probe set for a synthesizer family make_dataset.py does not have yet: RHVoice (Debian non-free: rhvoice,
rhvoice-english), whose six English voices are HMM voices built from CMU ARCTIC recordings (alan, bdl, clb, slt)
and two Russian speakers' English (evgeniy-eng, lyubov). It speaks the first N sentences of a manifest with every
voice into DEST/rhvoice (audio/*.wav, manifest.jsonl with "rhvoice:VOICE"), so that eval_heldout.py can say how
far a model is from this family before any training:

  /usr/bin/python3 tools/data/probe_rhvoice.py build-data/valset/festival/manifest.jsonl /tmp/rhprobe 12
  /usr/bin/python3 tools/train/eval_heldout.py /tmp/rhprobe models/steno-tdt-small-en

Needs RHVoice-test on PATH (the rhvoice package). Standard library only.
"""
import json
import os
import subprocess
import sys

VOICES = ["alan", "bdl", "clb", "slt", "evgeniy-eng", "lyubov"]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 3:
        sys.exit(__doc__)
    manifest, dest, count = argv[0], argv[1], int(argv[2])
    with open(manifest, encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f if line.strip()][:count]
    out = os.path.join(dest, "rhvoice")
    os.makedirs(os.path.join(out, "audio"), exist_ok=True)
    rows = []
    for voice in VOICES:
        for i, text in enumerate(texts):
            rel = f"audio/{voice}-{i:04d}.wav"
            run = subprocess.run(["RHVoice-test", "-p", voice, "-o", os.path.join(out, rel)], input=text.encode(),
                                 capture_output=True)
            if run.returncode != 0:
                sys.exit(f"probe_rhvoice: RHVoice-test -p {voice} failed: {run.stderr.decode().strip()}")
            rows.append({"audio_filepath": rel, "text": text, "voice": f"rhvoice:{voice}"})
    with open(os.path.join(out, "manifest.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    print(f"probe_rhvoice: {len(rows)} clips in {out}")


if __name__ == "__main__":
    main()
