#!/usr/bin/env bash
# Runs a Hugging Face parity script with a Python that has torch, transformers and safetensors
# ($BERTC_TORCH_PYTHON, else python3); exits 77 (ctest: skipped) when there is none.
# Usage: run_or_skip.sh SCRIPT ARGS...
py=${BERTC_TORCH_PYTHON:-python3}
if ! "$py" -c "import torch, transformers, safetensors" 2>/dev/null; then
  echo "SKIP: no Python with torch, transformers and safetensors (set BERTC_TORCH_PYTHON to one)"
  exit 77
fi
exec "$py" "$@"
