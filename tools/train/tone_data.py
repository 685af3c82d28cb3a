#!/usr/bin/env python3
"""A synthetic "tone speech" corpus for checking the training pipeline without real or TTS audio: every letter
is a 60 ms windowed sine (frequency from the letter), words are separated by 80 ms of silence. A model can learn
to transcribe it perfectly in a few hundred steps, so it tests loss, decoding, checkpoints and export end to end.

  python3 tools/train/tone_data.py OUTDIR [--n 200] [--val 16] [--max-words 4] [--seed 0] [--vocab-size 0]

Writes OUTDIR/wav/*.wav (16 kHz int16 mono), OUTDIR/train.jsonl, OUTDIR/val.jsonl (NeMo manifests) and
OUTDIR/text.txt; with --vocab-size N also a SentencePiece BPE OUTDIR/tokenizer.model (spm_train if installed,
else the sentencepiece Python module).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import write_wav  # noqa: E402

WORDS = ("the of and to in is was that for on are with as be at one have this from by hot word but what some "
         "we can out other were all there when up use your how said an each she which do their time if will way "
         "about many then them write would like so these her long make thing see him two has look more day could "
         "go come did number sound no most people my over know water than call first who may down side been now "
         "find any new work part take get place made live where after back little only round man year came show "
         "every good me give our under name very through just form sentence great think say help low line differ "
         "turn cause much mean before move right boy old too same tell does set three want air well also play "
         "small end put home read hand port large spell add even land here must big high such follow act why ask "
         "men change went light kind off need house picture try us again animal point mother world near build "
         "self earth father head stand own page should country found answer school grow study still learn plant "
         "cover food sun four between state keep eye never last let thought city tree cross farm hard start might "
         "story saw far sea draw left late run don't while press close night real life few north zero nine").split()


def tone_clip(text, rng, sr=16000):
    out = [np.zeros(int(sr * rng.uniform(0.05, 0.2)))]
    for w in text.split():
        for ch in w:
            n = int(sr * 0.06)
            f = 250.0 + 45.0 * ((ord(ch) - 96) % 28)
            out.append(0.3 * np.sin(2 * np.pi * f * np.arange(n) / sr) * np.hanning(n))
        out.append(np.zeros(int(sr * 0.08)))
    return (np.concatenate(out) * 32767).astype(np.int16)


def make_corpus(out, n, val, max_words, seed, min_words=1):
    rng = np.random.RandomState(seed)
    os.makedirs(os.path.join(out, "wav"), exist_ok=True)
    rows = []
    for i in range(n + val):
        text = " ".join(rng.choice(WORDS, rng.randint(min_words, max_words + 1)))
        a = tone_clip(text, rng)
        rel = os.path.join("wav", f"t{i:06d}.wav")
        write_wav(os.path.join(out, rel), a)
        rows.append({"audio_filepath": rel, "text": text, "duration": round(len(a) / 16000.0, 6)})
    for name, part in (("train.jsonl", rows[:n]), ("val.jsonl", rows[n:])):
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in part)
    with open(os.path.join(out, "text.txt"), "w", encoding="utf-8") as f:
        f.write(" ".join(WORDS) + "\n")
        f.writelines(r["text"] + "\n" for r in rows[:n])
    return rows


def train_tokenizer(text_path, prefix, vocab_size):
    """BPE with <unk> = 0 and no BOS/EOS, as NeMo's tokenizer script makes them."""
    args = [f"--input={text_path}", f"--model_prefix={prefix}", f"--vocab_size={vocab_size}", "--model_type=bpe",
            "--character_coverage=1.0", "--bos_id=-1", "--eos_id=-1", "--unk_id=0", "--hard_vocab_limit=false"]
    if shutil.which("spm_train"):
        r = subprocess.run(["spm_train"] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            raise RuntimeError("spm_train failed:\n" + r.stdout.decode("utf-8", "replace")[-2000:])
    else:
        import sentencepiece as spm
        spm.SentencePieceTrainer.train(" ".join(args))
    return prefix + ".model"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--val", type=int, default=16)
    ap.add_argument("--min-words", type=int, default=1)
    ap.add_argument("--max-words", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab-size", type=int, default=0)
    a = ap.parse_args(argv)
    rows = make_corpus(a.out, a.n, a.val, a.max_words, a.seed, a.min_words)
    hours = sum(r["duration"] for r in rows) / 3600
    msg = f"{len(rows)} clips, {hours:.2f} h in {a.out}"
    if a.vocab_size:
        msg += ", tokenizer " + train_tokenizer(os.path.join(a.out, "text.txt"), os.path.join(a.out, "tokenizer"),
                                                a.vocab_size)
    print(msg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
