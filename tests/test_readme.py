"""The README's in-process API example runs as written (in a subprocess, on a temporary per-user store)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_api_example_in_how_it_is_built_runs(tmp_path: Path) -> None:
    section = README.read_text().split("## How it is built", 1)[1]
    (code,) = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert re.fullmatch(r"out_[a-z2-7]{26} JSON object \(1 key\)", lines[0])
    assert lines[-2:] == ["1", "1"]
