"""``input-buffering`` (HPVM2FPGA's IB): a read-only buffer parameter of
fixed size that a kernel reads inside a loop is copied once into on-chip
memory, and every read goes there instead of to global memory (a filter's
taps, a lookup table, a colour matrix).

- ``form=single`` (default; FPGAs): single work items, whose nodes have
  no replication (run ``sequentialize`` first, as the FPGA target does):
  the kernel copies the buffer into a private array when it starts.
- ``form=group`` (GPUs): replicated nodes share one copy per work group
  in local memory: the group copies it together (each instance a strided
  share), meets at a barrier, then runs the kernel.  The nodes get a work
  group (256 instances, 16 x 16, or 4 x 8 x 8) and run it whole
  (``padded_groups``); nodes that already run whole groups (the tile pass
  made them) keep theirs.  The copies of all buffered parameters must fit
  ``max_local_bytes``.

Options: ``params``, ``FUNCTION.PARAM`` names (the DSE's knobs;
``eligible_params`` lists them), default every eligible one.  Eligible: an
``in`` buffer with a constant shape of at most ``max_elements`` elements,
loaded inside a loop, never passed to a call, in a function that only
nodes of the form's kind run.  A named parameter that is not eligible is
refused with the reason.
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
from .input_buffering_group import group_copies, group_problem
from .registry import Option, register_pass


FORMS = ("single", "group")


@register_pass("input-buffering", options=[
    Option("params", list, (), "FUNCTION.PARAM read-only buffers to copy on chip "
           "(default: all eligible)"),
    Option("max_elements", int, 16384, "largest buffer copied, in elements"),
    Option("form", str, "single", "single: a private copy per single work item (FPGAs); "
           "group: one local copy per work group of a replicated node (GPUs)", choices=FORMS),
    Option("max_local_bytes", int, 32768, "group: the most local memory the copies of one "
           "function may take", minimum=1)])
def input_buffering(module: Module, params: tuple[str, ...], max_elements: int,
                    form: str = "single", max_local_bytes: int = 32768) -> Module:
    """Copy fixed-size read-only inputs on chip."""
    check_named_params("input-buffering", params,
                       lambda name: _problem(module, name, max_elements, form),
                       lambda: eligible_params(module, max_elements, form))
    chosen = set(params) if params else set(eligible_params(module, max_elements, form))
    for name, function in list(module.functions.items()):
        wanted = {p.name for p in function.params if f"{name}.{p.name}" in chosen}
        if not wanted:
            continue
        if form == "single":
            body = copied_into_arrays(function, wanted, "buffered")
            module = dataclasses.replace(module, functions={
                **module.functions, name: dataclasses.replace(function, body=body)})
        else:
            module = group_copies(module, function, wanted, max_local_bytes)
    return module


def eligible_params(module: Module, max_elements: int = 16384,
                    form: str = "single") -> list[str]:
    """``FUNCTION.PARAM`` of every parameter this pass can buffer."""
    return [f"{name}.{p.name}" for name, function in module.functions.items()
            for p in function.params
            if _problem(module, f"{name}.{p.name}", max_elements, form) is None]


def _problem(module: Module, name: str, max_elements: int, form: str = "single") -> str | None:
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
    if form == "single" and (not runners or any(node.replication for node in runners)):
        return ("belongs to a function that replicated nodes (or none) run: every instance "
                "would copy it; sequentialize the nodes first, or use form=group")
    if form == "group":
        problem = group_problem(function, runners)
        if problem is not None:
            return problem
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
