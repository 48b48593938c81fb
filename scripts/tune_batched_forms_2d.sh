#!/usr/bin/env bash
# Time rung 7's batched forms as 2-D candidates (a product of one: the dynamic walk and more staging
# boxes, where C's stores set the time) into the shipped table's 2-D buckets, beside the 2-D kernels
# measured there before (tuning.merge keeps them):
#   bash scripts/tune_batched_forms_2d.sh SETS LAYOUTS [dtype ...]
#   e.g. bash scripts/tune_batched_forms_2d.sh tall-k row,col f16 bf16
# The four forms: 128x128 in 6 stages, 128x128 in 4 stages with 6 staging boxes, 192x128 (three
# consumers) in 4 stages, 128x256 in 2 stages with 8 boxes; B row-major or (LAYOUTS row,col) their
# _bcol forms. The table is written to cugemm/tables/ (copy it back from the device).
set -euo pipefail
sets=$1 layouts=$2; shift 2
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for dt in "${@:-f16}"; do
  suffix=""; [ "${layouts#*,}" = col ] && suffix="_bcol"
  bf=""; [ "$dt" = bf16 ] && bf="_bf16"
  names=""
  for form in m64n128k16_persistent_tma_store_stage6 m64n128k16_persistent_tma_store_stage4_epi6 \
              m64n128k16_persistent_wg3_tma_store_stage4 m64n256k16_persistent_tma_store_stage2_epi8; do
    names+="${names:+,}hgemm_wgmma_${form}${suffix}_batched${bf}"
  done
  python3 -m cugemm tune --sets "$sets" --dtype "$dt" --layouts "$layouts" --variants "$names" --ship
done
