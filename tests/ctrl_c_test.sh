#!/usr/bin/env bash
# Ctrl-C during `corral train --save`: the run stops cleanly, writes the model, says so, and
# exits with 130; the file then loads and resumes.
set -u
corral=$1 dir=$2
model=$dir/interrupted.$$.model metrics=$dir/interrupted.$$.jsonl log=$dir/interrupted.$$.log
rm -f "$model" "$metrics"
"$corral" train --threads 2 --epochs 100000 --save "$model" --metrics "$metrics" >"$log" 2>&1 &
pid=$!
# Wait until the first epoch is evaluated (training is running), at most 120 s.
for _ in $(seq 1200); do
  [[ -s $metrics ]] && break
  kill -0 $pid 2>/dev/null || { echo "corral exited early:"; cat "$log"; exit 1; }
  sleep 0.1
done
[[ -s $metrics ]] || { echo "no epoch finished in 120 s"; kill -9 $pid; exit 1; }
kill -INT $pid
wait $pid
rc=$?
cat "$log"
[[ $rc == 130 ]] || { echo "exit status $rc, expected 130"; exit 1; }
grep -q "interrupted: stopped cleanly" "$log" || { echo "no interruption message"; exit 1; }
grep -q "saved the model to $model" "$log" || { echo "no save message"; exit 1; }
"$corral" eval --model-file "$model" --data "$model" >/dev/null 2>&1  # (a model is no dataset)
"$corral" train --threads 2 --epochs 1 --resume "$model" --quiet || { echo "resume failed"; exit 1; }
rm -f "$model" "$metrics" "$log"
