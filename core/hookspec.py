"""The vendor contract: the hooks a plugin implements.

A plugin is a Python distribution that declares an entry point in the group
``hpvm``; the entry point names a module (or any object) holding hook
implementations marked with :data:`hookimpl`::

    # pyproject.toml of the distribution "hpvm-mydevice"
    [project.entry-points.hpvm]
    mydevice = "hpvm_mydevice.plugin"

    # hpvm_mydevice/plugin.py
    import hpvm

    @hpvm.hookimpl
    def hpvm_targets():
        from .target import MyDeviceTarget
        return [MyDeviceTarget()]

What a target is (matcher ``claims``, code generator ``compile``, runtime
shim ``load`` returning a ``Device``, and optional ``knobs``, ``estimate``,
``passes``) is defined by :class:`hpvm.target.Target` in core/target.py;
subclass it.  ``hpvm targets`` lists what the installed plugins provide;
:mod:`hpvm.registry` finds a target by name.

Rules every hook follows:

- Hooks are called with keyword arguments; an implementation may accept any
  subset of the arguments its spec names (pluggy semantics).
- Keep module import cheap and free of device probing: import heavy
  dependencies (toolchains, vendor SDKs) inside the hook or inside the
  target's methods, so one broken toolchain cannot hide the other targets.
- An exception raised by a hook is reported as a failure of that plugin
  (``hpvm targets`` shows it); the other plugins are unaffected.
"""
from __future__ import annotations

import pluggy

PROJECT_NAME = "hpvm"
"""The pluggy project name; also the entry point group plugins declare."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
"""Decorator marking a plugin's hook implementation (also ``hpvm.hookimpl``)."""


@hookspec
def hpvm_targets() -> list:
    """Return the targets this plugin provides.

    Called once per registry (at the first ``hpvm.registry.get_registry()``
    of a process, and again after ``reload()``), before any target is looked
    up or listed.  Takes no arguments.

    Returns a list (possibly empty) of :class:`hpvm.target.Target`
    instances.  Each target has a unique ``name`` (the name users select,
    e.g. ``"gpu_opencl"``) and an ``api_version`` equal to the
    ``hpvm.target.CORE_API_VERSION`` the plugin was built against; the
    registry refuses a target whose version differs, with a message telling
    the user what to upgrade.

    Do not probe the device here: say whether the device or toolchain is
    present in ``Target.availability()``, which the registry calls later and
    which must return an ``Availability`` with a reason when it is not.

    All results are collected: every plugin's targets are registered.  Two
    targets with the same name are an error reported for the later one.
    """


@hookspec
def hpvm_passes() -> list:
    """Return the extra IR passes this plugin contributes.

    Called once per registry, the first time passes are needed
    (``hpvm passes``, ``hpvm opt``, compiling for a target); registry
    method ``load_passes()`` triggers it.  Takes no arguments.

    Returns a list (possibly empty) of :class:`hpvm.passes.PassInfo`: pass
    functions ``fn(module, **options) -> Module`` declared with
    ``@hpvm.passes.register_pass(name, options=[Option(...)])`` and looked
    up with ``hpvm.passes.get_pass(name)``, or PassInfo objects built
    directly (the registry registers those not yet registered).  Prefix the
    names with the target (``"fpga_aoc-loop-pipeline"``) so they never clash
    with core passes; a name clash is reported as a failure of the plugin.
    A target asks for its passes with ``Target.passes(options)``.

    All results are collected from every plugin.
    """
