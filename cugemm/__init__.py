"""cugemm: a JIT-compiled zoo of CUDA GEMM kernels, each a named variant you can run and time.

    import cupy, cugemm
    a = cupy.random.randn(4096, 1024, dtype=cupy.float32)
    b = cupy.random.randn(1024, 4096, dtype=cupy.float32)
    c = cugemm.matmul(a, b)                                   # the fastest kernel that computes it
    c = cugemm.run("sgemm_t_8x8_sliced_k16_f32x4_bcf_dbuf", a, b)  # one named variant

Public API: matmul, linear, gemm, grouped_matmul, scaled_matmul, quantize_fp8, explain, tune, run, variants, get_variant,
compile, compile_plan, compile_source, Variant, CompileError, CompileReport, and the element types
float32, tfloat32, float16, bfloat16, float8_e4m3fn, float8_e5m2.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from . import arch as _arch
from .dtypes import BFLOAT16 as bfloat16
from .dtypes import FLOAT16 as float16
from .dtypes import FLOAT32 as float32
from .dtypes import TFLOAT32 as tfloat32
from .dtypes import FLOAT8_E4M3 as float8_e4m3fn
from .dtypes import FLOAT8_E5M2 as float8_e5m2
from .jit import CompileError, CompileReport, compile_source
from .launch import run
from . import fused as _fused
from . import serve as _serve
from .serve import explain
from . import tuner as _tuner
from .tuner import tune
from . import registry as _registry
from .registry import get_variant, variants
from .variant import Variant

__all__ = ["matmul", "linear", "gemm", "grouped_matmul", "scaled_matmul", "quantize_fp8", "explain", "tune", "run", "variants", "get_variant", "compile", "compile_plan", "compile_source", "warm_cache", "Variant",
           "CompileError", "CompileReport", "float32", "tfloat32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]
from .version import __version__  # noqa: E402


def matmul(a, b, out=None, *, variant=None, allow_tf32: bool = False, verbose: bool = False):
    """A @ B with the fastest registered kernel that computes it (torch.matmul's semantics).

    a, b        float32, float16 or bfloat16 GPU arrays of one type: CuPy arrays, torch tensors,
                objects with __cuda_array_interface__ or __dlpack__; 1-D, 2-D or batched (N-D,
                batch dimensions broadcast; a batch runs in one launch, every type and GPU:
                cugemm/batched.py)
    out         optional result array (CuPy or torch) of the product's shape and type
    variant     run this variant (a name or alias) instead of choosing; copies are still made
                where it needs them, and ValueError says why when it cannot compute the product
                (a batch that does not fold into one 2-D product takes a batched form, `*_batched*`)
    allow_tf32  float32 only: TF32 tensor-core variants may be chosen (about 3e-4 relative error)
    verbose     print the choice and the reasons (also: environment CUGEMM_EXPLAIN=1) the first
                time each problem is planned
    Returns `out` if given, else a new array: a torch tensor when an operand is one, else CuPy.
    torch tensors that require grad (with grad enabled) get a result with a grad_fn, and
    torch.compile traces the call as the op torch.ops.cugemm.matmul (cugemm/torch_op.py).
    """
    return _serve.dispatch(a, b, out, variant, allow_tf32, verbose, _torch_op)


def grouped_matmul(a, b, offsets=None, out=None, *, counts=None, variant=None, allow_tf32: bool = False):
    """Grouped GEMM in one launch (a mixture-of-experts layer): C[rows of g] = A[rows of g] @ B[g].

    a           (rows, K) with `offsets` (G,): group g is rows offsets[g - 1] .. offsets[g] - 1
                (torch._grouped_mm's contiguous layout; rows past offsets[G - 1] are not written);
                or (G, max_m, K) with `counts` (G,): group g is its first counts[g] rows (the masked
                layout; the rest of its rows are not written)
    b           (G, K, N), row-major matrices, or the (G, N, K) expert weights' transposed view
    offsets, counts  int32 (int64 is converted) on the GPU: never read on the host, so the call
                does not sync and is CUDA-graph capturable; out-of-order or out-of-range values are
                clamped (cugemm/grouped.py), never written outside the result
    out         optional C-contiguous result, (rows, N) or (G, max_m, N)
    variant     a grouped form (`*_grouped*`) to run instead of the chosen one
    allow_tf32  float32 operands multiplied in TF32 (fp32 sums): float32 needs it
    fp16 / bf16 (float32 with allow_tf32), CuPy arrays or torch CUDA tensors, on sm_90 (H100, H200). torch.compile traces it
    as torch.ops.cugemm.grouped_matmul, which autograd records too (dA by the grouped kernel, dB per
    group: the contiguous layout's dB reads the offsets on the host).
    """
    from . import grouped

    return grouped.grouped_matmul(a, b, offsets, out, counts=counts, variant=variant, allow_tf32=allow_tf32,
                                  op=_grouped_op)


def scaled_matmul(a, b, scale_a, scale_b, out_dtype="bfloat16", bias=None, out=None, *, use_fast_accum=False,
                  variant=None, check_scales: bool = True):
    """FP8: (A * scale_a) @ (B * scale_b) (+ bias) in one launch, torch._scaled_mm's conventions.

    a, b        (M, K) and (K, N) float8_e4m3fn / float8_e5m2 (not both e5m2): CuPy arrays or torch CUDA
                tensors; B is read in place as the N x K memory of W when b = W.T (other layouts, K %
                16 != 0 and misaligned rows are copied, so any shape computes)
    scale_a, scale_b  float32 on the GPU; their shapes choose the mode: one element each
                (per-tensor), (M, 1) and (1, N) (per-row / per-column), or (M, ceil(K/128)) and
                (ceil(K/128), ceil(N/128)) (1 x 128 blocks of A, 128 x 128 blocks of B; fp32 promotion
                of every 128-deep partial sum)
    out_dtype   bfloat16 (default), float16 or float32; bias: (N,) added after the scales; a fresh
                result of an N whose rows are not 16-byte multiples is a view of padded rows
    use_fast_accum  per-tensor / per-row scales: sum all of K in the FP8 tensor cores (faster, an
                error growing with K) instead of promoting every 128-deep partial sum into fp32
    check_scales  read the scales and raise ValueError on NaN / Inf (one device sync; False skips it)
    sm_90 (H100, H200). cugemm.quantize_fp8 makes the operands and scales. torch.compile traces it as
    torch.ops.cugemm.scaled_matmul (no autograd, as torch._scaled_mm). Details: cugemm/scaled.py.
    """
    from . import scaled

    return scaled.scaled_matmul(a, b, scale_a, scale_b, out_dtype, bias, out, use_fast_accum=use_fast_accum,
                                variant=variant, check_scales=check_scales, op=_scaled_op)


def quantize_fp8(x, block="tensor", dtype="float8_e4m3fn"):
    """(q, scale): x (R, C) quantised to an 8-bit float with one float32 scale per block (x ~ q *
    scale): block 'tensor', 'row', 'col' or (rows, cols), e.g. (1, 128) for activations and (128, 128)
    for weights; scale shapes are those cugemm.scaled_matmul takes. Details: cugemm/quantize.py."""
    from . import quantize

    return quantize.quantize_fp8(x, block, dtype)


def _scaled_op(a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum=False):
    """torch.ops.cugemm.scaled_matmul (registered on first use): what torch.compile traces."""
    from . import torch_op

    return torch_op.scaled_matmul(a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum)


def _grouped_op(a, b, ends, masked, allow_tf32=False):
    """torch.ops.cugemm.grouped_matmul (registered on first use): what torch.compile traces."""
    from . import torch_op

    return torch_op.grouped_matmul(a, b, ends, masked, allow_tf32)


_serve.AUTOTUNE = _tuner.autotune  # CUGEMM_AUTOTUNE=1: a new shape bucket is timed on its first use


def linear(x, weight, bias=None, activation=None, residual=None, *, aux: bool = False):
    """act(x @ weight.T + bias) + residual in one kernel where one computes it (F.linear's layout:
    x (..., K), weight (N, K), bias (N,), residual of the result's shape). activation: None,
    'relu', 'gelu' (erf), 'gelu_tanh', 'silu'; aux=True also returns the pre-activation. CuPy
    arrays or torch tensors (autograd, torch.compile, CUDA graphs). See cugemm/fused.py."""
    return _fused.linear(x, weight, bias, activation, residual, aux=aux, op=_torch_linear)


def gemm(a, b, c=None, alpha=1.0, beta=0.0, out=None):
    """alpha * a @ b + beta * c with BLAS semantics (beta = 0 never reads c; out=c updates c in
    place), the epilogue inside the GEMM kernel where one computes it. See cugemm/fused.py."""
    return _fused.gemm(a, b, c, alpha, beta, out, op=_torch_gemm)


def _torch_linear(*args):
    from . import torch_op

    return torch_op.linear(*args)


def _torch_gemm(*args):
    from . import torch_op

    return torch_op.gemm(*args)


def _torch_op(a, b, allow_tf32=False):
    """torch.ops.cugemm.matmul (registered on first use): the calls autograd or torch.compile see."""
    from . import torch_op

    return torch_op.matmul(a, b, allow_tf32=allow_tf32)


def default_arch() -> str:
    """The current GPU's arch ('sm_90') when a GPU is present, else 'sm_90'."""
    from . import toolkit

    return f"sm_{toolkit.device_cc()}" if toolkit.have_gpu() else "sm_90"


def _select(names) -> tuple[list, bool]:
    """(variants, named explicitly) for None (all), a glob string, or a list of names."""
    if names is None:
        return variants(), False
    if isinstance(names, str):
        chosen = variants(names)
        if not chosen:
            raise KeyError(f"no cugemm variant matches {names!r} (python -m cugemm list shows them)")
        return chosen, False
    return [get_variant(n) for n in names], True


def compile_plan(names=None, arch: str | None = None) -> tuple[list, list]:
    """What `compile` would do on a chip: ([(variant, target)], [(variant, reason it does not apply)]).

    The arch names a chip ('sm_89', 'sm89', '89', '8.9'; default: this GPU, else sm_90): each
    variant that can run there compiles for that chip (a variant claiming sm_80 compiles for sm_89
    as sm_89 code; a Hopper-only variant for sm_90a); the others are listed with the reason."""
    # only the chips cugemm compiles for (cugemm.arch.chip: one line listing them otherwise)
    chip = _registry.chip(arch) if arch is not None else _registry.chip(default_arch(), "this GPU's arch")
    chosen, _ = _select(names)
    jobs, skipped = [], []
    for v in chosen:
        try:
            jobs.append((v, _arch.compile_target(v, chip.cc)))
        except ValueError as e:
            skipped.append((v, str(e)))
    return jobs, skipped


def warm_cache(jobs) -> int:
    """Load each (variant, target) whose target is this GPU's chip through CuPy, the way cugemm.run
    compiles it, so that CuPy's disk cache holds it and a later process's first run() call skips
    NVRTC. Returns how many were loaded (0 without a GPU)."""
    from . import jit, toolkit

    if not toolkit.have_gpu():
        return 0
    cc = toolkit.device_cc()
    mine = [v for v, target in jobs if _arch.parse(target).cc == cc]
    for v in mine:
        jit.get_function(v)
    return len(mine)


def compile(names=None, arch: str | None = None, *, workers: int = 2, warm: bool = True) -> list[CompileReport]:
    """Compile variants offline through NVRTC (no GPU needed) and return their ptxas reports.

    names  None (every variant), a glob string ('sgemm_t_8x8*'), or a list of names
    arch   the chip, see compile_plan; ValueError (naming the chips cugemm compiles for) for any
           other. Variants that cannot run on it are skipped when chosen by glob (compile_plan
           lists them), and raise ValueError when named explicitly.
    warm   on a GPU machine compiling for its own chip, also load each variant through CuPy
           (warm_cache), so cugemm.run's first call finds it in CuPy's disk cache.
    Raises CompileError (variant name + NVRTC log) on the first failure.
    """
    jobs, skipped = compile_plan(names, arch)  # the arguments are checked before CuPy is asked for
    try:
        from . import jit
        from cupy.cuda import nvrtc  # noqa: F401
    except ImportError:
        raise ImportError("cugemm.compile needs CuPy's NVRTC: pip install 'cugemm[cuda13]' (or "
                          "'cugemm[cuda12]')", name="cupy") from None
    if skipped and not (names is None or isinstance(names, str)):
        raise ValueError(skipped[0][1])
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        reports = list(pool.map(lambda job: jit.compile_offline(*job), jobs))
    if warm:
        warm_cache(jobs)
    return reports
