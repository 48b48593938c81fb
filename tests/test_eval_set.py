"""scripts/eval_set.py, issue 25's held-out set: its size and make-up, none of its shapes in the
shipped table's tuning lists, the same set on every draw, both halves in every kind. No GPU needed."""
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import eval_set  # noqa: E402


def test_size_and_make_up():
    cs = eval_set.cases()
    assert len(cs) >= 120
    groups = Counter(c["group"] for c in cs)
    assert groups["llm"] >= len(cs) / 2 and groups["square"] >= len(cs) / 4 - 1 and groups["other"] >= len(cs) / 4 - 1
    llm = [c for c in cs if c["group"] == "llm"]
    assert Counter(c["b"] for c in llm) == {"col": 32, "row": 32}
    assert min(c["M"] for c in llm) < 16 and max(c["M"] for c in llm) > 4096
    squares = [c["M"] for c in cs if c["group"] == "square"]
    assert all(256 <= s <= 8192 for s in squares) and sum(s & (s - 1) != 0 for s in squares) > len(squares) / 2
    assert {c["label"] for c in cs if c["group"] == "other"} == {"small K", "tall", "few rows", "odd"}
    assert all(c["M"] % 2 and c["N"] % 2 and c["K"] % 2 for c in cs if c["label"] == "odd")


def test_nothing_was_tuned_on_it():
    taken = eval_set.tuning_lists()
    assert len(taken) > 250  # the sweeps really were read
    assert not [c for c in eval_set.cases() if (c["M"], c["N"], c["K"]) in taken]


def test_drawn_the_same_every_time_and_halves_in_every_kind():
    a, b = eval_set.cases(), eval_set.cases()
    assert a == b and a != eval_set.cases(seed=eval_set.SEED + 1)
    halves = Counter((c["group"], c["label"] if c["group"] == "other" else "", c["half"]) for c in a)
    for (g, label, h), n in halves.items():
        assert halves.get((g, label, "AB"[h == "A"]), 0) > 0, (g, label, h)
