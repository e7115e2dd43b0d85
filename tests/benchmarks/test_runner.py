"""The suite runner's command line: table, JSON and SVG on two small
programs on cpu, and clear messages for bad programs and targets."""
import io
import json
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from benchmarks.__main__ import main
from benchmarks.plot import ratio_svg
from benchmarks.runner import Row, Timing, pair_rows

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def suite_run(tmp_path_factory):
    """One run of blur and edge on cpu, shared by the tests below."""
    folder = tmp_path_factory.mktemp("run")
    argv = ["run", "--targets", "cpu", "--size", "small", "--programs", "blur,edge",
            "--repeat", "1", "--json", str(folder / "out.json"), "--plot", str(folder / "ratios.svg")]
    capture = pytest.MonkeyPatch()  # capsys is function-scoped
    stdout, stderr = io.StringIO(), io.StringIO()
    capture.setattr(sys, "stdout", stdout)
    capture.setattr(sys, "stderr", stderr)
    try:
        status = main(argv)
    finally:
        capture.undo()
    return status, stdout.getvalue(), stderr.getvalue(), folder


def test_run_prints_a_row_per_program_and_target(suite_run):
    status, stdout, _, _ = suite_run
    assert status == 0
    lines = [line for line in stdout.splitlines() if line.startswith("| blur") or line.startswith("| edge")]
    assert {line.split("|")[1].strip() for line in lines} == {"blur", "edge"}
    assert all(line.split("|")[2].strip() == "cpu" for line in lines)
    assert all(float(line.split("|")[3]) > 0 for line in lines)


def test_run_shows_progress_on_stderr(suite_run):
    assert "done" in suite_run[2] and "blur on cpu" in suite_run[2]


def test_run_writes_json_with_machine_command_and_rows(suite_run):
    data = json.loads((suite_run[3] / "out.json").read_text())
    assert data["machine"]["cpu_count"] >= 1
    assert data["command"].startswith("python -m benchmarks run --targets cpu")
    assert {row["program"] for row in data["rows"]} == {"blur", "edge"}
    assert all(row["status"] == "ok" and row["ms"] > 0 for row in data["rows"])


def test_run_writes_an_svg_bar_per_ratio(suite_run):
    data = json.loads((suite_run[3] / "out.json").read_text())
    root = ElementTree.parse(suite_run[3] / "ratios.svg").getroot()
    assert root.tag == f"{SVG}svg"
    assert len(root.findall(f"{SVG}rect")) == sum(1 for row in data["rows"] if row["ratio"])


def test_unknown_program_is_named_with_the_known_ones(capsys):
    assert main(["run", "--programs", "blur,no_such_program", "--quiet"]) == 2
    error = capsys.readouterr().err
    assert "no_such_program" in error and "blur" in error.split("the programs are:")[1]


def test_unusable_target_is_reported_once_with_its_reason(capsys, monkeypatch):
    from dataclasses import replace

    from hpvm.registry import Registry
    from hpvm.target import Availability
    lookup = Registry.target

    def without_its_device(registry, name):
        info = lookup(registry, name)
        if name != "cpu":
            return info
        unavailable = replace(info)
        unavailable.__dict__["availability"] = Availability.no("no device here")  # as if probed
        return unavailable
    monkeypatch.setattr(Registry, "target", without_its_device)
    assert main(["run", "--targets", "cpu,no_such_target", "--programs", "blur", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.count("target cpu skipped: no device here") == 1
    assert "target no_such_target skipped: unknown target" in out


def test_a_wrong_result_is_reported_not_timed():
    hpvm_row = Row("p", "image", "cpu", None, "wrong: out differs")
    rows = pair_rows([hpvm_row], [(_Peer("numba"), Timing(2.0))])
    assert rows[0].ratio is None and rows[0].status.startswith("wrong")


def test_plot_of_no_ratios_is_still_an_svg():
    root = ElementTree.fromstring(ratio_svg([]))
    assert root.tag == f"{SVG}svg"


class _Peer:
    def __init__(self, name):
        self.name, self.targets = name, ()


def test_missing_numba_makes_numba_peers_unavailable_not_the_programs(monkeypatch):
    from benchmarks.peers import numba_peer, stand_in_for_missing_numba
    monkeypatch.setitem(sys.modules, "numba", None)   # as if numba were not installed
    stand_in_for_missing_numba()
    import numba
    assert numba.prange is range
    assert "numba is not installed" in numba_peer(lambda inputs: {}).available()


def test_unavailable_peers_are_listed_once_per_reason():
    from benchmarks.runner import SuiteResult, format_notes
    result = SuiteResult(unavailable_peers=[("blur", "halide", "no halide"), ("edge", "halide", "no halide")])
    assert format_notes(result) == "peer halide unavailable (blur, edge): no halide"


def test_compare_puts_each_ratio_beside_the_recorded_one(suite_run, tmp_path):
    from dataclasses import asdict

    from benchmarks.compare import comparison_table
    data = json.loads((suite_run[3] / "out.json").read_text())
    rows = [Row(**row) for row in data["rows"]]
    slower = [Row(**{**asdict(row), "ratio": row.ratio * 2}) for row in rows if row.ratio]
    table = comparison_table(slower, suite_run[3] / "out.json", "small")
    measured = [line for line in table.splitlines() if line.startswith("| blur")]
    assert measured and all("2.00x | slower" in line for line in measured)
    assert "Note: recorded at size" not in table
    assert "Note: recorded at size small, this run is large" in comparison_table(
        rows, suite_run[3] / "out.json", "large")


def test_compare_with_a_file_that_is_not_a_run_is_refused_before_running(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["run", "--programs", "blur", "--compare", str(bad)]) == 2
    assert "not a recorded suite run" in capsys.readouterr().err


def test_interleaved_runs_time_every_implementation_in_turns(monkeypatch):
    from benchmarks import runner
    calls = []
    monkeypatch.setattr(runner, "check", lambda bench, outputs, expected: outputs["status"])

    def implementation(name, status="ok", fails_at=None):
        def make_run():
            def run():
                calls.append(name)
                if fails_at is not None and calls.count(name) == fails_at:
                    raise RuntimeError("lost the device")
                return {"status": status}
            return run
        return make_run

    timings = runner.measure_together(None, [implementation("a"), implementation("b", "wrong: x"),
                                             implementation("c", fails_at=3)], {}, repeat=3)
    # Each set up and checked once (a, b, c), then rounds of the two that passed.
    assert calls == ["a", "b", "c", "a", "c", "a", "c", "a"]
    assert timings[0].status == "ok" and timings[0].ms >= 0
    assert timings[1] == Timing(None, "wrong: x")
    assert timings[2].ms is None and "lost the device" in timings[2].status


def test_an_interleaved_suite_gives_the_rows_of_a_plain_one(capsys):
    assert main(["run", "--programs", "blur", "--repeat", "1", "--quiet", "--interleave"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| blur")]
    assert {line.split("|")[4].strip() for line in rows} >= {"numpy"}
    assert all(float(line.split("|")[3]) > 0 for line in rows)
