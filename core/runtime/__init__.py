"""HPVM-RT: placement, compilation to Executables, scheduling, the memory
tracker and streaming."""
from .compiler import as_module
from .executable import Executable, Launch, compile
from .execution import NodeRecord, Report
from .placement import Placement, plan

__all__ = ["compile", "as_module", "Executable", "Launch", "Report", "NodeRecord",
           "Placement", "plan"]
