"""GPU correctness of the skinny-product family (hgemm_skinny): shapes tests/test_gpu.py cannot pick
from a tile (M <= max_m; column-major B, the x @ W.T of a linear layer). Every variant against the
float64 reference (cugemm.accuracy tolerances), C poisoned with NaN between NaN guard zones, on M
from 1 to max_m, N and K odd multiples of 8 and LLM sizes, both B layouts, fp16 and bf16; split-K
results are bit-for-bit repeatable (the reduction order does not depend on which block is last) and
the per-slab counters are left at zero.

`python tests/test_gpu_skinny.py SHAPES|llm [--dtype f16|bf16] [--variants GLOB]` times the variants
of both B layouts against cupy.matmul on the same operands (bench.py gives every variant a row-major
B): the _bcol ones against cupy.matmul(a, w.T)."""
import sys

import numpy as np
import pytest

import cugemm
from cugemm import accuracy, splitk, testing
from cugemm.registry import variants

pytestmark = pytest.mark.gpu
FAMILY = variants(family="hgemm_skinny")


def _ms(v):
    ms = [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64]
    return [m for m in ms if m <= v.max_m]


# (N, K): odd multiples of 8, a slab cut by N, K-slices cut by K, LLM sizes
NK = [(8, 8), (24, 4104), (1000, 1032), (520, 11000), (4104, 4096), (4096, 11008), (11008, 4096)]
CASES = [(v, (m, n, k)) for v in FAMILY for m in _ms(v) for n, k in NK
         if m in (1, 3, 8, 9, 16, v.max_m) or (n, k) == (1000, 1032)]


def operands(v, M, N, K):
    """A (M x K row-major) and B (K x N): row-major, or for _bcol the transposed view W.T of a
    row-major N x K weight W (no copy)."""
    cupy = pytest.importorskip("cupy")
    a, b = testing.random_operands(v.dtype_in, M, N, K)
    if v.b_layout == "col":
        w = cupy.ascontiguousarray(b.T)  # N x K row-major
        b = w.T
        assert b.flags.f_contiguous and b.shape == (K, N)
    return a, b


def run_poisoned(v, a, b, guard=64):
    out, guards_ok = testing.run_guarded(v, a, b, guard)
    assert guards_ok, "wrote outside C"
    return out


@pytest.mark.parametrize("v,shape", CASES, ids=[f"{v.name}-{'x'.join(map(str, s))}" for v, s in CASES])
def test_matches_float64_reference(v, shape):
    cupy = pytest.importorskip("cupy")
    a, b = operands(v, *shape)
    c = run_poisoned(v, a, b)
    assert not bool(cupy.isnan(testing.to_float64(c)).any()), f"{v.name} left elements of C unwritten"
    err, ok = accuracy.check(c, accuracy.reference(a, b), v)
    assert ok, f"{v.name} {shape}: rel err {err:.2e} over {accuracy.tolerance(v.math_dtype, v.dtype_acc)}"


@pytest.mark.parametrize("v", FAMILY, ids=lambda v: v.name)
def test_split_k_is_deterministic_and_leaves_counters_zero(v):
    cupy = pytest.importorskip("cupy")
    from cugemm import device, workspace

    M, N, K = min(v.max_m, 13), 4096, 8192
    dev = cupy.cuda.runtime.getDevice()
    assert splitk.skinny_plan(v, M, N, K, device.get(dev))[1] > 1, "the case must split K"
    a, b = operands(v, M, N, K)
    first = cugemm.run(v, a, b)
    for _ in range(3):
        again = cugemm.run(v, a, b)
        assert bool((again.view(cupy.uint16) == first.view(cupy.uint16)).all())
    cupy.cuda.get_current_stream().synchronize()
    buf, need = workspace.held_buffer("cupy", dev, cupy.cuda.get_current_stream().ptr)
    assert need.counters >= splitk.skinny_workspace_need(v, M, N, K, device.get(dev)).counters
    assert int(buf[:4 * need.counters].view(cupy.uint32).max()) == 0
    assert accuracy.check(first, accuracy.reference(a, b), v)[1]


def test_refused_before_launch():
    cupy = pytest.importorskip("cupy")
    v = cugemm.get_variant("hgemm_skinny_splitk_m16_n64k128_stage4_bcol")
    a, b = operands(v, 17, 64, 64)
    with pytest.raises(ValueError, match="M=17 is over 16"):
        cugemm.run(v, a, b)
    a, b = operands(v, 16, 64, 64)
    with pytest.raises(ValueError, match="F-contiguous"):
        cugemm.run(v, a, cupy.ascontiguousarray(b))


def test_streams_get_their_own_workspace():
    cupy = pytest.importorskip("cupy")
    v = cugemm.get_variant("hgemm_skinny_splitk_m16_n64k128_stage4")
    a, b = operands(v, 16, 4096, 8192)
    ref = accuracy.reference(a, b)
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(2)]
    outs = []
    for s in streams:
        with s:
            outs.append(cugemm.run(v, a, b))
    for s, c in zip(streams, outs):
        s.synchronize()
        assert accuracy.check(c, ref, v)[1]


LLM_SHAPES = [(m, n, k) for n, k in ((4096, 4096), (11008, 4096), (4096, 11008), (14336, 4096))
              for m in (1, 2, 4, 8, 16, 32, 64)]


def _bench(argv):
    """Each variant against cupy.matmul on the same operands (B row-major: cupy.matmul(a, b); _bcol:
    cupy.matmul(a, w.T)), alternating (Timer.measure_pair, as bench.py); `kernel` is the variant's
    device time alone (10 launches back to back from a precomputed argument list, L2 flushed
    before them when the operands fit in it)."""
    import argparse

    import cupy

    from cugemm import device, jit, workspace
    from cugemm.bench.measure import parse_shapes
    from cugemm.bench.timing import Timer

    p = argparse.ArgumentParser()
    p.add_argument("shapes", help="MxNxK,... or 'llm' (M 1..64 against the LLM N x K)")
    p.add_argument("--dtype", default="f16", choices=["f16", "bf16"])
    p.add_argument("--variants", default="*skinny*")
    args = p.parse_args(argv)
    dtype = {"f16": "float16", "bf16": "bfloat16"}[args.dtype]
    shapes = LLM_SHAPES if args.shapes == "llm" else parse_shapes(args.shapes)
    timer = Timer()
    dev = cupy.cuda.runtime.getDevice()
    print(f"device: {cupy.cuda.runtime.getDeviceProperties(dev)['name'].decode()}")
    for M, N, K in shapes:
        a, b = testing.random_operands(dtype, M, N, K)
        w = cupy.ascontiguousarray(b.T)
        nbytes = a.nbytes + w.nbytes + M * N * 2
        ref = accuracy.reference(a, b)
        base_out = cupy.empty((M, N), dtype=a.dtype)
        for v in variants(args.variants, dtype=dtype):
            if M > v.max_m:
                continue
            bv = w.T if v.b_layout == "col" else b
            out = testing.poisoned((M, N), dtype)
            cugemm.run(v, a, bv, out=out)
            err, ok = accuracy.check(out, ref, v)
            t, tb = timer.measure_pair(lambda: cugemm.run(v, a, bv, out=out),
                                       lambda: cupy.matmul(a, bv, out=base_out), nbytes)
            fn = jit.get_function(v)
            info = device.get(dev)
            grid = v.grid(M, N, K, info)
            work = workspace.held("cupy", dev, cupy.cuda.get_current_stream().ptr, v.workspace_fn(v, M, N, K, info),
                                  workspace.cupy_alloc)  # the stream's workspace, as the launcher gets it
            kargs = (a, bv, out, np.int32(M), np.int32(N), np.int32(K)) + v.extra_args(None, None, None, M, N, K,
                                                                                        work=work, dev=info)
            reps = 10
            s0, e0 = cupy.cuda.Event(), cupy.cuda.Event()
            kt = []
            for _ in range(5):
                if nbytes <= timer.l2_bytes:
                    timer.flush()
                s0.record()
                for _ in range(reps):
                    fn(grid, v.block, kargs, shared_mem=v.smem_dynamic)
                e0.record()
                e0.synchronize()
                kt.append(cupy.cuda.get_elapsed_time(s0, e0) / reps)
            k_ms = sorted(kt)[2]
            tf = 2.0 * M * N * K / t["median"] / 1e9
            print(f"{M}x{N}x{K} {args.dtype} {v.name:48s} {t['median'] * 1e3:7.1f} us {tf:6.1f} TFLOP/s "
                  f"cupy {tb['median'] * 1e3:7.1f} us {100 * tb['median'] / t['median']:6.1f}%  kernel "
                  f"{k_ms * 1e3:7.1f} us {w.nbytes / k_ms / 1e6:5.0f} GB/s grid {grid}  err {err:.1e} "
                  f"{'ok' if ok else 'FAIL'}", flush=True)


if __name__ == "__main__":
    _bench(sys.argv[1:])
