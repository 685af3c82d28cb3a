"""Smoke test of tools/bench/torch_engine_bench.py on the CPU (a few seconds): the device-resident greedy decoder
gives the reference decoder's tokens, clips are cut by the workload's rule, and a whole run on a tiny golden
model and a small workload writes the JSON the comparison script reads.

  /usr/bin/python3 -m unittest discover -s tools/tests -p test_torch_engine_bench.py
"""
import json
import os
import sys
import tempfile
import unittest
import wave

import numpy as np
import torch

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)
sys.path.insert(0, os.path.join(TOOLS, "bench"))

import torch_engine_bench as tb  # noqa: E402
from steno_ref.decoding import greedy_tdt_batch  # noqa: E402
from steno_ref.modeldir import load_model_dir  # noqa: E402

MODEL = os.path.join(ROOT, "tests", "data", "golden", "mel80_bias_xscale")  # 0.4 tokens per frame by design
WAVS = [os.path.join(ROOT, "tests", "data", "nemo-tiny", n)
        for n in ("clip0_1.7s.wav", "clip1_4.3s.wav", "clip2_9.0s.wav")]


def speech():
    out = []
    for p in WAVS:
        with wave.open(p, "rb") as w:
            out.append(np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0)
    return np.concatenate(out)


def write_workload(path):
    """A workload.json + speech.f32 pair in cuda_engine_bench's format, with small shapes."""
    s = speech()
    s.astype("<f4").tofile(os.path.join(path, "speech.f32"))
    w = {"sample_rate": 16000, "stream": "speech.f32", "stream_samples": int(s.size), "clip_offset_samples": 7 * 16000,
         "shapes": [{"name": "b1x3s", "batch": 1, "seconds": 3.0}, {"name": "b3x2s", "batch": 3, "seconds": 2.0}],
         "mix_batches": [2, 3], "mix_lengths_samples": [16000, 20800, 24000, 41000, 52000]}
    with open(os.path.join(path, "workload.json"), "w", encoding="utf-8") as f:
        json.dump(w, f)
    return s


class TorchEngineBenchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        cls.model, _ = load_model_dir(MODEL)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.stream = write_workload(cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_device_decoder_gives_the_reference_tokens(self):
        w = tb.load_workload(self.tmp.name)
        clips = [tb.cut_clip(w, i, n) for i, n in enumerate([16000, 47000, 30000, 64000])]
        lengths = torch.tensor([len(c) for c in clips])
        audio = torch.zeros(len(clips), int(lengths.max()))
        for i, c in enumerate(clips):
            audio[i, :len(c)] = torch.from_numpy(c)
        with torch.no_grad():
            feats, flen = self.model.preprocessor(audio, lengths)
            enc, elen = self.model.encoder(feats, flen)
        ref = [h["tokens"] for h in greedy_tdt_batch(self.model, enc, elen)]
        tokens, counts, steps = tb.greedy_tdt_device(self.model, enc, elen)
        self.assertEqual(tb.tokens_to_lists(tokens, counts), ref)
        self.assertGreater(sum(map(len, ref)), 20)
        self.assertGreater(int(steps), sum(map(len, ref)))  # blank steps too

    def test_clips_wrap_around_the_stream(self):
        w = tb.load_workload(self.tmp.name)
        n = self.stream.size
        c = tb.cut_clip(w, 2, 3 * 16000)  # starts at 14 s of a 15 s stream: wraps after 1 s
        start = 14 * 16000 % n
        np.testing.assert_array_equal(c[:n - start], self.stream[start:])
        np.testing.assert_array_equal(c[n - start:], self.stream[:3 * 16000 - (n - start)])

    def test_a_run_writes_every_shape_and_the_mix(self):
        out = os.path.join(self.tmp.name, "torch.json")
        rc = tb.main(["--model", MODEL, "--model-name", "golden", "--workload", self.tmp.name, "--out", out,
                      "--device", "cpu", "--dtype", "f32", "--repeats", "2", "--mix-repeats", "1"])
        self.assertEqual(rc, 0)
        with open(out, encoding="utf-8") as f:
            r = json.load(f)
        self.assertEqual(r["context"]["model"], "golden")
        self.assertEqual([s["name"] for s in r["shapes"]], ["b1x3s", "b3x2s"])
        for s in r["shapes"]:
            self.assertEqual(len(s["runs"]), 2)
            for k in ("features_ms", "encoder_ms", "decoder_ms", "end_to_end_ms", "rtfx", "tokens_per_frame"):
                self.assertGreater(s[k], 0, k)
            self.assertAlmostEqual(s["runs"][0]["end_to_end_ms"], sum(s["runs"][0][k] for k in
                                                                     ("features_ms", "encoder_ms", "decoder_ms")))
        self.assertEqual([m["batch"] for m in r["mix"]], [2, 3])
        self.assertAlmostEqual(r["mix"][0]["audio_seconds"], (16000 + 20800 + 24000 + 41000 + 52000) / 16000)
        self.assertGreater(r["mix"][1]["rtfx"], 0)

    @unittest.skipIf(int(torch.__version__.split(".")[0]) < 2,
                     "torch 1.x CPU autocast does not cast layer_norm's input (the GPU machine has torch 2)")
    def test_bf16_autocast_runs(self):
        out = os.path.join(self.tmp.name, "torch-bf16.json")
        rc = tb.main(["--model", MODEL, "--workload", self.tmp.name, "--out", out, "--device", "cpu",
                      "--dtype", "bf16", "--repeats", "1", "--no-mix", "--shapes", "b3x2s"])
        self.assertEqual(rc, 0)
        with open(out, encoding="utf-8") as f:
            r = json.load(f)
        self.assertEqual(len(r["shapes"]), 1)
        self.assertIn("bf16 autocast", r["context"]["mode"])


if __name__ == "__main__":
    unittest.main()
