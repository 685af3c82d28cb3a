"""Two training options of tools/train/train.py, on the CPU:

- `--shape-quantum S --label-quantum K`: batches padded to a multiple of S seconds of audio and K tokens, and
  batch sizes made from the padded length, so that few distinct shapes come back (cuDNN and the allocator reuse
  what they worked out for a shape; on the H200 a step was host-bound: 37.6 ms of GPU time in 217 ms). The
  padding must not change the loss: the model masks it, as it masks the padding to the longest clip.
- `--vtlp V`: vocal tract length perturbation as a warped mel filterbank per utterance (warp factors uniform in
  [1 - V, 1 + V]); a factor of 1 is the model's own filterbank, and a factor moves a tone's band by that factor.

  /usr/bin/python3 -m unittest discover -s tools/tests -p test_train_shapes_vtlp.py
"""
import os
import random
import sys
import unittest

import numpy as np
import torch
import yaml

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOOLS)
sys.path.insert(0, os.path.join(TOOLS, "train"))

import data  # noqa: E402
import train  # noqa: E402

TINY = os.path.join(TOOLS, "train", "configs", "tiny.yaml")


def tiny_model(vocab=20):
    with open(TINY, encoding="utf-8") as f:
        file_cfg = yaml.safe_load(f)
    cfg = train.build_model_cfg(file_cfg["model"], train._VocabOnly(vocab), "tiny")
    cfg["decoder"]["dropout"] = 0.0  # train_loss applies these dropouts whatever the module mode
    cfg["joint"]["dropout"] = 0.0
    model = train.init_model(cfg, seed=3)
    model.eval()  # encoder dropout off, BatchNorm on its running statistics: padding cannot leak through them
    return model


def clips(n, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        t = np.arange(int(rng.integers(4000, 16000))) / 16000.0
        tone = 8000 * np.sin(2 * np.pi * float(rng.uniform(200, 3000)) * t) + rng.normal(0, 300, t.shape)
        out.append((tone.astype(np.int16), [int(x) for x in rng.integers(1, 20, size=int(rng.integers(1, 7)))]))
    return out


class PaddedShapesTest(unittest.TestCase):
    def test_collate_pads_to_the_multiples_and_keeps_the_lengths(self):
        items = clips(5)
        plain = data.collate(items)
        padded = data.collate(items, audio_multiple=10240, label_multiple=8)
        self.assertEqual(padded["audio"].shape[1] % 10240, 0)
        self.assertEqual(padded["labels"].shape[1] % 8, 0)
        self.assertGreaterEqual(padded["audio"].shape[1], plain["audio"].shape[1])
        self.assertTrue(torch.equal(padded["audio_len"], plain["audio_len"]))
        self.assertTrue(torch.equal(padded["label_len"], plain["label_len"]))
        w = plain["audio"].shape[1]
        self.assertTrue(torch.equal(padded["audio"][:, :w], plain["audio"]))
        self.assertEqual(int(padded["audio"][:, w:].abs().sum()), 0)
        u = plain["labels"].shape[1]
        self.assertTrue(torch.equal(padded["labels"][:, :u], plain["labels"]))

    def test_batches_come_in_few_shapes_and_keep_the_budget(self):
        rng = np.random.default_rng(1)
        durations = rng.uniform(0.5, 12.0, 3000)
        q = 0.64

        def shapes(quantum):
            batches = data.make_batches(durations, 240.0, 64, seed=5, epoch=2, quantum=quantum)
            out = set()
            for b in batches:
                longest = data.round_up(max(durations[i] for i in b), quantum)
                self.assertLessEqual(len(b) * longest, 240.0 + 1e-6)  # the padded budget holds
                out.add((len(b), round(longest, 6)))
            self.assertEqual(sorted(i for b in batches for i in b), list(range(len(durations))))
            return out

        plain, quantized = shapes(0.0), shapes(q)
        self.assertLess(len(quantized), len(plain) / 3)
        self.assertLessEqual(len(quantized), 2 * int(np.ceil(12.0 / q)))

    def test_the_padding_does_not_change_the_loss(self):
        model = tiny_model()
        items = clips(6, seed=2)
        tcfg = dict(train.TRAIN_DEFAULTS, dither=0.0, amp="none",
                    spec_augment={"freq_masks": 0, "freq_width": 0, "time_masks": 0, "time_width": 0})
        dev = torch.device("cpu")
        losses = []
        for kw in ({}, {"audio_multiple": 10240, "label_multiple": 8}):
            batch = data.collate(items, **kw)
            with torch.no_grad():
                losses.append(float(train.train_loss(model, batch, tcfg, dev, random.Random(11))))
        self.assertTrue(np.isfinite(losses[0]))
        self.assertAlmostEqual(losses[0], losses[1], delta=1e-5 * abs(losses[0]))


class VtlpTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = tiny_model()
        cls.fb = cls.model.preprocessor.featurizer.fb  # [1, 80, 257]

    def band_of_tone(self, fb, hz):
        """The mel band that answers most to a spectrum with one line at hz (FFT bins of 31.25 Hz)."""
        mag = torch.zeros(fb.shape[-1], 1)
        mag[int(round(hz / 31.25))] = 1.0
        return int(torch.matmul(fb, mag).squeeze().argmax())

    def test_a_factor_of_one_is_the_models_filterbank(self):
        warped = train.vtlp_filterbanks(self.fb, torch.tensor([1.0, 1.0]))
        self.assertEqual(tuple(warped.shape), (2, 80, 257))
        self.assertTrue(torch.allclose(warped[0], self.fb[0], atol=1e-7))

    def test_a_factor_moves_a_tone_by_that_factor(self):
        warped = train.vtlp_filterbanks(self.fb, torch.tensor([1.1, 0.9]))
        for b, a in enumerate((1.1, 0.9)):
            for hz in (500.0, 1000.0, 2500.0):
                self.assertEqual(self.band_of_tone(warped[b], hz), self.band_of_tone(self.fb[0], hz * a),
                                 f"alpha {a}, {hz} Hz")
            # the band stays whole: the top bin still reaches the top mel band's neighbourhood
            self.assertGreater(float(warped[b, -1].sum()), 0.5 * float(self.fb[0, -1].sum()))

    def test_the_training_loss_uses_it(self):
        items = clips(4, seed=4)
        batch = data.collate(items)
        tcfg = dict(train.TRAIN_DEFAULTS, dither=0.0, amp="none",
                    spec_augment={"freq_masks": 0, "freq_width": 0, "time_masks": 0, "time_width": 0})
        dev = torch.device("cpu")
        with torch.no_grad():
            torch.manual_seed(0)
            plain = float(train.train_loss(self.model, batch, tcfg, dev, random.Random(1)))
            torch.manual_seed(0)
            warped = float(train.train_loss(self.model, batch, dict(tcfg, vtlp=0.1), dev, random.Random(1)))
        self.assertTrue(np.isfinite(warped))
        self.assertNotAlmostEqual(plain, warped, places=4)


if __name__ == "__main__":
    unittest.main()
