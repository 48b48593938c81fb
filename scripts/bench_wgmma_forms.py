#!/usr/bin/env python3
"""Time the top Hopper rung's operand forms (transposed operands, any C) against cupy.matmul on
the same operands, alternating repetitions (cugemm.bench.timing.Timer.measure_pair), which bench.py
cannot do: it hands every variant dense row-major operands.

Aligned shapes: each form gets dense operands in its layout (A 'col' = a.T of a dense K x M array,
B 'col' = W.T of a dense N x K one) and cupy.matmul multiplies the same views. Odd shapes (a
dimension not a multiple of 8, e.g. 4095x4097x1023): cupy.matmul multiplies the dense, unpadded
row-major arrays a user has; the forms get A and B in workspaces with rows padded to 16 bytes (what
cugemm.matmul copies them into) and write C directly: the ANY_C forms into the dense 4095 x 4097 C
(rows 8194 bytes apart), the TMA-store forms into a C with rows padded to 16 bytes.

    python scripts/bench_wgmma_forms.py [--shapes 4096x4096x4096,4095x4097x1023] [--dtype f16]
"""
import argparse


def main():
    import cupy

    import cugemm
    from cugemm import accuracy, testing
    from cugemm.bench.timing import Timer

    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="4096x4096x4096,4096x4096x1024,4095x4097x1023")
    ap.add_argument("--dtype", default="f16", choices=["f16", "bf16"])
    ap.add_argument("--iters", type=int, default=50)
    args = ap.parse_args()
    dtype = {"f16": "float16", "bf16": "bfloat16"}[args.dtype]
    bf = "_bf16" if dtype == "bfloat16" else ""
    P = "hgemm_wgmma_m64n256k16_persistent_cluster2"
    names = [f"{P}_{kind}{suffix}{bf}" for suffix in ("", "_acol", "_bcol", "_acol_bcol")
             for kind in ("tma_store_stage4", "anyc_stage3")]
    timer = Timer(iters=args.iters)
    r8 = lambda n: -(-n // 8) * 8  # noqa: E731
    print(f"{cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}  dtype {dtype}")
    print(f"{'shape':>16} {'variant':<72} {'TFLOP/s':>8} {'cupy':>8} {'%':>7} {'rel_err':>9}")
    for shape in args.shapes.split(","):
        M, N, K = map(int, shape.split("x"))
        flop = 2.0 * M * N * K
        a, b = testing.random_operands(dtype, M, N, K)
        ref = accuracy.reference(a, b)
        odd = any(x % 8 for x in (M, N, K))
        for name in names:
            v = cugemm.get_variant(name)
            if N % 8 and not v.param_dict["ANY_C"]:
                print(f"{shape:>16} {name:<72} -- N % 8 != 0: the TMA-store forms refuse it (ANY_C's)")
                continue

            def lay(x, layout):
                rows, cols = x.shape
                if layout == "row":
                    if not odd:
                        return x
                    buf = cupy.zeros((rows, r8(cols)), dtype=cupy.uint16).view(x.dtype)
                    buf.view(cupy.uint16)[:, :cols] = x.view(cupy.uint16)
                    return buf[:, :cols]
                buf = cupy.zeros((cols, r8(rows) if odd else rows), dtype=cupy.uint16).view(x.dtype)
                buf.view(cupy.uint16)[:, :rows] = x.view(cupy.uint16).T
                return buf[:, :rows].T

            va, vb = lay(a, v.a_layout), lay(b, v.b_layout)
            if v.param_dict["ANY_C"] or not odd:
                c = testing.poisoned((M, N), dtype)
            else:
                c = testing.poisoned((M, r8(N)), dtype)[:, :N]
            # cuBLAS on the same views when aligned, on the user's dense arrays when odd
            ba, bb = (a, b) if odd else (va, vb)
            c0 = testing.poisoned((M, N), dtype)
            try:
                cugemm.run(v, va, vb, out=c)
                err = accuracy.rel_error(c, ref)
                t, tb = timer.measure_pair(lambda: cugemm.run(v, va, vb, out=c),
                                           lambda: cupy.matmul(ba, bb, out=c0))
            except Exception as e:  # noqa: BLE001
                print(f"{shape:>16} {name:<72} ERROR {type(e).__name__}: {str(e)[:100]}")
                continue
            tf, tfb = flop / t["median"] / 1e9, flop / tb["median"] / 1e9
            ok = "" if accuracy.within(err, v.math_dtype, v.dtype_acc) else " FAIL"
            print(f"{shape:>16} {name:<72} {tf:8.1f} {tfb:8.1f} {100 * tb['median'] / t['median']:6.1f}% "
                  f"{err:9.2e}{ok}", flush=True)


if __name__ == "__main__":
    main()
