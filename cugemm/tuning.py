"""Measured kernel times that rank cugemm.matmul's plans: the tuning cache and the shipped tables.

Both hold, per *shape bucket*, the time each candidate plan took on a GPU for one shape of that
bucket, and cupy.matmul's time beside it:

    {"format": 1, "entries": {BUCKET: {"shape": [M, N, K], "us": {VARIANT: t, ...}, "baseline_us": t}}}

A bucket is (element type, TF32 allowed, layouts of A and B, the operands' alignment class, and
M, N, K rounded to half octaves: round(2 log2 x)), e.g. `float16|row,row|aligned|24,24,20` for
4096 x 4096 x 1024. A time is the whole plan's (its copies included), since the layout and alignment
class fixes which copies a plan makes. The alignment classes (alignment_class):

    aligned    every operand 16-byte aligned in place, and A's and B's rows (or columns, for a
               column-major operand) a multiple of RAGGED_BELOW = 32 bytes apart
    ragged     every operand 16-byte aligned, but A's or B's rows not 32 bytes apart: 16-bit
               extents that are odd multiples of 8 (2184^3 in fp16: rows of 4368 bytes)
    unaligned  some operand not 16-byte aligned: plans copy it

Ragged rows are a class of their own because the TMA kernels read them far slower while cuBLAS does
not: a row that starts in the middle of a 32-byte sector makes every row of a TMA box straddle one
more sector and cache line. scripts/stride_probe.py (H200, fp16, microseconds, rows 128-byte / 32-byte
aligned / as they are): 2184^3 with 128x192 tiles 40.7 / 45.1 / 61.0, 2728^3 73.8 / 84.6 / 107.5; the
2-CTA-cluster 128x256 form (B multicast: half the TMA requests per CTA) 52.4 / 52.8 / 56.0 and
63.8 / 64.7 / 67.5; cupy.matmul 36.6 and 61.8 in place. Rows 32 bytes apart (not 128) cost 1-15%
and stay in the aligned class. A table measured on aligned rows ranks ragged problems wrongly; with no
ragged bucket near a ragged problem, the aligned buckets answer (Measured).

The tuning cache (`cugemm.tune`, `python -m cugemm tune`) is one JSON file in the user cache
directory, $CUGEMM_CACHE_DIR or $XDG_CACHE_HOME/cugemm or ~/.cache/cugemm, `tuning.json`; its
entries sit under a key of the GPU's name, the driver version and cugemm's version, so a new driver
or a new cugemm ignores (and keeps) the old ones. Writes take an exclusive lock on a sibling
`.lock` file, re-read the file under the lock, merge, write a temporary file in the same folder and
rename it over the old one: concurrent tuners lose nothing and readers never see half a file. A file
that is not valid JSON, or not this format, is ignored with a warning (and replaced on the next
write).

The shipped tables (cugemm/tables/<model>.json, same entries without the version key) come from
`python -m cugemm tune --sets ... --ship` on one GPU of the model; H200s use the H100 table (same
SMs, clocks and tensor cores; more bandwidth).
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import tempfile
import warnings
from pathlib import Path

from . import dtypes, operand, select

FORMAT = 1
SHIPPED = {"H100": "h100.json", "H200": "h100.json"}
NEAR = 3  # buckets used when their M, N, K half-octaves differ by at most this much in total
         # (their times scaled to the problem by the model: Measured)
NEIGHBOURS = 3   # how many of the nearest measured buckets an estimate averages (Measured)
FIXED_US = select.MIN_KERNEL_US  # the part of a measured time that does not scale with the shape


def half_octave(x: int) -> int:
    return round(2 * math.log2(x)) if x >= 1 else 0


RAGGED_BELOW = 32  # bytes: A's or B's rows not a multiple of this apart make a problem 'ragged'


def group_key(dtype: str, allow_tf32: bool, a_layout: str, b_layout: str, alignment: str) -> str:
    """alignment: 'aligned', 'ragged' or 'unaligned' (alignment_class)."""
    return f"{dtype}{'+tf32' if allow_tf32 else ''}|{a_layout or 'strided'},{b_layout or 'strided'}|{alignment}"


def bucket_key(group: str, M: int, N: int, K: int) -> str:
    return f"{group}|{half_octave(M)},{half_octave(N)},{half_octave(K)}"


def _rows_class(lds, itemsize: int) -> str:
    """'ragged' when A's or B's leading dimension (elements) is not a multiple of RAGGED_BELOW bytes."""
    return "ragged" if any(ld * itemsize % RAGGED_BELOW for ld in lds) else "aligned"


def alignment_class(p) -> str:
    """'aligned', 'ragged' or 'unaligned' (the module's docstring) for problem p."""
    if not all(op.layout and op.align >= 16 for op in (p.a, p.b, p.c)):
        return "unaligned"
    return _rows_class((p.a.ld, p.b.ld), p.dtype.itemsize)


def dense_class(dtype, a_layout: str, b_layout: str, M: int, N: int, K: int) -> str:
    """The alignment class of fresh dense operands of M x N x K in these layouts (the tuner's):
    'aligned' or 'ragged' (dtype: a cugemm.dtypes.DType)."""
    return _rows_class((K if a_layout == "row" else M, N if b_layout == "row" else K), dtype.itemsize)


def problem_group(p) -> str:
    """The tuning group of a select.Problem: its group_key, and '|batched' for a batch in one launch
    (measured as the batched forms ran it, filed under its stacked rows' M x N x K)."""
    group = group_key(p.dtype.name, p.allow_tf32, p.a.layout, p.b.layout, alignment_class(p))
    return group + "|batched" if getattr(p, "batched", False) else group


def _split(bucket: str):
    group, dims = bucket.rsplit("|", 1)
    return group, tuple(int(x) for x in dims.split(","))


# ---- files ---------------------------------------------------------------------------------------
def cache_path() -> Path:
    base = os.environ.get("CUGEMM_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "cugemm")
    return Path(base) / "tuning.json"


def _read(path: Path) -> dict:
    """The file's object, or {} (with a warning) when it is missing, unreadable or not this format."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as e:
        warnings.warn(f"cugemm: cannot read tuning file {path}: {e}; ignoring it", stacklevel=3)
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        warnings.warn(f"cugemm: tuning file {path} is not valid JSON; ignoring it (the next tune "
                      "replaces it)", stacklevel=3)
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("entries"), dict):
        warnings.warn(f"cugemm: tuning file {path} is not cugemm tuning format {FORMAT}; ignoring it",
                      stacklevel=3)
        return {}
    return data


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive lock on path + '.lock' (POSIX flock; no lock where fcntl is missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # Windows: the rename below is still atomic
        yield
        return
    with open(str(path) + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write_atomic(path: Path, data: dict) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def off_centre(shape) -> float:
    """How far M x N x K lies from the centre of its bucket, in half octaves summed over M, N, K."""
    return sum(abs(2 * math.log2(x) - half_octave(x)) for x in shape)


def merge(path: Path, key: str | None, entries: dict) -> None:
    """Add `entries` (bucket -> record) to the file, under `key` (the GPU/driver/version key of the
    tuning cache) or at the top (a shipped table: key None). Records of the same shape merge their
    variants, newer times replacing older ones. A bucket holds one shape: of two shapes that fall in
    it (1000^3 and 1024^3 both do), the one nearer the bucket's centre (off_centre) keeps it, the
    newer on a tie, so what a bucket holds does not depend on the order shapes were tuned in.
    A record of fewer variants than the bucket's (a tune of some variants only, `tune --variants`)
    never displaces one of another shape, and merged into one of the same shape its times are put on
    the bucket's clock: scaled by the bucket's baseline (cupy.matmul's time in the run that measured
    it) over its own, so that times from runs at different clocks compare (an H100 at its power cap
    moves by a few percent from run to run); the bucket keeps its baseline. Records of no fewer
    variants replace the bucket's times and baseline as before."""
    path = Path(path)
    with _locked(path):
        data = _read(path) or {"format": FORMAT, "entries": {}}
        target = data["entries"]
        if key is not None:
            target = target.setdefault(key, {})
        for bucket, rec in entries.items():
            old = target.get(bucket)
            partial = _valid(old) and len(rec["us"]) < len(old["us"])
            if isinstance(old, dict) and isinstance(old.get("us"), dict) and old.get("shape") == rec["shape"]:
                base, own = old.get("baseline_us"), rec.get("baseline_us")
                if partial and base and own:
                    old["us"].update({v: t * base / own for v, t in rec["us"].items()})
                else:
                    old["us"].update(rec["us"])
                    old["baseline_us"] = own if own is not None else base
            elif not _valid(old) or (not partial and off_centre(rec["shape"]) <= off_centre(old["shape"])):
                target[bucket] = rec
        _write_atomic(path, data)


# ---- look-ups ------------------------------------------------------------------------------------
def _valid(rec) -> bool:
    return (isinstance(rec, dict) and isinstance(rec.get("us"), dict) and isinstance(rec.get("shape"), list)
            and len(rec["shape"]) == 3 and all(isinstance(x, int) and x > 0 for x in rec["shape"]))


class Table:
    """Bucketed measurements of one source ('tuned' or 'table:<file>') for one GPU."""

    def __init__(self, entries: dict, source: str):
        self.source = source
        self.entries = {k: r for k, r in entries.items() if isinstance(k, str) and "|" in k and _valid(r)}
        self._groups: dict = {}
        self._near: dict = {}  # (group, half octaves, count) -> near()'s answer
        for k in self.entries:
            g, dims = _split(k)
            self._groups.setdefault(g, []).append((dims, k))

    def __len__(self):
        return len(self.entries)

    def nearest(self, group: str, M: int, N: int, K: int):
        """(bucket key, distance) of the measured bucket of `group` nearest to M x N x K (the exact
        one if measured; else within NEAR half octaves in total), or None."""
        near = self.near(group, M, N, K, 1)
        return near[0] if near else None

    def near(self, group: str, M: int, N: int, K: int, count: int) -> list:
        """[(bucket key, distance)] of the `count` measured buckets of `group` nearest to M x N x K
        within NEAR half octaves in total, nearest first (ties by key). Remembered per bucket: every
        candidate of a problem asks."""
        want = (half_octave(M), half_octave(N), half_octave(K))
        hit = self._near.get((group, want, count))
        if hit is None:
            found = sorted((sum(abs(x - y) for x, y in zip(dims, want)), k) for dims, k in self._groups.get(group, ()))
            hit = self._near[(group, want, count)] = [(k, d) for d, k in found if d <= NEAR][:count]
        return hit

    def time(self, key: str, variant: str) -> float | None:
        """The time `variant` measured in bucket `key` (microseconds), or None when it has none
        that is a positive finite number."""
        us = self.entries[key]["us"].get(variant)
        if not isinstance(us, (int, float)) or not math.isfinite(us) or us <= 0:
            return None
        return float(us)

    def lookup(self, group: str, M: int, N: int, K: int, variant: str):
        """(us scaled to M x N x K, source) for `variant` in the nearest measured bucket, or None.
        Every variant is looked up in the same bucket, so the plans of one problem are compared on
        one measurement: a variant the tuner did not time there gets None (the model), never a
        time scaled from another bucket (a flops ratio across buckets ignores how the tiles fill the
        GPU: M = 128 and M = 256 run the same number of 128-row tiles)."""
        near = self.nearest(group, M, N, K)
        if near is None:
            return None
        key, distance = near
        us = self.time(key, variant)
        if us is None:
            return None
        m, n, k = self.entries[key]["shape"]
        return us * (M * N * K) / (m * n * k), self.source + ("" if distance == 0 else "~")


def gpu_key(name: str, driver: int, version: str) -> str:
    return f"{name}|driver {driver}|cugemm {version}"


def load_tuned(key: str, path: Path | None = None) -> Table:
    data = _read(Path(path) if path else cache_path())
    entries = data.get("entries", {}).get(key, {}) if data else {}
    return Table(entries if isinstance(entries, dict) else {}, "tuned")


def shipped_path(gpu_name: str) -> Path | None:
    for model, fname in SHIPPED.items():
        if model in gpu_name:
            return Path(__file__).parent / "tables" / fname
    return None


def load_shipped(gpu_name: str) -> Table:
    path = shipped_path(gpu_name)
    if path is None or not path.exists():
        return Table({}, "table")
    data = _read(path)
    return Table(data.get("entries", {}) if data else {}, f"table:{path.name}")


class Measured:
    """The `measured` callable of select.estimate: the tuning cache first, then the shipped table."""

    def __init__(self, *tables: Table):
        self.tables = [t for t in tables if len(t)]

    def __call__(self, v, p):
        """The time of `v` on `p` from the first table that measured a bucket near `p` (the tuning
        cache before the shipped table), or None (then the model estimates it).

        p's own bucket, when measured, decides alone. Otherwise each of the NEIGHBOURS nearest buckets
        within NEAR half octaves that timed `v` gives an estimate, and their geometric mean, weighted
        1 / (1 + distance), is the answer. A time measured at another shape is scaled to p by the
        fallback model, past a fixed part: FIXED_US + (t - FIXED_US) x model(p) / model(there). The
        model knows how the tiles fill the GPU at each shape (M = 1024 and M = 2048 against one weight
        run 1 and 2 waves of 128 x 64 tiles, but 1/2 and 1 wave of 128 x 128 tiles), which a ratio of
        flops does not; the fixed part (launch, prologue, pipeline fill, epilogue) does not scale.
        Left-one-bucket-out over the shipped table (scripts/selection_loo.py): this picks a plan
        whose measured time is 2.6% (x @ W.T) and 1.6% (row-major) above the bucket's best on
        geometric mean, against 4.8% and 3.6% for the nearest bucket alone scaled without the fixed part."""
        if not self.tables:
            return None
        group = problem_group(p)
        for t in self.tables:
            near = t.near(group, p.M, p.N, p.K, NEIGHBOURS)
            if not near and "|ragged" in group:  # no ragged bucket near: the aligned ones
                aligned = group.replace("|ragged", "|aligned")
                near = t.near(aligned, p.M, p.N, p.K, NEIGHBOURS)
            if not near:
                continue
            if near[0][1] == 0:
                near = near[:1]
            logs, weights, here = [], [], None
            for key, distance in near:
                us = t.time(key, v.name)
                if us is None:
                    continue
                m, n, k = t.entries[key]["shape"]
                if (m, n, k) == (p.M, p.N, p.K):
                    return us, t.source
                if here is None:
                    here = model_us(v, p)
                there = model_us(v, dataclasses.replace(p, M=m, N=n, K=k))
                if here is None or there is None:
                    est = us * (p.M * p.N * p.K) / (m * n * k)
                else:
                    est = FIXED_US + max(us - FIXED_US, 0.1) * here / there
                logs.append(math.log(est))
                weights.append(1.0 / (1 + distance))
            if not logs:
                return None  # measured near p, but not this variant: the model ranks it
            est = math.exp(sum(x * w for x, w in zip(logs, weights)) / sum(weights))
            return est, t.source + ("" if near[0][1] == 0 else "~")
        return None


def model_us(v, p):
    """select's fallback model of v's kernel on problem p (None when v cannot compute it)."""
    plan, _ = select.make_plan(v, p)
    return None if plan is None else select.model_kernel_us(v, p, plan.dims)
