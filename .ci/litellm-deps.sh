#!/usr/bin/env bash
# Install the real LiteLLM proxy the integration tests start (pinned), in its own venv, then say where it is.
#
#   pip:  litellm[proxy]==$LITELLM_VERSION -> $PREFIX (a venv of its own: LiteLLM pins many packages, some to
#         exact versions, and must not move the project's own venv), and this repo's mcp-offload beside it (as a
#         user installs `mcp-offload[litellm]` into LiteLLM's environment for the native guardrail; the tests put the
#         in-tree src/ first on the proxy's PYTHONPATH). It adds packages there and changes none of LiteLLM's.
#
# Usage: export "$(bash .ci/litellm-deps.sh)"   (stdout is MCP_OFFLOAD_TEST_LITELLM=…/bin/litellm; progress on stderr)
# PREFIX defaults to ${XDG_CACHE_HOME:-~/.cache}/mcp-offload/litellm-venv (outside the repo; the tests look there
# too when MCP_OFFLOAD_TEST_LITELLM is unset). Safe to run again: nothing is installed when the pin is there.
#
# 1.108.5 is the newest release whose `proxy` extra resolves from PyPI here (1.108.10+ pin litellm-enterprise /
# litellm-proxy-extras / litellm-proxy builds that are not published); it has the `headroom` guardrail and the
# agentic-loop hooks (`async_should_run_agentic_loop`, `async_build_agentic_loop_plan`) the tests use.
set -Eeuo pipefail
# Never exit silently: a failing step says which line and command failed, and the caller's
# `export "$(…)"` then sees a non-zero status instead of an empty line.
trap 'rc=$?; echo "litellm-deps: failed (exit $rc) at line $LINENO: $BASH_COMMAND" >&2; exit $rc' ERR

LITELLM_VERSION=1.108.5

prefix=${PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-offload/litellm-venv}
python=${PYTHON:-python3}

source "$(dirname "$0")/pip.sh"  # make_venv, pip_install, pip_version: through uv when it is on PATH
make_venv "$prefix" "$python"
installed=$(pip_version "$prefix/bin/python" litellm)  # not installed yet: empty
if [ "$installed" != "$LITELLM_VERSION" ] || [ ! -x "$prefix/bin/litellm" ]; then
  pip_install "$prefix/bin/python" "litellm[proxy]==$LITELLM_VERSION"
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
# pip reinstalls a local directory every time; uv only when told (a dependency added since the last run comes too)
if have_uv; then pip_install "$prefix/bin/python" --reinstall-package mcp-offload "$root"; else pip_install "$prefix/bin/python" "$root"; fi
echo "litellm-deps: litellm $(pip_version "$prefix/bin/python" litellm) in $prefix" >&2
echo "MCP_OFFLOAD_TEST_LITELLM=$prefix/bin/litellm"
