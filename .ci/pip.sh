# Sourced by .ci/run and the .ci/*-deps.sh scripts: Python installs through `uv pip` when uv is on PATH (.ci/run puts
# it there, from PyPI, first thing), else through pip.
#
# Why uv: on this 2-core machine, with an empty cache, `pip install -e ".[test]"` into a fresh venv took 644 s wall and
# 81 s of CPU; `uv pip install` of the same took 41 s wall and 5.5 s of CPU (plus 22 s / 2.4 s to install uv itself),
# both measured the same minute. pip downloads one file at a time and byte-compiles every module; uv downloads in
# parallel and compiles nothing (a module is compiled on its first import instead). A fresh CI machine installs five
# environments (the project's, the wheel's demo venv, LiteLLM's, Aider's, the proxy tests' servers): most of its
# install time was pip.
#
#   make_venv DIR [PYTHON]        a venv at DIR unless one is there (no pip in it when uv made it)
#   pip_install PYTHON ARG…       install into PYTHON's environment, quietly
#   pip_version PYTHON PACKAGE    the installed version of PACKAGE there, or nothing

have_uv() { command -v uv >/dev/null 2>&1; }

make_venv() {
  local dir=$1 python=${2:-python3}
  [ -x "$dir/bin/python" ] && return 0
  if have_uv; then
    uv venv --quiet --python "$python" "$dir" >&2
  else
    "$python" -m venv "$dir"
  fi
}

pip_install() {
  local python=$1
  shift
  if have_uv; then
    uv pip install --quiet --python "$python" "$@" >&2
  else
    "$python" -m pip install --quiet --disable-pip-version-check "$@" >&2
  fi
}

pip_version() {
  local python=$1 package=$2
  if have_uv; then
    uv pip show --python "$python" "$package" 2>/dev/null | awk '/^Version:/ {print $2}' || true
  else
    "$python" -m pip show "$package" 2>/dev/null | awk '/^Version:/ {print $2}' || true
  fi
}
