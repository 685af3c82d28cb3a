"""Checks the committed golden sets under tests/data/golden (written by tools/make_golden.py).

- each set is a loadable steno model directory plus golden.safetensors/golden.json in the documented layout;
- re-running the reference on the stored audio reproduces the stored arrays (so the goldens are current);
- batched and single results agree: tokens and timestamps equal, jumps taken equal, and for front end 2.5
  encoder outputs within 1e-5 on valid frames. Front end 2.4 depends on padding by design (NeMo <= 2.4), so
  there only the longest clip, which has no padding in the batch, must agree.

  /usr/bin/python3 -m unittest discover -s tools/tests
"""
import json
import os
import sys
import unittest

import numpy as np

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOOLS)
GOLDEN = os.path.join(os.path.dirname(TOOLS), "tests", "data", "golden")

from steno_ref import safetensors_io  # noqa: E402
from steno_ref.modeldir import load_model_dir  # noqa: E402
from steno_ref.run import run_batch  # noqa: E402

SETS = sorted(d for d in os.listdir(GOLDEN) if os.path.isdir(os.path.join(GOLDEN, d))) if os.path.isdir(GOLDEN) else []
REQUIRED = ["input_lengths", "features", "features_lengths", "encoded", "encoded_lengths"]


def rel_err(a, b):
    return float(np.abs(a.astype(np.float64) - b).max() / max(float(np.abs(b).max()), 1e-30))


class GoldenSets(unittest.TestCase):
    cache = {}

    def load(self, name):
        if name not in self.cache:
            d = os.path.join(GOLDEN, name)
            model, cfg = load_model_dir(d)
            arrays, _, kinds = safetensors_io.load(os.path.join(d, "golden.safetensors"))
            with open(os.path.join(d, "golden.json"), encoding="utf-8") as f:
                gj = json.load(f)
            clips = [arrays[f"audio.clip{i}"] for i in range(3)]
            batch, _ = run_batch(model, clips, capture_layers=True, alignments=True)
            singles = [run_batch(model, [c], alignments=True)[0] for c in clips]
            self.cache[name] = (cfg, arrays, kinds, gj, batch, singles)
        return self.cache[name]

    def test_found_sets(self):
        self.assertGreaterEqual(len(SETS), 2, f"expected golden sets in {GOLDEN}")

    def test_layout(self):
        import sentencepiece as spm
        for name in SETS:
            with self.subTest(name):
                cfg, arrays, kinds, gj, _, _ = self.load(name)
                sp = spm.SentencePieceProcessor(model_file=os.path.join(GOLDEN, name, "tokenizer.model"))
                self.assertEqual(sp.get_piece_size(), cfg["decoder"]["vocab_size"])
                for p in ["batch"] + [f"single{i}" for i in range(3)]:
                    for k in REQUIRED if p == "batch" else ["input_lengths", "encoded", "encoded_lengths"]:
                        self.assertIn(f"{p}.{k}", arrays)
                    nh = 3 if p == "batch" else 1
                    for h in range(nh):
                        for k in ("tokens", "timestamps", "durations"):
                            self.assertEqual(kinds[f"{p}.hyp{h}.{k}"], "I64")
                        text = gj["texts"][f"{p}.hyp{h}.text"]
                        self.assertEqual(sp.decode_ids(arrays[f"{p}.hyp{h}.tokens"].tolist()), text)
                for k, kind in kinds.items():
                    self.assertIn(kind, ("F32", "I64"), k)
                meta = gj["meta"]
                self.assertGreaterEqual(min(meta["decision_margins"]["min_token_margin"],
                                            meta["decision_margins"]["min_duration_margin"]), 1e-3)
                st = meta["decode_stats_batch"]
                self.assertTrue(0.3 <= st["tokens_per_frame"] <= 0.5, st)
                self.assertTrue(all(c > 0 for c in st["duration_histogram"]), st)
                d = os.path.join(GOLDEN, name)
                size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
                           if not os.path.islink(os.path.join(d, f)))
                self.assertLess(size, 3_000_000)

    def test_reference_reproduces_goldens(self):
        for name in SETS:
            with self.subTest(name):
                _, arrays, _, _, batch, singles = self.load(name)
                ours = {f"batch.{k}": v for k, v in batch.items()}
                for i, s in enumerate(singles):
                    ours.update({f"single{i}.{k}": v for k, v in s.items()})
                for k, ref in arrays.items():
                    if k.startswith("audio."):
                        continue
                    self.assertIn(k, ours)
                    if ref.dtype.kind == "f":
                        self.assertLessEqual(rel_err(ours[k], ref), 1e-5, k)
                    else:
                        np.testing.assert_array_equal(ours[k], ref, err_msg=k)

    def test_batch_vs_single(self):
        for name in SETS:
            with self.subTest(name):
                cfg, _, _, _, batch, singles = self.load(name)
                v25 = cfg["preprocessor"]["frontend_version"] == "2.5"
                longest = int(np.argmax(batch["input_lengths"]))
                for i, s in enumerate(singles):
                    if not v25 and i != longest:
                        continue
                    n = int(s["encoded_lengths"][0])
                    self.assertEqual(int(batch["encoded_lengths"][i]), n)
                    err = float(np.abs(batch["encoded"][i, :, :n] - s["encoded"][0]).max())
                    self.assertLess(err, 1e-5, f"clip{i}")
                    nf = int(s["features_lengths"][0])
                    self.assertLess(float(np.abs(batch["features"][i, :, :nf] - s["features"][0, :, :nf]).max()), 1e-5)
                    for k in ("tokens", "timestamps"):
                        np.testing.assert_array_equal(batch[f"hyp{i}.{k}"], s[f"hyp0.{k}"], err_msg=f"clip{i} {k}")
                    np.testing.assert_array_equal(batch[f"hyp{i}.durations_used"], s["hyp0.durations"])

    def test_attention_window_exercised(self):
        for name in SETS:
            cfg, arrays, _, _, _, _ = self.load(name)
            if cfg["encoder"]["self_attention_model"] == "rel_pos_local_attn":
                w = cfg["encoder"]["att_context_size"][0]
                self.assertGreater(int(arrays["batch.encoded_lengths"].max()), 2 * w + 1)


if __name__ == "__main__":
    unittest.main()
