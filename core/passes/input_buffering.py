"""``input-buffering`` (HPVM2FPGA's IB): a read-only buffer parameter of
fixed size that a single-work-item kernel reads inside a loop is copied
once, at the kernel's start, into an on-chip array, and every read goes
there instead of to global memory (a filter's taps, a lookup table, a
colour matrix).

Single work items only: the nodes must have no replication (run
``sequentialize`` first, as the FPGA target does); a replicated node's
instances would each copy the whole buffer, which only pays with a work
group sharing one copy through local memory and a barrier (a GPU form not
built yet).  Options: ``params``, ``FUNCTION.PARAM`` names (the DSE's
knobs; ``eligible_params`` lists them), default every eligible one.
Eligible: an ``in`` buffer with a constant shape of at most
``max_elements`` elements, loaded inside a loop, never passed to a call,
in a function that only unreplicated kernel nodes run.  A named parameter
that is not eligible is refused with the reason.
"""
from __future__ import annotations

import dataclasses

from ..ir.graph import KernelBody, Module
from ..ir.kernel import Call, For, KernelFunction, Load, Var
from ..ir.visit import walk
from .argument_privatisation import (
    check_named_params, copied_into_arrays, fixed_size_problem, named_param,
)
from .module_tools import iter_nodes
from .registry import Option, register_pass


@register_pass("input-buffering", options=[
    Option("params", list, (), "FUNCTION.PARAM read-only buffers to copy on chip "
           "(default: all eligible)"),
    Option("max_elements", int, 16384, "largest buffer copied, in elements")])
def input_buffering(module: Module, params: tuple[str, ...], max_elements: int) -> Module:
    """Copy fixed-size read-only inputs of single-work-item kernels on chip."""
    check_named_params("input-buffering", params,
                       lambda name: _problem(module, name, max_elements),
                       lambda: eligible_params(module, max_elements))
    chosen = set(params) if params else set(eligible_params(module, max_elements))
    functions = {}
    for name, function in module.functions.items():
        wanted = {p.name for p in function.params if f"{name}.{p.name}" in chosen}
        functions[name] = dataclasses.replace(
            function, body=copied_into_arrays(function, wanted, "buffered")) \
            if wanted else function
    return dataclasses.replace(module, functions=functions)


def eligible_params(module: Module, max_elements: int = 16384) -> list[str]:
    """``FUNCTION.PARAM`` of every parameter this pass can buffer."""
    return [f"{name}.{p.name}" for name, function in module.functions.items()
            for p in function.params
            if _problem(module, f"{name}.{p.name}", max_elements) is None]


def _problem(module: Module, name: str, max_elements: int) -> str | None:
    function_name, _, param_name = name.partition(".")
    param = named_param(module, name)
    if param is None:
        return "names no parameter (write FUNCTION.PARAM)"
    if param.direction != "in" or not param.is_buffer:
        return "is not a read-only (in) buffer"
    size = fixed_size_problem(param, max_elements)
    if size is not None:
        return size
    function = module.functions[function_name]
    runners = [node for _, node in iter_nodes(module)
               if isinstance(node.body, KernelBody) and node.body.function == function_name]
    if not runners or any(node.replication for node in runners):
        return ("belongs to a function that replicated nodes (or none) run: every instance "
                "would copy it; sequentialize the nodes first")
    if any(isinstance(item, Call) and any(isinstance(a, Var) and a.name == param_name
                                          for a in item.args) for item in walk(function.body)):
        return "is passed to a call (the callee would need the copy)"
    if not _loaded_in_a_loop(function, param_name):
        return "is not read inside a loop (one read costs less than the copy)"
    return None


def _loaded_in_a_loop(function: KernelFunction, name: str) -> bool:
    return any(isinstance(item, Load) and item.buffer == name
               for loop in walk(function.body) if isinstance(loop, For)
               for item in walk(loop.body))
