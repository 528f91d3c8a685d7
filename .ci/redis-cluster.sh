#!/usr/bin/env bash
# Start or stop a throwaway Redis Cluster on loopback for the test suite: 3 masters + 3 replicas, no persistence,
# from Debian's redis-server (no config files of our own; each node writes only its nodes.conf into STATE_DIR).
#
#   .ci/redis-cluster.sh start [STATE_DIR]  installs redis-server when missing, starts six nodes on free 127.0.0.1
#                                           ports, joins them (redis-cli --cluster create … --cluster-replicas 1),
#                                           waits until `cluster info` says cluster_state:ok on every node and
#                                           every master has its replica in sync, prints REDIS_CLUSTER_URL=redis+cluster://…
#   .ci/redis-cluster.sh stop  [STATE_DIR]  stops the nodes started by `start` (by their pid files), removes STATE_DIR
#
# PORTS="p1 … p6" picks the six node ports (each port + 10000 is its bus port; both must be free); without it they are
# random free ones in 20000-55000.
# cluster-node-timeout is 1500 ms (env CLUSTER_NODE_TIMEOUT_MS), so the failover tests see a replica promoted within
# a few seconds of a master's death instead of the default 15 s.
# With REDIS_TLS=1 every node speaks TLS only, to clients, on the cluster bus and for replication (`--port 0
# --tls-port … --tls-cluster yes --tls-replication yes`, client certificates required), with a throwaway CA made in
# STATE_DIR/tls by .ci/redis-tls-certs.sh, and `start` prints
# REDIS_TLS_CLUSTER_URL=rediss+cluster://…?ssl_ca_certs=…&ssl_certfile=…&ssl_keyfile=…
# Usage from .ci/run: export_from .ci/redis-cluster.sh env -- start; trap '… .ci/redis-cluster.sh stop' EXIT
set -Eeuo pipefail
trap 'rc=$?; echo "redis-cluster.sh: failed (exit $rc) at line $LINENO: $BASH_COMMAND" >&2; exit $rc' ERR

cmd=${1:-start}
tls=${REDIS_TLS:-0}
suffix=""
[ "$tls" = 1 ] && suffix="-tls"
state=${2:-${TMPDIR:-/tmp}/mcp-offload-ci-redis-cluster$suffix}
timeout_ms=${CLUSTER_NODE_TIMEOUT_MS:-1500}
NODES=6

url_of() {
  local seeds=() port
  while read -r port; do seeds+=("127.0.0.1:$port"); done <"$state/ports"
  local IFS=,
  if [ "$tls" = 1 ]; then
    echo "REDIS_TLS_CLUSTER_URL=rediss+cluster://${seeds[*]}?ssl_ca_certs=$state/tls/ca.crt&ssl_certfile=$state/tls/client.crt&ssl_keyfile=$state/tls/client.key"
  else
    echo "REDIS_CLUSTER_URL=redis+cluster://${seeds[*]}"
  fi
}

tls_cli=()  # redis-cli's options for this cluster's TLS
listen() {  # PORT: a node's listening options
  if [ "$tls" = 1 ]; then
    echo --port 0 --tls-port "$1" --tls-cluster yes --tls-replication yes --tls-auth-clients yes \
      --tls-cert-file "$state/tls/server.crt" --tls-key-file "$state/tls/server.key" --tls-ca-cert-file "$state/tls/ca.crt"
  else
    echo --port "$1"
  fi
}
if [ "$tls" = 1 ]; then
  tls_cli=(--tls --cacert "$state/tls/ca.crt" --cert "$state/tls/client.crt" --key "$state/tls/client.key")
fi

healthy() {  # every node says ok, every replica is in sync, and every node knows 3 connected replicas (so the
  local port info  # slot map a client reads from any node lists each master's replica)
  while read -r port; do
    redis-cli "${tls_cli[@]}" -h 127.0.0.1 -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
    info=$(redis-cli "${tls_cli[@]}" -h 127.0.0.1 -p "$port" info replication 2>/dev/null) || return 1
    if grep -q '^role:slave' <<<"$info"; then grep -q '^master_link_status:up' <<<"$info" || return 1; fi
    info=$(redis-cli "${tls_cli[@]}" -h 127.0.0.1 -p "$port" cluster nodes 2>/dev/null) || return 1
    [ "$(grep -E ' (myself,)?slave ' <<<"$info" | grep -c ' connected')" = 3 ] || return 1
  done <"$state/ports"
}

case "$cmd" in
start)
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "redis-cluster.sh: installing redis-server" >&2
    sudo_cmd=""
    [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq redis-server >&2
  fi
  if [ -f "$state/ports" ] && healthy; then
    url_of
    exit 0
  fi
  rm -rf "$state"
  mkdir -p "$state"
  if [ -n "${PORTS:-}" ]; then  # chosen by the caller (the test suite's per-worker port allocator)
    tr ' ' '\n' <<<"$PORTS" | grep . >"$state/ports"
  else
    python3 -c '
import random, socket
def free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
ports = set()
while len(ports) < '"$NODES"':  # a node listens on port and on its cluster bus, port + 10000: both must be free
    port = random.randint(20000, 55000)
    if port not in ports and free(port) and free(port + 10000):
        ports.add(port)
print("\n".join(map(str, sorted(ports))))' >"$state/ports"
  fi
  sort -u "$state/ports" | wc -l | grep -qx "$NODES"
  [ "$tls" = 1 ] && bash "$(dirname "$0")/redis-tls-certs.sh" "$state/tls"
  while read -r port; do
    mkdir -p "$state/$port"
    # shellcheck disable=SC2046  # listen's words are options
    redis-server --bind 127.0.0.1 $(listen "$port") --save "" --appendonly no --protected-mode yes \
      --cluster-enabled yes --cluster-config-file "$state/$port/nodes.conf" --cluster-node-timeout "$timeout_ms" \
      --daemonize yes --pidfile "$state/$port/redis.pid" --logfile "$state/$port/redis.log" --dir "$state/$port" >&2
  done <"$state/ports"
  for _ in $(seq 300); do
    ready=0
    while read -r port; do
      redis-cli "${tls_cli[@]}" -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG && ready=$((ready + 1))
    done <"$state/ports"
    [ "$ready" = "$NODES" ] && break
    sleep 0.1
  done
  seeds=()
  while read -r port; do seeds+=("127.0.0.1:$port"); done <"$state/ports"
  redis-cli "${tls_cli[@]}" --cluster create "${seeds[@]}" --cluster-replicas 1 --cluster-yes >"$state/create.log" 2>&1 || {
    echo "redis-cluster.sh: redis-cli --cluster create failed; its output follows" >&2
    cat "$state/create.log" >&2
    exit 1
  }
  deadline=$((SECONDS + 120))  # a loaded machine (other test workers) takes far longer than the usual 1-3 s
  while ((SECONDS < deadline)); do
    if healthy; then
      url_of
      exit 0
    fi
    sleep 0.1
  done
  echo "redis-cluster.sh: the cluster did not reach cluster_state:ok with 3 replicas in 120 s; logs follow" >&2
  tail -n 20 "$state"/*/redis.log >&2 || true
  exit 1
  ;;
stop)
  if [ -f "$state/ports" ]; then
    while read -r port; do
      [ -f "$state/$port/redis.pid" ] && kill "$(cat "$state/$port/redis.pid" 2>/dev/null)" 2>/dev/null || true
    done <"$state/ports"
    for _ in $(seq 50); do
      alive=0
      while read -r port; do
        [ -f "$state/$port/redis.pid" ] && kill -0 "$(cat "$state/$port/redis.pid" 2>/dev/null)" 2>/dev/null && alive=1
      done <"$state/ports"
      [ "$alive" = 0 ] && break
      sleep 0.1
    done
  fi
  rm -rf "$state"
  ;;
*)
  echo "usage: $0 start|stop [STATE_DIR]" >&2
  exit 2
  ;;
esac
