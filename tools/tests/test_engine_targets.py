"""bench/engine_targets.py on made-up arm files: the repeats are read in order, a target is met only when every
repeat meets it, the shortfall is the mean's distance from the bound, the mix is judged at each arm's best row,
fp8 ratios pair the repeats that ran side by side, and the swapped-decoding ratios replace only the fp8 arm's
decoder and detokenizer times.

  /usr/bin/python3 -m unittest discover -s tools/tests -p test_engine_targets.py
"""
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import engine_targets as et  # noqa: E402


def row(name, real_ms, **counters):
    """A Google Benchmark median row in milliseconds."""
    return dict(name=f"{name}/real_time_median", run_name=f"{name}/real_time", run_type="aggregate",
                aggregate_name="median", real_time=real_ms, time_unit="ms", **counters)


def write_arm(d, arm, repeat, e2e_ms, mix_rtfx, enc_ms=50.0, dec_ms=10.0, detok_ms=2.0, planned=None):
    """One repeat file: end to end at the three judged shapes and two mix rows (three with `planned`: the one-lane
    row's (wall ms, decoder ms, detokenizer ms) over 7,500 s of audio)."""
    rows = [row("end_to_end/b1x45s", e2e_ms["b1x45s"]),
            row("end_to_end/b32x45s", e2e_ms["b32x45s"], encoder_ms=enc_ms, decoder_ms=dec_ms,
                detokenize_ms=detok_ms, decoder_steps_per_frame=0.5),
            row("end_to_end/b128x10s", e2e_ms["b128x10s"], rtfx=1280 / e2e_ms["b128x10s"] * 1000),
            row("offline_mix/b128", 400.0, rtfx=mix_rtfx[0]),
            row("offline_mix/planned/lanes:3", 380.0, rtfx=mix_rtfx[1])]
    if planned:
        wall, dec, detok = planned
        # The row's own time is the mean over its batches' iterations: the wall time comes from the RTFx.
        rows.append(row("offline_mix/planned", wall / 3, audio_seconds=7500.0, rtfx=7500.0 / wall * 1000,
                        decoder_ms=dec, detokenize_ms=detok))
    with open(os.path.join(d, f"t-{arm}-{repeat}.json"), "w", encoding="utf-8") as f:
        json.dump({"context": {}, "benchmarks": rows}, f)


class EngineTargetsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def judged(self):
        runs = {arm: et.arm_runs(self.d, "t", arm) for arm in et.ARMS}
        return {t.text.split(" (")[0].split(" at the best")[0]: t for t in et.targets(runs["bf16"], runs["fp8"])}

    def test_every_repeat_must_meet_and_the_shortfall_is_the_means(self):
        # 1 x 45 s: 17 ms then 19 ms against 18: not met, although the first repeat is; the mean misses by 0 %.
        write_arm(self.d, "bf16", 1, {"b1x45s": 17.0, "b32x45s": 80.0, "b128x10s": 60.0}, (15000, 21000))
        write_arm(self.d, "bf16", 2, {"b1x45s": 19.0, "b32x45s": 99.0, "b128x10s": 60.0}, (15000, 21000))
        t = self.judged()
        self.assertEqual(t["bf16, 1 × 45 s end to end ≤ 18 ms"].figures, [17.0, 19.0])
        self.assertFalse(t["bf16, 1 × 45 s end to end ≤ 18 ms"].met())
        self.assertAlmostEqual(t["bf16, 1 × 45 s end to end ≤ 18 ms"].shortfall(), 0.0)
        # 32 x 45 s: mean 89.5 <= 90, yet the second repeat is over: not met.
        self.assertFalse(t["bf16, 32 × 45 s end to end ≤ 90 ms"].met())
        self.assertTrue(t["bf16, 128 × 10 s end to end ≤ 64 ms"].met())
        # Decoding 10 of 50 ms: 20 %, twice the bound, so missed by 100 %.
        share = t["bf16, decoding ≤ 10 % of encoder time at 32 × 45 s"]
        self.assertEqual(share.figures, [20.0, 20.0])
        self.assertAlmostEqual(share.shortfall(), 1.0)

    def test_the_mix_is_judged_at_each_arms_best_row(self):
        write_arm(self.d, "bf16", 1, {"b1x45s": 12, "b32x45s": 80, "b128x10s": 60}, (16000, 20500))
        write_arm(self.d, "fp8", 1, {"b1x45s": 11, "b32x45s": 60, "b128x10s": 50}, (26000, 24000))
        runs = {arm: et.arm_runs(self.d, "t", arm) for arm in et.ARMS}
        self.assertEqual(et.best_mix(runs["bf16"]), ("offline_mix/planned/lanes:3", [20500.0]))
        self.assertEqual(et.best_mix(runs["fp8"]), ("offline_mix/b128", [26000.0]))
        ts = et.targets(runs["bf16"], runs["fp8"])
        mix = next(t for t in ts if t.text.startswith("bf16, offline mix"))
        self.assertTrue(mix.met())
        fp8_mix = next(t for t in ts if t.text.startswith("fp8 ≥ 1.3× bf16 on the mix"))
        self.assertAlmostEqual(fp8_mix.figures[0], 26000 / 20500)
        self.assertFalse(fp8_mix.met())  # 1.27x
        fp8_e2e = next(t for t in ts if t.text.startswith("fp8 ≥ 1.3× bf16, end to end"))
        self.assertAlmostEqual(fp8_e2e.figures[0], 80 / 60)
        self.assertTrue(fp8_e2e.met())

    def test_swapped_decoding_replaces_only_the_fp8_arms_decoder_and_detokenizer(self):
        write_arm(self.d, "bf16", 1, {"b1x45s": 12, "b32x45s": 80, "b128x10s": 60}, (16000, 20500),
                  dec_ms=10.0, detok_ms=2.0, planned=(480.0, 40.0, 50.0))
        write_arm(self.d, "fp8", 1, {"b1x45s": 11, "b32x45s": 150, "b128x10s": 50}, (16000, 20500),
                  dec_ms=75.0, detok_ms=5.0, planned=(500.0, 190.0, 10.0))
        t = self.judged()
        # 150 - (75 + 5) + (10 + 2) = 82 ms against bf16's 80.
        e2e = t["fp8 ≥ 1.3× bf16, end to end at 32 × 45 s with bf16's decoding work"]
        self.assertAlmostEqual(e2e.figures[0], 80 / 82)
        # 500 - 200 + 90 = 390 ms of wall time against 480.
        mix = next(v for k, v in t.items() if k.startswith("fp8 ≥ 1.3× bf16 on the mix at one lane"))
        self.assertAlmostEqual(mix.figures[0], 480 / 390)
        self.assertFalse(mix.met())

    def test_repeats_are_read_in_numeric_order_and_a_missing_arm_is_not_measured(self):
        for r, ms in ((1, 10.0), (2, 11.0), (10, 12.0)):
            write_arm(self.d, "bf16", r, {"b1x45s": ms, "b32x45s": 80, "b128x10s": 60}, (1, 1))
        t = self.judged()
        self.assertEqual(t["bf16, 1 × 45 s end to end ≤ 18 ms"].figures, [10.0, 11.0, 12.0])
        fp8 = next(v for k, v in t.items() if k.startswith("fp8 ≥ 1.3× bf16, end to end"))
        self.assertIsNone(fp8.met())
        self.assertEqual(fp8.row()[2], "not measured")

    def test_the_command_writes_markdown_and_json(self):
        write_arm(self.d, "bf16", 1, {"b1x45s": 12, "b32x45s": 80, "b128x10s": 60}, (16000, 20500))
        md, js = os.path.join(self.d, "t.md"), os.path.join(self.d, "t.json")
        with open(os.devnull, "w") as null:
            saved, sys.stdout = sys.stdout, null
            try:
                self.assertEqual(et.main([self.d, "--name", "t", "--out", md, "--json", js]), 0)
            finally:
                sys.stdout = saved
        with open(md, encoding="utf-8") as f:
            self.assertIn("| bf16, 32 × 45 s end to end ≤ 90 ms | 80.0 ms | met |", f.read())
        with open(js, encoding="utf-8") as f:
            self.assertEqual(len(json.load(f)["targets"]), 10)
        with self.assertRaises(SystemExit):
            et.main([self.d, "--name", "absent"])


if __name__ == "__main__":
    unittest.main()
