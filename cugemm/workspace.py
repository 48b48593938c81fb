"""Scratch memory for the kernels that need it: split-K partial sums and arrival counters.

A variant with a `workspace_fn` (the split-K rung, hgemm_wgmma_splitk; the skinny kernels,
hgemm_skinny) asks, per launch, for `Need(floats, counters)`: fp32 partial-sum slots, and uint32
counters that must be zero when the launch starts (the kernel's last arrival resets each one it
used, so they are zero again when it ends). Both live in one buffer, counters first:

    [counters, padded to 256 bytes | partials]

Two launches that may run at the same time need separate buffers; launches in one stream run one
after the other, so a buffer is held per (allocator, device, stream) and grown when a launch needs
more (`held`). A buffer held before a CUDA-graph capture serves the launches captured on its stream,
so no buffer is freed once used: one that is replaced or evicted is retired, and kept. Inside a
capture nothing may be allocated outside the graph's own pool, so a buffer for a stream that holds
none is not held there: `fresh` allocates one per call with the caller's allocator (torch's caching
allocator gives memory from the graph's pool, zeroed by a memset the graph records, and the pool
keeps it for the graph's life).

Allocators are callables `alloc(nbytes) -> (owner, address)` returning a zeroed buffer: `cupy_alloc`
(CuPy's pool, the current CuPy stream) and cugemm.serve's torch allocator (torch's caching
allocator, torch's current stream).
"""
from __future__ import annotations

import threading
from typing import NamedTuple

ALIGN = 256
MAX_HELD = 64


class Need(NamedTuple):
    """What one launch asks for: fp32 partial slots and zeroed uint32 counters."""

    floats: int
    counters: int

    @property
    def counter_bytes(self) -> int:
        return -(-4 * max(self.counters, 1) // ALIGN) * ALIGN

    @property
    def nbytes(self) -> int:
        return self.counter_bytes + 4 * max(self.floats, 1)


class Work(NamedTuple):
    """The device addresses a launch gets: its partial slots and its counters."""

    partials: int
    counters: int


_HELD: dict = {}   # (allocator kind, device, stream) -> (owner, Need it was sized for, Work)
_RETIRED: list = []  # owners replaced by a larger buffer or evicted: kept, since a captured CUDA graph
                     # may still launch kernels on them (each growth at least doubles: at most the
                     # largest buffer's size again)
_lock = threading.Lock()


def _work(need: Need, base: int) -> Work:
    return Work(base + need.counter_bytes, base)


def fresh(need: Need, alloc) -> tuple[Work, object]:
    """A new zeroed buffer for one launch: (its Work, the owner to keep alive while it runs)."""
    owner, base = alloc(need.nbytes)
    return _work(need, base), owner


def lookup(kind: str, device: int, stream: int, need: Need):
    """The Work of the buffer held for that stream when it is big enough for `need`, else None."""
    hit = _HELD.get((kind, device, stream))
    if hit is not None and hit[1].floats >= need.floats and hit[1].counters >= need.counters:
        return hit[2]
    return None


def held(kind: str, device: int, stream: int, need: Need, alloc) -> Work:
    """The buffer held for launches of one stream (grown to `need` when smaller), as a Work."""
    work = lookup(kind, device, stream, need)
    if work is not None:
        return work
    key = (kind, device, stream)
    with _lock:
        old = _HELD.get(key)
        grown = Need(max(need.floats, 1 << 16, 2 * old[1].floats if old else 0),
                     max(need.counters, 1024, 2 * old[1].counters if old else 0))
        owner, base = alloc(grown.nbytes)
        if old is not None:
            _RETIRED.append(old[0])
        if len(_HELD) >= MAX_HELD and key not in _HELD:
            _RETIRED.append(_HELD.pop(next(iter(_HELD)))[0])
        _HELD[key] = (owner, grown, _work(grown, base))
        return _HELD[key][2]


def for_launch(lib, device: int, stream: int, need: Need, keep: list) -> Work:
    """The Work of one launch on `stream` for the caller's array library `lib` (cugemm.serve's: kind,
    capturing(stream), alloc_zeroed(nbytes, device)): the stream's held buffer (held); inside a
    CUDA-graph capture, for a stream that holds none, a fresh one (fresh), its owner appended to
    `keep` so that it lives until the launch is enqueued."""
    work = lookup(lib.kind, device, stream, need)
    if work is None and lib.capturing(stream):
        work, owner = fresh(need, lambda n: lib.alloc_zeroed(n, device))
        keep.append(owner)
    elif work is None:
        work = held(lib.kind, device, stream, need, lambda n: lib.alloc_zeroed(n, device))
    return work


def launch_held(gemm, kind: str, device: int, stream: int, need: Need, ptrs) -> bool:
    """Launch the prepared `gemm` (cugemm.prepared; A, B, C at `ptrs`) on the buffer `stream` holds
    for `need`, the serving paths' one launch; False, launching nothing, when it holds none big
    enough (the caller then goes the long way, for_launch)."""
    work = lookup(kind, device, stream, need)
    if work is None:
        return False
    gemm.launch((*ptrs, 0, work.partials, work.counters), stream)
    return True


def held_buffer(kind: str, device: int, stream: int):
    """(owner, Need) of the buffer held for that stream, or None (for tests and diagnostics)."""
    hit = _HELD.get((kind, device, stream))
    return None if hit is None else hit[:2]


def held_bytes() -> int:
    """Device memory held by every stream's buffer (retired ones not counted)."""
    return sum(n.nbytes for _, n, _ in _HELD.values())


def clear() -> None:
    """Forget every buffer, retired ones too (for tests: no captured graph may still use them)."""
    with _lock:
        _HELD.clear()
        _RETIRED.clear()


def cupy_alloc(nbytes: int):
    """A zeroed buffer from CuPy's memory pool (zeroed on the current CuPy stream)."""
    import cupy

    buf = cupy.zeros(nbytes, dtype=cupy.uint8)
    return buf, buf.data.ptr
