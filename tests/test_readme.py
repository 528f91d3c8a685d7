"""The in-process API example of docs/library.md (linked from the README) runs as written (in a subprocess, on a
temporary per-user store)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1] / "docs" / "library.md"


def test_the_in_process_api_example_runs(tmp_path: Path) -> None:
    section = LIBRARY.read_text().split("## The in-process retrieval API", 1)[1]
    (code,) = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert re.fullmatch(r"out_[a-z2-7]{26} JSON object \(1 key\)", lines[0])
    assert lines[-2:] == ["1", "1"]
