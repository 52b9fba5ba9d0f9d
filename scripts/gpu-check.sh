#!/usr/bin/env bash
# GPU readiness: on a machine with an NVIDIA GPU, run the engine's CUDA tests (pytest marker
# `gpu`), then time a short training run of the tiny model and a short LoRA run of a small
# Hugging Face causal LM on CUDA beside the same runs on CPU (scripts/gpu-check.py).
# Without a GPU it says so and exits 0; `--cpu` then still prints the CPU figures.
#   bash scripts/gpu-check.sh [--cpu] [--steps N]
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${TURNLENS_PYTHON:-python3}"
cpu_too=0
steps=5
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) cpu_too=1 ;;
    --steps) steps="$2"; shift ;;
    *) echo "usage: bash scripts/gpu-check.sh [--cpu] [--steps N]" >&2; exit 2 ;;
  esac
  shift
done

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU on this machine (nvidia-smi finds none); nothing to check on CUDA."
  if [ "$cpu_too" = 1 ]; then "$PY" scripts/gpu-check.py --devices cpu --steps "$steps"; fi
  exit 0
fi
nvidia-smi -L
if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  echo "gpu-check: a GPU is present but torch.cuda.is_available() is false (torch $("$PY" -c 'import torch; print(torch.__version__)') is a CPU build?)" >&2
  exit 1
fi

echo "== engine tests on CUDA (pytest -m gpu)"
"$PY" -m pytest test/engine -m gpu -q
echo "== throughput: tiny model and LoRA, CUDA beside CPU"
"$PY" scripts/gpu-check.py --devices cpu,cuda --steps "$steps"
