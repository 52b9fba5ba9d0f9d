"""export_onnx: the policy as an ONNX graph (TorchScript exporter, opset 17), its tokenizer and a manifest."""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path

import numpy as np
import torch

from ..backends import Backend
from ..protocol_types import ExportOnnxParams, ExportOnnxResult
from ..state import EngineState

log = logging.getLogger("turnlens.engine")

ONNX_OPSET = 17


def run(state: EngineState, q: ExportOnnxParams) -> ExportOnnxResult:
    b = state.require()
    path = Path(q.path)  # ends with .onnx: the schema's pattern
    path.parent.mkdir(parents=True, exist_ok=True)
    module = b.onnx_module().to("cpu")
    # Example input: 2 rows, the second left-padded, so the traced graph keeps the masking.
    V = b.vocab_size
    T = min(8, b.context_length or 8)
    gen = torch.Generator().manual_seed(0)
    ex_ids = torch.randint(4 if b.kind == "tiny" else 0, V, (2, T), generator=gen)
    ex_mask = torch.ones(2, T, dtype=torch.long)
    ex_mask[1, :2] = 0
    try:
        with warnings.catch_warnings():
            # the TorchScript exporter is deprecated upstream but exports opset 17 directly and
            # needs no onnxscript; its tracer warnings concern shapes the tests check anyway
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            torch.onnx.export(
                module,
                (ex_ids, ex_mask),
                str(path),
                dynamo=False,
                opset_version=ONNX_OPSET,
                input_names=["input_ids", "attention_mask"],
                output_names=["logits"],
                dynamic_axes={
                    "input_ids": {0: "batch", 1: "sequence"},
                    "attention_mask": {0: "batch", 1: "sequence"},
                    "logits": {0: "batch", 1: "sequence"},
                },
            )
    finally:
        b.model.to(b.device)
    stem = path.with_suffix("")
    tok_path = Path(str(stem) + ".tokenizer.json")
    if b.kind == "tiny":
        tok_path.write_text(json.dumps(b.tokenizer.to_json(), ensure_ascii=False, indent=1))
    else:
        tok_path = Path(str(stem) + ".tokenizer")
        b.tokenizer.tok.save_pretrained(str(tok_path))
    manifest = {
        "format": "turnlens-onnx-policy",
        "version": 1,
        "onnx": path.name,
        "tokenizer": tok_path.name,
        "model_kind": b.kind,
        "opset": ONNX_OPSET,
        "inputs": {"input_ids": "int64 (batch, sequence)", "attention_mask": "int64 (batch, sequence), 1 = real token"},
        "outputs": {"logits": "float32 (batch, sequence, vocab)"},
        "dynamic_axes": ["batch", "sequence"],
        "context_length": b.context_length,
        "vocab_size": V,
        "eos_id": b.tokenizer.eos_id,
        "pad_id": b.tokenizer.pad_id,
    }
    manifest_path = Path(str(stem) + ".json")
    manifest_path.write_text(json.dumps(manifest, indent=1))
    return ExportOnnxResult(
        path=str(path),
        tokenizer_path=str(tok_path),
        manifest_path=str(manifest_path),
        opset=ONNX_OPSET,
        max_abs_diff=_verify_onnx(b, path, ex_ids, ex_mask) if q.verify else None,
    )


def _verify_onnx(b: Backend, path: Path, ids: torch.Tensor, mask: torch.Tensor) -> float | None:
    """Max |logits_onnx - logits_torch| on the example batch (None without onnxruntime)."""
    try:
        import onnxruntime as ort
    except ImportError:
        log.warning("onnxruntime not installed: export not verified")
        return None
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (onnx_logits,) = sess.run(["logits"], {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})
    with torch.no_grad():
        ref = b.onnx_module()(ids.to(b.device), mask.to(b.device)).float().cpu().numpy()
    valid = mask.numpy().astype(bool)  # pad positions' logits are unspecified
    return float(np.abs(onnx_logits - ref)[valid].max())
