"""Plugin discovery: good plugins, broken plugins, version skew, lookup."""
from types import SimpleNamespace

import pytest

import hpvm
from hpvm import registry as registry_module
from hpvm.errors import TargetError
from hpvm.registry import Registry, get_registry, reload
from hpvm.target import CORE_API_VERSION, Availability, Target


class FakeTarget(Target):
    def __init__(self, name="fake", api_version=CORE_API_VERSION, availability=None):
        self.name = name
        self.api_version = api_version
        self._availability = availability or Availability.yes()

    def availability(self):
        return self._availability


class TargetsPlugin:
    def __init__(self, *targets):
        self.targets = list(targets)

    @hpvm.hookimpl
    def hpvm_targets(self):
        return self.targets


class FakeEntryPoint:
    def __init__(self, name, plugin=None, error=None, dist=("hpvm-fake", "0.3")):
        self.name = name
        self._plugin = plugin
        self._error = error
        self.dist = SimpleNamespace(name=dist[0], version=dist[1]) if dist else None

    def load(self):
        if self._error is not None:
            raise self._error
        return self._plugin


def test_registered_plugin_target_is_listed_with_its_distribution():
    registry = Registry(entry_points=[], builtins=False)
    registry.register(TargetsPlugin(FakeTarget("fake")), name="fake",
                      distribution="hpvm-fake", version="0.3")
    [info] = registry.targets()
    assert (info.name, info.distribution, info.version) == ("fake", "hpvm-fake", "0.3")
    assert info.availability.available


def test_entry_point_plugin_is_loaded_and_named_after_its_distribution():
    entry = FakeEntryPoint("fake", plugin=TargetsPlugin(FakeTarget("fake")))
    registry = Registry(entry_points=[entry], builtins=False)
    assert registry.target("fake").distribution == "hpvm-fake"


def test_plugin_failing_to_import_is_recorded_and_others_still_load():
    broken = FakeEntryPoint("broken", error=ImportError("No module named 'vendor_sdk'\nmore"),
                            dist=("hpvm-broken", "1.0"))
    good = FakeEntryPoint("good", plugin=TargetsPlugin(FakeTarget("good")))
    registry = Registry(entry_points=[broken, good], builtins=False)
    assert [info.name for info in registry.targets()] == ["good"]
    [failure] = registry.failures
    assert failure.distribution == "hpvm-broken"
    assert failure.reason == "ImportError: No module named 'vendor_sdk'"


def test_target_built_for_another_api_version_is_refused_with_upgrade_advice():
    old = FakeTarget("old", api_version=CORE_API_VERSION + 1)
    registry = Registry(entry_points=[FakeEntryPoint("old", TargetsPlugin(old))],
                        builtins=False)
    assert registry.targets() == []
    [failure] = registry.failures
    assert failure.target == "old"
    assert failure.reason == (
        f"plugin 'hpvm-fake' 0.3 was built for hpvm core API {CORE_API_VERSION + 1}, "
        f"this hpvm has API {CORE_API_VERSION}: upgrade hpvm (pip install -U hpvm)")


def test_target_built_for_an_older_api_asks_to_upgrade_the_plugin():
    old = FakeTarget("old", api_version=CORE_API_VERSION - 1)
    registry = Registry(entry_points=[FakeEntryPoint("old", TargetsPlugin(old))],
                        builtins=False)
    assert registry.failures[0].reason.endswith("upgrade the plugin (pip install -U hpvm-fake)")


def test_looking_up_a_refused_target_says_why():
    old = FakeTarget("old", api_version=CORE_API_VERSION + 1)
    registry = Registry(entry_points=[FakeEntryPoint("old", TargetsPlugin(old))],
                        builtins=False)
    with pytest.raises(TargetError, match="target 'old' cannot be used: plugin 'hpvm-fake'"):
        registry.target("old")


def test_unknown_target_name_lists_installed_targets_and_a_close_match():
    registry = Registry(entry_points=[], builtins=False)
    registry.register(TargetsPlugin(FakeTarget("gpu_opencl"), FakeTarget("cpu")), name="p")
    with pytest.raises(TargetError) as caught:
        registry.target("gpu_opnecl")
    assert str(caught.value) == (
        "unknown target 'gpu_opnecl': did you mean 'gpu_opencl'? installed targets: "
        "cpu, gpu_opencl (`hpvm targets` shows them)")


def test_interp_is_built_in():
    registry = Registry(entry_points=[])
    info = registry.target("interp")
    assert info.distribution == "hpvm"
    assert info.availability.available


def test_hook_that_raises_is_recorded_without_hiding_other_targets():
    class Crashing:
        @hpvm.hookimpl
        def hpvm_targets(self):
            raise RuntimeError("driver probe crashed")

    registry = Registry(entry_points=[], builtins=False)
    registry.register(Crashing(), name="crashing", distribution="hpvm-crash")
    registry.register(TargetsPlugin(FakeTarget("good")), name="good")
    assert [info.name for info in registry.targets()] == ["good"]
    assert registry.failures[0].reason == "hpvm_targets() failed: RuntimeError: driver probe crashed"


def test_second_target_with_a_taken_name_is_refused():
    registry = Registry(entry_points=[], builtins=False)
    registry.register(TargetsPlugin(FakeTarget("cpu")), name="a", distribution="hpvm-a")
    registry.register(TargetsPlugin(FakeTarget("cpu")), name="b", distribution="hpvm-b")
    assert registry.target("cpu").distribution == "hpvm-a"
    assert "already provided by 'hpvm-a'" in registry.failures[0].reason


def test_object_that_is_not_a_target_is_refused():
    registry = Registry(entry_points=[], builtins=False)
    registry.register(TargetsPlugin("cpu"), name="p", distribution="hpvm-p")
    assert registry.targets() == []
    assert "returned str, expected an hpvm.target.Target" in registry.failures[0].reason


def test_misspelt_hook_is_rejected_with_a_suggestion():
    class Misspelt:
        @hpvm.hookimpl
        def hpvm_target(self):
            return []

    registry = Registry(entry_points=[], builtins=False)
    assert not registry.register(Misspelt(), name="misspelt")
    assert "did you mean 'hpvm_targets'?" in registry.failures[0].reason


def test_availability_check_that_raises_reads_as_unavailable():
    class Probing(FakeTarget):
        def availability(self):
            raise OSError("libvendor.so: cannot open shared object file")

    registry = Registry(entry_points=[], builtins=False)
    registry.register(TargetsPlugin(Probing("probe")), name="p")
    availability = registry.target("probe").availability
    assert not availability.available
    assert "OSError: libvendor.so" in availability.reason


def test_a_target_is_probed_once_and_only_when_its_availability_is_asked():
    probed = []

    class Counting(FakeTarget):
        def availability(self):
            probed.append(self.name)
            return Availability.yes()

    registry = Registry(entry_points=[], builtins=False)
    registry.register(TargetsPlugin(Counting("used"), Counting("other")), name="p")
    assert [info.name for info in registry.targets()] == ["other", "used"] and probed == []
    assert registry.target("used").availability.available
    assert registry.target("used").availability.available
    assert probed == ["used"]


def test_plugin_passes_become_known_to_the_pass_manager():
    from hpvm.passes import PassInfo, get_pass, unregister_pass

    def identity(module):
        return module

    info = PassInfo("fake-identity", "does nothing", (), identity)

    class PassPlugin:
        @hpvm.hookimpl
        def hpvm_passes(self):
            return [info]

    registry = Registry(entry_points=[], builtins=False)
    registry.register(PassPlugin(), name="passes")
    try:
        assert registry.load_passes() == [info]
        assert get_pass("fake-identity").function is identity
    finally:
        unregister_pass("fake-identity")


def test_get_registry_is_cached_until_reload():
    first = get_registry()
    assert get_registry() is first
    assert reload() is not first
    assert registry_module.get_registry() is not first


def test_refusals_are_reported_once_after_more_plugins_register():
    old = FakeTarget("old", api_version=CORE_API_VERSION + 1)
    registry = Registry(entry_points=[FakeEntryPoint("old", TargetsPlugin(old))],
                        builtins=False)
    registry.targets()
    registry.register(TargetsPlugin(FakeTarget("new")), name="new")
    assert [info.name for info in registry.targets()] == ["new"]
    assert len(registry.failures) == 1
