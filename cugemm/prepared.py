"""A kernel launch prepared once and replayed from raw pointers: what cugemm.matmul's plan cache
holds, so that a call it has seen before costs a few attribute writes and one driver call.

`Prepared(function_ptr, grid, block, shared_mem, args, pdl)` packs the kernel's parameters into
ctypes storage once. An argument is one of
    np.int32                 4 bytes, fixed
    np.int64                 8 bytes, signed, fixed
    np.float32               4 bytes, a float, fixed
    np.uint64 / int          8 bytes: an address, fixed unless it is a *slot* (below)
    cugemm.tma.TensorMap     its 128 bytes, copied; its global address is a slot when it points there
    a NumPy record array     its bytes passed by value (the relayout kernel's job table), fixed
Slots are found by value: the caller builds the arguments with SENTINEL addresses (`sentinel(k)`
for base k: A, B, C, the copy workspace, the split-K partials and counters, a grouped product's
group ends, an FP8 product's scales of A and B and its bias, a fused epilogue's source and
auxiliary output), and every address at
sentinel(k) + offset becomes "base k + offset", rewritten by `launch(bases, stream)` before the
driver call (cuLaunchKernelEx through ctypes, with programmatic dependent launch when `pdl`).

Re-pointing a tensor map writes its first 8 bytes: the CUtensorMap layout is opaque, so
`tensormap_address_patchable()` proves on this driver, once, that two encodings of one map at two
addresses differ in exactly those bytes, which hold the address; where it does not, a prepared launch
with maps re-encodes them per call instead (slower, same result).

Thread safety: one Prepared may be launched from several threads (each with its own stream); the
parameter storage is written and handed to the driver (which copies it) under a lock.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

from . import pdl as _pdl

SENTINEL_SHIFT = 40
SENTINEL_SPAN = 1 << 36        # an offset from a base is below this
A, B, C, WORK, PARTIALS, COUNTERS, GROUPS, SCALE_A, SCALE_B, BIAS, SRC, AUX = range(12)
BASES = 12


def sentinel(k: int) -> int:
    """The placeholder address of base k (16-byte aligned, far from any real allocation)."""
    return (0x100 + k) << SENTINEL_SHIFT


def _slot_of(value: int):
    """(base, offset) when `value` is a sentinel address, else None."""
    k = (value >> SENTINEL_SHIFT) - 0x100
    if 0 <= k < BASES and (value & ((1 << SENTINEL_SHIFT) - 1)) < SENTINEL_SPAN:
        return k, value - sentinel(k)
    return None


_patchable = None


def tensormap_address_patchable() -> bool:
    """Whether a CUtensorMap's global address is its first 8 bytes and nothing else depends on it
    (checked once per process on this driver by encoding one map at two addresses)."""
    global _patchable
    if _patchable is None:
        import cupy

        from . import tma

        cupy.cuda.runtime.free(0)  # the driver encodes maps in a context: make the device's current
        base = 1 << 44
        spec = tma.Spec(base, "float16", 1024, 512, 1024, (64, 64), 128)
        m0 = tma.encode(spec)
        m1 = tma.encode(spec._replace(ptr=base + 0x12340))
        b0 = bytes((ctypes.c_ubyte * 128).from_address(m0.address))
        b1 = bytes((ctypes.c_ubyte * 128).from_address(m1.address))
        _patchable = (b0[8:] == b1[8:] and int.from_bytes(b0[:8], "little") == base
                      and int.from_bytes(b1[:8], "little") == base + 0x12340)
    return _patchable


class Prepared:
    """One prepared launch (see the module docstring)."""

    __slots__ = ("function_ptr", "grid", "block", "shared_mem", "pdl", "_cfg", "_params", "_keep",
                 "_slots", "_maps", "_reencode", "_lock", "_cfg_ref")

    def __init__(self, function_ptr: int, grid, block, shared_mem: int, args, pdl: bool = False):
        self.function_ptr, self.grid, self.block, self.shared_mem, self.pdl = \
            function_ptr, tuple(grid), tuple(block), shared_mem, pdl
        keep, ptrs, slots, maps, reencode = [], [], [], [], []
        for x in args:
            if isinstance(x, np.int32):
                obj = ctypes.c_int32(int(x))
            elif isinstance(x, np.int64):  # a signed 64-bit value (a stride), fixed
                obj = ctypes.c_int64(int(x))
            elif isinstance(x, np.float32):  # a float (an epilogue's alpha or beta), fixed
                obj = ctypes.c_float(float(x))
            elif isinstance(x, (np.uint64, int)) and not isinstance(x, bool):
                obj = ctypes.c_uint64(int(x))
                hit = _slot_of(int(x))
                if hit is not None:
                    slots.append((obj, hit[0], hit[1]))
            elif isinstance(x, np.ndarray):  # a struct passed by value
                obj = (ctypes.c_ubyte * x.nbytes).from_buffer_copy(x.tobytes())
            elif hasattr(x, "spec") and hasattr(x, "address"):  # a tensor map
                obj = (ctypes.c_ubyte * 128).from_buffer_copy(
                    bytes((ctypes.c_ubyte * 128).from_address(x.address)))
                hit = _slot_of(x.spec.ptr)
                if hit is not None:
                    if tensormap_address_patchable():
                        maps.append((ctypes.c_uint64.from_buffer(obj, 0), hit[0], hit[1]))
                    else:
                        reencode.append((obj, x.spec, hit[0], hit[1]))
            else:
                raise TypeError(f"cugemm.prepared: no raw launch for a kernel argument of type {type(x).__name__}")
            keep.append(obj)
            ptrs.append(ctypes.addressof(obj))
        self._keep = keep
        self._params = (ctypes.c_void_p * max(1, len(ptrs)))(*ptrs)
        self._slots, self._maps, self._reencode = tuple(slots), tuple(maps), tuple(reencode)
        attrs = ctypes.pointer(_pdl.PDL_ATTRIBUTE) if pdl else None
        self._cfg = _pdl.LaunchConfig(*self.grid, *self.block, shared_mem, None, attrs, 1 if pdl else 0)
        self._cfg_ref = ctypes.byref(self._cfg)
        self._lock = threading.Lock()

    @property
    def slots(self) -> tuple:
        """(base, offset) of every re-pointed address: plain arguments, then tensor maps."""
        return tuple((k, off) for _, k, off in self._slots) + tuple((k, off) for _, k, off in self._maps) + \
            tuple((k, off) for _, _, k, off in self._reencode)

    def _encode(self, bases) -> None:
        from . import tma

        for obj, spec, k, off in self._reencode:
            m = tma.encode(spec._replace(ptr=bases[k] + off))
            ctypes.memmove(obj, m.address, 128)

    def launch(self, bases, stream: int) -> None:
        """Launch with base k at address bases[k], on `stream` (a CUstream handle as an int); a
        launch re-pointing A, B and C only may pass just those three."""
        with self._lock:
            for obj, k, off in self._slots:
                obj.value = bases[k] + off
            for word, k, off in self._maps:
                word.value = bases[k] + off
            if self._reencode:
                self._encode(bases)
            self._cfg.hStream = stream
            err = _pdl.driver_launch()(self._cfg_ref, self.function_ptr, self._params, None)
        if err:
            raise RuntimeError(f"cugemm: cuLaunchKernelEx failed with CUresult {err}")
