"""Synthetic conversations for steno's bundled diarizer: speakers are synthesizer voices (espeak-ng voices and
variants with their own pitch and rate, flite voices), their utterances synthesized once into a pool, and
conversations composed from the pool on the fly: 2-4 speakers, turns of one to three utterances, pauses,
5-20 % overlapped speech, per-speaker gain, noise, reverberation. Labels are per speaker and 80 ms frame, in
arrival order (the first to speak is speaker 0), which is what Sortformer outputs.

Training voices and held-out voices never share a (synthesizer, voice, variant): the held-out ones make the
committed test set (tests/data/diar-testset). numpy + the standard library; espeak-ng and flite as subprocesses.
"""
import os
import random
import sys
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
import gensent  # noqa: E402
import make_dataset as md  # noqa: E402  (voices, synthesis, resampling, noise, reverberation)

SR = 16000
FRAME_S = 0.08
FLITE_TRAIN = ["kal", "awb", "rms"]
FLITE_HELD = ["slt"]


@dataclass(frozen=True)
class Voice:
    synth: str   # "espeak" or "flite"
    voice: str   # espeak "base+variant" or a flite voice
    pitch: int = 50
    rate: int = 170
    stretch: float = 1.0

    @property
    def name(self):
        if self.synth == "espeak":
            return f"espeak:{self.voice}:p{self.pitch}:r{self.rate}"
        return f"flite:{self.voice}:s{self.stretch}"


def voices(split, count, seed, with_flite=True):
    """`count` distinct speaker voices for `split` ("train" or "test"): espeak bases x variants x pitch x rate
    (and flite voices when available), training and held-out sets disjoint in (base, variant) and flite voice."""
    r = random.Random(f"{seed}/voices/{split}")
    if split == "train":
        combos = [(b, v) for b in md.ESPEAK_BASES_TRAIN for v in md.VARIANTS_CORE_TRAIN + md.VARIANTS_EXTRA_TRAIN]
        flite = FLITE_TRAIN
    else:
        combos = [(b, v) for b in md.ESPEAK_BASES_HELD for v in md.VARIANTS_HELD]
        flite = FLITE_HELD
    out, seen = [], set()
    while len(out) < count:
        if with_flite and r.random() < 0.08:
            v = Voice("flite", r.choice(flite), stretch=round(r.uniform(0.85, 1.15), 2))
        else:
            base, var = r.choice(combos)
            v = Voice("espeak", base + ("+" + var if var else ""), r.randint(*md.PITCH), r.randint(*md.RATE))
        if v.name not in seen:
            seen.add(v.name)
            out.append(v)
    return out


def trim(x, threshold_db=-45.0):
    """Cuts leading and trailing silence (10 ms frames below threshold relative to the utterance's peak)."""
    if len(x) == 0:
        return x
    frames = len(x) // 160
    if frames == 0:
        return x
    e = np.sqrt(np.mean(x[: frames * 160].reshape(frames, 160) ** 2, axis=1) + 1e-12)
    on = np.nonzero(20 * np.log10(e / (e.max() + 1e-12)) > threshold_db)[0]
    if len(on) == 0:
        return x[:0]
    return x[on[0] * 160:(on[-1] + 1) * 160]


def synthesize(voice, text, espeak="espeak-ng", flite="flite"):
    """One utterance as float32 at 16 kHz, silence trimmed."""
    if voice.synth == "espeak":
        x, sr = md.synth_espeak({"voice": voice.voice, "rate": voice.rate, "pitch": voice.pitch, "gap": 0,
                                 "speak": text}, espeak)
    else:
        x, sr = md.synth_flite({"voice": voice.voice, "stretch": voice.stretch, "speak": text}, flite)
    if sr != SR:
        x = md.resample(x, sr, SR)
    return trim(np.asarray(x, dtype=np.float32))


def utterance_texts(seed, voice_index, count):
    r = random.Random(f"{seed}/text/{voice_index}")
    return [gensent.sentence(r) for _ in range(count)]


def _synth_job(args):
    voice, text, espeak, flite = args
    try:
        return synthesize(voice, text, espeak, flite)
    except Exception:  # noqa: BLE001  (a voice that fails to speak a sentence is skipped, not fatal)
        return None


def build_pool(voice_list, per_voice, seed, jobs=None, espeak="espeak-ng", flite="flite", texts=None):
    """{voice index: [int16 utterances]} synthesized in parallel; `texts` (a dict, optional) receives
    {voice index: [the sentence of each kept utterance]}. Threads, not processes: the synthesizers run as
    subprocesses anyway, and forking a process that holds torch's threads can deadlock."""
    from multiprocessing.pool import ThreadPool
    work = [(i, v, t) for i, v in enumerate(voice_list) for t in utterance_texts(seed, i, per_voice)]
    with ThreadPool(jobs or os.cpu_count()) as pool:
        audio = pool.map(_synth_job, [(v, t, espeak, flite) for _, v, t in work], chunksize=8)
    out = {i: [] for i in range(len(voice_list))}
    for (i, _, t), a in zip(work, audio):
        if a is not None and len(a) > SR // 4:
            out[i].append(np.clip(a * 32767.0, -32768, 32767).astype(np.int16))
            if texts is not None:
                texts.setdefault(i, []).append(t)
    return out


def compose(rng, pool, speakers, duration_s, overlap=(0.05, 0.20)):
    """A conversation of about duration_s seconds among `speakers` (pool keys): returns (float32 audio,
    [(speaker position in `speakers`, start s, end s, utterance index in the speaker's pool list)]). Speakers take
    turns of 1-3 utterances; gaps between turns are pauses or overlaps chosen so that roughly `overlap` of the
    speech time is overlapped. An utterance cut by the end of the conversation keeps its index."""
    target_overlap = rng.uniform(*overlap)
    total = int(duration_s * SR)
    audio = np.zeros(total, dtype=np.float32)
    gains = {s: 10 ** (rng.uniform(-6, 0) / 20) for s in range(len(speakers))}
    segments = []
    t = int(rng.uniform(0.0, 1.0) * SR)
    prev = None
    while t < total:
        choices = [s for s in range(len(speakers)) if s != prev] or [0]
        # Every speaker speaks early on: the first turns go to speakers not heard yet.
        unheard = [s for s in range(len(speakers)) if s not in {seg[0] for seg in segments}]
        spk = unheard[0] if unheard and rng.random() < 0.8 else choices[rng.integers(len(choices))]
        utts = pool[speakers[spk]]
        start = t
        for _ in range(int(rng.integers(1, 4))):
            k = int(rng.integers(len(utts)))
            u = utts[k].astype(np.float32) / 32768.0
            end = min(total, t + len(u))
            if end <= t:
                break
            audio[t:end] += gains[spk] * u[: end - t]
            segments.append((spk, t / SR, end / SR, k))
            t = end + int(rng.uniform(0.05, 0.4) * SR)
            if t >= total:
                break
        turn_end = segments[-1][2] * SR if segments else start
        if rng.random() < target_overlap * 3:  # overlap the next turn with this one's end
            t = int(turn_end - rng.uniform(0.3, 1.5) * SR)
            t = max(t, start + SR // 4)
        else:
            t = int(turn_end + rng.uniform(0.1, 1.2) * SR)
        prev = spk
    return audio, segments


def augment(rng, x):
    """Noise (white/pink/brown at 10-40 dB SNR), reverberation (a third of the time), overall level."""
    if rng.random() < 0.35:
        rt60 = rng.uniform(0.1, 0.5)
        n = int(rt60 * SR)
        h = rng.standard_normal(n).astype(np.float32) * np.exp(-6.9 * np.arange(n) / n).astype(np.float32)
        h[0] = 1.0
        wet = 10 ** (rng.uniform(-15, -3) / 20)
        y = md.fft_convolve(x, h)[: len(x)].astype(np.float32)
        x = x + wet * (y - x)
    if rng.random() < 0.7:
        noise = md.colored_noise(rng, len(x), ["white", "pink", "brown"][rng.integers(3)]).astype(np.float32)
        speech = md.speech_rms(x)
        snr = rng.uniform(10, 40)
        x = x + noise * (speech / (np.sqrt(np.mean(noise ** 2)) + 1e-9)) * 10 ** (-snr / 20)
    peak = np.max(np.abs(x)) + 1e-9
    return (x * (10 ** (rng.uniform(-20, -1) / 20) / peak)).astype(np.float32)


def frame_targets(segments, n_frames, num_speakers=4):
    """[n_frames, num_speakers] 0/1 in arrival order: a speaker is active in a frame when its speech covers at
    least half of it. Speakers past num_speakers are dropped (the composer never makes more)."""
    order = sorted({seg[0] for seg in segments}, key=lambda s: min(seg[1] for seg in segments if seg[0] == s))
    rank = {s: i for i, s in enumerate(order)}
    y = np.zeros((n_frames, num_speakers), dtype=np.float32)
    cover = np.zeros((n_frames, num_speakers), dtype=np.float32)
    for s, a, b, *_ in segments:
        k = rank[s]
        if k >= num_speakers:
            continue
        f0, f1 = int(a / FRAME_S), min(n_frames - 1, int(b / FRAME_S))
        for f in range(f0, f1 + 1):
            lo, hi = max(a, f * FRAME_S), min(b, (f + 1) * FRAME_S)
            if hi > lo:
                cover[f, k] += hi - lo
    y[cover >= FRAME_S / 2] = 1.0
    return y


def merged_segments(segments):
    """Per speaker, overlapping or touching segments merged; sorted by start. [(speaker, start, end)]."""
    out = []
    for s in sorted({seg[0] for seg in segments}):
        spans = sorted((seg[1], seg[2]) for seg in segments if seg[0] == s)
        cur = list(spans[0])
        for a, b in spans[1:]:
            if a <= cur[1] + 0.05:
                cur[1] = max(cur[1], b)
            else:
                out.append((s, cur[0], cur[1]))
                cur = [a, b]
        out.append((s, cur[0], cur[1]))
    return sorted(out, key=lambda x: x[1])


def overlap_fraction(segments):
    """Overlapped speech time / speech time (10 ms resolution)."""
    if not segments:
        return 0.0
    end = max(seg[2] for seg in segments)
    n = int(end * 100) + 1
    count = np.zeros(n, dtype=np.int32)
    for s in {seg[0] for seg in segments}:
        active = np.zeros(n, dtype=bool)
        for q, a, b, *_ in segments:
            if q == s:
                active[int(a * 100):int(b * 100)] = True
        count += active
    speech = np.count_nonzero(count > 0)
    return float(np.count_nonzero(count > 1)) / max(1, speech)


def transcript_of(speak):
    """The words of a sentence as spoken (gensent writes `, . ? !` after some words for prosody)."""
    return md.transcript(speak)


def without_cut_utterances(audio, segments):
    """Ends the conversation in its last silence when an utterance runs into its end, so that every utterance
    left is complete (a transcript reference needs whole sentences). Returns (audio, segments)."""
    if not any(seg[2] * SR >= len(audio) - 1 for seg in segments):
        return audio, segments
    covered, last_gap = 0.0, 0.0
    for a, b in sorted((seg[1], seg[2]) for seg in segments):
        if a > covered:
            last_gap = (covered + a) / 2
        covered = max(covered, b)
    kept = [seg for seg in segments if seg[2] <= last_gap]
    return audio[: int(last_gap * SR)], kept
