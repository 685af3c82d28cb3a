"""Training checkpoints: one torch.save'd dict of tensors and plain Python values (no numpy objects, so a file
written under numpy 2 / torch 2.x loads under numpy 1 / torch 1.13), optionally split into parts of at most
--split-mb megabytes (NAME.000, NAME.001, ...; reassembled on load), optimizer moments optionally compressed.

Optimizer state modes (--optim-state):
  fp32  exact (resume reproduces an uninterrupted run bit for bit); 8 bytes per parameter on top of the weights
  bf16  exp_avg and exp_avg_sq in bfloat16; 4 bytes per parameter
  int8  exp_avg: int8 with one float32 absmax scale per block of 256; exp_avg_sq: uint8 codes of log(v) spread
        linearly between the block's min and max log (0 = exactly 0); about 2 bytes per parameter; relative error
        of sqrt(v) about 1-3 %, which AdamW forgets within a few dozen steps
  none  no optimizer state; resume restarts the moments (with a short re-warmup, see train.py)
The weights are always float32.
"""
import glob
import io
import os

import torch

BLOCK = 256
OPTIM_MODES = ("fp32", "bf16", "int8", "none")


def _blocks(x):
    flat = x.detach().float().flatten()
    n = flat.numel()
    nb = (n + BLOCK - 1) // BLOCK
    pad = nb * BLOCK - n
    if pad:
        flat = torch.cat([flat, flat.new_zeros(pad)])
    return flat.view(nb, BLOCK), n


def quant_signed(x):
    b, n = _blocks(x)
    scale = b.abs().amax(dim=1)
    q = torch.round(b / scale.clamp(min=1e-30).unsqueeze(1) * 127.0).clamp(-127, 127).to(torch.int8)
    return {"q": "i8", "codes": q.flatten()[:n].clone(), "scale": scale, "shape": list(x.shape)}


def dequant_signed(d):
    n = 1
    for s in d["shape"]:
        n *= s
    b, _ = _blocks(torch.cat([d["codes"].float(), torch.zeros((-n) % BLOCK)]))
    x = (b / 127.0) * d["scale"].unsqueeze(1)
    return x.flatten()[:n].view(d["shape"])


def quant_logpos(x):
    b, n = _blocks(x)
    pos = b > 0
    lg = torch.log(torch.where(pos, b, torch.ones_like(b)))
    lo = torch.where(pos, lg, torch.full_like(lg, float("inf"))).amin(dim=1)
    hi = torch.where(pos, lg, torch.full_like(lg, float("-inf"))).amax(dim=1)
    empty = ~torch.isfinite(lo)
    lo = torch.where(empty, torch.zeros_like(lo), lo)
    hi = torch.where(empty, torch.zeros_like(hi), hi)
    rng = (hi - lo).clamp(min=1e-12)
    q = 1 + torch.round((lg - lo.unsqueeze(1)) / rng.unsqueeze(1) * 254.0).clamp(0, 254)
    q = torch.where(pos, q, torch.zeros_like(q)).to(torch.uint8)
    return {"q": "logu8", "codes": q.flatten()[:n].clone(), "lo": lo, "hi": hi, "shape": list(x.shape)}


def dequant_logpos(d):
    n = 1
    for s in d["shape"]:
        n *= s
    b, _ = _blocks(torch.cat([d["codes"].float(), torch.zeros((-n) % BLOCK)]))
    rng = (d["hi"] - d["lo"]).clamp(min=1e-12)
    v = torch.exp(d["lo"].unsqueeze(1) + (b - 1.0) / 254.0 * rng.unsqueeze(1))
    v = torch.where(b > 0, v, torch.zeros_like(v))
    return v.flatten()[:n].view(d["shape"])


def compress_optimizer(sd, mode):
    """torch optimizer state_dict -> the same structure with the moment tensors compressed."""
    if mode == "none":
        return None
    if mode not in OPTIM_MODES:
        raise ValueError(f"optimizer state mode must be one of {OPTIM_MODES}")
    state = {}
    for pid, st in sd["state"].items():
        out = {}
        for k, v in st.items():
            if torch.is_tensor(v) and v.is_floating_point() and v.numel() > 1:
                v = v.detach().cpu()
                if mode == "fp32":
                    out[k] = v.float().clone()
                elif mode == "bf16":
                    out[k] = {"q": "bf16", "t": v.to(torch.bfloat16)}
                elif "sq" in k:
                    out[k] = quant_logpos(v)
                else:
                    out[k] = quant_signed(v)
            else:
                out[k] = v.detach().cpu().clone() if torch.is_tensor(v) else v
        state[pid] = out
    return {"mode": mode, "state": state, "param_groups": sd["param_groups"]}


def decompress_optimizer(c, device=None):
    def dec(v):
        if isinstance(v, dict) and "q" in v:
            if v["q"] == "bf16":
                v = v["t"].float()
            elif v["q"] == "i8":
                v = dequant_signed(v)
            else:
                v = dequant_logpos(v)
        return v.to(device) if (device is not None and torch.is_tensor(v) and v.dim() > 0) else v

    return {"state": {pid: {k: dec(v) for k, v in st.items()} for pid, st in c["state"].items()},
            "param_groups": c["param_groups"]}


def _parts(path):
    return sorted(glob.glob(glob.escape(path) + ".[0-9][0-9][0-9]"))


def save_checkpoint(obj, path, split_mb=None):
    """torch.save obj to path, or to path.000, path.001, ... of at most split_mb * 10^6 bytes each. Writes go to
    temporary names first and are renamed, and stale parts or a stale whole file are removed afterwards.
    Returns the list of files written."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    data = buf.getvalue()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    written = []
    if split_mb:
        size = int(split_mb * 1_000_000)
        chunks = [data[i:i + size] for i in range(0, len(data), size)] or [b""]
        if len(chunks) > 999:
            raise ValueError("too many checkpoint parts")
        for k, ch in enumerate(chunks):
            name = f"{path}.{k:03d}"
            with open(name + ".tmp", "wb") as f:
                f.write(ch)
            written.append(name)
        for name in written:
            os.replace(name + ".tmp", name)
        for stale in _parts(path)[len(chunks):]:
            os.remove(stale)
        if os.path.exists(path):
            os.remove(path)
    else:
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
        written.append(path)
        for stale in _parts(path):
            os.remove(stale)
    return written


def resolve(path):
    """A checkpoint given as a file, as NAME whose parts NAME.000... exist, or as a folder holding last.pt
    (whole or in parts). Returns the NAME or None."""
    if os.path.isdir(path):
        path = os.path.join(path, "last.pt")
    if os.path.isfile(path) or _parts(path):
        return path
    return None


def load_checkpoint(path):
    name = resolve(path)
    if name is None:
        raise FileNotFoundError(f"no checkpoint at {path} (neither a file, NAME.000 parts nor DIR/last.pt)")
    if os.path.isfile(name):
        with open(name, "rb") as f:
            data = f.read()
    else:
        parts = _parts(name)
        want = [f"{name}.{k:03d}" for k in range(len(parts))]
        if parts != want:
            raise ValueError(f"checkpoint parts of {name} are not contiguous from .000: {parts}")
        data = b"".join(open(p, "rb").read() for p in parts)
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)
    except TypeError:  # torch without weights_only
        return torch.load(io.BytesIO(data), map_location="cpu")


def bytes_to_tensor(b):
    if not b:
        return torch.zeros(0, dtype=torch.uint8)
    return torch.frombuffer(bytearray(b), dtype=torch.uint8).clone()


def tensor_to_bytes(t):
    return bytes(t.numpy().tobytes())
