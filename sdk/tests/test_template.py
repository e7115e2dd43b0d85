"""The new-target template: names, files, and a generated target that works
before a vendor changes a line."""
import importlib
import py_compile
import sys

import pytest

from hpvm.registry import Registry
from hpvm.target import CORE_API_VERSION
from hpvm_sdk.conformance.harness import TargetUnderTest
from hpvm_sdk.conformance.programs import by_name
from hpvm_sdk.template import TargetNames, TemplateError, new_target, render

EXPECTED_FILES = {
    "README.md", "pyproject.toml", "tests/test_conformance.py", "tests/test_target.py",
    "hpvm_acme_npu/__init__.py", "hpvm_acme_npu/plugin.py", "hpvm_acme_npu/target.py",
    "hpvm_acme_npu/matcher.py", "hpvm_acme_npu/codegen.py", "hpvm_acme_npu/device.py",
}


@pytest.fixture
def generated(tmp_path):
    folder = tmp_path / "hpvm-acme-npu"
    new_target("acme_npu", folder, "ACME neural processing unit")
    return folder


@pytest.fixture
def generated_plugin(generated, monkeypatch):
    """The generated package imported from its folder (not pip-installed)."""
    monkeypatch.syspath_prepend(str(generated))
    yield importlib.import_module("hpvm_acme_npu.plugin")
    for name in [m for m in sys.modules if m.startswith("hpvm_acme_npu")]:
        del sys.modules[name]


@pytest.fixture
def under_test(generated_plugin):
    registry = Registry()
    registry.register(generated_plugin, name="acme", distribution="hpvm-acme-npu")
    return TargetUnderTest("acme_npu", registry=registry)


def test_names_are_derived_from_the_target_name():
    assert TargetNames.of("acme_npu") == TargetNames("acme_npu", "hpvm-acme-npu",
                                                     "hpvm_acme_npu", "AcmeNpu")


@pytest.mark.parametrize("name", ["", "Acme", "1acme", "acme-npu", "acme__npu", "acme_", "a b"])
def test_names_that_cannot_be_python_identifiers_are_refused(name):
    with pytest.raises(TemplateError, match="cannot name a target"):
        TargetNames.of(name)


def test_template_writes_the_plugin_distribution(generated):
    written = {str(p.relative_to(generated)) for p in generated.rglob("*") if p.is_file()}
    assert written == EXPECTED_FILES


def test_every_template_field_is_filled(generated):
    for path in generated.rglob("*"):
        if path.is_file():
            assert "{{" not in path.read_text(), path


def test_generated_python_compiles(generated):
    for path in generated.rglob("*.py"):
        py_compile.compile(str(path), doraise=True)


def test_pyproject_declares_the_hpvm_entry_point(generated):
    text = (generated / "pyproject.toml").read_text()
    assert '[project.entry-points.hpvm]\nacme_npu = "hpvm_acme_npu.plugin"' in text
    assert 'name = "hpvm-acme-npu"' in text


def test_generated_target_states_the_core_api_version(generated):
    assert f"api_version = {CORE_API_VERSION}\n" in (generated / "hpvm_acme_npu/target.py").read_text()


def test_a_non_empty_folder_is_refused_without_force(generated):
    with pytest.raises(TemplateError, match="not empty"):
        new_target("acme_npu", generated)
    assert len(new_target("acme_npu", generated, force=True)) == len(EXPECTED_FILES)


def test_descriptions_that_would_break_the_files_are_refused(tmp_path):
    with pytest.raises(TemplateError, match="one line"):
        new_target("acme", tmp_path / "x", 'say "hi"')


def test_unknown_template_fields_are_an_error():
    with pytest.raises(TemplateError, match="nope"):
        render("{{nope}}", {})


def test_generated_target_registers_and_is_available(under_test):
    assert under_test.info.distribution == "hpvm-acme-npu"
    assert under_test.availability.available


@pytest.mark.parametrize("program", ["matmul", "lenet_tiny", "pipeline", "workgroup_sum",
                                     "mixed_types"])
def test_generated_target_computes_what_the_interpreter_computes(under_test, program):
    under_test.check_program(by_name(program))


def test_generated_target_shares_a_program_with_cpu(under_test):
    exe = under_test.compile(by_name("blur").load(), targets=["acme_npu", "cpu"])
    assert exe.placement.targets == {"@main.rows": "cpu", "@main.columns": "acme_npu"}
