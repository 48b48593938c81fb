"""cugemm.tma: the rules a tensor map must meet (checked without a GPU, each refusal naming its
rule), the per-(pointer, shape, strides) cache and its bound, and the encoding itself where a CUDA
driver and cuda-bindings are present."""
import pytest

from cugemm import tma

PTR = 0x7F0000000000


def spec(**kw):
    d = dict(ptr=PTR, dtype="float16", rows=4096, cols=1024, row_stride=2048, box=(64, 128), swizzle=128)
    d.update(kw)
    return tma.Spec(**d)


@pytest.mark.parametrize("s", [
    spec(),
    spec(rows=1, cols=8, row_stride=16, box=(64, 64)),          # box larger than the matrix: zero fill
    spec(dtype="bfloat16", rows=129, cols=264, row_stride=528),
    spec(dtype="tfloat32", cols=36, row_stride=144, box=(32, 256)),
    spec(dtype="float32", cols=4, row_stride=16, box=(32, 32)),
    spec(swizzle=0, box=(256, 8)),
    spec(rows=1, row_stride=16),                                  # one row: its stride is never used
])
def test_describable(s):
    tma.check(s)


@pytest.mark.parametrize("s,rule", [
    (spec(ptr=PTR + 8), "16-byte aligned"),
    (spec(ptr=0), "device address"),
    (spec(row_stride=2052), "not a multiple of 16"),
    (spec(row_stride=1024), "shorter than a row"),
    (spec(row_stride=2**40), "row stride"),
    (spec(rows=0), "rows; TMA takes 1 to 2"),
    (spec(cols=2**32 + 1, row_stride=2**34), "columns; TMA takes"),
    (spec(box=(64, 257)), "box dimension must be 1 to 256"),
    (spec(box=(0, 64)), "box dimension"),
    (spec(box=(4, 64), swizzle=0), "not a multiple of 16"),
    (spec(box=(128, 64)), "exceeds the 128-byte swizzle span"),
    (spec(dtype="float32", row_stride=4096, box=(64, 64)), "exceeds the 128-byte swizzle span"),
    (spec(swizzle=16), "swizzle"),
    (spec(dtype="int8"), "no tensor-map data type"),
])
def test_refused_with_the_rule(s, rule):
    with pytest.raises(ValueError, match=rule):
        tma.check(s)


def test_cache_per_pointer_shape_and_strides(fake_encode):
    made = fake_encode
    m1 = tma.tensor_map_2d(PTR, "float16", 4096, 1024, 2048, (64, 128))
    assert tma.tensor_map_2d(PTR, "float16", 4096, 1024, 2048, (64, 128)) is m1
    assert len(made) == 1
    for other in [(PTR + 16, "float16", 4096, 1024, 2048, (64, 128)),   # another pointer
                  (PTR, "float16", 4095, 1024, 2048, (64, 128)),        # another shape
                  (PTR, "float16", 4096, 1024, 4096, (64, 128)),        # another stride
                  (PTR, "bfloat16", 4096, 1024, 2048, (64, 128)),       # another dtype
                  (PTR, "float16", 4096, 1024, 2048, (64, 64))]:        # another box
        assert tma.tensor_map_2d(*other) is not m1
    assert len(made) == 6 and tma.cache_size() == 6
    with pytest.raises(ValueError, match="16-byte aligned"):  # refused before anything is encoded
        tma.tensor_map_2d(PTR + 4, "float16", 16, 16, 32, (16, 16))
    assert len(made) == 6
    tma.clear_cache()


def test_cache_is_bounded(fake_encode, monkeypatch):
    monkeypatch.setattr(tma, "MAX_CACHED", 8)
    first = tma.tensor_map_2d(PTR, "float16", 64, 64, 128, (64, 64))
    for i in range(1, 20):
        tma.tensor_map_2d(PTR + 16 * i, "float16", 64, 64, 128, (64, 64))
    assert tma.cache_size() == 8
    assert tma.tensor_map_2d(PTR, "float16", 64, 64, 128, (64, 64)) is not first  # evicted, re-made
    tma.clear_cache()


def _driver_or_skip():
    try:
        drv = tma.driver()
    except RuntimeError as e:
        pytest.skip(str(e))
    try:
        drv.cuInit(0)
    except Exception as e:  # no libcuda (a machine without an NVIDIA driver)
        pytest.skip(f"no CUDA driver: {type(e).__name__}: {str(e)[:120]}")
    return drv


def test_encode_gives_a_128_byte_map():
    _driver_or_skip()
    pytest.importorskip("cupy")
    m = tma.encode(spec())
    assert m.address % 64 == 0 and m.arg.ptr == m.address  # CUtensorMap is 64-byte aligned
    assert m.spec == spec()
    assert len(bytes(m.tmap.opaque)) == 128 if hasattr(m.tmap, "opaque") else True


def test_encode_tf32_rounding_type():
    _driver_or_skip()
    pytest.importorskip("cupy")
    m = tma.encode(spec(dtype="tfloat32", cols=1024, row_stride=4096, box=(32, 256)))
    assert m.address


# ---- on a GPU: what the copy engine writes for a map cugemm.tma encodes ----------------------------
PROBE_SRC = r'''
#include "lib/barrier.cuh"
#include "lib/swizzle.cuh"
#include "lib/tma.cuh"
extern "C" __global__ void tma_probe(const __grid_constant__ TensorMap map, unsigned char* out, int c0, int c1,
                                     int bytes) {
  extern __shared__ unsigned char raw[];
  unsigned char* s = align_1024(raw);
  __shared__ alignas(8) unsigned long long bar;
  for (int i = threadIdx.x; i < bytes; i += blockDim.x) s[i] = 0xAB;  // what zero fill must overwrite
  __syncthreads();
  if (threadIdx.x == 0) { mbarrier_init(&bar, 1); fence_mbarrier_init(); }
  __syncthreads();
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(&bar, bytes);  // the whole box, even where it lies past the matrix
    tma_load_2d(s, &map, &bar, c0, c1);
  }
  const long long t0 = clock64();
  while (!mbarrier_try_wait(&bar, 0)) {
    if (clock64() - t0 > 2000000000LL) { if (threadIdx.x == 0) out[bytes] = 1; return; }  // never completed
  }
  for (int i = threadIdx.x; i < bytes; i += blockDim.x) out[i] = s[i];
}
'''


@pytest.mark.gpu
@pytest.mark.parametrize("box,corner", [((64, 128), (64, 64)),   # inside the matrix
                                        ((64, 64), (128, 160)),  # half past the last column and row
                                        ((64, 64), (192, 0))])   # wholly past the last column
def test_copy_engine_writes_the_128_byte_swizzle(box, corner, tmp_path):
    """One TMA box of a 200 x 136 16-bit matrix, byte for byte against the 128-byte swizzle the
    wgmma descriptors assume (16-byte chunk c of box row r at chunk c ^ (r % 8)), zero-filled past
    the edges, and the mbarrier completing with the whole box's bytes expected."""
    cupy = pytest.importorskip("cupy")
    import numpy as np

    from cugemm import jit

    src = tmp_path / "tma_probe.cu"
    src.write_text(PROBE_SRC.replace('#include "lib/', f'#include "{jit.KERNEL_DIR}/lib/'))
    fn = jit.load_source(jit.inline_includes(src), ["tma_probe"], arch="sm_90a", what="tma_probe")["tma_probe"]
    fn.max_dynamic_shared_size_bytes = 64 * 1024
    rows, cols = 200, 136
    a = (cupy.arange(rows * cols, dtype=cupy.int32) % 30000).astype(cupy.uint16).reshape(rows, cols)
    host = cupy.asnumpy(a)
    m = tma.tensor_map_2d(a.data.ptr, "float16", rows, cols, cols * 2, box)
    nbytes = box[0] * box[1] * 2
    out = cupy.zeros(nbytes + 1, dtype=cupy.uint8)
    fn((1, 1, 1), (128, 1, 1), (m.arg, out, np.int32(corner[0]), np.int32(corner[1]), np.int32(nbytes)),
       shared_mem=nbytes + 2048)
    cupy.cuda.Device().synchronize()
    got = cupy.asnumpy(out)
    assert got[nbytes] == 0, "the mbarrier never completed with the whole box's bytes expected"
    expected = np.zeros(nbytes // 2, dtype=np.uint16)
    c0, c1 = corner
    for r in range(box[1]):
        for ch in range(box[0] // 8):
            for e in range(8):
                gr, gc = c1 + r, c0 + ch * 8 + e
                expected[r * 64 + (ch ^ (r & 7)) * 8 + e] = host[gr, gc] if gr < rows and gc < cols else 0
    assert np.array_equal(got[:nbytes].view(np.uint16), expected)
    tma.clear_cache()
