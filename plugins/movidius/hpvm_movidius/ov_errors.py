"""OpenVINO's error messages, shortened to what a user can act on."""
from __future__ import annotations

import re

_WHERE = re.compile(r"^(Exception from \S+|Check '.*' failed at \S+)$")


def message(error: Exception) -> str:
    """The lines of OpenVINO's message that say what is wrong, without the
    'Exception from src/...cpp:75:' and 'Check ... failed at' locations."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    said = [line for line in lines if not _WHERE.match(line.rstrip(":"))]
    return " ".join(said or lines) or type(error).__name__
