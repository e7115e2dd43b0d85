"""The geometry of a kernel launch: global and work-group sizes.

The work-group size of a node comes from its attribute ``group`` (one int
per replication dimension; it is semantic: local arrays are shared per
group), else from the option ``work_group`` (a tuning knob: a tuple for
every node of that rank, or a dict from node name to tuple), else, on a
GPU, a kernel that does not synchronise its group runs in groups of
GROUP work items (:func:`default_group`), else the driver chooses.  A
global size that is not a multiple of the group is padded up, the padded
instances return at once.  Kernels that synchronise their work group
(barriers, local arrays) are padded only on nodes with the attribute
``padded_groups`` (their padded instances run, as in the interpreter);
otherwise their replication must be a multiple of the group, and without
a ``group`` the whole replication is one work group.

A kernel whose work items may each run several instances of the
innermost dimension (steps.PER_ITEM) is launched with that many times
fewer work items along it where the device stays filled (:func:`work_items`).
"""
from __future__ import annotations

import math

from hpvm.errors import Diagnostic, ExecutionError, Location


def chosen_group(node_name: str, rank: int, attribute, option) -> tuple[int, ...] | None:
    """The work-group size for a node (IR dimension order) or None."""
    if attribute is not None:
        return tuple(int(g) for g in _as_tuple(attribute))
    if isinstance(option, dict):
        option = option.get(node_name)
    if option is None:
        return None
    group = tuple(int(g) for g in _as_tuple(option))
    return group if len(group) == rank else None


def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def geometry(sizes: tuple[int, ...], group: tuple[int, ...] | None, synchronous: bool,
             max_group: int, where: Location) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """``(global_size, local_size)`` in OpenCL dimension order (reversed
    IR order) for replication ``sizes``; see the module docstring."""
    if synchronous and group is None:
        group = sizes
    if group is None:
        return tuple(reversed(sizes)), None
    if len(group) != len(sizes) or any(g <= 0 for g in group):
        raise ExecutionError(Diagnostic(
            where, f"work-group size {list(group)} does not fit replication {list(sizes)}",
            "give one positive work-group size per replication dimension"))
    if math.prod(group) > max_group:
        raise ExecutionError(Diagnostic(
            where, f"a work group of {list(group)} ({math.prod(group)} instances) exceeds the "
                   f"device's maximum of {max_group}",
            "give the node a smaller 'group' attribute (or work_group option)"))
    if synchronous and any(s % g for s, g in zip(sizes, group)):
        raise ExecutionError(Diagnostic(
            where, f"the kernel synchronises its work groups (barrier or local arrays), so its "
                   f"replication {list(sizes)} must be a multiple of its group {list(group)}",
            "choose sizes divisible by the group, or a 'group' attribute that divides them"))
    padded = tuple(-(-s // g) * g for s, g in zip(sizes, group))
    return tuple(reversed(padded)), tuple(reversed(group))


ROWS, COLUMNS = 4, 64
"""The work group of a GPU kernel of two or more dimensions where nothing
chose one: rows of a group share the rows they read around theirs in the
compute unit's cache.  On the lent H200 (benchmarks/bandwidth_bench.py),
blur's columns pass went from 0.79 of the copy kernel's bandwidth with
the driver's choice to 0.86 (0.84-0.85 in 4 x 32, 8 x 32 and 2 x 128
groups); its rows pass and stencil's sweeps stayed as they were."""
GROUP = ROWS * COLUMNS
"""Work items of a default group, whatever its shape."""


def default_group(items: tuple[int, ...], max_group: int,
                  compute_units: int = 1) -> tuple[int, ...] | None:
    """The work group (IR order) of a GPU launch of ``items`` work items
    where nothing chose one: GROUP work items, in ROWS x COLUMNS where the
    innermost dimension fills COLUMNS, else in as many whole rows as fit
    (the launch padded up: launch.geometry).  Never the driver's choice:
    NVIDIA's divides the global size exactly, so a replication of an
    awkward size (backprop's 1,048,577 x 17 weights: 17 x 61,681) ran in
    groups of a few work items, 5x slower than in 15 x 17 (H200).  A
    launch too small to give each of the device's ``compute_units`` a
    group of GROUP runs in smaller groups, halved down to a warp
    (COALESCED), so that it spreads over the compute units instead of
    crowding a few (backprop's 128 x 17 partial sums, each a long chain of
    loads: 9 groups of 15 x 17 on an H200's 132 units, 128 of 1 x 17
    now).  None for an empty launch or a device whose groups hold fewer
    than GROUP."""
    count = math.prod(items)
    if not count or max_group < GROUP:
        return None
    size = GROUP
    while size > COALESCED and -(-count // size) < compute_units:
        size //= 2
    columns = min(items[-1], COLUMNS if len(items) > 1 else GROUP, size)
    if len(items) == 1:
        return (columns,)
    rows = min(items[-2], size // columns)
    return (1,) * (len(items) - 2) + (rows, columns)


RESIDENT_ITEMS = 2048
"""Work items a GPU compute unit keeps in flight (an NVIDIA SM 2048, an
AMD CU 2560): a launch divided among fewer per unit would leave it idle."""
COALESCED = 32
"""Work items that read consecutive elements in one step (a warp)."""


def work_items(sizes: tuple[int, ...], per_item: int, compute_units: int,
               stepped: int = -1, lanes: int = 1) -> tuple[int, ...]:
    """The work items of a launch over replication ``sizes`` (IR order): as
    many, or, for a kernel whose work items may each run ``per_item``
    instances of dimension ``stepped`` (the innermost, -1, or the
    outermost, 0: steps.py) and ``lanes`` of the innermost (lanes.py),
    that many times fewer along them, where RESIDENT_ITEMS are still left
    for each of the device's ``compute_units`` and, along the innermost
    dimension, a step of the work items spans a warp (COALESCED)."""
    along, inner = sizes[stepped], sizes[-1]
    innermost = stepped in (-1, len(sizes) - 1)
    if per_item < 2 or along < per_item * (COALESCED if innermost else 1) \
            or inner < lanes * COALESCED \
            or math.prod(sizes) < per_item * lanes * RESIDENT_ITEMS * compute_units:
        return sizes
    divided = list(sizes)
    divided[stepped] = -(-along // per_item)
    divided[-1] = -(-divided[-1] // lanes)
    return tuple(divided)
