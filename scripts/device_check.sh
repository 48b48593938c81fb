#!/usr/bin/env bash
# Everything the GPU machine has to prove, in one call (device time is scarce):
#   the GPU tests, compute-sanitizer memcheck + racecheck over every variant, cold/warm first-call
#   times, host overhead, and the bench (JSON under results/ and $OUT).
# Usage (repo root, on the device): bash scripts/device_check.sh [quick]
#   quick: tests + sanitizers + the default bench only (no sweeps, no repeat run).
# Logs, result JSON and plots are collected in one archive, $OUT/device_logs.tgz (or
# ./device-out/device_logs.tgz), as well as summarised on stdout.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
dest=${OUT:-$PWD/device-out}; mkdir -p "$dest" results
out=$(mktemp -d)
trap 'tar czf "$dest/device_logs.tgz" -C "$out" . ' EXIT
mode=${1:-full}
status=0
step() { echo; echo "== $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv | tee "$out/gpu.txt"
python3 -c "import cupy; print('cupy', cupy.__version__, 'cuda runtime', cupy.cuda.runtime.runtimeGetVersion())"

step "first call: cold (empty CuPy cache) then warm (second process, same cache)"
export CUPY_CACHE_DIR=$(mktemp -d)
python3 scripts/first_call.py sgemm_warp_tile | sed 's/^/cold: /' | tee "$out/first_call.txt"
python3 scripts/first_call.py sgemm_warp_tile | sed 's/^/warm: /' | tee -a "$out/first_call.txt"

step "GPU tests"
python3 -m pytest -q -m gpu -p no:cacheprovider tests/ 2>&1 | tee "$out/pytest_gpu.txt" | tail -15
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

step "compute-sanitizer memcheck + racecheck, every variant"
for tool in memcheck racecheck; do
  compute-sanitizer --tool $tool --error-exitcode 9 python3 scripts/sanitize_all.py > "$out/sanitize_$tool.txt" 2>&1
  rc=$?
  echo "$tool: exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitize_$tool.txt" | tail -1); $(grep sanitize_all: "$out/sanitize_$tool.txt")"
  [ $rc -eq 0 ] || status=1
done

step "host overhead"
python3 scripts/host_overhead.py | tee "$out/overhead.txt"

step "bench"
python3 bench.py --m 4096 --n 4096 --k 1024 4096 --json results/f32.json 2>&1 | tee "$out/bench_f32.txt"
python3 bench.py --dtype f16 --m 4096 --n 4096 --k 1024 4096 --json results/f16.json 2>&1 | tee "$out/bench_f16.txt"
python3 bench.py --dtype tf32 --m 4096 --n 4096 --k 4096 --json results/tf32.json 2>&1 | tee "$out/bench_tf32.txt"
cp results/*.json "$out/" 2>/dev/null
[ "$mode" = quick ] && exit $status

step "sweeps"
python3 bench.py --sweep seed-hgemm --dtype f16 --json "$out/sweep_hgemm.json" --plot "$out/sweep_hgemm.png" > "$out/sweep_hgemm.txt" 2>&1; tail -3 "$out/sweep_hgemm.txt"
python3 bench.py --sweep seed-sgemm --max-size 8192 --json "$out/sweep_sgemm.json" --plot "$out/sweep_sgemm.png" > "$out/sweep_sgemm.txt" 2>&1; tail -3 "$out/sweep_sgemm.txt"

step "repeat of the f32 bench (agreement within spread)"
python3 bench.py --m 4096 --n 4096 --k 1024 4096 2>&1 | tee "$out/bench_f32_repeat.txt" | tail -3
exit $status
