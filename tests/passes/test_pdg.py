"""Program dependence graphs: what should not matter to a semantic match
(names, operand order, loop index shifts, association, if-assign versus
min) gives the same graph; what should matter does not."""
import networkx as nx
import pytest

from hpvm.passes.pdg import build_pdg
from hpvm.passes.value_ranges import UNIT
from hpvm.passes.pdg_match import Pattern, explain, find
from hpvm.ir.text import parse_module

KERNEL = """hpvm 1.0
module m

func @k(in a: f64[N], in b: f64[N], out c: f64[N]) {
  let i: i64 = instance_id(0)
  BODY
}

graph @main(in a: f64[N], in b: f64[N], out c: f64[N]) {
  node n = @k [N]
  in a -> n.a
  in b -> n.b
  out n.c -> c
}

root @main
"""


def pdg(body: str):
    module = parse_module(KERNEL.replace("BODY", body))
    return build_pdg(module.function("k"))


def same(first: str, second: str) -> bool:
    def label(facts):
        return (facts["label"], facts["type"], facts.get("value"), facts.get("array"), facts.get("name"))
    return nx.is_isomorphic(pdg(first).graph, pdg(second).graph,
                            node_match=lambda x, y: label(x) == label(y),
                            edge_match=lambda x, y: (x["kind"], x["pos"]) == (y["kind"], y["pos"]))


@pytest.mark.parametrize("first, second", [
    # names of locals vanish
    ("let x: f64 = a[i] * b[i]\n  c[i] = x", "let product: f64 = a[i] * b[i]\n  c[i] = product"),
    # commutative operands are unordered
    ("c[i] = a[i] * b[i] + f64(1.0)", "c[i] = f64(1.0) + b[i] * a[i]"),
    # a sum written in one expression re-associates; subtraction is adding a negation
    ("c[i] = a[i] + b[i] - a[0]", "c[i] = a[i] - (a[0] - b[i])"),
    # integer index arithmetic re-associates and folds constants
    ("c[i] = a[i + 2 - 1]", "c[i] = a[1 + i]"),
    # a loop shifted by one: range(1, N) reading i - 1 is range(0, N - 1) reading i
    ("let s: f64 = f64(0.0)\n  for j in 1 .. N step 1 {\n    s = s + a[j - 1]\n  }\n  c[i] = s",
     "let s: f64 = f64(0.0)\n  for j in 0 .. N - 1 step 1 {\n    s = s + a[j]\n  }\n  c[i] = s"),
    # an if that keeps the lesser value is min
    ("let m: f64 = a[i]\n  if b[i] < m {\n    m = b[i]\n  }\n  c[i] = m", "c[i] = min(a[i], b[i])"),
    # x << 2 is x * 4
    ("c[i] = a[i << 2]", "c[i] = a[i * 4]"),
    # a while loop that counts is a counted loop
    ("let s: f64 = f64(0.0)\n  let j: i64 = 0\n  while j < N {\n    s = s + a[j]\n    j = j + 1\n  }"
     "\n  c[i] = s",
     "let s: f64 = f64(0.0)\n  for j in 0 .. N step 1 {\n    s = s + a[j]\n  }\n  c[i] = s"),
    ("let s: f64 = f64(0.0)\n  let j: i64 = 1\n  while N >= j {\n    s = s + a[j - 1]\n"
     "    j = 1 + j\n  }\n  c[i] = s",
     "let s: f64 = f64(0.0)\n  for j in 0 .. N step 1 {\n    s = s + a[j]\n  }\n  c[i] = s"),
])
def test_what_should_not_matter_gives_one_graph(first, second):
    assert same(first, second)


@pytest.mark.parametrize("first, second", [
    ("c[i] = a[i] - b[i]", "c[i] = b[i] - a[i]"),
    ("c[i] = a[i + 1]", "c[i] = a[i]"),
    ("c[i] = a[i] * b[i]", "c[i] = a[i] + b[i]"),
    ("let m: f64 = a[i]\n  if b[i] <= m {\n    m = a[i]\n  }\n  c[i] = m", "c[i] = min(a[i], b[i])"),
])
def test_what_should_matter_gives_two_graphs(first, second):
    assert not same(first, second)


def test_a_value_carried_round_a_loop_is_a_phi_fed_by_its_next_value():
    graph = pdg("let s: f64 = f64(0.0)\n  for j in 0 .. N step 1 {\n    s = s + a[j] * b[j]\n  }\n  c[i] = s")
    (phi,) = [n for n in graph.graph if graph.label(n) == "phi"]
    sources = {d["pos"]: graph.label(s) for s, _, d in graph.graph.in_edges(phi, data=True)}
    assert sources == {"init": "const", "next": "add", "body": "loop"}
    (store,) = [n for n in graph.graph if graph.label(n) == "store"]
    assert phi in graph.operands(store)


def test_a_load_after_a_store_to_its_buffer_is_a_new_value():
    graph = pdg("c[i] = a[i]\n  let x: f64 = c[i]\n  let y: f64 = c[i]\n  c[i] = x + y")
    loads = [n for n in graph.graph if graph.label(n) == "load" and graph.facts(n)["array"] == "c"]
    assert len(loads) == 1   # the two loads of c[i] between stores are one value


def test_index_expressions_carry_their_affine_form():
    graph = pdg("c[i] = a[2 * i + N - 1]")
    (load,) = [n for n in graph.graph if graph.label(n) == "load"]
    form = graph.affine(graph.facts(load)["indices"][0])
    names = {graph.facts(atom).get("name", graph.label(atom)) if atom != UNIT else UNIT: c
             for atom, c in form.items()}
    assert names == {"instance_id": 2, "N": 1, UNIT: -1}


@pytest.mark.parametrize("index", ["N", "N + i", "2 * N"])
def test_no_node_is_taken_for_the_constant_term(index):
    """The constant term's atom is no node id: the first nodes (node 1
    here) are atoms like any other."""
    graph = pdg(f"c[i] = a[{index}]")
    (load,) = [n for n in graph.graph if graph.label(n) == "load"]
    form = graph.affine(graph.facts(load)["indices"][0])
    assert UNIT not in form and all(atom in graph.graph for atom in form)


def dot_pattern() -> Pattern:
    p = Pattern("dot")
    loop = p.loop("loop")
    total = p.phi(loop, "sum carried round the loop")
    product = p.op("mul", p.load("first factor"), p.load("second factor"), description="product")
    p.feed(p.op("add", total, product, description="sum + product"), total, "next")
    p.store(total, "store of the sum", role="store")
    return p


def test_a_pattern_is_found_whatever_the_names_and_operand_order():
    graph = pdg("let acc: f64 = f64(0.0)\n  for k in 0 .. N step 1 {\n    acc = b[k] * a[k] + acc\n  }\n"
                "  c[i] = acc")
    (occurrence,) = find(graph, dot_pattern())
    assert graph.facts(occurrence["store"])["array"] == "c"


def test_a_missing_operation_is_named():
    graph = pdg("let acc: f64 = f64(0.0)\n  for k in 0 .. N step 1 {\n    acc = acc + a[k] + b[k]\n  }\n"
                "  c[i] = acc")
    assert find(graph, dot_pattern()) == []
    assert explain(graph, dot_pattern()) == "no sum + product"


def test_an_operation_with_an_extra_operand_does_not_match():
    graph = pdg("let acc: f64 = f64(0.0)\n  for k in 0 .. N step 1 {\n    acc = acc + a[k] * b[k] * a[0]\n"
                "  }\n  c[i] = acc")
    assert find(graph, dot_pattern()) == []


def test_a_search_gives_up_after_its_step_budget(monkeypatch):
    import hpvm.passes.pdg_match as pdg_match
    monkeypatch.setattr(pdg_match, "STEPS", 3)
    graph = pdg("let acc: f64 = f64(0.0)\n  for k in 0 .. N step 1 {\n    acc = acc + a[k] * b[k]\n  }\n"
                "  c[i] = acc")
    with pytest.raises(pdg_match.SearchTooLong):
        find(graph, dot_pattern())
    assert explain(graph, dot_pattern()).startswith("undecided after 3 search steps")


@pytest.mark.parametrize("loop", [
    "while j < N {\n    s = s + a[j]\n    j = j + 2\n  }",          # a step of two
    "while j < N {\n    j = j + 1\n    s = s + a[j]\n  }",          # counted before its use
    "while j < n {\n    s = s + a[j]\n    n = n - 1\n    j = j + 1\n  }",  # a moving bound
])
def test_a_while_loop_that_does_not_just_count_stays_a_while_loop(loop):
    graph = pdg(f"let s: f64 = f64(0.0)\n  let j: i64 = 0\n  let n: i64 = N\n  {loop}\n  c[i] = s")
    labels = [graph.label(node) for node in graph.graph]
    assert "while" in labels and "loop" not in labels
