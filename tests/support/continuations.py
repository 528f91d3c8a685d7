"""The exact call a cut answer ends with (`[… continue with read_large_output(handle='out_…', start_line=N,
end_line=M)]`), parsed into the arguments that follow it."""

from __future__ import annotations

import re
from typing import Any

CONTINUE = re.compile(
    r"continue with read_large_output\(handle='(?P<handle>out_[a-z0-9]+)', (?P<first>start_line|start)=(?P<start>\d+), "
    r"(?P<last>end_line|end)=(?P<end>\d+)\)\]\Z"
)


def continuation(answer: str) -> dict[str, Any] | None:
    """The arguments of the read that continues `answer`, or None when it is whole."""
    found = CONTINUE.search(answer)
    if found is None:
        return None
    return {
        "handle": found["handle"],
        found["first"]: int(found["start"]),
        found["last"]: int(found["end"]),
    }


def shown_part(answer: str) -> str:
    """What an answer shows of its range: a read's text without its header line and bracketed tail lines; any other
    answer without its closing continuation (and the newline before it, for an answer cut inside a line)."""
    found = CONTINUE.search(answer)
    if found is None:
        return answer
    start = answer.rfind("[", 0, found.start())
    return answer[:start]
