# The course's commands. `make lab` and `make test` set up everything they need from nothing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# the venv's bin first, so notebooks and tests find its `dot` (graphviz-pure)
export PATH := $(CURDIR)/$(BIN):$(PATH)
export PYTHONPATH := $(CURDIR)
LAB_ARGS ?=
# Jupyter refuses to run as root (containers, CI) unless told
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)
PYTEST_ARGS ?=

.PHONY: lab test venv notebooks stubs reference grade handout screenshots lock clean

lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.root_dir=$(CURDIR) $(ROOT_FLAG) $(LAB_ARGS) notebooks/00_start_here.ipynb

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

venv: $(STAMP)

$(STAMP): requirements.txt scripts/setup_venv.sh
	PYTHON=$(PYTHON) bash scripts/setup_venv.sh $(VENV)
	touch $@

# Re-execute every lesson notebook against the solutions and store the outputs (commit them).
notebooks: $(STAMP)
	$(BIN)/python -m course.build notebooks $(NB)

# Regenerate the student stubs in exercises/ from solutions/.
stubs: $(STAMP)
	$(BIN)/python -m course.stubs

# Record the reference results that checks compare against (needed where solutions/ is absent).
reference: $(STAMP)
	$(BIN)/python -m course.reference --record $(ONLY)

# Grade a class: every subfolder of SUBMISSIONS is one student's exercises/ (or course copy).
# Optional: JOBS=2 (students in parallel), LESSONS=00-02 (a subset), FULL=1 (every notebook cell
# under strict nbval, slow), UNSAFE=1 (no bubblewrap sandbox; every report says so).
# See docs/instructors.md.
grade: $(STAMP)
	@if [ -z "$(strip $(SUBMISSIONS))" ] || [ -z "$(strip $(OUT))" ]; then \
	  echo "usage: make grade SUBMISSIONS=<dir> OUT=<dir> [JOBS=n] [LESSONS=00-02] [FULL=1]" >&2; exit 2; fi
	$(BIN)/python -m course.grade --submissions "$(SUBMISSIONS)" --out "$(OUT)" $(if $(JOBS),--jobs $(JOBS)) $(if $(LESSONS),--lessons $(LESSONS)) $(if $(FULL),--full) $(if $(UNSAFE),--unsafe-no-sandbox)

# The student release: the course without solutions/, checks working from recorded results.
handout: $(STAMP)
	$(BIN)/python -m course.handout --out "$(OUT)"

# Screenshots of every widget in a real browser, for the README.
screenshots: $(STAMP)
	$(BIN)/python -m tests.browser --screenshots docs/screenshots

# Re-pin requirements.txt from requirements.in in a scratch environment.
lock:
	rm -rf build/lock && $(PYTHON) -m venv build/lock
	build/lock/bin/pip install -q -r requirements.in
	build/lock/bin/pip freeze | sed 's/+cpu$$//' > requirements.txt

clean:
	rm -rf $(VENV) build .pytest_cache
