#!/usr/bin/env python3
"""Synthesize English speech for the bundled model: 16 kHz int16 mono WAV (or FLAC) + a NeMo-style JSONL manifest.

Python 3.11+ with numpy (1.24 .. 2.x), no other module. Speech comes from espeak-ng (also driving MBROLA), flite,
festival, SVOX Pico (pico2wave) and RHVoice (RHVoice-test) run as subprocesses, many at once (festival as one
long-lived process per worker: its start takes ~0.8 s, an utterance ~10 ms). Text comes from the corpus of
build_corpus.py.

Splits (--split):
  train          train sentences, training voices, augmented (noise, gain, reverberation, speed, padding)
  dev            held-out dev sentences, training voices, clean      (validation during training)
  test           held-out test sentences, HELD-OUT espeak-ng voices, clean     (the WER figure)
  flite-test     held-out test sentences, all five flite voices, clean
  festival-test  held-out test sentences, festival's three English voices (ked_diphone never in training), clean
  mbrola-test    held-out test sentences, the four English MBROLA voices (mb-us3 never in training), clean
  pico-test      held-out test sentences, Pico's en-US and en-GB (en-GB never in training), clean
  rhvoice-test   held-out test sentences, RHVoice's six English voices (alan never in training), clean

--mix (train and dev) says which synthesizers speak and how often, e.g. espeak:0.6,flite:0.2,festival:0.2; the
default espeak:1 is the first bundled model's recipe, utterance for utterance. Training hears four flite voices
(awb held out), two of festival's (ked_diphone held out), three of MBROLA's (mb-us3 held out), one of Pico's
(en-GB held out) and five of RHVoice's (alan held out), so each synthesizer keeps a voice for its test set.
--channel-aug (train) also passes a share of the clips through what uploads go through: a telephone band (300-3400
Hz at 8 kHz, half of them mu-law), or an MP3 or Opus encode and decode (lame, opusenc/opusdec).
--voice-aug (train) makes more voices of the few the synthesizers have: 70 % of the clips of a voice that takes
an intonation target (flite kal, kal16, slt; festival kal_diphone) get a mean pitch of 75-240 Hz (Pico's and
RHVoice's clips a pitch of 70-150 % of the voice's own), and 80 % of all clips a speed perturbation of 0.85-1.18
(formants and pitch scaled together, as a longer or shorter vocal tract), and 40 % of the espeak-ng clips a
synthetic accent (a training base voice with phoneme shifts and formant scales).

Everything an utterance gets (sentence, voice, rate, pitch, augmentation) is drawn from a generator seeded by
(seed, split, index), so utterance i is the same whatever --jobs is and whether the run was resumed. A run writes
OUT/manifest.partial.jsonl as it goes; a rerun with the same arguments skips what is done (use --time-limit to
stay under a command time limit and rerun until it prints "complete"). At the end OUT/manifest.jsonl is written
(and the partial file removed),
in index order, with audio_filepath relative to OUT (NeMo resolves relative paths against the manifest's folder;
--absolute-paths writes absolute ones).

  python3 tools/data/make_dataset.py --corpus build-data/corpus.txt --split train --count 40000 --out data/train
"""

import argparse
import contextlib
import json
import lzma
import multiprocessing as mp
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import time
import wave
from fractions import Fraction

import numpy as np

SR = 16000

# espeak-ng English voices (mbrola ones need mbrola, not used). "en" is British English (gmw/en).
ESPEAK_BASES_TRAIN = ["en-us", "en", "en-gb-scotland", "en-gb-x-gbclan", "en-gb-x-rp", "en-029"]
ESPEAK_BASES_HELD = ["en-us-nyc", "en-gb-x-gbcwmd"]
# Variants (espeak-ng-data/voices/!v). "" = the voice's own default. Robotic/whisper/novelty variants are left out.
VARIANTS_CORE_TRAIN = ["", "m1", "m2", "m4", "m5", "m6", "m7", "m8", "f1", "f2", "f3", "f5",
                       "klatt", "klatt2", "klatt4", "klatt5", "klatt6"]
VARIANTS_EXTRA_TRAIN = ["Alex", "Alicia", "Andrea", "Andy", "Denis", "Diogo", "Gene", "Henrique", "Hugo", "Jacky",
                        "Lee", "Marco", "Mario", "Michael", "Mike", "adam", "anika", "announcer", "antonio", "aunty",
                        "belinda", "benjamin", "boris", "caleb", "croak", "david", "ed", "grandma",
                        "grandpa", "gustave", "iven", "iven2", "iven3", "iven4", "john", "linda", "marcelo", "max",
                        "michel", "miguel", "norbert", "pablo", "paul", "pedro", "quincy", "rob", "robert",
                        "sandro", "shelby", "steph", "steph2", "steph3", "travis", "victor"]
VARIANTS_HELD = ["m3", "f4", "klatt3", "Annie", "edward", "edward2"]  # edward2 = edward with klatt 6
FLITE_VOICES = ["kal", "kal16", "awb", "rms", "slt"]       # flite-test
FLITE_VOICES_TRAIN = ["kal", "kal16", "rms", "slt"]         # awb (Scottish English) held out
# festival's English voices in Debian 12 (festvox-kallpc16k, festvox-kdlpc16k, festvox-us-slt-hts).
FESTIVAL_VOICES = ["kal_diphone", "ked_diphone", "cmu_us_slt_arctic_hts"]  # festival-test
FESTIVAL_VOICES_TRAIN = ["kal_diphone", "cmu_us_slt_arctic_hts"]          # ked_diphone held out
# MBROLA's English diphone voices (contrib mbrola, non-free mbrola-us1/us2/us3/en1), spoken through espeak-ng
# (its text analysis and prosody, MBROLA's recorded diphones): four more recorded speakers.
MBROLA_VOICES = ["mb-us1", "mb-us2", "mb-us3", "mb-en1"]  # mbrola-test
MBROLA_VOICES_TRAIN = ["mb-us1", "mb-us2", "mb-en1"]       # mb-us3 (American male) held out
# SVOX Pico (non-free libttspico-data): two more recorded speakers, each its own language resource.
PICO_VOICES = ["en-US", "en-GB"]       # pico-test
PICO_VOICES_TRAIN = ["en-US"]          # en-GB held out
# RHVoice (non-free rhvoice-english): HMM voices of CMU ARCTIC's speakers (alan is awb, bdl, clb, slt) and of two
# Russian speakers' English (evgeniy-eng, lyubov). alan is held out: he is the speaker of flite's held-out awb, so
# no training voice is awb's.
RHVOICE_VOICES = ["alan", "bdl", "clb", "slt", "evgeniy-eng", "lyubov"]  # rhvoice-test
RHVOICE_VOICES_TRAIN = ["bdl", "clb", "slt", "evgeniy-eng", "lyubov"]
FAMILIES = ("espeak", "flite", "festival", "mbrola", "pico", "rhvoice")
SYNTH_TEST_SPLITS = {"flite-test": ("flite", FLITE_VOICES), "festival-test": ("festival", FESTIVAL_VOICES),
                     "mbrola-test": ("mbrola", MBROLA_VOICES), "pico-test": ("pico", PICO_VOICES),
                     "rhvoice-test": ("rhvoice", RHVOICE_VOICES)}
TRAIN_VOICES = {"flite": FLITE_VOICES_TRAIN, "festival": FESTIVAL_VOICES_TRAIN, "mbrola": MBROLA_VOICES_TRAIN,
                "pico": PICO_VOICES_TRAIN, "rhvoice": RHVOICE_VOICES_TRAIN}  # espeak-ng's: pick_voice
ESPEAK_DRIVEN = ("espeak", "mbrola")   # rate, pitch and word gap are espeak-ng's for both
TEST_SPLITS = {"test"} | set(SYNTH_TEST_SPLITS)  # sentences from the corpus's test split

RATE = (130, 220)   # words per minute (espeak -s)
PITCH = (30, 70)    # espeak -p, 0..99
# --voice-aug: voices the training set has few of made into more. The synthesizer's own intonation target moves
# the pitch (flite's kal, kal16, slt and the held-out awb honour int_f0_target_mean; rms and the HTS voice do not;
# festival's diphone voices take int_lr_params), and a wider speed perturbation scales formants and pitch together
# (the vocal tract length) for every family.
# --voice-aug, espeak-ng: synthetic accents, 40 % of its clips. A training base voice's own file (its phoneme
# table, dictionary rules, stress) plus one to three phoneme shifts of the kind espeak-ng's own English accents
# are made of ("replace" rules: vowel and consonant swaps), and formant scales. The held-out accents' own rules
# (West Midlands h-dropping) are not among them, and their phoneme tables are never used.
ACCENT_SHIFTS = [("aI", "OI"), ("aI", "A:"), ("eI", "aI"), ("eI", "E"), ("oU", "O:"), ("oU", "aU"), ("aU", "a"),
                 ("i:", "I"), ("I", "i:"), ("E", "a"), ("a", "E"), ("a", "A:"), ("A:", "a"), ("V", "U"), ("V", "0"),
                 ("u:", "U"), ("U", "u:"), ("O:", "oU"), ("0", "A:"), ("3:", "E"), ("D", "d"), ("T", "t"),
                 ("N", "n")]
BASE_VOICE_FILES = {"en": "gmw/en", "en-us": "gmw/en-US", "en-gb-scotland": "gmw/en-GB-scotland",
                    "en-gb-x-gbclan": "gmw/en-GB-x-gbclan", "en-gb-x-rp": "gmw/en-GB-x-rp", "en-029": "gmw/en-029"}
F0_VOICES = {"flite": {"kal", "kal16", "slt", "awb"}, "festival": {"kal_diphone", "ked_diphone"}}
F0_MEAN_HZ = (75.0, 240.0)    # drawn log-uniform
F0_STD_OF_MEAN = (0.08, 0.25)
# --voice-aug, Pico and RHVoice: a pitch in % of the voice's own (log-uniform): Pico's <pitch level> markup,
# RHVoice's --pitch.
PITCH_LEVEL = (70.0, 150.0)
PITCH_LEVEL_SYNTHS = ("pico", "rhvoice")
VOICE_SPEED = (0.85, 1.18)    # against the plain augmentation's 0.9 .. 1.1


# ----------------------------------------------------------------------------------------------------------------
# corpus

def read_corpus(path):
    """build_corpus.py's corpus, or the same xz-compressed (PATH.xz: 2 MB instead of 7, for a GPU call's carry)."""
    rows = []
    with (lzma.open(path, "rt", encoding="ascii") if path.endswith(".xz") else open(path, encoding="ascii")) as fh:
        for line in fh:
            split, source, speak = line.rstrip("\n").split("\t")
            rows.append((split, source, speak))
    return rows


def transcript(speak):
    return " ".join(w.rstrip(",.?!") for w in speak.split())


def select_sentences(rows, split, seed, min_words, max_words, in_vocab, sources=None, balance=False):
    want = "test" if split in TEST_SPLITS else split
    vocab = None
    if in_vocab:
        vocab = set()
        for s, _, speak in rows:
            if s == "train":
                vocab.update(transcript(speak).split())
    pool = []
    for s, source, speak in rows:
        if s != want or (sources and source not in sources):
            continue
        words = transcript(speak).split()
        if not (min_words <= len(words) <= max_words):
            continue
        if vocab is not None and any(w not in vocab for w in words):
            continue
        if want == "test" and any(len(w) == 1 and w not in ("a", "i") for w in words):
            continue  # stray letters ("flowchart n and v") make poor test sentences
        pool.append((source, speak))
    random.Random("%d/%s/order" % (seed, want)).shuffle(pool)
    if balance:  # round-robin over the sources, so that a small set is not all one kind of sentence
        by = {}
        for item in pool:
            by.setdefault(item[0], []).append(item)
        names = sorted(by)
        pool = [by[n][i] for i in range(max(len(v) for v in by.values())) for n in names if i < len(by[n])]
    return pool


# ----------------------------------------------------------------------------------------------------------------
# per-utterance choices

def parse_mix(text):
    """"espeak:0.6,flite:0.2,festival:0.2" -> [(family, cumulative share)], shares normalised."""
    parts = []
    for item in filter(None, text.split(",")):
        name, _, share = item.partition(":")
        if name not in FAMILIES:
            raise ValueError("unknown synthesizer %r in --mix (have %s)" % (name, ", ".join(FAMILIES)))
        try:
            w = float(share) if share else 1.0
        except ValueError:
            raise ValueError("bad share %r for %s in --mix" % (share, name)) from None
        if not w > 0:
            raise ValueError("share of %s in --mix must be > 0" % name)
        parts.append((name, w))
    if not parts or len({n for n, _ in parts}) != len(parts):
        raise ValueError("--mix needs each synthesizer at most once and at least one")
    total, acc, out = sum(w for _, w in parts), 0.0, []
    for name, w in parts:
        acc += w / total
        out.append((name, acc))
    return out


def pick_voice(split, r, mix=(("espeak", 1.0),)):
    """-> (synth, voice string for the synthesizer, label). A family is drawn only when the mix has several, so
    that the default mix draws exactly what the first edition's recipe drew; `test` is always espeak-ng's."""
    if split in SYNTH_TEST_SPLITS:
        family, voices = SYNTH_TEST_SPLITS[split]
        v = r.choice(voices)
        return family, v, family + ":" + v
    family = "espeak"
    if split in ("train", "dev"):
        family = mix[0][0]
        if len(mix) > 1:
            x = r.random()
            family = next((name for name, upto in mix if x < upto), mix[-1][0])
    if family in TRAIN_VOICES:
        v = r.choice(TRAIN_VOICES[family])
        return family, v, family + ":" + v
    if split in ("train", "dev"):
        base = r.choice(ESPEAK_BASES_TRAIN)
        var = r.choice(VARIANTS_CORE_TRAIN) if r.random() < 0.5 else r.choice(VARIANTS_EXTRA_TRAIN)
    else:  # test: every voice has a held-out base, a held-out variant, or both
        k = r.randrange(3)
        base = r.choice(ESPEAK_BASES_HELD if k != 1 else ESPEAK_BASES_TRAIN)
        var = r.choice(VARIANTS_HELD) if k != 0 else r.choice(VARIANTS_CORE_TRAIN)
    v = base + ("+" + var if var else "")
    return "espeak", v, "espeak:" + v


def plan(split, index, seed, pool, augment, mix=(("espeak", 1.0),), channel=False, voice_aug=False):
    r = random.Random("%d/%s/%d" % (seed, split, index))
    source, speak = pool[index % len(pool)]
    synth, voice, label = pick_voice(split, r, mix)
    p = {"index": index, "source": source, "speak": speak, "text": transcript(speak), "synth": synth,
         "voice": voice, "label": label}
    if synth in ESPEAK_DRIVEN:
        p["rate"] = r.randint(*RATE)
        p["pitch"] = r.randint(*PITCH)
        p["gap"] = r.choice([0, 0, 0, 0, 1, 2, 3]) if split == "train" else 0
    else:
        p["stretch"] = round(r.uniform(0.9, 1.1), 3)
    aug = {}
    if augment:
        if r.random() < 0.6:
            aug["speed"] = round(r.uniform(0.9, 1.1), 3)
        aug["pad"] = [round(r.uniform(0.0, 0.3), 3), round(r.uniform(0.0, 0.3), 3)]
        if r.random() < 0.3:
            aug["reverb"] = {"rt60": round(r.uniform(0.1, 0.6), 3), "wet_db": round(r.uniform(-12.0, -2.0), 1)}
        if r.random() < 0.6:
            aug["noise"] = {"color": r.choice(["white", "pink", "brown"]), "snr": round(r.uniform(5.0, 40.0), 1)}
        aug["peak_db"] = round(r.uniform(-25.0, -1.0), 1)
        aug["noise_seed"] = r.getrandbits(63)
        if channel:  # drawn last: without --channel-aug every other choice stays what it was
            x = r.random()
            if x < 0.15:
                aug["channel"] = {"kind": "phone", "mulaw": r.random() < 0.5}
            elif x < 0.30:
                aug["channel"] = {"kind": "mp3", "kbps": r.choice([24, 32, 48, 64, 96])}
            elif x < 0.45:
                aug["channel"] = {"kind": "opus", "kbps": r.choice([8, 12, 16, 24, 32])}
        if voice_aug:  # drawn after everything else, as the channel: without --voice-aug nothing changes
            if voice in F0_VOICES.get(synth, ()) and r.random() < 0.7:
                mean = float(np.exp(r.uniform(*np.log(F0_MEAN_HZ))))
                p["f0"] = {"mean": round(mean, 1), "std": round(mean * r.uniform(*F0_STD_OF_MEAN), 1)}
            if synth in PITCH_LEVEL_SYNTHS and r.random() < 0.7:
                p["pitch_level"] = int(round(np.exp(r.uniform(*np.log(PITCH_LEVEL)))))
            if r.random() < 0.8:
                aug["speed"] = round(r.uniform(*VOICE_SPEED), 3)
            if synth == "espeak" and r.random() < 0.4:
                shifts = {}
                for a, b in r.sample(ACCENT_SHIFTS, r.randint(1, 3)):
                    shifts.setdefault(a, b)  # one replacement a phoneme
                p["accent"] = {"shifts": sorted(shifts.items()),
                               "formants": [[k, r.randint(90, 110)] for k in (1, 2, 3) if r.random() < 0.5]}
    p["aug"] = aug
    return p


# ----------------------------------------------------------------------------------------------------------------
# audio

def parse_wav(data):
    """RIFF/WAVE bytes (espeak --stdout writes bogus sizes) -> (int16 array, sample rate)."""
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ValueError("not a WAV stream")
    pos, sr, ch, bits = 12, None, None, None
    while pos + 8 <= len(data):
        cid, size = data[pos:pos + 4], int.from_bytes(data[pos + 4:pos + 8], "little")
        if cid == b"fmt ":
            fmt = data[pos + 8:pos + 8 + size]
            ch, sr, bits = int.from_bytes(fmt[2:4], "little"), int.from_bytes(fmt[4:8], "little"), \
                int.from_bytes(fmt[14:16], "little")
        elif cid == b"data":
            if sr is None or ch != 1 or bits != 16:
                raise ValueError("unsupported WAV format (want 16-bit mono)")
            body = data[pos + 8:pos + 8 + size] if pos + 8 + size <= len(data) else data[pos + 8:]
            body = body[: len(body) // 2 * 2]
            return np.frombuffer(body, dtype="<i2").astype(np.float64) / 32768.0, sr
        pos += 8 + size + (size & 1)
    raise ValueError("no data chunk")


class EspeakAccents:
    """Synthetic accents for espeak-ng: a private copy of its data folder (symbolic links, made on first use, one
    per worker process, under `scratch`) with one more voice file, rewritten for every clip that has an accent."""

    NAME = "steno-accent"

    def __init__(self, espeak, scratch=None):
        self.espeak, self.scratch, self.root = espeak, scratch, None
        self.own = {}  # base voice -> the lines of its file that an accent keeps (read once)

    def _data(self):
        if self.root is None:
            out = subprocess.run([self.espeak, "--version"], stdout=subprocess.PIPE, check=True).stdout.decode()
            data = out.split("Data at:")[-1].strip()
            if not os.path.isdir(os.path.join(data, "lang")):
                raise OSError("espeak-ng's data folder %r has no lang/" % data)
            self.root = tempfile.mkdtemp(prefix="espeak-accents-", dir=self.scratch)
            # Real folders with linked files: espeak-ng walks lang/ to find voices by name.
            subprocess.run(["cp", "-rs", data, os.path.join(self.root, "espeak-ng-data")], check=True)
            os.makedirs(os.path.join(self.root, "espeak-ng-data", "lang", "steno"))
            self.data = data
        return self.root

    def voice(self, base, accent):
        """-> (espeak-ng arguments that select the data copy, the voice name to use instead of `base`)."""
        root = self._data()
        if base not in self.own:
            with open(os.path.join(self.data, "lang", BASE_VOICE_FILES[base])) as fh:
                self.own[base] = [ln for ln in fh.read().splitlines()
                                  if ln.split()[:1] not in (["name"], ["language"], ["maintainer"], ["status"])]
        own = self.own[base]
        lines = ["name %s" % self.NAME, "language %s" % self.NAME, "dictionary en"]
        if not any(ln.split()[:1] == ["phonemes"] for ln in own):
            lines.append("phonemes en")  # the base's table came from its language name
        lines += own + ["replace 00 %s %s" % (a, b) for a, b in accent["shifts"]]
        lines += ["formant %d %d 100 100" % (k, f) for k, f in accent["formants"]]
        with open(os.path.join(root, "espeak-ng-data", "lang", "steno", self.NAME), "w") as fh:
            fh.write("\n".join(lines) + "\n")
        return ["--path=" + root], self.NAME

    def close(self):
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None


def synth_espeak(p, espeak, accents=None):
    """accents: an EspeakAccents, needed for a plan with an "accent"."""
    voice, extra = p["voice"], []
    if "accent" in p:
        base, _, variant = voice.partition("+")
        extra, name = accents.voice(base, p["accent"])
        voice = name + ("+" + variant if variant else "")
    cmd = [espeak] + extra + ["--stdout", "-v", voice, "-s", str(p["rate"]), "-p", str(p["pitch"]), "-g",
                              str(p["gap"]), p["speak"]]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True).stdout
    return parse_wav(out)


def synth_flite(p, flite):
    with tempfile.TemporaryDirectory(prefix="flite") as d:
        path = os.path.join(d, "o.wav")
        f0 = []
        if "f0" in p:
            f0 = ["--setf", "int_f0_target_mean=%s" % p["f0"]["mean"],
                  "--setf", "int_f0_target_stddev=%s" % p["f0"]["std"]]
        cmd = [flite, "-voice", p["voice"], "--setf", "duration_stretch=%s" % p["stretch"]] + f0 + \
            ["-t", p["speak"], "-o", path]
        subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
        with open(path, "rb") as fh:
            return parse_wav(fh.read())


def synth_pico(p, pico):
    """SVOX Pico through pico2wave: rate and pitch as its own markup (speed in % of normal: a stretch of 1.1 is
    speed 91)."""
    text = '<speed level="%d">%s</speed>' % (round(100 / p["stretch"]), p["speak"])
    if "pitch_level" in p:
        text = '<pitch level="%d">%s</pitch>' % (p["pitch_level"], text)
    with tempfile.TemporaryDirectory(prefix="pico") as d:
        path = os.path.join(d, "o.wav")  # pico2wave wants the .wav extension
        subprocess.run([pico, "-l", p["voice"], "-w", path, text], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       check=True)
        with open(path, "rb") as fh:
            return parse_wav(fh.read())


def synth_rhvoice(p, rhvoice):
    """RHVoice through RHVoice-test, the text on its standard input: rate and pitch in % of the voice's own (a
    stretch of 1.1 is rate 91). It speaks at 24 kHz whatever its --sample-rate says; render resamples."""
    cmd = [rhvoice, "-p", p["voice"], "-r", str(round(100 / p["stretch"]))]
    if "pitch_level" in p:
        cmd += ["-t", str(p["pitch_level"])]
    with tempfile.TemporaryDirectory(prefix="rhvoice") as d:
        path = os.path.join(d, "o.wav")
        subprocess.run(cmd + ["-o", path], input=p["speak"].encode("ascii"), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, check=True)
        with open(path, "rb") as fh:
            return parse_wav(fh.read())


def check_rhvoice_voices(rhvoice, voices=tuple(RHVOICE_VOICES)):
    """RHVoice speaks a voice name it does not know with its first voice (alan, the held-out one), without an
    error: make sure every voice of the family is there by hearing each speak differently."""
    heard = {}
    for voice in voices:
        p = {"voice": voice, "stretch": 1.0, "speak": "a voice check."}
        pcm, _ = synth_rhvoice(p, rhvoice)
        heard.setdefault(pcm.tobytes(), []).append(voice)
    same = [v for v in heard.values() if len(v) > 1]
    if same:
        raise ValueError("RHVoice speaks %s with one voice: its voices are not all installed" %
                         " and ".join(", ".join(v) for v in same))


class FestivalSession:
    """One long-lived `festival --pipe`: a voice is loaded once (~0.8 s for the first), then an utterance takes
    ~10 ms (diphone voices) to ~90 ms (HTS). Each request ends with a marker line that festival prints and
    flushes, so the reply is complete when the marker arrives; a festival that says nothing for `timeout` seconds
    is killed and the next request starts a new one. The output depends only on the text, voice, stretch and
    intonation target, not on what the process said before (checked byte for byte): every utterance sets the
    target, the voice's own unless one is asked for."""

    MARK = b"@@steno-festival-done@@"

    def __init__(self, program, timeout=60.0):
        self.program, self.timeout, self.proc, self.voice = program, timeout, None, None

    def _start(self):
        self.proc = subprocess.Popen([self.program, "--pipe"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.voice = None

    def close(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc.stdin.close()
            self.proc.stdout.close()
            self.proc = None

    def _run(self, scheme):
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.proc.stdin.write(scheme.encode("ascii") + b'\n(format t "%s\\n")\n(fflush nil)\n' % self.MARK)
        self.proc.stdin.flush()
        buf, fd, deadline = b"", self.proc.stdout.fileno(), time.time() + self.timeout
        while self.MARK not in buf:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.time()))
            chunk = os.read(fd, 4096) if ready else b""
            if not chunk:
                self.close()
                raise OSError("festival %s" % ("stopped" if ready else "timed out"))
            buf += chunk
        return buf

    def synth(self, voice, stretch, text, path, f0=None):
        """f0: {"mean": Hz, "std": Hz}, the intonation target of a diphone voice (int_lr_params), or None."""
        if voice != self.voice:
            # An unknown voice is an error festival reports only on stderr, keeping the voice it had: ask which
            # voice is current, so that no clip is labelled with a voice that did not speak it. The voice's own
            # intonation parameters are kept, to put back after an utterance with another target.
            said = self._run('(voice_%s)\n(set! steno_lr_own int_lr_params)\n'
                             '(format t "voice=%%s\\n" current-voice)' % voice)
            if b"voice=%s\n" % voice.encode("ascii") not in said:
                raise ValueError("festival has no voice %s" % voice)
            self.voice = voice
        lr = "steno_lr_own"
        if f0:  # the first entry of a name wins in festival's parameter lists
            lr = "(append (list (list 'target_f0_mean %s) (list 'target_f0_std %s)) steno_lr_own)" % (
                float(f0["mean"]), float(f0["std"]))
        quoted = text.replace("\\", " ").replace('"', " ")
        self._run("(set! int_lr_params %s)\n(Parameter.set 'Duration_Stretch %s)\n"
                  "(utt.save.wave (utt.synth (Utterance Text \"%s\")) \"%s\" 'riff)" % (lr, stretch, quoted, path))


def synth_festival(p, session):
    with tempfile.TemporaryDirectory(prefix="festival") as d:
        path = os.path.join(d, "o.wav")
        session.synth(p["voice"], p["stretch"], p["speak"], path, p.get("f0"))
        if not os.path.exists(path):
            raise ValueError("festival wrote no audio")
        with open(path, "rb") as fh:
            return parse_wav(fh.read())


def _fft_len(n):
    """Smallest 2^a 3^b 5^c >= n (fast FFT sizes)."""
    best = 1 << max(0, (n - 1).bit_length())
    f5 = 1
    while f5 < 2 * n:
        f35 = f5
        while f35 < 2 * n:
            m = f35
            while m < n:
                m *= 2
            best = min(best, m)
            f35 *= 3
        f5 *= 5
    return best


def _smooth7(n):
    """True when n has no prime factor above 7 (a fast FFT size for pocketfft)."""
    for f in (2, 3, 5, 7):
        while n % f == 0:
            n //= f
    return n == 1


def resample(x, sr_in, sr_out, speed=1.0):
    """Band-limited resampling by FFT (brick-wall low-pass at the lower Nyquist). speed > 1 makes the clip shorter
    and higher (Kaldi-style speed perturbation: the input is read at sr_in * speed). The FFT length is a multiple of
    the ratio's denominator so that every frequency lands exactly where it belongs."""
    ratio = (Fraction(sr_out) / (Fraction(sr_in) * Fraction(speed).limit_denominator(10000))).limit_denominator(5000)
    p, q = ratio.numerator, ratio.denominator
    n = len(x)
    if p == q:
        return x.copy()
    k0 = -(-(n + 256) // q)
    # The smallest k >= k0 whose forward (k q) and inverse (k p) FFT lengths are both 7-smooth; failing that (within
    # k0 / 4), the smallest with the better of the two smooth. The scan stops at the first fully smooth k, which is
    # near k0: testing every k of the range cost a quarter of the synthesis time at the long telephone FFTs.
    best = None
    for cand in range(k0, k0 + k0 // 4 + 2):
        key = (not _smooth7(cand * q), not _smooth7(cand * q * p), cand)
        if best is None or key < best:
            best = key
        if not key[0] and not key[1]:
            break
    k = best[2]
    pad = k * q      # zero padding: the signal is treated as periodic, keep the wrap-around silent
    m_pad = k * p
    spec = np.fft.rfft(x, pad)
    keep = min(len(spec), m_pad // 2 + 1)
    spec = spec[:keep]
    if pad % 2 == 0 and m_pad > pad:
        spec[-1] *= 0.5  # upsampling: the old Nyquist bin is split between +f and -f
    y = np.fft.irfft(spec, m_pad) * (m_pad / pad)
    return y[: int(round(n * p / q))]


def colored_noise(rng, n, color):
    w = rng.standard_normal(n)
    if color == "white":
        return w
    spec = np.fft.rfft(w)
    f = np.arange(len(spec), dtype=np.float64)
    f[0] = 1.0
    spec *= f ** (-0.5 if color == "pink" else -1.0)
    spec[0] = 0.0
    y = np.fft.irfft(spec, n)
    return y / (np.std(y) + 1e-12)


def fft_convolve(x, h):
    n = len(x) + len(h) - 1
    L = _fft_len(n)
    return np.fft.irfft(np.fft.rfft(x, L) * np.fft.rfft(h, L), L)[:n]


def speech_rms(x):
    """RMS over the louder frames (speech), not the pauses."""
    fr = 400
    k = len(x) // fr
    if k == 0:
        return float(np.sqrt(np.mean(x ** 2)) + 1e-12)
    e = np.mean(x[: k * fr].reshape(k, fr) ** 2, axis=1)
    thr = np.max(e) * 1e-3
    return float(np.sqrt(np.mean(e[e > thr])) + 1e-12)


def mulaw_8bit(x):
    """G.711-style mu-law (mu = 255) quantised to 8 bits and expanded again; x in [-1, 1]."""
    mu = 255.0
    y = np.sign(x) * np.log1p(mu * np.abs(x)) / np.log1p(mu)
    y = np.round(y * 127.0) / 127.0
    return np.sign(y) * np.expm1(np.abs(y) * np.log1p(mu)) / mu


def telephone(x, mulaw):
    """A narrowband call: down to 8 kHz, only 300-3400 Hz kept (FFT mask), optionally mu-law, back to 16 kHz."""
    y = resample(x, SR, 8000)
    spec = np.fft.rfft(y)
    f = np.fft.rfftfreq(len(y), 1.0 / 8000)
    spec[(f < 300.0) | (f > 3400.0)] = 0.0
    y = np.fft.irfft(spec, len(y))
    if mulaw:
        peak = np.max(np.abs(y)) + 1e-12
        y = mulaw_8bit(y / peak * 0.9) * peak / 0.9
    return resample(y, 8000, SR)[: len(x)]


def codec_round_trip(x, kind, kbps):
    """x (16 kHz, |x| <= 1) encoded as MP3 (lame) or Opus (opusenc) at kbps and decoded back to 16 kHz."""
    with tempfile.TemporaryDirectory(prefix="codec") as d:
        src, enc, dec = (os.path.join(d, n) for n in ("in.wav", "x." + kind, "out.wav"))
        write_wav(src, np.clip(np.round(x * 32767.0), -32768, 32767).astype("<i2"))
        if kind == "mp3":
            steps = [["lame", "--quiet", "-b", str(kbps), src, enc], ["lame", "--quiet", "--decode", enc, dec]]
        else:
            steps = [["opusenc", "--quiet", "--bitrate", str(kbps), src, enc],
                     ["opusdec", "--quiet", "--rate", str(SR), enc, dec]]
        for cmd in steps:
            subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
        with open(dec, "rb") as fh:
            y, sr = parse_wav(fh.read())
    if sr != SR:
        raise ValueError("%s decoder gave %d Hz" % (kind, sr))
    return y


def apply_channel(y, ch):
    head = 0.5 / (np.max(np.abs(y)) + 1e-12)  # headroom: the codecs must not clip
    if ch["kind"] == "phone":
        return telephone(y * head, ch["mulaw"]) / head
    return codec_round_trip(y * head, ch["kind"], ch["kbps"]) / head


def synthesize(p, tools):
    if p["synth"] in ESPEAK_DRIVEN:  # an MBROLA voice is an espeak-ng voice that runs the mbrola program
        return synth_espeak(p, tools["espeak"], tools.get("accents"))
    if p["synth"] == "flite":
        return synth_flite(p, tools["flite"])
    if p["synth"] == "pico":
        return synth_pico(p, tools["pico"])
    if p["synth"] == "rhvoice":
        return synth_rhvoice(p, tools["rhvoice"])
    return synth_festival(p, tools["festival"])


def render(p, tools):
    """tools: {"espeak": program, "flite": program, "pico": program, "rhvoice": program,
    "festival": FestivalSession}."""
    x, sr = synthesize(p, tools)
    if len(x) < sr // 10 or not np.any(x):
        raise ValueError("synthesizer returned no audio")
    aug = p["aug"]
    y = resample(x, sr, SR, aug.get("speed", 1.0))
    if aug:
        rng = np.random.default_rng(aug["noise_seed"])
        pre, post = (int(round(s * SR)) for s in aug["pad"])
        y = np.concatenate([np.zeros(pre), y, np.zeros(post)])
        if "reverb" in aug:
            rt60 = aug["reverb"]["rt60"]
            L = int(rt60 * SR)
            t = np.arange(L) / SR
            tail = rng.standard_normal(L) * np.exp(-6.9078 * t / rt60)  # -60 dB at rt60
            tail[: int(0.002 * SR)] = 0.0  # a short gap before the reflections
            tail *= 10 ** (aug["reverb"]["wet_db"] / 20) / (np.sqrt(np.sum(tail ** 2)) + 1e-12)
            h = tail
            h[0] = 1.0
            y = fft_convolve(y, h)[: len(y)]
        if "noise" in aug:
            nz = colored_noise(rng, len(y), aug["noise"]["color"])
            y = y + nz * speech_rms(y) / (np.sqrt(np.mean(nz ** 2)) + 1e-12) * 10 ** (-aug["noise"]["snr"] / 20)
        if "channel" in aug:  # after the room and the noise, as a recording is sent
            y = apply_channel(y, aug["channel"])
        peak_db = aug["peak_db"]
    else:
        peak_db = -3.0
    y = y * (10 ** (peak_db / 20) / (np.max(np.abs(y)) + 1e-12))
    return np.clip(np.round(y * 32767.0), -32768, 32767).astype("<i2")


def write_wav(path, pcm):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes(pcm.tobytes())


# ----------------------------------------------------------------------------------------------------------------
# workers

_G = {}


def _init(args_dict, pool):
    _G.update(args_dict)
    _G["pool"] = pool
    _G["tools"] = {"espeak": args_dict["espeak"], "accents": EspeakAccents(args_dict["espeak"], args_dict["scratch"]),
                   "flite": args_dict["flite"], "pico": args_dict["pico"], "rhvoice": args_dict["rhvoice"],
                   "festival": FestivalSession(args_dict["festival"])}


@contextlib.contextmanager
def _removed_at_exit(path):
    try:
        yield
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _work(index):
    a = _G
    p = plan(a["split"], index, a["seed"], a["pool"], a["augment"], a["mix"], a["channel"], a["voice_aug"])
    rel = ("audio/%03d/" % (index // 1000) if a["shard"] else "audio/") + "%s-%07d.%s" % (a["split"], index,
                                                                                       a["format"])
    path = os.path.join(a["out"], rel)
    try:
        pcm = render(p, a["tools"])
    except (subprocess.CalledProcessError, ValueError, OSError) as e:
        return {"index": index, "error": "%s: %s" % (type(e).__name__, str(e)[:200])}
    dur = len(pcm) / SR
    if dur > a["max_seconds"]:
        return {"index": index, "error": "too long (%.1f s)" % dur}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if a["format"] == "wav":
        tmp = path + ".tmp"
        write_wav(tmp, pcm)
        os.replace(tmp, path)
    else:
        with tempfile.TemporaryDirectory(prefix="flac") as d:
            wp = os.path.join(d, "x.wav")
            write_wav(wp, pcm)
            subprocess.run(["flac", "--silent", "--best", "--no-padding", "-f", "-o", path + ".tmp", wp],
                           check=True)
            os.replace(path + ".tmp", path)
    entry = {"audio_filepath": rel, "text": p["text"], "duration": round(dur, 3), "voice": p["label"],
             "source": p["source"]}
    if p["synth"] in ESPEAK_DRIVEN:
        entry["synth"] = {"rate": p["rate"], "pitch": p["pitch"], "gap": p["gap"]}
        if "accent" in p:
            entry["synth"]["accent"] = p["accent"]
    else:
        entry["synth"] = {"duration_stretch": p["stretch"]}
        for key in ("f0", "pitch_level"):
            if key in p:
                entry["synth"][key] = p[key]
    if p["aug"]:
        entry["aug"] = {k: v for k, v in p["aug"].items() if k != "noise_seed"}
    return {"index": index, "entry": entry}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="build-data/corpus.txt")
    ap.add_argument("--split", required=True, choices=["train", "dev", "test"] + sorted(SYNTH_TEST_SPLITS))
    ap.add_argument("--count", type=int, required=True, help="utterances (train reuses sentences past the corpus)")
    ap.add_argument("--out", required=True, help="output folder of this split (audio/ and manifest.jsonl)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--format", choices=["wav", "flac"], default="wav", help="flac needs the flac program")
    ap.add_argument("--min-words", type=int, default=2)
    ap.add_argument("--max-words", type=int, default=30)
    ap.add_argument("--in-vocab", action="store_true", help="only sentences whose words all occur in training text")
    ap.add_argument("--sources", default="", help="comma-separated corpus sources to use (default: all)")
    ap.add_argument("--balance-sources", action="store_true", help="take the sources in turn")
    ap.add_argument("--augment", choices=["auto", "on", "off"], default="auto", help="auto: on for train only")
    ap.add_argument("--max-seconds", type=float, default=20.0)
    ap.add_argument("--time-limit", type=float, default=0, help="stop after this many seconds (resume by rerun)")
    ap.add_argument("--absolute-paths", action="store_true")
    ap.add_argument("--espeak", default=os.environ.get("ESPEAK_NG", "espeak-ng"))
    ap.add_argument("--flite", default=os.environ.get("FLITE", "flite"))
    ap.add_argument("--festival", default=os.environ.get("FESTIVAL", "festival"))
    ap.add_argument("--mbrola", default=os.environ.get("MBROLA", "mbrola"),
                    help="the program espeak-ng runs for its mb-* voices (only checked here: espeak-ng finds it "
                         "on PATH)")
    ap.add_argument("--pico", default=os.environ.get("PICO2WAVE", "pico2wave"), help="SVOX Pico's pico2wave")
    ap.add_argument("--rhvoice", default=os.environ.get("RHVOICE_TEST", "RHVoice-test"),
                    help="RHVoice's RHVoice-test")
    ap.add_argument("--mix", default="espeak:1",
                    help="train/dev: synthesizers and their shares, e.g. espeak:0.6,flite:0.2,festival:0.2")
    ap.add_argument("--channel-aug", action="store_true",
                    help="train: telephone band, MP3 and Opus round trips for a share of the clips (lame, opus-tools)")
    ap.add_argument("--voice-aug", action="store_true",
                    help="train: more voices from few: intonation targets for the flite and festival voices that "
                         "take one, Pico's and RHVoice's pitch, a wider speed perturbation (vocal tract length), "
                         "synthetic espeak-ng accents")
    args = ap.parse_args()
    try:
        mix = parse_mix(args.mix)
    except ValueError as e:
        sys.exit(str(e))

    t0 = time.time()
    rows = read_corpus(args.corpus)
    pool = select_sentences(rows, args.split, args.seed, args.min_words, args.max_words, args.in_vocab,
                            set(filter(None, args.sources.split(","))), args.balance_sources)
    if not pool:
        sys.exit("no sentences for split %s with these filters" % args.split)
    augment = args.augment == "on" or (args.augment == "auto" and args.split == "train")
    if args.split in SYNTH_TEST_SPLITS:
        families = {SYNTH_TEST_SPLITS[args.split][0]}
    else:  # test is espeak-ng's; train and dev speak the mix
        families = {"espeak"} if args.split == "test" else {name for name, _ in mix}
    needed = [getattr(args, f) for f in sorted(families)] + ([args.espeak] if "mbrola" in families else [])
    if augment and args.channel_aug:
        needed += ["lame", "opusenc", "opusdec"]
    for prog in needed:
        if shutil.which(prog) is None:
            sys.exit("%s not found (PATH, or --espeak/--flite/--festival/--mbrola/--pico/--rhvoice; see "
                     "tools/data/README.md)" % prog)
    if "rhvoice" in families:
        try:
            check_rhvoice_voices(args.rhvoice)
        except (ValueError, OSError, subprocess.CalledProcessError) as e:
            sys.exit("RHVoice: %s" % e)
    if args.format == "flac" and shutil.which("flac") is None:
        sys.exit("--format flac needs the flac program")
    os.makedirs(args.out, exist_ok=True)
    shard = args.count > 2000

    partial = os.path.join(args.out, "manifest.partial.jsonl")
    done = {}
    if os.path.exists(partial):
        with open(partial) as fh:
            for line in fh:
                try:
                    d = json.loads(line)
                except ValueError:
                    continue  # a line cut by a kill
                done[d["index"]] = d
    todo = [i for i in range(args.count) if i not in done]
    print("split %s: %d sentences in the pool, %d utterances (%d done before), %d jobs, augment %s" %
          (args.split, len(pool), args.count, len(done), args.jobs, "on" if augment else "off"), file=sys.stderr)

    conf = {"split": args.split, "seed": args.seed, "augment": augment, "out": args.out, "format": args.format,
            "espeak": args.espeak, "flite": args.flite, "festival": args.festival, "pico": args.pico,
            "rhvoice": args.rhvoice, "max_seconds": args.max_seconds,
            "shard": shard, "mix": mix, "channel": augment and args.channel_aug,
            "voice_aug": augment and args.voice_aug}
    stopped = False
    audio_s = 0.0
    n_new = 0
    t1 = time.time()
    # The workers' scratch (espeak-ng's data copies for synthetic accents) goes with this process: a pool's
    # workers end without running clean-up code.
    conf["scratch"] = tempfile.mkdtemp(prefix="make_dataset-")
    with open(partial, "a") as pf, _removed_at_exit(conf["scratch"]):
        ctx = mp.get_context("fork")
        with ctx.Pool(args.jobs, initializer=_init, initargs=(conf, pool)) as workers:
            for res in workers.imap_unordered(_work, todo, chunksize=8):
                pf.write(json.dumps(res) + "\n")
                done[res["index"]] = res
                n_new += 1
                if "entry" in res:
                    audio_s += res["entry"]["duration"]
                if n_new % 500 == 0 or n_new == len(todo):
                    pf.flush()
                    el = time.time() - t1
                    print("  %d/%d  %.1f utt/s  %.2f h audio  %.0f s" % (len(done), args.count, n_new / el,
                                                                       audio_s / 3600, el), file=sys.stderr)
                if args.time_limit and time.time() - t0 > args.time_limit:
                    stopped = True
                    workers.terminate()
                    break
    el = time.time() - t1
    if n_new:
        print("this run: %d utterances, %.1f s of audio in %.1f s wall: %.1f utt/s, %.2f utt/s per job, "
              "%.0fx real time" % (n_new, audio_s, el, n_new / el, n_new / el / args.jobs, audio_s / max(el, 1e-9)),
              file=sys.stderr)
    if stopped or len(done) < args.count:
        print("incomplete: %d/%d; rerun the same command to resume" % (len(done), args.count), file=sys.stderr)
        sys.exit(3)

    errors = [done[i] for i in range(args.count) if "error" in done[i]]
    total = 0.0
    with open(os.path.join(args.out, "manifest.jsonl.tmp"), "w") as fh:
        for i in range(args.count):
            e = done[i].get("entry")
            if e is None:
                continue
            if args.absolute_paths:
                e = dict(e, audio_filepath=os.path.abspath(os.path.join(args.out, e["audio_filepath"])))
            order = ["audio_filepath", "text", "duration", "voice", "source", "synth", "aug"]
            e = {k: e[k] for k in order + sorted(set(e) - set(order)) if k in e}
            total += e["duration"]
            fh.write(json.dumps(e) + "\n")
    os.replace(os.path.join(args.out, "manifest.jsonl.tmp"), os.path.join(args.out, "manifest.jsonl"))
    os.remove(partial)
    for e in errors[:10]:
        print("  skipped %d: %s" % (e["index"], e["error"]), file=sys.stderr)
    print("complete: %s/manifest.jsonl, %d utterances, %.2f h, %d skipped" %
          (args.out, args.count - len(errors), total / 3600, len(errors)), file=sys.stderr)


if __name__ == "__main__":
    main()
