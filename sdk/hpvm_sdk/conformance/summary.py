"""The support summary printed at the end of a conformance run.

Collects the outcome of every battery test (by category) and the support
notes tests record with ``record_property("hpvm_support", "conv2d: native")``,
then renders a table::

    category              passed  failed  skipped
    example programs           5       0        0
    ...
    tensor ops  native: -  lowered to kernels: add, conv2d, ...  not claimed: -
    verdict: target 'cpu' passes every check that applies to it
"""
from __future__ import annotations

from collections import Counter, defaultdict

from .battery import CATEGORIES

SUPPORT_PROPERTY = "hpvm_support"
CATEGORY_PROPERTY = "hpvm_category"
"""The plugin tags each battery test with its category at collection."""
OUTCOMES = ("passed", "failed", "skipped")


class SupportSummary:
    """Outcomes of the battery's tests, one per test id."""

    def __init__(self, target_line: str, unavailable: str = ""):
        self.target_line = target_line
        self.unavailable = unavailable
        """Why the target cannot run here; empty when it can."""
        self.outcomes: dict[str, tuple[str, str]] = {}   # nodeid -> (category, outcome)
        self.skip_reasons: dict[str, Counter] = defaultdict(Counter)
        self.support: dict[str, list[str]] = defaultdict(list)

    def add(self, report) -> None:
        """Record a pytest TestReport (any phase)."""
        properties = dict(report.user_properties)
        category = properties.get(CATEGORY_PROPERTY)
        if category is None:
            return
        outcome = _outcome(report)
        if outcome is None:
            return
        self.outcomes[report.nodeid] = (category, outcome)
        if outcome == "skipped":
            self.skip_reasons[category][_skip_reason(report)] += 1
        for key, value in report.user_properties:
            if key == SUPPORT_PROPERTY and value not in self.support[category]:
                self.support[category].append(value)

    def counts(self) -> dict[str, Counter]:
        table: dict[str, Counter] = {c: Counter() for c in CATEGORIES.values()}
        for category, outcome in self.outcomes.values():
            table[category][outcome] += 1
        return table

    @property
    def failed(self) -> int:
        return sum(1 for _, outcome in self.outcomes.values() if outcome == "failed")

    def lines(self) -> list[str]:
        """The table, the support notes, the skip reasons, and a verdict."""
        counts = self.counts()
        width = max(len(c) for c in counts)
        lines = [self.target_line, "",
                 f"{'category':<{width}}  " + "  ".join(f"{o:>7}" for o in OUTCOMES)]
        for category, counter in counts.items():
            lines.append(f"{category:<{width}}  " + "  ".join(f"{counter[o]:>7}" for o in OUTCOMES))
        for category, notes in self.support.items():
            lines.append("")
            lines.extend(_support_lines(category, notes))
        if not self.unavailable:  # else every skip gives the same reason
            for category, reasons in self.skip_reasons.items():
                for reason, count in reasons.most_common():
                    lines.append(f"skipped in {category}: {reason} ({count})")
        lines.append("")
        lines.append(self.verdict())
        return lines

    def verdict(self) -> str:
        ran = sum(1 for _, outcome in self.outcomes.values() if outcome == "passed")
        if self.failed:
            return f"verdict: {self.failed} check(s) FAILED"
        if self.unavailable:
            return f"verdict: not tested, the target is not available here: {self.unavailable}"
        if not ran:
            return "verdict: nothing ran (see the skip reasons above)"
        return "verdict: every check that applies to this target passed"


def _outcome(report) -> str | None:
    if report.when == "call":
        return report.outcome
    if report.outcome == "skipped" and report.when == "setup":
        return "skipped"
    if report.outcome == "failed":  # an error in setup or teardown
        return "failed"
    return None


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _support_lines(category: str, notes: list[str]) -> list[str]:
    """``name: kind`` notes grouped by kind: ``tensor ops native: a, b``."""
    by_kind: dict[str, list[str]] = defaultdict(list)
    for note in notes:
        name, _, kind = note.partition(": ")
        by_kind[kind].append(name)
    return [f"{category} {kind}: {', '.join(sorted(names))}" for kind, names in by_kind.items()]
