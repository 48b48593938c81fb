#!/usr/bin/env python3
"""Hash the normalised SASS of every registered variant for every arch it claims (offline, no GPU):

    python3 scripts/sass_hashes.py --out before.json [GLOB]
    python3 scripts/sass_hashes.py --out after.json [GLOB] && python3 scripts/sass_hashes.py --diff before.json after.json

Normalised: cuobjdump's instruction text only (addresses, encodings and comments dropped, the
kernel's mangled name replaced), so a change of comments or of a name leaves the hash alone and any
change of code does not. --diff lists the variants whose hash changed, appeared or went away.
"""
import argparse
import hashlib
import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

_COMMENT = re.compile(r"/\*.*?\*/")


def normalise(sass: str, lowered: str) -> str:
    """The instruction lines of a cuobjdump -sass listing, comments and the kernel's name removed."""
    lines = []
    for line in sass.splitlines():
        line = _COMMENT.sub("", line).replace(lowered, "KERNEL").strip()
        if not line or line.startswith(("code for", "Fatbin", "arch =", "code version", "host =",
                                         "compile_size", ".headerflags", "Function :")):
            continue
        lines.append(" ".join(line.split()))
    return "\n".join(lines)


def one(v, arch):
    from cugemm import jit

    report = jit.compile_offline(v, arch)
    text = normalise(jit.disassemble(report.cubin), report.lowered_name)
    return f"{v.name}@{arch}", hashlib.sha256(text.encode()).hexdigest()[:16]


def diff(before: str, after: str) -> int:
    a, b = json.loads(Path(before).read_text()), json.loads(Path(after).read_text())
    changed = sorted(k for k in a.keys() & b.keys() if a[k] != b[k])
    for k in changed:
        print(f"changed  {k}")
    for k in sorted(a.keys() - b.keys()):
        print(f"gone     {k}")
    for k in sorted(b.keys() - a.keys()):
        print(f"new      {k}")
    print(f"{len(a.keys() & b.keys()) - len(changed)} identical, {len(changed)} changed, "
          f"{len(a.keys() - b.keys())} gone, {len(b.keys() - a.keys())} new")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pattern", nargs="?", default=None, help="glob(s) over variant names")
    p.add_argument("--out", help="write {variant@arch: hash} here (JSON)")
    p.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two hash files")
    p.add_argument("--jobs", type=int, default=4)
    args = p.parse_args()
    if args.diff:
        sys.exit(diff(*args.diff))
    import cugemm

    work = [(v, arch) for v in cugemm.variants(args.pattern) for arch in v.archs]
    with ThreadPoolExecutor(args.jobs) as pool:
        hashes = dict(sorted(pool.map(lambda w: one(*w), work)))
    text = json.dumps(hashes, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    else:
        print(text)
    print(f"sass_hashes: {len(hashes)} kernels", file=sys.stderr)


if __name__ == "__main__":
    main()
