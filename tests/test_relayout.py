"""kernels/util/relayout.cu and its host side in cugemm/relayout.py, without a GPU: the job table's
layout on both sides, the kernel's resources, and the jobs and workspaces the copy plans get.
(Bit-for-bit checks of the copies on a GPU: tests/test_gpu_matmul.py, test_fused_copy_*.)"""
from __future__ import annotations

import re

import pytest

from cugemm import relayout

pytest.importorskip("cupy")

FIELDS = relayout.JOB.names


def _probe(arch: str) -> dict:
    """What the compiled kernel file gives sizeof, each field's offset, size and signedness, and its
    constants, read from its PTX: one __device__ unsigned each, whose static initialiser NVRTC folds.

    Offsets are address differences within a __device__ RelayoutJobs object, not offsetof:
    NVRTC 12 has no __builtin_offsetof (`identifier "__builtin_offsetof" is undefined`; CCCL 12's
    offsetof is the null-pointer idiom) and the cuda12 extra ships NVRTC 12. The differences are no
    constant expressions, so the probes are not constexpr; a compiler that would not fold them
    fails to compile the probe ("dynamic initialization is not supported for a __device__
    variable"), it cannot report a wrong value."""
    from cugemm import jit

    text = jit.file_source(jit.KERNEL_DIR / "util" / "relayout.cu")
    obj = "relayout_probe_jobs"

    def offset(member: str) -> str:  # bytes from the start of `obj` to member (e.g. "a.rows")
        return f"reinterpret_cast<const char*>(&{obj}.{member}) - reinterpret_cast<const char*>(&{obj})"

    probes = {"job_size": "sizeof(RelayoutJob)", "jobs_size": "sizeof(RelayoutJobs)",
              "jobs_a": offset("a"), "jobs_b": offset("b"), "threads": "RELAYOUT_THREADS",
              "chunks": "RELAYOUT_CHUNKS", "blocks_per_sm": "RELAYOUT_BLOCKS_PER_SM"}
    for f in FIELDS:
        probes[f"off_{f}"] = offset(f"a.{f}")
        probes[f"size_{f}"] = f"sizeof(RelayoutJob::{f})"
        probes[f"signed_{f}"] = f"decltype(RelayoutJob::{f})(-1) < 0"
    text += f"\n__device__ RelayoutJobs {obj};"
    text += "".join(f"\n__device__ unsigned relayout_probe_{k} = (unsigned)({v});" for k, v in probes.items())
    prog = jit.compile_program(text, [f"&relayout_probe_{k}" for k in probes], arch, what="relayout_probe")
    out = {}
    for k in probes:
        m = re.search(r"\.u32 " + re.escape(prog.lowered[f"&relayout_probe_{k}"]) + r"(?: = (\d+))?;", prog.ptx)
        assert m, k
        out[k] = int(m.group(1) or 0)  # a zero is declared without an initialiser
    return out


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_job_table_layout_matches_the_kernel(arch):
    """cugemm.relayout's JOB / JOBS (the bytes passed by value) lay out every field where the kernel's
    RelayoutJob / RelayoutJobs have it, with its size and signedness; its constants are the kernel's."""
    got = _probe(arch)
    job = relayout.JOB
    assert got["job_size"] == job.itemsize
    assert got["jobs_size"] == relayout.JOBS.itemsize
    assert (got["jobs_a"], got["jobs_b"]) == (relayout.JOBS.fields["a"][1], relayout.JOBS.fields["b"][1])
    for f in FIELDS:
        dt, off = job.fields[f][:2]
        assert (got[f"off_{f}"], got[f"size_{f}"], got[f"signed_{f}"]) == (off, dt.itemsize, int(dt.kind == "i")), f
    assert (got["threads"], got["chunks"], got["blocks_per_sm"]) == \
        (relayout.THREADS, relayout.CHUNKS, relayout.BLOCKS_PER_SM)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_relayout_fits_the_grid_it_is_launched_with(arch):
    """No spills, no stack, and few enough registers that RELAYOUT_BLOCKS_PER_SM blocks of
    RELAYOUT_THREADS fit an SM (65536 registers): the grid cugemm.relayout sizes is one wave."""
    from cugemm import jit

    text = jit.file_source(jit.KERNEL_DIR / "util" / "relayout.cu")
    for r in jit.compile_source(text, ["relayout<unsigned short>", "relayout<unsigned int>"], arch):
        assert r.spill_bytes == 0 and r.stack_frame == 0, r.log
        assert r.registers * relayout.THREADS * relayout.BLOCKS_PER_SM <= 65536, r.registers


def test_jobs_of_the_issue_shape():
    """4095x4097x1023 fp16: A's rows (1023 elements) and B's (4097) copied as contiguous rows."""
    a = relayout.job((4095, 1023), (2046, 2), 256, 2, "row", 1024, (4095, 1023))
    b = relayout.job((1023, 4097), (8194, 2), 256, 2, "row", 4104, (1023, 4097))
    ja, jb = dict(zip(FIELDS, a)), dict(zip(FIELDS, b))
    assert ja["src_cs"] == 1 and not ja["across"] and ja["chunks"] == 128 and ja["units"] == 4095
    assert jb["src_cs"] == 1 and not jb["across"] and jb["chunks"] == 513 and jb["segs"] == 5
    assert jb["units"] == 1023 * 5


def test_jobs_of_transposed_and_padded_sources():
    # a transposed view (columns contiguous) copied row-major: lanes take rows
    j = dict(zip(FIELDS, relayout.job((4095, 1023), (2, 8190), 256, 2, "row", 1024, (4095, 1023))))
    assert j["across"] and (j["src_rs"], j["src_cs"]) == (1, 4095) and j["units"] == 128 * 32
    # a row-major source copied column-major: the destination's rows are its columns
    j = dict(zip(FIELDS, relayout.job((100, 37), (74, 2), 256, 2, "col", 104, (100, 40))))
    assert j["across"] and (j["rows"], j["cols"], j["rows_p"], j["chunks"]) == (37, 100, 40, 13)
    # zero padding: the destination's extent, not the source's
    j = dict(zip(FIELDS, relayout.job((100, 37), (74, 2), 256, 2, "row", 64, (128, 48))))
    assert (j["rows"], j["cols"], j["rows_p"], j["chunks"]) == (100, 37, 128, 6) and not j["across"]
    # one column: its stride is never read, so the row is read as contiguous
    j = dict(zip(FIELDS, relayout.job((9, 1), (2, 0), 256, 2, "row", 8, (9, 8))))
    assert j["src_cs"] == 1 and not j["across"]


def test_copies_the_kernel_cannot_make_go_to_cupy():
    assert relayout.job((10, 1023), (4092, 4), 256, 4, "row", 1023, (10, 1023)) is None  # 4092-byte rows
    assert relayout.job((10, 7), (15, 1), 257, 2, "row", 8, (10, 8)) is None  # not element-aligned
