"""The reference (tools/steno_ref) reproduces NeMo's own outputs for nemo-tiny (tests/data/nemo-tiny).

Runs tools/convert_nemo.py on model.nemo for each front end, then the reference on the three clips in one
batch and singly, and compares with golden_nemo25.npz / golden_nemo24.npz: float arrays within 1e-4 of the
tensor's max-abs, integer arrays (tokens, timestamps, durations, lengths, alignment labels/frames) equal.
It also checks nemo_golden_to_safetensors.py output against the npz, and the converter's error paths.

  /usr/bin/python3 -m unittest discover -s tools/tests
"""
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest
import wave

import numpy as np

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOOLS)
# STENO_NEMO_TINY, else the project's copy in tests/data/nemo-tiny
NEMO_TINY = os.environ.get("STENO_NEMO_TINY") or os.path.join(os.path.dirname(TOOLS), "tests", "data", "nemo-tiny")
WAVS = ["clip0_1.7s.wav", "clip1_4.3s.wav", "clip2_9.0s.wav"]
REL_TOL = 1e-4

import convert_nemo  # noqa: E402
from steno_ref import safetensors_io  # noqa: E402
from steno_ref.modeldir import load_model_dir  # noqa: E402
from steno_ref.run import int16_to_float, run_batch  # noqa: E402


def read_clips():
    out = []
    for name in WAVS:
        with wave.open(os.path.join(NEMO_TINY, name), "rb") as w:
            out.append(int16_to_float(np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")))
    return out


def rel_err(a, b):
    return float(np.abs(a.astype(np.float64) - b).max() / max(float(np.abs(b).max()), 1e-30))


@unittest.skipUnless(os.path.isfile(os.path.join(NEMO_TINY, "model.nemo")), "nemo-tiny reference not found")
class ReferenceVsNemo(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.clips = read_clips()
        cls.results = {}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_version(self, ver):
        """Convert, run batch + singles; returns ({key: array} named like the npz, npz, sentencepiece)."""
        if ver in self.results:
            return self.results[ver]
        out_dir = os.path.join(self.tmp.name, f"nemo{ver}")
        fv = {"25": "2.5", "24": "2.4"}[ver]
        cfg = convert_nemo.convert(os.path.join(NEMO_TINY, "model.nemo"), out_dir, frontend_version=fv)
        self.assertEqual(cfg["preprocessor"]["frontend_version"], fv)
        model, _ = load_model_dir(out_dir)
        ours = {}
        batch, _ = run_batch(model, self.clips, capture_layers=True, alignments=True)
        ours.update({f"batch.{k}": v for k, v in batch.items()})
        for i, c in enumerate(self.clips):
            single, _ = run_batch(model, [c], capture_layers=True)
            ours.update({f"single{i}.{k}": v for k, v in single.items()})
        import sentencepiece as spm
        sp = spm.SentencePieceProcessor(model_file=os.path.join(out_dir, "tokenizer.model"))
        self.results[ver] = (ours, np.load(os.path.join(NEMO_TINY, f"golden_nemo{ver}.npz")), sp)
        return self.results[ver]

    def check_version(self, ver):
        ours, ref, sp = self.run_version(ver)
        worst = {}
        compared = 0
        for key in ref.files:
            if key == "meta_json" or key.startswith("audio.") or key.endswith((".score", ".text")):
                continue
            self.assertIn(key, ours, f"reference does not produce {key}")
            a, b = ours[key], ref[key]
            self.assertEqual(a.shape, b.shape, key)
            if b.dtype.kind == "f":
                err = rel_err(a, b)
                self.assertLessEqual(err, REL_TOL, f"{key}: rel err {err:.3g}")
                kind = key.split(".")[-1]
                worst[kind] = max(worst.get(kind, 0.0), err)
            else:
                np.testing.assert_array_equal(a, b, err_msg=key)
            compared += 1
        for key in ref.files:  # the plain SentencePiece decode of the tokens equals NeMo's text
            if key.endswith(".text"):
                toks = ref[key.replace(".text", ".tokens")].tolist()
                self.assertEqual(sp.decode_ids(toks), str(ref[key]), key)
            if key.endswith(".score"):
                hyp = key[:-len(".score")]
                if hyp + ".align_labels" in ref.files:  # score = sum of emitted tokens' log-softmax
                    lab = ref[hyp + ".align_labels"]
                    lg = ours[hyp + ".align_logits"]
                    nonblank = lab != lg.shape[1] - 5 - 1
                    s = float(lg[nonblank, lab[nonblank]].sum())
                    self.assertAlmostEqual(s, float(ref[key]), delta=1e-4 * max(1.0, abs(float(ref[key]))))
        print(f"\n[nemo{ver}] {compared} arrays compared; max rel err by kind: "
              + ", ".join(f"{k} {v:.2e}" for k, v in sorted(worst.items())))

    def test_nemo25(self):
        self.check_version("25")

    def test_nemo24(self):
        self.check_version("24")

    def test_nemo25_batch_equals_single(self):
        ours, _, _ = self.run_version("25")
        for i in range(3):
            n = int(ours[f"single{i}.encoded_lengths"][0])
            self.assertEqual(int(ours["batch.encoded_lengths"][i]), n)
            e = np.abs(ours["batch.encoded"][i, :, :n] - ours[f"single{i}.encoded"][0]).max()
            self.assertLess(e, 1e-5)
            for k in ("tokens", "timestamps"):
                np.testing.assert_array_equal(ours[f"batch.hyp{i}.{k}"], ours[f"single{i}.hyp0.{k}"])
            # NeMo's batch duration record has a quirk (steno_ref/decoding.py); the jumps taken agree
            np.testing.assert_array_equal(ours[f"batch.hyp{i}.durations_used"], ours[f"single{i}.hyp0.durations"])
            np.testing.assert_array_equal(ours[f"single{i}.hyp0.durations_used"], ours[f"single{i}.hyp0.durations"])
        # the quirk is real in NeMo's own output: clip0's 6th token jumps 4 frames but records 2
        _, ref, _ = self.run_version("25")
        self.assertEqual(int(ref["batch.hyp0.durations"][5]), 2)
        self.assertEqual(int(ref["single0.hyp0.durations"][5]), 4)

    def test_golden_converter(self):
        """nemo_golden_to_safetensors.py keeps every array (audio as F32) and puts texts/meta in JSON."""
        for ver in ("25", "24"):
            npz = os.path.join(NEMO_TINY, f"golden_nemo{ver}.npz")
            out = os.path.join(self.tmp.name, f"golden{ver}")
            rc = subprocess.run([sys.executable, os.path.join(TOOLS, "nemo_golden_to_safetensors.py"), npz, out],
                                capture_output=True, text=True)
            self.assertEqual(rc.returncode, 0, rc.stderr)
            arrays, _, kinds = safetensors_io.load(os.path.join(out, "golden.safetensors"))
            with open(os.path.join(out, "golden.json"), encoding="utf-8") as f:
                gj = json.load(f)
            ref = np.load(npz)
            self.assertEqual(gj["meta"], json.loads(str(ref["meta_json"])))
            for k in ref.files:
                if k == "meta_json":
                    continue
                if k.endswith(".text"):
                    self.assertEqual(gj["texts"][k], str(ref[k]))
                elif k.endswith(".score"):
                    self.assertEqual(gj["scores"][k], float(ref[k]))
                elif not k.startswith("audio."):
                    np.testing.assert_array_equal(arrays[k], ref[k], err_msg=k)
            for i, c in enumerate(self.clips):  # from the npz (2.5) or the wavs (2.4 has no audio)
                self.assertEqual(kinds[f"audio.clip{i}"], "F32")
                np.testing.assert_array_equal(arrays[f"audio.clip{i}"], c)


class ConverterErrors(unittest.TestCase):
    def run_conv(self, path, out):
        return subprocess.run([sys.executable, os.path.join(TOOLS, "convert_nemo.py"), path, out],
                              capture_output=True, text=True)

    def test_not_a_tar(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.nemo")
            with open(bad, "wb") as f:
                f.write(b"this is not a tar file" * 100)
            r = self.run_conv(bad, os.path.join(d, "out"))
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("not a .nemo file", r.stderr)

    def _tar_with(self, d, members, gz=False):
        path = os.path.join(d, "m.nemo")
        with tarfile.open(path, "w:gz" if gz else "w:") as tar:
            for name, data in members.items():
                p = os.path.join(d, os.path.basename(name))
                with open(p, "wb") as f:
                    f.write(data)
                tar.add(p, arcname=name)
        return path

    def test_missing_member(self):
        with tempfile.TemporaryDirectory() as d:
            path = self._tar_with(d, {"./model_config.yaml": b"x: 1\n"}, gz=True)
            r = self.run_conv(path, os.path.join(d, "out"))
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("not a TDT model", r.stderr)
            path = self._tar_with(d, {"./something.txt": b"hi"})
            r = self.run_conv(path, os.path.join(d, "out"))
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("model_config.yaml", r.stderr)

    @unittest.skipUnless(os.path.isfile(os.path.join(NEMO_TINY, "model.nemo")), "nemo-tiny reference not found")
    def test_non_tdt_and_missing_weights(self):
        import yaml
        files = convert_nemo.open_nemo(os.path.join(NEMO_TINY, "model.nemo"))
        y = yaml.safe_load(files["model_config.yaml"])
        with tempfile.TemporaryDirectory() as d:
            rnnt = dict(y, decoding=dict(y["decoding"], model_type="rnnt", durations=[]),
                        joint=dict(y["joint"], num_extra_outputs=0), loss={"loss_name": "default"})
            path = self._tar_with(d, {"./model_config.yaml": yaml.safe_dump(rnnt).encode()})
            r = self.run_conv(path, os.path.join(d, "out"))
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("not a TDT model", r.stderr)
            path = self._tar_with(d, {"./model_config.yaml": files["model_config.yaml"]})
            r = self.run_conv(path, os.path.join(d, "out"))
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("model_weights.ckpt", r.stderr)


class SafetensorsRoundTrip(unittest.TestCase):
    def test_dtypes(self):
        rng = np.random.default_rng(0)
        x = rng.standard_normal((3, 5)).astype(np.float32)
        t = {"f32": x, "f16": x.astype(np.float16), "bf16": x, "i64": np.arange(7, dtype=np.int64),
             "i32": np.arange(-3, 3, dtype=np.int32).reshape(2, 3), "scalar": np.array(1.5, dtype=np.float32)}
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "t.safetensors")
            safetensors_io.save(p, t, metadata={"a": "b"}, dtypes={"bf16": "BF16"})
            back, meta, kinds = safetensors_io.load(p)
        self.assertEqual(meta, {"a": "b"})
        self.assertEqual(kinds, {"f32": "F32", "f16": "F16", "bf16": "BF16", "i64": "I64", "i32": "I32",
                                 "scalar": "F32"})
        for k in ("f32", "f16", "i64", "i32", "scalar"):
            np.testing.assert_array_equal(back[k], t[k])
            self.assertEqual(back[k].dtype, t[k].dtype)
        # bf16 keeps 8 mantissa bits: relative error <= 2^-9 with round-to-nearest
        self.assertLessEqual(float(np.abs(back["bf16"] - x).max() / np.abs(x).max()), 2 ** -8)
        import torch
        np.testing.assert_array_equal(back["bf16"], torch.from_numpy(x).bfloat16().float().numpy())


if __name__ == "__main__":
    unittest.main()
