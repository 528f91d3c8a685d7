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

[ -x "$prefix/bin/python" ] || "$python" -m venv "$prefix"
installed=$("$prefix/bin/python" -m pip show aider-chat 2>/dev/null | awk '/^Version:/ {print $2}' || true)  # none yet: empty
if [ "$installed" != "$AIDER_VERSION" ] || [ ! -x "$prefix/bin/aider" ]; then
  "$prefix/bin/python" -m pip install --quiet --disable-pip-version-check "aider-chat==$AIDER_VERSION" >&2
fi
echo "aider-deps: aider-chat $("$prefix/bin/python" -m pip show aider-chat | awk '/^Version:/ {print $2}') in $prefix" >&2
echo "MCP_OFFLOAD_TEST_AIDER=$prefix/bin/aider"
