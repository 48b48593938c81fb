#!/usr/bin/env python3
"""Time a fused epilogue on a named base beside matmul's own fused choice and the plain product.

    PYTHONPATH=$PWD python3 scripts/fused_base_probe.py [--base NAME] [--shapes MxNxK,...] [--dtypes fp16,bf16]
                                                        [--activation gelu]

CuPy operands x (M, K), w (N, K) / sqrt(K), a column bias; per shape and dtype, triton.testing.do_bench
medians (L2 flushed) of: cugemm.matmul(x, w.T); cugemm.epilogue.execute with matmul's fused choice
(act(x @ w.T + b)); the same on --base with the bias alone and with the activation (default base: the
ANY_C 128 x 256 form, whose storing warps apply the activation: `{dtype}` is replaced by '' or '_bf16').
Prints each time, its ratio to the plain product, the variant matmul's fused choice ran, and the
fused result's max error against the float64 reference over max |reference|.
(results/judge/s42/anyc_probe.txt is its output, H100.)
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHAPES = "16384x3072x768,2048x3072x768,2048x8960x1536,2048x8192x2048,8192x4096x4096,4096x11008x4096,16384x768x3072"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base", default="hgemm_wgmma_m64n256k16_persistent_cluster2_anyc_stage3_bcol{dtype}",
                   help="the base variant to run fused ({dtype}: '' for fp16, '_bf16' for bf16)")
    p.add_argument("--shapes", default=SHAPES, help="MxNxK,... (default: seven of the epilogue bench's)")
    p.add_argument("--dtypes", default="fp16,bf16", help="fp16, bf16 (default both)")
    p.add_argument("--activation", default="gelu", help="relu, gelu, gelu_tanh or silu (default gelu)")
    args = p.parse_args()
    import cupy
    import numpy as np
    import triton.testing as tt

    import cugemm
    from cugemm import epilogue, operand, serve, testing

    def bench(f):
        return tt.do_bench(f, warmup=25, rep=100, return_mode="median") * 1e3

    for short in args.dtypes.split(","):
        dtype = {"fp16": "float16", "bf16": "bfloat16"}[short]
        base = args.base.format(dtype="_bf16" if dtype == "bfloat16" else "")
        for M, N, K in (tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")):
            x = testing.cast(cupy.random.standard_normal((M, K), dtype=cupy.float32), dtype)
            w = testing.cast(cupy.random.standard_normal((N, K), dtype=cupy.float32) / K ** 0.5, dtype)
            b = testing.cast(cupy.random.standard_normal((N,), dtype=cupy.float32) * 0.1, dtype)
            out = testing.poisoned((M, N), dtype)
            recs = tuple(operand.describe(v, n, "probe") for v, n in ((x, "A"), (w.T, "B"), (out, "C")))
            lib = serve.library("cupy")
            act = epilogue.Spec(args.activation, "col")
            t, ran = {}, ""
            for name, spec, on in (("plain", None, None), ("fused", act, None),
                                   ("base_bias", epilogue.Spec(None, "col"), base), ("base_act", act, base)):
                if spec is None:
                    def f():
                        return cugemm.matmul(x, w.T, out=out)
                else:
                    def f(spec=spec, on=on):
                        return epilogue.execute(lib, *recs, x, w.T, out, spec, b, None, None, 1.0, 0.0, 0, base=on)
                r = f()
                if name == "fused":
                    ran = r.plan.variant.name if r is not None else "unfused"
                t[name] = bench(f)
            epilogue.execute(lib, *recs, x, w.T, out, act, b, None, None, 1.0, 0.0, 0)
            ref = epilogue.reference(testing.to_float64(x).get() @ testing.to_float64(w).get().T, act,
                                     testing.to_float64(b).get())[0]
            err = float(np.abs(testing.to_float64(out).get() - ref).max() / np.abs(ref).max())
            print(f"{dtype:9s} {M}x{N}x{K}: plain {t['plain']:.1f}  fused {t['fused']:.1f} "
                  f"({t['fused'] / t['plain']:.3f}, {ran})  base, bias {t['base_bias']:.1f} "
                  f"({t['base_bias'] / t['plain']:.3f})  base, {args.activation} {t['base_act']:.1f} "
                  f"({t['base_act'] / t['plain']:.3f})  err {err:.1e}", flush=True)


if __name__ == "__main__":
    main()
