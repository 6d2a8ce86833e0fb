#!/usr/bin/env bash
# Create or update the course's virtual environment with the pinned packages. Called by make.
# Safe to run again (it installs what changed, it never deletes a working environment) and
# safe to run twice at once (the second waits for the first).
set -euo pipefail
venv=${1:-.venv}
py=${PYTHON:-python3}
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "The course needs Python 3.10 or newer as '$py' (set PYTHON=...)." >&2; exit 1
fi
if ! "$py" -c 'import ensurepip, venv' 2>/dev/null; then
  echo "'$py -m venv' is not available. On Debian/Ubuntu: apt-get install python3-venv" >&2; exit 1
fi
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
fi
# pip warns once per package about this machine's empty extra indexes; keep the log readable
quiet_pip() { "$venv/bin/pip" install --quiet "$@" 2> >(grep -v 'is ignored: it is neither' >&2); }
quiet_pip --upgrade pip
quiet_pip -r requirements.txt
# torchview renders through Graphviz's `dot`; graphviz-pure ships one as `graphviz-pure`.
if [ ! -e "$venv/bin/dot" ] && [ -x "$venv/bin/graphviz-pure" ]; then
  ln -s graphviz-pure "$venv/bin/dot"
fi
echo "environment ready in $venv"
