#!/usr/bin/env bash
# SIGKILL during `corral train --checkpoint-every 1 --save`: the process gets no chance to save,
# yet the file holds the last completed epoch's checkpoint: it loads, and resumes from that
# epoch (its first metrics line is a later epoch than 1). A damaged copy and a resume under
# another algorithm are refused with exit 2 and a message; neither touches the checkpoint.
set -u
corral=$1 dir=$2
base=$dir/killed.$$
data=$base.svm model=$base.model metrics=$base.jsonl log=$base.log
cleanup() { rm -f "$data" "$model" "$base".*; }
fail() { echo "FAIL: $*"; [[ -f $log ]] && cat "$log"; cleanup; exit 1; }
"$corral" data gen classification --rows 4000 --features 200 --nnz-per-row 8 --seed 4 \
  --out "$data" >/dev/null 2>&1 || fail "data gen"
train=("$corral" train --data "$data" --algo dpsgd --threads 4 --pin none --lr 0.05 --gossip-every 3 --quiet)
"${train[@]}" --epochs 100000 --checkpoint-every 1 --save "$model" --metrics "$metrics" >"$log" 2>&1 &
pid=$!
# Wait for the second epoch's evaluation (so a checkpoint exists and another is being
# written or due), at most 120 s.
for _ in $(seq 1200); do
  [[ -f $metrics && $(wc -l <"$metrics") -ge 2 ]] && break
  kill -0 $pid 2>/dev/null || fail "corral exited early"
  sleep 0.1
done
[[ -f $model ]] || { kill -9 $pid; fail "no checkpoint after 120 s"; }
kill -9 $pid
wait $pid 2>/dev/null
"$corral" eval --model-file "$model" --data "$data" >/dev/null 2>&1 || fail "the checkpoint does not load"
# Resume: it continues after the saved epoch (>= 1 done), stopped by the time limit.
"${train[@]}" --epochs 100000 --time-limit 0.3 --resume "$model" --metrics "$metrics.resumed" \
  >"$log" 2>&1 || fail "resume failed"
first=$(head -1 "$metrics.resumed" | sed -E 's/.*"epoch":([0-9]+).*/\1/')
[[ $first -ge 2 ]] || fail "the resumed run began at epoch $first, expected after the checkpoint's"
sum=$(cksum <"$model")
# A damaged checkpoint: refused with exit 2, naming the file and the checksum.
cp "$model" "$base.damaged"
size=$(stat -c %s "$base.damaged")
printf '\x55' | dd of="$base.damaged" bs=1 seek=$((size / 2)) conv=notrunc status=none
"${train[@]}" --epochs 100000 --resume "$base.damaged" >"$log" 2>&1
rc=$?
[[ $rc == 2 ]] || fail "damaged checkpoint: exit $rc, expected 2"
grep -q "$base.damaged: .*checksum" "$log" || fail "damaged checkpoint: no message naming the checksum"
# Another algorithm: refused with exit 2, naming the mismatch.
"$corral" train --data "$data" --algo choco --threads 4 --pin none --epochs 100000 --resume "$model" \
  --quiet >"$log" 2>&1
rc=$?
[[ $rc == 2 ]] || fail "foreign checkpoint: exit $rc, expected 2"
grep -q -- "--algo dpsgd (this run: choco)" "$log" || fail "foreign checkpoint: no message naming --algo"
[[ $(cksum <"$model") == "$sum" ]] || fail "a refused resume changed the checkpoint"
cleanup
echo "ok"
