#!/usr/bin/env bash
# Start or stop a throwaway loopback redis-server for the test suite (no persistence, no config files).
#
#   .ci/redis.sh start [STATE_DIR]   installs redis-server (Debian package) when missing, starts it on a free
#                                    127.0.0.1 port in the background, waits for PING, prints REDIS_URL=...
#   .ci/redis.sh stop  [STATE_DIR]   stops the server started by `start` (by its pid file) and removes STATE_DIR
#
# Usage from .ci/run:  eval "$(.ci/redis.sh start)"; export REDIS_URL; trap '.ci/redis.sh stop' EXIT
# The store tests read REDIS_URL when it is set; otherwise they start their own redis-server.
set -Eeuo pipefail
trap 'rc=$?; echo "redis.sh: failed (exit $rc) at line $LINENO: $BASH_COMMAND" >&2; exit $rc' ERR

cmd=${1:-start}
state=${2:-${TMPDIR:-/tmp}/mcp-offload-ci-redis}

case "$cmd" in
start)
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "redis.sh: installing redis-server" >&2
    sudo_cmd=""
    [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq redis-server >&2
  fi
  mkdir -p "$state"
  if [ -f "$state/redis.pid" ] && kill -0 "$(cat "$state/redis.pid")" 2>/dev/null; then
    echo "REDIS_URL=redis://127.0.0.1:$(cat "$state/port")/0"
    exit 0
  fi
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no --protected-mode yes \
    --daemonize yes --pidfile "$state/redis.pid" --logfile "$state/redis.log" --dir "$state" >&2
  echo "$port" >"$state/port"
  for _ in $(seq 300); do
    if redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; then
      echo "REDIS_URL=redis://127.0.0.1:$port/0"
      exit 0
    fi
    sleep 0.1
  done
  echo "redis.sh: redis-server did not answer on port $port; log follows" >&2
  cat "$state/redis.log" >&2 || true
  exit 1
  ;;
stop)
  if [ -f "$state/redis.pid" ]; then
    pid=$(cat "$state/redis.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$state"
  ;;
*)
  echo "usage: $0 start|stop [STATE_DIR]" >&2
  exit 2
  ;;
esac
