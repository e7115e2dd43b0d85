"""What ``torch.compile(model, backend="hpvm")`` did with each graph Dynamo
captured: how many ATen operators hpvm runs and which stayed with PyTorch,
and why.  The backend logs one line per graph (logger
``hpvm.frontend.torch``, INFO), and warns when hpvm runs none of a graph's
operators; ``explain(model, example_inputs)`` returns the reports.
"""
from __future__ import annotations

import logging
import warnings
from collections import Counter
from dataclasses import dataclass, field

LOG = logging.getLogger("hpvm.frontend.torch")


@dataclass
class GraphReport:
    """One captured graph: ``operators`` ATen calls, ``on_hpvm`` of them run
    by hpvm; ``left`` counts the others by (operator, reason)."""

    operators: int = 0
    on_hpvm: int = 0
    left: Counter = field(default_factory=Counter)

    def leave(self, operator: str, reason: str, count: int = 1) -> None:
        self.left[(operator, reason)] += count

    def __str__(self) -> str:
        head = f"hpvm runs {self.on_hpvm} of {self.operators} operators"
        if not self.left:
            return head
        rest = "; ".join(f"{op} x{n} ({why})" if n > 1 else f"{op} ({why})"
                         for (op, why), n in sorted(self.left.items()))
        return f"{head}; PyTorch runs {rest}"

    def tell(self) -> None:
        """Log the report once; warn when hpvm runs nothing."""
        LOG.info("torch.compile: %s", self)
        if self.operators and not self.on_hpvm:
            warnings.warn(f"torch.compile(backend='hpvm'): PyTorch runs the whole graph: {self}",
                          stacklevel=3)
