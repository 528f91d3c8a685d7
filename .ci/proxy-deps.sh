#!/usr/bin/env bash
# Install the real third-party MCP servers the proxy tests run against (pinned), then say where they are.
#
#   npm:  @modelcontextprotocol/server-filesystem, server-everything, server-memory -> $PREFIX/node_modules
#   pip:  mcp-server-git, mcp-server-time -> the active Python environment ($PYTHON, default: python3 on PATH)
#
# Usage: export "$(PYTHON=.venv/bin/python bash .ci/proxy-deps.sh)"   (stdout is MCP_OFFLOAD_TEST_NODE_MODULES=…;
#        progress goes to stderr)
# PREFIX defaults to ${XDG_CACHE_HOME:-~/.cache}/mcp-offload/proxy-servers (outside the repo; the tests look there
# too when MCP_OFFLOAD_TEST_NODE_MODULES is unset). Safe to run again: npm/pip skip what is already there.
set -Eeuo pipefail
# Never exit silently: a failing step says which line and command failed, and the caller's
# `export "$(…)"` then sees a non-zero status instead of an empty line.
trap 'rc=$?; echo "proxy-deps: failed (exit $rc) at line $LINENO: $BASH_COMMAND" >&2; exit $rc' ERR

NPM_FILESYSTEM_VERSION=2026.8.31
NPM_EVERYTHING_VERSION=2026.8.31
NPM_MEMORY_VERSION=2026.8.31
PIP_GIT_VERSION=2026.10.19
PIP_TIME_VERSION=2026.10.19

prefix=${PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-offload/proxy-servers}
python=${PYTHON:-python3}
mkdir -p "$prefix"

if ! command -v npm >/dev/null 2>&1; then
  echo "proxy-deps: npm not found; install Node.js >= 18 to run the proxy tests against the npm servers" >&2
  exit 1
fi

npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error --save-exact \
  "@modelcontextprotocol/server-filesystem@$NPM_FILESYSTEM_VERSION" \
  "@modelcontextprotocol/server-everything@$NPM_EVERYTHING_VERSION" \
  "@modelcontextprotocol/server-memory@$NPM_MEMORY_VERSION" >&2

source "$(dirname "$0")/pip.sh"  # pip_install, pip_version: through uv when it is on PATH
pip_install "$python" "mcp-server-git==$PIP_GIT_VERSION" "mcp-server-time==$PIP_TIME_VERSION"

export MCP_OFFLOAD_TEST_NODE_MODULES="$prefix/node_modules"
echo "proxy-deps: npm servers in $MCP_OFFLOAD_TEST_NODE_MODULES" >&2
for pkg in server-filesystem server-everything server-memory; do
  version=$(node -p "require('$MCP_OFFLOAD_TEST_NODE_MODULES/@modelcontextprotocol/$pkg/package.json').version")
  echo "proxy-deps:   @modelcontextprotocol/$pkg $version" >&2
done
echo "proxy-deps: python servers: mcp-server-git $(pip_version "$python" mcp-server-git)," \
  "mcp-server-time $(pip_version "$python" mcp-server-time) in $("$python" -c 'import sys; print(sys.prefix)')" >&2
echo "MCP_OFFLOAD_TEST_NODE_MODULES=$MCP_OFFLOAD_TEST_NODE_MODULES"
