"""Tests of the data tools (stdlib unittest + numpy; about a second; espeak-ng only where installed).

  /usr/bin/python3 -m unittest discover -s tools/data -p 'test_*.py'
"""

import json
import os
import random
import shutil
import tempfile
import sys
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import build_corpus  # noqa: E402
import gensent  # noqa: E402
import make_dataset  # noqa: E402
import textnorm  # noqa: E402

TESTSET = os.path.join(HERE, "..", "..", "tests", "data", "testset")


def median_pitch_hz(pcm, sr=16000):
    """The median autocorrelation pitch of the voiced 40 ms frames of int16 speech (60-400 Hz)."""
    x = pcm.astype(np.float64)
    frame, hop, found = int(0.04 * sr), int(0.01 * sr), []
    for i in range(0, len(x) - frame, hop):
        f = x[i:i + frame] - x[i:i + frame].mean()
        if np.sqrt(np.mean(f ** 2)) < 300:
            continue
        ac = np.correlate(f, f, "full")[frame - 1:]
        lo, hi = sr // 400, sr // 60
        k = lo + int(np.argmax(ac[lo:hi]))
        if ac[k] > 0.4 * ac[0]:
            found.append(sr / k)
    return float(np.median(found)) if found else 0.0


class Numbers(unittest.TestCase):
    def test_cardinal(self):
        self.assertEqual(textnorm.cardinal(0), "zero")
        self.assertEqual(textnorm.cardinal(105), "one hundred five")
        self.assertEqual(textnorm.cardinal(105, british_and=True), "one hundred and five")
        self.assertEqual(textnorm.cardinal(21000), "twenty one thousand")
        self.assertEqual(textnorm.cardinal(3000017), "three million seventeen")

    def test_ordinal_year_plural(self):
        self.assertEqual(textnorm.ordinal(1), "first")
        self.assertEqual(textnorm.ordinal(22), "twenty second")
        self.assertEqual(textnorm.ordinal(40), "fortieth")
        self.assertEqual(textnorm.ordinal(112), "one hundred twelfth")
        self.assertEqual(textnorm.year(1984), "nineteen eighty four")
        self.assertEqual(textnorm.year(1905), "nineteen oh five")
        self.assertEqual(textnorm.year(2007), "two thousand seven")
        self.assertEqual(textnorm.year(2024), "twenty twenty four")
        self.assertEqual(textnorm.year(1600), "sixteen hundred")
        self.assertEqual(textnorm.plural_of_words("nineteen sixty"), "nineteen sixties")


class Normalise(unittest.TestCase):
    def test_found_text(self):
        n = textnorm.normalise
        self.assertEqual(n("Mr. Smith paid $5.50 for 3 apples in 1984."),
                         "mister smith paid five dollars and fifty cents for three apples in nineteen eighty four.")
        self.assertEqual(n("It's 10:30 -- time for the 1960s party!"),
                         "it's ten thirty, time for the nineteen sixties party!")
        self.assertEqual(n("A well-known fact: 45% agree."), "a well known fact, forty five percent agree.")
        self.assertEqual(n("\u201cSir, I exist!\u201d"), "sir, i exist!")
        self.assertEqual(n("a time to love, and a time to hate,"), "a time to love, and a time to hate.")

    def test_dropped(self):
        for t in ["Call 555-1234", "1/2 cup", "a 4x4 truck", "f(x) = 3", "see www.debian.org", "x",
                  " ".join(["word"] * 31), "\u4e2d\u6587 text"]:
            self.assertIsNone(textnorm.normalise(t), t)

    def test_transcript(self):
        self.assertEqual(textnorm.transcript("well, i'm here. are you?"), "well i'm here are you")
        self.assertTrue(textnorm.is_valid_transcript("it's ok"))
        for bad in ["It", "a  b", " a", "a1", "a-b", ""]:
            self.assertFalse(textnorm.is_valid_transcript(bad), bad)

    def test_generated_sentences_are_valid(self):
        r = random.Random(5)
        for _ in range(3000):
            s = gensent.sentence(r)
            t = textnorm.transcript(s)
            self.assertTrue(textnorm.is_valid_transcript(t), s)
            self.assertTrue(2 <= len(t.split()) <= 30, s)
            self.assertEqual(textnorm.normalise(s), s)  # speak forms are fixed points


class Corpus(unittest.TestCase):
    def test_split_is_a_pure_function_of_the_text(self):
        self.assertEqual(build_corpus.split_of("the dog barked all night"),
                         build_corpus.split_of("the dog barked all night"))
        splits = [build_corpus.split_of("sentence number %d" % i) for i in range(20000)]
        self.assertAlmostEqual(splits.count("test") / 20000, 0.015, delta=0.004)
        self.assertAlmostEqual(splits.count("dev") / 20000, 0.015, delta=0.004)

    def test_sentence_splitter(self):
        self.assertEqual(build_corpus.split_sentences("Mr. Smith came. He said hi! R. A. Heinlein wrote it."),
                         ["Mr. Smith came.", "He said hi!", "R. A. Heinlein wrote it."])


class Voices(unittest.TestCase):
    def test_held_out_voices_never_train(self):
        self.assertFalse(set(make_dataset.ESPEAK_BASES_HELD) & set(make_dataset.ESPEAK_BASES_TRAIN))
        train_vars = set(make_dataset.VARIANTS_CORE_TRAIN) | set(make_dataset.VARIANTS_EXTRA_TRAIN)
        self.assertFalse(set(make_dataset.VARIANTS_HELD) & train_vars)
        pool = [("gen", "one two three.")]
        for i in range(3000):
            for split in ("train", "dev"):
                v = make_dataset.plan(split, i, 1, pool, split == "train")["voice"]
                base, _, var = v.partition("+")
                self.assertIn(base, make_dataset.ESPEAK_BASES_TRAIN)
                self.assertIn(var, train_vars)
            v = make_dataset.plan("test", i, 1, pool, False)["voice"]
            base, _, var = v.partition("+")
            self.assertTrue(base in make_dataset.ESPEAK_BASES_HELD or var in make_dataset.VARIANTS_HELD, v)

    def test_every_synthesizer_keeps_a_voice_out_of_training(self):
        self.assertTrue(set(make_dataset.FLITE_VOICES) - set(make_dataset.FLITE_VOICES_TRAIN))
        self.assertTrue(set(make_dataset.FESTIVAL_VOICES) - set(make_dataset.FESTIVAL_VOICES_TRAIN))
        mix = make_dataset.parse_mix("espeak:0.5,flite:0.25,festival:0.25")
        pool = [("gen", "one two three.")]
        seen = {}
        for i in range(2000):
            for split in ("train", "dev"):
                p = make_dataset.plan(split, i, 1, pool, split == "train", mix)
                seen[p["synth"]] = seen.get(p["synth"], 0) + 1
                if p["synth"] == "flite":
                    self.assertIn(p["voice"], make_dataset.FLITE_VOICES_TRAIN)
                elif p["synth"] == "festival":
                    self.assertIn(p["voice"], make_dataset.FESTIVAL_VOICES_TRAIN)
        self.assertTrue(1800 < seen["espeak"] < 2200 and 850 < seen["flite"] < 1150 and 850 < seen["festival"] < 1150,
                        seen)

    def test_mbrola_and_pico_keep_a_voice_out_of_training_too(self):
        self.assertEqual(set(make_dataset.MBROLA_VOICES) - set(make_dataset.MBROLA_VOICES_TRAIN), {"mb-us3"})
        self.assertEqual(set(make_dataset.PICO_VOICES) - set(make_dataset.PICO_VOICES_TRAIN), {"en-GB"})
        mix = make_dataset.parse_mix("espeak:0.4,flite:0.15,festival:0.15,mbrola:0.2,pico:0.1")
        pool = [("gen", "one two three.")]
        seen = {}
        for i in range(3000):
            p = make_dataset.plan("train", i, 1, pool, True, mix, True, True)
            seen[p["synth"]] = seen.get(p["synth"], 0) + 1
            if p["synth"] in ("mbrola", "pico"):
                self.assertIn(p["voice"], make_dataset.TRAIN_VOICES[p["synth"]])
            if p["synth"] == "mbrola":  # espeak-ng's prosody, no espeak-ng variant or accent
                self.assertTrue({"rate", "pitch", "gap"} <= set(p) and "accent" not in p, p)
        self.assertTrue(500 < seen["mbrola"] < 700 and 230 < seen["pico"] < 370, seen)
        for split, family in (("mbrola-test", "mbrola"), ("pico-test", "pico")):
            voices = {make_dataset.plan(split, i, 1, pool, False, mix)["voice"] for i in range(100)}
            self.assertEqual(voices, set(make_dataset.SYNTH_TEST_SPLITS[split][1]), family)

    def test_rhvoice_keeps_alan_out_of_training(self):
        # alan is CMU ARCTIC's awb, flite's held-out speaker: no training voice of any family may be his.
        self.assertEqual(set(make_dataset.RHVOICE_VOICES) - set(make_dataset.RHVOICE_VOICES_TRAIN), {"alan"})
        mix = make_dataset.parse_mix("espeak:0.4,flite:0.1,festival:0.1,mbrola:0.1,pico:0.1,rhvoice:0.2")
        pool = [("gen", "one two three.")]
        seen, levels = {}, 0
        for i in range(3000):
            p = make_dataset.plan("train", i, 1, pool, True, mix, True, True)
            seen[p["synth"]] = seen.get(p["synth"], 0) + 1
            if p["synth"] == "rhvoice":
                self.assertIn(p["voice"], make_dataset.RHVOICE_VOICES_TRAIN)
                self.assertTrue(0.9 <= p["stretch"] <= 1.1 and "rate" not in p and "accent" not in p, p)
                levels += "pitch_level" in p
        self.assertTrue(520 < seen["rhvoice"] < 680, seen)
        self.assertTrue(0.6 < levels / seen["rhvoice"] < 0.8, levels)  # --voice-aug's pitch for 70 % of them
        voices = {make_dataset.plan("rhvoice-test", i, 1, pool, False, mix)["voice"] for i in range(100)}
        self.assertEqual(voices, set(make_dataset.RHVOICE_VOICES))

    def test_default_mix_and_channel_off_draw_what_the_first_edition_drew(self):
        # The first bundled model's recipe: a one-family mix draws no family, --channel-aug off draws nothing more.
        pool = [("gen", "a b."), ("gen", "c d.")]
        for i in range(200):
            first = make_dataset.plan("train", i, 1, pool, True)
            self.assertEqual(make_dataset.plan("train", i, 1, pool, True, make_dataset.parse_mix("espeak:1")), first)
            with_channel = make_dataset.plan("train", i, 1, pool, True, make_dataset.parse_mix("espeak"), True)
            self.assertEqual({k: v for k, v in with_channel["aug"].items() if k != "channel"}, first["aug"])
            self.assertEqual(dict(with_channel, aug=first["aug"]), first)

    def test_voice_aug_draws_a_pitch_target_an_accent_and_a_wider_speed_only(self):
        pool = [("gen", "a b."), ("gen", "c d.")]
        mix = make_dataset.parse_mix("espeak:0.4,flite:0.3,festival:0.3")
        targets = accents = 0
        for i in range(600):
            plain = make_dataset.plan("train", i, 1, pool, True, mix, True)
            p = make_dataset.plan("train", i, 1, pool, True, mix, True, True)
            self.assertEqual({k: v for k, v in p["aug"].items() if k != "speed"},
                             {k: v for k, v in plain["aug"].items() if k != "speed"})
            self.assertEqual({k: v for k, v in p.items() if k not in ("aug", "f0", "accent")},
                             {k: v for k, v in plain.items() if k != "aug"})
            if "accent" in p:
                accents += 1
                self.assertEqual(p["synth"], "espeak")
                self.assertIn(p["voice"].split("+")[0], make_dataset.BASE_VOICE_FILES)
                froms = [a for a, _ in p["accent"]["shifts"]]
                self.assertEqual(len(froms), len(set(froms)))  # one replacement a phoneme
                self.assertTrue(set(map(tuple, p["accent"]["shifts"])) <= set(make_dataset.ACCENT_SHIFTS))
            if p["aug"].get("speed") != plain["aug"].get("speed"):
                lo, hi = make_dataset.VOICE_SPEED
                self.assertTrue(lo <= p["aug"]["speed"] <= hi, p["aug"])
            if "f0" in p:
                targets += 1
                self.assertIn(p["voice"], make_dataset.F0_VOICES[p["synth"]])
                lo, hi = make_dataset.F0_MEAN_HZ
                self.assertTrue(lo <= p["f0"]["mean"] <= hi and 0 < p["f0"]["std"] < 0.26 * p["f0"]["mean"], p)
        self.assertTrue(100 < targets < 300, targets)  # 0.7 of the clips of kal, kal16, slt and kal_diphone
        self.assertTrue(60 < accents < 140, accents)  # 0.4 of espeak-ng's 0.4

    def test_voice_aug_gives_pico_a_pitch_level_and_nothing_else_new(self):
        pool = [("gen", "a b.")]
        mix = make_dataset.parse_mix("pico:0.5,mbrola:0.5")
        levels = 0
        for i in range(400):
            plain = make_dataset.plan("train", i, 1, pool, True, mix, True)
            p = make_dataset.plan("train", i, 1, pool, True, mix, True, True)
            self.assertEqual({k: v for k, v in p.items() if k not in ("aug", "pitch_level")},
                             {k: v for k, v in plain.items() if k != "aug"})
            if "pitch_level" in p:
                levels += 1
                self.assertEqual(p["synth"], "pico")
                lo, hi = make_dataset.PITCH_LEVEL
                self.assertTrue(lo <= p["pitch_level"] <= hi, p)
        self.assertTrue(100 < levels < 180, levels)  # 0.7 of pico's half

    def test_synthetic_accents_build_on_training_bases_only(self):
        self.assertEqual(set(make_dataset.BASE_VOICE_FILES), set(make_dataset.ESPEAK_BASES_TRAIN))
        self.assertNotIn(("h", "NULL"), make_dataset.ACCENT_SHIFTS)  # the held-out West Midlands accent's rule

    def test_test_splits_ignore_the_mix(self):
        pool = [("gen", "one two three.")]
        mix = make_dataset.parse_mix("flite:1,festival:1")
        for i in range(100):
            self.assertEqual(make_dataset.plan("test", i, 1, pool, False, mix)["synth"], "espeak")
            self.assertEqual(make_dataset.plan("festival-test", i, 1, pool, False, mix)["synth"], "festival")
            self.assertEqual(make_dataset.plan("flite-test", i, 1, pool, False, mix)["synth"], "flite")
            self.assertEqual(make_dataset.plan("mbrola-test", i, 1, pool, False, mix)["synth"], "mbrola")
            self.assertEqual(make_dataset.plan("pico-test", i, 1, pool, False, mix)["synth"], "pico")
            self.assertEqual(make_dataset.plan("rhvoice-test", i, 1, pool, False, mix)["synth"], "rhvoice")

    def test_mix_is_checked(self):
        for bad in ("", "espeak:0", "piper:1", "espeak:1,espeak:2", "flite:x"):
            with self.assertRaises(ValueError, msg=bad):
                make_dataset.parse_mix(bad)

    def test_plan_is_deterministic(self):
        pool = [("gen", "a b."), ("gen", "c d.")]
        self.assertEqual(make_dataset.plan("train", 7, 3, pool, True), make_dataset.plan("train", 7, 3, pool, True))
        self.assertNotEqual(make_dataset.plan("train", 7, 3, pool, True), make_dataset.plan("train", 8, 3, pool, True))


class Audio(unittest.TestCase):
    def test_resample_sine(self):
        t = np.arange(22050 * 2) / 22050
        x = 0.5 * np.sin(2 * np.pi * 1000 * t)
        for speed in (1.0, 1.1, 0.93):
            y = make_dataset.resample(x, 22050, 16000, speed)
            self.assertEqual(len(y), round(len(x) * 16000 / 22050 / speed))
            ty = np.arange(len(y)) / 16000
            ref = 0.5 * np.sin(2 * np.pi * 1000 * speed * ty)
            self.assertLess(np.max(np.abs(y[1500:-1500] - ref[1500:-1500])), 1e-3, speed)

    def test_resample_removes_what_is_above_the_new_nyquist(self):
        t = np.arange(22050) / 22050
        y = make_dataset.resample(np.sin(2 * np.pi * 9000 * t), 22050, 16000)
        self.assertLess(np.max(np.abs(y[1000:-1000])), 1e-3)

    def test_parse_espeak_stream_header(self):
        pcm = (np.arange(100, dtype="<i2") * 50).tobytes()
        hdr = (b"RIFF" + (0x7FFFF024).to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little")
               + (1).to_bytes(2, "little") + (1).to_bytes(2, "little") + (22050).to_bytes(4, "little")
               + (44100).to_bytes(4, "little") + (2).to_bytes(2, "little") + (16).to_bytes(2, "little")
               + b"data" + (0x7FFFF000).to_bytes(4, "little"))
        x, sr = make_dataset.parse_wav(hdr + pcm)
        self.assertEqual(sr, 22050)
        self.assertEqual(len(x), 100)
        self.assertAlmostEqual(x[3], 150 / 32768)

    def test_telephone_keeps_the_band_only(self):
        t = np.arange(16000) / 16000
        for hz, kept in ((1000, True), (150, False), (5000, False)):
            for mulaw in (False, True):
                y = make_dataset.telephone(0.5 * np.sin(2 * np.pi * hz * t), mulaw)
                self.assertEqual(len(y), 16000)
                rms = np.sqrt(np.mean(y[2000:-2000] ** 2))
                if kept:
                    self.assertAlmostEqual(rms, 0.5 / np.sqrt(2), delta=0.02, msg=(hz, mulaw))
                else:
                    self.assertLess(rms, 0.02 if mulaw else 1e-3, (hz, mulaw))

    def test_mulaw_is_8_bit_and_close(self):
        x = np.linspace(-1, 1, 10001)
        y = make_dataset.mulaw_8bit(x)
        self.assertLessEqual(len(np.unique(np.round(y, 9))), 255)
        self.assertLess(np.max(np.abs(y - x)), 0.035)  # the widest step, at full scale

    @unittest.skipIf(shutil.which("espeak-ng") is None, "espeak-ng not installed")
    def test_render_espeak(self):
        p = make_dataset.plan("train", 3, 1, [("gen", "the meeting is at half past three.")], True)
        tools = {"espeak": "espeak-ng"}
        pcm = make_dataset.render(p, tools)
        self.assertEqual(pcm.dtype, np.dtype("<i2"))
        self.assertTrue(0.8 < len(pcm) / 16000 < 6)
        self.assertTrue(np.array_equal(pcm, make_dataset.render(p, tools)))

    @unittest.skipIf(shutil.which("festival") is None, "festival not installed")
    def test_festival_session_renders_every_voice_the_same_whatever_came_before(self):
        session = make_dataset.FestivalSession("festival")
        try:
            out = {}
            for voice in make_dataset.FESTIVAL_VOICES + make_dataset.FESTIVAL_VOICES[:1]:
                p = {"synth": "festival", "voice": voice, "stretch": 1.0, "speak": "the bus leaves at nine.",
                     "aug": {}}
                pcm = make_dataset.render(p, {"festival": session})
                self.assertTrue(0.5 < len(pcm) / 16000 < 4, voice)
                if voice in out:
                    self.assertTrue(np.array_equal(out[voice], pcm), voice)
                out[voice] = pcm
        finally:
            session.close()

    @unittest.skipIf(shutil.which("festival") is None or shutil.which("flite") is None, "festival/flite missing")
    def test_an_intonation_target_moves_the_pitch_and_leaves_no_trace(self):
        session = make_dataset.FestivalSession("festival")
        tools = {"festival": session, "flite": "flite"}
        try:
            for synth, voice in (("flite", "kal"), ("festival", "kal_diphone")):
                p = {"synth": synth, "voice": voice, "stretch": 1.0, "speak": "the bus leaves at nine.", "aug": {}}
                own = make_dataset.render(p, tools)
                low = make_dataset.render(dict(p, f0={"mean": 80.0, "std": 10.0}), tools)
                high = make_dataset.render(dict(p, f0={"mean": 200.0, "std": 25.0}), tools)
                self.assertGreater(median_pitch_hz(high), 1.8 * median_pitch_hz(low), voice)
                self.assertTrue(np.array_equal(make_dataset.render(p, tools), own), voice)  # the target was reset
        finally:
            session.close()

    @unittest.skipIf(shutil.which("espeak-ng") is None, "espeak-ng not installed")
    def test_a_synthetic_accent_changes_the_speech_and_only_it(self):
        p = {"synth": "espeak", "voice": "en-gb-x-rp+m2", "rate": 170, "pitch": 50, "gap": 0, "aug": {},
             "speak": "the baby weighed nine pounds on a fine day."}
        accent = {"shifts": [["aI", "OI"], ["eI", "aI"]], "formants": [[1, 95]]}
        scratch = tempfile.mkdtemp()
        try:
            accents = make_dataset.EspeakAccents("espeak-ng", scratch)
            tools = {"espeak": "espeak-ng", "accents": accents}
            plain = make_dataset.render(p, tools)
            spoken = make_dataset.render(dict(p, accent=accent), tools)
            self.assertFalse(np.array_equal(plain, spoken))
            self.assertTrue(np.array_equal(make_dataset.render(p, tools), plain))  # the accent file did not leak
            again = make_dataset.render(dict(p, accent=accent), {"espeak": "espeak-ng",
                                                                 "accents": make_dataset.EspeakAccents("espeak-ng")})
            self.assertTrue(np.array_equal(again, spoken))
            accents.close()
        finally:
            shutil.rmtree(scratch)

    @unittest.skipIf(shutil.which("mbrola") is None or not os.path.exists("/usr/share/mbrola/us1/us1"),
                     "mbrola or its us1 voice not installed")
    def test_render_mbrola_through_espeak(self):
        p = {"synth": "mbrola", "voice": "mb-us1", "rate": 170, "pitch": 50, "gap": 0, "aug": {},
             "speak": "the bus leaves at nine."}
        tools = {"espeak": "espeak-ng"}
        pcm = make_dataset.render(p, tools)
        self.assertTrue(0.8 < len(pcm) / 16000 < 4)
        self.assertTrue(np.array_equal(pcm, make_dataset.render(p, tools)))
        self.assertFalse(np.array_equal(pcm, make_dataset.render(dict(p, voice="mb-us2"), tools)))

    def assert_speed_and_pitch_take_effect(self, synth, voice, tools):
        """A stretch of 1.25 lengthens the clip, a pitch level of 140 % against 70 % raises it, and the same plan
        renders the same samples. -> the plain clip."""
        p = {"synth": synth, "voice": voice, "stretch": 1.0, "aug": {}, "speak": "the bus leaves at nine."}
        own = make_dataset.render(p, tools)
        slow = make_dataset.render(dict(p, stretch=1.25), tools)
        self.assertGreater(len(slow), 1.15 * len(own))
        low = make_dataset.render(dict(p, pitch_level=70), tools)
        high = make_dataset.render(dict(p, pitch_level=140), tools)
        self.assertGreater(median_pitch_hz(high), 1.6 * median_pitch_hz(low))
        self.assertTrue(np.array_equal(make_dataset.render(p, tools), own))
        return own

    @unittest.skipIf(shutil.which("pico2wave") is None, "pico2wave not installed")
    def test_pico_speed_and_pitch_markup_take_effect(self):
        self.assert_speed_and_pitch_take_effect("pico", "en-US", {"pico": "pico2wave"})

    @unittest.skipIf(shutil.which("RHVoice-test") is None, "RHVoice-test not installed")
    def test_rhvoice_rate_and_pitch_take_effect(self):
        tools = {"rhvoice": "RHVoice-test"}
        own = self.assert_speed_and_pitch_take_effect("rhvoice", "bdl", tools)
        other = {"synth": "rhvoice", "voice": "clb", "stretch": 1.0, "aug": {}, "speak": "the bus leaves at nine."}
        self.assertFalse(np.array_equal(make_dataset.render(other, tools), own))

    @unittest.skipIf(shutil.which("RHVoice-test") is None, "RHVoice-test not installed")
    def test_rhvoice_voice_check_catches_a_voice_it_does_not_have(self):
        make_dataset.check_rhvoice_voices("RHVoice-test")  # the six installed ones
        with self.assertRaisesRegex(ValueError, "alan, no-such-voice"):  # RHVoice speaks it as alan
            make_dataset.check_rhvoice_voices("RHVoice-test", ["alan", "bdl", "no-such-voice"])

    @unittest.skipIf(not all(shutil.which(p) for p in ("lame", "opusenc", "opusdec")), "lame/opus-tools missing")
    def test_codec_round_trips_keep_the_speech_band(self):
        t = np.arange(16000) / 16000
        x = 0.4 * np.sin(2 * np.pi * 440 * t)
        for kind, kbps in (("mp3", 32), ("opus", 16)):
            y = make_dataset.codec_round_trip(x, kind, kbps)
            self.assertTrue(15000 < len(y) < 18000, (kind, len(y)))
            rms = np.sqrt(np.mean(y[4000:12000] ** 2))
            self.assertAlmostEqual(rms, 0.4 / np.sqrt(2), delta=0.05, msg=kind)


class CommittedTestSet(unittest.TestCase):
    def test_manifests(self):
        total = 0
        voices = {"flite": make_dataset.FLITE_VOICES, "festival": make_dataset.FESTIVAL_VOICES,
                  "mbrola": make_dataset.MBROLA_VOICES, "pico": make_dataset.PICO_VOICES,
                  "rhvoice": make_dataset.RHVOICE_VOICES}
        for sub in ("espeak", "flite", "festival", "mbrola", "pico", "rhvoice"):
            d = os.path.join(TESTSET, sub)
            with open(os.path.join(d, "manifest.jsonl")) as fh:
                entries = [json.loads(line) for line in fh]
            self.assertEqual(len(entries), 80)
            for e in entries:
                self.assertTrue(textnorm.is_valid_transcript(e["text"]), e)
                path = os.path.join(d, e["audio_filepath"])
                with open(path, "rb") as fh:
                    head = fh.read(4)
                self.assertEqual(head, b"fLaC", path)
                total += os.path.getsize(path)
                if sub == "espeak":
                    base, _, var = e["voice"][len("espeak:"):].partition("+")
                    self.assertTrue(base in make_dataset.ESPEAK_BASES_HELD or var in make_dataset.VARIANTS_HELD)
                else:
                    self.assertIn(e["voice"][len(sub) + 1:], voices[sub])
        self.assertLessEqual(total, 17_000_000)


if __name__ == "__main__":
    unittest.main()
