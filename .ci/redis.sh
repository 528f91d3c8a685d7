#!/usr/bin/env bash
# Start or stop a throwaway loopback redis-server for the test suite (no persistence, no config files).
#
#   .ci/redis.sh start [STATE_DIR]   installs redis-server (Debian package) when missing, starts it on a free
#                                    127.0.0.1 port in the background, waits for PING, prints REDIS_URL=...
#   .ci/redis.sh stop  [STATE_DIR]   stops the server started by `start` (by its pid file) and removes STATE_DIR
#
# With REDIS_TLS=1 the server speaks TLS only (`--port 0 --tls-port …`, client certificates required), with a
# throwaway CA made in STATE_DIR/tls by .ci/redis-tls-certs.sh, and `start` prints
# REDIS_TLS_URL=rediss://127.0.0.1:PORT/0?ssl_ca_certs=…&ssl_certfile=…&ssl_keyfile=… (the CA and the client
# certificate ride in the URL's query, which the store passes to redis-py).
#
# Usage from .ci/run:  export_from .ci/redis.sh env -- start; trap '.ci/redis.sh stop' EXIT
# The store tests read REDIS_URL (REDIS_TLS_URL) when it is set; otherwise they start their own redis-server.
set -Eeuo pipefail
trap 'rc=$?; echo "redis.sh: failed (exit $rc) at line $LINENO: $BASH_COMMAND" >&2; exit $rc' ERR

cmd=${1:-start}
tls=${REDIS_TLS:-0}
suffix=""
[ "$tls" = 1 ] && suffix="-tls"
state=${2:-${TMPDIR:-/tmp}/mcp-offload-ci-redis$suffix}

url_of() {  # PORT
  if [ "$tls" = 1 ]; then
    echo "REDIS_TLS_URL=rediss://127.0.0.1:$1/0?ssl_ca_certs=$state/tls/ca.crt&ssl_certfile=$state/tls/client.crt&ssl_keyfile=$state/tls/client.key"
  else
    echo "REDIS_URL=redis://127.0.0.1:$1/0"
  fi
}

cli() {  # redis-cli with this server's TLS options
  if [ "$tls" = 1 ]; then
    redis-cli --tls --cacert "$state/tls/ca.crt" --cert "$state/tls/client.crt" --key "$state/tls/client.key" "$@"
  else
    redis-cli "$@"
  fi
}

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
    url_of "$(cat "$state/port")"
    exit 0
  fi
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  listen=(--port "$port")
  if [ "$tls" = 1 ]; then
    bash "$(dirname "$0")/redis-tls-certs.sh" "$state/tls"
    listen=(--port 0 --tls-port "$port" --tls-cert-file "$state/tls/server.crt" --tls-key-file "$state/tls/server.key"
      --tls-ca-cert-file "$state/tls/ca.crt" --tls-auth-clients yes)
  fi
  redis-server --bind 127.0.0.1 "${listen[@]}" --save "" --appendonly no --protected-mode yes \
    --daemonize yes --pidfile "$state/redis.pid" --logfile "$state/redis.log" --dir "$state" >&2
  echo "$port" >"$state/port"
  for _ in $(seq 300); do
    if cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; then
      url_of "$port"
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
