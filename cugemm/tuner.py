"""The tuner: time the plans cugemm.matmul could run for given shapes on this GPU and record them
in the tuning cache or a shipped table (cugemm/tuning.py holds both and their format).

    cugemm.tune([(4096, 4096, 1024)], "f16")          # python -m cugemm tune --shapes 4096x4096x1024
"""
from __future__ import annotations

from . import device as _device
from . import dtypes, operand, select, tuning
from .registry import variants as _variants
from .version import __version__

TUNE_PLANS, TUNE_SPREAD = 6, 5.0  # plans timed per shape, and how far behind the best they may be
AUTOTUNE_PLANS = 12                # plans autotune times for a new bucket: the best half of the tables' and
                                   # of the model's rankings
# A pair whose cupy.matmul time is over SLOWED x the shape's fastest one ran while the GPU was slowed
# (seen on H100s: a few pairs in a thousand at 2-10x, cupy.matmul and the plan alike, by unequal
# factors); it is timed again up to RETRIES times, and a plan still slowed is not recorded
SLOWED, RETRIES = 1.3, 2


def settled(pairs: dict, measure) -> dict:
    """{name: (us, baseline_us)} with every pair timed while the GPU was slowed (its baseline over
    SLOWED x the smallest baseline) timed again by measure(name) -> (us, baseline_us), up to RETRIES
    times, keeping the try with the smallest baseline; a name whose pair stays slowed is left out."""
    out = dict(pairs)
    for attempt in range(RETRIES + 1):
        floor = min((b for _, b in out.values()), default=0.0)
        slowed = [n for n, (_, b) in out.items() if b > SLOWED * floor]
        if not slowed:
            return out
        for name in slowed:
            if attempt < RETRIES:
                again = measure(name)
                if again[1] < out[name][1]:
                    out[name] = again
            else:
                del out[name]
    return out


def random_operands(dtype, M: int, N: int, K: int, a_layout: str = "row", b_layout: str = "row"):
    """Fresh random (A, B) of `dtype` for tune and the tests: A M x K and B K x N, each row-major or
    a transposed view of a row-major array ('col')."""
    import cupy

    from . import testing

    a, b = testing.random_operands(dtype, M, N, K)
    if a_layout == "col":
        a = cupy.ascontiguousarray(a.T).T
    if b_layout == "col":
        b = cupy.ascontiguousarray(b.T).T
    return a, b


def tune(shapes, dtype="float16", *, layouts=("row", "row"), allow_tf32: bool = False, variants=None,
         path=None, ship: bool = False, iters: int = 20, log=None, plans: int = TUNE_PLANS) -> list[dict]:
    """Time every plan matmul could run for each (M, N, K) in `shapes` on this GPU and record the
    times in the tuning cache (tuning.cache_path(), or `path`), which matmul reads from then on.

    dtype     'float16' / 'f16', 'bfloat16', 'float32' (with allow_tf32 the TF32 variants too)
    layouts   (A, B): 'row' or 'col' (transposed views), the operands' layout class to tune
    variants  names or a glob to limit the candidates (default: matmul's candidates)
    plans     how many of the model's best plans are timed per shape (within TUNE_SPREAD of its best),
              and how many of matmul's own best (tables first) besides
    ship      write a shipped table (cugemm/tables/<model>.json for this GPU, or `path`) instead
    Each plan's result is checked against the float64 reference before it is timed; a wrong one
    is reported and not recorded. Every plan is timed alternating with cupy.matmul on the same
    operands (the bench's Timer.measure_pair). Returns one dict per (shape, variant) with the
    times in microseconds and the ratio to cupy.matmul.
    """
    import cupy

    from . import accuracy, serve, testing
    from .bench.timing import Timer

    dt = dtypes.get(dtype)  # the inputs first: a wrong one is named before any GPU check
    if dt.name == "tfloat32":
        dt, allow_tf32 = dtypes.FLOAT32, True
    dev_id = _device.current()
    device = _device.get(dev_id)
    timer = Timer(warmup=2, iters=iters, budget_s=0.25)
    rows, entries = [], {}
    for M, N, K in shapes:
        a, b = random_operands(dt.name, M, N, K, *layouts)
        out = testing.poisoned((M, N), dt.name)
        ref = accuracy.reference(a, b)
        A, B, C = (operand.describe(x, w, 'cugemm.tune') for x, w in ((a, 'A'), (b, 'B'), (out, 'out')))
        p = serve.problem_of(A, B, C, allow_tf32, dev_id)
        choice = select.select(p, None, variants)
        # plans the model puts far behind its best are not timed (at most `plans`, within
        # TUNE_SPREAD of the best modelled time), unless the candidates were named; with them, the
        # best `plans` of matmul's own ranking (the tables already measured), which the model alone
        # may rank far down (a table fitted elsewhere, or earlier, then still gets them measured)
        best = choice.ranked[0].est_us if choice.ranked else 0.0
        todo = choice.ranked if variants is not None else \
            [q for q in choice.ranked if q.est_us <= TUNE_SPREAD * best][:plans]
        if variants is None:
            timed = {q.variant.name for q in todo}
            own = {q.variant.name for q in select.select(p, serve.measured(dev_id)).ranked[:plans]}
            extra = own - timed
            todo += [q for q in choice.ranked if q.variant.name in extra]
        rec = {"shape": [M, N, K], "us": {}}
        timed_rows, runs = {}, {}  # name -> its row, and the callable timing its pair again
        for plan in todo:
            name = plan.variant.name
            row = {"M": M, "N": N, "K": K, "dtype": dt.name, "variant": name, "plan": plan.describe()}
            try:
                out = testing.poisoned((M, N), dt.name)
                serve.execute(plan, a, b, out)
                err = accuracy.rel_error(out, ref)
                math_dt = plan.variant.math_dtype
                if not accuracy.within(err, math_dt, plan.variant.dtype_acc):
                    row.update(status="FAIL", rel_err=err)
                    rows.append(row)
                    continue
                base_out = cupy.empty((M, N), dtype=a.dtype)
                pair = _pair(timer, lambda plan=plan, out=out: serve.execute(plan, a, b, out),
                             lambda base_out=base_out: cupy.matmul(a, b, out=base_out))
                runs[name] = pair
                timed_rows[name] = (row, pair(), err)
            except Exception as e:  # a plan that cannot run here is reported, not recorded
                row.update(status="error", detail=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
                rows.append(row)
                continue
        _settle(timed_rows, runs, rec, rows, log)
        if rec["us"]:
            entries[tuning.bucket_key(tuning.problem_group(p), M, N, K)] = rec
    _write(entries, device, path, ship)
    return rows


def tune_batched(cases, dtype="float16", *, layouts=("row", "row"), variants=None, path=None, ship: bool = False,
                 iters: int = 20, log=None) -> list[dict]:
    """tune() for batches in one launch: time every batched form that can compute each batch
    (count, M, N, K) of `cases` (operands (count, M, K) and (count, K, N), each row-major or a
    transposed view), alternating with cupy.matmul on the same operands, and record the times under
    the batch's problem (cugemm.batched.problem: its stacked rows, tuning group '...|batched'), which
    matmul's batched plans read. Each result is checked against the float64 reference first."""
    import cupy

    from . import accuracy, batched, serve, testing
    from .bench.timing import Timer

    dt = dtypes.get(dtype)
    if dt.name not in ("float16", "bfloat16"):
        raise ValueError(f"tune --batched: the batched forms take float16 and bfloat16, not {dt.name}")
    dev_id = _device.current()
    device = _device.get(dev_id)
    timer = Timer(warmup=2, iters=iters, budget_s=0.25)
    allowed = None if variants is None else {v.name for v in _variants(variants)}
    rows, entries = [], {}
    for count, M, N, K in cases:
        a = testing.cast(cupy.random.standard_normal((count, M, K), dtype=cupy.float32), dt.name)
        b = testing.cast(cupy.random.standard_normal((count, K, N), dtype=cupy.float32), dt.name)
        if layouts[0] == "col":
            a = cupy.ascontiguousarray(a.swapaxes(1, 2)).swapaxes(1, 2)
        if layouts[1] == "col":
            b = cupy.ascontiguousarray(b.swapaxes(1, 2)).swapaxes(1, 2)
        ref = cupy.matmul(testing.to_float64(a), testing.to_float64(b))
        p = batched.problem(count, M, N, K, dt, *layouts, device)
        rec = {"shape": [p.M, N, K], "batch": [count, M], "us": {}}
        timed_rows, runs = {}, {}
        for plan in batched.choose(count, M, N, K, dt, *layouts, device, None, dense=device.cc // 10 != 9).ranked:
            if variants is not None and plan.variant.name not in allowed:
                continue
            name = plan.variant.name
            row = {"batch": count, "M": M, "N": N, "K": K, "dtype": dt.name, "variant": name, "plan": "batched"}
            out = testing.poisoned((count, M, N), dt.name)
            r = serve.batched_ready(a, b, out, name)
            if not r.fast:
                raise ValueError(f"tune --batched: {count}x{M}x{N}x{K} needs copies (the batched forms read rows of "
                                 "a multiple of 16 bytes in place): give M, N and K multiples of 8")
            serve.execute_batched(r, a, b, out)
            err = accuracy.rel_error(out, ref)
            if not accuracy.within(err, dt.name, "float32"):
                row.update(status="FAIL", rel_err=err)
                rows.append(row)
                continue
            # cupy.matmul multiplies no bfloat16 batch: the baseline multiplies the same bits as float16
            base_a, base_b = a.view(cupy.float16), b.view(cupy.float16)
            base_out = cupy.empty((count, M, N), dtype=cupy.float16)
            pair = _pair(timer, lambda r=r, out=out: serve.execute_batched(r, a, b, out),
                         lambda base_out=base_out: cupy.matmul(base_a, base_b, out=base_out))
            runs[name] = pair
            timed_rows[name] = (row, pair(), err)
        _settle(timed_rows, runs, rec, rows, log)
        if rec["us"]:
            entries[tuning.bucket_key(tuning.problem_group(p), p.M, N, K)] = rec
    _write(entries, device, path, ship)
    return rows


def _pair(timer, run, base):
    """A callable timing `run` against the baseline `base` (the bench's Timer.measure_pair,
    alternating): (median us, baseline median us)."""
    def pair():
        t, tb = timer.measure_pair(run, base)
        return 1e3 * t["median"], 1e3 * tb["median"]

    return pair


def _settle(timed_rows: dict, runs: dict, rec: dict, rows: list, log) -> None:
    """The pairs of one shape settled (settled(): re-timed while the GPU looked slowed, dropped if it
    stays so), each kept plan's time and the smallest baseline recorded in `rec`, every row (kept or
    not) appended to `rows` and the kept ones logged. timed_rows: name -> (row, (us, baseline_us),
    rel_err); runs: name -> the callable timing its pair again."""
    kept = settled({n: x[1] for n, x in timed_rows.items()}, lambda n: runs[n]())
    for name, (row, first, err) in timed_rows.items():
        if name not in kept:
            row.update(status="error", detail=f"timed while the GPU was slowed (cupy.matmul {first[1]:.1f} us)")
            rows.append(row)
            continue
        us, base_us = kept[name]
        rec["us"][name] = us
        rec["baseline_us"] = min(base_us, rec.get("baseline_us", base_us))
        row.update(status="ok", us=us, baseline_us=base_us, pct=100.0 * base_us / us, rel_err=err)
        rows.append(row)
        if log is not None:
            log(row)


def _write(entries: dict, device, path, ship: bool) -> None:
    """Merge tuned buckets into the shipped table (ship) or the tuning cache, and reload matmul's."""
    import cupy

    from . import serve

    if entries:
        if ship:
            target = path or tuning.shipped_path(device.name)
            if target is None:
                raise ValueError(f"no shipped table is named for {device.name!r}; pass path=")
            tuning.merge(target, None, entries)
        else:
            key = tuning.gpu_key(device.name, cupy.cuda.runtime.driverGetVersion(), __version__)
            tuning.merge(path or tuning.cache_path(), key, entries)
    serve.reload_tuning()


def autotune(p: select.Problem, dev_id: int) -> bool:
    """cugemm.matmul's first use of a shape bucket with CUGEMM_AUTOTUNE=1: time the bucket's plausible
    plans (the best AUTOTUNE_PLANS / 2 of matmul's ranking and of the model's) on fresh operands of
    p's shape, layouts and type, on this GPU, and record them in the tuning cache, which decides from
    then on (in this process and later ones).
    False, doing nothing, when the cache already holds p's bucket or no operands of p's kind can be
    made (a strided or unaligned operand, or rows further apart than the tuner's dense operands give:
    its bucket is not one the tuner's operands fall in)."""
    if tuning.problem_group(p).endswith("unaligned") or not all(op.layout in ("row", "col") for op in (p.a, p.b)):
        return False
    if tuning.alignment_class(p) != tuning.dense_class(p.dtype, p.a.layout, p.b.layout, p.M, p.N, p.K):
        return False
    import cupy

    key = tuning.gpu_key(p.device.name, cupy.cuda.runtime.driverGetVersion(), __version__)
    if tuning.bucket_key(tuning.problem_group(p), p.M, p.N, p.K) in tuning.load_tuned(key).entries:
        return False
    from . import serve

    # the plans ranked best by the tables and model matmul would otherwise use, and by the model alone
    # (a table fitted on other shapes may rank them wrongly, the model alone misses what it measured)
    names = []
    for measured in (serve.measured(dev_id), None):
        for plan in select.select(p, measured).ranked[:AUTOTUNE_PLANS // 2]:
            if plan.variant.name not in names:
                names.append(plan.variant.name)
    with cupy.cuda.Device(dev_id):
        rows = tune([(p.M, p.N, p.K)], "float32" if p.allow_tf32 else p.dtype.name, layouts=(p.a.layout, p.b.layout),
                    allow_tf32=p.allow_tf32, variants=names)
    return any(r.get("status") == "ok" for r in rows)
