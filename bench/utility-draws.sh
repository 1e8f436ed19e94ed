#!/usr/bin/env bash
# Utility of one training setting over several training noise draws (docs/utility-levers.md).
#
#   bench/utility-draws.sh VTWIN RUNS NAME [vtwin train flags...]
#
# For each noise seed in $SEEDS (default "1 2 3") it trains on Adult at the given flags with
# --noise-seed S (reproducible draws; the privacy guarantee of such a run is void, the
# mechanism is the same), synthesizes N = 30162 rows from the posterior mean (synthesis seed
# 1), and runs `vtwin eval` against the real training set with TSTR on Y. Outputs go to
# RUNS/NAME/sS/ (nothing is written in the repository); ADULT (default
# /work/shared/data/adult) holds adult.data and adult.test. SCHEMA (default examples/adult/schema.toml)
# replaces the schema, e.g. to model a column on public bins. Summarise with
# bench/utility-summary.py RUNS/NAME ...
set -euo pipefail
vtwin=$1 runs=$2 name=$3
shift 3
adult=${ADULT:-/work/shared/data/adult}
here=$(cd "$(dirname "$0")/.." && pwd)
for s in ${SEEDS:-1 2 3}; do
  d=$runs/$name/s$s
  mkdir -p "$d"
  "$vtwin" train --schema "${SCHEMA:-$here/examples/adult/schema.toml}" --joined "$adult/adult.data" \
    --test-joined "$adult/adult.test" --noise-seed "$s" --out "$d" "$@" 2>"$d/train.err" >"$d/train.out"
  "$vtwin" synthesize --model "$d/model.json" --rows 30162 --seed 1 --out "$d/synthetic.csv"
  "$vtwin" eval --model "$d/model.json" --synthetic "$d/synthetic.csv" \
    --test-joined "$adult/adult.test" --train-joined "$adult/adult.data" --target Y \
    --out "$d/eval.json" >/dev/null
  echo "$name s$s: $(tail -1 "$d/train.out")"
done
