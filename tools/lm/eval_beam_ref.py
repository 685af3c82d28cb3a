#!/usr/bin/env python3
"""Word error rates of the PyTorch reference's beam search (tools/steno_ref/beam.py), with or without a token LM
(tools/lm/token_lm.py's ARPA), on held-out sets, per set and voice, for several settings at once: the encoder runs
once per clip and each setting decodes its output. What chooses the beam settings on a validation set
(tools/data/make_testset.sh with TESTSET_DEST, TESTSET_SEED=2) before the test set is measured once.

  /usr/bin/python3 tools/lm/eval_beam_ref.py SETS_DIR MODEL_DIR [--lm LM.arpa[.gz]] \\
      --settings "BEAM,ALPHA,BETA;..." [--exclude-sentences-of tests/data/testset]

BEAM 0 is greedy decoding (tools/steno_ref/decoding.py), for the comparison. Sets, exclusion, normalisation and
voice groups are eval_heldout.py's.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
ROOT = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TOOLS, "train"))

import torch  # noqa: E402
import sentencepiece as spm  # noqa: E402

from eval_heldout import add_clip, load_sets, report_lines, write_texts  # noqa: E402
from steno_ref.beam import beam_tdt  # noqa: E402
from steno_ref.decoding import greedy_tdt_batch  # noqa: E402
from steno_ref.modeldir import load_model_dir  # noqa: E402
from token_lm import Arpa  # noqa: E402
from transcribe_ref import encode_one, read_audio  # noqa: E402


def parse_settings(text):
    out = []
    for part in text.split(";"):
        b, a, be = part.split(",")
        out.append((int(b), float(a), float(be)))
    return out


def decode(model, enc, lm, setting):
    """enc: one clip's encoder output [T, d]."""
    beam, alpha, beta = setting
    if beam == 0:
        return greedy_tdt_batch(model, enc.T.unsqueeze(0), torch.tensor([enc.shape[0]]))[0]["tokens"]
    return beam_tdt(model, enc, lm, alpha, beta, beam)[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sets_dir")
    ap.add_argument("model")
    ap.add_argument("--lm", help="token LM, ARPA (.gz allowed)")
    ap.add_argument("--settings", required=True, help='"BEAM,ALPHA,BETA;..." (BEAM 0: greedy)')
    ap.add_argument("--texts", metavar="FILE", help="every clip's transcript of the last setting (TSV: path, text)")
    ap.add_argument("--exclude-sentences-of", default=os.path.join(ROOT, "tests", "data", "testset"),
                    metavar="DIR", help="leave out clips whose sentence is in this set's manifests ('' for none)")
    args = ap.parse_args(argv)
    model, cfg = load_model_dir(args.model)
    model.eval()
    sp = spm.SentencePieceProcessor(model_file=os.path.join(args.model, cfg["tokenizer"]["model"]))
    lm = Arpa(args.lm, sp.get_piece_size()) if args.lm else None
    if lm is not None:
        print(f"LM {args.lm}: order {lm.order}, {len(lm.p):,} n-grams")
    sets = load_sets(args.sets_dir, args.exclude_sentences_of)
    clips = [(name, path, ref, voice, encode_one(model, read_audio(path)))
             for name, cs in sets.items() for path, ref, voice in cs]
    print(f"{len(clips)} clips encoded ({', '.join(f'{n} {len(c)}' for n, c in sets.items())})")
    for setting in parse_settings(args.settings):
        if setting[0] > 0 and setting[1] != 0.0 and lm is None:
            sys.exit("eval_beam_ref: ALPHA != 0 needs --lm")
        t0 = time.time()
        res = {name: {"": [0, 0]} for name in sets}
        texts = {}
        for name, path, ref, voice, enc in clips:
            texts[path] = sp.decode(list(map(int, decode(model, enc, lm, setting))))
            add_clip(res[name], ref, texts[path], voice)
        label = "greedy" if setting[0] == 0 else "beam {} alpha {} beta {}".format(*setting)
        print("\n".join(report_lines(f"{label} ({time.time() - t0:.0f} s)", res)), flush=True)
        if args.texts:
            write_texts(args.texts, texts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
