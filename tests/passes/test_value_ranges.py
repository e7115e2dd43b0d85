"""Memory disambiguation from value ranges in the PDG (passes/value_ranges.py):
a load of x[p] across a store to x[q] is the load before it when q - p is
provably never zero, from loop bounds, recurrences and conditions; and
only then (what must not be concluded is tested as carefully)."""
import pytest

from hpvm.ir.text import parse_module
from hpvm.passes.pdg import build_pdg
from hpvm.passes.value_ranges import INF, Interval, recurrence

KERNEL = """hpvm 1.0
module m

func @k(inout x: f64[N], in s: i64) {
  let i: i64 = instance_id(0)
  BODY
}

graph @main(inout x: f64[N], in s: i64) {
  node n = @k [N]
  in x -> n.x
  in s -> n.s
  out n.x -> x
}

root @main
"""

BUTTERFLY = """let p: i64 = i * 64
    let q: i64 = p + OFFSET
    let t: f64 = x[p]
    x[q] = t
    x[p] = x[p] + f64(1.0)"""
"""Reads x[p], writes x[q], reads x[p] again: one load where q != p."""


def loads_of_x(body: str) -> int:
    module = parse_module(KERNEL.replace("BODY", body))
    graph = build_pdg(module.function("k")).graph
    return sum(1 for _, facts in graph.nodes(data=True)
               if facts["label"] == "load" and facts.get("array") == "x")


def in_loop(header: str, offset: str, step: str, footer: str = "") -> str:
    butterfly = BUTTERFLY.replace("OFFSET", offset)
    return f"{header} {{\n    {butterfly}\n    {step}\n  }}\n  {footer}"


SHARED, RELOADED = 1, 2


@pytest.mark.parametrize("body, loads", [
    # doubling from 2 while size <= N: half = size / 2 is at least 1
    (in_loop("let size: i64 = 2\n  while size <= N", "size / 2", "size = size * 2"), SHARED),
    # the same with a shift
    (in_loop("let size: i64 = 2\n  while size <= N", "(size >> 1)", "size = size << 1"), SHARED),
    # halving, held at least 1 by the while condition
    (in_loop("let span: i64 = N / 2\n  while span >= 1", "span", "span = span / 2"), SHARED),
    # a constant offset
    (BUTTERFLY.replace("OFFSET", "3"), SHARED),
    # a step that only grows from 1
    (in_loop("let step: i64 = 1\n  while step < N", "step", "step = step + 2"), SHARED),
    # a loop index plus one is never the index
    ("for k in 0 .. N step 1 {\n    let a: f64 = x[k]\n    x[k + 1] = a\n"
     "    x[k] = x[k] + f64(1.0)\n  }", SHARED),
    # in the branch where j > i, x[i] and x[j] are two elements
    ("let j: i64 = s\n  if j > i {\n    let t: f64 = x[i]\n    x[j] = t\n"
     "    x[i] = x[i] + f64(1.0)\n  }", SHARED),
    # a sum of things at least 1 (a dimension size)
    (BUTTERFLY.replace("OFFSET", "N"), SHARED),
])
def test_a_load_across_a_store_to_another_element_is_the_load_before(body, loads):
    assert loads_of_x(body) == loads


@pytest.mark.parametrize("body", [
    # doubling from 1: size / 2 is 0 at first
    in_loop("let size: i64 = 1\n  while size <= N", "size / 2", "size = size * 2"),
    # from a parameter: nothing known
    in_loop("let size: i64 = s\n  while size <= N", "size / 2", "size = size * 2"),
    # a store to the same element
    BUTTERFLY.replace("OFFSET", "0"),
    # the other branch of j > i: j may be i
    "let j: i64 = s\n  if j > i {\n    x[0] = f64(0.0)\n  } else {\n    let t: f64 = x[i]\n"
    "    x[j] = t\n    x[i] = x[i] + f64(1.0)\n  }",
    # after the loop its condition no longer holds: span may be 0
    in_loop("let span: i64 = N / 2\n  while span >= 1", "1", "span = span / 2",
            footer="let t: f64 = x[i]\n  x[i + span] = t\n  x[i] = x[i] + f64(1.0)"),
    # a variable the loop both doubles and halves has no direction
    in_loop("let size: i64 = 2\n  while size <= N", "size / 2",
            "size = size * 2\n    size = size / 2"),
    # a loop index may be 0
    "for k in 0 .. N step 1 {\n    let a: f64 = x[i]\n    x[i + k] = a\n"
    "    x[i] = x[i] + f64(1.0)\n  }",
    # a parameter offset
    BUTTERFLY.replace("OFFSET", "s"),
])
def test_what_may_be_the_same_element_is_read_again(body):
    assert loads_of_x(body) >= RELOADED


def test_the_after_loop_case_does_share_inside_the_loop():
    """The control case of the 'after the loop' one: inside, span >= 1."""
    body = in_loop("let span: i64 = N / 2\n  while span >= 1", "span", "span = span / 2",
                   footer="x[0] = f64(0.0)")
    assert loads_of_x(body) == SHARED


@pytest.mark.parametrize("step, direction", [
    ("size = size * 2", "up"), ("size = 2 * size", "up"), ("size = size + 1", "up"),
    ("size = size << 1", "up"), ("size = size / 2", "down"), ("size = size >> 1", "down"),
    ("size = size - 1", "down-by-subtraction"), ("size = size * 0", None),
    ("size = size * -2", None), ("size = size + s", None), ("size = s", None),
])
def test_recurrences(step, direction):
    module = parse_module(KERNEL.replace(
        "BODY", f"let size: i64 = 2\n  while size <= N {{\n    {step}\n  }}"))
    body = module.function("k").body
    loop = next(s for s in body if type(s).__name__ == "While")
    assert recurrence("size", loop.body) == direction


def test_interval_arithmetic():
    assert Interval(2, INF).times(Interval(-1, 3)) == Interval(-INF, INF)
    assert Interval(1, 4).scaled(-2) == Interval(-8, -2)
    assert (Interval(0, 0) + Interval(1, INF)).excludes_zero()
    assert not Interval(0, 5).excludes_zero()
    assert Interval(1, 3) & Interval(2, 9) == Interval(2, 3)
