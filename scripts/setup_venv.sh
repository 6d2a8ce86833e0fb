#!/usr/bin/env bash
# Create or update the course's Python environment with the pinned packages. Called by make.
# Safe to run again (it installs what changed, it never deletes a working environment) and
# safe to run twice at once (the second waits for the first).
#
#   bash scripts/setup_venv.sh [DIR]     DIR defaults to .venv
#   PYTHON=python3.12                    the interpreter to build on: 3.10 to 3.14 (requirements.txt
#                                        pins a version of every package for each of them)
#   INSTALLER=uv|pip                     uv installs several times faster than pip. Default: uv when
#                                        it is on PATH (or UV=/path/to/uv) or once pip has put the
#                                        pinned uv into DIR from PyPI; pip where neither works.
#                                        uv does not read pip's configuration, so pip's configured
#                                        index, extra indexes, find-links and constraints are
#                                        passed to it (`pip config list`)
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
#
# A download that fails (an index that cannot be reached, a certificate refused) stops the set-up
# with the installer's own error, then one line in the course's words that says what to try.
set -euo pipefail
venv=${1:-.venv}
py=${PYTHON:-python3}
torch_flavour=${TORCH:-}
installer=${INSTALLER:-}
cpu_index=${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}
dry=${SETUP_DRY_RUN:-}
configured_index=  # the index pip's configuration names, where uv is given it
# the Pythons that PyTorch 2.13 has wheels for; `make lock` pins every package for each of them
min_python=3.10
max_python=3.14

run() { if [ -n "$dry" ]; then echo "+ $*"; else "$@"; fi; }
pinned() { grep -E "^($1)==" requirements.txt | sed 's/ *;.*//'; }  # requirements.txt's pins, by name

case "$torch_flavour" in
  ""|cpu) ;;
  *) echo "TORCH=$torch_flavour: unknown (leave it empty for pip's default, or TORCH=cpu)" >&2; exit 2 ;;
esac
case "$installer" in
  ""|uv|pip) ;;
  *) echo "INSTALLER=$installer: unknown (uv, pip, or leave it empty: uv where it works)" >&2; exit 2 ;;
esac

if [ -d "$venv/conda-meta" ]; then
  # playwright (the browser test), pytest-xdist and kubernetes-validate (the manifests' test);
  # their dependencies are pinned too, so no resolver run can move anything conda installed
  run "$venv/bin/python" -m pip install --quiet --no-deps \
    $(pinned 'playwright|greenlet|pytest-xdist|execnet|kubernetes-validate|importlib[-_]resources')
  echo "conda environment ready in $venv"
  exit 0
fi

if ! "$py" -c "import sys; sys.exit(not (${min_python/./, }) <= sys.version_info[:2] <= (${max_python/./, }))" 2>/dev/null; then
  found=$("$py" -c 'import platform; print(platform.python_version())' 2>/dev/null || echo "none")
  echo "The course needs Python $min_python to $max_python as '$py' (found: $found). Set PYTHON=..." >&2
  exit 1
fi
# uv: a given one, or one on PATH (it can also build the venv where Python's venv module is absent)
uv=${UV:-$(command -v uv || true)}
[ "$installer" = pip ] && uv=
if [ -z "$dry" ]; then
  mkdir -p "$(dirname "$venv")"
  exec 9>"$venv.lock"
  if command -v flock >/dev/null; then flock 9; fi  # util-linux; macOS has none
fi
if [ ! -x "$venv/bin/python" ]; then
  if "$py" -c 'import ensurepip, venv' 2>/dev/null; then
    run "$py" -m venv "$venv"
  elif [ -n "$uv" ]; then
    run "$uv" venv --quiet --seed --python "$py" "$venv"
  else
    echo "'$py -m venv' is not available. On Debian/Ubuntu: apt-get install python3-venv" >&2; exit 1
  fi
fi
# what an installer says when it cannot reach an index (uv's words, then pip's)
unreachable='Failed to fetch|error sending request|dns error|failed to lookup address|tcp connect error|Connection refused|timed out|Network is unreachable|No route to host|NewConnectionError|Failed to establish a new connection|Name or service not known|Temporary failure in name resolution|ConnectTimeout|ProxyError|Max retries exceeded|Could not fetch URL'
refused_certificate='certificate verify failed|invalid peer certificate|UnknownIssuer|CERTIFICATE_VERIFY_FAILED|self.signed certificate'
# The one line that explains a failed download ($1: the installer's error output; $2: what it
# fetched: "torch-cpu" from PyTorch's CPU-only index, "packages" from the package index)
explain_download() {
  local index=${configured_index:-"PyPI, or the index pip is configured with"}
  [ "$2" = torch-cpu ] && index=$cpu_index
  if grep -qiE "$refused_certificate" "$1"; then
    echo "The set-up stopped: the certificate of $index was refused (a proxy that inspects HTTPS?). Give pip the certificate to trust (pip config set global.cert FILE; uv is given it too), or use INSTALLER=pip." >&2
  elif ! grep -qiE "$unreachable" "$1"; then
    return 0  # not the network: the installer's own message says it
  elif [ "$2" = torch-cpu ]; then
    echo "The set-up stopped: PyTorch's CPU-only index ($cpu_index) cannot be reached from here. Try the default index (the same command without TORCH=cpu; on Linux it installs the CUDA build, several GB), a mirror of the CPU-only index (TORCH_CPU_INDEX=its URL), or INSTALLER=pip, which installs with pip's own configuration (proxy, certificates, index)." >&2
  else
    echo "The set-up stopped: the package index ($index) cannot be reached from here. Try a mirror (pip config set global.index-url its URL; uv is given pip's settings too), or INSTALLER=pip, which installs with pip's own configuration (proxy, certificates, index)." >&2
  fi
}
# Run an installer ($1: what it fetches, as for explain_download): its errors shown (without the
# warning pip gives once per package about this machine's empty extra indexes), and if it fails,
# the line that explains it, then the set-up stops with the installer's exit status
fetch() {
  local what=$1 log status=0
  shift
  if [ -n "$dry" ]; then run "$@"; return; fi
  log=$(mktemp)
  "$@" 2>"$log" || status=$?
  grep -v 'is ignored: it is neither' "$log" >&2 || true
  [ "$status" -eq 0 ] || explain_download "$log" "$what"
  rm -f "$log"
  [ "$status" -eq 0 ] || exit "$status"
}
quiet_pip() {
  local log status=0
  if [ -n "$dry" ]; then run "$venv/bin/pip" install --quiet "$@"; return; fi
  log=$(mktemp)
  "$venv/bin/pip" install --quiet "$@" 2>"$log" || status=$?
  grep -v 'is ignored: it is neither' "$log" >&2 || true
  rm -f "$log"
  return "$status"
}
if [ "$installer" != pip ] && [ -z "$uv" ]; then
  if [ -x "$venv/bin/uv" ]; then
    uv=$venv/bin/uv
  elif quiet_pip "$(pinned uv)"; then  # a wheel of a few MB, from PyPI
    uv=$venv/bin/uv
  elif [ "$installer" = uv ]; then
    echo "INSTALLER=uv: uv is not on PATH and pip could not install it" >&2; exit 1
  else
    echo "uv could not be installed: installing with pip (slower)" >&2
  fi
fi

# pip's configured package sources as uv options (uv reads no pip configuration): what `pip
# config list` reports, the environment (:env:) before the install section before global
uv_options() {
  local pip_python=$venv/bin/python
  # a dry run creates no venv; a venv may have no pip (made without it): the given Python's pip
  "$pip_python" -c 'import pip' 2>/dev/null || pip_python=$py
  "$pip_python" - <<'EOF'
import ast, subprocess, sys
listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                        capture_output=True, text=True).stdout
settings = {}
for line in listed.splitlines():
    key, _, value = line.partition("=")
    section, _, name = key.rpartition(".")
    rank = {":env:": 0, "install": 1, "global": 2}.get(section)
    if rank is not None and value and rank <= settings.get(name, (3, ""))[0]:
        settings[name] = (rank, ast.literal_eval(value))
value = {name: text for name, (_, text) in settings.items()}
options = []
for name in ("index-url", "extra-index-url", "find-links", "constraint"):
    for item in value.get(name, "").split():
        options += [f"--{name}", item]
if value.get("no-index", "").lower() in ("1", "true", "yes", "on"):
    options.append("--no-index")
if "extra-index-url" in value or "find-links" in value:
    options += ["--index-strategy", "unsafe-best-match"]  # pip's choice: the best version anywhere
print("\n".join(options))
if value.get("cert"):
    print("CERT=" + value["cert"])
EOF
}

if [ -n "$uv" ]; then
  uv_opts=()
  while IFS= read -r option; do
    case "$option" in
      CERT=*) [ -n "${SSL_CERT_FILE:-}" ] || run export "SSL_CERT_FILE=${option#CERT=}" ;;
      ?*) uv_opts+=("$option") ;;
    esac
  done < <(uv_options)
  for ((i = 0; i + 1 < ${#uv_opts[@]}; i++)); do
    [ "${uv_opts[i]}" = --index-url ] && configured_index=${uv_opts[i + 1]}
  done
  # --compile-bytecode: pip compiles what it installs, uv does not by default. Without the
  # bytecode, every process of a read-only grading sandbox compiles torch's modules again (three
  # times the CPU-seconds of a student's check cells; course/grading/bytecode.py)
  install() { fetch packages "$uv" pip install --quiet --compile-bytecode --python "$venv/bin/python" ${uv_opts[@]+"${uv_opts[@]}"} "$@"; }
  remove() { run "$uv" pip uninstall --quiet --python "$venv/bin/python" "$@"; }
else
  fetch packages "$venv/bin/pip" install --quiet --upgrade pip
  install() { fetch packages "$venv/bin/pip" install --quiet "$@"; }
  remove() { run "$venv/bin/pip" uninstall --yes --quiet "$@"; }
fi
if [ "$torch_flavour" = cpu ]; then
  # a CUDA build already here (an earlier default install) gives way to the CPU one
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c \
      'import sys, torch; sys.exit(torch.version.cuda is None)' 2>/dev/null; then
    remove torch
  fi
  # torch alone from PyTorch's index (its CPU wheels are named like torch-2.13.0+cpu, which
  # satisfies requirements.txt's torch==2.13.0), then everything else as usual. That index
  # replaces a configured one (uv takes one --index-url)
  if [ -n "$uv" ]; then
    kept=()
    for ((i = 0; i < ${#uv_opts[@]}; i++)); do
      if [ "${uv_opts[i]}" = --index-url ]; then i=$((i + 1)); else kept+=("${uv_opts[i]}"); fi
    done
    fetch torch-cpu "$uv" pip install --quiet --compile-bytecode --python "$venv/bin/python" ${kept[@]+"${kept[@]}"} --index-url "$cpu_index" "$(pinned torch)"
  else
    fetch torch-cpu "$venv/bin/pip" install --quiet --index-url "$cpu_index" "$(pinned torch)"
  fi
fi
install -r requirements.txt
# torchview renders through Graphviz's `dot`; graphviz-pure ships one as `graphviz-pure`.
if [ ! -e "$venv/bin/dot" ] && { [ -n "$dry" ] || [ -x "$venv/bin/graphviz-pure" ]; }; then
  run ln -s graphviz-pure "$venv/bin/dot"
fi
echo "environment ready in $venv ($([ -n "$uv" ] && echo uv || echo pip))"
