#!/usr/bin/env bash
# Create the course's virtual environment with the pinned packages. Called by make.
set -euo pipefail
venv=${1:-.venv}
py=${PYTHON:-python3}
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "The course needs Python 3.10 or newer as '$py' (set PYTHON=...)." >&2; exit 1
fi
if ! "$py" -m venv --help >/dev/null 2>&1 || ! "$py" -c 'import ensurepip' 2>/dev/null; then
  echo "'$py -m venv' is not available. On Debian/Ubuntu: apt-get install python3-venv" >&2; exit 1
fi
rm -rf "$venv"
"$py" -m venv "$venv"
# pip warns once per package about this machine's empty extra indexes; keep the log readable
quiet_pip() { "$venv/bin/pip" install --quiet "$@" 2> >(grep -v 'is ignored: it is neither' >&2); }
quiet_pip --upgrade pip
quiet_pip -r requirements.txt
# torchview renders through Graphviz's `dot`; graphviz-pure ships one as `graphviz-pure`.
if [ ! -e "$venv/bin/dot" ] && [ -x "$venv/bin/graphviz-pure" ]; then
  ln -s graphviz-pure "$venv/bin/dot"
fi
echo "environment ready in $venv"
