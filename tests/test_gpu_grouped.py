"""Grouped products in one launch (cugemm.grouped_matmul, rung 7's GROUPED form) on a GPU.

Every case multiplies fresh random operands (cugemm.testing.grouped_case) against the float64
reference of each group, with cugemm.accuracy's tolerance, into an output poisoned with NaN: the
rows a group owns must match, every other row must still be NaN (never written), and where the
output is a view inside a larger poisoned buffer the margins must stay poisoned. Cases: every grouped
form in both B layouts; groups of 0, 1, 7, 577 rows and tile multiples; the masked layout; offsets
that decrease or pass A's rows and counts out of range (clamped, cugemm/grouped.py); int64 offsets;
torch tensors against torch._grouped_mm; CUDA-graph capture with the offsets changed in place
between replays; torch.compile; autograd against float64 autograd (both layouts); the errors
raised before launching.
"""
from __future__ import annotations

import numpy as np
import pytest

import cugemm
from cugemm import accuracy, testing

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

FORMS = [v for v in cugemm.variants() if v.param_dict.get("GROUPS")]
SIZES = [0, 1, 7, 577, 128, 0, 300, 64]  # empty, single-row, odd, tile multiples, a 577-row group


def _check(out, ref, written, dtype):
    got = testing.to_float64(out).reshape(ref.shape)
    rows = cupy.asnumpy(written)
    err = accuracy.rel_error(got[rows], ref[rows]) if rows.any() else 0.0
    assert accuracy.within(err, dtype, "float32"), err
    assert bool(cupy.isnan(got[~rows]).all()), "rows outside every group were written"


@pytest.mark.parametrize("v", FORMS, ids=lambda v: v.name)
def test_every_form_matches_float64(v):
    dt, tf32 = v.dtype_in, v.math_dtype == "tfloat32"  # float32 forms: TF32, allowed by the call
    a, b, ends, ref, written = testing.grouped_case(dt, SIZES, 200, 136, v.b_layout)
    out = testing.poisoned(ref.shape, dt)
    cugemm.grouped_matmul(a, b, ends, out=out, variant=v.name, allow_tf32=tf32)
    _check(out, ref, written, v.math_dtype)
    # the masked layout through the same form: counts 0, 7, 300 (whole), 129 of 300 rows
    a, b, counts, ref, written = testing.grouped_case(dt, [0, 7, 300, 129], 136, 200, v.b_layout, masked_m=300)
    out = testing.poisoned((4, 300, 136), dt)
    cugemm.grouped_matmul(a, b, counts=counts, out=out, variant=v.name, allow_tf32=tf32)
    _check(out, ref, written, v.math_dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("b_layout", ["row", "col"])
def test_chosen_form_on_moe_like_groups(dtype, b_layout):
    rng = np.random.default_rng(7)
    sizes = list(rng.integers(0, 700, size=16))
    a, b, ends, ref, written = testing.grouped_case(dtype, sizes, 1024, 512, b_layout)
    tf32 = dtype == "float32"
    out = cugemm.grouped_matmul(a, b, ends, allow_tf32=tf32)
    assert out.shape == ref.shape and out.dtype == a.dtype
    _check(out, ref, written, "tfloat32" if tf32 else dtype)


def test_float32_needs_allow_tf32():
    a, b, ends, _, _ = testing.grouped_case("float32", [5, 7], 64, 64)
    with pytest.raises(TypeError, match="allow_tf32"):
        cugemm.grouped_matmul(a, b, ends)
    with pytest.raises(ValueError, match="multiples of 4"):
        cugemm.grouped_matmul(a[:, :62], b[:, :62], ends, allow_tf32=True)


def test_bad_offsets_are_clamped_and_never_written_outside():
    rows, N, K = 300, 64, 64
    # decreasing (group 1 empty), past A's rows (group 3 ends at row 300), negative (group 4 empty)
    ends = [100, 50, 200, 999, -5]
    a, b, e, ref, written = testing.grouped_case("float16", [0] * 5, N, K, rows=rows, ends=ends)
    guard = 64
    buf = testing.poisoned((rows + 2 * guard, N), "float16")
    out = buf[guard:guard + rows]
    cugemm.grouped_matmul(a, b, e, out=out)
    _check(out, ref, written, "float16")
    assert bool(cupy.isnan(testing.to_float64(buf[:guard])).all())
    assert bool(cupy.isnan(testing.to_float64(buf[guard + rows:])).all())


def test_masked_counts_are_clamped():
    a, b, counts, ref, written = testing.grouped_case("bfloat16", [0] * 3, 64, 64, masked_m=130,
                                                      ends=[-3, 500, 129])
    out = testing.poisoned((3, 130, 64), "bfloat16")
    cugemm.grouped_matmul(a, b, counts=counts, out=out)
    _check(out, ref, written, "bfloat16")


def test_k_zero_gives_zeros_and_out_may_not_overlap_an_input():
    a, b, ends, _, _ = testing.grouped_case("float16", [5, 3], 64, 64)
    out = cugemm.grouped_matmul(a[:, :0], b[:, :0], ends)
    assert out.shape == (8, 64) and not bool(testing.to_float64(out).any())
    buf = testing.poisoned((8, 64), "float16")
    with pytest.raises(ValueError, match="overlaps A"):
        cugemm.grouped_matmul(buf, b, ends, out=buf)


def test_int64_offsets_and_one_group():
    a, b, ends, ref, written = testing.grouped_case("float16", [333], 128, 64)
    out = cugemm.grouped_matmul(a, b, ends.astype(cupy.int64))
    _check(out, ref, written, "float16")


def test_errors_before_launch():
    a, b, ends, _, _ = testing.grouped_case("float16", [5, 5], 64, 64)
    with pytest.raises(TypeError, match="offsets"):
        cugemm.grouped_matmul(a, b)
    with pytest.raises(ValueError, match="one entry per group"):
        cugemm.grouped_matmul(a, b, ends[:1])
    with pytest.raises(ValueError, match="K differs"):
        cugemm.grouped_matmul(a[:, :32], b, ends)
    with pytest.raises(TypeError, match="int32"):
        cugemm.grouped_matmul(a, b, ends.astype(cupy.float32))
    with pytest.raises(TypeError, match="one type"):
        cugemm.grouped_matmul(a, testing.cast(cupy.ones(b.shape, dtype=cupy.float32), "bfloat16"), ends)
    with pytest.raises(ValueError, match="multiples of 8"):
        cugemm.grouped_matmul(a[:, :60], b[:, :60], ends)
    with pytest.raises(ValueError, match="masked layout"):
        cugemm.grouped_matmul(a.reshape(2, 5, 64), b, ends)


# ---- torch ---------------------------------------------------------------------------------------------
def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    return torch


def _torch_case(torch, dtype, sizes, N, K, transposed):
    G = len(sizes)
    a = torch.randn(int(sum(sizes)), K, device="cuda", dtype=dtype)
    if transposed:
        b = (torch.randn(G, N, K, device="cuda", dtype=dtype) / K ** 0.5).transpose(1, 2)
    else:
        b = torch.randn(G, K, N, device="cuda", dtype=dtype) / K ** 0.5
    offs = torch.tensor(np.cumsum(sizes), dtype=torch.int32, device="cuda")
    return a, b, offs


def _torch_ref(a, b, offs):
    out = a.new_zeros(a.shape[0], b.shape[2]).double()
    start = 0
    for g, end in enumerate(offs.tolist()):
        out[start:end] = a[start:end].double() @ b[g].double()
        start = end
    return out


@pytest.mark.parametrize("transposed", [False, True])
def test_torch_bf16_matches_reference_and_grouped_mm(transposed):
    torch = _torch()
    a, b, offs = _torch_case(torch, torch.bfloat16, [0, 1, 7, 577, 256, 33], 256, 192, transposed)
    out = cugemm.grouped_matmul(a, b, offs)
    assert isinstance(out, torch.Tensor) and out.shape == (a.shape[0], 256)
    ref = _torch_ref(a, b, offs)
    err = float((out.double() - ref).norm() / ref.norm())
    assert accuracy.within(err, "bfloat16", "float32"), err
    if hasattr(torch, "_grouped_mm"):
        theirs = torch._grouped_mm(a, b, offs=offs)
        err2 = float((theirs.double() - ref).norm() / ref.norm())
        assert err <= 2 * err2 + 1e-3


def test_torch_graph_capture_with_offsets_changed_in_place():
    torch = _torch()
    a, b, offs = _torch_case(torch, torch.float16, [100, 0, 250, 7], 128, 128, True)
    cugemm.grouped_matmul(a, b, offs)  # planned eagerly first
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = cugemm.grouped_matmul(a, b, offs)
    for sizes in ([100, 0, 250, 7], [7, 250, 0, 100], [357, 0, 0, 0]):
        offs.copy_(torch.tensor(np.cumsum(sizes), dtype=torch.int32))
        out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        ref = _torch_ref(a, b, offs)
        err = float((out.double() - ref).norm() / ref.norm())
        assert accuracy.within(err, "float16", "float32"), (sizes, err)


def test_torch_compile_traces_the_op():
    torch = _torch()
    a, b, offs = _torch_case(torch, torch.bfloat16, [64, 0, 200], 128, 64, False)
    f = torch.compile(lambda a, b, o: cugemm.grouped_matmul(a, b, o) * 2, fullgraph=True)
    got = f(a, b, offs)
    ref = _torch_ref(a, b, offs) * 2
    err = float((got.double() - ref).norm() / ref.norm())
    assert accuracy.within(err, "bfloat16", "float32"), err


@pytest.mark.parametrize("masked,dtype", [(False, "float16"), (True, "bfloat16"), (False, "float32"),
                                          (True, "float32")])
def test_torch_autograd_matches_float64(masked, dtype):
    """Gradients through torch.ops.cugemm.grouped_matmul against float64 autograd of the groups'
    products: dA by the grouped kernel (zero on rows in no group), dB per group (float32: TF32,
    allowed by the call, in the backward too)."""
    torch = _torch()
    G, N, K, m = 4, 136, 72, 100
    sizes = [30, 0, 100, 7]
    dt = getattr(torch, dtype)
    tf32 = dtype == "float32"
    math_dtype = "tfloat32" if tf32 else dtype
    if masked:
        a = torch.randn(G, m, K, device="cuda", dtype=dt)
        ends = torch.tensor(sizes, dtype=torch.int32, device="cuda")
    else:
        a = torch.randn(sum(sizes) + 9, K, device="cuda", dtype=dt)  # 9 rows past the last group
        ends = torch.tensor(np.cumsum(sizes), dtype=torch.int32, device="cuda")
    b = (torch.randn(G, N, K, device="cuda", dtype=dt) / K ** 0.5).transpose(1, 2)
    a.requires_grad_(), b.requires_grad_()
    out = cugemm.grouped_matmul(a, b, None if masked else ends, counts=ends if masked else None, allow_tf32=tf32)
    assert out.grad_fn is not None
    w = torch.randn(out.shape, device="cuda", dtype=torch.float64)
    a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    loss64, start = 0, 0
    for g, n in enumerate(sizes):
        rows = (g, slice(0, n)) if masked else (slice(start, start + n),)
        if n:
            loss64 = loss64 + ((a64[rows] @ b64[g]) * w[rows]).sum()
            got, ref = out[rows].detach().double(), (a64[rows] @ b64[g]).detach()
            assert accuracy.within(float((got - ref).norm() / ref.norm()), math_dtype, "float32")
        start += n
    mask = torch.zeros(out.shape[:-1], dtype=torch.bool, device="cuda")
    start = 0
    for g, n in enumerate(sizes):
        if masked:
            mask[g, :n] = True
        else:
            mask[start:start + n] = True
        start += n
    # rows in no group are not part of the product (never written: whatever the allocator left)
    torch.where(mask.unsqueeze(-1), out.double() * w, 0).sum().backward()
    loss64.backward()
    for got, ref in ((a.grad, a64.grad), (b.grad, b64.grad)):
        assert got.shape == ref.shape
        err = float((got.double() - ref).norm() / ref.norm())
        assert accuracy.within(err, math_dtype, "float32"), err
    assert bool((a.grad.double()[~mask] == 0).all())  # rows in no group get no gradient



def test_second_call_takes_the_serving_path():
    from cugemm import grouped

    a, b, ends, _, _ = testing.grouped_case("bfloat16", [40, 0, 300], 192, 128, "col")
    cugemm.grouped_matmul(a, b, ends)
    known = grouped.serving_keys()
    a2, _, _, _, _ = testing.grouped_case("bfloat16", [40, 0, 300], 192, 128, "col")
    a[...] = a2  # new values, same array: the planned call again
    out = cugemm.grouped_matmul(a, b, ends)
    assert grouped.serving_keys() == known >= 1
    ref = cupy.full((340, 192), cupy.nan)
    a64, b64 = testing.to_float64(a), testing.to_float64(b)
    ref[:40], ref[40:] = a64[:40] @ b64[0], a64[40:] @ b64[2]
    _check(out, ref, cupy.ones(340, dtype=bool), "bfloat16")
