"""Integer helpers shared by the planners: ceiling division and rounding up to a multiple."""
from __future__ import annotations


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for integers (b > 0)."""
    return -(-a // b)


def round_up(x: int, m: int) -> int:
    """The smallest multiple of m that is >= x."""
    return -(-x // m) * m
