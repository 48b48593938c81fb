"""check_shape is the truth: for dense operands, a variant's Python check (no GPU) refuses exactly
the shapes its launch would refuse (the operand checks, the grid, the workspace, the kernel's
arguments, tensor maps included: TMA's rules are checked before anything is encoded)."""
import itertools

import pytest

import cugemm
from cugemm import launch, operand, tma, tma_args
from cugemm.device import Device
from cugemm.workspace import Work

DEV = Device(90, 132, 232448, "NVIDIA H100 80GB HBM3")
SIZES_M = (1, 7, 64, 67, 130, 256)
SIZES_N = (1, 8, 60, 67, 256)
SIZES_K = (1, 8, 67, 256)
BIG = ((131080, 72, 16384), (65544, 32776, 8), (16, 4096, 2**19 + 8))


class _Map:
    arg = None


@pytest.fixture
def no_driver(monkeypatch):
    """Tensor maps checked (tma.check) but never encoded: the launch's rules without a GPU."""
    monkeypatch.setattr(tma, "encode", lambda spec: (tma.check(spec), _Map())[1])
    tma.clear_cache()
    tma_args.clear_args_cache()
    yield
    tma.clear_cache()
    tma_args.clear_args_cache()


def dense(shape, dt, layout, ptr):
    ld = shape[1] if layout == "row" else shape[0]
    return operand.of_layout(shape, dt, layout, max(ld, 1), ptr)


def launch_verdict(v, M, N, K) -> str:
    """'' when cugemm.run would launch `v` on dense M x N x K operands, else why not."""
    A = dense((M, K), v.dt_in, v.a_layout, 0x10_0000_0000)
    B = dense((K, N), v.dt_b, v.b_layout, 0x20_0000_0000)
    C = dense((M, N), v.dt_out, v.layout, 0x30_0000_0000)
    try:
        launch.check_operands(v, A, B, C)
        if M and N and K:  # an empty product launches nothing
            v.grid(M, N, K, DEV)
            work = None
            if v.workspace_fn is not None:
                v.workspace_fn(v, M, N, K, DEV)
                work = Work(0x40_0000_0000, 0x50_0000_0000)
            v.extra_args(A, B, C, M, N, K, raw=True, work=work, dev=DEV)
    except ValueError as e:
        return str(e)
    return ""


def check_verdict(v, M, N, K) -> str:
    try:
        v.check_shape(M, N, K)
    except ValueError as e:
        return str(e)
    return ""


@pytest.mark.parametrize("v", cugemm.variants(), ids=lambda v: v.name)
def test_check_shape_agrees_with_the_launch(v, no_driver):
    shapes = list(itertools.product(SIZES_M, SIZES_N, SIZES_K)) + list(BIG)
    for M, N, K in shapes:
        if v.max_m:
            M = min(M, v.max_m)
        said, did = check_verdict(v, M, N, K), launch_verdict(v, M, N, K)
        assert bool(said) == bool(did), (v.name, (M, N, K), said, did)


def test_the_launch_verdict_sees_tensor_map_rules(no_driver):
    """The comparison above can fail: a dense A with K % 8 != 0 breaks the any-C form's tensor map
    (its rows are not 16-byte multiples), and check_shape says so before any launch."""
    v = cugemm.get_variant("hgemm_wgmma_m64n256k16_persistent_cluster2_anyc_stage3")
    assert "multiple of 16" in launch_verdict(v, 127, 129, 67)
    with pytest.raises(ValueError, match="lines of 134 bytes, not a multiple of 16"):
        v.check_shape(127, 129, 67)
    with pytest.raises(ValueError, match="dense B .row-major. has lines of 258 bytes"):
        v.check_shape(127, 129, 64)       # a row-major B's lines are N long
    bcol = cugemm.get_variant("hgemm_wgmma_m64n256k16_persistent_cluster2_anyc_stage3_bcol")
    bcol.check_shape(127, 129, 64)        # any N with B = W.T: the bounded any-C stores
    assert launch_verdict(bcol, 127, 129, 64) == ""
    bcol.check_shape(1, 129, 64)
    assert launch_verdict(v, 1, 128, 67) == "" and check_verdict(v, 1, 128, 67) == ""  # one row of A
