#!/bin/bash
# submit.sh: the shards, then the merge once every task of the array has succeeded
# (run from the course repository: WORK=../class/a1 bash docs/cluster/submit.sh)
set -euo pipefail
export CLASS=${CLASS:-$(cd .. && pwd)/class}   # the class folder beside the course
export WORK=$(cd "${WORK:-$CLASS}" && pwd)      # the assignment's folder, with collected/
mkdir -p "$WORK/logs"
shards=$(sbatch --parsable --output="$WORK/logs/shard-%a.log" docs/cluster/grade-array.sbatch)
sbatch --parsable --dependency=afterok:"${shards%%;*}" --job-name=merge-attention \
  --output="$WORK/logs/merge.log" \
  --wrap '.venv/bin/python -m course.grading merge --parts "$WORK"/shards/* --out "$WORK/merged" --roster "$CLASS/roster.csv"'
