#!/usr/bin/env bash
# Build an optimised (-O2) libjq of the SAME version jq.py bundles, for MCP_OFFLOAD_JQ_LIBRARY / Settings.jq_library.
#
# Why: jq.py's setup.py configures its bundled libjq with CFLAGS="-fPIC -pthread", which replaces autoconf's default
# "-g -O2", so the libjq inside jq.py's wheel is built at -O0; first queries on >=10 MB JSON then miss "< 1.5x the
# jq CLI". Same source, same version (libjq 1.8.2 in jq.py 1.13.0), only the optimisation level differs.
#
# Where the source comes from: the jq.py sdist on PyPI (fetched from PyPI's index, hash-pinned for the default version),
# which ships jq's release tarball (deps/jq-<ver>.tar.gz, configure script and generated parser included: no
# autotools, bison or flex needed) with oniguruma vendored. Nothing is downloaded from anywhere else.
#
# What it builds: libjq.a + the vendored libonig.a at -O2 (as jq.py does, only optimised), linked into ONE
# self-contained shared library, <cache>/jqpy-<jq.py version>/libjq.so (no runtime deps beyond libc/libm), plus the
# matching `jq` CLI next to it (a same-version yardstick). Idempotent: when the library is there and loads, it only
# prints the line. Needs: cc (gcc), make, python3; installs gcc/make/libc6-dev via apt when cc is missing.
#
#   .ci/build-libjq.sh                 # prints MCP_OFFLOAD_JQ_LIBRARY=<path> on stdout, progress on stderr
#   export "$(.ci/build-libjq.sh)"     # typical CI use
#
# Env: PYTHON (interpreter whose installed jq.py version to match; default .venv/bin/python, else python3),
#      JQPY_VERSION (override the jq.py version), XDG_CACHE_HOME, CFLAGS_OPT (default "-O2").
# Measured: ~55 s CPU (46 s user + 9 s sys) with the pip fetch it had then; 4.5 min wall on 2 heavily loaded cores, est. 1-1.5 min idle.
set -Eeuo pipefail
# Never exit silently: a failing step says which line and command failed, and the caller's
# `export "$(…)"` then sees a non-zero status instead of an empty line.
trap 'rc=$?; echo "build-libjq: failed (exit $rc) at line $LINENO: $BASH_COMMAND" >&2; exit $rc' ERR
cd "$(dirname "$0")/.."

say() { echo "build-libjq: $*" >&2; }

DEFAULT_JQPY_VERSION=1.13.0
# sha256 of the PyPI sdist jq-1.13.0.tar.gz (pinned: checked after the download)
DEFAULT_JQPY_SHA256=e62bdddeab3b8a0a404581a7bb6f1e8c4cc6082280870031f746074f4cac52c0

PYTHON=${PYTHON:-}
if [ -z "$PYTHON" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
if [ -z "${JQPY_VERSION:-}" ]; then
  JQPY_VERSION=$("$PYTHON" -c 'import importlib.metadata as m; print(m.version("jq"))' 2>/dev/null || true)
  JQPY_VERSION=${JQPY_VERSION:-$DEFAULT_JQPY_VERSION}
fi
OPT=${CFLAGS_OPT:--O2}

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/mcp-offload/libjq"
dest="$cache_root/jqpy-$JQPY_VERSION"
lib="$dest/libjq.so"

# Load the library and run one query through its C API: proves the exports the worker uses are there.
check_lib() {
  "$PYTHON" - "$1" <<'EOF'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
for name in ("jq_init", "jq_compile_args", "jq_next", "jq_util_input_init", "jq_util_input_next_input_cb",
             "jv_parser_new", "jv_parser_set_buf", "jv_dump_string", "jq_set_input_cb", "jq_halted"):
    getattr(lib, name)
class U(ctypes.Union): _fields_ = [("ptr", ctypes.c_void_p), ("number", ctypes.c_double)]
class Jv(ctypes.Structure):
    _fields_ = [("k", ctypes.c_ubyte), ("p", ctypes.c_ubyte), ("o", ctypes.c_ushort), ("s", ctypes.c_int), ("u", U)]
lib.jq_init.restype = ctypes.c_void_p
lib.jq_compile.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
lib.jv_parse.restype = Jv; lib.jv_parse.argtypes = [ctypes.c_char_p]
lib.jq_start.argtypes = [ctypes.c_void_p, Jv, ctypes.c_int]
lib.jq_next.restype = Jv; lib.jq_next.argtypes = [ctypes.c_void_p]
lib.jv_number_value.restype = ctypes.c_double; lib.jv_number_value.argtypes = [Jv]
st = lib.jq_init()
assert lib.jq_compile(st, b'[.a[] | select(test("^x"))] | length')
lib.jq_start(st, lib.jv_parse(b'{"a": ["x1", "y", "x2"]}'), 0)
assert lib.jv_number_value(lib.jq_next(st)) == 2.0
EOF
}

if [ -f "$lib" ] && check_lib "$lib" 2>/dev/null; then
  say "present: $lib ($(cat "$dest/BUILDINFO" 2>/dev/null | head -1))"
  echo "MCP_OFFLOAD_JQ_LIBRARY=$lib"
  exit 0
fi

if ! command -v cc >/dev/null 2>&1 || ! command -v make >/dev/null 2>&1; then
  say "installing gcc make libc6-dev (apt)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq gcc make libc6-dev >&2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/mcp-offload-libjq.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$SECONDS

say "fetching the jq==$JQPY_VERSION sdist from PyPI"
# The file itself, from PyPI's simple index (its JSON form), its sha256 checked (the pin for the default version, PyPI's own otherwise).
# Not `pip download --no-binary`: that also prepares the sdist's metadata in an isolated build environment (Cython,
# setuptools), which took 129 s of a fresh CI run here for a 2 MB file.
want=$DEFAULT_JQPY_SHA256
if [ "$JQPY_VERSION" != "$DEFAULT_JQPY_VERSION" ]; then
  want=""
  say "warning: jq.py $JQPY_VERSION is not the pinned $DEFAULT_JQPY_VERSION; its sdist is checked against PyPI's hash only"
fi
mkdir -p "$work/dl"
"$PYTHON" - "$JQPY_VERSION" "$work/dl" "$want" >&2 <<'EOF'
import hashlib, json, os, ssl, sys, urllib.request
version, dest, want = sys.argv[1:4]
context = ssl.create_default_context(cafile=os.environ.get("PIP_CERT") or None)
def get(url, accept="*/*"):
    request = urllib.request.Request(url, headers={"Accept": accept})
    with urllib.request.urlopen(request, timeout=120, context=context) as answer:
        return answer.read()
# the index's JSON form (PEP 691), the API pip itself reads
index = json.loads(get("https://pypi.org/simple/jq/", "application/vnd.pypi.simple.v1+json"))
name = f"jq-{version}.tar.gz"
sdist = next(f for f in index["files"] if f["filename"] == name)
data = get(sdist["url"])
expected = want or sdist["hashes"]["sha256"]
digest = hashlib.sha256(data).hexdigest()
if digest != expected:
    sys.exit(f"build-libjq: {name} has sha256 {digest}, expected {expected}")
with open(os.path.join(dest, name), "wb") as out:
    out.write(data)
EOF
sdist=$(ls "$work"/dl/jq-"$JQPY_VERSION".tar.gz)
tar -xzf "$sdist" -C "$work"
jq_tarball=$(ls "$work/jq-$JQPY_VERSION"/deps/jq-*.tar.gz | head -1)
jq_version=$(basename "$jq_tarball" .tar.gz)  # e.g. jq-1.8.2
say "building $jq_version (from jq.py $JQPY_VERSION's sdist) with $OPT, fetch took $((SECONDS - start)) s"

tar -xzf "$jq_tarball" -C "$work"
src="$work/$jq_version"
jobs=$(nproc 2>/dev/null || echo 2)
(
  cd "$src"
  # jq.py's own flags ("-fPIC -pthread", builtin oniguruma) plus the optimisation level it leaves out.
  ./configure -q CFLAGS="$OPT -fPIC -pthread" --disable-maintainer-mode --with-oniguruma=builtin \
    --disable-docs --disable-shared >"$work/configure.log" 2>&1 || { cat "$work/configure.log" >&2; exit 1; }
  make -s -j"$jobs" >"$work/make.log" 2>&1 || { tail -50 "$work/make.log" >&2; exit 1; }
)

mkdir -p "$dest"
tmp_lib="$dest/.libjq.so.$$"
cc -shared -o "$tmp_lib" -Wl,-soname,libjq-mcp-offload.so \
  -Wl,--whole-archive "$src/.libs/libjq.a" "$src/vendor/oniguruma/src/.libs/libonig.a" -Wl,--no-whole-archive \
  -lm -pthread
check_lib "$tmp_lib"
cp "$src/jq" "$dest/.jq.$$" && mv -f "$dest/.jq.$$" "$dest/jq"
printf '%s -O: %s, from PyPI jq==%s sdist (%s), built %s\ncc: %s\n' "$jq_version" "$OPT" "$JQPY_VERSION" \
  "$(sha256sum "$sdist" | cut -c1-64)" "$(date -u +%FT%TZ)" "$(cc --version | head -1)" >"$dest/BUILDINFO"
mv -f "$tmp_lib" "$lib"  # atomic: a concurrent run sees the old state or the finished library
say "built $lib in $((SECONDS - start)) s ($jq_version, $OPT)"
echo "MCP_OFFLOAD_JQ_LIBRARY=$lib"
