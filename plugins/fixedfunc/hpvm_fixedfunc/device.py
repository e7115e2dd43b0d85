"""The runtime shim of fixedfunc: each launch hands the node's buffers, by
role, to the accelerator its plan names."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hpvm.errors import Diagnostic, ExecutionError, Location
from hpvm.target import HostMemoryDevice, NodeRef

from .signatures import BY_NAME, Refusal


@dataclass(frozen=True)
class LaunchPlan:
    """What launching one node (or outlined group) means: the signature,
    its convention, and the ports each role comes in and goes out by."""

    signature: str
    convention: dict
    inputs: dict[str, str]
    outputs: dict[str, str]
    members: tuple[str, ...]

    def to_json(self) -> dict:
        return {"signature": self.signature, "convention": self.convention, "inputs": self.inputs,
                "outputs": self.outputs, "members": list(self.members)}

    @classmethod
    def from_json(cls, data: dict) -> "LaunchPlan":
        return cls(data["signature"], dict(data["convention"]), dict(data["inputs"]),
                   dict(data["outputs"]), tuple(data["members"]))


class FixedFunctionDevice(HostMemoryDevice):
    """Buffers are host arrays; launches run the accelerators' functions on
    ``backend`` (hpvm_fixedfunc.backends), an emulation of the hardware."""

    name = "fixedfunc"

    def __init__(self, plans: dict[str, LaunchPlan], backend):
        self.plans = plans
        self.backend = backend
        self.timing_label = f"emulated ({backend.name})"

    def launch(self, node: NodeRef, args: dict[str, Any]) -> None:
        plan = self.plans[str(node)]
        signature = BY_NAME[plan.signature]
        inputs = {role: args[port] for role, port in plan.inputs.items()}
        try:
            convention = signature.prepare(plan.convention, inputs)
        except Refusal as refusal:
            raise ExecutionError(Diagnostic(
                Location(graph=node.graph, node=node.node),
                f"fixedfunc: the {plan.signature} accelerator cannot run these inputs: {refusal}",
                "run this node on another target: hpvm.compile(..., targets=['cpu'])")) from None
        results = signature.run(convention, {role: self.backend.array(value) for role, value in inputs.items()},
                                self.backend)
        for role, port in plan.outputs.items():
            self.backend.store(args[port], results[role])
        return None
