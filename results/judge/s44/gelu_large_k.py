"""GELU + bias at K >= 2048: the cooperative 128x256 form (matmul's plain choice there) against the ping-pong
128x128 form and the cooperative 128x128 one, x @ W.T, behind the bench's flush, alternating with cupy.matmul."""
import sys
sys.path.insert(0, '.')
import cupy
import numpy as np
import cugemm
from cugemm import accuracy, epilogue, operand, registry, serve, testing, dtypes
from cugemm.bench.timing import Timer

timer = Timer(warmup=3, iters=30, budget_s=1.0)
lib = serve.library("cupy")
BASES = ["hgemm_wgmma_m64n256k16_persistent_cluster2_tma_store_stage4_bcol",
         "hgemm_wgmma_m64n128k16_persistent_cluster2_tma_store_stage6_bcol",
         "hgemm_wgmma_m64n128k16_persistent_pingpong_cluster2_tma_store_stage6_bcol"]
for dn in ("bf16", "f16"):
    dt = dtypes.get(dn)
    bf = "_bf16" if dt.name == "bfloat16" else ""
    for shape in sys.argv[1].split(","):
        M, N, K = (int(x) for x in shape.split("x"))
        a = testing.random_operands(dt.name, M, 1, K)[0]
        w = testing.random_operands(dt.name, N, 1, K)[0]
        bias = testing.random_operands(dt.name, 1, 1, N)[0].reshape(N)
        b = w.T
        A, B = operand.describe(a, "A", "p"), operand.describe(b, "B", "p")
        ref = accuracy.reference(a, b)
        rows = []
        mm = cupy.empty((M, N), a.dtype)
        t, tb = timer.measure_pair(lambda: cugemm.matmul(a, b, out=mm), lambda: cupy.matmul(a, b))
        rows.append(("cugemm.matmul", t["median"] * 1e3, tb["median"] * 1e3, True))
        for base in BASES:
            for act in (None, "gelu"):
                spec = epilogue.Spec(act, "col")
                out = testing.poisoned((M, N), dt.name)
                O = operand.describe(out, "out", "p")
                run = lambda out=out, O=O, spec=spec, base=base: epilogue.execute(lib, A, B, O, a, b, out, spec, bias, base=base + bf)
                r = run(); cupy.cuda.Device().synchronize()
                want = cupy.asarray(epilogue.reference(cupy.asnumpy(ref), spec, bias=cupy.asnumpy(bias).astype(np.float64))[0])
                ok = r is not None and bool(accuracy.within(accuracy.rel_error(out, want), dt.name, "float32"))
                t, tb = timer.measure_pair(run, lambda: cupy.matmul(a, b))
                rows.append((base[12:] + (" gelu+bias" if act else " bias"), t["median"] * 1e3, tb["median"] * 1e3, ok))
        print(f"{dt.name} {M}x{N}x{K} x @ W.T", flush=True)
        for name, us, cu, ok in rows:
            print(f"  {name:<80} {us:8.2f} us  cupy {cu:8.2f}  {100 * cu / us:6.1f}%{'' if ok else ' WRONG'}", flush=True)
