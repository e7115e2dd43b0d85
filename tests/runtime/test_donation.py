"""Donated inputs (runtime/donation.py): a node that updates a donated
host array in place updates it, and the output is that array; the
donation is ignored (the input copied, as without it) where the input is
read after the update, where it shares memory with another input, on a
launched or bound run; a later call without it never writes the array."""
import numpy as np
import pytest

import hpvm
from hpvm.errors import HpvmError
from hpvm.ir.text import parse_module
from hpvm.testing import usable_targets

KERNELS = """hpvm 1.3
module donation

func @bump(inout x: f32[N]) {
  let i: i64 = instance_id(0)
  x[i] = x[i] + f32(1.0)
}

func @add(in x: f32[N], inout y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = y[i] + x[i]
}

func @copy(in x: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = x[i]
}
"""

IN_PLACE = KERNELS + """
graph @main(inout a: f32[N]) {
  node bump = @bump [N]
  in a -> bump.x
  out bump.x -> a
}
root @main
"""

READ_AFTER = KERNELS + """
graph @main(in a: f32[N], out b: f32[N], out old: f32[N]) {
  node bump = @bump [N]
  node keep = @copy [N]
  edge bump.x -> keep.x all-to-all
  in a -> bump.x
  out bump.x -> b
  out keep.y -> old
}
root @main
"""

TWO_INPUTS = KERNELS + """
graph @main(in x: f32[N], inout y: f32[N]) {
  node add = @add [N]
  in x -> add.x
  in y -> add.y
  out add.y -> y
}
root @main
"""

TARGETS = [("interp", {"task_parallelism": False}),
           *((t, {}) for t in usable_targets(("cpu",)))]


def compiled(text, target="interp", options=None):
    exe = hpvm.compile(parse_module(text), targets=[target],
                       options=options if options is not None else {"task_parallelism": False})
    assert exe._static_program() is not None
    return exe


@pytest.mark.parametrize("target, options", TARGETS)
def test_a_donated_input_is_updated_in_place_and_handed_back(target, options):
    exe = compiled(IN_PLACE, target, options)
    a = np.arange(8, dtype=np.float32)
    kept = exe(a=a)["a"]  # not donated: a copy, the caller's array untouched
    np.testing.assert_array_equal(a, np.arange(8))
    for step in range(1, 4):  # time steps that copy nothing
        a = exe(a=hpvm.donate(a))["a"]
        np.testing.assert_array_equal(a, np.arange(8) + step)
    out = exe.run({"a": hpvm.donate(a)})["a"]
    assert out is a and out[0] == 4
    np.testing.assert_array_equal(kept, np.arange(8) + 1)


def test_a_later_call_without_donating_does_not_write_the_array():
    exe = compiled(IN_PLACE)
    a = np.zeros(5, np.float32)
    exe(a=hpvm.donate(a))
    np.testing.assert_array_equal(a, 1)
    for _ in range(2):  # the second call repeats the first: taken as it was
        np.testing.assert_array_equal(exe(a=a)["a"], 2)
        np.testing.assert_array_equal(a, 1)


def test_an_input_read_after_its_update_is_copied_though_donated():
    exe = compiled(READ_AFTER)
    a = np.arange(6, dtype=np.float32)
    out = exe(a=hpvm.donate(a))
    np.testing.assert_array_equal(out["b"], np.arange(6) + 1)
    np.testing.assert_array_equal(out["old"], np.arange(6) + 1)


def test_an_array_shared_with_another_input_is_copied_though_donated():
    exe = compiled(TWO_INPUTS)
    a = np.arange(6, dtype=np.float32)
    out = exe(x=a, y=hpvm.donate(a))["y"]
    assert out is not a
    np.testing.assert_array_equal(out, 2 * np.arange(6))
    np.testing.assert_array_equal(a, np.arange(6))
    halves = np.arange(12, dtype=np.float32)
    out = exe(x=halves[:6], y=hpvm.donate(halves[6:]))["y"]  # no shared memory: donated
    assert out is not halves and np.shares_memory(out, halves)
    np.testing.assert_array_equal(halves[6:], np.arange(6) + np.arange(6, 12))


def test_launched_and_bound_runs_copy_a_donated_input():
    exe = compiled(IN_PLACE)
    a = np.zeros(4, np.float32)
    np.testing.assert_array_equal(exe.launch(a=hpvm.donate(a)).wait()["a"], 1)
    np.testing.assert_array_equal(exe.bind(a=hpvm.donate(a))()["a"], 1)
    np.testing.assert_array_equal(a, 0)


def test_only_arrays_can_be_donated():
    with pytest.raises(HpvmError, match="only arrays can be donated, not float"):
        hpvm.donate(1.5)
    a = np.zeros(3, np.float32)
    assert hpvm.donate(hpvm.donate(a)).array is a
