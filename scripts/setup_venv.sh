#!/usr/bin/env bash
# Create or update the course's Python environment with the pinned packages. Called by make.
# Safe to run again (it installs what changed, it never deletes a working environment) and
# safe to run twice at once (the second waits for the first).
#
#   bash scripts/setup_venv.sh [DIR]     DIR defaults to .venv
#   TORCH=cpu                            PyTorch's CPU-only build from PyTorch's own package index
#                                        (TORCH_CPU_INDEX), instead of what pip takes by default:
#                                        on Linux, PyPI's torch is the CUDA build (about 0.5 GB plus
#                                        several GB of NVIDIA libraries); on macOS and Windows it is
#                                        the CPU build anyway
#   DIR a conda environment              (made from environment.yml: make does this when
#                                        `conda activate attention-course` is in effect) conda-forge
#                                        gave the course's packages; pip adds the two test-only ones
#                                        that environment.yml leaves out, at requirements.txt's pins
#   SETUP_DRY_RUN=1                      print the commands instead of running them (for tests)
set -euo pipefail
venv=${1:-.venv}
py=${PYTHON:-python3}
torch_flavour=${TORCH:-}
cpu_index=${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}
dry=${SETUP_DRY_RUN:-}

run() { if [ -n "$dry" ]; then echo "+ $*"; else "$@"; fi; }
pinned() { grep -E "^($1)==" requirements.txt; }  # the pins of requirements.txt, by name

case "$torch_flavour" in
  ""|cpu) ;;
  *) echo "TORCH=$torch_flavour: unknown (leave it empty for pip's default, or TORCH=cpu)" >&2; exit 2 ;;
esac

if [ -d "$venv/conda-meta" ]; then
  # playwright (the browser test), pytest-xdist and kubernetes-validate (the manifests' test);
  # their dependencies are pinned too, so no resolver run can move anything conda installed
  run "$venv/bin/python" -m pip install --quiet --no-deps \
    $(pinned 'playwright|greenlet|pytest-xdist|execnet|kubernetes-validate|importlib_resources')
  echo "conda environment ready in $venv"
  exit 0
fi

if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "The course needs Python 3.10 or newer as '$py' (set PYTHON=...)." >&2; exit 1
fi
if ! "$py" -c 'import ensurepip, venv' 2>/dev/null; then
  echo "'$py -m venv' is not available. On Debian/Ubuntu: apt-get install python3-venv" >&2; exit 1
fi
if [ -z "$dry" ]; then
  mkdir -p "$(dirname "$venv")"
  exec 9>"$venv.lock"
  flock 9
fi
if [ ! -x "$venv/bin/python" ]; then
  run "$py" -m venv "$venv"
fi
# pip warns once per package about this machine's empty extra indexes; keep the log readable
quiet_pip() { run "$venv/bin/pip" install --quiet "$@" 2> >(grep -v 'is ignored: it is neither' >&2); }
quiet_pip --upgrade pip
if [ "$torch_flavour" = cpu ]; then
  # a CUDA build already here (an earlier default install) gives way to the CPU one
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c \
      'import sys, torch; sys.exit(torch.version.cuda is None)' 2>/dev/null; then
    run "$venv/bin/pip" uninstall --yes --quiet torch
  fi
  # torch alone from PyTorch's index (its CPU wheels are named like torch-2.13.0+cpu, which
  # satisfies requirements.txt's torch==2.13.0), then everything else as usual
  quiet_pip --index-url "$cpu_index" "$(pinned torch)"
fi
quiet_pip -r requirements.txt
# torchview renders through Graphviz's `dot`; graphviz-pure ships one as `graphviz-pure`.
if [ ! -e "$venv/bin/dot" ] && { [ -n "$dry" ] || [ -x "$venv/bin/graphviz-pure" ]; }; then
  run ln -s graphviz-pure "$venv/bin/dot"
fi
echo "environment ready in $venv"
