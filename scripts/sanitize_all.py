#!/usr/bin/env python3
"""Run every registered variant (or those matching a glob) once or twice at small legal shapes,
checking each result; meant to run under compute-sanitizer (memcheck, racecheck):

    compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/sanitize_all.py [GLOB] [--quick]

Shapes: three K tiles (so double-buffered and multistage pipelines wrap around their buffers) over
one block tile (any-shape variants: an odd shape that cuts every tile edge), then a 2x1-tile shape
unless --quick; split-K variants also one tile 16 K tiles deep (its slices and their reduction); the
ping-pong forms (PINGPONG) also 18 x 16 tiles, so that every block takes two or three in turns, and
the STAGED forms (ANY_C with TMA_STORE) too, so that every staged slab is rewritten after its store.
The batched forms (wgmma BATCHED, mma.sync _batched) also run through cugemm.matmul(variant=) on 3 products of the first
shape and on a broadcast A (one matrix for 3 products of B); the grouped forms (GROUPS > 0) through
cugemm.grouped_matmul(variant=) on uneven groups (sizes 0, 1, 7, 577) and on the masked layout; the
FP8 forms also through cugemm.scaled_matmul(variant=) with the scales of their mode (and a bias), into
a C with odd N and into one TMA stores. Exits 1 if any result is wrong.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import cugemm  # noqa: E402
from cugemm import accuracy, testing  # noqa: E402


def shapes_for(v, quick):
    if v.any_shape or v.multiple_of[0] == 1:  # tails in M (and in N, K up to the alignment rule)
        m, n, k = v.multiple_of
        shapes = [(v.tile[0] + 3, v.tile[1] + max(5 // n, 1) * n, 3 * max(v.tile[2], 1) + k)]
    else:
        shapes = [v.tile_shape(1, 1, 3)]
    if not quick:
        shapes.append(v.tile_shape(2, 1, 2))
    if v.workspace_fn is not None:  # split-K: one tile, K deep enough to be cut into slices
        shapes.append(v.tile_shape(1, 1, 16))
    p = v.param_dict
    # 288 tiles: blocks of 2 and 3, both consumers taking turns (PINGPONG), slabs restaged (STAGED)
    if p.get("PINGPONG") or (p.get("ANY_C") and p.get("TMA_STORE")):
        shapes.append(v.tile_shape(18, 16, 3))
    if v.max_m:  # kernels for skinny products
        shapes = [(min(M, v.max_m), N, K) for M, N, K in shapes]
    return shapes


def batched_runs(v, M, N, K):
    """The batched form `v` on 3 products of M x N x K, then with A broadcast: wrong results."""
    import cupy

    def operand(batch, rows, cols, layout):
        x = testing.cast(cupy.random.standard_normal((batch, rows, cols), dtype=cupy.float32), v.dtype_in)
        return cupy.ascontiguousarray(x.swapaxes(-1, -2)).swapaxes(-1, -2) if layout == "col" else x

    bad = 0
    for ba in (3, 1):
        a, b = operand(ba, M, K, v.a_layout), operand(3, K, N, v.b_layout)
        out = testing.poisoned((3, M, N), v.dtype_out)
        cugemm.matmul(a, b, out=out, variant=v.name)
        ref = cupy.matmul(testing.to_float64(a), testing.to_float64(b))
        err = accuracy.rel_error(out, ref)
        if not accuracy.within(err, v.math_dtype, v.dtype_acc):
            bad += 1
            print(f"WRONG {v.name} batch {ba}|3 x {M}x{N}x{K}: rel err {err:.2e}")
    return bad


def grouped_runs(v):
    """The grouped form `v` on groups of 0, 1, 7, 577 and 130 rows (contiguous layout, 16 rows past
    the last group) and on the masked layout (counts 0, 7, 200 of 200, 129): wrong results, or rows
    outside the groups written."""
    import cupy

    bad = 0
    for masked in (0, 200):
        sizes = [0, 7, 200, 129] if masked else [0, 1, 7, 577, 130]
        a, b, ends, ref, written = testing.grouped_case(v.dtype_in, sizes, 136, 72, v.b_layout, masked_m=masked,
                                                        rows=None if masked else sum(sizes) + 16)
        out = testing.poisoned(ref.shape, v.dtype_out)
        tf32 = v.math_dtype == "tfloat32"
        if masked:
            cugemm.grouped_matmul(a, b, counts=ends, out=out.reshape(len(sizes), masked, 136), variant=v.name,
                                  allow_tf32=tf32)
        else:
            cugemm.grouped_matmul(a, b, ends, out=out, variant=v.name, allow_tf32=tf32)
        got = testing.to_float64(out)
        rows = cupy.asnumpy(written)
        err = accuracy.rel_error(got[rows], ref[rows])
        if not accuracy.within(err, v.math_dtype, v.dtype_acc) or not bool(cupy.isnan(got[~rows]).all()):
            bad += 1
            print(f"WRONG {v.name} grouped {sizes} (masked {masked}): rel err {err:.2e}")
    return bad


def fp8_runs(v):
    """The FP8 form `v` through cugemm.scaled_matmul with real scales of its mode (per-tensor, per-row
    with a bias, or block), operands from cugemm.quantize_fp8 (CuPy), at an odd N (the consumers'
    own stores) and at N a multiple of 64 (TMA stores): wrong results."""
    import cupy

    from cugemm.quantize import to_float64

    p = v.param_dict
    mode = ("tensor", "row", "block")[p["SCALE"]] if "SCALE" in p else "row" if p["ROW"] else "tensor"
    blocks = {"tensor": ("tensor", "tensor"), "row": ("row", "row"), "block": ((1, 128), (128, 128))}[mode]
    bad = 0
    for M, N, K in ((v.tile[0] + 3, v.tile[1] + 5, 3 * 128 + 16), (v.tile[0], 2 * v.tile[1], 2 * 128)):
        x = cupy.random.standard_normal((M, K), dtype=cupy.float32)
        w = cupy.random.standard_normal((N, K), dtype=cupy.float32)
        qa, sa = cugemm.quantize_fp8(x, blocks[0], v.dtype_in)
        qw, sw = cugemm.quantize_fp8(w, blocks[1], v.dt_b.name)

        def expand(s, R, C, block):
            s = s.astype(cupy.float64)
            if block == "tensor":
                return s
            if block == "row":
                return s.reshape(R, 1)
            br, bc = block
            return cupy.repeat(cupy.repeat(s, br, 0)[:R], bc, 1)[:, :C]

        ref = (to_float64(qa) * expand(sa, M, K, blocks[0])) @ (to_float64(qw) * expand(sw, N, K, blocks[1])).T
        bias = cupy.random.standard_normal(N, dtype=cupy.float32) if mode == "row" else None
        if bias is not None:
            ref = ref + bias
        out = testing.poisoned((M, N), v.dtype_out)
        cugemm.scaled_matmul(qa, qw.T, sa, sw if mode == "tensor" else sw.T, out_dtype=v.dtype_out, bias=bias,
                             out=out, variant=v.name)
        err = accuracy.rel_error(out, ref)
        if not accuracy.within(err, v.math_dtype, v.dtype_acc):
            bad += 1
            print(f"WRONG {v.name} scaled {mode} {M}x{N}x{K}: rel err {err:.2e}")
    return bad


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pattern", nargs="?", default=None, help="glob(s) over variant names")
    p.add_argument("--quick", action="store_true", help="one shape per variant (racecheck is slow)")
    args = p.parse_args()
    import cupy

    bad = 0
    chosen = cugemm.variants(args.pattern)
    for v in chosen:
        for M, N, K in shapes_for(v, args.quick):
            a, b = testing.variant_operands(v, M, N, K)
            out = testing.poisoned((M, N), v.dtype_out, v.layout)
            cugemm.run(v, a, b, out=out)
            err, ok = accuracy.check(out, accuracy.reference(a, b), v)
            if not ok:
                bad += 1
                print(f"WRONG {v.name} {M}x{N}x{K}: rel err {err:.2e}")
        if v.family == "fp8_wgmma":
            bad += fp8_runs(v)
        if v.param_dict.get("GROUPS"):
            bad += grouped_runs(v)
        elif v.batched:
            M, N, K = shapes_for(v, True)[0]
            if v.a_layout == "col":  # a column-major A's lines are its columns: M whole 16-byte lines
                M = -(-M // 8) * 8
            bad += batched_runs(v, M, N, -(-K // 8) * 8)  # K whole 16-byte lines: read in place, no copy
    cupy.cuda.Device().synchronize()
    print(f"sanitize_all: {len(chosen)} variants run, {bad} wrong results")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
