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
import weakref
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
        """Port -> (index, argument) of the arguments a call may change."""
        for index, argument in enumerate(self.arguments):
            if argument.kind in ("buffer", "scalar"):
                self.positions.setdefault(argument.name, []).append((index, argument))
        self.set: dict[int, Any] = {}
        """Argument index -> the identity (_identity) of what it is set to."""
        self.given: dict[str, weakref.ref] = {}
        """Port -> the object the last call gave it (a weak reference), whose
        arguments are set: given again, nothing to look at."""

    def _prepare(self, args: dict[str, Any]) -> None:
        """Sizes, geometry, the kernel object and its arguments, for ``args``."""
        device = self.device
        sizes, group, where, padded = device.replication(self.node, self.plan, args)
        self.sizes, self.empty = sizes, math.prod(sizes) == 0
        if self.empty:
            return
        self.global_size, self.local_size = device.launch_geometry(self.plan, sizes, group,
                                                                   where, padded)
        self.kernel = device.new_kernel(self.plan, args, sizes)
        values = [device.argument_value(a, args, sizes) for a in self.arguments]
        self.kernel.set_args(*values)
        self.scratch = [v for a, v in zip(self.arguments, values) if a.kind == "scratch"]
        """The private copies' buffers, made once: an argument does not keep
        its buffer alive."""
        self.set = {index: _identity(argument, values[index])
                    for at in self.positions.values() for index, argument in at}

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
        if not first:
            self._set_again(changed)
        return cl.enqueue_nd_range_kernel(self.device.kernel_queue(), self.kernel,
                                          self.global_size, self.local_size)

    def _set_again(self, changed: dict[str, Any]) -> None:
        """Set the arguments of ``changed`` whose value differs from what
        they are set to."""
        given = self.given
        for name, port_value in changed.items():
            last = given.get(name)
            if last is not None and last() is port_value:
                continue
            for index, argument in self.positions.get(name, ()):
                value = self.device.argument_value(argument, changed, self.sizes)
                identity = _identity(argument, value)
                if identity != self.set[index]:
                    self.kernel.set_arg(index, value)
                    self.set[index] = identity
            try:
                given[name] = weakref.ref(port_value)
            except TypeError:  # a number: its bytes are compared
                given.pop(name, None)


def _identity(argument, value) -> Any:
    """What tells whether an argument set to ``value`` (as the kernel takes
    it) is set to the same again: a buffer's ``cl_mem``, a scalar's bytes."""
    return value.int_ptr if argument.kind == "buffer" else value.tobytes()
