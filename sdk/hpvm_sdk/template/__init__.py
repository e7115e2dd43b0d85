"""The new-target template: a plugin distribution that is correct from the
first minute (it delegates to the reference interpreter) and shows a vendor
where the matcher, the code generator and the runtime shim go.

    from hpvm_sdk.template import new_target
    written = new_target("acme_npu", "hpvm-acme-npu")   # -> list of Paths

The files are ``files/**.tmpl`` (package data) with ``{{key}}`` fields filled
from :class:`TargetNames` and the installed hpvm; ``files/package/`` becomes
the import package (``hpvm_acme_npu/``).
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from importlib.resources import files
from pathlib import Path

from hpvm.errors import HpvmError

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
FIELD = re.compile(r"\{\{(\w+)\}\}")
TEMPLATE_SUFFIX = ".tmpl"


class TemplateError(HpvmError):
    """A target name or output folder the template cannot use."""


@dataclass(frozen=True)
class TargetNames:
    """Every name derived from a target name such as ``acme_npu``."""

    target: str          # acme_npu: what users pass in targets=[...]
    distribution: str    # hpvm-acme-npu: what pip installs
    package: str         # hpvm_acme_npu: what Python imports
    class_prefix: str    # AcmeNpu: AcmeNpuTarget, AcmeNpuDevice

    @classmethod
    def of(cls, name: str) -> "TargetNames":
        if not NAME_PATTERN.match(name or ""):
            raise TemplateError(
                f"'{name}' cannot name a target: use lower-case letters and digits, words "
                "joined by single underscores, starting with a letter (e.g. 'acme_npu')")
        return cls(name, "hpvm-" + name.replace("_", "-"), "hpvm_" + name,
                   "".join(word.capitalize() for word in name.split("_")))


def template_fields(names: TargetNames, description: str | None = None) -> dict[str, str]:
    """The values of the template's ``{{key}}`` fields."""
    from hpvm import __version__ as hpvm_version
    from hpvm.target import CORE_API_VERSION
    from hpvm_sdk import __version__ as sdk_version
    description = description or f"hpvm target '{names.target}'"
    if '"' in description or "\n" in description or "\\" in description:
        raise TemplateError("the description must be one line without quotes or backslashes")
    return {**asdict(names), "description": description, "hpvm_version": hpvm_version,
            "sdk_version": sdk_version, "api_version": str(CORE_API_VERSION)}


def template_files() -> dict[str, str]:
    """Relative output path (with ``package/`` for the import package) ->
    template text."""
    root = files(__package__) / "files"
    found: dict[str, str] = {}

    def visit(folder, prefix: str) -> None:
        for entry in folder.iterdir():
            if entry.is_dir():
                visit(entry, f"{prefix}{entry.name}/")
            elif entry.name.endswith(TEMPLATE_SUFFIX):
                found[prefix + entry.name[:-len(TEMPLATE_SUFFIX)]] = entry.read_text()
    visit(root, "")
    return dict(sorted(found.items()))


def render(text: str, fields: dict[str, str]) -> str:
    """``text`` with every ``{{key}}`` replaced by ``fields[key]``."""
    def value(match: re.Match) -> str:
        key = match.group(1)
        if key not in fields:
            raise TemplateError(f"template field '{{{{{key}}}}}' has no value")
        return fields[key]
    return FIELD.sub(value, text)


def new_target(name: str, output: str | Path | None = None, description: str | None = None,
               force: bool = False) -> list[Path]:
    """Write the plugin distribution for target ``name`` into ``output``
    (default: ``./hpvm-NAME``); returns the files written.  Refuses a
    non-empty folder unless ``force``."""
    names = TargetNames.of(name)
    fields = template_fields(names, description)
    output = Path(output) if output is not None else Path(names.distribution)
    if output.exists() and (not output.is_dir() or any(output.iterdir())) and not force:
        raise TemplateError(f"{output} already exists and is not empty: choose another "
                            "folder (-o DIR) or pass --force to overwrite the template's files")
    written = []
    for relative, text in template_files().items():
        if relative.startswith("package/"):
            relative = names.package + relative[len("package"):]
        path = output / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(text, fields))
        written.append(path)
    return written
