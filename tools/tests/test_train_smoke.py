"""End-to-end smoke test of tools/train on CPU (well under a minute): synthetic tone clips, a tiny SentencePiece
BPE, 30 training steps of a tiny model, checkpoint in parts + resume (the resumed run must reproduce the
uninterrupted run's losses and weights exactly), export to .nemo, tools/convert_nemo.py, and tools/steno_ref
loading the converted directory.

  /usr/bin/python3 -m unittest discover -s tools/tests -p test_train_smoke.py
"""
import contextlib
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
import unittest

import torch

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOOLS)
sys.path.insert(0, os.path.join(TOOLS, "train"))

try:
    import sentencepiece  # noqa: F401
    HAVE_SPM = True
except ImportError:
    HAVE_SPM = False

TINY = os.path.join(TOOLS, "train", "configs", "tiny.yaml")


def run_quiet(fn, argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = fn(argv)
    return rc, out.getvalue()


def losses(out_dir):
    with open(os.path.join(out_dir, "metrics.jsonl"), encoding="utf-8") as f:
        recs = [json.loads(line) for line in f]
    return {r["step"]: r["loss"] for r in recs if r["kind"] == "train"}


@unittest.skipUnless(HAVE_SPM, "sentencepiece is not installed")
class TrainSmokeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import tone_data
        cls.tmp = tempfile.mkdtemp(prefix="steno_train_smoke_")
        data = os.path.join(cls.tmp, "data")
        tone_data.make_corpus(data, n=20, val=4, max_words=3, seed=0)
        cls.tok = tone_data.train_tokenizer(os.path.join(data, "text.txt"), os.path.join(data, "tok"), 48)
        cls.train_m = os.path.join(data, "train.jsonl")
        cls.val_m = os.path.join(data, "val.jsonl")
        cls.threads = torch.get_num_threads()
        torch.set_num_threads(1)

    @classmethod
    def tearDownClass(cls):
        torch.set_num_threads(cls.threads)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def train(self, out, *extra):
        import train
        argv = ["--config", TINY, "--tokenizer", self.tok, "--train-manifest", self.train_m, "--val-manifest",
                self.val_m, "--out", out, "--max-steps", "30", "--threads", "1"] + list(extra)
        rc, log = run_quiet(train.main, argv)
        self.assertEqual(rc, 0, log)
        return log

    def test_train_resume_export(self):
        import ckpt
        import export
        from steno_ref.modeldir import load_model_dir
        from steno_ref.run import run_batch
        from data import read_manifest, read_wav

        a = os.path.join(self.tmp, "A")
        b = os.path.join(self.tmp, "B")
        self.train(a)
        log_b1 = self.train(b, "--stop-step", "17", "--split-mb", "0.25")
        parts = sorted(p for p in os.listdir(b) if p.startswith("last.pt."))
        self.assertGreater(len(parts), 1, log_b1)
        self.assertTrue(all(os.path.getsize(os.path.join(b, p)) <= 250_000 for p in parts))
        self.assertFalse(os.path.exists(os.path.join(b, "last.pt")))
        log_b2 = self.train(b, "--resume", "--split-mb", "0.25")
        self.assertIn("resuming from", log_b2)

        la, lb = losses(a), losses(b)
        self.assertEqual(sorted(la), list(range(1, 31)))
        self.assertEqual(la, lb)  # bit-exact: the resumed run continues the uninterrupted one
        self.assertLess(sum(la[s] for s in range(26, 31)), sum(la[s] for s in range(1, 6)))  # it learns
        ca, cb = ckpt.load_checkpoint(a), ckpt.load_checkpoint(b)
        self.assertEqual((ca["step"], cb["step"]), (30, 30))
        for k, v in ca["model"].items():
            self.assertTrue(torch.equal(v, cb["model"][k]), k)

        # compressed optimizer states round-trip closely enough
        sd = {"state": {0: {"step": torch.tensor(3.0), "exp_avg": torch.randn(1000) * 1e-3,
                            "exp_avg_sq": torch.rand(1000) ** 4 * 1e-6}}, "param_groups": [{"lr": 1.0}]}
        sd["state"][0]["exp_avg_sq"][:10] = 0.0
        for mode, tol in (("fp32", 0.0), ("bf16", 0.01), ("int8", 0.05)):
            back = ckpt.decompress_optimizer(ckpt.compress_optimizer(sd, mode))["state"][0]
            m, v = sd["state"][0]["exp_avg"], sd["state"][0]["exp_avg_sq"]
            self.assertLessEqual(float((back["exp_avg"] - m).abs().max() / m.abs().max()), tol + 1e-7)
            nz = v > 0
            rel = (back["exp_avg_sq"][nz].sqrt() / v[nz].sqrt() - 1).abs().max()
            self.assertLessEqual(float(rel), tol + 1e-7, mode)
            self.assertTrue(torch.equal(back["exp_avg_sq"][~nz], v[~nz]))

        # export -> .nemo -> convert_nemo.py -> steno_ref: the converted model decodes like the checkpoint
        nemo = os.path.join(self.tmp, "tiny.nemo")
        mdir = os.path.join(self.tmp, "tiny-f32")
        rc, log = run_quiet(export.main, [a, nemo, "--model-dir", mdir, "--dtype", "f32", "--check-manifest",
                                          self.val_m, "--name", "tiny"])
        self.assertEqual(rc, 0, log)
        self.assertIn("transcripts identical", log)
        with tarfile.open(nemo, "r:") as tar:
            names = tar.getnames()
        self.assertIn("./model_config.yaml", names)
        self.assertIn("./model_weights.ckpt", names)
        self.assertEqual(len([n for n in names if n.endswith("_tokenizer.model")]), 1)
        model, cfg = load_model_dir(mdir)
        self.assertEqual(cfg["name"], "tiny")
        self.assertEqual(cfg["preprocessor"]["frontend_version"], "2.5")
        self.assertEqual(cfg["encoder"]["d_model"], 32)
        # the trained weights, BN statistics and front-end buffers all made it through
        from steno_ref.model import FastConformerTDT
        ref = FastConformerTDT(ca["model_cfg"])
        ref.load_state_dict(ca["model"])
        ref.eval()
        clips = [read_wav(e["audio"]).astype("float32") / 32768.0 for e in read_manifest(self.val_m)]
        out_ref, hyps_ref = run_batch(ref, clips)
        out_conv, hyps_conv = run_batch(model, clips)
        self.assertEqual(float(abs(out_ref["encoded"] - out_conv["encoded"]).max()), 0.0)
        self.assertEqual([h["tokens"] for h in hyps_ref], [h["tokens"] for h in hyps_conv])
        # and the f16 directory the bundled model uses converts and loads
        mdir16 = os.path.join(self.tmp, "tiny-f16")
        rc, log = run_quiet(export.main, [a, nemo, "--model-dir", mdir16, "--dtype", "f16"])
        self.assertEqual(rc, 0, log)
        model16, _ = load_model_dir(mdir16)
        out16, _ = run_batch(model16, clips)
        self.assertLess(float(abs(out16["encoded"] - out_ref["encoded"]).max()), 0.05)

    def test_training_starts_from_a_deepened_model(self):
        """--init-model takes the directory's shapes: a model deepened by deepen_model.py trains with its extra
        layer although the training config (tiny.yaml) says 2 layers."""
        import ckpt
        import deepen_model
        import export
        import train
        from steno_ref import safetensors_io
        start = os.path.join(self.tmp, "D0")
        self.train(start, "--max-steps", "4", "--no-final-eval")
        mdir = os.path.join(self.tmp, "D0-f32")
        rc, log = run_quiet(export.main, [start, os.path.join(self.tmp, "d0.nemo"), "--model-dir", mdir,
                                          "--dtype", "f32"])
        self.assertEqual(rc, 0, log)
        deep = os.path.join(self.tmp, "D0-deep")
        tensors, _, _ = safetensors_io.load(os.path.join(mdir, "model.safetensors"))
        os.makedirs(deep)
        safetensors_io.save(os.path.join(deep, "model.safetensors"), deepen_model.deepen(tensors, 2, [0]))
        with open(os.path.join(mdir, "config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        cfg["encoder"]["n_layers"] = 3
        with open(os.path.join(deep, "config.json"), "w", encoding="utf-8") as f:
            json.dump(cfg, f)
        shutil.copy(os.path.join(mdir, "tokenizer.model"), deep)
        out = os.path.join(self.tmp, "D1")
        argv = ["--config", TINY, "--init-model", deep, "--train-manifest", self.train_m, "--out", out,
                "--max-steps", "3", "--threads", "1", "--no-final-eval"]
        rc, log = run_quiet(train.main, argv)
        self.assertEqual(rc, 0, log)
        self.assertIn("encoder.n_layers: 2 -> 3", log)
        trained = ckpt.load_checkpoint(out)
        self.assertEqual(trained["model_cfg"]["encoder"]["n_layers"], 3)
        self.assertEqual(trained["model_cfg"]["encoder"]["dropout"], 0.1)  # the training config's dropouts stay
        self.assertIn("encoder.layers.2.norm_out.weight", trained["model"])
        # and it exports as the three-layer model it is (what gpu_snapshot.sh does after every call)
        rc, log = run_quiet(export.main, [out, os.path.join(self.tmp, "d1.nemo"), "--model-dir",
                                          os.path.join(self.tmp, "D1-f32"), "--dtype", "f32", "--check-manifest",
                                          self.val_m])
        self.assertEqual(rc, 0, log)
        self.assertIn("transcripts identical", log)
        with open(os.path.join(self.tmp, "D1-f32", "config.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["encoder"]["n_layers"], 3)

    def test_data_that_appears_while_training_joins_the_next_epoch(self):
        from data import read_manifest
        entries = read_manifest(self.train_m)  # absolute audio paths
        grow = os.path.join(self.tmp, "grow")
        halves = {"first": entries[:10], "second": entries[10:]}
        for name, part in halves.items():
            os.makedirs(os.path.join(grow, name))
            with open(os.path.join(grow, name, "manifest.jsonl"), "w", encoding="utf-8") as f:
                for e in part:
                    f.write(json.dumps({"audio_filepath": e["audio"], "text": e["text"],
                                        "duration": e["duration"]}) + "\n")
        import train
        first = os.path.join(grow, "first", "manifest.jsonl")
        argv = ["--config", TINY, "--tokenizer", self.tok, "--train-manifest", first, "--more-manifests",
                os.path.join(grow, "*", "manifest.jsonl"), "--out", os.path.join(self.tmp, "G"), "--max-steps", "12",
                "--threads", "1", "--no-final-eval"]
        rc, log = run_quiet(train.main, argv)
        self.assertEqual(rc, 0, log)
        self.assertIn("train: 10 utts", log)
        self.assertEqual(log.count("data grew"), 1, log)  # the first manifest is not taken twice
        self.assertIn("data grew: 10 utts from 1 manifest(s)", log)
        self.assertIn("now 20 utts", log)


if __name__ == "__main__":
    unittest.main()
