#!/usr/bin/env bash
# The GPU probe: on a CUDA host with torch, transformers and nvidia-ml-py but no vLLM (a typical
# H100/H200 node image), measure the bundled Llama-3.1-8B-shaped config with random weights in
# bf16 with `fleetplan collect --backend torch`, NVML energy included, and write the run file to
# the given folder. Finishes in well under 8 minutes on an H100-class GPU.
#
#   benchmarks/gpu_probe.sh OUT_DIR [extra collect arguments]
#
# Needs from fleetplan's dependencies only pydantic (numpy, tqdm, requests, aiohttp come with the
# usual CUDA images); it is installed when missing and pip can reach an index.
set -euo pipefail
out="${1:?usage: benchmarks/gpu_probe.sh OUT_DIR [extra collect arguments]}"
shift
extra=("$@")
here="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python3}"
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"

"$python" - <<'CHECK'
import importlib.util, sys
missing = [m for m in ("torch", "transformers", "pynvml") if importlib.util.find_spec(m) is None]
if missing:
    sys.exit(f"gpu_probe: missing {', '.join(missing)} (torch, transformers, nvidia-ml-py)")
import torch
if not torch.cuda.is_available():
    sys.exit("gpu_probe: torch sees no CUDA GPU here")
print(f"gpu_probe: torch {torch.__version__} on {torch.cuda.get_device_name(0)}")
CHECK
if ! "$python" -c "import pydantic" 2>/dev/null; then
    "$python" -m pip install -q "pydantic>=2.7,<3" || { echo "gpu_probe: needs pydantic" >&2; exit 1; }
fi
mkdir -p "$out"
# Two token shapes (chat 256/256 and RAG 2048/256), batches 1..64: about 3 minutes on an H100.
for shape in "256 256" "2048 256"; do
    read -r input output <<<"$shape"
    "$python" -m fleetplan.cli collect --backend torch \
        --config "$here/sample_data/models/llama-3.1-8b-config.json" --dtype bfloat16 \
        --input-len "$input" --output-len "$output" --max-batch 64 --out "$out" "${extra[@]}"
done
ls -l "$out"
