#!/usr/bin/env python3
"""Word error rates of ASR model directories on sets of held-out clips, transcribed by the C++ engine as a user
runs it (`steno transcribe`), per set, per voice and in all: to choose between training checkpoints on a
validation set made like the test set (tools/data/make_testset.sh with TESTSET_DEST, TESTSET_SEED=2), so that
the committed test set is not what the choice is made on.

  /usr/bin/python3 tools/train/eval_heldout.py [--steno build/apps/steno/steno] \\
      [--exclude-sentences-of tests/data/testset] [--and-sets SETS_DIR2] SETS_DIR MODEL_DIR...

SETS_DIR holds one folder per set (espeak, flite, festival), each with manifest.jsonl. Clips whose sentence is in
the same set of --exclude-sentences-of are left out (a validation set drawn from the test set's sentence split
repeats some of its sentences). The normalisation is the C++ test's (src/asr/wer.cc): lower case, letters,
digits, apostrophes and non-ASCII kept, everything else a word break. Voices group as the C++ test groups them
(espeak-ng by base voice, the others by voice). Each model's last line counts the errors on the voices no training
heard (the whole espeak-ng set, and each other set's held-out voice, as tools/data/make_dataset.py keeps them):
the figure a release is chosen on, since that is what the test sets measure.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "data"))

from make_dataset import SYNTH_TEST_SPLITS, TRAIN_VOICES  # noqa: E402
from wer import edit_distance, normalize  # noqa: E402

# Set name -> the voice groups training never hears ("" = the whole set: espeak-ng's test voices are all held out).
HELD_OUT = {"espeak": [""]}
HELD_OUT.update({family: [f"{family}:{v}" for v in voices if v not in TRAIN_VOICES[family]]
                 for family, voices in SYNTH_TEST_SPLITS.values()})


def read_manifest(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def voice_group(voice):
    return voice.split("+")[0]


def transcribe(steno, model, files, extra=()):
    """steno transcribe -f json [extra] over the files, in one process -> {file: text}."""
    run = subprocess.run([steno, "--log-level", "error", "transcribe", "-m", model, "-f", "json", *extra] + files,
                         capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"eval_heldout: {steno} transcribe -m {model} failed ({run.returncode}): {run.stderr.strip()}")
    out = run.stdout
    return {r["file"]: r["text"] for r in json.loads(out)["files"]}


def evaluate(steno, model, sets, extra=(), texts_out=None):
    """sets: {name: [(audio path, reference text, voice)]} -> {name: {group: [errors, words]}} (group '' = all).
    texts_out, a dict, receives every clip's transcript."""
    result = {}
    for name, clips in sets.items():
        texts = transcribe(steno, model, [c[0] for c in clips], extra)
        if texts_out is not None:
            texts_out.update(texts)
        tally = {"": [0, 0]}
        for path, ref, voice in clips:
            add_clip(tally, ref, texts[path], voice)
        result[name] = tally
    return result


def add_clip(tally, ref, hyp, voice):
    """One clip's word errors into a set's tally {group: [errors, words]} (group '' = all)."""
    r, h = normalize(ref).split(), normalize(hyp).split()
    e = edit_distance(r, h)
    for g in ("", voice_group(voice)):
        t = tally.setdefault(g, [0, 0])
        t[0] += e
        t[1] += len(r)


def report_lines(label, res):
    """`label`: each set's WER and the errors in all; then a line a set with its voice groups' WERs."""
    total = [sum(t[""][0] for t in res.values()), sum(t[""][1] for t in res.values())]
    cells = [f"{n} {100.0 * t[''][0] / max(1, t[''][1]):.2f} % ({t[''][0]}/{t[''][1]})" for n, t in res.items()]
    lines = [f"{label}: " + ", ".join(cells) + f"; errors in all {total[0]} of {total[1]} words"]
    for n, t in res.items():
        groups = sorted(g for g in t if g)
        lines.append("    " + n + ": " + ", ".join(f"{g} {100.0 * t[g][0] / max(1, t[g][1]):.1f} %" for g in groups))
    held = held_out_errors(res)
    lines.append(f"    held-out voices: {held[0]} errors of {held[1]} words")
    return lines


def held_out_errors(res):
    """[errors, words] on the voices no training heard, over the sets that `res` has."""
    out = [0, 0]
    for name, tally in res.items():
        for g in HELD_OUT.get(name, []):
            out[0] += tally.get(g, [0, 0])[0]
            out[1] += tally.get(g, [0, 0])[1]
    return out


def write_texts(path, texts):
    """Every clip's transcript, a TSV line each (path, text), sorted by path."""
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(f"{p}\t{text}\n" for p, text in sorted(texts.items()))


def load_sets(sets_dir, exclude_dir):
    sets = {}
    if not os.path.isdir(sets_dir):
        sys.exit(f"eval_heldout: no folder {sets_dir}")
    for name in sorted(os.listdir(sets_dir)):
        manifest = os.path.join(sets_dir, name, "manifest.jsonl")
        if not os.path.isfile(manifest):
            continue
        seen = set()
        other = os.path.join(exclude_dir, name, "manifest.jsonl") if exclude_dir else ""
        if other and os.path.isfile(other):
            seen = {normalize(r["text"]) for r in read_manifest(other)}
        clips = [(os.path.join(sets_dir, name, r["audio_filepath"]), r["text"], r.get("voice", "?"))
                 for r in read_manifest(manifest) if normalize(r["text"]) not in seen]
        if clips:
            sets[name] = clips
    return sets


def load_all_sets(sets_dirs, exclude_dir):
    """load_sets of every folder, the clips of same-named sets joined (in the folders' order)."""
    sets = {}
    for d in sets_dirs:
        for name, clips in load_sets(d, exclude_dir).items():
            sets.setdefault(name, []).extend(clips)
    return dict(sorted(sets.items()))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sets_dir")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--and-sets", action="append", default=[], metavar="DIR",
                    help="another folder of sets (repeatable): its clips join the sets of the same name, so that one "
                         "report covers several validation sets")
    ap.add_argument("--steno", default=os.path.join(ROOT, "build", "apps", "steno", "steno"))
    ap.add_argument("--exclude-sentences-of", default=os.path.join(ROOT, "tests", "data", "testset"),
                    metavar="DIR", help="leave out clips whose sentence is in this set's manifests ('' for none)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    ap.add_argument("--steno-args", default="--decoding greedy", metavar="ARGS",
                    help='`steno transcribe` arguments (default "--decoding greedy": a training export decodes '
                         'greedily by default and a release with its LM, so that they compare alike; "" for each '
                         'model\'s own default), e.g. "--lm LM.arpa.gz --beam-size 8"')
    ap.add_argument("--texts", metavar="FILE", help="also write every clip's transcript (TSV: path, text)")
    args = ap.parse_args(argv)
    sets = load_all_sets([args.sets_dir] + args.and_sets, args.exclude_sentences_of)
    if not sets:
        sys.exit(f"eval_heldout: no set with a manifest.jsonl in {args.sets_dir}")
    for name, clips in sets.items():
        print(f"{name}: {len(clips)} clips")
    report = {}
    texts = {}
    for model in args.models:
        res = evaluate(args.steno, model, sets, args.steno_args.split(), texts)
        report[model] = res
        print("\n".join(report_lines(model, res)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    if args.texts:
        write_texts(args.texts, texts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
