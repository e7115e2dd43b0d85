"""A kernel node's launch prepared once, for the static schedule's runs of
the same shapes (``Device.bind``).

Setting a kernel's arguments is most of what a launch costs the host: on
the lent H200, ``set_args`` of blur's kernels (8 arguments) took 85 us a
call of 230, against 40 us of the kernels themselves.  A bound launch
has a kernel object of its own, every argument set once, and the global
and local sizes worked out; a call sets again only the arguments of
ports given another buffer (another ``cl_mem``) or another scalar value
(other bytes), then enqueues.  Its own kernel object is used by one
thread at a time (a schedule is taken by one run), so no lock is needed.
"""
from __future__ import annotations

import math
from typing import Any

from hpvm.errors import Location
from hpvm.target import NodeRef, port_let_go


class BoundLaunch:
    """The launcher ``OpenCLDevice.bind`` returns (see the module text);
    prepared at its first call, when every port has its value (the
    schedule binds some ports before their buffers exist)."""

    def __init__(self, device, node: NodeRef, plan, args: dict[str, Any]):
        self.device, self.node, self.plan = device, node, plan
        self.arguments = device.arguments[plan.entry]
        self.ports = tuple(args)
        self.bound = dict(args)
        self.kernel = None
        self.empty = False
        """Whether the replication has no instance (nothing to launch)."""
        self.positions: dict[str, list[tuple[int, Any]]] = {}
        for index, argument in enumerate(self.arguments):
            if argument.kind in ("buffer", "scalar"):
                self.positions.setdefault(argument.name, []).append((index, argument))

    def _prepare(self, args: dict[str, Any]) -> None:
        """Sizes, geometry, the kernel object and its arguments, for ``args``."""
        device = self.device
        sizes, group, where, padded = device.replication(self.node, self.plan, args)
        self.sizes, self.empty = sizes, math.prod(sizes) == 0
        if self.empty:
            return
        self.global_size, self.local_size = device.launch_geometry(self.plan, sizes, group,
                                                                   where, padded)
        self.kernel = device.new_kernel(self.plan.entry, args)
        values = [device.argument_value(a, args, sizes) for a in self.arguments]
        self.kernel.set_args(*values)
        self.scratch = [v for a, v in zip(self.arguments, values) if a.kind == "scratch"]
        """The private copies' buffers, made once: an argument does not keep
        its buffer alive."""
        self.set = {name: self._identity(at[0][1], args[name])
                    for name, at in self.positions.items()}

    def _identity(self, argument, value) -> Any:
        """What tells whether the argument set for a port is ``value``'s:
        a buffer's ``cl_mem``, a scalar's bytes as the kernel takes it."""
        if argument.kind == "buffer":
            return value.buffer.int_ptr
        return self.device.argument_value(argument, {argument.name: value}, self.sizes).tobytes()

    def __call__(self, changed: dict[str, Any]):
        import pyopencl as cl
        first = self.kernel is None and not self.empty
        given = {**self.bound, **changed} if first else None
        for name in changed:
            self.bound.pop(name, None)
        if len(self.bound) + len(changed) != len(self.ports):
            missing = [p for p in self.ports if p not in self.bound and p not in changed]
            raise port_let_go(Location(graph=self.node.graph, node=self.node.node,
                                       port=missing[0]))
        if first:
            self._prepare(given)
        if self.empty:
            return None
        for name, value in changed.items():
            at = self.positions.get(name)
            if at is None or first:
                continue
            identity = self._identity(at[0][1], value)
            if identity != self.set[name]:
                for index, argument in at:
                    self.kernel.set_arg(index, self.device.argument_value(argument, changed,
                                                                          self.sizes))
                self.set[name] = identity
        return cl.enqueue_nd_range_kernel(self.device.kernel_queue(), self.kernel,
                                          self.global_size, self.local_size)
