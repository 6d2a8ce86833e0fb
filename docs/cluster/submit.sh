#!/bin/bash
# submit.sh: the shards, then the merge once every task of the array has succeeded
# (run from the course repository: bash docs/cluster/submit.sh)
set -euo pipefail
export CLASS=${CLASS:-$(cd .. && pwd)/class}   # the class folder beside the course
mkdir -p "$CLASS/logs"
shards=$(sbatch --parsable --output="$CLASS/logs/shard-%a.log" docs/cluster/grade-array.sbatch)
sbatch --parsable --dependency=afterok:"${shards%%;*}" --job-name=merge-attention \
  --output="$CLASS/logs/merge.log" \
  --wrap '.venv/bin/python -m course.grading merge --parts "$CLASS"/shards/* --out "$CLASS/grades" --roster "$CLASS/roster.csv"'
