"""Training data: NeMo-style JSONL manifests, 16 kHz int16 mono WAVs (stdlib `wave` + numpy), SentencePiece
token ids, batches bucketed by duration, and either in-RAM audio (preload) or a DataLoader with workers."""
import functools
import json
import math
import os
import queue
import re
import threading
import wave
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

SAMPLE_RATE = 16000


def normalize_text(s):
    """Lowercase, keep letters and apostrophes, collapse whitespace (the WER normalisation too)."""
    s = s.lower().replace("\u2019", "'")
    s = re.sub(r"[^a-z' ]+", " ", s)
    return " ".join(s.split())


def read_wav(path):
    """16 kHz mono 16-bit PCM WAV -> int16 numpy array. Anything else is an error naming the file."""
    with wave.open(path, "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2 or w.getframerate() != SAMPLE_RATE:
            raise ValueError(f"{path}: need 16 kHz mono int16, got {w.getframerate()} Hz, "
                             f"{w.getnchannels()} ch, {8 * w.getsampwidth()} bit")
        data = w.readframes(w.getnframes())
    return np.frombuffer(data, dtype="<i2").copy()


def write_wav(path, samples_int16):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(np.asarray(samples_int16, dtype="<i2").tobytes())


def read_manifest(path):
    """JSONL {"audio_filepath", "text", "duration"}; relative audio paths are taken from the manifest's folder."""
    base = os.path.dirname(os.path.abspath(path))
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            e = json.loads(line)
            p = e["audio_filepath"]
            if not os.path.isabs(p):
                p = os.path.join(base, p)
            out.append({"audio": p, "text": e.get("text", ""), "duration": float(e["duration"])})
    return out


class Corpus:
    """Utterances of one or more manifests, tokenised; `audio` holds int16 arrays once preload() ran. extend()
    adds the utterances of more manifests later (data that grows while a model trains)."""

    def __init__(self, manifests, sp, max_duration=None, min_duration=0.0, max_utts=None):
        self.sp, self.max_duration, self.min_duration = sp, max_duration, min_duration
        self.entries, self.texts, self.ids, self.manifests = [], [], [], []
        self.durations = np.zeros(0, dtype=np.float64)
        self.dropped = 0
        self.audio = None
        self._add(manifests, max_utts)

    def _add(self, manifests, max_utts=None):
        entries = []
        for m in manifests:
            entries.extend(read_manifest(m))
            self.manifests.append(os.path.abspath(m))
        kept = []
        for e in entries:
            if (self.max_duration and e["duration"] > self.max_duration) or e["duration"] < self.min_duration:
                self.dropped += 1
                continue
            kept.append(e)
        if max_utts:
            kept = kept[:max_utts]
        texts = [normalize_text(e["text"]) for e in kept]
        self.entries += kept
        self.texts += texts
        self.ids += [self.sp.encode(t, out_type=int) if t else [] for t in texts]
        self.durations = np.concatenate([self.durations, np.array([e["duration"] for e in kept], dtype=np.float64)])
        return kept

    def extend(self, manifests, threads=16):
        """Adds the utterances of more manifests, their audio read at once if this corpus is preloaded.
        Returns (utterances added, bytes read)."""
        kept = self._add(manifests)
        if self.audio is None:
            return len(kept), 0
        with ThreadPoolExecutor(max_workers=max(1, threads)) as ex:
            audio = list(ex.map(read_wav, [e["audio"] for e in kept], chunksize=64))
        self.audio += audio
        return len(kept), sum(a.nbytes for a in audio)

    def __len__(self):
        return len(self.entries)

    def hours(self):
        return float(self.durations.sum()) / 3600.0

    def preload(self, threads=16):
        with ThreadPoolExecutor(max_workers=max(1, threads)) as ex:
            self.audio = list(ex.map(read_wav, [e["audio"] for e in self.entries], chunksize=64))
        return sum(a.nbytes for a in self.audio)

    def get_audio(self, i):
        return self.audio[i] if self.audio is not None else read_wav(self.entries[i]["audio"])


def round_up(x, multiple):
    """x rounded up to a multiple of `multiple` (multiple <= 0: x itself)."""
    return x if multiple <= 0 else math.ceil(x / multiple - 1e-9) * multiple


def make_batches(durations, batch_seconds, max_batch, seed, epoch, jitter=0.15, quantum=0.0):
    """Duration-bucketed batches for one epoch: utterances sorted by (jittered) duration, cut so that
    batch size x longest duration <= batch_seconds (padded audio seconds) and size <= max_batch, batch order
    shuffled. Deterministic in (seed, epoch). quantum > 0: durations count rounded up to a multiple of quantum
    seconds, as collate pads them, so that a batch's size follows from its padded length and the same shapes
    come back step after step."""
    rng = np.random.RandomState((seed * 1000003 + epoch) % (2 ** 32))
    n = len(durations)
    keys = durations * (1.0 + rng.uniform(-jitter, jitter, n))
    order = np.argsort(keys, kind="stable")
    batches, cur, longest = [], [], 0.0
    for i in order:
        d = round_up(float(durations[i]), quantum)
        new_longest = max(longest, d)
        if cur and ((len(cur) + 1) * new_longest > batch_seconds or len(cur) >= max_batch):
            batches.append(cur)
            cur, new_longest = [], d
        cur.append(int(i))
        longest = new_longest
    if cur:
        batches.append(cur)
    perm = rng.permutation(len(batches))
    return [batches[k] for k in perm]


def collate(items, pad_id=0, audio_multiple=0, label_multiple=0):
    """items: list of (int16 audio, token ids) -> dict of CPU tensors (audio stays int16). The audio is padded
    to a multiple of audio_multiple samples and the labels to one of label_multiple tokens (0: to the longest):
    few distinct shapes let cuDNN and the allocator reuse what they worked out for a shape before (the padding
    is masked by the lengths, as the padding to the longest is)."""
    B = len(items)
    alen = torch.tensor([len(a) for a, _ in items], dtype=torch.long)
    ulen = torch.tensor([len(y) for _, y in items], dtype=torch.long)
    audio = np.zeros((B, round_up(int(alen.max()), audio_multiple)), dtype=np.int16)
    width = int(ulen.max()) if label_multiple <= 0 else round_up(max(1, int(ulen.max())), label_multiple)
    labels = np.full((B, max(1, width)), pad_id, dtype=np.int64)
    for b, (a, y) in enumerate(items):
        audio[b, :len(a)] = a
        labels[b, :len(y)] = y
    return {"audio": torch.from_numpy(audio), "audio_len": alen,
            "labels": torch.from_numpy(labels)[:, :width], "label_len": ulen}


class _UttDataset(torch.utils.data.Dataset):
    def __init__(self, corpus):
        self.corpus = corpus

    def __len__(self):
        return len(self.corpus)

    def __getitem__(self, i):
        return self.corpus.get_audio(i), self.corpus.ids[i]


def iterate_batches(corpus, batches, workers=0, pin=False, prefetch=2, audio_multiple=0, label_multiple=0):
    """Yields (batch position, collated batch). In-RAM audio or workers == 0: collated (and pinned) by a thread
    `prefetch` batches ahead of the consumer, so that the padding copy overlaps the training step instead of
    following it (the step ends with a synchronising read of the loss); otherwise a DataLoader whose workers read
    the WAVs. audio_multiple, label_multiple: collate's."""
    pad = functools.partial(collate, audio_multiple=audio_multiple, label_multiple=label_multiple)
    if corpus.audio is not None or workers <= 0:
        def collated():
            for k, b in enumerate(batches):
                out = pad([(corpus.get_audio(i), corpus.ids[i]) for i in b])
                if pin:
                    out = {k2: v.pin_memory() for k2, v in out.items()}
                yield k, out
        yield from (_ahead(collated(), prefetch) if prefetch > 0 else collated())
        return
    dl = torch.utils.data.DataLoader(_UttDataset(corpus), batch_sampler=batches, collate_fn=pad,
                                     num_workers=workers, pin_memory=pin, prefetch_factor=4)
    for k, out in enumerate(dl):
        yield k, out


def _ahead(items, depth):
    """The items of a generator, produced by a thread at most `depth` ahead; the thread stops when the consumer
    does (a generator closed early), and an exception in it is raised in the consumer."""
    q, stop, end = queue.Queue(depth), threading.Event(), object()

    def put(x):
        while not stop.is_set():
            try:
                q.put(x, timeout=0.1)
                return True
            except queue.Full:
                pass
        return False

    def run():
        try:
            for x in items:
                if not put(x):
                    return
            put(end)
        except BaseException as e:  # noqa: B902 -- handed to the consumer, which raises it
            put(e)

    thread = threading.Thread(target=run, name="batches-ahead", daemon=True)
    thread.start()
    try:
        while True:
            x = q.get()
            if x is end:
                return
            if isinstance(x, BaseException):
                raise x
            yield x
    finally:
        stop.set()
        thread.join()
