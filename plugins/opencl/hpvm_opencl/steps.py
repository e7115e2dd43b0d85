"""Work items running several instances of the innermost dimension: the
steps of an OpenCL entry (a mixin of OpenCLRenderer).

A kernel that does not synchronise its work group, keeps no per-instance
scratch copies and does not return early lets each work item run PER_ITEM
instances of the innermost dimension: each work item then has several
loads in flight, which a GPU needs to reach its memory bandwidth.  Its
buffers are ``restrict`` where no other can reach them
(hpvm.codegen.aliasing), so that the compiler may issue the loads of later
steps before the stores of earlier ones.  The launch divides the work
items only where enough are left to fill the device
(``OpenCLDevice.work_items``); the instances past the replication stop
the loop.  Two layouts of a work item's instances (LAYOUTS):

- *contiguous*: adjacent instances, all of them in one unrolled run
  without bounds checks where the work item's run lies inside the
  replication (a second copy of the body, with checks, takes the tail):
  the device compiler then merges the steps' accesses of adjacent
  elements into vector accesses.
- *strided*: instances a launch's width apart (each step's work items
  still touch consecutive elements).  Where the innermost instance id
  decides a branch (the stencil's interior test) the steps' accesses are
  not merged, and adjacent instances a work item spread each warp's load
  over per_item times the cache lines.

On the lent H200, each kernel's bandwidth against a float4 copy kernel's
(benchmarks/bandwidth_bench.py, per_item 4), strided -> contiguous: a map
over 64M floats 0.85 -> 1.08, blur 8192^2 rows 0.70 -> 0.99, columns 0.73
-> 0.90; the stencil's sweeps 0.67 -> 0.40.  (Per_item 8 contiguous ran
slower than 4 on every kernel: two vectors a step, each warp's access
spanning twice the lines.)

The default (``auto``) is contiguous unless the innermost instance id
reaches an ``if``'s condition or a loop's bounds (hpvm.ir.uniformity).
"""
from __future__ import annotations

from hpvm.ir.kernel import For, If, KernelFunction, Return, While
from hpvm.ir.uniformity import Uniformity
from hpvm.ir.visit import walk

PER_ITEM = 4
"""Instances of the innermost replication dimension one work item runs, in
a kernel that does not synchronise its work group (see the module
docstring)."""
LAYOUTS = ("auto", "contiguous", "strided")
"""How a work item's instances lie (see the module docstring)."""


class WorkItemSteps:
    """The per-item steps of an entry; the renderer supplies ``writer``,
    ``body``, ``instance_id``, ``instance_count``, ``per_item``, ``layout``
    and ``_scratch``."""

    def instance_layout(self, kernel: KernelFunction, rank: int) -> str:
        """The layout of a work item's instances of ``kernel`` (LAYOUTS; the
        module docstring says why ``auto`` decides so)."""
        if self.layout != "auto":
            return self.layout
        innermost = Uniformity(kernel, (rank - 1,))
        for stmt in walk(kernel.body):
            tests = (stmt.cond,) if isinstance(stmt, (If, While)) else \
                (stmt.start, stmt.stop) if isinstance(stmt, For) else ()
            if any(innermost.is_varying(test) for test in tests):
                return "strided"
        return "contiguous"

    def _steps_prologue(self) -> None:
        self.writer.line("const long hpvm_first = (long)get_global_id(0);")
        self.writer.line("const long hpvm_stride = (long)get_global_size(0);")

    def _strided_steps(self, kernel: KernelFunction, dim: int, per_item: int) -> None:
        """Instances ``hpvm_first + step * launch width``."""
        item = self.instance_id(dim)
        self._steps_prologue()
        self.writer.line("#pragma unroll")
        self.writer.open(f"for (int hpvm_step = 0; hpvm_step < {per_item}; hpvm_step++)")
        self.writer.line(f"const long {item} = hpvm_first + hpvm_step * hpvm_stride;")
        self.writer.line(f"if ({item} >= {self.instance_count(dim)}) break;")
        self.body(kernel.body)
        self.writer.close()

    def _contiguous_steps(self, kernel: KernelFunction, dim: int, per_item: int) -> None:
        """Instances ``hpvm_first * per_item + step``, unrolled without
        checks where they all lie inside the replication (the index then a
        visible multiple of ``per_item`` plus a constant: what lets the
        device compiler merge the steps' accesses); one instance a work
        item where the launch was not divided (its width then covers the
        replication)."""
        item, count = self.instance_id(dim), self.instance_count(dim)
        self._steps_prologue()
        self.writer.open(f"if (hpvm_stride < {count} && hpvm_first * {per_item} + {per_item} "
                         f"<= {count})")
        self.writer.line("#pragma unroll")
        self.writer.open(f"for (int hpvm_step = 0; hpvm_step < {per_item}; hpvm_step++)")
        self.writer.line(f"const long {item} = hpvm_first * {per_item} + hpvm_step;")
        self.body(kernel.body)
        self.writer.close()
        self.writer.close()
        self.writer.open("else")
        self.writer.line(f"const long hpvm_run = hpvm_stride < {count} ? {per_item} : 1;")
        self.writer.open("for (long hpvm_step = 0; hpvm_step < hpvm_run; hpvm_step++)")
        self.writer.line(f"const long {item} = hpvm_first * hpvm_run + hpvm_step;")
        self.writer.line(f"if ({item} >= {count}) break;")
        self.body(kernel.body)
        self.writer.close()
        self.writer.close()

    def _per_item(self, kernel: KernelFunction, rank: int, synchronous: bool) -> int:
        """How many instances a work item of ``kernel``'s entry runs:
        ``per_item`` where the kernel is replicated and neither
        synchronises its group (``synchronous``), keeps per-instance
        scratch copies nor returns early (its instances are then
        independent straight-line runs of the body), else one."""
        if self.per_item < 2 or not rank or self._scratch or synchronous \
                or any(isinstance(n, Return) for n in walk(kernel.body)):
            return 1
        return self.per_item
