"""The targets hpvm itself provides, registered like any plugin's."""
from __future__ import annotations

from .hookspec import hookimpl


@hookimpl
def hpvm_targets():
    # Imported here so that a broken interpreter module shows up as a plugin
    # failure in `hpvm targets` instead of breaking `import hpvm.registry`.
    from .interp.target import InterpTarget

    return [InterpTarget()]
