"""The Sortformer reference (tools/steno_ref/sortformer.py) reproduces NeMo's own outputs for sortformer-tiny
(tests/data/sortformer-tiny), and tools/convert_nemo.py converts Sortformer .nemo files.

Runs the converter on model.nemo, loads the directory into the reference and compares every stage with
golden.npz: each clip alone (per-clip peak normalisation) and the batch with NeMo's batch-wide factor.

  /usr/bin/python3 -m unittest discover -s tools/tests
"""
import json
import os
import sys
import tempfile
import unittest

import numpy as np
import torch

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOOLS)
REF = os.path.join(os.path.dirname(TOOLS), "tests", "data", "sortformer-tiny")
REL_TOL = 1e-4
STAGES = ("features", "pre_encode", "encoded", "encoder_proj", "transformer", "logits", "preds")

import convert_nemo  # noqa: E402
from steno_ref import safetensors_io  # noqa: E402
from steno_ref.modeldir import load_weights  # noqa: E402
from steno_ref.sortformer import Sortformer  # noqa: E402


def rel_err(a, b):
    return float(np.abs(a.astype(np.float64) - b).max() / max(float(np.abs(b).max()), 1e-30))


class SortformerReferenceVsNemo(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        out = os.path.join(cls.tmp.name, "sf")
        convert_nemo.convert(os.path.join(REF, "model.nemo"), out)
        with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
            cls.cfg = json.load(f)
        cls.model = Sortformer(cls.cfg)
        arrays, _, _ = safetensors_io.load(os.path.join(out, "model.safetensors"))
        load_weights(cls.model, arrays)
        cls.g = np.load(os.path.join(REF, "golden.npz"))
        cls.clips = [cls.g[f"audio.clip{i}"].astype(np.float32) / 32768 for i in range(3)]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_clips(self, idx, batch_peak):
        lengths = torch.tensor([len(self.clips[i]) for i in idx])
        audio = torch.zeros(len(idx), int(lengths.max()))
        for j, i in enumerate(idx):
            audio[j, :len(self.clips[i])] = torch.from_numpy(self.clips[i])
        cap = {}
        with torch.no_grad():
            _, probs, _ = self.model(audio, lengths, batch_peak, cap)
        cap["preds"] = probs
        return {k: v.numpy() for k, v in cap.items()}

    def test_config_is_sortformer_with_nemo_defaults(self):
        self.assertEqual(self.cfg["model_type"], "sortformer")
        self.assertEqual(self.cfg["sortformer_modules"]["num_spks"], 4)
        self.assertEqual(self.cfg["postprocessing"]["onset"], 0.5)
        self.assertFalse(self.cfg["streaming_mode"])

    def test_single_clips(self):
        for i in range(3):
            out = self.run_clips([i], batch_peak=False)
            for k in STAGES:
                with self.subTest(clip=i, stage=k):
                    self.assertLessEqual(rel_err(out[k], self.g[f"single{i}.{k}"]), REL_TOL)

    def test_batch_with_nemos_batch_wide_factor(self):
        out = self.run_clips([0, 1, 2], batch_peak=True)
        for k in STAGES:
            with self.subTest(stage=k):
                self.assertLessEqual(rel_err(out[k], self.g[f"batch.{k}"]), REL_TOL)

    def test_postprocessing_yaml_and_errors(self):
        with tempfile.TemporaryDirectory() as d:
            good = os.path.join(d, "pp.yaml")
            with open(good, "w") as f:
                f.write("parameters:\n  onset: 0.6\n  min_duration_off: 0.2\n")
            cfg = convert_nemo.convert(os.path.join(REF, "model.nemo"), os.path.join(d, "m"), postprocessing=good)
            self.assertEqual(cfg["postprocessing"]["onset"], 0.6)
            self.assertEqual(cfg["postprocessing"]["offset"], 0.5)
            self.assertEqual(cfg["postprocessing"]["min_duration_off"], 0.2)
            bad = os.path.join(d, "bad.yaml")
            with open(bad, "w") as f:
                f.write("parameters:\n  onsett: 0.6\n")
            with self.assertRaisesRegex(convert_nemo.ConvertError, "onsett"):
                convert_nemo.convert(os.path.join(REF, "model.nemo"), os.path.join(d, "m2"), postprocessing=bad)

    def test_interpolations_resolve(self):
        y = {"model_defaults": {"fc_d_model": 512}, "sortformer_modules": {"fc_d_model": "${model_defaults.fc_d_model}"}}
        self.assertEqual(convert_nemo.resolve_interpolations(y, y)["sortformer_modules"]["fc_d_model"], 512)
        with self.assertRaises(convert_nemo.ConvertError):
            convert_nemo.resolve_interpolations({"a": "${nope.x}"}, {})


if __name__ == "__main__":
    unittest.main()
