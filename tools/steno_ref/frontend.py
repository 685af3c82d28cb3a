"""NeMo log-mel front end (AudioToMelSpectrogramPreprocessor -> FilterbankFeatures), inference path.

Two variants (docs/engine.md, "Front end"):
  "2.5": valid length L//hop, zero centre padding, pre-emphasised samples past L zeroed.
  "2.4": valid length L//hop + 1, *reflect* centre padding of the whole (zero-padded) batch row,
         no zeroing of pre-emphasis past L. So in a batch, a short clip's right-hand reflect pad
         reflects the zero tail of the padded batch tensor (plus the one -0.97*x[L-1] sample that
         pre-emphasis leaks into index L), not its own audio: batch != single by design.
The op order copies NeMo so the numbers match bit-for-bit where torch allows it.
"""
import math

import numpy as np
import torch
import torch.nn as nn

LOG_GUARD = 2.0 ** -24
NORM_EPS = 1e-5  # added to the std, not the variance


def hz_to_mel_slaney(f):
    f = np.asarray(f, dtype=np.float64)
    f_sp = 200.0 / 3
    mels = f / f_sp
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    return np.where(f >= min_log_hz, min_log_mel + np.log(np.maximum(f, 1e-10) / min_log_hz) / logstep, mels)


def mel_to_hz_slaney(m):
    m = np.asarray(m, dtype=np.float64)
    f_sp = 200.0 / 3
    freqs = f_sp * m
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), freqs)


def slaney_mel_filterbank(sr=16000, n_fft=512, n_mels=128, fmin=0.0, fmax=None):
    """librosa.filters.mel(sr, n_fft, n_mels, fmin, fmax, htk=False, norm='slaney'), float32 [n_mels, n_fft//2+1]."""
    fmax = sr / 2.0 if fmax is None else fmax
    fftfreqs = np.linspace(0, sr / 2.0, 1 + n_fft // 2)
    mel_f = mel_to_hz_slaney(np.linspace(hz_to_mel_slaney(fmin), hz_to_mel_slaney(fmax), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fftfreqs[None, :]
    # librosa keeps weights in float32: triangles are rounded once, then again after Slaney scaling
    weights = np.zeros((n_mels, 1 + n_fft // 2), dtype=np.float32)
    for i in range(n_mels):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels]))[:, None]
    return weights


class FilterbankFeatures(nn.Module):
    """Holds the persistent `fb` [1, n_mels, n_fft/2+1] and `window` [win_length] buffers (NeMo names)."""

    def __init__(self, pcfg):
        super().__init__()
        sr = int(pcfg.get("sample_rate", 16000))
        self.win_length = int(pcfg.get("window_size", 0.025) * sr)
        self.hop_length = int(pcfg.get("window_stride", 0.01) * sr)
        self.n_fft = int(pcfg.get("n_fft", 512))
        self.n_mels = int(pcfg.get("features", 128))
        self.preemph = pcfg.get("preemph", 0.97)
        self.mag_power = float(pcfg.get("mag_power", 2.0))
        self.log_guard = float(pcfg.get("log_zero_guard_value", LOG_GUARD))
        self.normalize = pcfg.get("normalize", "per_feature")
        self.version = str(pcfg.get("frontend_version", "2.5"))
        if self.version not in ("2.4", "2.5"):
            raise ValueError(f"frontend_version must be '2.4' or '2.5', got {self.version!r}")
        if pcfg.get("window", "hann") != "hann":
            raise ValueError("only the hann window is supported")
        if self.normalize not in ("per_feature", None, "none"):
            raise ValueError(f"normalize {self.normalize!r} not supported")
        highfreq = pcfg.get("highfreq") or sr / 2.0
        fb = slaney_mel_filterbank(sr, self.n_fft, self.n_mels, float(pcfg.get("lowfreq", 0.0) or 0.0), highfreq)
        self.register_buffer("window", torch.hann_window(self.win_length, periodic=False))
        self.register_buffer("fb", torch.from_numpy(fb).unsqueeze(0))

    def seq_len(self, lengths):
        # get_seq_len: (L + 2*(n_fft//2) - n_fft) // hop (+1 in <= 2.4)
        n = torch.div(lengths + 2 * (self.n_fft // 2) - self.n_fft, self.hop_length, rounding_mode="floor")
        return n + 1 if self.version == "2.4" else n

    def forward(self, x, lengths, fb=None):
        """x: [B, L] float32 (zero padded), lengths: [B] int64 -> (features [B, n_mels, F], valid lengths [B]).
        fb: a filterbank per utterance [B, n_mels, n_fft/2+1] in place of the model's (training's VTLP only)."""
        x = x.float()
        n_valid = self.seq_len(lengths)
        if self.preemph is not None:
            x = torch.cat((x[:, :1], x[:, 1:] - self.preemph * x[:, :-1]), dim=1)
            if self.version == "2.5":
                tmask = torch.arange(x.shape[1], device=x.device).unsqueeze(0) < lengths.unsqueeze(1)
                x = x.masked_fill(~tmask, 0.0)
        spec = torch.stft(x, n_fft=self.n_fft, hop_length=self.hop_length, win_length=self.win_length,
                          center=True, window=self.window.float(), return_complex=True,
                          pad_mode="constant" if self.version == "2.5" else "reflect")
        spec = torch.view_as_real(spec)
        mag = torch.sqrt(spec.pow(2).sum(-1))  # guard is 0 at inference
        if self.mag_power != 1.0:
            mag = mag.pow(self.mag_power)
        mel = torch.matmul((self.fb if fb is None else fb).to(mag.dtype), mag)
        mel = torch.log(mel + self.log_guard)
        if self.normalize == "per_feature":
            mel = normalize_per_feature(mel, n_valid)
        t = torch.arange(mel.shape[-1], device=mel.device)
        pad = t.unsqueeze(0) >= n_valid.unsqueeze(1)
        mel = mel.masked_fill(pad.unsqueeze(1), 0.0)
        return mel, n_valid


def normalize_per_feature(x, n_valid):
    """NeMo normalize_batch('per_feature'): stats over the first n_valid frames, unbiased std, std += 1e-5."""
    valid = (torch.arange(x.shape[2], device=x.device).unsqueeze(0) < n_valid.unsqueeze(1)).unsqueeze(1)
    denom = valid.sum(dim=2)  # [B,1]
    mean = torch.where(valid, x, 0.0).sum(dim=2) / denom
    std = torch.sqrt(torch.sum(torch.where(valid, x - mean.unsqueeze(2), 0.0) ** 2, dim=2) / (denom - 1.0))
    std = std.masked_fill(std.isnan(), 0.0)
    std = std + NORM_EPS
    return (x - mean.unsqueeze(2)) / std.unsqueeze(2)
