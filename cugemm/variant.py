"""The Variant record: one named, runnable GEMM kernel configuration.

A variant is data. Everything the JIT and the launcher need is derived from its fields: the name
expression handed to NVRTC, the block and grid, the shape rules that `check_shape` enforces, the
archs it may claim (from its shared memory, checked against cugemm.arch).
"""
from __future__ import annotations

import dataclasses
import json
import math
import numbers
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from . import arch as _arch
from . import dtypes
from .device import Device

INT32_MAX = 2**31 - 1
GRID_YZ_MAX = 65535
DEFAULT_ARCHS = ("sm_80", "sm_90")  # what a variant claims when it names no archs: those it fits
SMEM_TABLE = Path(__file__).with_name("tables") / "smem.json"
_smem_table: dict | None = None


def declared_smem(expression: str) -> int:
    """The dynamic shared memory a kernel file declares as `expression` (`<template>_smem_bytes<...>`),
    as read from its compiled PTX into cugemm/tables/smem.json (scripts/smem_table.py writes it; the
    offline compile test checks every entry against the PTX); 0 when the kernel declares none."""
    global _smem_table
    if _smem_table is None:
        _smem_table = json.loads(SMEM_TABLE.read_text())
    return _smem_table.get(expression, 0)


class Candidate(NamedTuple):
    """How cugemm.matmul's fallback model rates a variant it may choose (cugemm/select.py): `rate`,
    its nominal TFLOP/s on an H100 when its tiles fill the GPU (GB/s for the memory-bound 'bw'
    kind); `kind`, how the model scales it ('persistent', 'tiles', 'stream', 'splitk', 'bw');
    `order`, the preference among equal estimates (lower first)."""

    rate: float
    kind: str
    order: int


def _render(value) -> str:
    """A template argument as C++ text: bool -> true/false, int -> digits, str (a type) verbatim."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return str(int(value))


@dataclass(frozen=True)
class Variant:
    """One registered kernel configuration.

    name        registry name (the notes' kernel name without `_kernel`, plus sibling suffixes)
    family      'sgemm', 'hgemm', ...
    source      kernel file, relative to kernels/ (e.g. 'sgemm/05_t8x8_sliced_k_f32x4_bcf_dbuf.cu')
    template    the __global__ function template's name in that file
    params      ordered (name, value) template arguments, in the template's parameter order (and
                with its parameter names); values are int, bool or str (a C++ type, e.g. 'half')
    tile        (BM, BN, BK): the block tile; default grid = (ceil(N/BN), ceil(M/BM))
    block       CUDA block shape (x, y, z)
    dtype_in/out/acc  element types (cugemm.dtypes names) of the inputs, the output, the accumulator
    dtype_b     B's element type where it differs from A's (dtype_in): the FP8 family's e4m3 x e5m2
                forms; '' means dtype_in (dt_b is B's DType either way)
    math        arithmetic unit: 'ffma', 'hfma2', 'wmma', 'mma', 'wgmma'
    math_dtype  what the multiplies see, when it differs from dtype_in: 'tfloat32' for TF32 tensor-core
                variants of float32 inputs; '' means dtype_in. Tolerances are keyed on it.
    layout      'row' (A, B and C row-major, C-contiguous) or 'col' (all three column-major)
    a_layout, b_layout  how the kernel reads A (M x K) and B (K x N) when it differs from `layout`:
                'row' (rows contiguous) or 'col' (columns contiguous: A 'col' is the transposed view
                x.T of a row-major K x M array, B 'col' the W.T of a row-major N x K weight); ''
                means `layout`. C is always in `layout`.
    strided     the kernel takes any leading dimension (row stride of a 'row' operand, column stride
                of a 'col' one) for A, B and C, each a multiple of `align` bytes (C: `c_align`); TMA
                kernels find them in their tensor maps, others get them from args_fn. False: dense.
    c_align     bytes C's pointer and leading dimension must be aligned to; 0 means `align`
    max_m       the largest M the kernel takes (0: no limit), for kernels built for skinny products
    multiple_of (M, N, K) multiples the kernel requires; 1 means any size
    align       bytes each operand's base pointer must be aligned to (16 for 16-byte access)
    archs       the compile targets it claims ('sm_80', 'sm_90', 'sm_90a'); CI compiles each one
                offline. Each must give a block the variant's dynamic shared memory (cugemm.arch).
                None: those of DEFAULT_ARCHS whose chips give a block its shared memory.
    min_arch    lowest compute capability it runs on; derived from archs when left 0
    smem_dynamic  dynamic shared memory bytes per block (static smem comes from the compiler); None:
                what the kernel file declares as `<template>_smem_bytes<params>` (declared_smem)
    cluster     thread-block cluster shape (x, y, z), compiled into the kernel (__cluster_dims__);
                the grid is rounded up to whole clusters
    seed        the note it comes from (shared/seeds/README.md), or 'cugemm' above the notes
    aliases     extra names that resolve to it
    doc         one line: what this rung adds
    spills      '' when it must compile with zero spill bytes; otherwise the documented reason
    pdl         the kernel waits in griddepcontrol.wait before its first global access, so it may be
                launched with programmatic dependent launch (cugemm/pdl.py) after cugemm.matmul's
                relayout of its operands
    grid_rule   a grid rule of cugemm/rules.py, for kernels that size or remap their grid
                (persistent kernels, block swizzle); '' is (ceil(N/BN), ceil(M/BM), 1). Resolved
                into grid_fn: (variant, M, N, K, cugemm.device.Device) -> grid
    args_rule   an argument rule of cugemm/rules.py: extra kernel arguments after (a, b, c, M, N,
                K), e.g. TMA descriptors or a swizzle stride. Resolved into args_fn: (variant, A, B,
                C, M, N, K) -> arguments, A, B, C operand records (cugemm.operand.Operand); with a
                workspace it also gets work= (a cugemm.workspace.Work: its scratch addresses) and dev=
    workspace_rule  a workspace rule of cugemm/rules.py: the fp32 partials and zeroed counters a
                launch needs (split-K); the launcher provides them (cugemm/workspace.py). Resolved
                into workspace_fn: (variant, M, N, K, Device) -> cugemm.workspace.Need
    matmul      a Candidate when cugemm.matmul may choose the variant (its rating in the fallback
                model), None otherwise (the learning rungs; `variant=` still runs any of them)
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
    dtype_b: str = ""
    layout: str = "row"
    a_layout: str = ""
    b_layout: str = ""
    strided: bool = False
    c_align: int = 0
    max_m: int = 0
    math_dtype: str = ""
    multiple_of: tuple = (1, 1, 1)
    align: int = 4
    archs: tuple | None = None
    min_arch: int = 0
    smem_dynamic: int | None = None
    cluster: tuple = (1, 1, 1)
    seed: str = ""
    aliases: tuple = ()
    doc: str = ""
    spills: str = ""
    pdl: bool = False
    grid_rule: str = ""
    args_rule: str = ""
    workspace_rule: str = ""
    matmul: Candidate | None = None
    grid_fn: object = field(init=False, repr=False, compare=False)
    args_fn: object = field(init=False, repr=False, compare=False)
    workspace_fn: object = field(init=False, repr=False, compare=False)
    dt_in: dtypes.DType = field(init=False, repr=False, compare=False)
    dt_out: dtypes.DType = field(init=False, repr=False, compare=False)
    dt_b: dtypes.DType = field(init=False, repr=False, compare=False)
    name_expression: str = field(init=False, repr=False, compare=False)
    # per-device launch state the launcher caches on first use (checked fit, loaded kernel)
    _launch: dict = field(init=False, repr=False, compare=False, default_factory=dict)

    def __post_init__(self):
        set_ = object.__setattr__
        for attr in ("dtype_in", "dtype_out", "dtype_acc"):  # canonical names ('f16' -> 'float16')
            set_(self, attr, dtypes.get(getattr(self, attr)).name)
        set_(self, "math_dtype", dtypes.get(self.math_dtype or self.dtype_in).name)
        set_(self, "dt_in", dtypes.get(self.dtype_in))
        set_(self, "dt_out", dtypes.get(self.dtype_out))
        if self.dtype_b:  # kept '' when not given, so that dataclasses.replace of dtype_in carries B along
            set_(self, "dtype_b", dtypes.get(self.dtype_b).name)
        set_(self, "dt_b", dtypes.get(self.dtype_b or self.dtype_in))
        # what NVRTC instantiates, e.g. 'sgemm_t_8x8_sliced_k_f32x4_bcf_dbuf<128, 128, 8, 8, 8, 0>'
        set_(self, "name_expression", self.template_expression(self.template))
        for attr in ("layout", "a_layout", "b_layout"):
            if getattr(self, attr) not in ("row", "col", "") or not self.layout:
                raise ValueError(f"{self.name}: {attr} must be 'row' or 'col', not {getattr(self, attr)!r}")
        set_(self, "a_layout", self.a_layout or self.layout)
        set_(self, "b_layout", self.b_layout or self.layout)
        set_(self, "c_align", self.c_align or self.align)
        if self.smem_dynamic is None:
            set_(self, "smem_dynamic", declared_smem(self.template_expression(f"{self.template}_smem_bytes")))
        if self.archs is None:
            set_(self, "archs", _arch.archs_for_smem(self.smem_dynamic, DEFAULT_ARCHS))
        from . import rules  # the launch rules' functions (mechanism modules; none imports this one)

        set_(self, "grid_fn", rules.resolve(rules.GRIDS, "grid", self.grid_rule, self.name))
        set_(self, "args_fn", rules.resolve(rules.ARGS, "args", self.args_rule, self.name))
        set_(self, "workspace_fn", rules.resolve(rules.WORKSPACES, "workspace", self.workspace_rule, self.name))
        if not self.archs:
            raise ValueError(f"{self.name}: claims no arch")
        claims = [_arch.parse(a) for a in self.archs]
        for a in claims:
            limit = _arch.smem_optin(a.cc)
            if self.smem_dynamic > limit:
                raise ValueError(f"{self.name} claims {a} but needs {self.smem_dynamic} bytes of dynamic "
                                 f"shared memory per block; sm_{a.cc} allows {limit}")
        lowest = min(a.cc for a in claims)
        if not self.min_arch:
            set_(self, "min_arch", lowest)
        elif self.min_arch < lowest:
            raise ValueError(f"{self.name}: min_arch sm_{self.min_arch} is below every arch it claims")
        if len(self.cluster) != 3 or any(c < 1 for c in self.cluster):
            raise ValueError(f"{self.name}: cluster must be three positive sizes, got {self.cluster}")

    # ---- derived --------------------------------------------------------------------------
    def template_expression(self, template: str) -> str:
        """`template` instantiated with this variant's template arguments (for the kernel, or a
        companion template of the same parameters such as `<template>_smem_bytes`)."""
        if not self.params:
            return template
        return f"{template}<{', '.join(_render(v) for _, v in self.params)}>"

    @property
    def param_dict(self) -> dict:
        return dict(self.params)

    @property
    def batched(self) -> bool:
        """A batched form: a batch of products in one launch (cugemm.batched): rung 7's BATCHED forms
        (the grouped ones too) and the mma.sync rung's `_batched` template."""
        return bool(self.param_dict.get("BATCHED")) or self.template.endswith("_batched")

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def any_shape(self) -> bool:
        return self.multiple_of == (1, 1, 1)

    def grid(self, M: int, N: int, K: int = 0, dev: Device | None = None) -> tuple:
        if self.grid_fn is not None:  # a grid_fn needing the GPU asks cugemm.device when dev is None
            g = tuple(self.grid_fn(self, M, N, K, dev))
        else:
            bm, bn = self.tile[0], self.tile[1]
            g = ((N + bn - 1) // bn, (M + bm - 1) // bm, 1)
        if self.cluster != (1, 1, 1):  # whole clusters; the kernel skips tiles past the edges
            g = tuple(-(-x // c) * c for x, c in zip(g, self.cluster))
        return g

    def tile_shape(self, m_tiles: int = 1, n_tiles: int = 1, k_tiles: int = 1) -> tuple:
        """The legal (M, N, K) spanning that many block tiles (rounded up to the shape rules)."""
        return tuple(-(-t * max(size, 1) // mult) * mult
                     for t, size, mult in zip((m_tiles, n_tiles, k_tiles), self.tile, self.multiple_of))

    def extra_args(self, A, B, C, M: int, N: int, K: int, raw: bool = False, work=None, dev=None) -> tuple:
        """The arguments after (a, b, c, M, N, K); raw=True: TensorMaps themselves instead of their
        CuPy CPointers (a raw driver launch passes their host bytes). A variant with a workspace_fn
        needs `work` (its scratch addresses) and `dev`."""
        if self.args_fn is None:
            return ()
        kw = {"raw": True} if raw else {}  # only args_fns that pass tensor maps take raw
        if self.workspace_fn is not None:
            kw.update(work=work, dev=dev)
        return tuple(self.args_fn(self, A, B, C, M, N, K, **kw))

    # ---- rules ----------------------------------------------------------------------------
    def check_shape(self, M: int, N: int, K: int) -> None:
        """Raise ValueError naming the violated rule when this variant cannot compute an MxNxK product
        of dense operands (check_dims, and each operand's rows where the kernel reads them: dense
        lines of a multiple of `align` bytes for a strided kernel, whose tensor maps need them; C's
        of `c_align`). Everything `cugemm.run` would refuse of dense operands of the right types."""
        self.check_dims(M, N, K)
        if not self.strided:
            return  # dense operands of a dense kernel: check_dims' multiple_of covers the alignment
        size, osize = self.dt_in.itemsize, self.dt_out.itemsize
        for what, layout, rows, cols, itemsize, align in (("A", self.a_layout, M, K, size, self.align),
                                                          ("B", self.b_layout, K, N, size, self.align),
                                                          ("C", self.layout, M, N, osize, self.c_align)):
            lines, span = (rows, cols) if layout == "row" else (cols, rows)
            if lines > 1 and span * itemsize % align:
                dim = {("A", "row"): "K", ("A", "col"): "M", ("B", "row"): "N", ("B", "col"): "K"}.get(
                    (what, layout), "N")
                raise ValueError(
                    f"{self.name}: dense {what} ({layout}-major) has lines of {span * itemsize} bytes, not a "
                    f"multiple of {align} (rule: {dim} * {itemsize} % {align} == 0, the kernel's tensor maps "
                    f"read lines that start {align}-byte aligned); pass {what} with a padded leading "
                    "dimension, or use cugemm.matmul, which pads it")

    def check_dims(self, M: int, N: int, K: int) -> None:
        """Raise ValueError naming the violated rule when this variant cannot compute an MxNxK product
        whatever its operands' leading dimensions: sizes, max_m, multiple_of, 32-bit indices and grid
        limits. (cugemm.select pads leading dimensions itself, and checks only these.)"""
        for dim, value in (("M", M), ("N", N), ("K", K)):
            if type(value) is not int and (not isinstance(value, numbers.Integral) or isinstance(value, bool)):
                raise ValueError(f"{self.name}: {dim}={value!r} must be a non-negative integer")
            if value < 0:
                raise ValueError(f"{self.name}: {dim}={value!r} must be a non-negative integer")
        if self.max_m and M > self.max_m:
            raise ValueError(f"{self.name}: M={M} is over {self.max_m} (rule: M <= {self.max_m}, a kernel for "
                             "skinny products; use a variant for general shapes)")
        if self.multiple_of != (1, 1, 1):
            for dim, value, mult, size in zip("MNK", (M, N, K), self.multiple_of, self.tile):
                if mult > 1 and value % mult:
                    if mult == size:
                        why = (f"from its B{dim} tile. Pad the matrices, or use a variant that takes any "
                               "shape (cugemm.variants(any_shape=True))")
                    else:
                        why = (f"rows of A and B must start 16-byte aligned ({mult} elements of "
                               f"{self.dtype_in}); pad the rows")
                    raise ValueError(f"{self.name}: {dim}={value} is not a multiple of {mult} "
                                     f"(rule: {dim} % {mult} == 0, {why}).")
        # Indices are 32-bit ints; edge kernels form offsets up to one tile past each edge, so the
        # rule is checked on the dimensions rounded up to whole tiles.
        bm, bn, bk = self.tile
        Mp, Np, Kp = -(-M // bm) * bm, -(-N // bn) * bn, -(-K // bk) * bk
        if max(Mp * Kp, Kp * Np, Mp * Np) <= INT32_MAX and (self.grid_fn is not None or Mp // bm <= GRID_YZ_MAX):
            return
        for what, count in (("M*K (A)", Mp * Kp), ("K*N (B)", Kp * Np), ("M*N (C)", Mp * Np)):
            if count > INT32_MAX:
                raise ValueError(
                    f"{self.name}: {what} = {count} elements (rounded up to whole tiles) overflows the "
                    f"kernel's 32-bit indices (rule: at most {INT32_MAX}); split the product into blocks"
                )
        if self.grid_fn is None:
            gy = math.ceil(M / self.tile[0]) if M else 0
            if gy > GRID_YZ_MAX:
                raise ValueError(
                    f"{self.name}: M={M} needs {gy} block rows, over CUDA's grid limit of {GRID_YZ_MAX}")

    def check_device(self, cc, smem_limit: int | None = None) -> None:
        """Raise RuntimeError when a GPU of compute capability `cc` with `smem_limit` bytes of opt-in
        shared memory per block cannot run this variant (cugemm.arch.unfit_reason). `cc` in any
        spelling cugemm.arch.parse reads: 90, '90', 'sm_90', 'sm_90a', '9.0' or (9, 0)."""
        reason = _arch.unfit_reason(self, _arch.cc_of(cc), smem_limit)
        if reason:
            raise RuntimeError(reason)


def dense_batched(v: Variant, *, source: str, template: str, order: int, **kw) -> Variant:
    """The batched form of the dense 2-D variant `v`: a kernel file that runs v's tile code with the
    products of a batch in grid z (hgemm_mma/08_swizzle_batched.cu, sgemm/08_warp_tile_batched.cu),
    named v.name + '_batched', taking the batch windows after K (args rule 'batch', cugemm.grids),
    rated as v with preference `order` (cugemm.batched plans it). `kw`: other fields to change."""
    return dataclasses.replace(v, name=v.name + "_batched", source=source, template=template, aliases=(),
                               args_rule="batch", matmul=v.matmul._replace(order=order),
                               doc=v.doc + "; the batched form: products in grid z, any window of the batch per operand",
                               **kw)
