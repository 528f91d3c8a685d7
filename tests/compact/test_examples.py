"""The offline agent-loop examples run, and compaction shrinks their history as the README says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("script", ["anthropic_loop.py", "openai_loop.py"])
def test_example_runs_and_compacts(script: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), "--store", str(tmp_path / "store"), "--steps", "6"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    numbers = [int(line.split(":")[1].split()[0].replace(",", "")) for line in done.stdout.splitlines()[:2]]
    without, with_ = numbers
    assert without > 50_000 and with_ < without / 10, done.stdout
