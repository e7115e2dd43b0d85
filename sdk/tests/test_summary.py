"""The support summary at the end of a conformance run."""
from types import SimpleNamespace

from hpvm_sdk.conformance.battery import CATEGORIES
from hpvm_sdk.conformance.summary import CATEGORY_PROPERTY, SUPPORT_PROPERTY, SupportSummary


def report(module, test, outcome, when="call", reason="", support=None):
    """A TestReport of battery module ``module`` as the plugin tags it."""
    longrepr = ("file", 1, f"Skipped: {reason}") if outcome == "skipped" else None
    properties = [(CATEGORY_PROPERTY, CATEGORIES[module])]
    if support:
        properties.append((SUPPORT_PROPERTY, support))
    return SimpleNamespace(nodeid=f"::{test}", outcome=outcome, when=when,
                           longrepr=longrepr, user_properties=properties)


def test_outcomes_are_counted_per_category():
    summary = SupportSummary("target 'x'")
    summary.add(report("check_corpus", "a", "passed"))
    summary.add(report("check_corpus", "b", "failed"))
    summary.add(report("check_memory", "c", "skipped", when="setup", reason="no device"))
    counts = summary.counts()
    assert (counts["differential corpus"]["passed"], counts["differential corpus"]["failed"]) == (1, 1)
    assert counts["memory tracker"]["skipped"] == 1
    assert summary.verdict() == "verdict: 1 check(s) FAILED"


def test_tests_outside_the_battery_are_ignored():
    summary = SupportSummary("target 'x'")
    summary.add(SimpleNamespace(nodeid="tests/test_mine.py::t", outcome="failed", when="call",
                                longrepr=None, user_properties=[]))
    assert summary.failed == 0


def test_support_notes_are_grouped_by_kind():
    summary = SupportSummary("target 'x'")
    summary.add(report("check_tensor_ops", "t[relu]", "passed", support="relu: native"))
    summary.add(report("check_tensor_ops", "t[conv2d]", "passed", support="conv2d: native"))
    summary.add(report("check_tensor_ops", "t[gemm]", "skipped", when="setup",
                       reason="not claimed", support="gemm: not claimed"))
    lines = summary.lines()
    assert "tensor ops native: conv2d, relu" in lines
    assert "tensor ops not claimed: gemm" in lines
    assert "skipped in tensor ops: not claimed (1)" in lines
    assert lines[-1] == "verdict: every check that applies to this target passed"


def test_an_unavailable_target_is_reported_as_not_tested():
    summary = SupportSummary("target 'x'", unavailable="no driver")
    summary.add(report("check_corpus", "a", "skipped", when="setup", reason="no driver"))
    lines = summary.lines()
    assert lines[-1] == "verdict: not tested, the target is not available here: no driver"
    assert not any(line.startswith("skipped in") for line in lines)
