# The course's commands. `make lab` and `make test` set up everything they need from nothing.
PYTHON ?= python3
# TORCH=cpu: PyTorch's CPU-only build from PyTorch's own index (pip's default on Linux is the
# CUDA build, several GB); INSTALLER=pip or uv (default: uv where it is or can be installed, pip
# otherwise); see scripts/setup_venv.sh
TORCH  ?=
INSTALLER ?=
ifeq ($(CONDA_DEFAULT_ENV),attention-course)
# inside `conda activate attention-course` (environment.yml) the commands use that environment
VENV   := $(CONDA_PREFIX)
STAMP  := $(VENV)/.attention-course-installed
else
VENV   := .venv
STAMP  := $(VENV)/.installed$(if $(TORCH),-$(TORCH))
endif
BIN    := $(VENV)/bin
# the venv's bin first, so notebooks and tests find its `dot` (graphviz-pure)
export PATH := $(abspath $(BIN)):$(PATH)
export PYTHONPATH := $(CURDIR)
LAB_ARGS ?=
# Jupyter refuses to run as root (containers, CI) unless told
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)
# pytest-xdist workers: one per core and one more, at most 4 (many tests wait on kernels, browsers
# and sandboxes; the extra worker computes meanwhile). PYTEST_ARGS=-n0 runs everything in one process
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$(( n + 1 < 4 ? n + 1 : 4 )))
PYTEST_ARGS ?= -n $(TEST_WORKERS)
# The Chinese edition: `make lab LANG=zh` or COURSE_LANG=zh_CN (LANG counts only when given on the
# command line: the LANG of the shell is a locale, and a Chinese locale is no request for it)
COURSE_LANG ?=
ifeq ($(origin LANG),command line)
COURSE_LANG := $(LANG)
endif
ZH := $(if $(filter zh%,$(COURSE_LANG)),zh)
# `LANG=zh` is no locale: the commands it starts get a real one
LOCALE := $(if $(filter command line,$(origin LANG)),LANG=C.UTF-8 )

.PHONY: lab test system-packages venv check playground notebooks stubs reference grade grade-merge collect handback handout screenshots lock clean messages

# The lessons' stored outputs are the course's own (executed against the reference code): trusting them lets
# JupyterLab draw each widget from its stored state before its cell runs (untrusted, it shows a
# line asking to run the cell). Trust is kept in Jupyter's data folder, by content.
lab: $(STAMP)
	@$(BIN)/jupyter trust notebooks/[0-9][0-9]_*.ipynb notebooks/zh/[0-9][0-9]_*.ipynb >/dev/null
	$(LOCALE)$(if $(ZH),COURSE_LANG=zh_CN )$(BIN)/jupyter lab --ServerApp.root_dir=$(CURDIR) $(ROOT_FLAG) $(LAB_ARGS) notebooks/$(if $(ZH),zh/)00_start_here.ipynb

test: $(STAMP) system-packages
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Debian's chromium (the browser test) and bubblewrap (the grader's sandbox), once per machine.
system-packages:
	bash scripts/system_packages.sh

venv: $(STAMP)

$(STAMP): requirements.txt scripts/setup_venv.sh
	PYTHON=$(PYTHON) TORCH=$(TORCH) INSTALLER=$(INSTALLER) bash scripts/setup_venv.sh $(VENV)
	touch $@

# A table of every exercise: PASS, FAIL, BLOCKED (by a failing exercise it calls) or TODO, then
# the whole message of each FAIL (exit 0). ONLY=01.scaled_scores: that check's whole message;
# HIDDEN=1: also the hidden-input kinds of cases on a public seed, as the grader runs them.
# LANG=zh: in Chinese.
check: $(STAMP)
	$(LOCALE)$(if $(ZH),COURSE_LANG=zh_CN )$(BIN)/python -m course.progress --warm $(if $(ONLY),--only $(ONLY)) $(if $(HIDDEN),--hidden)

# Every widget of the course on one page, served by Voilà; works before any exercise is written.
PLAYGROUND_ARGS ?=
playground: $(STAMP)
	$(LOCALE)$(BIN)/python -m course.playground $(if $(ZH),--lang zh) $(PLAYGROUND_ARGS)

# Bring the Chinese message catalog in step with the code (Babel), then list everything of the
# Chinese edition that is out of date: untranslated messages, stale cells (course/drift.py).
messages: $(STAMP)
	$(BIN)/python -m course.messages
	$(BIN)/python -m course.drift

# Re-execute every lesson notebook against the solutions and store the outputs (commit them);
# both editions, or the Chinese one alone with LANG=zh.
notebooks: $(STAMP)
	$(BIN)/python -m course.build notebooks $(NB)$(if $(ZH), --lang zh)

# Regenerate the student stubs in exercises/ from solutions/.
stubs: $(STAMP)
	$(BIN)/python -m course.stubs

# Record the reference results that checks compare against (needed where solutions/ is absent).
reference: $(STAMP)
	$(BIN)/python -m course.reference --record $(ONLY)

# Grade a class: every subfolder of SUBMISSIONS is one student's exercises/ (or course copy). The
# class lives beside the course (SUBMISSIONS, OUT, ROSTER, SEED_FILE outside it, e.g. ../class/).
# Optional: JOBS=2 (students in parallel), LESSONS=00-02 (a subset), ASSIGNMENT="..." (the LMS
# column's title; default from LESSONS), POINTS=points.toml (points per check), FULL=1 (every
# notebook cell under strict nbval, slow), UNSAFE=1 (no bubblewrap sandbox; every report says
# so), STUDENTS="ada bob" (regrade those folders into an existing OUT; one name per line for names
# with spaces) or STUDENTS_FILE=<file> (one name per line), ONLY=<check id> (with STUDENTS: run
# that one check for them, sandboxed, and print its whole result; OUT is not changed),
# SHARD=K/N (a share of the class, into its own OUT), ROSTER=roster.csv (LMS files; OUT keeps
# it), PER_LESSON=1 (LMS files per lesson, PER_LESSON=0 turns them off), SEED_FILE=<file>. Into
# an OUT that holds a class, it grades what OUT lacks and the students whose files changed (a
# stopped run resumes, a second collect is graded), as OUT's class was graded (its lessons,
# points and limits). Without SUBMISSIONS: a rescore of OUT from its records (POINTS=, ROSTER=,
# ASSIGNMENT=, PER_LESSON=; no student code runs). STUDENTS reaches the grader through the
# environment, whole. See docs/instructors.md.
grade: $(STAMP)
	@if [ -z "$(strip $(OUT))" ] || { [ -z "$(strip $(SUBMISSIONS))" ] && [ -z "$(strip $(POINTS)$(ROSTER)$(ASSIGNMENT)$(PER_LESSON))" ]; }; then \
	  echo "usage: make grade SUBMISSIONS=<dir> OUT=<dir> [JOBS=n] [LESSONS=00-02] [ASSIGNMENT=title] [POINTS=file] [FULL=1] [STUDENTS=\"ada bob\"] [STUDENTS_FILE=<file>] [ONLY=<check>] [SHARD=K/N] [ROSTER=roster.csv] [PER_LESSON=1] [SEED_FILE=<file>]" >&2; \
	  echo "   or: make grade OUT=<dir> POINTS=<file> | ROSTER=<file> | ASSIGNMENT=<title>   (a rescore from OUT's records)" >&2; exit 2; fi
ifeq ($(strip $(SUBMISSIONS)),)
	$(LOCALE)$(if $(ZH),COURSE_LANG=zh_CN )$(BIN)/python -m course.grading rescore --out "$(OUT)" $(if $(POINTS),--points "$(POINTS)") $(if $(ROSTER),--roster "$(ROSTER)") $(if $(ASSIGNMENT),--assignment "$(ASSIGNMENT)") $(if $(filter 1 yes true,$(PER_LESSON)),--per-lesson)$(if $(filter 0 no false,$(PER_LESSON)),--no-per-lesson)
else
	$(LOCALE)$(if $(ZH),COURSE_LANG=zh_CN )$(BIN)/python -m course.grading --submissions "$(SUBMISSIONS)" --out "$(OUT)" $(if $(JOBS),--jobs $(JOBS)) $(if $(LESSONS),--lessons $(LESSONS)) $(if $(ASSIGNMENT),--assignment "$(ASSIGNMENT)") $(if $(POINTS),--points "$(POINTS)") $(if $(FULL),--full) $(if $(UNSAFE),--unsafe-no-sandbox) $(if $(STUDENTS),--students "$$STUDENTS") $(if $(STUDENTS_FILE),--students-file "$(STUDENTS_FILE)") $(if $(ONLY),--only "$(ONLY)") $(if $(SHARD),--shard $(SHARD)) $(if $(ROSTER),--roster "$(ROSTER)") $(if $(filter 1 yes true,$(PER_LESSON)),--per-lesson)$(if $(filter 0 no false,$(PER_LESSON)),--no-per-lesson) $(if $(SEED_FILE),--seed-file "$(SEED_FILE)")
endif

# Merge the OUT folders of a class graded in shards (make grade ... SHARD=K/N) into one OUT:
# the gradebook, reports and feedback of one run. Optional: ROSTER=roster.csv (Canvas and Moodle
# files in OUT/lms/; else the roster the parts keep), PER_LESSON=1 (LMS files per lesson).
# See docs/instructors.md.
grade-merge: $(STAMP)
	@if [ -z "$(strip $(PARTS))" ] || [ -z "$(strip $(OUT))" ]; then \
	  echo "usage: make grade-merge PARTS=\"OUT1 OUT2 ...\" OUT=<dir> [ROSTER=roster.csv] [PER_LESSON=1]" >&2; exit 2; fi
	$(LOCALE)$(if $(ZH),COURSE_LANG=zh_CN )$(BIN)/python -m course.grading merge --parts $(PARTS) --out "$(OUT)" $(if $(ROSTER),--roster "$(ROSTER)") $(if $(filter 1 yes true,$(PER_LESSON)),--per-lesson)$(if $(filter 0 no false,$(PER_LESSON)),--no-per-lesson)

# Turn an LMS's bulk download of the submissions (Canvas's or Moodle's "Download all
# submissions" zip, or its unpacked folder) into one folder per student for make grade. Into a
# folder an earlier collect made, a later download adds new students and replaces changed files.
# See docs/instructors.md.
collect: $(STAMP)
	@if [ -z "$(strip $(FROM))" ] || [ -z "$(strip $(SUBMISSIONS))" ]; then \
	  echo "usage: make collect FROM=<download.zip> SUBMISSIONS=<dir> [ROSTER=roster.csv]" >&2; exit 2; fi
	$(BIN)/python -m course.grading collect --from "$(FROM)" --submissions "$(SUBMISSIONS)" $(if $(ROSTER),--roster "$(ROSTER)")

# The feedback of a graded OUT as the zip each LMS takes in bulk (OUT/handback/): Canvas's
# "Re-upload submissions", Moodle's "Upload multiple feedback files in a zip", and one file per
# student folder otherwise. SUBMISSIONS: the folder make collect made. See docs/instructors.md.
handback: $(STAMP)
	@if [ -z "$(strip $(OUT))" ] || { [ -z "$(strip $(SUBMISSIONS))" ] && [ -z "$(strip $(POINTS)$(ROSTER)$(ASSIGNMENT)$(PER_LESSON))" ]; }; then \
	  echo "usage: make handback OUT=<dir> [SUBMISSIONS=<dir>]" >&2; exit 2; fi
	$(BIN)/python -m course.grading handback --out "$(OUT)" $(if $(SUBMISSIONS),--submissions "$(SUBMISSIONS)")

# The student release: the course without solutions/, checks working from recorded results.
# LANG=zh: exercises/ (docstrings, hints, stub messages) and README.md in Chinese.
handout: $(STAMP)
	$(BIN)/python -m course.handout --out "$(OUT)"$(if $(ZH), --lang zh)

# Screenshots of every widget in a real browser, for the README.
screenshots: $(STAMP)
	$(BIN)/python -m tests.browser --screenshots docs/screenshots
	$(BIN)/python -m tests.browser --playground --screenshots docs/screenshots

# Re-pin requirements.txt from requirements.in: one universal lock (uv), with environment markers
# where a Python (3.10 is the oldest the course supports) or a platform needs another version.
# The pins in requirements.txt are kept where they still fit; UPGRADE=1 takes the newest releases.
# PyTorch's CUDA libraries stay out (requirements-excludes.txt). Reads PyPI only, never a local
# mirror, so the lock is what any machine can install.
LOCK_PYTHON := 3.10
lock: $(STAMP)
	$(or $(wildcard $(BIN)/uv),uv) pip compile --universal --python-version $(LOCK_PYTHON) --excludes requirements-excludes.txt \
	  --custom-compile-command "make lock" --quiet $(if $(UPGRADE),--upgrade) requirements.in -o requirements.txt

clean:
	rm -rf .venv .venv.lock build .pytest_cache  # never a conda environment
