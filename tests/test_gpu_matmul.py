"""cugemm.matmul on a GPU: correct on a grid of random shapes in every dtype and layout.

240 products with each dimension drawn log-uniformly from 1 to 8192 (float16, bfloat16, float32,
float32 with TF32 allowed; A and B row-major, transposed views, padded rows, misaligned pointers;
2-D, batched and broadcast, 1-D; CuPy and torch), each against the float64 reference of the same
inputs with the tolerance of cugemm.accuracy for the type the multiplies see, the output poisoned
with NaN first whenever it is passed in.
"""
from __future__ import annotations

import math
import random

import pytest

import cugemm
from cugemm import accuracy, testing

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

DTYPES = ("float16", "bfloat16", "float32", "tf32")
LAYOUTS = ("row,row", "row,col", "col,row", "col,col", "padded,row", "row,padded", "offset,offset")
MAX_WORK = 2 ** 34  # M * N * K per case (the float64 reference must stay quick)


def _dim(rng):
    return max(1, min(8192, int(round(math.exp(rng.uniform(0, math.log(8192)))))))


def _cases(n=240, seed=13):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        while True:
            M, N, K = _dim(rng), _dim(rng), _dim(rng)
            if M * N * K <= MAX_WORK:
                break
        kind = "2d"
        if i % 8 == 3:
            kind = "batched"
        elif i % 8 == 5:
            kind = "broadcast"
        elif i % 24 == 7:
            kind = "vector"
        out.append((i, DTYPES[i % 4], LAYOUTS[(i // 4) % len(LAYOUTS)], kind, M, N, K,
                    "torch" if i % 6 == 1 else "cupy", i % 2 == 0))
    # named odd and skinny shapes, besides the random ones
    out += [(1000, "float16", "row,row", "2d", 4095, 4097, 1023, "cupy", True),
            (1001, "bfloat16", "row,col", "2d", 16, 8192, 8192, "torch", False),
            (1002, "float16", "row,col", "2d", 1, 4096, 11008, "cupy", True),
            (1003, "float32", "row,row", "2d", 4095, 4097, 1023, "cupy", False),
            (1004, "bfloat16", "col,col", "batched", 3, 130, 260, "cupy", True)]
    return out


CASES = _cases()


def _operand(x, layout, rng_offset=1):
    """x (a fresh row-major CuPy array) re-laid: 'col' a transposed view, 'padded' rows with spare
    elements, 'offset' a view starting one element into its buffer (2- or 4-byte aligned only)."""
    if x.ndim < 2 and layout != "offset":
        return x
    if layout == "col":
        return cupy.ascontiguousarray(x.swapaxes(-1, -2)).swapaxes(-1, -2)
    if layout == "padded":
        buf = cupy.empty(x.shape[:-1] + (x.shape[-1] + 8,), dtype=x.dtype)
        view = buf[..., :x.shape[-1]]
        view.view(cupy.uint16 if x.itemsize == 2 else cupy.uint32)[...] = \
            x.view(cupy.uint16 if x.itemsize == 2 else cupy.uint32)
        return view
    if layout == "offset":
        flat = cupy.empty(x.size + rng_offset, dtype=x.dtype)
        view = flat[rng_offset:].reshape(x.shape)
        view.view(cupy.uint16 if x.itemsize == 2 else cupy.uint32)[...] = \
            x.view(cupy.uint16 if x.itemsize == 2 else cupy.uint32)
        return view
    return x


def _random(dtype, shape):
    return testing.cast(cupy.random.standard_normal(shape, dtype=cupy.float32), dtype)


def _reference(a, b):
    return cupy.matmul(testing.to_float64(a), testing.to_float64(b))


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-{c[3]}-{c[4]}x{c[5]}x{c[6]}-{c[7]}")
def test_matmul_random_shapes(case):
    i, dtype, layouts, kind, M, N, K, api, give_out = case
    tf32 = dtype == "tf32"
    dt = "float32" if tf32 else dtype
    la, lb = layouts.split(",")
    batch_a, batch_b = (), ()
    if kind == "batched":
        batch_a = batch_b = (1 + i % 3,)
    elif kind == "broadcast":
        batch_a, batch_b = (2, 1 + i % 2), ()
    a0 = _random(dt, batch_a + (M, K))
    b0 = _random(dt, batch_b + (K, N))
    if kind == "vector":
        a0 = a0[0]
    a, b = _operand(a0, la), _operand(b0, lb)
    ref = _reference(a0, b0)
    out = None
    if give_out:
        out = testing.poisoned(ref.shape, dt) if ref.ndim >= 2 else None
    if api == "torch":
        torch = pytest.importorskip("torch")
        ta, tb = torch.from_dlpack(a), torch.from_dlpack(b)
        tout = torch.from_dlpack(out) if out is not None else None
        c = cugemm.matmul(ta, tb, out=tout, allow_tf32=tf32)
        assert isinstance(c, torch.Tensor) and c.dtype == ta.dtype and c.is_cuda
        if tout is not None:
            assert c is tout
        torch.cuda.current_stream().synchronize()
        c = cupy.from_dlpack(c)
    else:
        c = cugemm.matmul(a, b, out=out, allow_tf32=tf32)
        assert isinstance(c, cupy.ndarray)
        if out is not None:
            assert c is out
    assert c.shape == ref.shape and c.dtype == a0.dtype
    math_dtype = "tfloat32" if tf32 else dt
    err = accuracy.scaled_error(c, a0, b0, ref)
    assert accuracy.within(err, math_dtype, "float32"), (err, str(cugemm.explain(a, b, allow_tf32=tf32)))


def test_padding_is_bit_for_bit():
    """matmul's zero-padded / realigned workspace gives exactly what the same kernel gives on
    operands the user padded with zeros himself."""
    M, N, K = 4095, 4097, 1023
    a, b = _random("float16", (M, K)), _random("float16", (K, N))
    plan = cugemm.explain(a, b).plan
    assert plan.copies, "an unaligned shape needs a copy"
    c = cugemm.matmul(a, b)
    Kp, Np = -(-K // 8) * 8, -(-N // 8) * 8
    ap = cupy.zeros((M, Kp), dtype=a.dtype)
    ap[:, :K] = a
    bp = cupy.zeros((Kp, Np), dtype=b.dtype)
    bp[:K, :N] = b
    cp = cugemm.matmul(ap, bp, variant=plan.variant.name)
    assert bool(cupy.all(c.view(cupy.uint16) == cp[:, :N].view(cupy.uint16)))


def test_torch_keeps_bfloat16_and_its_stream():
    torch = pytest.importorskip("torch")
    s = torch.cuda.Stream()
    x = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(768, 1024, device="cuda", dtype=torch.bfloat16)
    with torch.cuda.stream(s):
        y = cugemm.matmul(x, w.T)  # the x @ W.T of a linear layer
    s.synchronize()
    assert y.dtype == torch.bfloat16 and y.shape == (512, 768)
    ref = x.double() @ w.double().T
    err = float((y.double() - ref).norm() / ref.norm())
    assert err < accuracy.tolerance("bfloat16", "float32")


def test_explain_names_the_choice_and_the_refusals():
    a, b = _random("float16", (64, 256)), _random("float16", (256, 128))
    text = str(cugemm.explain(a, b))
    assert "chosen:" in text and "refused:" in text


def test_bad_inputs_are_refused_with_the_rule():
    a16, b32 = _random("float16", (8, 8)), _random("float32", (8, 8))
    with pytest.raises(TypeError, match="one type"):
        cugemm.matmul(a16, b32)
    with pytest.raises(ValueError, match="inner dimensions"):
        cugemm.matmul(a16, _random("float16", (9, 8)))
    with pytest.raises(TypeError, match="host numpy"):
        cugemm.matmul(cupy.asnumpy(a16), a16)
    with pytest.raises(ValueError, match="M=300 is over"):
        cugemm.matmul(_random("float16", (300, 64)), _random("float16", (64, 64)),
                      variant=next(v.name for v in cugemm.variants("hgemm_skinny*")))


def test_second_call_takes_the_planned_path_and_stays_checked():
    """The fast path of a planned product gives the same bits, and an out that overlaps an input
    still goes through the checks (and is refused)."""
    a, b = _random("float16", (300, 256)), _random("float16", (256, 512))
    c1 = cugemm.matmul(a, b)
    c2 = cugemm.matmul(a, b)
    assert bool(cupy.all(c1.view(cupy.uint16) == c2.view(cupy.uint16)))
    buf = _random("float16", (300, 512))
    with pytest.raises(ValueError, match="overlaps"):
        cugemm.matmul(buf[:, :256], b, out=buf[:, :512])


# ---- the fused copy of a plan's operands (kernels/util/relayout.cu, one launch for A and B) ----------
def _bits(x):
    return x.view(cupy.uint16 if x.itemsize == 2 else cupy.uint32)


def _source(dtype, shape, kind):
    """A (rows, cols) source of random bits laid out as `kind`: 'row' (row-major), 'col' (a transposed
    view), 'offset' (row-major, starting one element into its buffer: every row misaligned),
    'strided' (every other row and column), 'reversed' (rows in reverse order: negative stride)."""
    r, c = shape
    size = 2 if dtype in ("float16", "bfloat16") else 4
    udt = cupy.uint16 if size == 2 else cupy.uint32
    bits = cupy.random.randint(0, 2 ** (8 * size) - 1, size=(2 * r + 1) * (2 * c + 1), dtype=cupy.int64)
    flat = bits.astype(udt).view(cugemm.dtypes.get(dtype).numpy)
    if kind == "row":
        return flat[:r * c].reshape(r, c)
    if kind == "col":
        return flat[:r * c].reshape(c, r).T
    if kind == "offset":
        return flat[1:1 + r * c].reshape(r, c)
    if kind == "strided":
        return flat[:4 * r * c].reshape(2 * r, 2 * c)[::2, ::2]
    if kind == "reversed":
        return flat[:r * c].reshape(r, c)[::-1]
    raise ValueError(kind)


def _check_copy(x, copy, layout, ld, dims):
    """`copy` (the dims-sized matrix the kernel reads) holds x's bits, zeros past them, and lies as
    the plan says: `layout`-major with leading dimension ld."""
    size = x.itemsize
    assert copy.shape == tuple(dims)
    assert copy.strides == ((ld * size, size) if layout == "row" else (size, ld * size))
    ref = cupy.zeros(dims, dtype=_bits(x).dtype)
    ref[:x.shape[0], :x.shape[1]] = _bits(x)
    assert bool(cupy.all(_bits(copy) == ref))


def _round(x, m):
    return -(-x // m) * m


# (name, dtype, (M, N, K), A kind, A copy layout, B kind, B copy layout, padded (Mp, Np, Kp) or None)
COPY_CASES = [
    ("fp16-odd-both", "float16", (4095, 4097, 1023), "row", "row", "row", "row", None),
    ("fp16-only-b", "float16", (256, 4097, 1023), "row", "", "row", "row", None),
    ("fp16-only-a", "float16", (333, 512, 1023), "offset", "row", "row", "", None),
    ("bf16-transposed", "bfloat16", (1000, 777, 515), "col", "row", "col", "row", None),
    ("fp16-into-col", "float16", (515, 333, 1000), "row", "col", "row", "col", None),
    ("fp16-zero-pad", "float16", (100, 37, 45), "row", "row", "col", "row", (128, 64, 48)),
    ("fp32-pad", "float32", (1023, 4097, 1000), "row", "row", "offset", "row", (1024, 4224, 1024)),
    ("fp32-transposed", "float32", (511, 300, 257), "col", "row", "row", "col", None),
    ("fp16-offset-both", "float16", (2047, 1025, 999), "offset", "row", "offset", "row", None),
    ("fp16-strided", "float16", (300, 200, 100), "strided", "row", "reversed", "row", (304, 208, 104)),
    ("fp32-one-column", "float32", (64, 1, 33), "row", "row", "row", "row", (64, 4, 36)),
]


@pytest.mark.parametrize("case", COPY_CASES, ids=lambda c: c[0])
def test_fused_copy_is_bit_for_bit(case):
    """cugemm.relayout's copy stage (both copies in one relayout launch) against a CuPy copy of the same
    bits: odd shapes, one operand or both, transposed / misaligned / strided / reversed sources,
    copies into a column-major layout, zero padding, 16- and 32-bit elements."""
    from cugemm import operand, relayout, select

    _, dtype, (M, N, K), ka, la, kb, lb, padded = case
    Mp, Np, Kp = padded or (M, N, K)
    a, b = _source(dtype, (M, K), ka), _source(dtype, (K, N), kb)
    vec = 16 // a.itemsize
    ld_a = _round(Kp if la == "row" else Mp, vec) if la else 0
    ld_b = _round(Np if lb == "row" else Kp, vec) if lb else 0
    v = next(v for v in cugemm.variants() if v.dtype_in == dtype)
    plan = select.Plan(v, copy_a=la, copy_b=lb, ld_a=ld_a, ld_b=ld_b, dims=(Mp, Np, Kp))
    stage = relayout.stage_for(plan, operand.describe(a, 'A', 't'), operand.describe(b, 'B', 't'),
                                cupy.cuda.runtime.getDevice())
    assert stage.by_kernel == (bool(la), bool(lb)) and not stage.by_array and stage.fn is not None
    a2, b2 = relayout.copies_cupy(plan, a, b)
    if la:
        _check_copy(a, a2, la, ld_a, (Mp, Kp))
    else:
        assert a2 is a
    if lb:
        _check_copy(b, b2, lb, ld_b, (Kp, Np))
    else:
        assert b2 is b


def test_copy_rows_not_16_byte_writable_fall_back_to_cupy():
    """A destination whose rows are not a multiple of 16 bytes (fp32 ld 1023) is CuPy's copy; the
    other operand of the same plan still goes through the kernel."""
    from cugemm import operand, relayout, select

    a, b = _source("float32", (300, 1023), "offset"), _source("float32", (1023, 129), "row")
    v = next(v for v in cugemm.variants() if v.dtype_in == "float32")
    plan = select.Plan(v, copy_a="row", copy_b="row", ld_a=1023, ld_b=132, dims=(300, 129, 1023))
    stage = relayout.stage_for(plan, operand.describe(a, 'A', 't'), operand.describe(b, 'B', 't'),
                                cupy.cuda.runtime.getDevice())
    assert stage.by_kernel == (False, True) and stage.by_array == (0,)
    a2, b2 = relayout.copies_cupy(plan, a, b)
    _check_copy(a, a2, "row", 1023, (300, 1023))
    _check_copy(b, b2, "row", 132, (1023, 129))


def test_single_relayout_matches_cupy():
    from cugemm import relayout

    x = _source("float16", (777, 1001), "offset")
    _check_copy(x, relayout.relayout_cupy(x, "row", 1008, (780, 1001)), "row", 1008, (780, 1001))
    _check_copy(x, relayout.relayout_cupy(x, "col", 784, (777, 1004)), "col", 784, (777, 1004))


def test_copy_plan_of_an_odd_shape_is_one_launch_and_exact():
    """4095x4097x1023 fp16 through matmul: both operands copied by the kernel in one launch, and the
    product (first call, then the planned path with the cached copy stage) bit for bit what the
    chosen kernel gives on copies the user padded himself with CuPy."""
    from cugemm import operand, relayout

    M, N, K = 4095, 4097, 1023
    a, b = _random("float16", (M, K)), _random("float16", (K, N))
    plan = cugemm.explain(a, b).plan
    assert plan.copy_a and plan.copy_b
    c1, c2 = cugemm.matmul(a, b), cugemm.matmul(a, b)
    stage = relayout.stage_for(plan, operand.describe(a, 'A', 't'), operand.describe(b, 'B', 't'),
                                cupy.cuda.runtime.getDevice())
    assert stage.by_kernel == (True, True) and not stage.by_array
    Mp, Np, Kp = plan.dims
    ap = cupy.zeros((Mp, plan.ld_a) if plan.copy_a == "row" else (Kp, plan.ld_a), dtype=a.dtype)
    bp = cupy.zeros((Kp, plan.ld_b) if plan.copy_b == "row" else (Np, plan.ld_b), dtype=b.dtype)
    av = ap[:, :Kp] if plan.copy_a == "row" else ap[:, :Mp].T
    bv = bp[:, :Np] if plan.copy_b == "row" else bp[:, :Kp].T
    _bits(av)[:M, :K] = _bits(a)
    _bits(bv)[:K, :N] = _bits(b)
    ref = cugemm.matmul(av, bv, variant=plan.variant.name)
    assert bool(cupy.all(_bits(c1) == _bits(ref[:M, :N]))) and bool(cupy.all(_bits(c2) == _bits(c1)))


@pytest.mark.parametrize("api", ["cupy", "torch"])
def test_named_variants_take_the_serving_path_and_stay_apart(api):
    """A named variant's later calls are served from the plan cache (the variant is part of the key):
    alternating two variants on the same operands, every result matches the reference."""
    names = ["hgemm_wgmma_m64n128k16_persistent_tma_store_stage6_bcol", "hgemm_wgmma_m64n64k16_small_m_stage12_bcol"]
    a0, w0 = _random("float16", (192, 512)), _random("float16", (384, 512))
    ref = cupy.matmul(testing.to_float64(a0), testing.to_float64(w0).T)
    if api == "torch":
        torch = pytest.importorskip("torch")
        a, b = torch.from_dlpack(a0), torch.from_dlpack(w0).T
    else:
        a, b = a0, w0.T
    for _ in range(3):
        for name in names:
            c = cugemm.matmul(a, b, variant=name)
            got = cupy.from_dlpack(c) if api == "torch" else c
            cupy.cuda.Device().synchronize()
            assert accuracy.within(accuracy.rel_error(got, ref), "float16", "float32"), name
