"""node_sizes: the sizes every node would see, propagated without running."""
import numpy as np

from hpvm.ir.text import parse_module
from hpvm.runtime.sizes import node_sizes
from hpvm.target import NodeRef

PIPELINE = """hpvm 1.0
module m

func @double(in x: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = x[i] * f32(2)
}

func @head(in x: f32[M], in k: i64, out y: f32[M]) {
  let i: i64 = instance_id(0)
  y[i] = x[i] + f32(k)
}

graph @g(in a: f32[L], in k: i64, out b: f32[L]) {
  node p = @double [N]
  node q = @head [M]
  in a -> p.x
  edge p.y -> q.x all-to-all
  in k -> q.k
  out q.y -> b
}

root @g
"""


def test_sizes_flow_from_the_inputs_through_every_node_without_memory():
    module = parse_module(PIPELINE)
    huge = np.broadcast_to(np.float32(0), (1 << 28,))   # never touched
    sizes = node_sizes(module, {"a": huge, "k": 3})
    assert sizes[NodeRef("g", "p")] == {"N": 1 << 28}
    assert sizes[NodeRef("g", "q")] == {"M": 1 << 28, "k": 3}
