"""Measuring: every chosen variant against cupy.matmul (cuBLAS) on one shape, in the same run.

Each variant's result is checked against the float64 reference (output poisoned with NaN first)
before it is timed; a wrong result is FAIL and never ranked. The figure that counts is the ratio to
cupy.matmul on the same inputs in the same run. Inputs are random normal, never zeros.
"""
from __future__ import annotations

import enum
from dataclasses import asdict, dataclass

from .. import accuracy, testing
from ..registry import variants
from .timing import Timer

# --dtype: (input type, math type). tf32 runs float32 inputs through TF32 tensor-core variants,
# against cupy.matmul with CUPY_TF32=1 (which CuPy reads once, at import: the CLI re-executes itself
# with it set). f32's baseline is plain FP32 cupy.matmul; bf16's is cupy.matmul on bfloat16 arrays.
# e4m3: the FP8 family's e4m3 x e4m3 forms (unit scales: the product of the 8-bit values) against
# torch._scaled_mm (cuBLASLt, per-tensor scales of 1, bf16 out, its default promoted accumulation):
# cupy.matmul has no 8-bit types, so this baseline needs torch.
DTYPES = {"f32": ("float32", "float32"), "f16": ("float16", "float16"),
          "bf16": ("bfloat16", "bfloat16"), "tf32": ("float32", "tfloat32"),
          "e4m3": ("float8_e4m3fn", "float8_e4m3fn")}
FP8_BASELINE = "torch._scaled_mm"


class Status(str, enum.Enum):
    BASELINE = "baseline"     # cupy.matmul, checked
    OK = "ok"                 # checked, within tolerance
    FAIL = "FAIL"             # checked, wrong: never ranked
    UNCHECKED = "unchecked"   # --no-check
    ERROR = "error"           # raised (shape rule, compile error, ...): `detail` says what


@dataclass
class Row:
    """One variant (or the baseline) on one shape."""

    variant: str
    M: int
    N: int
    K: int
    dtype: str
    ms: float | None = None
    p20_ms: float | None = None
    p80_ms: float | None = None
    tflops: float | None = None
    pct: float | None = None
    rel_err: float | None = None
    status: Status = Status.ERROR
    detail: str = ""
    fastest: bool = False

    @property
    def timed(self) -> bool:
        return self.ms is not None and self.status in (Status.OK, Status.BASELINE, Status.UNCHECKED)

    @property
    def label(self) -> str:
        """The status as shown in tables: the error's first line for ERROR rows; for the
        cugemm.matmul row, the variant it chose."""
        if self.status is Status.ERROR:
            return self.detail
        return f"{self.status.value} ({self.detail})" if self.detail else self.status.value

    def as_dict(self) -> dict:
        d = asdict(self)
        d["status"] = self.status.value
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Row":
        d = dict(d)
        try:
            d["status"] = Status(d.get("status", "error"))
        except ValueError:  # result files written before the Status enum: the error text itself
            d["detail"], d["status"] = d["status"], Status.ERROR
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


LLM_M = (1, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
LLM_NK = ((4096, 4096), (11008, 4096), (4096, 11008), (14336, 4096))
# linear layers of GPT-2 medium / large and 2.7B-class decoders (N x K weights), for tuning x @ W.T:
# no shape of it is in LINEAR_JUDGE, the set its results are judged on
GPT_M = (1, 8, 16, 32, 128, 256, 512, 1024, 4096, 8192)
GPT_NK = ((3072, 1024), (1024, 1024), (4096, 1024), (1024, 4096), (3840, 1280), (1280, 1280), (5120, 1280),
          (1280, 5120), (2560, 2560), (10240, 2560))
# linear layers of small decoders (N x K weights: Qwen2.5-0.5B's qkv, o, up and down projections, SmolLM-360M's
# up and down, a 512-wide encoder's): the sub-1024 hidden sizes the other tuning sets lack; no shape of it
# is in LINEAR_JUDGE
SMALL_M = (1, 16, 64, 256, 512, 1024, 2048, 4096, 8192)
SMALL_NK = ((1152, 896), (896, 896), (4864, 896), (896, 4864), (2560, 960), (960, 2560), (2048, 512), (512, 2048))
# x @ W.T shapes cugemm.matmul is judged on against torch.matmul (scripts/serving_bench.py): GPT-2 small,
# Llama-3 8B / 70B, 13B-class layers at 1 to 16384 tokens; no table was fitted to any of them
LINEAR_JUDGE = ((1, 2304, 768), (8, 3072, 768), (16, 768, 3072), (16, 6144, 4096), (1, 28672, 8192),
                (8, 8192, 28672), (192, 5120, 5120), (192, 13824, 5120), (384, 2304, 768), (512, 768, 768),
                (1024, 3072, 768), (1024, 768, 3072), (2048, 2304, 768), (2048, 6144, 4096), (2048, 1024, 4096),
                (6144, 4096, 4096), (3072, 14336, 4096), (4096, 4096, 14336), (8192, 5120, 5120),
                (8192, 13824, 5120), (16384, 768, 3072), (16384, 3072, 768), (16384, 1024, 4096),
                (3000, 3072, 768))

# linear layers of other public decoders (GPT-J-6B, Qwen2.5-3B, StableLM-3B, Llama-3.2-3B, Mistral-NeMo-12B):
# wide K against small and mid token counts, for tuning x @ W.T and row-major B alike;
# no model of scripts/eval_set.py's evaluation set has these N x K pairs
WIDE_M = (1, 4, 16, 48, 96, 160, 320, 640, 1280, 3000, 6000)
WIDE_NK = ((16384, 4096), (4096, 16384), (11008, 2048), (2048, 11008), (6912, 2560), (2560, 6912),
           (8192, 3072), (3072, 8192), (14336, 5120), (5120, 14336))
# ragged rows (cugemm.tuning's 'ragged' class: rows not a multiple of 32 bytes apart): squares whose side is
# an odd multiple of 8, 264 to 8008, and rectangles with ragged K and N (row-major and x @ W.T tuning sets);
# none of them is in scripts/eval_set.py's evaluation set
RAGGED_SQUARES = (264, 344, 488, 600, 712, 840, 1000, 1144, 1240, 1384, 1560, 1624, 1752, 1880, 2120, 2232,
                  2488, 2600, 2968, 3176, 3288, 3752, 4232, 4408, 5192, 6168, 7256, 8008)
RAGGED_RECTS = ((4096, 2216, 1064), (1536, 5000, 1736), (8192, 1352, 2600), (2048, 6200, 584),
                (640, 3400, 3400), (12000, 3000, 1000), (256, 4104, 1400), (96, 6000, 2600),
                (4096, 4096, 1000), (512, 6144, 1736), (8192, 2048, 584), (1024, 3000, 1000))


def _grid(ms, ns, ks):
    return [(m, n, k) for m in ms for n in ns for k in ks]


# Named shape grids (--sweep). Each takes the size cap (--max-size) and returns (M, N, K) tuples.
SWEEPS = {
    # seed 004's grid: M, N in {1024, 2048, 4096}, K in {256, 512, 1024}
    "seed-hgemm": lambda cap: _grid((1024, 2048, 4096), (1024, 2048, 4096), (256, 512, 1024)),
    # seed 003's grid: M, N in {4096, 8192, 16384}, K in {2048, 4096, 8192}
    "seed-sgemm": lambda cap: _grid((4096, 8192, 16384), (4096, 8192, 16384), (2048, 4096, 8192)),
    # square products from 256 to 8192
    "square": lambda cap: [(s, s, s) for s in (256, 512, 1024, 2048, 4096, 8192)],
    # cugemm.matmul's square set: 1024 to 8192
    "matmul-square": lambda cap: [(s, s, s) for s in (1024, 2048, 3072, 4096, 6144, 8192)],
    # LLM layers: M tokens against N x K of common hidden sizes (Llama 7B / Mistral projections)
    "llm": lambda cap: [(m, n, k) for n, k in LLM_NK for m in LLM_M],
    # the LLM layers at the token counts between llm's (x @ W.T tuning)
    "llm-mid": lambda cap: [(m, n, k) for n, k in LLM_NK for m in (96, 192, 384, 768, 1536, 2560)],
    # GPT-2 medium / large and 2.7B-class layers (an x @ W.T tuning set)
    "gpt": lambda cap: [(m, n, k) for n, k in GPT_NK for m in GPT_M],
    # small decoders' layers (SMALL_NK; a tuning set, x @ W.T and row-major)
    "small-llm": lambda cap: [(m, n, k) for n, k in SMALL_NK for m in SMALL_M],
    # small K against large M and N (row-major tuning set): the C store, not the flops, sets the time
    "small-k": lambda cap: [(m, n, k) for m, n in ((2048, 2048), (2048, 8192), (8192, 2048), (3072, 3072),
                                                   (3072, 6144), (6144, 3072), (6144, 6144), (8192, 8192))
                            for k in (16, 32, 64, 128, 256, 384, 512, 768)],
    # tall and narrow products (row-major tuning set): many rows against a few columns
    "tall": lambda cap: [(m, n, k) for m in (12288, 40000) for n in (8, 24, 64, 192) for k in (384, 1536, 5000)],
    # tall products with small K (x @ W.T and row-major tuning set): a batch of activations folded into its
    # stacked rows against one weight, where the C store sets the time
    "tall-k": lambda cap: [(m, n, k) for m in (16384, 49152, 131072) for n in (128, 512, 1536, 4096)
                           for k in (64, 128, 256)],
    # WIDE_NK x WIDE_M (x @ W.T and row-major tuning set)
    "llm-wide": lambda cap: [(m, n, k) for n, k in WIDE_NK for m in WIDE_M],
    # ragged rows: RAGGED_SQUARES and RAGGED_RECTS (row-major tuning set)
    "ragged": lambda cap: [(s, s, s) for s in RAGGED_SQUARES] + list(RAGGED_RECTS),
    # ragged rows against a transposed weight: RAGGED_RECTS (x @ W.T tuning set)
    "ragged-rect": lambda cap: list(RAGGED_RECTS),
    # the x @ W.T judge set (scripts/serving_bench.py)
    "linear-judge": lambda cap: list(LINEAR_JUDGE),
    # misaligned rows (cuBLAS leaves its fast kernels) and odd sizes
    "odd": lambda cap: [(4095, 4097, 1023), (1023, 1025, 4095), (2047, 2049, 2047), (8191, 8193, 1025),
                        (1000, 1000, 1000), (4097, 4095, 4097)],
    # memory-bound skinny products
    "skinny": lambda cap: [(m, 8192, 8192) for m in (1, 8, 16, 32, 64)],
}


def _batched_grid() -> list[tuple]:
    """Square products (QK^T-like) of side 256-4096 and narrow ones (PV-like: N 64-128) at K 64, 128, 256,
    as many of each as make about 20M and 80M elements of C (5M and 20M for the narrow ones)."""
    out = []
    for sides, totals in ((((256, 256), (1024, 1024), (2048, 2048), (4096, 4096)), (5 << 22, 5 << 24)),
                          (((1024, 64), (2048, 128), (4096, 128)), (5 << 20, 5 << 22))):
        for m, n in sides:
            for total in totals:
                for k in (64, 128, 256):
                    out.append((max(2, total // (m * n)), m, n, k))
    return out


# Batches (count, M, N, K) for `tune --batched` (the batched forms' tuning set): attention-shaped, K 64-256;
# none of them is in scripts/batched_bench.py's judge set
BATCHED_SWEEPS = {
    "batched": lambda: [(16, 512, 512, 128), (128, 512, 512, 64), (64, 1024, 1024, 64), (12, 2048, 2048, 256),
                        (4, 4096, 4096, 256), (512, 64, 64, 64), (64, 256, 256, 64), (32, 768, 768, 96),
                        (16, 1536, 1536, 64), (256, 256, 64, 256), (32, 2048, 128, 256), (96, 512, 96, 256),
                        (40, 1496, 1496, 128), (8, 2560, 2560, 64), (160, 384, 384, 64), (24, 4096, 128, 128),
                        (128, 200, 200, 80), (32, 1024, 1024, 256), (8, 2048, 2048, 64), (256, 512, 64, 128),
                        (64, 128, 1024, 128), (4, 8192, 8192, 128),
                        # ragged rows (cugemm.tuning's class: lines not a multiple of 32 bytes)
                        (32, 1000, 1000, 64), (16, 2200, 2200, 128), (48, 744, 744, 80), (12, 2776, 2776, 64),
                        (64, 520, 520, 96), (8, 4040, 4040, 128)],
    "batched-grid": _batched_grid,
}


def batched_shapes(text: str) -> list[tuple]:
    """Named batched sets (BATCHED_SWEEPS) or 'BxMxNxK' batches, comma-separated."""
    out = []
    for part in (x.strip() for x in text.split(",") if x.strip()):
        if part in BATCHED_SWEEPS:
            out += BATCHED_SWEEPS[part]()
            continue
        dims = part.lower().split("x")
        if len(dims) != 4 or not all(d.isdigit() and int(d) > 0 for d in dims):
            raise ValueError(f"batch {part!r} is neither a batched set ({', '.join(BATCHED_SWEEPS)}) nor BxMxNxK "
                             "(e.g. 64x512x512x64)")
        out.append(tuple(int(d) for d in dims))
    return out


def sweep_shapes(name: str, max_size: int | None = None) -> list[tuple]:
    """The shapes of a named sweep, dropping those with a dimension over max_size."""
    if name not in SWEEPS:
        raise KeyError(f"unknown sweep {name!r}; known: {', '.join(SWEEPS)}")
    return [s for s in SWEEPS[name](max_size) if max_size is None or max(s) <= max_size]


def parse_shapes(text: str) -> list[tuple]:
    """'4096x4096x1024,128x256x64' -> [(4096, 4096, 1024), (128, 256, 64)]."""
    out = []
    for part in text.split(","):
        dims = part.strip().lower().split("x")
        if len(dims) != 3 or not all(d.isdigit() for d in dims):
            raise ValueError(f"shape {part.strip()!r} is not MxNxK (e.g. 4096x4096x1024)")
        out.append(tuple(int(d) for d in dims))
    return out


MATMUL = "cugemm.matmul"  # the front door, as a row of the bench (--variants matmul)


def chosen_variants(dtype: str, pattern: str | None = None):
    """The variants (and MATMUL, when a glob is 'matmul') a bench of `dtype` times."""
    dtype_in, math_dtype = DTYPES[dtype]
    globs = [g.strip() for g in pattern.split(",")] if pattern else []
    front = [MATMUL] if any(g in ("matmul", MATMUL) for g in globs) else []
    rest = ",".join(g for g in globs if g not in ("matmul", MATMUL))
    if front and not rest:
        return front
    found = variants(rest or None, dtype=dtype_in, math_dtype=math_dtype)
    return front + [v for v in found if v.dt_b.name == dtype_in]  # B of A's type (e4m3 x e4m3)


def bench_shape(M: int, N: int, K: int, dtype: str = "f32", pattern: str | None = None,
                warmup: int = 5, iters: int = 50, timer: Timer | None = None, check: bool = True,
                chosen=None) -> list[Row]:
    """Time cupy.matmul and every matching variant on one MxNxK shape; one Row per variant.

    dtype is a key of DTYPES. Each variant gets the inputs in its own layout (column-major variants
    get Fortran-ordered copies of the same values) and, unless check=False, a NaN-poisoned output
    checked against the float64 reference before it is timed. Each variant is timed alternating
    with cupy.matmul on the same inputs (Timer.measure_pair), and its `pct` is the ratio of the two
    medians of that pair; the baseline row is cupy.matmul timed on its own first. A variant whose
    rules reject the shape gets an ERROR row saying so.
    """
    import cupy

    from ..launch import run

    dtype_in, math_dtype = DTYPES[dtype]
    timer = timer or Timer(warmup, iters)
    flop = 2.0 * M * N * K
    a, b = testing.random_operands(dtype_in, M, N, K)
    ref = accuracy.reference(a, b) if check else None
    operands = {("row", "row"): (a, b)}
    rows: list[Row] = []

    base_dtype = dtype_in
    if dtype != "e4m3":
        def base_fn(out):
            cupy.matmul(a, b, out=out)
    else:  # torch._scaled_mm on the same bytes (B column-major, as it asks), bf16 out
        import torch

        def tview(x, dt):
            return torch.from_dlpack(x.view(cupy.uint8)).view(dt)

        ta, tb = tview(a, torch.float8_e4m3fn), tview(testing.fortran(b), torch.float8_e4m3fn)
        one = torch.ones((), device=ta.device)
        base_dtype = "bfloat16"

        def base_fn(out):
            torch._scaled_mm(ta, tb, one, one, out_dtype=torch.bfloat16, out=tview(out, torch.bfloat16))

    def row(name, fn, dtype_out, dtype_acc, layout="row", baseline=False):
        out = testing.poisoned((M, N), dtype_out, layout)
        r = Row(variant=name, M=M, N=N, K=K, dtype=dtype)
        try:
            fn(out)
            if check:
                r.rel_err = accuracy.rel_error(out, ref)
                ok = accuracy.within(r.rel_err, math_dtype, dtype_acc)
                r.status = (Status.BASELINE if baseline else Status.OK) if ok else Status.FAIL
            else:
                r.status = Status.BASELINE if baseline else Status.UNCHECKED
            if baseline:
                t = timer.measure(lambda: fn(out))
                r.pct = 100.0
            else:  # alternating with cupy.matmul: both see the same clock history
                base_out = testing.poisoned((M, N), base_dtype)
                t, tb = timer.measure_pair(lambda: fn(out), lambda: base_fn(base_out))
                r.pct = 100.0 * tb["median"] / t["median"]
            r.ms, r.p20_ms, r.p80_ms = t["median"], t["p20"], t["p80"]
            r.tflops = flop / t["median"] / 1e9
        except Exception as e:  # a failing variant shows its reason and the others go on
            msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
            r.status, r.detail = Status.ERROR, f"{type(e).__name__}: {msg}"[:160]
        rows.append(r)

    row(FP8_BASELINE if dtype == "e4m3" else "cupy.matmul", base_fn, base_dtype, "float32", baseline=True)
    for v in (chosen if chosen is not None else chosen_variants(dtype, pattern)):
        if v == MATMUL:
            from .. import matmul

            tf32 = math_dtype == "tfloat32"
            row(MATMUL, lambda out: matmul(a, b, out=out, allow_tf32=tf32), dtype_in, "float32")
            if rows[-1].status is not Status.ERROR:
                from ..serve import explain

                plan = explain(a, b, allow_tf32=tf32).plan
                rows[-1].detail = plan.variant.name + ("" if not plan.copies else f"; {plan.describe()}")
            continue
        lay = (v.a_layout, v.b_layout)
        if lay not in operands:  # the same values, laid out as the variant reads them
            operands[lay] = (testing.fortran(a) if lay[0] == "col" else a,
                             testing.fortran(b) if lay[1] == "col" else b)
        va, vb = operands[lay]
        row(v.name, lambda out, v=v, va=va, vb=vb: run(v, va, vb, out), v.dtype_out, v.dtype_acc,
            layout=v.layout)
    ranked = [r for r in rows[1:] if r.ms and r.status in (Status.OK, Status.UNCHECKED)]
    if ranked:
        max(ranked, key=lambda r: r.pct).fastest = True
    return rows
