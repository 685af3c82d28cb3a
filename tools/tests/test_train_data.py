"""tools/train/data.py's batches made ahead by a thread: the same batches in the same order as made inline, an
early stop that leaves no thread behind, and an error in the thread raised where the batches are consumed.

  /usr/bin/python3 -m unittest discover -s tools/tests -p test_train_data.py
"""
import os
import sys
import threading
import unittest

import numpy as np

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOOLS, "train"))

import data  # noqa: E402


class _InRam:
    """A preloaded corpus as iterate_batches sees it."""

    def __init__(self, n):
        rng = np.random.default_rng(0)
        self.audio = [rng.integers(-100, 100, size=int(rng.integers(50, 400))).astype(np.int16) for _ in range(n)]
        self.ids = [list(rng.integers(1, 40, size=int(rng.integers(1, 9)))) for _ in range(n)]

    def get_audio(self, i):
        return self.audio[i]


def ahead_threads():
    return [t for t in threading.enumerate() if t.name == "batches-ahead"]


class BatchesAheadTest(unittest.TestCase):
    def test_the_same_batches_in_the_same_order(self):
        corpus = _InRam(60)
        batches = data.make_batches(np.array([len(a) / 16000 for a in corpus.audio]), 0.05, 8, seed=3, epoch=1)
        inline = list(data.iterate_batches(corpus, batches, prefetch=0))
        ahead = list(data.iterate_batches(corpus, batches, prefetch=2))
        self.assertEqual([k for k, _ in ahead], list(range(len(batches))))
        for (_, a), (_, b) in zip(inline, ahead):
            self.assertEqual(sorted(a), sorted(b))
            for key in a:
                self.assertTrue(bool((a[key] == b[key]).all()), key)

    def test_an_early_stop_leaves_no_thread(self):
        corpus = _InRam(60)
        batches = [[i] for i in range(60)]
        for k, _ in data.iterate_batches(corpus, batches, prefetch=2):
            if k == 3:
                break  # as the training loop does at its stop step
        self.assertEqual(ahead_threads(), [])

    def test_an_error_while_making_a_batch_reaches_the_consumer(self):
        corpus = _InRam(10)
        corpus.audio[5] = None  # collate cannot pad it
        with self.assertRaises(TypeError):
            for _ in data.iterate_batches(corpus, [[i] for i in range(10)], prefetch=2):
                pass
        self.assertEqual(ahead_threads(), [])


if __name__ == "__main__":
    unittest.main()
