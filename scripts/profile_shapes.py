"""Profile cupy.matmul (cuBLAS) and cugemm.matmul on a few shapes under Nsight Compute, one launch
of each after a warm-up, plus a plain streaming-read kernel as the HBM reference:

    ncu --profile-from-start off --section SpeedOfLight --csv --page details \\
        python3 scripts/profile_shapes.py f16:16x8192x8192 f16:128x4096x4096 stream:134217728 > p.csv
    python3 scripts/profile_shapes.py --summary p.csv

Each spec is DTYPE:MxNxK (cupy.matmul then cugemm.matmul, whatever kernels they launch),
DTYPE:MxNxK:NAME,NAME (cupy.matmul then the named variants) or stream:BYTES (a grid-stride
16-byte read of BYTES, the achievable read bandwidth). --summary
prints one line per profiled kernel: name, duration, DRAM / memory / SM throughput in % of peak.
--dirty runs the bench's L2 flush (cugemm.bench.Timer.flush, a write over twice the L2) before each
profiled launch, outside the profiled range: with `ncu --cache-control none` every kernel then
starts from the L2 the bench leaves it (full of the flush's dirty lines) instead of the clean,
invalidated one of ncu's default. --define NAME=VALUE (repeatable) builds the kernels with that
compile-time switch (scripts/define_probe.py lists them)."""
import argparse
import csv
import sys
from functools import partial


def profiled(fn, flush=lambda: None):
    """Run fn once between cudaProfilerStart / Stop (the range `ncu --profile-from-start off` profiles),
    after flush() and with the device idle on both sides."""
    import cupy

    flush()
    cupy.cuda.Device().synchronize()
    cupy.cuda.profiler.start()
    fn()
    cupy.cuda.Device().synchronize()
    cupy.cuda.profiler.stop()


def _profile(specs, dirty=False):
    import cupy

    import cugemm
    from cugemm import testing
    from cugemm.bench import Timer

    profiled_ = partial(profiled, flush=Timer().flush if dirty else (lambda: None))

    stream_src = r"""
extern "C" __global__ void stream_read(const int4* __restrict__ x, long long n, int* out) {
  int acc = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const int4 v = x[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7fffffff) *out = acc;  // keeps the loads
}"""
    for spec in specs:
        kind, _, arg = spec.partition(":")
        if kind == "stream":
            n = int(arg) // 16
            x = cupy.random.randint(0, 1 << 30, size=n * 4, dtype=cupy.int32)
            out = cupy.zeros(1, cupy.int32)
            k = cupy.RawKernel(stream_src, "stream_read")
            sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
            launch = lambda: k((sms * 8,), (256,), (x, cupy.int64(n), out))  # noqa: E731
            launch()
            profiled_(launch)
            continue
        arg, _, names = arg.partition(":")
        M, N, K = map(int, arg.split("x"))
        a, b = testing.random_operands(kind, M, N, K)
        # cugemm.matmul, or the named variants (DTYPE:MxNxK:NAME,NAME,...)
        ours = [partial(cugemm.run, n, a, b) for n in names.split(",")] if names else [
            partial(cugemm.matmul, a, b)]
        for _ in range(3):
            cupy.matmul(a, b)
            for f in ours:
                f()
        profiled_(partial(cupy.matmul, a, b))
        for f in ours:
            profiled_(f)
        print(spec, "->", names or str(cugemm.explain(a, b)).splitlines()[0], file=sys.stderr)


def _summary(path):
    rows = {}
    with open(path) as f:
        lines = [ln for ln in f if ln.startswith('"')]
    for r in csv.DictReader(lines):
        key = (r["ID"], r["Kernel Name"][:70])
        rows.setdefault(key, {})[r["Metric Name"]] = f'{r["Metric Value"]} {r["Metric Unit"]}'.strip()
    for (kid, name), m in rows.items():
        print(f"{kid:>3} {name:<70} dur {m.get('Duration', '?'):>12} dram {m.get('DRAM Throughput', '?'):>7} "
              f"mem {m.get('Memory Throughput', '?'):>7} sm {m.get('Compute (SM) Throughput', '?'):>7}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("specs", nargs="*", help="DTYPE:MxNxK, DTYPE:MxNxK:NAME,... or stream:BYTES")
    p.add_argument("--summary", metavar="CSV", help="summarise an `ncu --csv --page details` file instead")
    p.add_argument("--dirty", action="store_true", help="the bench's L2 flush before each profiled launch")
    p.add_argument("--define", action="append", default=[], metavar="NAME=VALUE",
                   help="a compile-time switch of the kernels (repeatable)")
    args = p.parse_args()
    if args.define:
        from cugemm import jit

        jit.set_defines(args.define)
    if args.summary:
        _summary(args.summary)
    else:
        _profile(args.specs, args.dirty)


if __name__ == "__main__":
    main()
