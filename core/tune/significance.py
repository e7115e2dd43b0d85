"""Whether a configuration beats another by more than the noise of the
machine: a one-sided sign test over their paired runs, measured in turn
(the confirmation step interleaves them, so that round k of each ran under
the same conditions).  The tuner returns a configuration other than the
defaults only where it wins clearly: a few percent gained in one
measurement and lost in the next is no gain (HPVM's GPU experiment: cfd's
tuned configuration 3% ahead in the confirmation, 4% behind after)."""
from __future__ import annotations

from math import comb

LEVEL = 0.05
"""The largest chance, were the two equally fast, of winning at least as
many rounds: 12 of 15, 9 of 10, 5 of 5."""


def wins_clearly(candidate: list[float], baseline: list[float], level: float = LEVEL) -> bool:
    """Whether ``candidate``'s rounds beat ``baseline``'s, pairwise, in so
    many of them that chance would do so at most ``level`` of the time
    (ties left out)."""
    wins, rounds = rounds_won(candidate, baseline)
    return rounds > 0 and chance_of(wins, rounds) <= level


def chance_of(wins: int, rounds: int) -> float:
    """The chance of at least ``wins`` of ``rounds`` fair coin flips."""
    return sum(comb(rounds, k) for k in range(wins, rounds + 1)) / 2 ** rounds


def rounds_won(candidate: list[float], baseline: list[float]) -> tuple[int, int]:
    """(rounds ``candidate`` won, rounds compared: ties left out)."""
    pairs = [(c, b) for c, b in zip(candidate, baseline) if c != b]
    return sum(c < b for c, b in pairs), len(pairs)
