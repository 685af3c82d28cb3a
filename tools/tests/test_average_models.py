"""tools/train/average_models.py: the weighted average of model weights, and what it refuses.

  /usr/bin/python3 -m unittest discover -s tools/tests -p test_average_models.py
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOOLS, "train"))
sys.path.insert(0, TOOLS)

import average_models  # noqa: E402
from steno_ref import safetensors_io  # noqa: E402


class AverageTest(unittest.TestCase):
    def test_weighted_mean_in_each_tensors_dtype(self):
        a = {"w": np.array([1.0, 2.0], np.float16), "b": np.array([0.0], np.float32), "n": np.array([3], np.int64)}
        b = {"w": np.array([3.0, 4.0], np.float16), "b": np.array([1.0], np.float32), "n": np.array([3], np.int64)}
        out = average_models.average([a, b], [0.75, 0.25])
        np.testing.assert_array_equal(out["w"], np.array([1.5, 2.5], np.float16))
        self.assertEqual(out["w"].dtype, np.float16)
        np.testing.assert_allclose(out["b"], [0.25])
        np.testing.assert_array_equal(out["n"], [3])

    def test_refuses_what_cannot_be_averaged(self):
        a = {"w": np.zeros(2, np.float32), "n": np.array([1])}
        with self.assertRaisesRegex(ValueError, "sum to 1"):
            average_models.average([a, a], [0.5, 0.6])
        with self.assertRaisesRegex(ValueError, r"tensor w is \(3,\), not \(2,\)"):
            average_models.average([a, {"w": np.zeros(3, np.float32), "n": np.array([1])}], [0.5, 0.5])
        with self.assertRaisesRegex(ValueError, "differs"):
            average_models.average([a, {"w": np.zeros(2, np.float32), "n": np.array([2])}], [0.5, 0.5])
        with self.assertRaisesRegex(ValueError, "the first has not"):
            average_models.average([a, dict(a, x=np.zeros(1, np.float32))], [0.5, 0.5])

    def test_model_directories_end_to_end(self):
        with tempfile.TemporaryDirectory() as tmp:
            dirs = []
            for k, v in enumerate([1.0, 3.0]):
                d = os.path.join(tmp, f"m{k}")
                os.makedirs(d)
                safetensors_io.save(os.path.join(d, "model.safetensors"), {"w": np.full(4, v, np.float32)},
                                    dtypes={"w": "BF16"})
                json.dump({"model": "x"}, open(os.path.join(d, "config.json"), "w"))
                open(os.path.join(d, "tokenizer.model"), "wb").write(b"tok")
                dirs.append(d)
            out = os.path.join(tmp, "soup")
            script = os.path.join(TOOLS, "train", "average_models.py")
            subprocess.run([sys.executable, script, out, "0.5,0.5"] + dirs, check=True, capture_output=True)
            tensors, _, kinds = safetensors_io.load(os.path.join(out, "model.safetensors"))
            np.testing.assert_array_equal(tensors["w"], np.full(4, 2.0, np.float32))
            self.assertEqual(kinds["w"], "BF16")  # stored as the first model stores it
            self.assertEqual(open(os.path.join(out, "tokenizer.model"), "rb").read(), b"tok")
            json.dump({"model": "y"}, open(os.path.join(dirs[1], "config.json"), "w"))
            r = subprocess.run([sys.executable, script, out, "0.5,0.5"] + dirs, capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("config.json differ", r.stderr)

    def test_a_release_with_a_default_decoding_averages_with_an_export_without(self):
        # The release names its LM as its default decoding; a training export from it does not: same weights'
        # meaning, so they average, and the soup keeps the first model's decoding with the LM and word list it names.
        with tempfile.TemporaryDirectory() as tmp:
            dirs = []
            decodings = [{"durations": [0, 1], "strategy": "beam", "beam_size": 4, "lm": "lm.arpa.gz",
                          "lexicon": "words.txt.gz", "unknown_word_penalty": 2.0},
                         {"durations": [0, 1]}]
            for k, decoding in enumerate(decodings):
                d = os.path.join(tmp, f"m{k}")
                os.makedirs(d)
                safetensors_io.save(os.path.join(d, "model.safetensors"), {"w": np.full(2, k, np.float32)})
                json.dump({"decoding": decoding}, open(os.path.join(d, "config.json"), "w"))
                open(os.path.join(d, "tokenizer.model"), "wb").write(b"tok")
                dirs.append(d)
            open(os.path.join(dirs[0], "lm.arpa.gz"), "wb").write(b"lm")
            open(os.path.join(dirs[0], "words.txt.gz"), "wb").write(b"words")
            out = os.path.join(tmp, "soup")
            script = os.path.join(TOOLS, "train", "average_models.py")
            subprocess.run([sys.executable, script, out, "0.5,0.5"] + dirs, check=True, capture_output=True)
            self.assertEqual(json.load(open(os.path.join(out, "config.json")))["decoding"], decodings[0])
            self.assertEqual(open(os.path.join(out, "lm.arpa.gz"), "rb").read(), b"lm")
            self.assertEqual(open(os.path.join(out, "words.txt.gz"), "rb").read(), b"words")
            json.dump({"decoding": {"durations": [0, 2]}}, open(os.path.join(dirs[1], "config.json"), "w"))
            r = subprocess.run([sys.executable, script, out, "0.5,0.5"] + dirs, capture_output=True, text=True)
            self.assertIn("config.json differ", r.stderr)  # the durations are the weights' meaning


if __name__ == "__main__":
    unittest.main()
