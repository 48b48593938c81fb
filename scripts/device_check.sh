#!/usr/bin/env bash
# Everything the GPU machine has to prove, in as few calls as the device allows:
#   tests     cold/warm first-call times, the GPU tests, host overhead
#   sanitize  compute-sanitizer memcheck and racecheck over every registered variant (or SANITIZE=GLOB)
#   bench     the default benches (f32, f16, bf16, tf32, or BENCH_DTYPES), JSON written to results/
#   big       the *fast* tensor-core variants at 8192^3 and 4095x4104x1016 (f16, bf16, tf32)
#   sweeps    seed-hgemm (f16) and seed-sgemm (f32, capped at 8192) with JSON and plots
#   repeat    the f32 bench again (agreement within the reported spread)
#   peak      TF32 tensor-core instruction ceilings beside cupy.matmul TF32 (scripts/tc_peak.py)
#   matmul    cugemm.matmul: its GPU tests (240+ random shapes), then `bench --variants matmul` over
#             the matmul sets (MATMUL_SETS, default matmul-square llm odd skinny) in f16 and bf16
#             and matmul-square in f32, JSON to results/matmul_<dtype>_<set>.json
#   mma       the GPU tests of the mma.sync family (MMA_TESTS, a pytest -k expression), then
#             its top rungs (MMA_VARIANTS) beside cupy.matmul at 4096x4096x1024, 4096^3 and 8192^3
#             in f16 and bf16, JSON to results/mma_<dtype>.json
#   serving   the torch/serving GPU tests (test_gpu_torch, test_gpu_serve, test_gpu_matmul,
#             those present), scripts/serving_bench.py (host time per call vs torch.matmul, kernel-time
#             ratios over the judge shapes) and scripts/torch_model_bench.py if present; JSON to
#             results/serving.json and results/torch_model.json. Not in the default list: name it
#   ab        changed kernels timed against their old source in one process, alternating
#             (scripts/ab_kernels.py; AB_OLD: an earlier kernels/ tree, AB_VARIANTS: a glob). Name it
#   tune      python -m cugemm tune over the same sets, written as the shipped table
#             ($OUT/h100.json: copy it to cugemm/tables/ to ship it); TUNE_SPECS="dtype:sets[:layouts] ..."
#             for others: the shipped table's x @ W.T buckets come from
#             "f16:llm,llm-mid,gpt,small-llm,llm-wide,ragged-rect:row,col" (and bf16), its row-major ones
#             from "f16:matmul-square,llm,odd,skinny,small-llm,small-k,tall,ragged,llm-wide" (and bf16),
#             each within the 550 s a call allows only when split into several calls
#   batched   batched products in one launch: tests/test_gpu_batched.py, then scripts/batched_bench.py
#             (attention-shaped batches against torch.bmm, broadcast ones against torch.matmul), JSON
#             to results/judge/batched.json (BATCHED_ARGS: its options, e.g. "--dtypes f16,bf16,tf32"). Name
#             it (with `SANITIZE='*_batched*' ... sanitize batched` for the sanitizers over the batched forms)
#   grouped   grouped products in one launch: tests/test_gpu_grouped.py, then scripts/grouped_bench.py
#             (MoE shapes against torch._grouped_mm; GROUPED_ARGS: its options), JSON to
#             results/judge/grouped.json. Name it (with `SANITIZE='*_grouped*' ... sanitize grouped`)
#   fp8       FP8 products: tests/test_gpu_fp8.py, then scripts/fp8_bench.py (cugemm.scaled_matmul against
#             torch._scaled_mm in each scaling mode, accuracy, odd shapes; FP8_ARGS: its options), JSON to
#             results/judge/fp8.json. Name it (with `SANITIZE='fp8_wgmma*' ... sanitize` for the sanitizers)
#   epilogue  fused epilogues: scripts/warm_epilogue.py, tests/test_gpu_epilogue.py, scripts/epilogue_bench.py
#             (cugemm.linear / gemm against F.linear, F.gelu(F.linear), torch._addmm_activation, addmm; JSON
#             to results/judge/epilogue.json), scripts/mlp_train.py, and memcheck + racecheck over the
#             fused tests (every composition on the two test bases, linear and gemm). Name it
#   eval      cugemm.matmul on the held-out evaluation set and its named lines (scripts/eval_set.py,
#             f16 and bf16, flushed and back to back), JSON to results/eval/eval.json. Name it
#   power     back to back under the GPU's power cap (scripts/power_probe.py: clock, board power, clock-limit
#             reasons, energy a call): cugemm.matmul and cugemm.linear (bias, GELU + bias) beside torch's at
#             POWER_SHAPES (default 12288x4096x1024,8192x14336x4096,16384x3072x768), bf16. Name it
# Usage (repo root, on the device): bash scripts/device_check.sh [phase ...]
#   (default: tests sanitize bench big sweeps repeat peak matmul; mma, tune, serving, ab, batched, grouped, fp8,
#   epilogue, eval and power only when named,
#   e.g. `bash scripts/device_check.sh serving`)
# Logs, result JSON and plots are collected in one archive, $OUT/device_logs.tgz (or
# ./device-out/device_logs.tgz), and summarised on stdout. Exit status 1 if a test, a sanitizer, a
# bench (a wrong result included) or a sweep failed.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
dest=${OUT:-$PWD/device-out}; mkdir -p "$dest" results
out=$(mktemp -d)
trap 'tar czf "$dest/device_logs.tgz" -C "$out" .' EXIT
phases=${*:-tests sanitize bench big sweeps repeat peak matmul}
status=0
step() { echo; echo "== $*"; }
has() { [[ " $phases " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv | tee "$out/gpu.txt"
python3 -c "import cupy; print('cupy', cupy.__version__, 'cuda runtime', cupy.cuda.runtime.runtimeGetVersion())"

if has tests; then
  step "first call: cold (empty CuPy cache) then warm (second process, same cache)"
  cache=$(mktemp -d)
  CUPY_CACHE_DIR=$cache python3 scripts/first_call.py sgemm_warp_tile | sed 's/^/cold: /' | tee "$out/first_call.txt"
  CUPY_CACHE_DIR=$cache python3 scripts/first_call.py sgemm_warp_tile | sed 's/^/warm: /' | tee -a "$out/first_call.txt"
  step "GPU tests"
  python3 -m pytest -q -m gpu -p no:cacheprovider tests/ > "$out/pytest_gpu.txt" 2>&1
  [ $? -eq 0 ] || status=1
  grep -E "FAILED|ERROR" "$out/pytest_gpu.txt" | head -20; tail -1 "$out/pytest_gpu.txt"
  step "host overhead"
  for v in sgemm_warp_tile hgemm_mma_fast hgemm_wgmma_fast; do
    timeout 120 python3 scripts/host_overhead.py --variant $v | tee -a "$out/overhead.txt"
  done
fi

if has sanitize; then
  # SANITIZE=GLOB limits the phase to some variants (default: every variant). Host API errors are
  # not reported: cuda.bindings probes driver entry points with cuGetProcAddress on its first
  # cuTensorMapEncodeTiled (the TMA kernels), which memcheck counts; device-side errors still are.
  step "compute-sanitizer memcheck + racecheck, ${SANITIZE:-every variant}"
  for tool in memcheck racecheck; do
    flag=""; [ $tool = racecheck ] && flag=--quick
    timeout 400 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 \
      python3 scripts/sanitize_all.py ${SANITIZE:+"$SANITIZE"} $flag > "$out/sanitize_$tool.txt" 2>&1
    rc=$?
    echo "$tool: exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitize_$tool.txt" | tail -1);" \
         "$(grep sanitize_all: "$out/sanitize_$tool.txt")"
    [ $rc -eq 0 ] || { status=1; grep -m5 -E "Invalid|Race|Hazard|WRONG|rror" "$out/sanitize_$tool.txt"; }
  done
fi

if has bench; then
  step "bench"
  for dt in ${BENCH_DTYPES:-f32 f16 bf16 tf32}; do  # a failing bench (a wrong result too) fails the check
    python3 bench.py --dtype $dt --m 4096 --n 4096 --k 1024 4096 --json results/$dt.json 2>&1 | tee "$out/bench_$dt.txt"
    rc=${PIPESTATUS[0]}; [ "$rc" -eq 0 ] || { echo "bench $dt: exit $rc"; status=1; }
  done
  cp results/*.json "$out/"
fi

if has big; then
  step "tensor-core aliases (*fast*) at 8192^3 and an odd aligned shape"
  for dt in ${BENCH_DTYPES:-f16 bf16 tf32}; do
    python3 bench.py --dtype $dt --variants '*fast*' --shapes 8192x8192x8192,4095x4104x1016 \
      --json results/${dt}_big.json 2>&1 | tee "$out/bench_${dt}_big.txt"
    rc=${PIPESTATUS[0]}; [ "$rc" -eq 0 ] || { echo "bench $dt big: exit $rc"; status=1; }
  done
  cp results/*_big.json "$out/"
fi

if has sweeps; then
  step "sweeps"
  python3 bench.py --sweep seed-hgemm --dtype f16 --json "$out/sweep_hgemm.json" --plot "$out/sweep_hgemm.png" \
    > "$out/sweep_hgemm.txt" 2>&1; rc=$?; [ $rc -eq 0 ] || status=1
  echo "seed-hgemm exit $rc: $(grep -c '^M=' "$out/sweep_hgemm.txt") shapes"
  python3 bench.py --sweep seed-sgemm --max-size 8192 --json "$out/sweep_sgemm.json" --plot "$out/sweep_sgemm.png" \
    > "$out/sweep_sgemm.txt" 2>&1; rc=$?; [ $rc -eq 0 ] || status=1
  echo "seed-sgemm exit $rc: $(grep -c '^M=' "$out/sweep_sgemm.txt") shapes"
fi

if has repeat; then
  step "repeat of the f32 bench (agreement within spread)"
  first=results/f32.json
  if [ ! -f "$first" ]; then  # no bench phase in this call: make the first run here
    first=$out/f32_run1.json
    python3 bench.py --m 4096 --n 4096 --k 1024 4096 --json "$first" > "$out/bench_f32_run1.txt" 2>&1
  fi
  python3 bench.py --m 4096 --n 4096 --k 1024 4096 --json "$out/f32_repeat.json" > "$out/bench_f32_repeat.txt" 2>&1
  python3 - "$first" "$out/f32_repeat.json" <<'PY'
import json, sys
a = {(r["variant"], r["K"]): r for r in json.load(open(sys.argv[1]))["rows"]}
b = {(r["variant"], r["K"]): r for r in json.load(open(sys.argv[2]))["rows"]}
agree = total = 0
for key, r in b.items():
    s = a.get(key)
    if not s or not r["ms"] or not s["ms"]:
        continue
    total += 1
    # the two medians agree when each lies within the other's p20-p80 band, widened by 1%
    ok = s["p20_ms"] * 0.99 <= r["ms"] <= s["p80_ms"] * 1.01 or r["p20_ms"] * 0.99 <= s["ms"] <= r["p80_ms"] * 1.01
    agree += ok
    if not ok:
        print(f"  differ: {key}: {s['ms']:.4f} [{s['p20_ms']:.4f}, {s['p80_ms']:.4f}] vs {r['ms']:.4f} [{r['p20_ms']:.4f}, {r['p80_ms']:.4f}]")
print(f"repeat: {agree}/{total} rows agree within the reported spread")
PY
fi
if has ab; then
  step "changed kernels against their old source (alternating, one process)"
  python3 scripts/ab_kernels.py --old "${AB_OLD:-build/old/kernels}" "${AB_VARIANTS:-*anyc*}" 2>&1 | tee "$out/ab.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

if has tune; then
  step "tune: matmul's candidates on this GPU -> shipped table"
  table=$dest/$(python3 -c "import cugemm.tuning as t, cupy; print(t.shipped_path(cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()).name)")
  # TUNE_SPECS: dtype:sets[:A,B layouts] (default row,row), e.g. "f16:llm,gpt,llm-wide:row,col"
  for spec in ${TUNE_SPECS:-"f16:matmul-square,llm,odd,skinny" "bf16:matmul-square,llm,odd,skinny" "f32:matmul-square,odd"}; do
    IFS=: read -r dt sets layouts <<< "$spec"
    log="$out/tune_${dt}_${layouts:-row,row}.txt"
    timeout 550 python3 -m cugemm tune --dtype "$dt" --sets "$sets" --layouts "${layouts:-row,row}" --ship \
      --path "$table" >> "$log" 2>&1; rc=$?
    echo "tune ${spec}: exit $rc, $(grep -c ' us, ' "$log") plans timed so far in $(basename "$log")"; [ $rc -eq 0 ] || status=1
  done
  cp "$table" "$out/"
fi

if has matmul; then
  step "cugemm.matmul: GPU tests, then the bench sets"
  python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_matmul.py > "$out/pytest_matmul.txt" 2>&1
  [ $? -eq 0 ] || status=1
  grep -E "FAILED|ERROR" "$out/pytest_matmul.txt" | head -20; tail -1 "$out/pytest_matmul.txt"
  for dt in f16 bf16 f32; do
    sets=${MATMUL_SETS:-matmul-square llm odd skinny}; [ $dt = f32 ] && sets=matmul-square
    for set in $sets; do
      python3 bench.py --dtype $dt --variants matmul --sweep $set --json results/matmul_${dt}_${set}.json \
        > "$out/matmul_${dt}_${set}.txt" 2>&1; rc=$?; [ $rc -eq 0 ] || status=1
      python3 scripts/matmul_summary.py results/matmul_${dt}_${set}.json
    done
  done
  cp results/matmul_*.json "$out/" 2>/dev/null
fi

if has mma; then
  step "the mma.sync family: GPU tests, then its shapes"
  python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu.py tests/test_registry_hgemm_mma.py tests/test_registry_hgemm_wgmma.py \
    -k "${MMA_TESTS:-gemm_mma}" > "$out/pytest_mma.txt" 2>&1
  [ $? -eq 0 ] || status=1
  grep -E "FAILED|ERROR" "$out/pytest_mma.txt" | head -20; tail -1 "$out/pytest_mma.txt"
  for dt in f16 bf16; do
    p=h; [ $dt = bf16 ] && p=b
    variants=${MMA_VARIANTS:-"P*stage3_swizzle_bswizzle_rbuf_epi,P*stage4_ws,P*stage4_ws_edge,P*persistent*"}
    python3 bench.py --dtype $dt --variants "${variants//P/${p}gemm_mma}" --iters ${MMA_ITERS:-30} \
      --shapes 4096x4096x1024,4096x4096x4096,8192x8192x8192 --json results/mma_$dt.json > "$out/mma_$dt.txt" 2>&1
    rc=$?; [ $rc -eq 0 ] || { echo "bench mma $dt: exit $rc"; status=1; }
    python3 - results/mma_$dt.json <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
for r in rows:
    if r["variant"] != "cupy.matmul":
        print(f'{r["variant"]:<64} {r["M"]}x{r["N"]}x{r["K"]:<6} {r["tflops"] or 0:7.1f} TFLOP/s {r["pct"] or 0:6.1f}%')
PY
  done
  cp results/mma_*.json "$out/" 2>/dev/null
fi

if has serving; then
  step "serving: GPU tests, serving bench, model bench"
  files=()
  for f in tests/test_gpu_torch.py tests/test_gpu_serve.py tests/test_gpu_matmul.py; do
    [ -f "$f" ] && files+=("$f")
  done
  if [ ${#files[@]} -gt 0 ]; then
    python3 -m pytest -q -m gpu -p no:cacheprovider "${files[@]}" > "$out/pytest_serving.txt" 2>&1
    [ $? -eq 0 ] || status=1
    grep -E "FAILED|ERROR" "$out/pytest_serving.txt" | head -20; tail -1 "$out/pytest_serving.txt"
  fi
  python3 scripts/serving_bench.py --json "$out/serving.json" 2>&1 | tee "$out/serving.txt"
  rc=${PIPESTATUS[0]}; [ "$rc" -eq 0 ] || { echo "serving_bench: exit $rc"; status=1; }
  [ -f "$out/serving.json" ] && cp "$out/serving.json" results/serving.json
  if [ -f scripts/torch_model_bench.py ]; then
    python3 scripts/torch_model_bench.py --json "$out/model.json" 2>&1 | tee "$out/model.txt"
    rc=${PIPESTATUS[0]}; [ "$rc" -eq 0 ] || { echo "torch_model_bench: exit $rc"; status=1; }
    [ -f "$out/model.json" ] && cp "$out/model.json" results/torch_model.json
  else
    echo "scripts/torch_model_bench.py absent: model bench skipped"
  fi
fi

if has eval; then
  step "evaluation set (scripts/eval_set.py)"
  mkdir -p results/eval
  python3 scripts/eval_set.py --json "$out/eval.json" 2>&1 | tee "$out/eval.txt" | grep -vE "^(f16|bf16) +(llm|square|other) "
  rc=${PIPESTATUS[0]}; [ "$rc" -eq 0 ] || { echo "eval_set: exit $rc"; status=1; }
  grep -q WRONG "$out/eval.txt" && { echo "eval_set: a wrong result"; status=1; }
  [ -f "$out/eval.json" ] && cp "$out/eval.json" results/eval/eval.json
fi

# one product kind's judge phase: its GPU tests (tests/test_gpu_<kind>.py), then its bench
# (scripts/<kind>_bench.py, extra options in $2), JSON to results/judge/<kind>.json
judge_phase() {
  local kind=$1 opts=${2:-}
  step "$kind products (tests/test_gpu_$kind.py, scripts/${kind}_bench.py)"
  python3 -m pytest -q -m gpu -p no:cacheprovider "tests/test_gpu_$kind.py" > "$out/pytest_$kind.txt" 2>&1
  [ $? -eq 0 ] || status=1
  grep -E "FAILED|ERROR|Error" "$out/pytest_$kind.txt" | head -20; tail -1 "$out/pytest_$kind.txt"
  mkdir -p results/judge
  python3 "scripts/${kind}_bench.py" $opts --json "$out/$kind.json" 2>&1 | tee "$out/$kind.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  grep -q WRONG "$out/$kind.txt" && { echo "${kind}_bench: a wrong result"; status=1; }
  [ -f "$out/$kind.json" ] && cp "$out/$kind.json" "results/judge/$kind.json"
}
has batched && judge_phase batched "${BATCHED_ARGS:-}"
has grouped && judge_phase grouped "${GROUPED_ARGS:-}"
has fp8 && judge_phase fp8 "${FP8_ARGS:-}"
if has epilogue; then
  python3 scripts/warm_epilogue.py 16  # the fused members the tests run, compiled in parallel
  judge_phase epilogue "${EPILOGUE_ARGS:-}"
  python3 scripts/mlp_train.py --json "$out/mlp_train.json" 2>&1 | tail -6 | tee "$out/mlp_train.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  for tool in memcheck racecheck; do  # every composition on both fused test bases, and the front doors
    timeout 280 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 python3 -m pytest -q -m gpu \
      -p no:cacheprovider tests/test_gpu_epilogue.py -k "every_composition or gemm_alpha or linear_cupy" \
      > "$out/sanitize_epilogue_$tool.txt" 2>&1 || status=1
    grep -aE "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$out/sanitize_epilogue_$tool.txt" | tail -2
  done
fi

if has power; then
  step "under the power cap (scripts/power_probe.py)"
  python3 scripts/power_probe.py --shapes "${POWER_SHAPES:-12288x4096x1024,8192x14336x4096,16384x3072x768}" \
    --rounds 2 2>&1 | tee "$out/power.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

if has peak; then
  step "TF32 instruction ceilings"
  python3 scripts/tc_peak.py --dtype all 2>&1 | tee "$out/tc_peak.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
exit $status
