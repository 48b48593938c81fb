#!/usr/bin/env bash
# Everything the GPU machine has to prove, in one call (device time is scarce):
#   the GPU tests, the bench at the shapes, cold/warm first-call times, host overhead.
# Usage (repo root, on the device): bash scripts/device_check.sh [extra bench flags]
# Logs go to $OUT (or ./device-out) as well as stdout.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
out=${OUT:-$PWD/device-out}; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv | tee "$out/gpu.txt"
python3 -c "import cupy; print('cupy', cupy.__version__, 'cuda runtime', cupy.cuda.runtime.runtimeGetVersion())"

echo "== first call: cold (empty CuPy cache) then warm (second process, same cache)"
export CUPY_CACHE_DIR=$(mktemp -d)
python3 scripts/first_call.py sgemm_warp_tile | sed 's/^/cold: /' | tee "$out/first_call.txt"
python3 scripts/first_call.py sgemm_warp_tile | sed 's/^/warm: /' | tee -a "$out/first_call.txt"

echo "== GPU tests"
python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu.py 2>&1 | tee "$out/pytest_gpu.txt" | tail -25

echo "== host overhead"
python3 scripts/host_overhead.py | tee "$out/overhead.txt"

echo "== bench"
python3 bench.py --m 4096 --n 4096 --k 1024 4096 "$@" 2>&1 | tee "$out/bench.txt"
