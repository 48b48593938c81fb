"""Fused epilogues: what cugemm.linear and cugemm.gemm run after the product, inside the GEMM kernel.

    D   = act(alpha * A @ B + [beta * S]pre + bias) + [beta * S]post
    AUX = alpha * A @ B + [beta * S]pre + bias            (the pre-activation, for a backward pass)

A `Spec` names one composition of the parts (kernels/lib/epilogue.cuh): an activation (None, 'relu',
'gelu' (erf), 'gelu_tanh', 'silu'), a bias per column ('col', F.linear's) or per row ('row'), a
source matrix S read before the activation ('pre': BLAS's beta * C) or after it ('post': a
residual), and an auxiliary output. Each is a compile-time part of the kernel; alpha, beta and the
addresses are arguments.

The declared product: every epilogue-capable variant (`capable`: the Hopper rung 7 2-D TMA-store
forms of kernels/hgemm_wgmma/04_persistent.cu with two consumers, the 64-row rung's
(08_small_m.cu), and the sm_80 mma.sync rung's forms that take the
parameters) times every Spec. `variant(base, spec)` makes the member on demand (a Variant named
`<base>_ep_<tag>`, the base's template arguments plus `epilogue::Fused<...>`, the base's shared
memory and launch rules), compiled on first use like any variant. `coverage()` is the set CI compiles
offline: every capable base with the heaviest composition, and every composition on one base per
element type.

`execute` runs one 2-D product with an epilogue: the plan cugemm.matmul would run when it, or one
within the cost of a separate pass, has a capable kernel reading its operands in place (the fused
launch, prepared for raw pointers and cached like matmul's); otherwise matmul's plan and then one
elementwise pass of the caller's library (`unfused`), same semantics, one more round trip of D.
`reference` is the float64 truth the tests compare against.
"""
from __future__ import annotations

import dataclasses
import math
import threading
from functools import lru_cache

import numpy as np

from . import operand, select, toolkit
from .prepared import AUX, BIAS, SRC, sentinel
from .tma_args import EPILOGUE_ARGS, epilogue_args

ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu")
_ACT_CODE = {None: 0, "relu": 1, "gelu": 2, "gelu_tanh": 3, "silu": 4}
_BIAS_CODE = {"": 0, "col": 1, "row": 2}
_SRC_CODE = {"": 0, "pre": 1, "post": 2}
PASS_GBPS = 2500.0      # what one elementwise pass over D streams at (H100 HBM3, conservative)
PASS_LAUNCH_US = 3.0    # and its launch


def activation_name(activation) -> str | None:
    """The canonical activation name; ValueError naming the choices for anything else."""
    if activation is None or activation == "none":
        return None
    if isinstance(activation, str) and activation.lower() in ACTIVATIONS:
        return activation.lower()
    raise ValueError(f"cugemm: unknown activation {activation!r}; choose None, "
                     + ", ".join(repr(a) for a in ACTIVATIONS))


@dataclasses.dataclass(frozen=True)
class Spec:
    """One composition of the epilogue's parts (module docstring)."""

    activation: str | None = None
    bias: str = ""       # '', 'col' or 'row'
    src: str = ""        # '', 'pre' or 'post'
    aux: bool = False

    def __post_init__(self):
        object.__setattr__(self, "activation", activation_name(self.activation))
        if self.bias not in _BIAS_CODE or self.src not in _SRC_CODE:
            raise ValueError(f"cugemm: bias must be '', 'col' or 'row' and src '', 'pre' or 'post', "
                             f"not {self.bias!r} / {self.src!r}")
        if self.aux and self.activation is None:
            raise ValueError("cugemm: an auxiliary output is the pre-activation; it needs an activation")

    @property
    def tag(self) -> str:
        """The variant-name suffix, e.g. 'ep_gelu_bcol_post_aux' ('ep_scale': alpha alone)."""
        parts = [self.activation or ""] + ([f"b{self.bias}"] if self.bias else []) + \
            ([self.src] if self.src else []) + (["aux"] if self.aux else [])
        return "ep_" + ("_".join(p for p in parts if p) or "scale")

    @property
    def cpp(self) -> str:
        return (f"epilogue::Fused<{_ACT_CODE[self.activation]}, {_BIAS_CODE[self.bias]}, "
                f"{_SRC_CODE[self.src]}, {'true' if self.aux else 'false'}>")


def specs() -> list[Spec]:
    """Every composition: activations x bias (none, col, row) x source (none, pre, post) x aux."""
    out = []
    for act in (None,) + ACTIVATIONS:
        for bias in _BIAS_CODE:
            for src in _SRC_CODE:
                for aux in ((False, True) if act else (False,)):
                    out.append(Spec(act, bias, src, aux))
    return out


HEAVIEST = Spec("gelu", "col", "post", True)  # the most registers live: S's pairs, the bias, AUX


# ---- the declared product ---------------------------------------------------------------------------
def capable(v) -> bool:
    """Whether variant `v` takes a fused epilogue (its kernel's EPI parameter and the seven epilogue
    arguments last): rung 7's 2-D TMA-store and ANY_C forms with two consumers, the 64-row rung, and
    the top mma.sync rung (the sm_80 / sm_89 one)."""
    p = v.param_dict
    if "EPI" in p:
        return False  # already an epilogue form
    if v.source == "hgemm_wgmma/08_small_m.cu":  # the 64-row rung (BN = 192 spills 172-220 bytes with it)
        return p.get("BN", 0) <= 128
    if v.source == "hgemm_wgmma/04_persistent.cu":
        # two consumers: with three (BM 192, 152 registers a thread) the epilogue spills 4-72 bytes;
        # ANY_C: its storing warps apply the activation (deferred: `defers`). A ping-pong consumer holds
        # a whole tile's 128 accumulators: under NVRTC 12.9, 32 of the 81 compositions spill 8-152 bytes
        # there (0 under NVRTC 13), so it takes an epilogue from NVRTC 13 on.
        if p.get("PINGPONG") and toolkit.nvrtc_major() < 13:
            return False
        return bool(p.get("TMA_STORE") or p.get("ANY_C")) and not p.get("BATCHED") and p.get("BM") == 128
    # the mma.sync rung cugemm.matmul ranks on sm_80 / sm_89 (hgemm_mma/05_swizzle.cu's _epi_edge forms)
    return v.args_rule == "epilogue_defaults" and v.matmul is not None


@lru_cache(maxsize=None)
def variant(base, spec: Spec):
    """The member (base, spec) of the declared product: a Variant of its own name, compiled on demand."""
    if not capable(base):
        raise ValueError(f"cugemm: {base.name} takes no fused epilogue")
    spills = ""
    if base.param_dict.get("BN") in (192, 256) and base.param_dict.get("TMA_STORE") and spec.aux and \
            spec.src == "post" and spec.activation in ("gelu", "gelu_tanh"):
        # measured: 0 bytes under NVRTC 13.x; the spill is in the epilogue, after the K loop
        spills = ("NVRTC 12.9 spills 12-60 bytes in the epilogue of a 128 x 256 tile and 32 bytes in that of a "
                  "128 x 192 one with a GELU, a residual and AUX (the accumulators and D's registers beside the "
                  "loads and stores); 0 under NVRTC 13")
    return dataclasses.replace(
        base, name=f"{base.name}_{spec.tag}", params=base.params + (("EPI", spec.cpp),),
        smem_dynamic=base.smem_dynamic, matmul=None, aliases=(), spills=spills,
        doc=f"{base.name} with the fused epilogue {spec.tag[3:]} (lib/epilogue.cuh)")


def capable_bases(dtype=None) -> list:
    from . import registry

    return [v for v in registry.variants(dtype=dtype) if capable(v)]


# Compositions that together take every value of every part, with the ones cugemm.linear and
# cugemm.gemm build (gemm's alpha and beta, linear's bias, residual, activations and aux).
COVER = (Spec(), Spec(src="pre"), Spec(bias="col"), Spec(bias="col", src="post"), Spec(bias="row", src="pre"),
         Spec("relu", "col"), Spec("gelu", "col"), Spec("gelu", "col", aux=True), Spec("gelu_tanh", "row", "post", True),
         Spec("silu", "col", "post"), Spec("silu", "", "pre", True), HEAVIEST)


def coverage() -> list:
    """What CI compiles offline: HEAVIEST on every capable base, and COVER on the widest base (128 x
    256, two clusters) of each 16-bit type."""
    bases = capable_bases()
    out = [variant(v, HEAVIEST) for v in bases]
    for dt in ("float16", "bfloat16"):
        wide = [v for v in bases if v.dtype_in == dt and v.param_dict.get("BN") == 256]
        if wide:
            out += [variant(wide[0], s) for s in COVER if s != HEAVIEST]
    return out


def by_name(name: str):
    """A member of the declared product by its name '<base>_ep_<tag>' (None: not such a name)."""
    if "_ep_" not in name:
        return None
    from . import registry

    base_name, _, _ = name.rpartition("_ep_")
    try:
        base = registry.get_variant(base_name)
    except (KeyError, ValueError):
        return None
    if not capable(base):
        return None
    for s in specs():
        if f"{base.name}_{s.tag}" == name:
            return variant(base, s)
    return None


# ---- the float64 truth -------------------------------------------------------------------------------
def activate_np(x, activation):
    """act(x) in float64 (NumPy): the formulas of lib/epilogue.cuh."""
    from math import erf

    x = np.asarray(x, dtype=np.float64)
    if activation is None:
        return x
    if activation == "relu":
        return np.where(x < 0, 0.0, x)
    if activation == "gelu":
        return 0.5 * x * (1.0 + np.vectorize(erf)(x / math.sqrt(2.0)))
    if activation == "gelu_tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if activation == "silu":
        return x / (1.0 + np.exp(-x))
    raise ValueError(activation)


def reference(product, spec: Spec, bias=None, src=None, alpha=1.0, beta=1.0):
    """(D, AUX) in float64 from the float64 product A @ B (NumPy arrays)."""
    pre = alpha * np.asarray(product, dtype=np.float64)
    if spec.src == "pre":
        pre = pre + beta * np.asarray(src, dtype=np.float64)
    if spec.bias == "col":
        pre = pre + np.asarray(bias, dtype=np.float64)[None, :]
    elif spec.bias == "row":
        pre = pre + np.asarray(bias, dtype=np.float64)[:, None]
    d = activate_np(pre, spec.activation)
    if spec.src == "post":
        d = d + beta * np.asarray(src, dtype=np.float64)
    return d, pre


# ---- running one product with an epilogue ------------------------------------------------------------
_FUSED: dict = {}    # plan key + spec -> the fused launch's serve.Ready (None: this problem runs unfused)
_lock = threading.Lock()
MAX_PLANS = 1024


# Issue cycles an element of the activation and of a residual add cost the consumers, in units of one
# 32-lane instruction on one of an SM's four schedulers (sm_90a, NVRTC 13). The sigmoid forms of
# kernels/lib/epilogue.cuh issue 10 (GELU), 5 (GELU_TANH) and 3 (SILU) SASS instructions an element and
# two MUFU operations (gelu_bcol 1632, gelu_tanh_bcol 1312, silu_bcol 1184 against relu_bcol 984 for 64
# elements a thread). Measured, the epilogue runs at about half the issue rate (two consumer warps a
# scheduler, dependent chains; ncu: the MUFU pipe 5-18% busy): GELU + bias added the time of ~23-29 such
# cycles an element (bf16, 4096x11008x4096 and 16384x3072x768, results/judge/s42/ncu_epilogue_bf16.csv).
# Hence GELU 24, and the others scaled by their instructions (MUFU counted once): 14, 10.
ACT_INSTRUCTIONS = {None: 0, "relu": 2, "gelu": 24, "gelu_tanh": 14, "silu": 10}
POST_INSTRUCTIONS = 4
# On rung 7's ping-pong forms (PINGPONG) one consumer's epilogue runs while the other's wgmmas keep the
# tensor cores busy, so only part of the activation's time shows: GELU + bias cost 0.26-0.67 (median 0.48)
# of consumer_us over the plain product there, against 0.99-1.42 on the cooperative 128 x 128 form
# (H100, 12288x4096x1024, 8192x5632x2048, 6144x6144x4096, 3072x12288x1536, 4096x8192x1024, fp16 and bf16;
# results/judge/s43/pp_fused_fit.txt). It shows most where a tile's K loop is short (K <= 1024).
PINGPONG_SHOWS = 0.5


def consumer_us(M: int, N: int, spec: Spec, sms: int) -> float:
    """The time the activation and a residual add take on the warps that issue the wgmmas (the
    tensor cores idle meanwhile): M N elements, ACT_INSTRUCTIONS issue cycles each, 4 x 32 lanes an
    SM a cycle at 1.755 GHz."""
    per = ACT_INSTRUCTIONS[spec.activation] + (POST_INSTRUCTIONS if spec.src == "post" else 0)
    return M * N * per / (sms * 128 * 1755.0)


def storing_us(M: int, N: int, spec: Spec, sms: int) -> float:
    """The same work on an ANY_C form's 96 storing threads an SM, with their loads and stores of the
    staged pairs (about 10 instructions an element more), charged in full: they measured behind the
    K loop wherever it is short (results/judge/epilogue_anyc_h100_s38.json)."""
    per = ACT_INSTRUCTIONS[spec.activation] + (POST_INSTRUCTIONS if spec.src == "post" else 0)
    return M * N * (per + 10) / (sms * 96 * 1755.0) if per else 0.0


def pass_us(M: int, N: int, itemsize: int, spec: Spec) -> float:
    """What a separate elementwise epilogue costs (read D, S; write D, AUX), estimated."""
    moves = 2 + (spec.src != "") + spec.aux
    return M * N * itemsize * moves / (PASS_GBPS * 1e3) + PASS_LAUNCH_US


# Rung 7's STAGED form (04_persistent.cu: the producer warpgroup's three idle warps apply the activation
# and TMA-store the staged slabs while the consumers go on with the next tile): its plain product is
# STAGED_RING times the cooperative sibling's (one or two stages fewer beside the slabs), and of the
# activation's consumer_us it shows STAGED_SHOWS on every tile that has a next one on its SM to hide
# under, and STAGED_LAST on an SM's last tile (nothing left to hide under: three storing warps where
# eight consumer warps would apply it). Fitted on GELU + bias, bf16 x @ W.T at 12288x4096x1024,
# 4096x8192x1024, 8192x5632x2048 and 6144x6144x4096 on an H100 (128 x 128 / 192 / 256 tiles; shapes of
# no bench; results/judge/s45/): the bias alone up to 2.2% slower than on the cooperative form; GELU +
# bias 0.37-0.70 of consumer_us over the cooperative plain product in all, i.e. 0.08-0.50 (median
# ~0.45) a hidden tile with 8 - 12 tiles an SM and STAGED_LAST = 8 / 3.
STAGED_SHOWS = 0.45
STAGED_LAST = 8.0 / 3.0
STAGED_RING = 1.02


def staged_shows(tiles: int, sms: int) -> float:
    """The part of consumer_us a STAGED plan of `tiles` tiles shows on `sms` SMs (above)."""
    rounds = max(1, -(-tiles // sms))
    return (STAGED_SHOWS * (rounds - 1) + STAGED_LAST) / rounds


def staged_sibling(v):
    """The STAGED form of a cooperative rung-7 TMA-store variant (128 x 128 / 192 / 256, clusters of 2,
    A row-major), or None."""
    p = v.param_dict
    if v.source != "hgemm_wgmma/04_persistent.cu" or not p.get("TMA_STORE") or p.get("ANY_C") or \
            p.get("PINGPONG") or p.get("BATCHED") or p.get("A_COL") or p.get("CLUSTER_M") != 2 or p.get("BM") != 128:
        return None
    from . import registry
    from .families.hgemm_wgmma import STAGED_STAGES, staged_name

    if p.get("BN") not in STAGED_STAGES:
        return None
    return registry.get_variant(staged_name(p["BN"], "_bcol" if p.get("B_COL") else "",
                                            "_bf16" if v.dtype_in == "bfloat16" else ""))


def fused_plan(choice: select.Choice, spec: Spec, staged: bool = True):
    """The plan to run fused: of the plans whose kernel is capable and reads nothing through a
    workspace (no split-K partials, C written in place, C's extent the problem's), the one of least
    estimate plus the activation's time (consumer_us, PINGPONG_SHOWS of it on a ping-pong form; storing_us
    for ANY_C), measured plans before modelled ones as select.rank orders them, when that is no more than
    the best plan's with its epilogue as a separate pass; else None (run unfused). With a part the
    storing warps can take (`defers`) each cooperative plan's STAGED sibling competes too, estimated at
    STAGED_RING times its plain product and charged `staged_shows` of consumer_us (staged=False leaves
    them out: `execute` with a named base runs that base). (Comparing a modelled
    estimate with measured ones sent the bias alone at 2048x3072x768 to a 128 x 208 form the table never
    timed near there, estimated at 19.8 us against the ping-pong form's measured 20.8: it ran in 23.4 us,
    the ping-pong form in 20.1; results/judge/s44/.)"""
    best = choice.plan
    p = choice.problem
    sms = getattr(getattr(p, "device", None), "sms", 132) or 132
    fits = [q for q in choice.ranked if capable(q.variant) and not q.via_c and q.variant.workspace_fn is None
            and tuple(q.dims[:2]) == (p.M, p.N)]
    if not fits:
        return None
    if staged and defers(spec):
        # each cooperative plan's STAGED sibling, estimated from it (staged=False: the caller named its base)
        fits += [dataclasses.replace(q, variant=sv, est_us=q.est_us * STAGED_RING, note="STAGED sibling")
                 for q in fits if (sv := staged_sibling(q.variant)) is not None]
    # The activation costs its consumers' time on every form but ANY_C, whose storing warps apply it
    # (DEFER): those are charged storing_us, more, since they measured slower (H100,
    # results/judge/epilogue_anyc_h100_s38.json: 16384x3072x768 GELU 3.0x the plain product against
    # 1.5x on the consumers, 4096^3 1.32-1.39x against 1.09-1.13x, two runs), so an ANY_C plan runs an activation only
    # where its plain product is that much faster.
    def cost(q):
        if q.variant.param_dict.get("ANY_C") and q.variant.param_dict.get("TMA_STORE"):  # STAGED
            bm, bn = q.variant.tile[:2]
            tiles = -(-p.M // bm) * -(-p.N // bn)
            return q.est_us + staged_shows(tiles, sms) * consumer_us(p.M, p.N, spec, sms)
        if q.variant.param_dict.get("ANY_C"):
            return q.est_us + storing_us(p.M, p.N, spec, sms)
        shows = PINGPONG_SHOWS if q.variant.param_dict.get("PINGPONG") else 1.0
        return q.est_us + shows * consumer_us(p.M, p.N, spec, sms)

    q = min(fits, key=lambda q: (q.source == "model", cost(q)))
    if q is best or cost(q) <= cost(best) + pass_us(p.M, p.N, p.dtype.itemsize, spec):
        return q
    return None


def defers(spec: Spec) -> bool:
    """kernels/lib/epilogue.cuh's DEFERS of a composition: whether it has a part the ANY_C and STAGED
    forms leave to their storing warps (an activation, a post-activation source)."""
    return spec.activation is not None or spec.src == "post"


def fusable_memory(spec: Spec, bias, src, aux) -> bool:
    """Whether the kernel's 4-byte pair accesses fit the vectors' and matrices' memory: dense rows,
    4-byte aligned pointers, even row strides (operand records)."""
    for op in (bias, src, aux):
        if op is None:
            continue
        size = op.dtype.itemsize
        if op.ptr % 4 or op.strides[-1] != size or (len(op.shape) == 2 and op.strides[0] % (2 * size)):
            return False
    return True


def execute(lib, A, B, C, a, b, out, spec: Spec, bias=None, src=None, aux=None, alpha=1.0, beta=1.0,
            dev: int = 0, base: str | None = None):
    """D = out (M x N, written) from A @ B and the epilogue: operand records A, B, C of a, b, out;
    bias / src / aux arrays of the caller's library or None. Fused when a capable plan reads them in
    place (cached per problem), else matmul and one elementwise pass. base: plan with this variant
    only (a capable one: its fused form; the tests name each). Returns the fused launch's
    serve.Ready, or None (unfused)."""
    from . import launch, serve

    M, N = C.shape
    recs = [None if x is None else operand.describe(x, w, "cugemm")
            for x, w in ((bias, "bias"), (src, "source"), (aux, "aux"))]
    key = (serve.plan_key(dev, A, B, C, False, base), spec, alpha, beta,
           tuple(None if r is None else (r.shape, r.strides, r.ptr & 15) for r in recs))
    f = _FUSED.get(key, False)
    if f is False:
        serve.not_capturing(lib, dev, f"{M}x{N}x{A.shape[1]} {A.dtype.name} (with an epilogue)", "cugemm")
        f = None
        if A.dtype.name in ("float16", "bfloat16") and N % 2 == 0 and fusable_memory(spec, *recs):
            q = fused_plan(serve.choose(A, B, C, False, base, dev), spec, staged=base is None)
            if q is not None:
                ev = variant(q.variant, spec)
                plan = dataclasses.replace(q, variant=ev)
                if not plan.copies:
                    launch.check_operands(ev, A, B, C)
                ld_src = recs[1].strides[0] // recs[1].dtype.itemsize if recs[1] is not None else 0
                ld_aux = recs[2].strides[0] // recs[2].dtype.itemsize if recs[2] is not None else 0
                ep = epilogue_args(sentinel(BIAS) if bias is not None else 0, sentinel(SRC) if src is not None else 0,
                                   sentinel(AUX) if aux is not None else 0, alpha, beta, ld_src, ld_aux)
                f = serve.Ready(plan, A, B, C, dev, epilogue=ep)
        with _lock:
            if len(_FUSED) >= MAX_PLANS:
                _FUSED.clear()
            _FUSED[key] = f
    if f is None:
        unfused(lib, a, b, out, spec, bias, src, aux, alpha, beta)
        return None
    extra = [(k, rec.ptr) for k, rec in ((BIAS, recs[0]), (SRC, recs[1]), (AUX, recs[2])) if rec is not None]
    f.run(lib, lib.stream(dev), A.ptr, B.ptr, C.ptr, a, b, out, extra=extra)
    return f


def choice(A, B, C, spec: Spec, dev: int = 0):
    """The plan `execute` runs fused for these operand records (None: it runs unfused)."""
    from . import serve

    if A.dtype.name not in ("float16", "bfloat16") or C.shape[1] % 2:
        return None
    q = fused_plan(serve.choose(A, B, C, False, None, dev), spec)
    return None if q is None else dataclasses.replace(q, variant=variant(q.variant, spec))


def unfused(lib, a, b, out, spec: Spec, bias=None, src=None, aux=None, alpha=1.0, beta=1.0) -> None:
    """out = the epilogue of a @ b by cugemm.matmul and one elementwise pass of the caller's library
    (fp32 arithmetic, as the kernel's; the product is rounded to the output type first)."""
    if src is not None and operand.overlaps(_extent(src), _extent(out)):
        d = product(lib, a, b)  # S is (or shares memory with) D: read it before D is written
        unfused(lib, a, b, d, spec, bias, src, aux, alpha, beta)
        lib.copy(out, d)
        return
    product(lib, a, b, out)
    elementwise(lib, out, spec, bias, src, aux, alpha, beta)


def elementwise(lib, d, spec: Spec, bias=None, src=None, aux=None, alpha=1.0, beta=1.0) -> None:
    """d = the epilogue of d (the product, rounded) in place, by one pass of the caller's library."""
    if lib.kind == "torch":
        _torch_pass(d, spec, bias, src, aux, alpha, beta)
    else:
        _cupy_pass(d, spec, bias, src, aux, alpha, beta)


def product(lib, a, b, out=None):
    """a @ b by cugemm.matmul's planning, eagerly (below autograd and torch.compile: the registered
    ops' kernels call it), into out or a new array of the caller's library."""
    from . import serve

    if lib.kind == "torch":
        return serve.torch_matmul(a, b, out)
    return serve.dispatch(a, b, out, None, False, False, None)


def _extent(x) -> tuple:
    op = operand.describe(x, "array", "cugemm")
    return operand.extent(op.shape, op.strides, op.ptr, op.dtype.itemsize)


def _torch_pass(out, spec, bias, src, aux, alpha, beta) -> None:
    import torch

    t = out.float()
    if alpha != 1.0:
        t.mul_(alpha)
    if spec.src == "pre":
        t.add_(src.float(), alpha=beta)
    if spec.bias == "col":
        t.add_(bias.float()[None, :])
    elif spec.bias == "row":
        t.add_(bias.float()[:, None])
    if aux is not None:
        aux.copy_(t)
    t = torch_activate(t, spec.activation)
    if spec.src == "post":
        t.add_(src.float(), alpha=beta)
    out.copy_(t)


def torch_activate(t, activation):
    import torch.nn.functional as F

    if activation is None:
        return t
    if activation == "relu":
        return F.relu(t)
    if activation == "gelu":
        return F.gelu(t)
    if activation == "gelu_tanh":
        return F.gelu(t, approximate="tanh")
    return F.silu(t)


_CUPY_ACT = {
    None: "x",
    "relu": "(x < 0.f ? 0.f : x)",
    "gelu": "0.5f * x * (1.f + erff(x * 0.70710678118654752f))",
    "gelu_tanh": "0.5f * x * (1.f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)))",
    "silu": "x / (1.f + expf(-x))",
}


@lru_cache(maxsize=None)
def _cupy_kernel(spec: Spec, type_name: str):
    import cupy

    body = ["float x = alpha * (float)d[i];"]
    if spec.src == "pre":
        body.append("x += beta * (float)s[(i / n) * lds + i % n];")
    if spec.bias == "col":
        body.append("x += (float)bias[i % n];")
    elif spec.bias == "row":
        body.append("x += (float)bias[i / n];")
    if spec.aux:
        body.append("aux[i] = (T)x;")
    body.append(f"x = {_CUPY_ACT[spec.activation]};")
    if spec.src == "post":
        body.append("x += beta * (float)s[(i / n) * lds + i % n];")
    body.append("d[i] = (T)x;")
    return cupy.ElementwiseKernel(
        "float32 alpha, float32 beta, int64 n, int64 lds, raw T s, raw T bias", "raw T d, raw T aux",
        "\n".join(body), f"cugemm_epilogue_{spec.tag}_{type_name}", loop_prep="", preamble="")


def _cupy_pass(out, spec, bias, src, aux, alpha, beta) -> None:
    import cupy

    if not out.flags.c_contiguous:
        tmp = cupy.ascontiguousarray(out)
        _cupy_pass(tmp, spec, bias, src, aux, alpha, beta)
        out[...] = tmp
        return
    M, N = out.shape
    s = src if src is not None else out
    lds = s.strides[0] // s.itemsize if s.ndim == 2 else N
    if src is not None and s.strides[1] != s.itemsize:
        s, lds = cupy.ascontiguousarray(s), N
    k = _cupy_kernel(spec, str(out.dtype))
    k(np.float32(alpha), np.float32(beta), np.int64(N), np.int64(lds), s,
      bias if bias is not None else out, out, aux if aux is not None else out, size=M * N)
