#!/usr/bin/env python3
"""Fixtures of the C++ state-dict unpickler (src/nemo/state_dict_pickle.cc): checkpoint pickles and, beside each,
what an independent reader makes of it.

    tools/nemo/make_pickle_fixtures.py OUT_DIR

Writes OUT_DIR/NAME.pkl (the archive's data.pkl) and OUT_DIR/NAME.json (per tensor, in order: name, storage key,
storage type, storage size, offset, shape, stride) for:
  - nemo-tiny, sortformer-tiny: model_weights.ckpt of the reference .nemo files (tests/data/*/), as NeMo saved them;
  - made: torch.save of a state dict made here to cover what those lack: f16, bf16, f64 and int64 tensors, a
    tensor that is a strided view, one at an offset into a shared storage, an empty one, a 0-d one, parameters
    (nn.Parameter, pickled through _rebuild_parameter) and OrderedDict's _metadata (pickled by BUILD).
Also made.ckpt, the whole checkpoint of `made` (a ZIP archive), and made-values.json: each tensor's elements in
row-major order as numbers (torch's own reading), for the archive reader (src/nemo/stored_zip.cc, checkpoint.cc).
The reference reader is Python's own pickle.Unpickler with torch's rebuild functions and storage classes replaced
by recorders: it runs nothing but them. Offline tooling (needs torch); the fixtures are committed.
"""
import collections
import io
import json
import pickle
import sys
import tarfile
import zipfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]


class Recorder(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return lambda storage, offset, size, stride, *rest: {
                "storage_key": storage["key"], "type": storage["type"], "storage_numel": storage["numel"],
                "offset": offset, "shape": list(size), "stride": list(stride)}
        if (module, name) == ("torch._utils", "_rebuild_parameter"):
            return lambda data, *rest: data
        if module == "torch" and name.endswith("Storage"):
            return name
        raise pickle.UnpicklingError(f"unexpected global {module}.{name}")

    def persistent_load(self, pid):
        kind, type_name, key, _location, numel = pid
        assert kind == "storage"
        return {"key": key, "type": type_name, "numel": numel}


def describe(pkl: bytes):
    sd = Recorder(io.BytesIO(pkl)).load()
    return [dict(name=k, **v) for k, v in sd.items()]


def data_pkl_of_checkpoint(ckpt: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(ckpt)) as z:
        (name,) = [n for n in z.namelist() if n.endswith("/data.pkl")]
        return z.read(name)


def data_pkl_of_nemo(path: Path) -> bytes:
    with tarfile.open(path) as t:
        (member,) = [m for m in t.getmembers() if m.name.endswith("model_weights.ckpt")]
        return data_pkl_of_checkpoint(t.extractfile(member).read())


def made_state_dict() -> collections.OrderedDict:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.LayerNorm(4))
    sd = net.state_dict()  # OrderedDict with _metadata; BatchNorm's num_batches_tracked is int64, 0-d
    shared = torch.arange(24, dtype=torch.float32)
    sd["made.view_at_offset"] = shared[5:11].view(2, 3)
    sd["made.transposed"] = shared.view(4, 6).t()
    sd["made.half"] = torch.randn(2, 5).half()
    sd["made.bfloat16"] = torch.randn(3).bfloat16()
    sd["made.double"] = torch.randn(2, 2).double()
    sd["made.long"] = torch.tensor([1, -2, 3])
    sd["made.empty"] = torch.zeros(0, 7)
    sd["made.parameter"] = torch.nn.Parameter(torch.randn(2))
    return sd


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(made_state_dict(), buffer)
    pickles = {
        "nemo-tiny": data_pkl_of_nemo(ROOT / "tests/data/nemo-tiny/model.nemo"),
        "sortformer-tiny": data_pkl_of_nemo(next((ROOT / "tests/data/sortformer-tiny").glob("*.nemo"))),
        "made": data_pkl_of_checkpoint(buffer.getvalue()),
    }
    (out / "made.ckpt").write_bytes(buffer.getvalue())
    values = [{"name": k, "values": v.detach().float().flatten().tolist()} for k, v in made_state_dict().items()]
    (out / "made-values.json").write_text(json.dumps(values) + "\n")
    for name, pkl in pickles.items():
        (out / f"{name}.pkl").write_bytes(pkl)
        (out / f"{name}.json").write_text(json.dumps(describe(pkl), indent=0) + "\n")
        print(f"{name}: {len(pkl)} bytes, {len(describe(pkl))} tensors")


if __name__ == "__main__":
    main()
