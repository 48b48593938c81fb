"""Hopper fp16 / bf16 GEMM through wgmma, TMA, mbarriers and warp specialisation (sm_90a).

A ladder above the mma.sync / WMMA kernels (kernels/hgemm_wgmma/), one idea per rung, fp16 in and out
with fp32 accumulation: 1 cpasync (wgmma from cp.async-filled swizzled tiles), 2 tma (TMA and
FULL / EMPTY mbarriers), 3-4 ws (a producer warpgroup, one or two consumer warpgroups, setmaxnreg),
5 persistent (one block per SM, grouped tile order), 6 cluster2 (clusters of two along M, B
multicast), 7 tma_store (the epilogue through swizzled staging boxes and TMA stores), 8 bt (operand
roles swapped, C^T = B^T A^T), 9 splitk (hgemm_wgmma_splitk.py), 10 small_m (64-row tiles, 6-16
stages). bf16 siblings (`_bf16`) of the top rungs, and a TF32 sibling of the top structure for
float32 inputs (`hgemm_wgmma_tf32_*`) whose tensor maps round A and B to TF32 as cuBLAS does.

Rung 7's forms for what cugemm.matmul hands it, in fp16 and bf16: `_acol`, `_bcol`, `_acol_bcol`
read A and/or B column-major without a copy (a.T, and the x @ W.T of a linear layer); `_anyc`
writes a C that TMA cannot store (2-byte aligned pointer or row stride); 128 x 64 / 128 / 192 tiles
for the shapes 128 x 256 tiles quantise badly, and 192 x 192 / 128 tiles (`_wg3`: three consumer
warpgroups) for those whose 192-row tiles fill whole rounds; the narrower forms (and rung 10's 64 x 64
and 64 x 128) also without clusters, whose launch costs ~1.5 us less. Rung 7 and these forms are `strided`: any M, K (N: the
any-C forms; N % 8 == 0 for TMA stores) and leading dimensions that are multiples of 16 bytes.
The story of each rung, what it measured, the profiles and what was tried and dropped:
docs/hgemm_wgmma.md.
"""
from __future__ import annotations

from ..dtypes import get as _dtype
from ..variant import Candidate, Variant

FAMILY = "hgemm_wgmma"
BM, BK = 128, 64

# cugemm.matmul's ratings of the rungs it may choose (Candidate: nominal H100 TFLOP/s when the tiles
# fill the GPU, how the model scales it, preference order; cugemm/select.py). The split-K rows are
# in cugemm/families/hgemm_wgmma_splitk.py, the skinny ones in hgemm_skinny.py (orders 0, 2, 3).
SMALL_M = Candidate(300.0, "stream", 1)      # 64-row tiles: few rows, B read once
TOP = Candidate(640.0, "persistent", 4)       # rung 7, 128x256, every operand form
TOP_ANYC = Candidate(590.0, "persistent", 5)  # its any-C sibling
BT = Candidate(630.0, "persistent", 6)        # rung 8 without clusters
TILE = {192: Candidate(610.0, "persistent", 7), 128: Candidate(600.0, "persistent", 9),
        64: Candidate(520.0, "persistent", 11)}  # rung 7 with 128 x 192 / 128 / 64 tiles
TILE_WG3 = {192: Candidate(615.0, "persistent", 8), 128: Candidate(600.0, "persistent", 10)}  # 192 x 192 / 128
# rung 7's ping-pong schedule with 128 x 128 tiles: rated as the cooperative one, preferred after it on a
# tie (the tables decide: it gains where a tile's epilogue is a large part of its time, K <= ~2048)
TILE_PINGPONG = {128: Candidate(600.0, "persistent", 23)}
# rung 7's fitted widths (x @ W.T, 128 x bn tiles): narrower tiles re-read A more, so lower nominal rates
FITTED = {48: Candidate(480.0, "persistent", 14), 80: Candidate(540.0, "persistent", 15),
          112: Candidate(570.0, "persistent", 16), 144: Candidate(590.0, "persistent", 17),
          160: Candidate(595.0, "persistent", 18), 208: Candidate(610.0, "persistent", 19),
          224: Candidate(615.0, "persistent", 20)}
FITTED_WG3 = {144: Candidate(600.0, "persistent", 21), 160: Candidate(605.0, "persistent", 22)}  # 192 x 144 / 160
ANYC_128 = Candidate(570.0, "persistent", 13)
TF32 = Candidate(350.0, "persistent", 0), Candidate(340.0, "persistent", 1)  # with / without clusters
TF32_128 = Candidate(320.0, "persistent", 2)  # 128 x 128 tiles: more of them, each less efficient


def _bcol_candidate(c: Candidate | None) -> Candidate | None:
    """The `_bcol` form of a rung 7 tile width: rated as its row-major form, one place after it."""
    return c and c._replace(order=c.order + 1)


# ---- constructors ----------------------------------------------------------------------------------
def _common(name, dtype, doc, **kw):
    return dict(name=name, family=FAMILY, dtype_in=dtype, dtype_out=dtype, dtype_acc="float32",
                math="wgmma", align=16, archs=("sm_90a",), seed="cugemm", doc=doc, **kw)


def _T(dtype: str) -> str:
    return _dtype(dtype).ctype


def _cpasync(name, *, BN, STAGES, dtype="float16", doc, **kw):
    return Variant(source="hgemm_wgmma/01_cpasync.cu", template="hgemm_wgmma_cpasync",
                   params=(("BN", BN), ("STAGES", STAGES), ("T", _T(dtype))),
                   tile=(BM, BN, BK), block=(256, 1, 1), multiple_of=(BM, BN, BK), **_common(name, dtype, doc, **kw))


def _tma(name, *, BN, STAGES, dtype="float16", doc, **kw):
    return Variant(source="hgemm_wgmma/02_tma.cu", template="hgemm_wgmma_tma",
                   params=(("BN", BN), ("STAGES", STAGES), ("T", _T(dtype))),
                   tile=(BM, BN, BK), block=(256, 1, 1), multiple_of=(BM, BN, BK), args_rule="tma_ab",
                   **_common(name, dtype, doc, **kw))


def _ws(name, *, BN, CONSUMERS, STAGES, dtype="float16", doc, **kw):
    return Variant(source="hgemm_wgmma/03_ws.cu", template="hgemm_wgmma_ws",
                   params=(("BM", BM), ("BN", BN), ("CONSUMERS", CONSUMERS), ("STAGES", STAGES), ("T", _T(dtype))),
                   tile=(BM, BN, BK), block=(128 * (CONSUMERS + 1), 1, 1), multiple_of=(BM, BN, BK),
                   args_rule="tma_ab", **_common(name, dtype, doc, **kw))


def _persistent(name, *, BM=BM, BN=256, STAGES=4, GROUP=8, CLUSTER_M=1, TMA_STORE=False, ANY_C=False,
                A_COL=False, B_COL=False, NARROW_EDGE=False, BATCHED=False, GROUPS=0, EPI_BOXES=2, PINGPONG=False,
                dtype="float16", doc, **kw):
    """04_persistent.cu. With strided=True (the top rung and its forms) any M and K, and any N for
    ANY_C: the tensor maps carry the true shape and leading dimensions, TMA zero-fills past them;
    only the leading dimensions must be multiples of 16 bytes (TMA's rule; ANY_C's C: of 2). The
    TMA-store forms keep N % 8 == 0: a TMA store writes the 16-byte piece of a row that holds the
    last column whole, so C's rows must end on 16 bytes; ANY_C's bounded stores take any N."""
    bounded = ANY_C and not TMA_STORE  # ANY_C's bounded stores (with TMA_STORE: the STAGED form)
    if kw.get("strided"):
        kw.setdefault("multiple_of", (1, 1, 1) if bounded else (1, 8, 1))
    if bounded:
        kw.setdefault("c_align", 2)
    return Variant(source="hgemm_wgmma/04_persistent.cu", template="hgemm_wgmma_persistent",
                   params=(("BM", BM), ("BN", BN), ("STAGES", STAGES), ("GROUP", GROUP), ("CLUSTER_M", CLUSTER_M),
                           ("TMA_STORE", TMA_STORE), ("ANY_C", ANY_C), ("A_COL", A_COL), ("B_COL", B_COL),
                           ("NARROW_EDGE", NARROW_EDGE), ("BATCHED", BATCHED), ("GROUPS", GROUPS),
                           ("EPI_BOXES", EPI_BOXES), ("PINGPONG", PINGPONG),
                           ("T", _T(dtype))),
                   tile=(BM, BN, BK), block=(128 + 2 * BM, 1, 1), a_layout="col" if A_COL else "row",
                   b_layout="col" if B_COL else "row", cluster=(CLUSTER_M, 1, 1),
                   grid_rule="persistent", args_rule="tma_persistent", pdl=True,
                   **_common(name, dtype, doc, **{"multiple_of": (1, 8, 8), **kw}))


def _tile_forms(bn: int, stages: int, doc: str, cluster: int = 2, bm: int = BM, pingpong: bool = False) -> tuple:
    """Rung 7 (TMA-store epilogue, strided) with bm x bn tiles, clusters of `cluster` along M, in fp16
    and bf16, then its `_bcol` form (B read column-major: x @ W.T) in both. No NARROW_EDGE: its edge
    widths are a 256-wide tile's (04_persistent.cu asserts BN = 256). Without clusters (cluster=1) for
    small products: a cluster launch costs about 1.5 us more than a plain one (scripts/floor_probe.py).
    bm = 192 (`_wg3`): three consumer warpgroups (setmaxnreg 40 / 152), for shapes whose 192-row tiles
    fill whole rounds of the SMs where 128-row ones leave a last round partly idle (2048 x 2304: 132
    tiles of 192 x 192 where 128 x 192 tiles make 192). pingpong (`_pingpong`, PINGPONG): the two consumer
    warpgroups take whole tiles in turn instead of a 64-row slab each of one tile."""
    c = ("_wg3" if bm == 192 else "") + ("_pingpong" if pingpong else "") + ("_cluster2" if cluster == 2 else "")
    rating = (TILE_WG3 if bm == 192 else TILE_PINGPONG if pingpong else TILE)[bn]
    head = doc.split(":")[0]
    docs = {("", ""): doc, ("", "_bf16"): f"{head} in bf16",
            ("_bcol", ""): f"{head} and {_FORM_DOC['_bcol']}, no copy",
            ("_bcol", "_bf16"): f"{head} and {_FORM_DOC['_bcol']}, no copy, in bf16"}
    return tuple(
        _persistent(f"hgemm_wgmma_m64n{bn}k16_persistent{c}_tma_store_stage{stages}{col}{bf}", BM=bm, BN=bn,
                    STAGES=stages, CLUSTER_M=cluster, TMA_STORE=True, B_COL=col == "_bcol", PINGPONG=pingpong,
                    strided=True, dtype=dtype, doc=docs[col, bf], matmul=_bcol_candidate(rating) if col else rating)
        for col in ("", "_bcol") for dtype, bf in (("float16", ""), ("bfloat16", "_bf16")))


def _fitted_forms(bn: int, stages: int, bm: int = BM) -> tuple:
    """Rung 7 with bm x bn tiles of a fitted width (bn a multiple of 16, not of 64), `_bcol` only, no
    clusters, fp16 and bf16: dense operands (C's last bn % 64 columns are written from registers with
    C's row stride N), so a strided one is copied. bm = 192 (`_wg3`): three consumer warpgroups."""
    wg3 = "_wg3" if bm == 192 else ""
    doc = (f"rung 7 with {bm}x{bn} tiles fitted to the SMs and {_FORM_DOC['_bcol']}: one K-major B box of "
           f"{bn} n rows, wgmma m64n{bn}k16, {bn // 64} TMA-stored 64-column panels and {bn % 64} columns "
           f"from registers, {stages} stages, dense operands")
    return tuple(
        _persistent(f"hgemm_wgmma_m64n{bn}k16_persistent{wg3}_tma_store_stage{stages}_bcol{bf}", BM=bm, BN=bn,
                    STAGES=stages, TMA_STORE=True, B_COL=True, dtype=dtype,
                    doc=doc if not bf else f"{doc.split(':')[0]} in bf16", matmul=(FITTED_WG3 if wg3 else FITTED)[bn])
        for dtype, bf in (("float16", ""), ("bfloat16", "_bf16")))


# Rung 7's fitted widths (bm, bn, stages): the ring plus the staging boxes (32 KB for two consumers, 48
# KB for three) within 227 KB; 192-row tiles as cuBLAS runs some x @ W.T layers (192x144, 192x160)
_FITTED_FORMS = ((BM, 48, 8), (BM, 80, 7), (BM, 112, 6), (BM, 144, 5), (BM, 160, 5), (BM, 208, 4), (BM, 224, 4),
                 (192, 144, 4), (192, 160, 4))


def _wg3_forms(bn: int, stages: int) -> tuple:
    """Rung 7 with 192 x bn tiles (_tile_forms with bm = 192), without clusters and with clusters of 2."""
    return tuple(v for cluster in (1, 2) for v in _tile_forms(
        bn, stages, f"rung 7 with 192x{bn} tiles: three consumer warpgroups of m64n{bn}k16 slabs, {stages} stages"
        + (", clusters of 2 along M" if cluster == 2 else ""), cluster=cluster, bm=192))


# The operand forms of the top rung (A_COL, B_COL) and its any-C sibling, in both 16-bit types.
_FORMS = (("", False, False), ("_acol", True, False), ("_bcol", False, True), ("_acol_bcol", True, True))
_FORM_DOC = {"_acol": "A read column-major (a.T of a row-major K x M: M-major A tiles, transposed wgmma A)",
             "_bcol": "B read column-major (the x @ W.T of a linear layer: K-major B tiles)",
             "_acol_bcol": "A and B read column-major (C^T's operands as stored: a.T @ W.T)"}


def _top_forms(dtype: str) -> tuple:
    """Rung 7's transposed-operand forms, and the ANY_C sibling in all four operand forms."""
    bf = "_bf16" if dtype == "bfloat16" else ""
    out = []
    for suffix, a_col, b_col in _FORMS:
        if suffix:
            out.append(_persistent(
                _P + "_cluster2_tma_store_stage4" + suffix + bf, CLUSTER_M=2, TMA_STORE=True, A_COL=a_col,
                B_COL=b_col, NARROW_EDGE=True, dtype=dtype, strided=True, matmul=TOP,
                aliases=("hgemm_wgmma_fast" + suffix + bf,),
                doc=f"rung 7 with {_FORM_DOC[suffix]}, no copy; any M, N, K and leading dimensions; an edge "
                    "tile of 1-3 live panels issues n64-n192 wgmmas"))
        out.append(_persistent(
            _P + "_cluster2_anyc_stage3" + suffix + bf, STAGES=3, CLUSTER_M=2, ANY_C=True, A_COL=a_col,
            B_COL=b_col, NARROW_EDGE=True, dtype=dtype, strided=True, matmul=TOP_ANYC,
            aliases=("hgemm_wgmma_fast_anyc" + suffix + bf,),
            doc="rung 7's structure for a C TMA cannot store (2-byte aligned pointer or row stride): each "
                "consumer stages its whole slab, the producer warpgroup's 3 idle warps write it with "
                "bounded 4/2-byte stores during the next mainloop; 3 stages" +
                (f"; {_FORM_DOC[suffix]}" if suffix else "")))
    return tuple(out)


# The STAGED form (ANY_C's structure with a TMA store, 04_persistent.cu) for each cooperative width with
# clusters of 2: {BN: stages beside two staged slabs of BN / 64 boxes}, "" and "_bcol", fp16 and bf16.
STAGED_STAGES = {256: 3, 192: 4, 128: 6}


def staged_name(bn: int, col: str = "", bf: str = "") -> str:
    """The STAGED form's registry name: rung 7's TMA-store name with `_tma_staged` for `_tma_store`."""
    return f"hgemm_wgmma_m64n{bn}k16_persistent_cluster2_tma_staged_stage{STAGED_STAGES[bn]}{col}{bf}"


def _staged_forms() -> tuple:
    """Rung 7's STAGED form for fused epilogues (cugemm.epilogue.fused_plan runs it; matmul does not
    rank it: its plain product is the TMA-store form's with fewer stages): the consumers stage each
    slab's pre-activation and go on; the producer warpgroup's three idle warps apply the activation in
    place and TMA-store it."""
    out = []
    for bn, stages in STAGED_STAGES.items():
        for col in ("", "_bcol"):
            for dtype, bf in (("float16", ""), ("bfloat16", "_bf16")):
                out.append(_persistent(
                    staged_name(bn, col, bf), BN=bn, STAGES=stages, CLUSTER_M=2, TMA_STORE=True,
                    ANY_C=True, B_COL=col == "_bcol", NARROW_EDGE=bn == 256, dtype=dtype, strided=True,
                    doc=f"rung 7's STAGED form, 128x{bn} tiles, clusters of 2, {stages} stages"
                        + (f", {_FORM_DOC[col]}" if col else "") + (" in bf16" if bf else "")
                        + ": each consumer stages its slab's pre-activation and goes on; the producer "
                          "warpgroup's 3 idle warps apply a fused activation in place and TMA-store it"))
    return tuple(out)


_CLUSTER_DOC = {"_cluster2m": ", clusters of 2 along M sharing B", "_cluster2n": ", clusters of 2 along N sharing A"}


def _small_m(bn: int, stages: int, cluster: int, along_m: bool, doc: str, b_col: bool = False) -> tuple:
    """Rung 10 (08_small_m.cu), 64 x bn tiles, in fp16 and bf16; clusters of `cluster` blocks along M
    (`_cluster2m`, sharing B) or along N (`_cluster2n`, sharing A). b_col: the `_bcol` form (B_COL,
    b_layout 'col': B read column-major, the x @ W.T of a linear layer, no copy)."""
    c = f"_cluster{cluster}{'m' if along_m else 'n'}" if cluster > 1 else ""
    col = "_bcol" if b_col else ""
    bf_doc = f"rung 10 with 64x{bn} tiles{_CLUSTER_DOC.get(c, '')}{' and ' + _FORM_DOC['_bcol'] if b_col else ''}"
    return tuple(
        Variant(source="hgemm_wgmma/08_small_m.cu", template="hgemm_wgmma_small_m",
                params=(("BN", bn), ("STAGES", stages), ("GROUP", 8), ("CLUSTER", cluster), ("ALONG_M", along_m),
                        ("B_COL", b_col), ("T", _T(dtype))),
                tile=(64, bn, BK), block=(160, 1, 1), multiple_of=(1, 8, 8), b_layout="col" if b_col else "row",
                cluster=(cluster, 1, 1), grid_rule="persistent", args_rule="tma_small_m", matmul=SMALL_M,
                **_common(f"hgemm_wgmma_m64n{bn}k16_small_m{c}_stage{stages}{col}{bf}", dtype,
                          doc if not bf else f"{bf_doc} in bf16"))
        for dtype, bf in (("float16", ""), ("bfloat16", "_bf16")))


# Rung 10's forms: (BN, STAGES, CLUSTER, ALONG_M, doc), each registered row-major and as `_bcol`.
_SMALL_M_FORMS = (
    (32, 16, 1, True,
     "64-row tiles for products with few rows: 64x32 tiles (wgmma m64n32k16, B in 64-byte-swizzled "
     "32-column panels), one consumer warpgroup and a producer warp, 16 stages, persistent, no "
     "split-K (M=64 against a 4096-wide weight: 128 tiles); A boxes of M rows when M < 64"),
    (64, 12, 2, True, "rung 10 with 64x64 tiles, 12 stages, clusters of 2 along M sharing B"),
    (96, 10, 1, True, "rung 10 with 64x96 tiles (three 32-column panels), 10 stages (N = 11008: 115 tiles)"),
    (64, 12, 1, True, "rung 10 with 64x64 tiles, 12 stages, no clusters (a cluster launch costs ~1.5 us)"),
    (128, 8, 2, True, "rung 10 with 64x128 tiles, 8 stages, clusters of 2 along M sharing B"),
    (128, 8, 1, True, "rung 10 with 64x128 tiles, 8 stages, no clusters"),
    (128, 8, 2, False, "rung 10 with 64x128 tiles, 8 stages, clusters of 2 along N sharing A"),
    (192, 6, 2, True, "rung 10 with 64x192 tiles, 6 stages, clusters of 2 along M sharing B"),
)


# Rung 10's fitted widths, `_bcol` only (BN, STAGES): one K-major panel of BN n rows, so that few-row
# x @ W.T products fill the SMs in one round (N = 2560: 108 tiles of 64 x 48 at M <= 128)
_SMALL_M_FITTED = ((40, 16), (48, 15), (80, 12))


def _small_m_bcol_doc(bn: int, cluster: int, along_m: bool) -> str:
    """The doc line of a rung-10 `_bcol` form."""
    side = ("" if cluster == 1 else ", clusters of 2 along M sharing B (each block multicasts half of every "
            "panel's n rows)" if along_m else ", clusters of 2 along N sharing A")
    if bn % 32:
        return (f"rung 10 with 64x{bn} tiles fitted to the SMs and {_FORM_DOC['_bcol']}: one 128-byte-swizzled "
                f"K-major panel of {bn} n rows (wgmma m64n{bn}k16), no copy (x @ W.T, a few rows against a "
                "weight whose 32- and 64-wide tile columns leave SMs idle)")
    return (f"rung 10 with 64x{bn} tiles{side} and {_FORM_DOC['_bcol']}: 128-byte-swizzled K-major panels "
            f"of {64 if bn % 64 == 0 else 32} n rows, no copy (x @ W.T for mid-size activations)")


def _persistent_bt(name, *, STAGES=4, GROUP=8, CLUSTER_N=1, dtype="float16", doc, **kw):
    return Variant(source="hgemm_wgmma/06_persistent_bt.cu", template="hgemm_wgmma_persistent_bt",
                   params=(("STAGES", STAGES), ("GROUP", GROUP), ("CLUSTER_N", CLUSTER_N), ("T", _T(dtype))),
                   tile=(256, 128, BK), block=(384, 1, 1), multiple_of=(1, 8, 8), cluster=(CLUSTER_N, 1, 1),
                   grid_rule="persistent", args_rule="tma_bt", **_common(name, dtype, doc, **kw))


def _tf32(name, *, BM=256, STAGES=4, GROUP=8, CLUSTER_N=1, B_COL=False, BATCHED=False, GROUPS=0, doc, **kw):
    return Variant(source="hgemm_wgmma/05_tf32.cu", template="hgemm_wgmma_tf32",
                   params=(("BM", BM), ("STAGES", STAGES), ("GROUP", GROUP), ("CLUSTER_N", CLUSTER_N),
                           ("B_COL", B_COL), ("BATCHED", BATCHED), ("GROUPS", GROUPS)),
                   tile=(BM, 128, 32), block=(384, 1, 1), multiple_of=(1, 1, 4) if B_COL else (1, 4, 4),
                   b_layout="col" if B_COL else "row", cluster=(CLUSTER_N, 1, 1),
                   grid_rule="persistent", args_rule="tma_tf32",
                   **_common(name, "float32", doc, math_dtype="tfloat32", **kw))


def _batched_form(bm: int, bn: int, cluster: int, stages: int, epi: int, suffix: str, dtype: str,
                  order: int) -> Variant:
    """Rung 7's batched form (BATCHED: a batch of products in one launch, 3-D tensor maps, the walk over
    batches x tiles) with bm x bn tiles (bm 192: `_wg3`, three consumers), clusters of `cluster` along M, `epi` staging boxes per
    consumer (`_epi<n>` when over 2: more of C's stores in flight), operand form `suffix`; rated as
    rung 7 with those tiles, preference `order`: candidates of cugemm.matmul for batched problems only
    (cugemm.select.Problem.batched), ranked as the 2-D product of the batch's stacked rows in a tuning
    group of their own."""
    c = ("_wg3" if bm == 192 else "") + ("_cluster2" if cluster == 2 else "")
    e = f"_epi{epi}" if epi > 2 else ""
    bf = "_bf16" if dtype == "bfloat16" else ""
    rating = TILE_WG3[bn] if bm == 192 else TOP if bn == 256 else TILE[bn]
    doc = (f"rung 7's batched form with {bm}x{bn} tiles{', clusters of 2 along M' if cluster == 2 else ''}, {stages} "
           f"stages and {epi} staging boxes per consumer{' and ' + _FORM_DOC[suffix] if suffix else ''}: products z = "
           "0 .. batches - 1 in one launch (3-D maps of A, B and C; an operand's matrices any window of the batch)")
    return _persistent(f"hgemm_wgmma_m64n{bn}k16_persistent{c}_tma_store_stage{stages}{e}{suffix}_batched{bf}",
                       BM=bm, BN=bn, STAGES=stages, CLUSTER_M=cluster, TMA_STORE=True, A_COL="acol" in suffix,
                       B_COL="bcol" in suffix, NARROW_EDGE=bn == 256, BATCHED=True, EPI_BOXES=epi, strided=True,
                       dtype=dtype, doc=doc, matmul=rating._replace(order=order),
                       workspace_rule="dynamic_walk" if cluster == 1 else "")


# The batched forms (tile height and width, cluster, stages, staging boxes, operand forms), fp16 and
# bf16, in the model's order of preference among equal estimates (on small-K batches the C store sets
# the time and the estimates tie; `tune --batched` measured 128 x 128 tiles without clusters fastest
# there); 192-row tiles for products of 192-row multiples (576 x 576: 9 tiles of 192 x 192, 25 of 128 x 128)
BATCHED_FORMS = ((128, 128, 1, 6, 2, ("", "_bcol")), (128, 128, 1, 4, 6, ("", "_bcol")),
                 (128, 64, 1, 8, 2, ("", "_bcol")), (128, 128, 2, 6, 2, ("", "_bcol")),
                 (128, 256, 2, 4, 2, ("", "_acol", "_bcol", "_acol_bcol")), (128, 256, 1, 2, 8, ("", "_bcol")),
                 (128, 256, 2, 2, 8, ("", "_bcol")), (192, 192, 1, 3, 2, ("", "_bcol")),
                 (192, 128, 1, 4, 2, ("", "_bcol")))
BATCHED_ORDER = 100  # the batched forms' preference orders: 100, 101, ... in BATCHED_FORMS' order


def _batched_forms() -> tuple:
    out = []
    for bm, bn, cluster, stages, epi, suffixes in BATCHED_FORMS:
        for suffix in suffixes:
            for dtype in ("float16", "bfloat16"):
                out.append(_batched_form(bm, bn, cluster, stages, epi, suffix, dtype, BATCHED_ORDER + len(out)))
    return tuple(out)


def _grouped_form(bm: int, bn: int, cluster: int, stages: int, epi: int, groups: int, suffix: str,
                  dtype: str) -> Variant:
    """Rung 7's grouped form (GROUPS > 0: the batched form's B and dynamic walk over groups of A's rows,
    cugemm.grouped) with bm x bn tiles (bm 192: `_wg3`, three consumers), clusters of `cluster` along M
    (`_cluster2`: B multicast, the static walk), `stages` stages, `epi`
    staging boxes per consumer (`_epi<n>` when over 2), group tables for `groups` groups (`_g<n>` when
    under 1024: the shared memory the ring needs), B row-major (G, K, N) or `_bcol` (the (G, N, K)
    memory of expert weights, x @ W.T per group). Not a candidate of cugemm.matmul (no rating):
    cugemm.grouped_matmul chooses among these (GROUPED_FORMS)."""
    c = ("_wg3" if bm == 192 else "") + ("_cluster2" if cluster == 2 else "")
    e = f"_epi{epi}" if epi > 2 else ""
    g = f"_g{groups}" if groups < 1024 else ""
    bf = "_bf16" if dtype == "bfloat16" else ""
    doc = (f"rung 7's grouped form with {bm}x{bn} tiles, {stages} stages and {epi} staging boxes per consumer"
           f"{' and ' + _FORM_DOC[suffix] if suffix else ''}: groups of A's rows (ends on the GPU; up to {groups} "
           "groups) times B[g], one launch, the groups' tables in shared memory")
    return _persistent(f"hgemm_wgmma_m64n{bn}k16_persistent{c}_tma_store_stage{stages}{e}{g}{suffix}_grouped{bf}",
                       BM=bm, BN=bn, STAGES=stages, CLUSTER_M=cluster, TMA_STORE=True, B_COL="bcol" in suffix,
                       NARROW_EDGE=bn == 256, BATCHED=True, GROUPS=groups, EPI_BOXES=epi, strided=True, dtype=dtype,
                       doc=doc, workspace_rule="dynamic_walk" if cluster == 1 else "")


# The grouped forms (tile height and width, cluster, stages, staging boxes per consumer, table length): group
# tables for 1024 groups take 8 KB of static shared memory, so those forms have one stage fewer than
# their batched twins; the `_g128` forms (1 KB) keep the stage. Forms with clusters of 2 (B
# multicast, the static walk) measured 0-47% slower than these on the 'tune' set
# (scripts/grouped_bench.py --probe, H100) and are not registered
GROUPED_FORMS = ((128, 256, 1, 3, 2, 1024), (128, 256, 1, 4, 2, 128), (128, 256, 1, 3, 4, 1024),
                 (128, 128, 1, 5, 2, 1024), (128, 128, 1, 6, 2, 128), (192, 128, 1, 4, 2, 1024))


def _grouped_forms() -> tuple:
    return tuple(_grouped_form(bm, bn, cluster, stages, epi, groups, suffix, dtype)
                 for bm, bn, cluster, stages, epi, groups in GROUPED_FORMS
                 for suffix in ("", "_bcol") for dtype in ("float16", "bfloat16"))


_P = "hgemm_wgmma_m64n256k16_persistent"
_BT = "hgemm_wgmma_m64n256k16_bt_persistent"

_VARIANTS_2D: tuple[Variant, ...] = (
    # ---- the ladder (fp16) ---------------------------------------------------------------------
    _cpasync("hgemm_wgmma_m64n128k16_cpasync_stage4", BN=128, STAGES=4,
             doc="wgmma m64n128k16, both operands in 128B-swizzled shared memory filled by cp.async; "
                 "128x128x64 tile of 2 warpgroups, 4 stages"),
    _tma("hgemm_wgmma_m64n128k16_tma_stage4", BN=128, STAGES=4,
         doc="TMA copies completing on FULL mbarriers (expect-tx), EMPTY mbarriers for stage reuse, "
             "one K-tile of wgmmas in flight; 4 stages"),
    _ws("hgemm_wgmma_m64n128k16_ws_stage6", BN=128, CONSUMERS=1, STAGES=6,
        doc="warp specialisation: a producer warpgroup (one thread issues TMA) and one consumer "
            "warpgroup (two m64n128k16 slabs), setmaxnreg 40/232; 128x128 tile, 6 stages"),
    _ws("hgemm_wgmma_m64n256k16_ws_wg2_stage4", BN=256, CONSUMERS=2, STAGES=4,
        doc="two consumer warpgroups of 64x256 (wgmma m64n256k16): a 128x256x64 tile, 4 stages"),
    _persistent(_P + "_stage4", doc="persistent: one block per SM walking 128x256 tiles in grouped "
                                    "order (bands of 8 tile rows); the pipeline runs on across tiles"),
    _persistent(_P + "_cluster2_stage4", CLUSTER_M=2,
                doc="clusters of 2 blocks along M: each copies half of the shared B tile with TMA "
                    "multicast"),
    _persistent(_P + "_cluster2_tma_store_stage4", CLUSTER_M=2, TMA_STORE=True, strided=True,
                aliases=("hgemm_wgmma_fast",), matmul=TOP,
                doc="epilogue through swizzled shared memory and TMA stores (bounded) that overlap "
                    "the next tile's mainloop"),
    _persistent_bt(_BT + "_cluster2_stage4", CLUSTER_N=2,
                   doc="operand roles swapped (C^T = B^T A^T): the 256-row A tile is the wide, K-major "
                       "wgmma operand, B^T the narrow N-major one; 256x128 tiles, clusters of 2 along "
                       "N share A; stmatrix.trans epilogue"),
    # ---- siblings of the top rungs without clusters -----------------------------------------------
    _persistent(_P + "_tma_store_stage4", TMA_STORE=True,
                doc="rung 7 without clusters: persistent, TMA-store epilogue"),
    _persistent_bt(_BT + "_stage4", matmul=BT,
                   doc="rung 8 without clusters (each block copies its whole A tile)"),
    # ---- bf16 siblings of the top rungs ---------------------------------------------------------
    _persistent(_P + "_stage4_bf16", dtype="bfloat16", doc="rung 5 (persistent) in bf16"),
    _persistent(_P + "_cluster2_stage4_bf16", CLUSTER_M=2, dtype="bfloat16",
                doc="rung 6 (clusters of 2, B multicast) in bf16"),
    _persistent(_P + "_cluster2_tma_store_stage4_bf16", CLUSTER_M=2, TMA_STORE=True, dtype="bfloat16",
                strided=True, aliases=("hgemm_wgmma_fast_bf16",), matmul=TOP,
                doc="rung 7 (TMA-store epilogue) in bf16"),
    _persistent_bt(_BT + "_cluster2_stage4_bf16", CLUSTER_N=2, dtype="bfloat16",
                   doc="rung 8 (operand roles swapped) in bf16"),
    _persistent_bt(_BT + "_stage4_bf16", dtype="bfloat16", matmul=BT, doc="rung 8 without clusters, in bf16"),
    # ---- rung 7 with 128x128 tiles: twice the tiles, for the shapes 128x256 tiles quantise badly
    # (3072^3: 288 tiles are 2.2 rounds of 132 SMs, 576 are 4.4); 6 stages fit beside the boxes
    *_tile_forms(128, 6, "rung 7 with 128x128 tiles (two m64n128k16 slabs), 6 stages: finer tiles for shapes "
                         "whose 128x256 tiles leave most of a last round idle"),
    # ---- rung 7 with 128x64 tiles: 1024^3 is 64 tiles of 128x128 on 132 SMs, 128 of these
    *_tile_forms(64, 8, "rung 7 with 128x64 tiles (two m64n64k16 slabs; block 0 of a cluster multicasts the one "
                        "B panel), 8 stages: small squares whose 128x128 tiles leave half the SMs idle"),
    # ---- rung 7 with 128x192 tiles: 3072^3 is 2.2 rounds of 128x256 tiles, 4.4 of 128x128, 2.9 of these
    *_tile_forms(192, 4, "rung 7 with 128x192 tiles (two m64n192k16 slabs; each block of a cluster multicasts "
                         "its panels of 3), 4 stages: for shapes that 128x256 and 128x128 tiles both quantise badly"),
    # ---- the same without clusters, for small products (a cluster launch costs ~1.5 us more)
    *_tile_forms(64, 8, "rung 7 with 128x64 tiles and no clusters, 8 stages: small products, where a cluster "
                        "launch's cost shows", cluster=1),
    *_tile_forms(128, 6, "rung 7 with 128x128 tiles and no clusters, 6 stages: small products", cluster=1),
    *_tile_forms(192, 4, "rung 7 with 128x192 tiles and no clusters, 4 stages: small products", cluster=1),
    # ---- rung 7's ping-pong schedule, 128x128 tiles: each consumer a whole tile, in turns, so that one's
    # epilogue runs under the other's wgmmas (x @ W.T at K = 768: 3-6% faster than the cooperative form)
    *(v for cluster in (2, 1) for v in _tile_forms(
        128, 6, "rung 7's ping-pong schedule: each of the two consumer warpgroups takes whole 128x128 tiles "
                "(two m64n128k16 slabs) in turn, so that one's epilogue overlaps the other's wgmmas; 6 stages"
                + (", clusters of 2 along M" if cluster == 2 else ", no clusters"), cluster=cluster, pingpong=True)),
    # ---- rung 7 with 192-row tiles (three consumer warpgroups): 2048x2304 is 132 tiles of 192x192
    *_wg3_forms(192, 3),
    *_wg3_forms(128, 4),
    # ---- rung 7 with fitted widths (x @ W.T): tile counts fitted to the SMs -------------------------
    *(v for bm, bn, stages in _FITTED_FORMS for v in _fitted_forms(bn, stages, bm)),
    _persistent("hgemm_wgmma_m64n128k16_persistent_cluster2_anyc_stage6", BN=128, STAGES=6, CLUSTER_M=2,
                ANY_C=True, strided=True, matmul=ANYC_128,
                doc="the any-C sibling with 128x128 tiles: 6 stages beside the 32 KB of slabs, and an N one "
                    "past a multiple of 256 (4097) costs a 128-wide tile column, not a 256-wide one"),
    _persistent("hgemm_wgmma_m64n128k16_persistent_cluster2_anyc_stage6_bf16", BN=128, STAGES=6, CLUSTER_M=2,
                ANY_C=True, strided=True, dtype="bfloat16", matmul=ANYC_128,
                doc="the any-C sibling with 128x128 tiles in bf16"),
    # ---- rung 7's STAGED form: a fused activation off the consumers (cugemm.epilogue) -------------------
    *_staged_forms(),
    # ---- rung 7 for every layout and shape: transposed operands (no copy), any C ----------------------
    *_top_forms("float16"),
    *_top_forms("bfloat16"),
    # ---- rung 10: 64-row tiles as narrow as 32 columns, 6-16 stages, for products with few rows ------
    # (_SMALL_M_FORMS; each form's _bcol sibling, B read column-major for x @ W.T, right after it)
    *(v for bn, stages, cluster, along_m, doc in _SMALL_M_FORMS
      for b_col in (False, True)
      for v in _small_m(bn, stages, cluster, along_m,
                        _small_m_bcol_doc(bn, cluster, along_m) if b_col else doc, b_col=b_col)),
    *(v for bn, stages in _SMALL_M_FITTED for v in _small_m(bn, stages, 1, True, _small_m_bcol_doc(bn, 1, True),
                                                             b_col=True)),
    # ---- the TF32 sibling of the top structure (float32 in and out) --------------------------------
    _tf32("hgemm_wgmma_tf32_m64n256k8_persistent_stage4", matmul=TF32[1],
          doc="float32 GEMM with TF32 wgmma m64n256k8 (C^T = B^T A^T, B^T from registers), persistent "
              "and warp-specialized; TMA maps of type TFLOAT32 round both operands as cuBLAS does"),
    _tf32("hgemm_wgmma_tf32_m64n256k8_persistent_cluster2_stage4", CLUSTER_N=2, matmul=TF32[0],
          aliases=("hgemm_wgmma_tf32_fast",),
          doc="the TF32 sibling with clusters of 2 along N sharing the A tile (TMA multicast)"),
    _tf32("hgemm_wgmma_tf32_m64n256k8_persistent_stage4_bcol", B_COL=True, matmul=_bcol_candidate(TF32[1]),
          doc="the TF32 sibling reading B column-major (x @ W.T of a float32 W, no copy): both wgmma operands "
              "K-major from shared memory"),
    _tf32("hgemm_wgmma_tf32_m64n256k8_persistent_cluster2_stage4_bcol", CLUSTER_N=2, B_COL=True,
          matmul=_bcol_candidate(TF32[0]),
          doc="the TF32 sibling with clusters of 2 along N reading B column-major (x @ W.T, no copy)"),
    # 128 x 128 tiles (wgmma m64n128k8) for products whose 256 x 128 tiles leave SMs idle
    *(_tf32(f"hgemm_wgmma_tf32_m64n128k8_persistent_stage6{'_bcol' if b_col else ''}", BM=128, STAGES=6,
            B_COL=b_col, matmul=TF32_128._replace(order=TF32_128.order + b_col),
            doc="the TF32 sibling with 128 x 128 tiles (wgmma m64n128k8), 6 stages"
                + (", B read column-major (x @ W.T, no copy)" if b_col else ""))
      for b_col in (False, True)),
)

# The TF32 batched forms (05_tf32.cu with BATCHED; B row-major or, `_bcol`, column-major): a float32
# batch with TF32 allowed in one launch on sm_90 (cugemm.batched), rated as their 2-D twins,
# 256 x 128 tiles with and without clusters, 128 x 128 tiles; preference orders 320-325: candidates of
# batched problems (cugemm.select.Problem.batched).
TF32_BATCHED_ORDER = 320


def _tf32_batched_forms() -> tuple:
    out = []
    for b_col in (False, True):
        for bm, stages, cluster, rating in ((256, 4, 2, TF32[0]), (256, 4, 1, TF32[1]), (128, 6, 1, TF32_128)):
            c = "_cluster2" if cluster == 2 else ""
            out.append(_tf32(f"hgemm_wgmma_tf32_m64n{bm}k8_persistent{c}_stage{stages}{'_bcol' if b_col else ''}"
                             "_batched", BM=bm, STAGES=stages,
                             CLUSTER_N=cluster, B_COL=b_col, BATCHED=True,
                             matmul=rating._replace(order=TF32_BATCHED_ORDER + len(out)),
                             doc=f"the TF32 sibling's batched form{' with clusters of 2 along N' if c else ''}"
                                 f"{' reading B column-major (q @ k.T, no copy)' if b_col else ''}: products z = 0 "
                                 ".. batches - 1 in one launch (3-D maps of A and B; an operand's matrices any "
                                 "window of the batch)"))
    return tuple(out)


# The TF32 grouped forms (05_tf32.cu with GROUPS: tables for 1024 groups, 8 KB beside the stages; 256 x 128
# tiles, and 128 x 128 for small groups):
# cugemm.grouped_matmul on float32 with allow_tf32, B (G, K, N) row-major or the (G, N, K) view; no
# rating (grouped products are not matmul's candidates).
TF32_GROUPED = tuple(
    _tf32(f"hgemm_wgmma_tf32_m64n{bm}k8_persistent_stage{stages}{'_bcol' if b_col else ''}_grouped", BM=bm,
          STAGES=stages, B_COL=b_col, BATCHED=True, GROUPS=1024,
          doc=f"the TF32 sibling's grouped form with {bm} x 128 tiles"
              f"{' reading B (G, N, K) (x @ W.T per group)' if b_col else ''}: C[rows of g] = A[rows of g] B[g] "
              "for groups whose rows are on the GPU, one launch")
    for bm, stages in ((256, 4), (128, 6)) for b_col in (False, True))

VARIANTS: tuple[Variant, ...] = (_VARIANTS_2D + _batched_forms() + _grouped_forms() + _tf32_batched_forms()
                                 + TF32_GROUPED)
