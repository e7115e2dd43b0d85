"""The conformance kit's pytest plugin (entry point ``pytest11`` of hpvm-sdk).

Installed with hpvm-sdk, it is active in every pytest run but does nothing
until ``--hpvm-target NAME`` is given.  Then:

- with no test paths on the command line, pytest runs only the standard
  battery (``pytest --hpvm-target mydevice``); with paths, the battery runs
  in addition to them (``pytest tests/ --hpvm-target mydevice``);
- fixture ``hpvm_target`` is the target under test
  (:class:`~hpvm_sdk.conformance.harness.TargetUnderTest`); every check
  skips, saying why, when the target's device or toolchain is missing;
- the end of the run prints the support summary.

Options: ``--hpvm-target NAME``, ``--hpvm-tolerance FACTOR`` (multiplies
every float tolerance, for targets that compute in lower precision).
"""
from __future__ import annotations

import pytest

_STATE = pytest.StashKey["ConformanceSession"]()


def pytest_addoption(parser) -> None:
    group = parser.getgroup("hpvm", "hpvm conformance kit (hpvm-sdk)")
    group.addoption("--hpvm-target", metavar="NAME", default=None,
                    help="run the hpvm conformance battery against the installed target NAME")
    group.addoption("--hpvm-tolerance", metavar="FACTOR", type=float, default=1.0,
                    help="multiply the battery's float tolerances by FACTOR (default 1)")


def pytest_configure(config) -> None:
    name = config.getoption("hpvm_target", None)
    if not name:
        return
    from hpvm.errors import HpvmError
    from .battery import battery_files
    from .harness import TargetUnderTest
    try:
        under_test = TargetUnderTest(name, config.getoption("hpvm_tolerance"))
    except HpvmError as error:
        raise pytest.UsageError(f"--hpvm-target: {error}") from None
    session = ConformanceSession(under_test)
    config.stash[_STATE] = session
    config.pluginmanager.register(session, "hpvm-conformance-session")
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        config.args = list(config.args) + battery_files()
    else:
        config.args = battery_files()


def pytest_report_header(config) -> list[str] | None:
    session = config.stash.get(_STATE, None)
    if session is None:
        return None
    return [f"hpvm conformance kit: {session.under_test.describe()}"]


@pytest.fixture(scope="session")
def hpvm_target(pytestconfig):
    """The target under test (``--hpvm-target NAME``); skips the test when
    the option is missing or the target is not usable on this machine."""
    session = pytestconfig.stash.get(_STATE, None)
    if session is None:
        pytest.skip("the hpvm conformance checks need --hpvm-target NAME")
    availability = session.under_test.availability
    if not availability.available:
        pytest.skip(f"target '{session.under_test.name}' is not available here: "
                    f"{availability.reason or 'no reason given'}")
    return session.under_test


class ConformanceSession:
    """Hooks active only while the battery runs: collect outcomes, print
    the support summary."""

    def __init__(self, under_test):
        from .summary import SupportSummary
        self.under_test = under_test
        availability = under_test.availability
        unavailable = "" if availability.available else availability.reason or "no reason given"
        self.summary = SupportSummary(under_test.describe(), unavailable)

    def pytest_collection_modifyitems(self, items) -> None:
        from .battery import category_of
        from .summary import CATEGORY_PROPERTY
        for item in items:
            category = category_of(item.path)
            if category is not None:
                item.user_properties.append((CATEGORY_PROPERTY, category))

    def pytest_runtest_logreport(self, report) -> None:
        self.summary.add(report)

    def pytest_terminal_summary(self, terminalreporter, config) -> None:
        if config.option.collectonly:
            return
        terminalreporter.write_sep("=", f"hpvm conformance summary: {self.under_test.name}")
        for line in self.summary.lines():
            terminalreporter.write_line(line)
