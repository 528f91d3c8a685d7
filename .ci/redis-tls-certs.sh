#!/usr/bin/env bash
# Make a throwaway certificate authority and the certificates a TLS redis-server and its clients use, with openssl
# (EC P-256 keys: each is made in milliseconds). Nothing is kept: the CA lives as long as DIR.
#
#   .ci/redis-tls-certs.sh DIR      writes DIR/ca.crt, DIR/server.{crt,key} (for 127.0.0.1 and localhost) and
#                                   DIR/client.{crt,key} (a client certificate for tls-auth-clients), all signed by
#                                   DIR/ca.{crt,key}; prints nothing on success
#
# SERVER_DAYS (default 30) is the server certificate's validity; -1 makes one that expired the moment it was made
# (the tests' expired-certificate case). .ci/redis.sh and .ci/redis-cluster.sh call this when REDIS_TLS=1.
set -Eeuo pipefail
trap 'rc=$?; echo "redis-tls-certs.sh: failed (exit $rc) at line $LINENO: $BASH_COMMAND" >&2; exit $rc' ERR

dir=${1:?usage: $0 DIR}
days=${SERVER_DAYS:-30}
if ! command -v openssl >/dev/null 2>&1; then
  echo "redis-tls-certs.sh: openssl is not installed (apt-get install openssl)" >&2
  exit 1
fi
mkdir -p "$dir"
cd "$dir"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

key ca.key
openssl req -x509 -new -key ca.key -out ca.crt -days 30 -subj "/CN=mcp-offload test CA $RANDOM" 2>/dev/null

sign() {  # NAME CN EXTENSIONS DAYS
  key "$1.key"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$2" 2>/dev/null
  printf '%s\n' "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days "$4" \
    -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
sign server 127.0.0.1 "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth" "$days"
sign client mcp-offload-test-client "extendedKeyUsage=clientAuth" 30
chmod 600 ./*.key
