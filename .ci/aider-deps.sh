#!/usr/bin/env bash
# Install Aider, the coding agent from PyPI that the wrap tests drive headless (pinned), in its own venv, then say
# where it is.
#
#   pip:  aider-chat==$AIDER_VERSION -> $PREFIX (a venv of its own: Aider pins exact versions of many packages,
#         LiteLLM and the OpenAI SDK among them, and must not move the project's own venv)
#
# Usage: export "$(bash .ci/aider-deps.sh)"   (stdout is MCP_OFFLOAD_TEST_AIDER=…/bin/aider; progress on stderr)
# PREFIX defaults to ${XDG_CACHE_HOME:-~/.cache}/mcp-offload/aider-venv (outside the repo; the tests look there too
# when MCP_OFFLOAD_TEST_AIDER is unset). Safe to run again: nothing is installed when the pin is there.
set -Eeuo pipefail
# Never exit silently: a failing step says which line and command failed, and the caller's
# `export "$(…)"` then sees a non-zero status instead of an empty line.
trap 'rc=$?; echo "aider-deps: failed (exit $rc) at line $LINENO: $BASH_COMMAND" >&2; exit $rc' ERR

AIDER_VERSION=0.86.2

prefix=${PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-offload/aider-venv}
python=${PYTHON:-python3}

source "$(dirname "$0")/pip.sh"  # make_venv, pip_install, pip_version: through uv when it is on PATH
make_venv "$prefix" "$python"
installed=$(pip_version "$prefix/bin/python" aider-chat)  # none yet: empty
if [ "$installed" != "$AIDER_VERSION" ] || [ ! -x "$prefix/bin/aider" ]; then
  pip_install "$prefix/bin/python" "aider-chat==$AIDER_VERSION"
fi
echo "aider-deps: aider-chat $(pip_version "$prefix/bin/python" aider-chat) in $prefix" >&2
echo "MCP_OFFLOAD_TEST_AIDER=$prefix/bin/aider"
