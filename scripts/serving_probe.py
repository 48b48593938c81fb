#!/usr/bin/env python3
"""What the torch serving path costs, piece by piece, on the device (the first probe of the torch front door).

    python3 scripts/serving_probe.py [--shapes judge|MxNxK,...] [--dtypes f16,bf16]

1. the CUtensorMap bytes that change with the global address (so a cached map can be re-pointed);
2. host cost of the pieces a launch from torch is made of (allocation, pointer and stride reads,
   the current stream, a ctypes cuLaunchKernel);
3. per x @ W.T shape (torch tensors): the GPU time of torch.matmul and of cugemm.matmul's plan,
   each launched behind a torch.cuda._sleep so the host's time is hidden (the kernels' own time).
"""
import argparse
import ctypes
import statistics
import time



def us_per_call(fn, n=300):
    """Host time per call: n calls behind a long GPU sleep (the launch queue never drains or fills)."""
    import torch

    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    torch.cuda._sleep(60_000_000)
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t = (time.perf_counter() - t0) / n * 1e6
    torch.cuda.synchronize()
    return t


def tensormap_layout():
    import cupy

    from cugemm import tma

    buf = cupy.empty(1 << 22, dtype=cupy.uint8)
    p0 = buf.data.ptr
    base = tma.encode(tma.Spec(p0, "float16", 1024, 512, 1024, (64, 64), 128))
    raw0 = bytes((ctypes.c_ubyte * 128).from_address(base.address))
    for delta in (256, 4096, 1 << 20, (1 << 22) - 2048):
        m = tma.encode(tma.Spec(p0 + delta, "float16", 1024, 512, 1024, (64, 64), 128))
        raw = bytes((ctypes.c_ubyte * 128).from_address(m.address))
        diff = [i for i in range(128) if raw[i] != raw0[i]]
        lo = int.from_bytes(raw[0:8], "little")
        print(f"tensormap: delta {delta:#x}: bytes differing {diff}; u64[0] = {lo:#x}, ptr = {p0 + delta:#x}, "
              f"equal: {lo == p0 + delta}")


def micro():
    import torch

    import cugemm

    x = torch.randn(16, 768, device="cuda", dtype=torch.float16)
    w = torch.randn(3072, 768, device="cuda", dtype=torch.float16)
    wt = w.T
    dev = x.device
    cugemm.matmul(x, wt)
    rows = {
        "torch.empty((16, 3072))": lambda: torch.empty((16, 3072), dtype=torch.float16, device=x.device),
        "torch.empty(.., device='cuda')": lambda: torch.empty((16, 3072), dtype=torch.float16, device="cuda"),
        "torch.empty(.., device=dev)": lambda: torch.empty((16, 3072), dtype=torch.float16, device=dev),
        "torch.empty(16, 3072, ..)": lambda: torch.empty(16, 3072, dtype=torch.float16, device=dev),
        "x.new_empty((16, 3072))": lambda: x.new_empty((16, 3072)),
        "torch.empty_strided": lambda: torch.empty_strided((16, 3072), (3072, 1), dtype=torch.float16, device=dev),
        "cugemm.matmul(x, wt)": lambda: cugemm.matmul(x, wt),
        "x.data_ptr()": lambda: x.data_ptr(),
        "wt.stride()": lambda: wt.stride(),
        "wt.shape": lambda: wt.shape,
        "x.dtype": lambda: x.dtype,
        "x.device.index": lambda: x.device.index,
        "x.get_device()": lambda: x.get_device(),
        "torch.cuda.current_stream().cuda_stream": lambda: torch.cuda.current_stream().cuda_stream,
        "torch._C._cuda_getCurrentRawStream(0)": lambda: torch._C._cuda_getCurrentRawStream(0),
        "x.requires_grad": lambda: x.requires_grad,
        "torch.is_grad_enabled()": lambda: torch.is_grad_enabled(),
        "torch.compiler.is_compiling()": lambda: torch.compiler.is_compiling(),
        "torch.cuda.is_current_stream_capturing()": lambda: torch.cuda.is_current_stream_capturing(),
        "torch.matmul(x, wt)": lambda: torch.matmul(x, wt),
        "x @ wt": lambda: x @ wt,
        "torch.nn.functional.linear(x, w)": lambda: torch.nn.functional.linear(x, w),
    }
    for name, fn in rows.items():
        print(f"host {name:45s} {us_per_call(fn):7.2f} us")
    torch.cuda.synchronize()
    # a raw driver launch of a trivial kernel with prepacked parameters
    import cupy
    k = cupy.RawKernel(r'extern "C" __global__ void nop(const void* a, const void* b, void* c, int m) {}', "nop")
    k((1,), (32,), (0, 0, 0, 0))
    cupy.cuda.Device().synchronize()
    lib = ctypes.CDLL("libcuda.so.1")
    launch = lib.cuLaunchKernel
    launch.restype = ctypes.c_int
    launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    vals = [ctypes.c_uint64(x.data_ptr()), ctypes.c_uint64(w.data_ptr()), ctypes.c_uint64(0), ctypes.c_int32(16)]
    params = (ctypes.c_void_p * 4)(*[ctypes.addressof(v) for v in vals])
    fptr = k.kernel.ptr
    stream = torch.cuda.current_stream().cuda_stream

    def raw():
        vals[0].value = x.data_ptr()
        return launch(fptr, 1, 1, 1, 32, 1, 1, 0, stream, params, None)

    assert raw() == 0
    print(f"host {'ctypes cuLaunchKernel (prepacked)':45s} {us_per_call(raw):7.2f} us")
    print(f"host {'cupy RawKernel call':45s} {us_per_call(lambda: k((1,), (32,), (0, 0, 0, 0))):7.2f} us")
    torch.cuda.synchronize()


def gpu_times(fn, reps=30, sleep=400_000):
    import torch

    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(sleep)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) * 1e3)
    return statistics.median(ts)


def shapes_table(shapes, dtypes):
    import torch

    import cugemm

    print(f"{'dtype':5s} {'shape':>18s} {'torch us':>9s} {'cugemm us':>9s} {'%':>6s}  plan")
    ratios = {}
    for dn in dtypes:
        dt = {"f16": torch.float16, "bf16": torch.bfloat16}[dn]
        for M, N, K in shapes:
            x = torch.randn(M, K, device="cuda", dtype=dt)
            w = torch.randn(N, K, device="cuda", dtype=dt) / K ** 0.5
            ref = torch.matmul(x, w.T)
            got = cugemm.matmul(x, w.T)
            err = ((got.float() - ref.float()).norm() / ref.float().norm()).item()
            ch = cugemm.explain(x, w.T)
            name = ch.plan.variant.name if ch.plan is not None else "?"
            t_t = gpu_times(lambda: torch.matmul(x, w.T))
            t_c = gpu_times(lambda: cugemm.matmul(x, w.T))
            r = 100 * t_t / t_c
            ratios.setdefault(dn, []).append(r)
            print(f"{dn:5s} {f'{M}x{N}x{K}':>18s} {t_t:9.1f} {t_c:9.1f} {r:6.1f}  {name} [{ch.plan.describe()}] "
                  f"err {err:.1e}", flush=True)
    for dn, rs in ratios.items():
        g = statistics.geometric_mean(rs)
        print(f"{dn}: geometric mean {g:.1f}% of torch.matmul (kernel time), min {min(rs):.1f}%")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="judge")
    p.add_argument("--dtypes", default="f16,bf16")
    p.add_argument("--skip", default="", help="comma-separated parts to skip: tensormap,micro,shapes")
    args = p.parse_args()
    import torch

    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    skip = set(args.skip.split(","))
    if "tensormap" not in skip:
        tensormap_layout()
    if "micro" not in skip:
        micro()
    if "shapes" not in skip:
        if args.shapes == "judge":
            from cugemm.bench.measure import LINEAR_JUDGE

            shapes = list(LINEAR_JUDGE)
        else:
            shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
        shapes_table(shapes, args.dtypes.split(","))


if __name__ == "__main__":
    main()
