"""cugemm.scaled_matmul: FP8 products with scales, on the FP8 ladder (kernels/fp8_wgmma/, sm_90).

    qx, sx = cugemm.quantize_fp8(x, block=(1, 128))       # activations (M, K): 1 x 128 blocks
    qw, sw = cugemm.quantize_fp8(w, block=(128, 128))     # weights W (N, K): 128 x 128 blocks
    y = cugemm.scaled_matmul(qx, qw.T, sx, sw.T)          # x @ W.T in bf16

torch._scaled_mm's conventions: a (M, K) and b (K, N) of 8-bit floats (float8_e4m3fn, float8_e5m2;
not both e5m2), float32 scales on the GPU whose shapes select the mode:

    per-tensor  scale_a and scale_b one element each (shape (), (1,) or (1, 1))
    per-row     scale_a (M, 1) or (M,), scale_b (1, N) or (N,): a scale per row of A, per column of B
    block       scale_a (M, ceil(K / 128)): a scale per 1 x 128 block of A along K, and
                scale_b (ceil(K / 128), ceil(N / 128)): per 128 x 128 block of B (any strides)

C[m, n] = sum_k A[m, k] scale_a(m, k) B[k, n] scale_b(k, n) (+ bias[n]), accumulated in fp32 and
rounded to out_dtype (bfloat16, float16 or float32). The per-tensor and per-row rungs sum all of K in
the tensor cores and scale in the epilogue; the block rung promotes each 128-deep partial sum into
fp32 registers with its two scales (the FP8 tensor cores' own sums keep fewer bits: docs/fp8_wgmma.md).

Any shape: the kernels read A row-major and B as the N x K memory of W (b = W.T, the layout
torch._scaled_mm asks for) in place when their rows are 16-byte aligned, and write a row-major C of
any row stride in place (TMA stores, or the consumers' own where C's rows are not 16-byte aligned);
other layouts and K not a multiple of 16 in dense rows (zero padding, which adds nothing) go through
copies, so shapes cuBLASLt refuses (4095 x 4097 x 1023) compute. Odd shapes cost their padding, not
copies, when the rows are padded (to 128-byte multiples, which TMA reads fastest): quantize_fp8 makes its q so, and a fresh result of
such an N is a view of a buffer with padded rows (out= a dense C: the kernel's own stores, slower). Scales: a NaN or Inf scale raises
ValueError before anything runs (check_scales=True reads them: one device sync; pass False to skip,
e.g. inside a CUDA-graph capture, where a non-finite scale then gives non-finite results where it
applies). Operands are CuPy arrays (ml_dtypes float8 dtypes) or torch CUDA tensors; the result is of
the operands' library, on its current stream. torch.compile traces it as torch.ops.cugemm.scaled_matmul.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

from . import dtypes, launch, operand, quantize, serve, tma_args
from .ints import cdiv
from .prepared import BASES, BIAS, SCALE_A, SCALE_B, Prepared, sentinel
from .prepared import A as _A
from .prepared import B as _B
from .prepared import C as _C
from .grouped import rows_fit  # a 2-D record whose rows TMA reads in place
from .registry import get_variant

WHO = "cugemm.scaled_matmul"
OUT_DTYPES = ("bfloat16", "float16", "float32")
BLOCK = 128         # the k extent of a block scale (and of a B block's columns)
LINE = 16           # TMA: rows start 16-byte aligned
INT32_MAX = 2**31 - 1
_READY: dict = {}
_FAST: dict = {}      # the serving path: call key -> (ScaledReady, device, result shape)
_LOADED: set = set()  # (variant, device) whose kernel is loaded (no compiling under a graph capture)
_lock = threading.Lock()
MAX_READY = 512


# ---- the scaling mode ------------------------------------------------------------------------------
def scale_mode(M: int, N: int, K: int, sa_shape: tuple, sb_shape: tuple) -> str:
    """'tensor', 'row' or 'block' from the scales' shapes (module docstring); ValueError naming the
    shapes each mode takes otherwise."""
    sa_shape, sb_shape = tuple(sa_shape), tuple(sb_shape)
    if int(np.prod(sa_shape)) == 1 and int(np.prod(sb_shape)) == 1 and len(sa_shape) <= 2 and len(sb_shape) <= 2:
        return "tensor"
    if sa_shape in ((M, 1), (M,)) and sb_shape in ((1, N), (N,)):
        return "row"
    kb = cdiv(K, BLOCK)
    if sa_shape == (M, kb) and sb_shape == (kb, cdiv(N, BLOCK)):
        return "block"
    raise ValueError(
        f"{WHO}: scales of shapes {sa_shape} and {sb_shape} match no scaling mode for a {M} x {K} A and a "
        f"{K} x {N} B; per-tensor: one element each; per-row: ({M}, 1) and (1, {N}); block: ({M}, {kb}) "
        f"(1 x {BLOCK} blocks of A) and ({kb}, {cdiv(N, BLOCK)}) ({BLOCK} x {BLOCK} blocks of B)")


def choose(mode: str, M: int, N: int, K: int, ta: str, tb: str, out: str, sms: int, fast: bool = False) -> str:
    """The variant for a product: the rung of `mode` (fast: rungs 1-2, which sum K in the tensor
    cores; block scales always promote) in the operands' and output's types. Rungs 1-2: their largest
    tiles that make at least a round of the SMs, else their smallest. Rung 3: the tile of the least
    estimated time, rounds of the SMs (a persistent block takes its tiles in turn) x a tile's work /
    its rate (cugemm/families/fp8_wgmma.py: PROMOTED_RATES; 64-row tiles, one consumer, for products
    of few rows)."""
    from .families import fp8_wgmma as fam

    fast = fast and mode != "block"
    if fast:
        tiles = fam.FAST_TILES
        pick = next((t for t in tiles if cdiv(M, t[0]) * cdiv(N, t[1]) >= sms), tiles[-1])
    else:
        def estimate(t):
            return cdiv(cdiv(M, t[0]) * cdiv(N, t[1]), sms) * t[0] * t[1] / fam.PROMOTED_RATES[t[:2]]

        pick = min(fam.PROMOTED_TILES, key=estimate)
    return fam.variant_name(mode + ("_fastacc" if fast else ""), *pick, ta, tb, out)


# ---- the prepared launch -----------------------------------------------------------------------------
class ScaledReady:
    """One FP8 product prepared for raw pointers (cugemm.prepared): its variant and launch, tensor
    maps and scale addresses at sentinel bases, re-pointed per call."""

    __slots__ = ("variant", "gemm")

    def __init__(self, v, A: operand.Operand, B: operand.Operand, C: operand.Operand, M: int, N: int, K: int,
                 strides: tuple, dev: int):
        fn, info, _ = launch.loaded(v, dev)
        # C's pointer keeps its alignment (its map or the consumers' stores: tma_args.maps_fp8)
        recs = [X._replace(ptr=sentinel(k) + (X.ptr & 15 if k == _C else 0)) for X, k in ((A, _A), (B, _B), (C, _C))]
        maps = tma_args.maps_fp8(v, *recs, M, N, K)  # fresh maps: Prepared copies their bytes
        sa, sb, bias = (np.uint64(sentinel(k)) for k in (SCALE_A, SCALE_B, BIAS))
        if v.template == "fp8_wgmma_promoted":
            sa_m, sa_k, sb_k, sb_n = (np.int32(s) for s in (strides or (0, 0, 0, 0)))
            scales = (sa, sa_m, sa_k, sb, sb_k, sb_n, bias)
        else:
            scales = (sa, sb, bias)
        args = (np.uint64(sentinel(_A)), np.uint64(sentinel(_B)), np.uint64(sentinel(_C)),
                np.int32(M), np.int32(N), np.int32(K)) + maps + scales
        self.variant = v
        self.gemm = Prepared(fn.kernel.ptr, v.grid(M, N, K, info), v.block, v.smem_dynamic, args, v.pdl)

    def launch(self, stream: int, a: int, b: int, c: int, sa: int, sb: int, bias: int) -> None:
        bases = [0] * BASES
        bases[_A], bases[_B], bases[_C], bases[SCALE_A], bases[SCALE_B], bases[BIAS] = a, b, c, sa, sb, bias
        self.gemm.launch(bases, stream)


def ready(name: str, A, B, C, M: int, N: int, K: int, strides: tuple, dev: int) -> ScaledReady:
    """The prepared launch of variant `name` for operands of these geometries (cached: pointers do
    not matter, their records' strides do)."""
    key = (name, dev, M, N, K, A.strides, B.strides, C.strides, C.ptr & 15, strides)
    r = _READY.get(key)
    if r is None:
        r = ScaledReady(get_variant(name), A, B, C, M, N, K, strides, dev)
        with _lock:
            if len(_READY) >= MAX_READY:
                _READY.clear()
            _READY[key] = r
    return r


# ---- operands ------------------------------------------------------------------------------------------
def _kind(x) -> str:
    return operand.library_of(x, WHO)


def _device_of(x, kind: str) -> int:
    return x.get_device() if kind == "torch" else x.device.id


def _bytes(x, kind: str):
    """x's memory as unsigned bytes (an 8-bit float array: copies need no float8 arithmetic)."""
    if kind == "torch":
        return x.view(sys.modules["torch"].uint8)
    import cupy

    return x.view(cupy.uint8)


def _zeros_u8(kind: str, shape: tuple, dev: int):
    if kind == "torch":
        torch = sys.modules["torch"]
        return torch.zeros(shape, dtype=torch.uint8, device=torch.device("cuda", dev))
    import cupy

    return cupy.zeros(shape, dtype=cupy.uint8)


def _k_major(kind: str, x, X: operand.Operand, Kp: int, dev: int):
    """(array, record) of x (rows, K), 8-bit, as rows TMA reads: x itself when its rows are 16-byte
    aligned (quantize_fp8 pads them so), else the first K columns of a copy in rows of Kp bytes (the
    copy engine zero-fills past K either way)."""
    rows, K = X.shape
    if rows_fit(X):
        return x, X
    buf = _zeros_u8(kind, (rows, Kp), dev)
    buf[:, :K] = _bytes(x, kind)
    view = buf.view(_dtype_of(kind, X.dtype))[:, :K]
    return view, operand.describe(view, "copy", WHO)


def _dtype_of(kind: str, dt: dtypes.DType):
    if kind == "torch":
        torch = sys.modules["torch"]
        return getattr(torch, dt.name)
    return dt.numpy


def _as_float32_vector(kind: str, x, what: str, n: int):
    """A bias (n,) as float32 dense on the GPU (the kernels read fp32 biases)."""
    shape = tuple(x.shape)
    if shape != (n,):
        raise ValueError(f"{WHO}: bias has shape {shape}; it adds one value per column of C: ({n},)")
    if kind == "torch":
        torch = sys.modules["torch"]
        if x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
            raise TypeError(f"{WHO}: {what} is {x.dtype}; pass float32, float16 or bfloat16")
        return x.to(torch.float32).contiguous()
    import cupy

    d = dtypes.from_numpy(x.dtype)
    if d is None or d.name not in ("float32", "float16", "bfloat16"):
        raise TypeError(f"{WHO}: {what} is {x.dtype}; pass float32, float16 or bfloat16")
    if d.name == "bfloat16":  # through its bits: CuPy need not know bfloat16 arithmetic
        u = cupy.ascontiguousarray(x).view(cupy.uint16).astype(cupy.uint32) << 16
        return u.view(cupy.float32)
    return cupy.ascontiguousarray(x, dtype=cupy.float32)


def _check_scale(kind: str, s, what: str):
    """A scale array: float32, on the GPU; returns its record."""
    if _kind(s) != kind:
        raise TypeError(f"{WHO}: {what} is a {_kind(s)} array and A a {kind} one; pass one library's arrays")
    S = operand.describe(s, what, WHO)
    if S.dtype is None or S.dtype.name != "float32":
        raise TypeError(f"{WHO}: {what} is {operand.dtype_name(S)}; scales are float32")
    return S


def _finite(kind: str, s) -> bool:
    if kind == "torch":
        return bool(sys.modules["torch"].isfinite(s).all())
    import cupy

    return bool(cupy.isfinite(s).all())


def _check_finite(lib, kind: str, stream: int, sa, sb) -> None:
    """ValueError when a scale is NaN or infinite (a device sync to read them), except while `stream`
    captures a CUDA graph, where nothing can be read back."""
    if not lib.capturing(stream) and not (_finite(kind, sa) and _finite(kind, sb)):
        raise ValueError(f"{WHO}: a scale is NaN or infinite")


# ---- the product -----------------------------------------------------------------------------------------
def scaled_matmul(a, b, scale_a, scale_b, out_dtype="bfloat16", bias=None, out=None, *, use_fast_accum=False,
                  variant=None, check_scales: bool = True, op=None):
    """The scaled FP8 product (module docstring). use_fast_accum: per-tensor and per-row scales on
    rungs 1-2 (K summed in the tensor cores: faster, larger error); block scales always promote.
    `variant`: run this FP8 variant (its rung must be the scales' mode, its types the operands').
    `op`: the registered torch operator (cugemm.torch_op.scaled_matmul), used while torch.compile traces."""
    kind = _kind(a)
    torch = sys.modules.get("torch") if kind == "torch" else None
    out_name = dtypes.get(str(out_dtype).replace("torch.", "")).name
    if out_name not in OUT_DTYPES:
        raise TypeError(f"{WHO}: out_dtype {out_dtype}; the FP8 rungs write {', '.join(OUT_DTYPES)}")
    if torch is not None and torch.compiler.is_compiling() and op is not None:
        r = op(a, b, scale_a, scale_b, bias, getattr(torch, out_name), use_fast_accum)
        if out is not None:
            out.copy_(r)
            return out
        return r
    lib = serve.library(kind)
    # the serving path: a call planned before whose operands the kernel reads in place
    fast = _fast_key(kind, a, b, scale_a, scale_b, bias, out_name, use_fast_accum, variant) if out is None else None
    hit = _FAST.get(fast) if fast is not None else None
    if hit is not None:
        r, dev, shape = hit
        stream = lib.stream(dev)
        if check_scales:
            _check_finite(lib, kind, stream, scale_a, scale_b)
        c = _empty(kind, shape, out_name, dev)
        r.launch(stream, lib.ptr(a), lib.ptr(b), lib.ptr(c), lib.ptr(scale_a), lib.ptr(scale_b), 0)
        return c
    if _kind(b) != kind:
        raise TypeError(f"{WHO}: B is a {_kind(b)} array and A a {kind} one; pass one library's arrays")
    A, B = operand.describe(a, "A", WHO), operand.describe(b, "B", WHO)
    for what, X in (("A", A), ("B", B)):
        if X.dtype is None or not X.dtype.fp8:
            raise TypeError(f"{WHO}: {what} is {operand.dtype_name(X)}; scaled_matmul multiplies 8-bit floats "
                            "(float8_e4m3fn, float8_e5m2: cugemm.quantize_fp8 makes them)")
        if len(X.shape) != 2:
            raise ValueError(f"{WHO}: {what} must be 2-D, got shape {X.shape}")
    if A.dtype.name == B.dtype.name == "float8_e5m2":
        raise TypeError(f"{WHO}: A and B are both float8_e5m2; one of them must be float8_e4m3fn (as in cuBLASLt)")
    (M, K), (K2, N) = A.shape, B.shape
    if K != K2:
        raise ValueError(f"{WHO}: inner dimensions differ: A is {M}x{K}, B is {K2}x{N}")
    SA, SB = _check_scale(kind, scale_a, "scale_a"), _check_scale(kind, scale_b, "scale_b")
    mode = scale_mode(M, N, K, SA.shape, SB.shape)
    dev = _device_of(a, kind)
    for what, x in (("B", b), ("scale_a", scale_a), ("scale_b", scale_b)) + ((("bias", bias),) if bias is not None else ()):
        if _device_of(x, kind) != dev:
            raise ValueError(f"{WHO}: A is on device {dev} and {what} on device {_device_of(x, kind)}; "
                             "put them on one GPU")
    if bias is not None:
        bias = _as_float32_vector(kind, bias, "bias", N)
    shape = (M, N)
    if out is not None:
        O = operand.describe(out, "out", WHO)
        if O.dtype is None or O.dtype.name != out_name or tuple(O.shape) != shape:
            raise ValueError(f"{WHO}: out is {operand.dtype_name(O)} {tuple(O.shape)}; the product is {out_name} "
                             f"{shape}")
    if check_scales:
        _check_finite(lib, kind, lib.stream(dev), scale_a, scale_b)
    if max(M * K, N * K, M * N) > INT32_MAX:
        raise ValueError(f"{WHO}: a {M} x {K} x {N} product has a matrix of more than 2^31 - 1 elements")
    result = out if out is not None else _empty(kind, shape, out_name, dev)
    if M == 0 or N == 0:
        return result
    if K == 0:  # an empty sum: the bias, or zeros
        if bias is not None:
            result[...] = bias[None, :] if kind == "cupy" else bias.unsqueeze(0)
        else:
            result[...] = 0
        return result
    # scales as the kernels read them: per-row vectors dense; block grids with any strides
    sa, sb = scale_a, scale_b
    strides = ()
    if mode == "row":
        sa = _dense_vector(kind, scale_a, M)
        sb = _dense_vector(kind, scale_b, N)
    elif mode == "block":
        strides = (SA.strides[0] // 4, SA.strides[1] // 4, SB.strides[0] // 4, SB.strides[1] // 4)
    # operands as the kernels read them: A's rows and B's columns (W's rows) 16-byte aligned (copies
    # in rows of Kp bytes where not: quantize_fp8's row length, 128-byte multiples, which TMA reads fastest)
    Kp = quantize.row_length(K)
    a2, A2 = _k_major(kind, a, A, Kp, dev)
    bt = b.t() if kind == "torch" else b.T  # the N x K memory of W when b = W.T
    w, W = _k_major(kind, bt, operand.describe(bt, "B", WHO), Kp, dev)
    B2 = operand.describe(w.t() if kind == "torch" else w.T, "B", WHO)
    # C as the kernels write it: row-major, any row stride (TMA stores where rows and pointer are
    # 16-byte aligned, else the consumers' own stores); other layouts through a copy
    osize = dtypes.get(out_name).itemsize
    C = operand.describe(result, "out", WHO)
    direct = (N == 1 or C.strides[1] == osize) and (M == 1 or C.strides[0] >= N * osize) and C.ptr % osize == 0
    c = result if direct else _empty(kind, shape, out_name, dev)
    C2 = operand.describe(c, "out", WHO)
    if variant is None:
        name = choose(mode, M, N, K, A.dtype.name, B.dtype.name, out_name, _sms(dev), use_fast_accum)
    else:
        name = _check_variant(variant, mode, A.dtype.name, B.dtype.name, out_name)
    if (name, dev) not in _LOADED:  # loading a kernel cannot happen inside a CUDA-graph capture
        serve.not_capturing(lib, dev, f"FP8 {M}x{N}x{K}", WHO)
    r = ready(name, A2, B2, C2, M, N, K, strides, dev)
    _LOADED.add((name, dev))
    r.launch(lib.stream(dev), lib.ptr(a2), lib.ptr(w), lib.ptr(c), lib.ptr(sa), lib.ptr(sb),
             lib.ptr(bias) if bias is not None else 0)
    if not direct:
        result[...] = c[:, :N]
    # in place, nothing copied, no bias: later calls of this geometry take the serving path above
    if (fast is not None and a2 is a and bt is w and c is result and bias is None
            and lib.ptr(sa) == lib.ptr(scale_a) and lib.ptr(sb) == lib.ptr(scale_b)):
        with _lock:
            if len(_FAST) >= MAX_READY:
                _FAST.clear()
            _FAST[fast] = (r, dev, shape)
    return result


def _fast_key(kind: str, a, b, sa, sb, bias, out_name: str, fast_accum: bool, variant) -> tuple | None:
    """The serving path's key: everything the checks and the plan read off the operands and scales
    (types, shapes, strides, devices, 16-byte alignment of A and B) and the flags; None where the
    call needs the full path (a bias)."""
    if bias is not None:
        return None
    if kind == "torch":
        return (kind, a.dtype, b.dtype, sa.dtype, sb.dtype, a.shape, a.stride(), b.shape, b.stride(), sa.shape,
                sa.stride(), sb.shape, sb.stride(), a.get_device(), b.get_device(), sa.get_device(),
                sb.get_device(), a.data_ptr() & 15, b.data_ptr() & 15, out_name, fast_accum, variant)
    return (kind, a.dtype, b.dtype, sa.dtype, sb.dtype, a.shape, a.strides, b.shape, b.strides, sa.shape, sa.strides,
            sb.shape, sb.strides, a.device.id, b.device.id, sa.device.id, sb.device.id, a.data.ptr & 15,
            b.data.ptr & 15, out_name, fast_accum, variant)


def _dense_vector(kind: str, s, n: int):
    """A per-row / per-column scale vector as n dense floats (a copy when its stride is not 1)."""
    flat = s.reshape(-1)
    if n > 1 and (flat.stride(0) if kind == "torch" else flat.strides[0] // 4) != 1:
        flat = flat.contiguous() if kind == "torch" else flat.copy()
    return flat


def padded_cols(N: int, itemsize: int) -> int:
    """The row length, in elements, of a result's buffer: N rounded up to 16 bytes (the kernel's TMA
    stores; the fake implementation of the torch operator gives the same strides)."""
    return cdiv(N * itemsize, LINE) * LINE // itemsize


def _empty(kind: str, shape: tuple, name: str, dev: int):
    """A fresh result: row-major, its rows 16 bytes apart (a view of a buffer whose rows are padded
    to 16 bytes where N * itemsize is not a multiple of 16, as quantize_fp8's q: the kernel's TMA
    stores write it; a dense C of such an N is written by the kernel's own stores, slower)."""
    M, N = shape
    Np = padded_cols(N, dtypes.get(name).itemsize)
    if kind == "torch":
        torch = sys.modules["torch"]
        buf = torch.empty((M, Np), dtype=getattr(torch, name), device=torch.device("cuda", dev))
    else:
        import cupy

        buf = cupy.empty((M, Np), dtype=dtypes.get(name).numpy)
    return buf if Np == N else buf[:, :N]


def _sms(dev: int) -> int:
    from . import device

    return device.get(dev).sms


def _check_variant(name, mode: str, ta: str, tb: str, out: str) -> str:
    v = get_variant(name)
    p = v.param_dict
    rung = ("tensor", "row", "block")[p["SCALE"]] if "SCALE" in p else "row" if p.get("ROW") else "tensor"
    if v.family != "fp8_wgmma" or rung != mode or (v.dtype_in, v.dt_b.name, v.dtype_out) != (ta, tb, out):
        raise ValueError(f"{WHO}: variant {v.name} is not the {mode}-scaled FP8 rung for {ta} x {tb} -> {out}")
    return v.name
