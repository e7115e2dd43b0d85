"""The PyTorch front end: ``torch.nn.Module`` s to HPVM Modules, with no
ONNX file in between.

    from hpvm.frontend.torch import load
    module = load(model.eval(), (example_batch,))     # through torch.export
    exe = hpvm.runtime.compile(module, ["cpu"])
    exe(input=batch.numpy())      # inputs named as torch.export names them (nn.Sequential: input)

    compiled = torch.compile(model, backend="hpvm",    # after pip install hpvm
                             options={"targets": ["cpu"]})
    compiled(batch)                                    # torch tensors in and out
    explain(model, (batch,))     # per graph: operators on hpvm, those left to PyTorch and why

``load`` exports the model with ``torch.export`` (ATen operators, weights
as constants; the shapes of the example inputs are fixed) and translates
its graph (aten.py); the graph's inputs are named as torch.export names
them (after ``forward``'s parameters), its outputs ``y`` (or ``y0``, ``y1``,
...).  The torch.compile
backend (dynamo.py) does the same with the graphs Dynamo hands it, and
leaves the operators hpvm does not have to PyTorch.
"""
from __future__ import annotations

from ...errors import HpvmError
from ...ir.graph import Module
from ...passes import TENSOR_PIPELINE, run_pipeline
from .explain import GraphReport


def load(model, example_inputs: tuple, optimize: bool = True,
         input_names: tuple[str, ...] | None = None) -> Module:
    """The Module of ``model`` (in eval mode) traced on ``example_inputs``
    (a tuple of tensors); ``optimize``: run hpvm.passes.TENSOR_PIPELINE;
    ``input_names``: the graph's inputs, in order (default: as torch.export
    names them)."""
    # torch (optional, heavy); aten.py imports it too
    import torch
    from torch.export.graph_signature import InputKind

    from .aten import convert_graph
    if not isinstance(example_inputs, tuple):
        example_inputs = (example_inputs,)
    try:
        # run_decompositions({}): functional ATen (in-place ops such as
        # mul_ rewritten), no operator decomposed further.
        program = torch.export.export(model, example_inputs).run_decompositions({})
    except Exception as error:  # torch.export's own refusal, with its reason
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise HpvmError(f"torch.export could not trace {type(model).__name__}: {first} (fix: "
                        "make forward traceable, see torch.export's documentation)") from None
    state = program.state_dict
    constants, inputs = {}, {}
    users = iter(example_inputs)
    for spec in program.graph_signature.input_specs:
        name = spec.arg.name
        if spec.kind == InputKind.USER_INPUT:
            inputs[name] = next(users)
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            constants[name] = state[spec.target] if spec.target in state else \
                program.constants[spec.target]
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            constants[name] = program.constants[spec.target]
    renamed = dict(zip(inputs, input_names or ()))
    module, _ = convert_graph(program.graph, inputs, constants, type(model).__name__,
                              renamed=renamed)
    if not optimize:
        return module
    return run_pipeline(module, TENSOR_PIPELINE)


def explain(model, example_inputs: tuple, targets=("cpu",), **options) -> list[GraphReport]:
    """What ``torch.compile(model, backend="hpvm")`` does with ``model`` on
    ``example_inputs``: one GraphReport per graph Dynamo captures (how many
    ATen operators hpvm runs, which PyTorch runs and why).  ``targets`` and
    ``options`` as for the backend."""
    import torch  # torch (optional, heavy)

    from .dynamo import compile_graph
    reports: list[GraphReport] = []
    settings = {"targets": list(targets), **options}

    def collecting(graph_module, inputs):
        return compile_graph(graph_module, inputs, settings, reports=reports)
    compiled = torch.compile(model, backend=collecting)
    with torch.no_grad():
        compiled(*(example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)))
    return reports


def backend(graph_module, example_inputs, **kwargs):
    """The ``torch.compile`` backend (entry point ``hpvm`` of
    ``torch_dynamo_backends``); see dynamo.py."""
    from .dynamo import compile_graph  # torch (optional, heavy): dynamo.py imports it
    return compile_graph(graph_module, example_inputs, **kwargs)
