"""The `.ci/*-deps.sh` scripts on a fresh machine: an empty cache and registries that cannot be reached.

`.ci/run` exports the one `NAME=value` line each prints. On a fresh machine `litellm-deps.sh` once died under
`set -e` before installing anything (its `pip show` failed when nothing was installed yet) and said nothing, so
`.ci/run` ran `export ''`. Every script must now either print its variable line or exit non-zero with a message that
names it; never a silent exit, never an empty line with status 0. The registries are pointed at a closed loopback
port so the install steps fail fast, the way a fresh machine without network would.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from support import free_port

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.name for p in (ROOT / ".ci").glob("*-deps.sh"))
LINE = re.compile(r"^[A-Z_][A-Z0-9_]*=\S+$")


def test_every_deps_script_is_covered() -> None:
    assert {"agents-deps.sh", "aider-deps.sh", "client-deps.sh", "litellm-deps.sh", "proxy-deps.sh"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_empty_cache_and_no_registry_fails_loudly_or_prints_the_line(script: str, tmp_path: Path) -> None:
    if shutil.which("npm") is None and script not in ("litellm-deps.sh", "aider-deps.sh"):
        pytest.skip("npm is not installed")
    dead = f"http://127.0.0.1:{free_port()}/"
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PIP_INDEX_URL": dead,
        "PIP_RETRIES": "0",
        "PIP_TIMEOUT": "2",
        "PIP_NO_CACHE_DIR": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        # the scripts install through uv when it is on PATH (.ci/pip.sh): the same dead registry for it
        "UV_DEFAULT_INDEX": dead,
        "UV_HTTP_TIMEOUT": "2",
        "UV_HTTP_RETRIES": "0",
        "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
        "UV_PYTHON_DOWNLOADS": "never",
        "npm_config_registry": dead,
        "npm_config_fetch_retries": "0",
        "npm_config_cache": str(tmp_path / "npm-cache"),
        "PYTHON": str(tmp_path / "venv" / "bin" / "python"),
    }
    # without pip (5 s of CPU less each): the scripts install through uv, which .ci/run puts on PATH
    subprocess.run(["python3", "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    proc = subprocess.run(
        ["bash", str(ROOT / ".ci" / script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    out = proc.stdout.strip()
    if proc.returncode == 0:
        assert LINE.match(out.splitlines()[-1] if out else ""), f"{script} exited 0 without its line: {out!r}"
    else:
        name = script.removesuffix(".sh")
        assert f"{name}:" in proc.stderr, f"{script} failed silently (exit {proc.returncode}): {proc.stderr!r}"
        assert not out, f"{script} failed but printed {out!r} on stdout"
