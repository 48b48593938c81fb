"""GPU architectures: how they are spelt, what each chip allows, and which compile target a variant
uses on a chip. The one place for these facts: the registry checks variants against it, `run`
checks a GPU against it, and `compile` picks targets with it.

Arch strings: 'sm_89', 'sm89', '89', '8.9', 89 and (8, 9) all name compute capability 8.9; 'sm_90a'
is sm_90's arch-specific target (wgmma, setmaxnreg): code built for it runs on compute capability
9.0 chips (H100, H200, GH200) and on no other.

`parse` reads any spelling. Which of these chips cugemm compiles for is a question about the
registered variants: cugemm.registry.chip and chips.
"""
from __future__ import annotations

import numbers
import re
from typing import NamedTuple

DEFAULT_SMEM = 48 * 1024  # dynamic shared memory a block gets without opting in

# compute capability -> (chips, the most shared memory one block may opt in to, in bytes)
CHIPS: dict[int, tuple[str, int]] = {
    70: ("V100", 96 * 1024),
    75: ("T4, RTX 20xx", 64 * 1024),
    80: ("A100, A30", 163 * 1024),
    86: ("RTX 30xx, A10, A40", 99 * 1024),
    87: ("Jetson Orin", 163 * 1024),
    89: ("RTX 40xx, L4, L40", 99 * 1024),
    90: ("H100, H200, GH200", 227 * 1024),
    100: ("B200, GB200", 227 * 1024),
    103: ("B300, GB300", 227 * 1024),
    120: ("RTX 50xx, RTX PRO 6000", 99 * 1024),
    121: ("DGX Spark (GB10)", 99 * 1024),
}

_ARCH_RE = re.compile(r"^(?:sm_?)?(\d{2,3})(a?)$")
_DOTTED_RE = re.compile(r"^(\d{1,2})\.(\d)(a?)$")


class Arch(NamedTuple):
    cc: int       # 90
    suffix: str   # '' or 'a'

    def __str__(self) -> str:
        return f"sm_{self.cc}{self.suffix}"


def parse(arch) -> Arch:
    """'sm_90a' -> Arch(90, 'a'); 'sm_89', 'sm89', '89', '8.9', 89, (8, 9) -> Arch(89, ''). ValueError
    otherwise."""
    if isinstance(arch, Arch):
        return arch
    if isinstance(arch, numbers.Integral) and not isinstance(arch, bool):
        return Arch(int(arch), "")
    if isinstance(arch, (tuple, list)) and len(arch) == 2 and \
            all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in arch) and 0 <= arch[1] <= 9:
        return Arch(int(arch[0]) * 10 + int(arch[1]), "")  # (major, minor), as torch reports it
    text = str(arch).strip().lower()
    m = _ARCH_RE.match(text)
    if m:
        return Arch(int(m.group(1)), m.group(2))
    m = _DOTTED_RE.match(text)
    if m:
        return Arch(int(m.group(1)) * 10 + int(m.group(2)), m.group(3))
    raise ValueError(f"arch {arch!r} is not an arch: write it as sm_89, sm89, 89 or 8.9 "
                     "(sm_90a for Hopper's arch-specific target)")


def cc_of(arch) -> int:
    """The compute capability (e.g. 90) of any spelling parse() reads: 90, '90', 'sm_90', 'sm_90a',
    '9.0', (9, 0)."""
    return parse(arch).cc


def smem_optin(cc: int) -> int:
    """The most dynamic shared memory one block may opt in to on compute capability `cc` (bytes);
    for a chip newer than the table, that of the newest known chip of its major version, else the
    newest known."""
    if cc in CHIPS:
        return CHIPS[cc][1]
    same_major = [c for c in CHIPS if c // 10 == cc // 10 and c < cc]
    return CHIPS[max(same_major or [c for c in CHIPS if c < cc] or [min(CHIPS)])][1]


def archs_for_smem(smem_bytes: int, candidates=("sm_80", "sm_90")) -> tuple:
    """The candidate targets whose chips let a block have `smem_bytes` of dynamic shared memory."""
    return tuple(a for a in candidates if smem_bytes <= smem_optin(parse(a).cc))


def unfit_reason(variant, cc, smem_limit: int | None = None, *, gpu: bool = True) -> str | None:
    """Why `variant` cannot run on compute capability `cc` (None if it can): not the chip of an
    arch-specific-only variant (sm_90a), less shared memory per block than it needs, or older than
    its oldest target. The shared-memory rule is checked before the oldest target because a
    variant's targets follow from its shared memory (a 204 KB tile claims only sm_90): when the
    memory does not fit, that is the reason to give.

    cc          any spelling parse() reads (90, '90', 'sm_90', '9.0', (9, 0))
    smem_limit  the GPU's own opt-in limit (default: the table's)
    gpu         True: `cc` is a GPU's ("this GPU is sm_86"); False: a chip compiled for, with no
                GPU implied ("the target chip is sm_86")"""
    if type(cc) is not int:
        cc = cc_of(cc)
    where = "this GPU is" if gpu else "the target chip is"
    targets = [parse(a) for a in variant.archs]
    if all(t.suffix for t in targets):
        if cc not in [t.cc for t in targets]:
            runs_on = ", ".join(f"sm_{t.cc} ({CHIPS[t.cc][0]})" if t.cc in CHIPS else f"sm_{t.cc}"
                                for t in targets)
            return (f"{variant.name} is built for {', '.join(variant.archs)} only: arch-specific "
                    f"instructions that run on {runs_on} alone; {where} sm_{cc}")
        targets_fit = True
    else:
        targets_fit = cc >= variant.min_arch
    limit = smem_optin(cc) if smem_limit is None else smem_limit
    if variant.smem_dynamic > limit:
        return (f"{variant.name} needs {variant.smem_dynamic} bytes of dynamic shared memory per block; "
                f"sm_{cc} allows {limit}")
    if not targets_fit:
        return (f"{variant.name} needs compute capability >= {variant.min_arch // 10}.{variant.min_arch % 10} "
                f"(sm_{variant.min_arch}); {where} sm_{cc}")
    return None


def compile_target(variant, chip) -> str:
    """The target `variant` compiles for on `chip` (an arch string or cc): the chip's own arch (a
    variant claiming sm_80 compiles for sm_89 as sm_89 code), or its arch-specific target (sm_90a)
    for a variant that claims only such targets. Raises ValueError with the reason when the variant
    cannot run on that chip."""
    a = parse(chip)
    reason = unfit_reason(variant, a.cc, gpu=False)
    if reason:
        raise ValueError(reason)
    for claim in variant.archs:
        c = parse(claim)
        if c.cc == a.cc and c.suffix:
            return str(c)
    return f"sm_{a.cc}"
