#!/usr/bin/env python3
"""Transcribe a manifest's clips with the PyTorch reference (tools/steno_ref), each clip alone, and write
`audio_filepath<TAB>text` lines: the golden transcript list the C++ engine must reproduce on the bundled model's
test set (tests/engine/bundled_model_test.cc).

  /usr/bin/python3 tools/transcribe_ref.py MODEL_DIR MANIFEST.jsonl OUT.tsv [--beam N --lm LM --alpha A --beta B
      --lexicon WORDS --unknown-word-penalty P]

With --beam (or --lm) the clips are decoded by the reference's beam search (tools/steno_ref/beam.py), the token
LM (tools/lm/token_lm.py's ARPA) fused with weight alpha and beta per token: what `steno transcribe --lm LM
--beam-size N --lm-alpha A --lm-beta B` must reproduce. --lexicon (a word list, tools/lm/word_list.py's) adds the
unknown-word penalty, as a model's config.json names them (`decoding.lexicon`, `decoding.unknown_word_penalty`).

Audio is read with the `flac` command-line decoder (FLAC) or the wave module (WAV), as int16 / 32768, the way
steno reads it.
"""
import argparse
import json
import os
import subprocess
import sys
import wave

import numpy as np
import torch
import sentencepiece as spm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from steno_ref.modeldir import load_model_dir  # noqa: E402
from steno_ref.run import int16_to_float, run_batch  # noqa: E402
from steno_ref.beam import Lexicon, beam_tdt  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lm"))
from token_lm import Arpa  # noqa: E402
from word_list import read_words  # noqa: E402


def read_audio(path):
    if path.endswith(".flac"):
        raw = subprocess.run(["flac", "-d", "-s", "-c", "--force-raw-format", "--endian=little", "--sign=signed",
                              path], check=True, capture_output=True).stdout
        return int16_to_float(np.frombuffer(raw, dtype="<i2"))
    with wave.open(path, "rb") as w:
        if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (16000, 1, 2):
            raise ValueError(f"{path}: expected 16 kHz mono int16")
        return int16_to_float(np.frombuffer(w.readframes(w.getnframes()), dtype="<i2"))


@torch.no_grad()
def encode_one(model, clip):
    """One clip's encoder output, frames first [T, d]."""
    audio = torch.from_numpy(clip).unsqueeze(0)
    feats, fl = model.preprocessor(audio, torch.tensor([audio.shape[1]]))
    enc, el = model.encoder(feats, fl)
    return enc[0, :, :int(el[0])].T.contiguous()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("manifest")
    ap.add_argument("out_path")
    ap.add_argument("--beam", type=int, default=0, help="beam size (0: greedy; 8 when --lm is given)")
    ap.add_argument("--lm", help="token LM, ARPA (.gz allowed)")
    ap.add_argument("--alpha", type=float, default=0.0)
    ap.add_argument("--beta", type=float, default=0.0)
    ap.add_argument("--lexicon", help="word list, one word a line (.gz allowed)")
    ap.add_argument("--unknown-word-penalty", type=float, default=0.0)
    args = ap.parse_args()
    model_dir, manifest, out_path = args.model_dir, args.manifest, args.out_path
    model, cfg = load_model_dir(model_dir)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, cfg["tokenizer"]["model"]))
    beam = args.beam or (8 if args.lm else 0)
    lm = Arpa(args.lm, sp.get_piece_size()) if args.lm else None
    lexicon = None
    if args.lexicon:
        lexicon = Lexicon(read_words(args.lexicon), [sp.id_to_piece(i) for i in range(sp.get_piece_size())])
    base = os.path.dirname(os.path.abspath(manifest))
    lines = []
    with open(manifest, encoding="utf-8") as f:
        for line in f:
            entry = json.loads(line)
            clip = read_audio(os.path.join(base, entry["audio_filepath"]))
            if beam:
                tokens = beam_tdt(model, encode_one(model, clip), lm, args.alpha, args.beta, beam, lexicon=lexicon,
                                  unknown_word_penalty=args.unknown_word_penalty)[0]
            else:
                tokens = run_batch(model, [clip])[1][0]["tokens"]
            lines.append(f"{entry['audio_filepath']}\t{sp.decode(list(map(int, tokens)))}\n")
    with open(out_path, "w", encoding="utf-8") as f:
        f.writelines(lines)
    print(f"wrote {out_path}: {len(lines)} transcripts")


if __name__ == "__main__":
    main()
