#!/usr/bin/env bash
# Install the real MCP clients the "what the model sees" tests drive (pinned), then say where they are.
#
#   npm:  @modelcontextprotocol/inspector (its --cli), @anthropic-ai/claude-code (headless, against a scripted
#         Anthropic API on loopback) -> $PREFIX/node_modules
#
# Usage: export "$(bash .ci/client-deps.sh)"   (stdout is MCP_OFFLOAD_TEST_CLIENTS=…; progress goes to stderr)
# PREFIX defaults to ${XDG_CACHE_HOME:-~/.cache}/mcp-offload/clients (outside the repo; the tests look there too when
# MCP_OFFLOAD_TEST_CLIENTS is unset). Safe to run again: npm skips what is already there.
set -euo pipefail

NPM_INSPECTOR_VERSION=2.12.0
NPM_CLAUDE_CODE_VERSION=2.1.328

prefix=${PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-offload/clients}
mkdir -p "$prefix"

if ! command -v npm >/dev/null 2>&1; then
  echo "client-deps: npm not found; install Node.js >= 18 to run the client tests" >&2
  exit 1
fi

npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error --save-exact \
  "@modelcontextprotocol/inspector@$NPM_INSPECTOR_VERSION" \
  "@anthropic-ai/claude-code@$NPM_CLAUDE_CODE_VERSION" >&2

export MCP_OFFLOAD_TEST_CLIENTS="$prefix/node_modules"
for pkg in @modelcontextprotocol/inspector @anthropic-ai/claude-code; do
  version=$(node -p "require('$MCP_OFFLOAD_TEST_CLIENTS/$pkg/package.json').version")
  echo "client-deps:   $pkg $version" >&2
done
echo "MCP_OFFLOAD_TEST_CLIENTS=$MCP_OFFLOAD_TEST_CLIENTS"
