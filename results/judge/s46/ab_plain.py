# cugemm.matmul(x, w.T) against x @ w.T, bf16, per shape: triton do_bench (L2 flushed) and 200 calls back to back
import sys, torch, triton, cugemm
shapes = sys.argv[1].split(",")
for s in shapes:
    M, N, K = (int(v) for v in s.split("x"))
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g)
    w = (torch.randn(N, K, device="cuda", generator=g) / K ** 0.5).to(torch.bfloat16)
    f = {"cg": lambda: cugemm.matmul(x, w.t()), "th": lambda: x @ w.t()}
    db = {k: [] for k in f}; bb = {k: [] for k in f}
    for _ in range(2):
        for k, fn in f.items():
            db[k].append(triton.testing.do_bench(fn, warmup=10, rep=60, return_mode="median") * 1e3)
            for _ in range(10): fn()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            n = max(20, int(0.15e6 / db[k][-1]))
            e0.record()
            for _ in range(n): fn()
            e1.record(); e1.synchronize()
            bb[k].append(e0.elapsed_time(e1) * 1e3 / n)
    m = lambda v: sorted(v)[len(v) // 2 - 1 + len(v) % 2] if len(v) % 2 else sum(v) / len(v)
    print(f"{s:>16}  do_bench cg {m(db['cg']):8.1f} th {m(db['th']):8.1f} {100*m(db['th'])/m(db['cg']):6.1f}%   "
          f"b2b cg {m(bb['cg']):8.1f} th {m(bb['th']):8.1f} {100*m(bb['th'])/m(bb['cg']):6.1f}%", flush=True)
