"""Every benchmark program at its small size on every usable target, against
its numpy reference; and every peer that can run here against the same
reference (a peer that computes something else would make its ratio a lie)."""
import numpy as np
import pytest

import hpvm
from benchmarks.suite import all_benchmarks
from hpvm.registry import get_registry
from hpvm.testing import assert_outputs_close

BENCHMARKS = all_benchmarks()
TARGETS = [info.name for info in get_registry().targets() if info.availability.available]


def small_inputs(bench):
    return bench.make_inputs("small", np.random.default_rng(0))


def test_every_suite_the_issue_names_has_programs():
    suites = {bench.suite for bench in BENCHMARKS}
    assert {"parboil", "rodinia", "machsuite", "image", "audio"} <= suites


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("bench", BENCHMARKS, ids=lambda b: b.name)
def test_program_matches_numpy_reference(bench, target):
    inputs = small_inputs(bench)
    exe = hpvm.compile(bench.program, targets=[target])
    assert_outputs_close(exe(**inputs), bench.reference(inputs), rtol=bench.rtol,
                         atol=bench.atol, label=f"{bench.name} on {target}")


PEERS = [(bench, peer) for bench in BENCHMARKS for peer in bench.peers]


@pytest.mark.parametrize("bench, peer", PEERS, ids=lambda x: x.name)
def test_peer_matches_numpy_reference(bench, peer):
    reason = peer.available()
    if reason:
        pytest.skip(f"{peer.name}: {reason}")
    inputs = small_inputs(bench)
    expected = bench.reference(inputs)
    actual = peer.prepare(inputs)()
    assert_outputs_close({k: actual[k] for k in expected}, expected, rtol=bench.rtol,
                         atol=bench.atol, label=f"{bench.name}: peer {peer.name}")
