#!/usr/bin/env bash
# The programs the tests need beyond Python, from Debian's packages (called by `make test`):
#   chromium    /usr/bin/chromium, the browser that tests/test_browser.py drives with pip's
#               playwright (playwright never downloads a browser here)
#   bubblewrap  `bwrap`, the sandbox the grader runs each student's notebooks in
#   fonts-noto-cjk  a CJK font, so that the Chinese figures draw real glyphs (the Chinese build
#               and tests/test_fonts.py fail without one); left alone where fontconfig already
#               lists a Chinese font
#   slurm-wlm, munge   a one-node Slurm that tests/test_slurm.py starts to run the instructors'
#               guide's job array (as root only: slurmd runs jobs as their user, so the test
#               skips for anyone else, and nothing is installed for it then; never for the
#               student release, which has no Slurm recipe, docs/cluster/submit.sh)
# Installs what is missing with apt-get (through sudo when not root). Where it cannot (no
# apt-get, no root and no sudo that works without a terminal), it stops at once and prints the
# one command that fixes it. Silent and fast when all are there; safe to run again.
#
# For its tests: COURSE_CHROMIUM (as tests/browser.py) names the browser file to look for,
# COURSE_CJK_FONT the font file (Debian's Noto Sans CJK) looked for where fc-list is not on PATH,
# and PATH decides which apt-get, sudo, id, bwrap and fc-list it finds.
set -euo pipefail

chromium=${COURSE_CHROMIUM:-/usr/bin/chromium}
cjk_font=${COURSE_CJK_FONT:-/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc}
has_cjk_font() {
  [ -e "$cjk_font" ] && return 0
  command -v fc-list >/dev/null 2>&1 && [ -n "$(fc-list :lang=zh family 2>/dev/null | head -1)" ]
}
missing=()
[ -x "$chromium" ] || missing+=(chromium)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
has_cjk_font || missing+=(fonts-noto-cjk)
# the daemons live in /usr/sbin, which a PATH may leave out
has() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
slurm_missing() { ! { has slurmctld && has slurmd && has sbatch && has munged; }; }
course_dir=$(cd "${BASH_SOURCE[0]%/*}/.." && pwd)
if [ "$(id -u)" = 0 ] && [ -e "$course_dir/docs/cluster/submit.sh" ] && slurm_missing; then
  missing+=(slurm-wlm munge)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

fix="sudo apt-get update && sudo apt-get install -y ${missing[*]}"
give_up() {
  {
    echo "The tests need Debian's ${missing[*]} (the browser test, the grader's sandbox, Chinese figures, Slurm): $1"
    echo "Install with:  $fix"
    echo "then run the same command again."
  } >&2
  exit 1
}

command -v apt-get >/dev/null 2>&1 \
  || give_up "no apt-get here. Install the packages named ${missing[*]} with your system's package manager."
if [ "$(id -u)" = 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
elif command -v sudo >/dev/null 2>&1 && [ -t 0 ]; then
  as_root=(sudo)  # asks for the password on this terminal
else
  give_up "installing them needs root, and sudo cannot ask for a password here."
fi

echo "installing Debian's ${missing[*]} for the tests (apt-get, once per machine)"
export DEBIAN_FRONTEND=noninteractive
# wait for another apt (a second `make test`, unattended upgrades) instead of failing on its lock
apt=(apt-get -o DPkg::Lock::Timeout=120)
"${as_root[@]}" "${apt[@]}" update -qq || give_up "apt-get update failed (see above)."
"${as_root[@]}" "${apt[@]}" install -y -qq "${missing[@]}" >/dev/null \
  || give_up "apt-get install failed (see above)."

[ -x "$chromium" ] || give_up "apt-get installed chromium, but $chromium is still missing."
command -v bwrap >/dev/null 2>&1 || give_up "apt-get installed bubblewrap, but bwrap is not on PATH."
has_cjk_font || give_up "apt-get installed fonts-noto-cjk, but $cjk_font is still missing."
case " ${missing[*]} " in
  *" slurm-wlm "*) slurm_missing && give_up "apt-get installed slurm-wlm and munge, but slurmctld, slurmd, sbatch or munged is missing." ;;
esac
echo "installed: $("$chromium" --version 2>/dev/null | head -1 || echo chromium), $(command -v bwrap), a CJK font"
