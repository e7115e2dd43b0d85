"""fuse-attention: scaled dot-product attention written as ONNX and torch
users write it (a scale, a mask, a softmax between two products) becomes
one attention node computing what the three did; products whose scores
are read elsewhere, or whose rows are not the last axis, stay apart; the
compiler fuses before placement only for targets that take the op."""
import numpy as np
import torch
from onnx import helper

from hpvm.frontend import torch as hpvm_torch
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import TENSOR_PIPELINE, run_pipeline
from hpvm.registry import Registry
from hpvm.runtime import compile
from hpvm.runtime.loopback import LoopbackPlugin, LoopbackTarget

from .test_fuse_elementwise import model as onnx_model, ops

RNG = np.random.default_rng(0)
HEADS, QUERIES, KEYS, DEPTH = 2, 12, 20, 8


def attention_model(outputs=("y",), perm_axis=-1):
    """softmax(q @ k^T / sqrt(d) + mask) @ v over heads, keys given as
    [B, H, N, D] and transposed in the graph."""
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Div", ["s", "scale"], ["scaled"]),
             helper.make_node("Add", ["scaled", "mask"], ["masked"]),
             helper.make_node("Softmax", ["masked"], ["p"], axis=perm_axis),
             helper.make_node("MatMul", ["p", "v"], ["y"])]
    return onnx_model(nodes, {"q": ["B", HEADS, QUERIES, DEPTH], "k": ["B", HEADS, KEYS, DEPTH],
                              "v": ["B", HEADS, KEYS, DEPTH], "mask": ["B", 1, 1, KEYS]},
                      {"scale": np.float32(np.sqrt(DEPTH))}, outputs, opset=18)


def inputs(batch=3):
    floats = lambda *shape: RNG.standard_normal(shape).astype(np.float32)  # noqa: E731
    mask = np.where(RNG.random((batch, 1, 1, KEYS)) < 0.25, -1e4, 0).astype(np.float32)
    return {"q": floats(batch, HEADS, QUERIES, DEPTH), "k": floats(batch, HEADS, KEYS, DEPTH),
            "v": floats(batch, HEADS, KEYS, DEPTH), "mask": mask}


def reference(q, k, v, mask):
    s = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(DEPTH)) + mask
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True) @ v


def test_onnx_attention_is_one_node_with_the_same_values():
    before = run_pipeline(attention_model(), TENSOR_PIPELINE)
    after = run_pipeline(before, "fuse-attention", verify_each=True)
    assert ops(after) == ["transpose", "attention"]
    assert print_module(parse_module(print_module(after))) == print_module(after)
    given = inputs()
    for target in ("interp", "cpu"):
        np.testing.assert_allclose(compile(after, [target])(**given)["y"], reference(**given),
                                   rtol=1e-4, atol=1e-5)


def test_the_compiler_fuses_for_the_cpu_and_says_so():
    exe = compile(run_pipeline(attention_model(), TENSOR_PIPELINE), ["cpu"])
    assert "fuse-attention: 1 attention node" in exe.placement.format()
    given = inputs(batch=1)
    np.testing.assert_allclose(exe(**given)["y"], reference(**given), rtol=1e-4, atol=1e-5)


def test_the_cpu_s_option_keeps_the_three():
    module = run_pipeline(attention_model(), TENSOR_PIPELINE)
    exe = compile(module, ["cpu"], {"fuse_attention": False})
    assert "fuse-attention" not in exe.placement.format()
    assert "attention" not in ops(exe.module)
    given = inputs(batch=1)
    np.testing.assert_allclose(exe(**given)["y"], reference(**given), rtol=1e-4, atol=1e-5)


def test_a_listed_target_without_the_op_keeps_the_three():
    class WithoutAttention(LoopbackTarget):
        @property
        def native_tensor_ops(self):
            return super().native_tensor_ops - {"attention"}
    registry = Registry(entry_points=[])
    registry.register(LoopbackPlugin(WithoutAttention("plain", claim_all=True)), name="plain")
    module = run_pipeline(attention_model(), TENSOR_PIPELINE)
    exe = compile(module, ["plain"], registry=registry)
    assert "fuse-attention" not in exe.placement.format()
    assert sorted(ops(exe.module)) == sorted(ops(module))
    given = inputs(batch=2)
    np.testing.assert_allclose(exe(**given)["y"], reference(**given), rtol=1e-4, atol=1e-5)


def test_scores_read_elsewhere_or_rows_along_another_axis_stay_apart():
    for module in (attention_model(outputs=("y", "s")), attention_model(perm_axis=2)):
        before = run_pipeline(module, TENSOR_PIPELINE)
        assert "attention" not in ops(run_pipeline(before, "fuse-attention"))


class SelfAttention(torch.nn.Module):
    """Multi-head self-attention as a model author writes it."""

    def __init__(self, hidden=32, heads=4):
        super().__init__()
        self.heads, self.qkv = heads, torch.nn.Linear(hidden, 3 * hidden)
        self.out = torch.nn.Linear(hidden, hidden)

    def forward(self, x, mask):
        batch, length, hidden = x.shape
        q, k, v = self.qkv(x).split(hidden, dim=-1)
        split = lambda t: t.view(batch, length, self.heads, -1).transpose(1, 2)  # noqa: E731
        q, k, v = split(q), split(k), split(v)
        scores = q @ k.transpose(-2, -1) * (hidden // self.heads) ** -0.5
        weights = torch.softmax(scores.masked_fill(mask == 0, float("-inf")), dim=-1)
        return self.out((weights @ v).transpose(1, 2).reshape(batch, length, hidden))


def test_a_torch_self_attention_with_a_causal_mask_compiles_fused():
    torch.manual_seed(0)
    model = SelfAttention().eval()
    x = torch.randn(2, 10, 32)
    mask = torch.tril(torch.ones(10, 10))
    exe = compile(hpvm_torch.load(model, (x, mask)), ["cpu"])
    assert "attention" in {n.body.op for n in exe.module.root_graph.nodes
                           if hasattr(n.body, "op")}
    names = list(hpvm_torch.load(model, (x, mask)).root_graph.params)
    y = exe(**{names[0].name: x.numpy(), names[1].name: mask.numpy()})
    np.testing.assert_allclose(next(iter(y.values())), model(x, mask).detach().numpy(),
                               rtol=1e-4, atol=1e-5)
