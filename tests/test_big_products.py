"""Products whose A, B or C have 2^31 elements or more: cugemm.matmul cuts them into pieces that each
kernel's 32-bit indices hold (serve.pieces), and the result is right.

CPU: the cut covers the product and every piece passes every variant's index rule. GPU (marked):
the three products that used to be refused (A of 2.15e9 elements, the same as an A^T view, and a C
of 2.15e9 elements), each checked against float64 references of sampled row blocks (one per piece
and the seams between them) and against cupy.matmul on the whole result; and a product deep enough
to be cut along K (summed in float32).
"""
import pytest

import cugemm
from cugemm import accuracy, serve, testing
from cugemm.variant import INT32_MAX

PRODUCTS = ((131080, 72, 16384), (65544, 32776, 64), (16, 4096, 600_000), (8, 8, 2**24 + 8), (100, 200, 300))


def test_tile_max_bounds_every_tile():
    assert max(max(v.tile[:2]) for v in cugemm.variants()) <= serve.TILE_MAX


@pytest.mark.parametrize("M,N,K", PRODUCTS)
def test_pieces_fit_every_variant(M, N, K):
    m, n, k = serve.pieces(M, N, K)
    assert 0 < m <= M and 0 < n <= N and 0 < k <= K
    r = lambda x, t: -(-x // t) * t  # noqa: E731
    T = serve.TILE_MAX
    if max(r(M, T) * r(K, T), r(K, T) * r(N, T), r(M, T) * r(N, T)) <= INT32_MAX:
        assert (m, n, k) == (M, N, K)  # what every variant takes whole is not cut
    else:
        assert (m, n, k) != (M, N, K)
    for v in cugemm.variants():
        bm, bn, bk = v.tile
        mm, nn, kk = r(m, bm), r(n, bn), r(k, bk)
        assert max(mm * kk, kk * nn, mm * nn) <= INT32_MAX, (v.name, (m, n, k))


def test_the_cut_of_the_three_products():
    assert serve.pieces(131080, 72, 16384)[0] < 131080       # rows
    assert serve.pieces(65544, 32776, 64)[0] < 65544         # rows (C is the large one)
    assert serve.pieces(8, 8, 2**24 + 8)[2] < 2**24 + 8      # depth: summed in float32


def _check_rows(c, a, b, rows, dtype):
    """c's rows `rows` against the float64 reference of the same rows."""
    ref = accuracy.reference(a[rows], b)
    err = accuracy.rel_error(c[rows], ref)
    assert accuracy.within(err, dtype, "float32"), (rows, err)
    return err


def _sample_rows(M, m):
    """A block of 64 rows at the start, at each seam between pieces of m rows, and at the end."""
    starts = sorted({0, max(0, M - 64)} | {max(0, s - 32) for s in range(m, M, m)})
    return [slice(s, min(M, s + 64)) for s in starts]


@pytest.mark.gpu
@pytest.mark.parametrize("form", ["A", "A^T"])
def test_a_of_two_billion_elements(form):
    import cupy

    M, N, K = 131080, 72, 16384
    if form == "A":
        a = testing.random_operands("float16", M, 1, K)[0]
    else:
        a = testing.random_operands("float16", K, 1, M)[0].T   # A^T view: the K x M memory
    b = testing.random_operands("float16", 1, N, K)[1]
    assert a.size >= 2**31
    c = cugemm.matmul(a, b)
    for rows in _sample_rows(M, serve.pieces(M, N, K)[0]):
        _check_rows(c, a, b, rows, "float16")
    theirs = cupy.matmul(a, b)
    assert accuracy.within(accuracy.rel_error(c, theirs.astype(cupy.float64)), "float16", "float32")
    del a, b, c, theirs
    cupy.get_default_memory_pool().free_all_blocks()


@pytest.mark.gpu
def test_a_c_of_two_billion_elements():
    import cupy

    M, N, K = 65544, 32776, 64
    a, b = testing.random_operands("float16", M, N, K)
    c = cugemm.matmul(a, b)
    assert c.size >= 2**31
    theirs = cupy.matmul(a, b)
    m = serve.pieces(M, N, K)[0]
    for rows in _sample_rows(M, m):
        _check_rows(c, a, b, rows, "float16")
        diff = accuracy.rel_error(c[rows], theirs[rows].astype(cupy.float64))
        assert accuracy.within(diff, "float16", "float32"), (rows, diff)
    assert not bool(cupy.isnan(c).any())
    del a, b, c, theirs
    cupy.get_default_memory_pool().free_all_blocks()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cut_along_k(dtype):
    """K * N >= 2^31 even for 256 columns: blocks of K summed in float32, rounded once."""
    import cupy

    M, N, K = 8, 8, 2**24 + 8
    a, b = testing.random_operands(dtype, M, N, K)
    out = testing.poisoned((M, N), dtype)
    c = cugemm.matmul(a, b, out=out)
    assert c is out
    _check_rows(c, a, b, slice(0, M), dtype)
    del a, b, c
    cupy.get_default_memory_pool().free_all_blocks()


@pytest.mark.gpu
def test_torch_a_of_two_billion_elements():
    torch = pytest.importorskip("torch")
    M, N, K = 131080, 72, 16384
    x = torch.randn(M, K, device="cuda", dtype=torch.float16)
    w = torch.randn(N, K, device="cuda", dtype=torch.float16)
    y = cugemm.matmul(x, w.T)
    ref = torch.matmul(x, w.T)
    err = ((y.float() - ref.float()).norm() / ref.float().norm()).item()
    assert accuracy.within(err, "float16", "float32"), err
