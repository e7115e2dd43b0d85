"""The targets hpvm itself provides, registered like any plugin's."""
from __future__ import annotations

from .hookspec import hookimpl
from .interp.target import InterpTarget


@hookimpl
def hpvm_targets():
    return [InterpTarget()]
