"""Plugin discovery and target lookup by name.

Plugins declare entry points in the group ``hpvm`` (see core/hookspec.py).
:func:`get_registry` loads them all once per process; a plugin that fails to
import, or whose targets were built for another core API version, is
recorded in ``registry.failures`` and never breaks the others.  The
reference interpreter (target ``interp``) is built in and always present.

    from hpvm.registry import get_registry
    registry = get_registry()
    for info in registry.targets():
        print(info.name, info.distribution, info.availability)
    cpu = registry.target("cpu").target   # TargetError if unknown
"""
from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass
from importlib.metadata import entry_points as installed_entry_points
from typing import Any, Iterable

import pluggy

from . import builtin_targets, hookspec
from .errors import TargetError
from .passes import PassInfo, get_pass, register_pass
from .target import CORE_API_VERSION, Availability, Target
from .version import __version__

ENTRY_POINT_GROUP = hookspec.PROJECT_NAME
CORE_DISTRIBUTION = "hpvm"


@dataclass(frozen=True)
class TargetInfo:
    """A registered target and where it came from."""

    name: str
    distribution: str
    version: str
    target: Target

    @functools.cached_property
    def availability(self) -> Availability:
        """Whether the target can run here, probed when first asked (a
        probe may import a vendor's runtime: compiling for one target
        need not pay for probing the others)."""
        return _availability(self.target)


@dataclass(frozen=True)
class PluginFailure:
    """A plugin (or one of its targets) that could not be used, and why.

    ``target`` is set when the plugin loaded but one target was refused."""

    name: str
    distribution: str
    reason: str
    target: str | None = None

    def __str__(self) -> str:
        return f"plugin '{self.distribution}' ({self.name}): {self.reason}"


@dataclass(frozen=True)
class _Source:
    distribution: str
    version: str


def one_line(exc: BaseException) -> str:
    """The exception as one line: its type and the first line of its text."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _upgrade_advice(distribution: str, plugin_api: Any) -> str:
    if isinstance(plugin_api, int) and plugin_api > CORE_API_VERSION:
        return "upgrade hpvm (pip install -U hpvm)"
    return f"upgrade the plugin (pip install -U {distribution})"


class Registry:
    """The plugins of this process and the targets they provide.

    ``Registry(entry_points=[...])`` loads the given entry points instead of
    the installed ones (tests pass fake objects with ``name``, ``load()``
    and optionally ``dist``); ``builtins=False`` leaves out ``interp``."""

    def __init__(self, entry_points: Iterable | None = None, builtins: bool = True):
        self._manager = pluggy.PluginManager(hookspec.PROJECT_NAME)
        self._manager.add_hookspecs(hookspec)
        self._sources: dict[str, _Source] = {}
        self._failures: list[PluginFailure] = []
        self._target_failures: list[PluginFailure] = []
        self._targets: dict[str, TargetInfo] | None = None
        self._plugin_passes: list | None = None
        if builtins:
            self.register(builtin_targets, name="builtin",
                          distribution=CORE_DISTRIBUTION, version=__version__)
        if entry_points is None:
            entry_points = installed_entry_points(group=ENTRY_POINT_GROUP)
        for entry_point in entry_points:
            self._load_entry_point(entry_point)

    # -- plugins ---------------------------------------------------------

    def register(self, plugin: Any, name: str | None = None,
                 distribution: str | None = None, version: str = "") -> bool:
        """Register a plugin object (a module or any object with hook
        implementations).  Returns False, recording a failure, when pluggy
        rejects it or it defines a hook hpvm does not know."""
        name = name or getattr(plugin, "__name__", None) or repr(plugin)
        source = _Source(distribution or name, version)
        try:
            plugin_name = self._manager.register(plugin, name=name)
        except (ValueError, pluggy.PluginValidationError) as exc:
            self._fail(name, source.distribution, one_line(exc))
            return False
        unknown = [caller.name for caller in self._manager.get_hookcallers(plugin) or []
                   if not caller.has_spec()]
        if unknown:
            self._manager.unregister(plugin)
            self._fail(name, source.distribution, _unknown_hooks_reason(unknown))
            return False
        self._sources[plugin_name] = source
        self._targets = None
        return True

    def _load_entry_point(self, entry_point) -> None:
        distribution, version = _entry_point_source(entry_point)
        name = entry_point.name
        if distribution != name:
            name = f"{distribution}:{name}"
        try:
            plugin = entry_point.load()
        except Exception as exc:  # any import-time error of a plugin is its own
            self._fail(name, distribution, one_line(exc))
            return
        self.register(plugin, name=name, distribution=distribution, version=version)

    def _fail(self, name: str, distribution: str, reason: str) -> None:
        self._failures.append(PluginFailure(name, distribution, reason))

    @property
    def failures(self) -> list[PluginFailure]:
        """Plugins that failed to load and targets that were refused."""
        self._collect()
        return self._failures + self._target_failures

    # -- targets ---------------------------------------------------------

    def targets(self) -> list[TargetInfo]:
        """Every usable-or-not target, sorted by name (``interp`` included)."""
        return sorted(self._collect().values(), key=lambda info: info.name)

    def target(self, name: str) -> TargetInfo:
        """The target called ``name`` (``.target`` is the Target object);
        TargetError naming the installed targets (and a close match) if
        there is none, or saying why it was refused."""
        targets = self._collect()
        if name in targets:
            return targets[name]
        for failure in self._target_failures:
            if failure.target == name:
                raise TargetError(f"target '{name}' cannot be used: {failure.reason}")
        raise TargetError(_unknown_target_message(name, sorted(targets)))

    def usable(self, names) -> list:
        """The Target objects of ``names`` that are available here, in
        order; TargetError (as :meth:`target`) for a name that is none."""
        infos = [self.target(name) for name in names]
        return [info.target for info in infos if info.availability.available]

    def _collect(self) -> dict[str, TargetInfo]:
        if self._targets is None:
            self._targets = {}
            self._target_failures = []
            for impl in self._manager.hook.hpvm_targets.get_hookimpls():
                source = self._sources[impl.plugin_name]
                for target in self._call_targets_hook(impl, source):
                    self._add_target(target, impl.plugin_name, source)
        return self._targets

    def _call_targets_hook(self, impl, source: _Source) -> list:
        try:
            result = impl.function()
        except Exception as exc:  # a plugin's bug must not hide other targets
            self._refuse(impl.plugin_name, source, f"hpvm_targets() failed: {one_line(exc)}")
            return []
        if not isinstance(result, (list, tuple)):
            self._refuse(impl.plugin_name, source,
                         f"hpvm_targets() returned {type(result).__name__}, "
                         "expected a list of hpvm.target.Target")
            return []
        return list(result)

    def _add_target(self, target: Any, plugin_name: str, source: _Source) -> None:
        reason = self._refusal(target, source)
        if reason:
            self._refuse(plugin_name, source, reason, getattr(target, "name", None))
            return
        self._targets[target.name] = TargetInfo(
            target.name, source.distribution, source.version, target)

    def _refuse(self, plugin_name: str, source: _Source, reason: str,
                target: str | None = None) -> None:
        self._target_failures.append(
            PluginFailure(plugin_name, source.distribution, reason, target))

    def _refusal(self, target: Any, source: _Source) -> str:
        """Why ``target`` cannot be registered; empty if it can."""
        if not isinstance(target, Target):
            return (f"hpvm_targets() returned {type(target).__name__}, "
                    "expected an hpvm.target.Target")
        if target.api_version != CORE_API_VERSION:
            version = f" {source.version}" if source.version else ""
            return (f"plugin '{source.distribution}'{version} was built for hpvm core "
                    f"API {target.api_version}, this hpvm has API {CORE_API_VERSION}: "
                    f"{_upgrade_advice(source.distribution, target.api_version)}")
        if target.name in self._targets:
            other = self._targets[target.name].distribution
            return (f"target '{target.name}' is already provided by '{other}': "
                    f"uninstall one of the two")
        return ""

    # -- passes ----------------------------------------------------------

    def load_passes(self) -> list:
        """Make the passes of every plugin (hook ``hpvm_passes``) known to
        :mod:`hpvm.passes`; returns them.  Done once per registry."""
        if self._plugin_passes is None:
            self._plugin_passes = []
            for impl in self._manager.hook.hpvm_passes.get_hookimpls():
                source = self._sources[impl.plugin_name]
                try:
                    passes = list(impl.function() or [])
                    for info in passes:
                        _ensure_pass_registered(info)
                except Exception as exc:  # reported, like hpvm_targets failures
                    self._fail(impl.plugin_name, source.distribution,
                               f"hpvm_passes() failed: {one_line(exc)}")
                    continue
                self._plugin_passes.extend(passes)
        return list(self._plugin_passes)


def _ensure_pass_registered(info) -> None:
    if not isinstance(info, PassInfo):
        raise TypeError(f"returned {type(info).__name__}, expected hpvm.passes.PassInfo")
    try:
        known = get_pass(info.name)
    except KeyError:
        register_pass(info.name, info.options, info.description)(info.function)
        return
    if known.function is not info.function:
        raise ValueError(f"pass '{info.name}' is already registered by "
                         f"{known.function.__module__}")


def _entry_point_source(entry_point) -> tuple[str, str]:
    dist = getattr(entry_point, "dist", None)
    if dist is None:
        return entry_point.name, ""
    return dist.name, dist.version


def _availability(target: Target) -> Availability:
    try:
        availability = target.availability()
    except Exception as exc:  # a probing bug reads as "not available"
        return Availability.no(f"availability check failed: {one_line(exc)}")
    if not isinstance(availability, Availability):
        return Availability.no(f"availability() returned {type(availability).__name__}, "
                               "expected hpvm.target.Availability")
    return availability


def _unknown_hooks_reason(hooks: list[str]) -> str:
    known = [name for name in dir(hookspec) if name.startswith("hpvm_")]
    parts = []
    for hook in hooks:
        close = difflib.get_close_matches(hook, known, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        parts.append(f"'{hook}'{hint}")
    return (f"implements unknown hook {', '.join(parts)}; "
            f"hooks hpvm knows: {', '.join(known)}")


def _unknown_target_message(name: str, installed: list[str]) -> str:
    close = difflib.get_close_matches(name, installed, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return (f"unknown target '{name}': {hint}installed targets: "
            f"{', '.join(installed) or 'none'} (`hpvm targets` shows them)")


_registry: Registry | None = None


def get_registry() -> Registry:
    """The process-wide registry of installed plugins (loaded once)."""
    global _registry
    if _registry is None:
        _registry = Registry()
    return _registry


def reload() -> Registry:
    """Forget the loaded plugins and discover them again."""
    global _registry
    _registry = None
    return get_registry()
