"""The package's import graph: no circles, and family tables that import only record modules.

Every `import` and `from ... import` in cugemm/ counts, at module level or inside a function (an
import deferred into a function is still a dependency, only a later one).
"""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "cugemm"
RECORDS = {"cugemm.variant", "cugemm.dtypes", "cugemm.arch"}


def modules() -> dict:
    """module name -> path, for every module of the package."""
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def imports_of(name: str, path: Path, known: dict) -> set:
    """The package modules `name` imports (a from-import of a submodule names the submodule)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    deps = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            deps.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)] + ([node.module] if node.module else [])
                prefix = ".".join(base)
            elif (node.module or "").split(".")[0] == "cugemm":
                prefix = node.module
            else:
                continue
            for a in node.names:
                sub = f"{prefix}.{a.name}"
                deps.add(sub if sub in known else prefix)
    deps.discard(name)
    return {d for d in deps if d in known}


def graph() -> dict:
    known = modules()
    return {m: imports_of(m, p, known) for m, p in known.items()}


def cycles(g: dict) -> list:
    """The strongly connected components of more than one module (Tarjan), and self-loops."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in g:
        if v not in index:
            visit(v)
    return out


def test_the_walk_sees_the_package():
    g = graph()
    assert "cugemm.registry" in g and "cugemm.families.hgemm_wgmma" in g and "cugemm.bench.measure" in g
    assert "cugemm.families.hgemm_wgmma" in g["cugemm.registry"]
    assert "cugemm.variant" in g["cugemm.families.hgemm_wgmma"]


def test_a_planted_circle_is_found():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(g) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles():
    assert cycles(graph()) == []


def test_families_import_only_records():
    g = graph()
    families = [m for m in g if m.startswith("cugemm.families.")]
    assert len(families) >= 9
    for m in families:
        assert g[m] <= RECORDS, (m, sorted(g[m] - RECORDS))
