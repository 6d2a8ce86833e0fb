# The grader's image: Debian's bubblewrap (the sandbox of every student's code), the pinned
# environment with PyTorch's CPU build, and the course itself, solutions/ included.
# PUSH IT TO A PRIVATE REGISTRY ONLY. Not part of the student release.
#
# Build it from the course's own files only, never from the course folder itself (where a class,
# a roster or a seed may lie): the build context is made from the allow-list (git's tracked files)
# with its MANIFEST, and a build from anything else stops at `COPY MANIFEST`:
#
#   .venv/bin/python -m course.handout --grader-context build/grader-image
#   docker build -t registry.example.edu/attention-course-grader:2025 build/grader-image
#   docker run --rm IMAGE --help                    python -m course.grading ...
#   docker run --rm IMAGE merge --help              python -m course.grading merge ...
#
# bubblewrap inside a container needs user namespaces, the unshare and mount system calls and an
# unmasked /proc: see docs/instructors.md, "Grade on a cluster", for the pod's securityContext.
FROM python:3.11-slim-bookworm

RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap make \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /course
# the environment first, in a layer of its own: rebuilt only when the pins change
COPY requirements.txt ./
COPY scripts/setup_venv.sh scripts/
RUN TORCH=cpu bash scripts/setup_venv.sh /course/.venv \
 && touch /course/.venv/.installed-cpu && rm -f /course/.venv.lock \
 && rm -rf /root/.cache/pip /root/.cache/uv
# the context's list of its files: only `python -m course.handout --grader-context` writes one
COPY MANIFEST ./
COPY . .
# the image holds the listed files and nothing else; bytecode now: the course is read-only for
# the grading user
RUN /course/.venv/bin/python -m course.handout --check-context /course \
 && /course/.venv/bin/python -m compileall -q course solutions exercises \
 && useradd --create-home --uid 1000 grader
USER grader
ENV PATH=/course/.venv/bin:$PATH PYTHONPATH=/course TORCH=cpu
ENTRYPOINT ["python", "-m", "course.grading"]
CMD ["--help"]
