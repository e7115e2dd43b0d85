"""The vendor contract: pluggy project "hpvm", documented hooks."""
import inspect

import pluggy

import hpvm
from hpvm import hookspec

HOOKS = [getattr(hookspec, name) for name in dir(hookspec) if name.startswith("hpvm_")]


def test_hookimpl_marker_is_exported_from_hpvm():
    assert hpvm.hookimpl is hookspec.hookimpl
    assert hookspec.hookimpl.project_name == "hpvm"


def test_contract_declares_targets_and_passes_hooks():
    assert sorted(hook.__name__ for hook in HOOKS) == ["hpvm_passes", "hpvm_targets"]


def test_every_hook_documents_when_it_is_called_what_it_returns_and_how_results_combine():
    for hook in HOOKS:
        doc = inspect.getdoc(hook)
        assert "Called" in doc and "Returns" in doc, hook.__name__
        assert "collected" in doc or "first result" in doc, hook.__name__


def test_hookspecs_load_into_a_plugin_manager():
    manager = pluggy.PluginManager("hpvm")
    manager.add_hookspecs(hookspec)
    assert all(manager.hook.__dict__[hook.__name__].has_spec() for hook in HOOKS)
