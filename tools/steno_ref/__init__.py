"""steno_ref: PyTorch reference of NeMo FastConformer-TDT for steno's golden tests (see tools/README.md).

Names are resolved lazily so that torch-free users (safetensors_io, the CI golden converter) do not
pay for importing torch.
"""
_EXPORTS = {
    "FastConformerTDT": "model", "load_model_dir": "modeldir", "save_model_dir": "modeldir",
    "load_weights": "modeldir", "greedy_tdt_batch": "decoding", "decision_margins": "decoding",
    "run_batch": "run", "int16_to_float": "run",
}


def __getattr__(name):
    if name in _EXPORTS:
        import importlib
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(name)
