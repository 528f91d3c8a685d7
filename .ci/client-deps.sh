#!/usr/bin/env bash
# Install the MCP client the "what the model sees" tests drive besides the SDK's (pinned), then say where it is.
#
#   npm:  @modelcontextprotocol/inspector (its --cli) -> $PREFIX/node_modules
#   (Claude Code, which they also drive, comes from .ci/agents-deps.sh: $MCP_OFFLOAD_TEST_AGENTS)
#
# Usage: export "$(bash .ci/client-deps.sh)"   (stdout is MCP_OFFLOAD_TEST_CLIENTS=…; progress goes to stderr)
# PREFIX defaults to ${XDG_CACHE_HOME:-~/.cache}/mcp-offload/clients (outside the repo; the tests look there too when
# MCP_OFFLOAD_TEST_CLIENTS is unset). Safe to run again: npm skips what is already there.
set -Eeuo pipefail
# Never exit silently: a failing step says which line and command failed, and the caller's
# `export "$(…)"` then sees a non-zero status instead of an empty line.
trap 'rc=$?; echo "client-deps: failed (exit $rc) at line $LINENO: $BASH_COMMAND" >&2; exit $rc' ERR

NPM_INSPECTOR_VERSION=2.12.0

prefix=${PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-offload/clients}
mkdir -p "$prefix"

if ! command -v npm >/dev/null 2>&1; then
  echo "client-deps: npm not found; install Node.js >= 18 to run the client tests" >&2
  exit 1
fi

npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error --save-exact \
  "@modelcontextprotocol/inspector@$NPM_INSPECTOR_VERSION" >&2

export MCP_OFFLOAD_TEST_CLIENTS="$prefix/node_modules"
for pkg in @modelcontextprotocol/inspector; do
  version=$(node -p "require('$MCP_OFFLOAD_TEST_CLIENTS/$pkg/package.json').version")
  echo "client-deps:   $pkg $version" >&2
done
echo "MCP_OFFLOAD_TEST_CLIENTS=$MCP_OFFLOAD_TEST_CLIENTS"
