"""tools/train/eval_heldout.py's scoring, on the CPU without a model: tools/train/wer.py's normalisation (the C++
scorer's, src/asr/wer.cc) and word edit distance, the voice groups, and a validation set that leaves out the clips
whose sentence is in the test set.

  /usr/bin/python3 -m unittest discover -s tools/tests -p test_eval_heldout.py
"""
import json
import os
import sys
import tempfile
import unittest

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOOLS, "train"))

import eval_heldout  # noqa: E402
import wer  # noqa: E402


def write_set(root, name, rows):
    os.makedirs(os.path.join(root, name), exist_ok=True)
    with open(os.path.join(root, name, "manifest.jsonl"), "w", encoding="utf-8") as f:
        for i, (text, voice) in enumerate(rows):
            f.write(json.dumps({"audio_filepath": f"audio/{i}.flac", "text": text, "voice": voice}) + "\n")


class ScoringTest(unittest.TestCase):
    def test_normalisation_is_the_cpp_tests(self):
        self.assertEqual(wer.normalize("  It's 42, Café-Bar!  "), "it's 42 café bar")
        self.assertEqual(wer.normalize("a--b"), "a b")
        self.assertEqual(wer.normalize("ÉTÉ"), "ÉtÉ")  # non-ASCII kept as it is, as wer.cc keeps bytes
        self.assertEqual(wer.normalize("..."), "")

    def test_word_errors_count_each_edit_once(self):
        we = wer.edit_distance
        self.assertEqual(we("a b c".split(), "a b c".split()), 0)
        self.assertEqual(we("a b c".split(), "a x c".split()), 1)
        self.assertEqual(we("a b c".split(), "a c".split()), 1)
        self.assertEqual(we("a b".split(), "a b c d".split()), 2)
        self.assertEqual(we([], "a".split()), 1)
        self.assertEqual(we("a b".split(), []), 2)

    def test_voices_group_as_the_cpp_test_groups_them(self):
        self.assertEqual(eval_heldout.voice_group("espeak:en-us-nyc+klatt3"), "espeak:en-us-nyc")
        self.assertEqual(eval_heldout.voice_group("flite:awb"), "flite:awb")

    def test_clips_of_test_sentences_are_left_out(self):
        with tempfile.TemporaryDirectory() as tmp:
            val, test = os.path.join(tmp, "val"), os.path.join(tmp, "test")
            write_set(val, "espeak", [("One two.", "espeak:en+m3"), ("three four", "espeak:en"),
                                      ("five", "espeak:en")])
            write_set(val, "flite", [("six seven", "flite:awb")])
            write_set(test, "espeak", [("one two", "espeak:en-us")])
            sets = eval_heldout.load_sets(val, test)
            self.assertEqual([c[1] for c in sets["espeak"]], ["three four", "five"])
            self.assertEqual(len(sets["flite"]), 1)  # no test manifest for flite: nothing to leave out
            self.assertEqual(len(eval_heldout.load_sets(val, "")["espeak"]), 3)

    def test_several_validation_sets_join_set_by_set(self):
        with tempfile.TemporaryDirectory() as tmp:
            a, b, test = (os.path.join(tmp, n) for n in ("a", "b", "test"))
            write_set(a, "espeak", [("one two", "espeak:en")])
            write_set(b, "espeak", [("three", "espeak:en"), ("four five", "espeak:en-us")])
            write_set(b, "rhvoice", [("six", "rhvoice:alan")])
            write_set(test, "espeak", [("four five", "espeak:en-us")])
            sets = eval_heldout.load_all_sets([a, b], test)
            self.assertEqual(list(sets), ["espeak", "rhvoice"])
            self.assertEqual([c[1] for c in sets["espeak"]], ["one two", "three"])  # the test's sentence left out
            self.assertEqual([c[1] for c in sets["rhvoice"]], ["six"])

    def test_held_out_voices_are_the_whole_espeak_set_and_each_synthesizers_kept_voice(self):
        self.assertEqual(eval_heldout.HELD_OUT, {"espeak": [""], "flite": ["flite:awb"],
                                                 "festival": ["festival:ked_diphone"], "mbrola": ["mbrola:mb-us3"],
                                                 "pico": ["pico:en-GB"], "rhvoice": ["rhvoice:alan"]})
        tally = {}
        for name, ref, hyp, voice in (("espeak", "a b", "a c", "espeak:en+m3"), ("flite", "a b c", "a", "flite:awb"),
                                      ("flite", "a b", "x y", "flite:kal"), ("pico", "a", "a", "pico:en-US")):
            eval_heldout.add_clip(tally.setdefault(name, {"": [0, 0]}), ref, hyp, voice)
        self.assertEqual(eval_heldout.held_out_errors(tally), [3, 5])  # espeak 1 of 2, awb 2 of 3; kal, en-US not
        self.assertEqual(eval_heldout.report_lines("m", tally)[-1], "    held-out voices: 3 errors of 5 words")


if __name__ == "__main__":
    unittest.main()
