"""The diarizer recipe end to end at toy size (CPU, espeak-ng): a speaker pool, a few training steps on composed
conversations, a checkpoint, a resumed run, the export, and the exported directory loading into steno_ref with
the exported config (about 20 s)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOOLS, "train"))
sys.path.insert(0, TOOLS)


@unittest.skipUnless(shutil.which("espeak-ng"), "espeak-ng is not installed")
class TrainDiarSmoke(unittest.TestCase):
    def test_pool_conversations_train_resume_export(self):
        import diar_conversations as dc
        import train_diar
        from steno_ref import safetensors_io
        from steno_ref.modeldir import load_weights
        from steno_ref.sortformer import Sortformer

        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(TOOLS, "train", "configs", "diar-small.yaml"), encoding="utf-8") as f:
                y = yaml.safe_load(f)
            m = y["model"]
            m["encoder"].update(d_model=32, n_layers=1, subsampling_conv_channels=16)
            m["transformer_encoder"].update(num_layers=1, hidden_size=16, inner_size=32)
            m["sortformer_modules"].update(fc_d_model=32, tf_d_model=16)
            y["train"].update(seconds=[6, 10], batch_seconds=20, max_steps=3, warmup=2, pool_voices=4,
                              pool_per_voice=3)
            config = os.path.join(d, "tiny.yaml")
            with open(config, "w", encoding="utf-8") as f:
                yaml.safe_dump(y, f)
            out, pool = os.path.join(d, "ckpt"), os.path.join(d, "pool")
            common = ["--config", config, "--out", out, "--pool", pool, "--jobs", "2", "--device", "cpu",
                      "--synthesizers", "espeak",
                      "--eval-every", "2", "--val-count", "2"]
            self.assertEqual(train_diar.main(common), 0)
            self.assertTrue(os.path.exists(os.path.join(pool, "audio.npy")))
            self.assertEqual(train_diar.main(common + ["--resume", "--max-steps", "5"]), 0)
            with open(os.path.join(out, "train.log"), encoding="utf-8") as f:
                text = f.read()
            self.assertIn("saved", text)
            self.assertIn("at step 5", text)  # the resumed run continued from step 3
            self.assertIn("held-out frame DER", text)
            model_dir = os.path.join(d, "model")
            self.assertEqual(train_diar.main(common + ["--export", model_dir]), 0)
            with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
                cfg = json.load(f)
            self.assertEqual(cfg["model_type"], "sortformer")
            self.assertEqual(cfg["preprocessor"]["normalize"], "none")
            self.assertNotIn("dropout", cfg["encoder"])
            arrays, _, _ = safetensors_io.load(os.path.join(model_dir, "model.safetensors"))
            load_weights(Sortformer(cfg), arrays)  # every tensor present with its shape

        # Labels: arrival order, half-frame coverage.
        segs = [(1, 0.0, 0.40), (0, 0.30, 0.50)]
        y = dc.frame_targets(segs, 8, 4)
        np.testing.assert_array_equal(y[:, 0], [1, 1, 1, 1, 1, 0, 0, 0])  # speaker "1" spoke first
        np.testing.assert_array_equal(y[:, 1], [0, 0, 0, 0, 1, 1, 0, 0])  # 0.32-0.40 = 0.08 s; 0.40-0.48 full
        self.assertAlmostEqual(dc.overlap_fraction(segs), 0.1 / 0.5, places=2)


if __name__ == "__main__":
    unittest.main()
