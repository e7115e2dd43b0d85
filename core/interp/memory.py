"""Buffers as the SIMT evaluator sees them: gathers, masked scatters and
atomics over all instances at once, with bounds checks that name the
buffer, the bad index and the shape.

A :class:`Storage` is one numpy array plus, for per-instance memory
(private arrays, private parameters, local arrays shared by a work group),
the flat offset of each instance's copy.  Addresses are flat (row-major)
positions inside one copy; an instance's element lives at
``lane_base[lane] + address``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hpvm.errors import Diagnostic, ExecutionError, Location
from hpvm.ir.types import NARROW_DTYPE_NAMES


@dataclass
class Storage:
    """``array`` holds the data; ``shape`` is one copy's logical shape
    (None: flat, any length); ``lane_base`` (None when all instances share
    one copy) is each instance's offset into ``array.reshape(-1)``."""

    name: str
    array: np.ndarray
    shape: tuple[int, ...] | None
    lane_base: np.ndarray | None = None
    read_only: bool = False
    flat: np.ndarray = field(init=False, repr=False)
    copy_size: int = field(init=False)
    logical_shape: tuple[int, ...] = field(init=False)

    def __post_init__(self):
        # a view: writes through ``flat`` land in ``array``; kernels read and
        # write a narrow type's elements as its storage integers
        self.flat = self.array.reshape(-1)
        if self.array.dtype.name in NARROW_DTYPE_NAMES:
            self.flat = self.flat.view(f"u{self.array.dtype.itemsize}")
        if self.shape is None:
            self.copy_size = self.array.size
            self.logical_shape = (self.copy_size,)
        else:
            self.copy_size = int(np.prod(self.shape, dtype=np.int64))
            self.logical_shape = tuple(self.shape)


@dataclass
class Lanes:
    """The instances being evaluated: ``count`` lanes with their replication
    ids (``ids[d]`` is a 1-d array over lanes), used in error messages."""

    count: int
    ids: tuple[np.ndarray, ...]
    function: str
    node: str | None = None
    graph: str | None = None

    def instance(self, lane: int) -> tuple[int, ...]:
        return tuple(int(ids[lane]) for ids in self.ids)

    def error(self, message: str, fix: str) -> ExecutionError:
        where = Location(graph=self.graph, node=self.node, function=self.function)
        return ExecutionError(Diagnostic(where, message, fix))


def flat_address(storage: Storage, indices: list, mask, lanes: Lanes, action: str):
    """The flat address (int64, 0-d or per lane) of ``storage[indices]``;
    an ExecutionError if an active lane is out of range.  Inactive lanes get
    address 0 so they can be gathered harmlessly."""
    if len(indices) == 1:
        dims = (storage.copy_size,)
    elif len(indices) == len(storage.logical_shape):
        dims = storage.logical_shape
    else:
        raise lanes.error(
            f"{action} of '{storage.name}' uses {len(indices)} indices, but it has "
            f"rank {len(storage.logical_shape)}",
            "index with one flat index or one index per dimension")
    if all(np.ndim(i) == 0 for i in indices):
        return _uniform_address(storage, [int(i) for i in indices], dims, mask, lanes, action)
    indices = [np.asarray(i).astype(np.int64, copy=False) for i in indices]
    address = indices[0]
    for index, size in zip(indices[1:], dims[1:]):
        address = address * size + index
    bad = np.zeros(np.broadcast(*indices).shape, dtype=bool)
    for index, size in zip(indices, dims):
        bad |= (index < 0) | (index >= size)
    if mask is not None:
        bad = bad & mask
    if bad.any():
        raise _out_of_range(storage, indices, dims, bad, lanes, action)
    if mask is not None and np.ndim(address) > 0:
        address = np.where(mask, address, 0)
    return address


def _uniform_address(storage: Storage, indices: list[int], dims, mask, lanes: Lanes,
                     action: str) -> int:
    """The address when every lane uses the same indices (the common case
    in sequential loops): plain Python arithmetic."""
    address = 0
    for index, size in zip(indices, dims):
        if not 0 <= index < size:
            bad = np.ones((), dtype=bool) if mask is None else mask
            raise _out_of_range(storage, indices, dims, bad, lanes, action)
        address = address * size + index
    return address


def _out_of_range(storage, indices, dims, bad, lanes: Lanes, action: str) -> ExecutionError:
    lane = int(np.argmax(bad)) if np.ndim(bad) else 0
    index = tuple(int(i[lane]) if np.ndim(i) else int(i) for i in indices)
    where = f"instance {lanes.instance(lane)}" if np.ndim(bad) else "every instance"
    shown = index[0] if len(index) == 1 else index
    bounds = list(dims) if len(dims) > 1 else f"0..{dims[0] - 1}"
    return lanes.error(
        f"{action} of '{storage.name}' at index {shown} is out of range "
        f"(bounds {bounds}) in {where}",
        "check the index expressions and the buffer sizes the node receives")


def _check_writable(storage: Storage, lanes: Lanes, action: str) -> None:
    if storage.read_only:
        raise lanes.error(f"{action} '{storage.name}', an 'in' parameter (read only)",
                          f"declare '{storage.name}' inout or out to write it")


def _lane_address(storage: Storage, address, count: int):
    if storage.lane_base is None:
        return address
    return storage.lane_base + address


def load(storage: Storage, indices: list, mask, lanes: Lanes):
    """Gather ``storage[indices]`` for every lane (0-d when uniform)."""
    address = flat_address(storage, indices, mask, lanes, "load")
    return storage.flat[_lane_address(storage, address, lanes.count)]


def store(storage: Storage, indices: list, value, mask, lanes: Lanes) -> None:
    """Scatter ``value`` to ``storage[indices]`` on the active lanes; when
    lanes collide, the highest lane wins."""
    _check_writable(storage, lanes, "store to")
    address = flat_address(storage, indices, mask, lanes, "store")
    address = _lane_address(storage, address, lanes.count)
    value = np.asarray(value).astype(storage.flat.dtype, copy=False)
    flat = storage.flat
    if mask is None:
        if np.ndim(address) == 0 and np.ndim(value) > 0:
            value = value[-1]
        flat[address] = value
        return
    address = np.broadcast_to(address, (lanes.count,))[mask]
    value = np.broadcast_to(value, (lanes.count,))[mask]
    flat[address] = value


ATOMIC_UFUNCS = {"add": np.add, "min": np.minimum, "max": np.maximum}
_FLOAT_ATOMICS = {"min": np.fmin, "max": np.fmax}


def atomic_update(op: str, storage: Storage, indices: list, value, mask, lanes: Lanes,
                  want_old: bool):
    """Apply ``storage[i] = op(storage[i], value)`` for every active lane,
    serialised in lane order; returns each lane's old value (when
    ``want_old``) as a per-lane array (inactive lanes: 0)."""
    _check_writable(storage, lanes, "atomic update of")
    address = flat_address(storage, indices, mask, lanes, "atomic update")
    address = np.broadcast_to(_lane_address(storage, address, lanes.count), (lanes.count,))
    flat = storage.flat
    value = np.broadcast_to(np.asarray(value).astype(flat.dtype, copy=False), (lanes.count,))
    active = np.ones(lanes.count, dtype=bool) if mask is None else mask
    address, value = address[active], value[active]
    ufunc = _atomic_ufunc(op, flat.dtype)
    if not want_old:
        ufunc.at(flat, address, value)
        return None
    old = _serial_old_values(ufunc, flat, address, value)
    result = np.zeros(lanes.count, dtype=flat.dtype)
    result[active] = old
    return result


def _atomic_ufunc(op: str, dtype: np.dtype):
    if dtype.kind == "f" and op in _FLOAT_ATOMICS:
        return _FLOAT_ATOMICS[op]
    return ATOMIC_UFUNCS[op]


def _serial_old_values(ufunc, flat: np.ndarray, address: np.ndarray, value: np.ndarray):
    """Old values seen by updates applied one lane after another, and the
    final values written back: a segmented scan per address (log-step)."""
    order = np.argsort(address, kind="stable")
    address_sorted, inclusive = address[order], value[order].copy()
    count = len(order)
    shift = 1
    while shift < count:
        same = address_sorted[shift:] == address_sorted[:-shift]
        combined = ufunc(inclusive[shift:], inclusive[:-shift])
        inclusive[shift:] = np.where(same, combined, inclusive[shift:])
        shift *= 2
    initial = flat[address_sorted]
    first = np.ones(count, dtype=bool)
    first[1:] = address_sorted[1:] != address_sorted[:-1]
    exclusive = np.empty_like(inclusive)
    exclusive[first] = initial[first]
    rest = ~first
    exclusive[rest] = ufunc(initial[rest], inclusive[:-1][rest[1:]])
    last = np.ones(count, dtype=bool)
    last[:-1] = address_sorted[1:] != address_sorted[:-1]
    flat[address_sorted[last]] = ufunc(initial[last], inclusive[last])
    old = np.empty_like(exclusive)
    old[order] = exclusive
    return old
