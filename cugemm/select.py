"""Which kernel cugemm.matmul runs: the candidates, the rules that refuse them, and the ranking.

A *problem* is what matmul knows of one 2-D product before launching: M, N, K, the element type,
how each operand lies in memory (row- or column-major, its leading dimension, the alignment of its
pointer) and the GPU. A *plan* is one way to compute it: a variant, and which operands must first be
copied (into the variant's layout, with 16-byte-aligned rows, or zero-padded up to its tile rules)
or, for C, computed into a workspace and copied back. Every registered variant of the element type
is considered; `plans` returns the ones that can compute the problem, and the reason each other one
cannot, in the words of the rule that refuses it (the same checks `cugemm.run` applies).

Ranking (best first), by the estimated time of the whole plan (kernel + copies + launches):
  1. tuned: a measurement of this variant in this shape bucket on this GPU, from the tuning cache
     that `cugemm.tune` writes (cugemm/tuning.py), or, where the bucket was not measured, the
     nearest measured buckets' times scaled to this shape by the model (tuning.Measured);
  2. table: the same from the table shipped for this GPU model (cugemm/tables/<gpu>.json, written
     by `python -m cugemm tune --ship`);
  3. model: the fallback for a GPU or a shape nobody measured: each candidate's `matmul` rating, a
     documented nominal rate per kernel class (its TFLOP/s on an H100, or its bandwidth for the
     memory-bound skinny rungs) times the share of the SMs its tiles keep busy, plus copy and launch
     costs.
A measured estimate beats a modelled one of the same plan; plans are compared on estimates of the
same kind where possible (all measured, else all modelled), so a table never competes with a guess.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import arch as _arch
from . import dtypes
from .device import Device
from .ints import round_up
from .operand import Layout, fits
from .registry import variants as _variants
from .variant import Variant

# ---- the fallback ranking -------------------------------------------------------------------------
# The candidates are the variants with a `matmul` rating (cugemm.variant.Candidate, declared in the
# family tables): a nominal rate (TFLOP/s on an H100 when the kernel's tiles fill the GPU, or GB/s
# for the memory-bound 'bw' skinny rungs), how the model scales it, and a preference order among
# equal estimates. The figures are the same-run measurements quoted in docs/ (H100 SXM):
# the fallback only has to order the candidates sensibly on a GPU nobody tuned. The split-K rung also
# pays SPLITK_US per launch (its partials and the reduction: 5-10 us measured on the H100 whatever
# the split), the skinny rungs stream B at about 2.4 TB/s; the 64-row tiles ('stream') are rated by
# their flops (one consumer warpgroup per SM) but never faster than that bandwidth allows. Variants
# without a rating are not candidates of matmul (the learning rungs of the ladders; `variant=`
# still runs any of them).
LAUNCH_US = 3.0          # what one more kernel launch (a copy) adds, host and device
COPY_GBPS = 2000.0       # what a strided copy kernel moves per second (read + write), H100-ish
MIN_KERNEL_US = 4.0      # no kernel of the zoo finishes faster than this, launch included
TRANSPOSE_COST = 4.0     # a strided (transposing) copy against a straight one (not measured: a guess)
ROW_ALIGN = 128          # bytes: the TMA kernels read rows this far apart at full speed (cugemm.tuning's
                         # 'ragged' class says what others cost), so a copy of A or B gets such rows
SPLITK_US = 6.0          # the split-K rung's fixed cost (partials, reduction)
STREAM_GBPS = 2400.0     # the 'stream' kind's operand bandwidth (the skinny rungs' measured rate)
TILE_GBPS = 1000.0       # the most operand bytes per second a tiled tensor-core kernel was seen to read
                         # when its tiles are mostly padding (an H200: rung 7's 128x64 B_COL
                         # form at 8x8192x28672 read 470 MB in 490 us): the floor of its time; with
                         # its tile rows filled it streams at STREAM_GBPS (the batched forms moved
                         # 2.0-2.3 TB/s on small-K batches, H100), in between in proportion
OVERLAP = 0.25           # the part of the shorter of a kernel's memory and tensor time that does not hide
                         # under the longer (so that among kernels at the memory floor the faster
                         # tensor work ranks first: 32768x512x64 ran in 37 us on rung 10's 64x32
                         # tiles, 19 us in 128x256 tiles, H100)


def fallback_row(v: Variant, dtype: dtypes.DType, allow_tf32: bool):
    """(order, rate, kind) of `v` as a matmul candidate for inputs of `dtype`, or None: its `matmul`
    rating, for variants of that input type (TF32 ones only with allow_tf32)."""
    c = v.matmul
    if c is None or v.dt_in is not dtype or (v.math_dtype == "tfloat32" and not allow_tf32):
        return None
    return c.order, c.rate, c.kind


# ---- problems -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Problem:
    M: int
    N: int
    K: int
    dtype: dtypes.DType
    a: Layout
    b: Layout
    c: Layout
    device: Device
    allow_tf32: bool = False
    batched: bool = False  # a batch in one launch, ranked as its stacked rows (cugemm.batched): its candidates
                           # are the batched forms, its measurements a tuning group of their own
    rows: int = 0  # batched: one product's rows, what the kernels' 32-bit indices and grids are checked on

    @property
    def flops(self) -> float:
        return 2.0 * self.M * self.N * self.K


def _span(layout: str, rows: int, cols: int) -> int:
    """Elements of one contiguous line (a row of a 'row' operand, a column of a 'col' one)."""
    return cols if layout == "row" else rows


# ---- plans ----------------------------------------------------------------------------------------
@dataclass
class Plan:
    """One way to compute a problem. copy_a / copy_b: '' (used in place) or the layout the operand
    is copied into first; ld_a / ld_b: the leading dimension of that copy; dims: the (M, N, K) the
    kernel runs (larger than the problem's when the copies are zero-padded to the variant's rules);
    via_c: C is computed into a workspace (of leading dimension ld_c) and copied into the output."""

    variant: Variant
    copy_a: str = ""
    copy_b: str = ""
    ld_a: int = 0
    ld_b: int = 0
    via_c: bool = False
    ld_c: int = 0
    dims: tuple = ()
    est_us: float = math.inf
    source: str = "model"
    note: str = ""

    @property
    def copies(self) -> int:
        return bool(self.copy_a) + bool(self.copy_b) + bool(self.via_c)

    def describe(self) -> str:
        parts = []
        if self.copy_a:
            parts.append(f"A copied {self.copy_a}-major (ld {self.ld_a})")
        if self.copy_b:
            parts.append(f"B copied {self.copy_b}-major (ld {self.ld_b})")
        if self.via_c:
            parts.append(f"C through a workspace (ld {self.ld_c})")
        if self.dims and self.note:
            parts.append(self.note)
        return "; ".join(parts) if parts else "in place"


def refusal(v: Variant, p: Problem) -> str:
    """Why `v` can compute `p` under no plan at all ('' when some plan may work)."""
    if v.dt_in is not p.dtype or v.dt_out is not p.dtype:
        return f"takes {v.dtype_in} -> {v.dtype_out}, the operands are {p.dtype.name}"
    if p.dtype.itemsize == 2 and v.dtype_acc != "float32":
        return f"accumulates in {v.dtype_acc}; matmul keeps cupy.matmul's float32 accumulation"
    if v.math_dtype == "tfloat32" and not p.allow_tf32:
        return "multiplies in TF32 (pass allow_tf32=True to allow it)"
    if v.layout != "row":
        return "writes a column-major C (matmul returns row-major arrays)"
    reason = _arch.unfit_reason(v, p.device.cc, p.device.smem_optin)
    if reason:
        return reason
    if v.max_m and p.M > v.max_m:
        return f"M={p.M} is over {v.max_m} (rule: M <= {v.max_m})"
    return ""


def make_plan(v: Variant, p: Problem) -> tuple[Plan | None, str]:
    """(plan, '') computing `p` with `v` at the fewest copies, or (None, the rule that refuses it)."""
    why = refusal(v, p)
    if why:
        return None, why
    M, N, K = p.M, p.N, p.K
    rows = p.rows if p.batched and p.rows else M  # the rows a kernel indexes (a batch: one product's)
    size = p.dtype.itemsize
    try:  # in place: the shape rules as they are
        v.check_dims(rows, N, K)
        dims = (M, N, K)
    except ValueError as e:
        msg = str(e).split(": ", 1)[-1]
        if "multiple of" not in msg:  # 32-bit index or grid limits: padding cannot help
            return None, msg
        mm, mn, mk = v.multiple_of
        dims = (round_up(M, mm), round_up(N, mn), round_up(K, mk))
        try:
            v.check_dims(round_up(rows, mm), *dims[1:])
        except ValueError as e2:
            return None, str(e2).split(": ", 1)[-1]
    pad = dims != (M, N, K)
    Mp, Np, Kp = dims
    elem_align = max(1, v.align // size)
    row_align = max(elem_align, ROW_ALIGN // size)  # a copy's rows: 128 bytes apart (C's may be 16)
    plan = Plan(v, dims=dims)
    # A (M x K)
    if pad and (Mp != M or Kp != K) or not fits(p.a, v.a_layout, M, K, size, v.strided, v.align):
        plan.copy_a = v.a_layout
        span = _span(v.a_layout, Mp, Kp)
        plan.ld_a = round_up(span, row_align) if v.strided else span
    if pad and (Kp != K or Np != N) or not fits(p.b, v.b_layout, K, N, size, v.strided, v.align):
        plan.copy_b = v.b_layout
        span = _span(v.b_layout, Kp, Np)
        plan.ld_b = round_up(span, row_align) if v.strided else span
    c_elem_align = max(1, v.c_align // size)
    if pad and (Mp != M or Np != N) or not fits(p.c, "row", M, N, size, v.strided, v.c_align):
        plan.via_c = True
        plan.ld_c = round_up(Np, c_elem_align) if v.strided else Np
    if not v.strided:
        # a dense copy must itself satisfy the rules: rows of a 16-bit N or K not a multiple of 8
        # are not 16-byte aligned, so the copy pads those dimensions with zeros
        for copied, ld in ((plan.copy_a, plan.ld_a), (plan.copy_b, plan.ld_b), (plan.via_c, plan.ld_c)):
            if copied and ld * size % v.align:
                return None, (f"a dense copy would have rows of {ld * size} bytes, not a multiple of "
                              f"{v.align} (rule of its multiple_of {v.multiple_of})")
    if pad:
        plan.note = f"zero-padded to {Mp}x{Np}x{Kp} (the variant's multiple_of {v.multiple_of})"
    return plan, ""


def plans(p: Problem, names=None) -> tuple[list[Plan], list[tuple[Variant, str]]]:
    """(plans, refused): a plan for each candidate variant that can compute `p`, and (variant,
    reason) for the others. Candidates: the rated variants of the element type (fallback_row); for a
    batched p only the batched forms, for a 2-D p the batched forms too (a product of one: their
    dynamic walk and staging boxes beat the 2-D walk where C's stores set the time, measured into
    the 2-D tuning groups; the model ranks them after the 2-D kernels of the same tiles, by their
    order); or `names` (a list of variant names or a glob) when given."""
    if names is None:
        pool = [v for v in _variants(dtype=p.dtype.name) if fallback_row(v, p.dtype, p.allow_tf32)
                and (v.batched or not p.batched)]
        pool.sort(key=lambda v: fallback_row(v, p.dtype, p.allow_tf32)[0])
    elif isinstance(names, str):
        pool = _variants(names)
    else:
        from .registry import get_variant

        pool = [get_variant(n) for n in names]
    good, refused = [], []
    for v in pool:
        plan, why = make_plan(v, p)
        if plan is None:
            refused.append((v, why))
        else:
            good.append(plan)
    return good, refused


# ---- estimates ------------------------------------------------------------------------------------
def copy_us(plan: Plan, p: Problem) -> float:
    """Modelled cost of the plan's copies: bytes read and written at COPY_GBPS, plus a launch each."""
    size = p.dtype.itemsize
    Mp, Np, Kp = plan.dims
    moved = 0
    # a copy that transposes (a column-major source into row-major rows, or back) reads with a
    # stride: TRANSPOSE_COST times the bytes of a straight copy
    if plan.copy_a:
        moved += (p.M * p.K + Mp * Kp) * size * (1 if plan.copy_a == p.a.layout else TRANSPOSE_COST)
    if plan.copy_b:
        moved += (p.K * p.N + Kp * Np) * size * (1 if plan.copy_b == p.b.layout else TRANSPOSE_COST)
    if plan.via_c:
        moved += 2 * p.M * p.N * size
    return moved / (COPY_GBPS * 1e3) + LAUNCH_US * plan.copies


def model_kernel_us(v: Variant, p: Problem, dims, ranking: bool = False) -> float:
    """The fallback model's kernel time: nominal rate x the share of the SMs the tiles keep busy,
    never under the time to move the operands once. ranking=True, the estimate of a plan nobody
    measured near this problem (estimate()): a tiled kernel whose tile rows are full streams at
    STREAM_GBPS, and the shorter of memory and tensor time adds OVERLAP of itself. False, as
    cugemm.tuning scales a measured time to a neighbouring shape (validated left-one-bucket-out
    against the shipped table, scripts/selection_loo.py): the TILE_GBPS floor, the longer time alone."""
    row = fallback_row(v, p.dtype, p.allow_tf32)
    nominal, kind = (row[1], row[2]) if row else (1.0, "tiles")
    M, N, K = dims
    size = p.dtype.itemsize
    if kind == "bw":  # streams B once, A and C are small
        return max(MIN_KERNEL_US, (K * N + M * K + M * N) * size / (nominal * 1e3))
    # 'stream' (rung 10's 64-row tiles): the tiles' flops at the nominal rate, but never faster than
    # reading the operands once at the skinny rungs' bandwidth
    bm, bn = v.tile[0], v.tile[1]
    gbps = STREAM_GBPS if kind == "stream" else \
        TILE_GBPS + (STREAM_GBPS - TILE_GBPS) * min(1.0, M / bm) if ranking else TILE_GBPS
    floor_us = (K * N + M * K + M * N) * size / (gbps * 1e3)
    sms = max(1, p.device.sms)
    tm, tn = -(-M // bm), -(-N // bn)
    c = v.cluster[0]
    if c > 1:  # whole clusters: a cluster's tiles past the edge still hold their SMs (wasted work)
        if "CLUSTER_N" in v.param_dict or v.param_dict.get("ALONG_M") is False:
            tn = -(-tn // c) * c
        else:
            tm = -(-tm // c) * c
    tiles = tm * tn
    extra = 0.0
    if kind == "splitk":
        busy, extra = 0.9, SPLITK_US  # K slices make work for every SM, at a fixed price
    else:
        waves = tiles / sms
        busy = waves / math.ceil(waves) if tiles else 1.0
    useful = (M * N) / (tiles * bm * bn) if tiles else 1.0  # tiles cut by the edges waste work
    tensor_us = 2.0 * M * N * K / (nominal * 1e6 * busy * useful) + extra
    return max(MIN_KERNEL_US, max(floor_us, tensor_us) + (OVERLAP * min(floor_us, tensor_us) if ranking else 0.0))


def estimate(plans_: list[Plan], p: Problem, measured) -> None:
    """Fill each plan's est_us and source. `measured(variant, problem) -> (us, source) | None`
    gives a whole-plan time measured on this GPU (tuned cache or shipped table), already scaled."""
    for plan in plans_:
        hit = measured(plan.variant, p) if measured is not None else None
        if hit is not None and plan.variant.batched and not p.batched and hit[1].endswith("~"):
            # a batched form in a 2-D product competes only where it was timed itself: it wins where
            # C's stores set the time and loses by 10-50% on compute-bound products (no clusters), so a
            # time scaled from another bucket (the '~' of tuning.Measured) is not evidence enough
            hit = None
        if hit is not None:
            plan.est_us, plan.source = hit
        else:
            plan.est_us = model_kernel_us(plan.variant, p, plan.dims, ranking=True) + copy_us(plan, p)
            plan.source = "model"


def rank(plans_: list[Plan]) -> list[Plan]:
    """Best first: measured plans before modelled ones, then by estimated time, then by the
    fallback order (stable sort)."""
    return sorted(plans_, key=lambda q: (q.source == "model", q.est_us))


@dataclass
class Choice:
    """What select() decided, for matmul and explain()."""

    problem: Problem
    plan: Plan | None
    ranked: list = field(default_factory=list)
    refused: list = field(default_factory=list)

    def __str__(self) -> str:
        p = self.problem
        lines = [f"cugemm.matmul {p.M}x{p.N}x{p.K} {p.dtype.name}"
                 f"{' (TF32 allowed)' if p.allow_tf32 else ''}: A {p.a.layout or 'strided'}"
                 f" (ld {p.a.ld}, {p.a.align}-byte aligned), B {p.b.layout or 'strided'} (ld {p.b.ld},"
                 f" {p.b.align}-byte aligned), C {p.c.layout or 'strided'}; GPU {p.device.name or '?'}"
                 f" sm_{p.device.cc}, {p.device.sms} SMs"]
        if self.plan is None:
            lines.append("no variant can compute it")
        else:
            q = self.plan
            lines.append(f"chosen: {q.variant.name} [{q.describe()}], est {q.est_us:.1f} us ({q.source})")
        if self.ranked[1:]:
            lines.append("other candidates, best first:")
            for q in self.ranked[1:]:
                lines.append(f"  {q.variant.name} [{q.describe()}]: est {q.est_us:.1f} us ({q.source})")
        if self.refused:
            lines.append("refused:")
            for v, why in self.refused:
                lines.append(f"  {v.name}: {why}")
        return "\n".join(lines)


def select(p: Problem, measured=None, names=None) -> Choice:
    """Rank every plan for `p` (see the module docstring); Choice.plan is the best, or None."""
    good, refused = plans(p, names)
    estimate(good, p, measured)
    ranked = rank(good)
    return Choice(p, ranked[0] if ranked else None, ranked, refused)
