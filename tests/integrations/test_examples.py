"""The offline framework examples run, and the model input they print shrinks with the adapter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("script", ["openai_agents_offload.py", "pydantic_ai_offload.py", "langchain_offload.py"])
def test_example_runs_and_the_model_sees_less(script: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), "--store", str(tmp_path / "store"), "--steps", "6"],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    without, with_ = (int(line.split(":")[1].split()[0].replace(",", "")) for line in done.stdout.splitlines()[:2])
    assert without > 250_000 and with_ < without / 15, done.stdout
