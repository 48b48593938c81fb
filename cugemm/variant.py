"""The Variant record: one named, runnable GEMM kernel configuration.

A variant is data. Everything the JIT and the launcher need is derived from its fields: the name
expression handed to NVRTC, the block and grid, the shape rules that `check_shape` enforces.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import toolkit

INT32_MAX = 2**31 - 1
GRID_YZ_MAX = 65535


def _render(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(int(value))


@dataclass(frozen=True)
class Variant:
    """One registered kernel configuration.

    name        registry name (the notes' kernel name without `_kernel`, plus sibling suffixes)
    family      'sgemm', 'hgemm', ...
    source      kernel file, relative to kernels/ (e.g. 'sgemm/05_t8x8_sliced_k_f32x4_bcf_dbuf.cu')
    template    the __global__ function template's name in that file
    params      ordered (name, value) template arguments, in the template's parameter order
    tile        (BM, BN, BK): the block tile; grid = (ceil(N/BN), ceil(M/BM))
    block       CUDA block shape (x, y, z)
    dtype_in/out/acc  numpy dtype names of the inputs, the output and the accumulator
    math        arithmetic unit: 'ffma', 'hfma2', 'wmma', 'mma', 'wgmma'
    math_dtype  what the multiplies see, when it differs from dtype_in: 'tfloat32' for TF32 tensor-core
                variants of float32 inputs; '' means dtype_in. Tolerances are keyed on it.
    layout      'row' (A, B and C row-major, C-contiguous) or 'col' (all three column-major)
    multiple_of (M, N, K) multiples the kernel requires; 1 means any size
    align       bytes each operand's base pointer must be aligned to (16 for float4 access)
    min_arch    lowest compute capability it runs on (80 = sm_80)
    archs       the compile targets it claims; CI compiles each one offline
    smem_dynamic  dynamic shared memory bytes per block (static smem comes from the compiler)
    headers     CUDA headers the source includes (looked for by toolkit.find_cuda_include)
    seed        the note it comes from (shared/seeds/README.md)
    aliases     extra names that resolve to it
    doc         one line: what this rung adds
    spills      '' when it must compile with zero spill bytes; otherwise the documented reason
    grid_fn     optional (variant, M, N) -> grid, for kernels that remap blocks (block swizzle);
                default: (ceil(N/BN), ceil(M/BM), 1)
    args_fn     optional (variant, M, N, K) -> extra kernel arguments after (a, b, c, M, N, K),
                e.g. a swizzle stride computed by the family's documented rule
    """

    name: str
    family: str
    source: str
    template: str
    params: tuple
    tile: tuple
    block: tuple
    dtype_in: str
    dtype_out: str
    dtype_acc: str
    math: str
    layout: str = "row"
    math_dtype: str = ""
    multiple_of: tuple = (1, 1, 1)
    align: int = 4
    min_arch: int = 80
    archs: tuple = ("sm_80", "sm_90")
    smem_dynamic: int = 0
    headers: tuple = ()
    seed: str = ""
    aliases: tuple = ()
    doc: str = ""
    spills: str = ""
    grid_fn: object = None
    args_fn: object = None
    _np_in: np.dtype = field(init=False, repr=False, compare=False)
    _np_out: np.dtype = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_np_in", np.dtype(self.dtype_in))
        object.__setattr__(self, "_np_out", np.dtype(self.dtype_out))
        for arch in self.archs:
            toolkit.parse_arch(arch)
        if self.layout not in ("row", "col"):
            raise ValueError(f"{self.name}: layout must be 'row' or 'col', not {self.layout!r}")
        if not self.math_dtype:
            object.__setattr__(self, "math_dtype", self.dtype_in)

    # ---- derived --------------------------------------------------------------------------
    @property
    def name_expression(self) -> str:
        """What NVRTC instantiates, e.g. 'sgemm_t_8x8_sliced_k_f32x4_bcf_dbuf<128, 128, 8, 8, 8, 0>'."""
        if not self.params:
            return self.template
        return f"{self.template}<{', '.join(_render(v) for _, v in self.params)}>"

    @property
    def param_dict(self) -> dict:
        return dict(self.params)

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def any_shape(self) -> bool:
        return self.multiple_of == (1, 1, 1)

    def grid(self, M: int, N: int) -> tuple:
        if self.grid_fn is not None:
            return self.grid_fn(self, M, N)
        bm, bn = self.tile[0], self.tile[1]
        return ((N + bn - 1) // bn, (M + bm - 1) // bm, 1)

    def tile_shape(self, m_tiles: int = 1, n_tiles: int = 1, k_tiles: int = 1) -> tuple:
        """The legal (M, N, K) spanning that many block tiles (rounded up to the shape rules)."""
        return tuple(-(-t * max(size, 1) // mult) * mult
                     for t, size, mult in zip((m_tiles, n_tiles, k_tiles), self.tile, self.multiple_of))

    def extra_args(self, M: int, N: int, K: int) -> tuple:
        return () if self.args_fn is None else tuple(self.args_fn(self, M, N, K))

    # ---- rules ----------------------------------------------------------------------------
    def check_shape(self, M: int, N: int, K: int) -> None:
        """Raise ValueError naming the violated rule when this variant cannot compute an MxNxK product."""
        for dim, value in (("M", M), ("N", N), ("K", K)):
            if not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"{self.name}: {dim}={value!r} must be a non-negative integer")
        for dim, value, mult in zip("MNK", (M, N, K), self.multiple_of):
            if mult > 1 and value % mult:
                raise ValueError(
                    f"{self.name}: {dim}={value} is not a multiple of {mult} "
                    f"(rule: {dim} % {mult} == 0, from its B{dim} tile). "
                    "Pad the matrices, or use a variant that takes any shape "
                    "(cugemm.variants(any_shape=True))."
                )
        # Indices are 32-bit ints; edge kernels form offsets up to one tile past each edge, so the
        # rule is checked on the dimensions rounded up to whole tiles.
        Mp, Np, Kp = (-(-x // t) * t for x, t in zip((M, N, K), self.tile))
        for what, count in (("M*K (A)", Mp * Kp), ("K*N (B)", Kp * Np), ("M*N (C)", Mp * Np)):
            if count > INT32_MAX:
                raise ValueError(
                    f"{self.name}: {what} = {count} elements (rounded up to whole tiles) overflows the "
                    f"kernel's 32-bit indices (rule: at most {INT32_MAX}); split the product into blocks"
                )
        gy = math.ceil(M / self.tile[0]) if M else 0
        if gy > GRID_YZ_MAX:
            raise ValueError(
                f"{self.name}: M={M} needs {gy} block rows, over CUDA's grid limit of {GRID_YZ_MAX}"
            )

    def check_smem(self, limit: int) -> None:
        """Raise RuntimeError when the block's dynamic shared memory exceeds a GPU's opt-in limit."""
        if self.smem_dynamic > limit:
            raise RuntimeError(
                f"{self.name} needs {self.smem_dynamic} bytes of dynamic shared memory per block; "
                f"this GPU allows {limit}")

    def check_arch(self, cc: int) -> None:
        """Raise RuntimeError when a GPU of compute capability `cc` (e.g. 90) cannot run this variant:
        older than min_arch, or, for variants built only for arch-specific targets such as sm_90a
        (wgmma, setmaxnreg), any chip other than those targets."""
        if cc < self.min_arch:
            raise RuntimeError(
                f"{self.name} needs compute capability >= {self.min_arch // 10}.{self.min_arch % 10} "
                f"(sm_{self.min_arch}); this GPU is sm_{cc}"
            )
        targets = [toolkit.parse_arch(a) for a in self.archs]
        if all(suffix for _, suffix in targets) and cc not in [n for n, _ in targets]:
            raise RuntimeError(
                f"{self.name} is built for {', '.join(self.archs)} only (arch-specific instructions); "
                f"this GPU is sm_{cc}"
            )
