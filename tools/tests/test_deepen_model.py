"""tools/train/deepen_model.py: new conformer layers that start as the identity, so the deeper model computes
what the released one computes.

  /usr/bin/python3 -m unittest discover -s tools/tests -p test_deepen_model.py
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(TOOLS)
sys.path.insert(0, os.path.join(TOOLS, "train"))
sys.path.insert(0, TOOLS)

import deepen_model  # noqa: E402
from steno_ref.modeldir import load_model_dir  # noqa: E402
from steno_ref.run import run_batch  # noqa: E402
from transcribe_ref import read_audio  # noqa: E402

BUNDLED = os.path.join(ROOT, "models", "steno-tdt-small-en")
TESTSET = os.path.join(ROOT, "tests", "data", "testset")


def layer(i, scale):
    return {f"encoder.layers.{i}.norm_out.weight": np.full(2, scale, np.float32),
            f"encoder.layers.{i}.norm_out.bias": np.full(2, scale + 0.5, np.float32),
            f"encoder.layers.{i}.feed_forward1.linear1.weight": np.full((4, 2), scale, np.float32),
            f"encoder.layers.{i}.feed_forward1.linear2.weight": np.full((2, 4), scale, np.float32),
            f"encoder.layers.{i}.self_attn.linear_out.bias": np.full(2, scale, np.float32)}


class DeepenTensorsTest(unittest.TestCase):
    def setUp(self):
        self.tensors = {"joint.enc.weight": np.ones((3, 2), np.float32)}
        for i in range(3):
            self.tensors.update(layer(i, float(i + 1)))

    def test_new_layer_takes_over_norm_out_and_zeroes_branch_outputs(self):
        out = deepen_model.deepen(self.tensors, 3, [0])
        L = "encoder.layers."
        self.assertEqual(len(out), len(self.tensors) + 5)
        np.testing.assert_array_equal(out["joint.enc.weight"], self.tensors["joint.enc.weight"])
        # old layer 0: plain normalisation at its end
        np.testing.assert_array_equal(out[L + "0.norm_out.weight"], [1, 1])
        np.testing.assert_array_equal(out[L + "0.norm_out.bias"], [0, 0])
        np.testing.assert_array_equal(out[L + "0.feed_forward1.linear2.weight"], np.full((2, 4), 1.0))
        # new layer 1: layer 0's scale and shift, layer 1's other weights, branch outputs zero
        np.testing.assert_array_equal(out[L + "1.norm_out.weight"], [1, 1])
        np.testing.assert_array_equal(out[L + "1.norm_out.bias"], [1.5, 1.5])
        np.testing.assert_array_equal(out[L + "1.feed_forward1.linear1.weight"], np.full((4, 2), 2.0))
        np.testing.assert_array_equal(out[L + "1.feed_forward1.linear2.weight"], np.zeros((2, 4)))
        np.testing.assert_array_equal(out[L + "1.self_attn.linear_out.bias"], np.zeros(2))
        # old layers 1 and 2 renumbered, unchanged
        for old, new in ((1, 2), (2, 3)):
            for k, v in layer(old, float(old + 1)).items():
                np.testing.assert_array_equal(out[k.replace(f"layers.{old}.", f"layers.{new}.")], v)

    def test_after_the_last_layer_copies_the_last(self):
        out = deepen_model.deepen(self.tensors, 3, [2])
        np.testing.assert_array_equal(out["encoder.layers.3.feed_forward1.linear1.weight"], np.full((4, 2), 3.0))
        np.testing.assert_array_equal(out["encoder.layers.3.norm_out.bias"], [3.5, 3.5])

    def test_refuses_bad_positions(self):
        for after in ([3], [-1], [1, 1]):
            with self.assertRaisesRegex(ValueError, "must be distinct layers"):
                deepen_model.deepen(self.tensors, 3, after)
        with self.assertRaisesRegex(ValueError, "config says 2 layers"):
            deepen_model.deepen(self.tensors, 2, [0])

    def test_default_positions_spread_evenly(self):
        self.assertEqual(deepen_model.default_positions(8, 2), [3, 7])
        self.assertEqual(deepen_model.default_positions(8, 1), [7])
        self.assertEqual(deepen_model.default_positions(8, 4), [1, 3, 5, 7])


class DeepenBundledModelTest(unittest.TestCase):
    """The bundled model deepened by two layers: the same encoder output (f16 weights, f32 compute) and the same
    transcripts on test clips of every family."""

    def test_same_function(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "deep")
            subprocess.run([sys.executable, os.path.join(TOOLS, "train", "deepen_model.py"), BUNDLED, out],
                           check=True, capture_output=True)
            with open(os.path.join(BUNDLED, "config.json"), encoding="utf-8") as f:
                layers = json.load(f)["encoder"]["n_layers"]
            with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
                self.assertEqual(json.load(f)["encoder"]["n_layers"], layers + 2)
            base, _ = load_model_dir(BUNDLED)
            deep, _ = load_model_dir(out)
        clips = []
        for family, name in (("espeak", "test-0000002"), ("flite", "flite-test-0000003"),
                             ("pico", "pico-test-0000004")):
            clips.append(read_audio(os.path.join(TESTSET, family, "audio", name + ".flac")))
        torch.manual_seed(0)
        a, hyps_a = run_batch(base, clips)
        b, hyps_b = run_batch(deep, clips)
        scale = float(np.abs(a["encoded"]).max())
        self.assertLess(float(np.abs(a["encoded"] - b["encoded"]).max()), 1e-4 * scale)
        self.assertEqual([list(h["tokens"]) for h in hyps_a], [list(h["tokens"]) for h in hyps_b])
        self.assertTrue(all(len(h["tokens"]) > 0 for h in hyps_a))


if __name__ == "__main__":
    unittest.main()
