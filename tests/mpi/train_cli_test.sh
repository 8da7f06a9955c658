#!/usr/bin/env bash
# `mpiexec -n 2 corral train` (ctest mpi.train_cli): the saved model of 2 ranks x 2 threads
# evaluates exactly as 1 process x 4 threads (mpi.train checks the bits), each rank reads only
# its rows (LIBSVM text; the cache, without --lr; with --weights, its part of them), rank 0 alone speaks, and an error on one rank ends every rank with a non-zero status and the message with its
# rank: a data file missing on rank 1 only, a model file (--init) missing on rank 1 only (it
# throws inside the run, where rank 0 already waits for it in the mode's collective setup; run
# with hogwild++, whose ring sets up as dpsgd's transport does, and once only: the case costs
# AgreeOnExit's 5 s), hogwild++'s checkpoint across ranks (resumed; refused in one process), a
# mode that does not run across ranks.
set -u
corral=$1 mpiexec=$2
dir=$(mktemp -d)
log=$dir/log
cleanup() { rm -rf "$dir"; }
fail() { echo "FAIL: $*"; [[ -f $log ]] && cat "$log"; cleanup; exit 1; }
# one.model (1 process) and two.model (2 ranks) evaluate alike on the data, to the bit.
evaluate_alike() {
  "$corral" eval --json --model-file "$dir/one.model" --data "$dir/data0.svm" >"$dir/one.json" 2>/dev/null ||
    fail "$1eval one"
  "$corral" eval --json --model-file "$dir/two.model" --data "$dir/data0.svm" >"$dir/two.json" 2>/dev/null ||
    fail "$1eval two"
  cmp -s "$dir/one.json" "$dir/two.json" ||
    fail "$12 x 2 evaluates as $(cat "$dir/two.json"), 1 x 4 as $(cat "$dir/one.json")"
}
"$corral" data gen classification --rows 3000 --features 300 --nnz-per-row 10 --seed 4 \
  --out "$dir/data0.svm" >/dev/null 2>&1 || fail "data gen"
common=(--data "$dir/data0.svm" --epochs 2 --lr 0.05 --gossip-every 1 --pin none --seed 9)

"$corral" train "${common[@]}" --algo dpsgd --threads 4 --quiet --save "$dir/one.model" >"$log" 2>&1 ||
  fail "1 x 4 failed"
"$mpiexec" -n 2 "$corral" train "${common[@]}" --algo dpsgd --threads 2 --save "$dir/two.model" >"$log" 2>&1 ||
  fail "2 x 2 failed"
[[ $(grep -c "^saved the model" "$log") == 1 ]] || fail "expected one 'saved the model' line (rank 0's)"
[[ $(grep -c "^data: " "$log") == 1 ]] || fail "expected one 'data:' line (rank 0's)"
evaluate_alike ""
grep -q "^data: .*3000 rows.*each rank reads its own rows (rank 0: 1500 rows" "$log" ||
  fail "expected rank 0 to read its 1500 of the 3000 rows"

# The binary cache, read by rank, without --lr (the step-size search gathers its rows from the
# ranks): the model of 1 x 4 on the text file.
"$corral" data convert --data "$dir/data0.svm" --out "$dir/data0.cache" >/dev/null 2>&1 ||
  fail "data convert"
nolr=(--epochs 2 --gossip-every 1 --pin none --seed 9 --algo dpsgd)
"$corral" train --data "$dir/data0.svm" "${nolr[@]}" --threads 4 --quiet --save "$dir/one.model" \
  >"$log" 2>&1 || fail "1 x 4 without --lr failed"
"$mpiexec" -n 2 "$corral" train --data "$dir/data0.cache" "${nolr[@]}" --threads 2 \
  --save "$dir/two.model" >"$log" 2>&1 || fail "2 x 2 on the cache without --lr failed"
grep -q "^data: .*each rank reads its own rows (rank 0: 1500 rows" "$log" ||
  fail "the cache: expected rank 0 to read its 1500 rows"
evaluate_alike "cache, no --lr: "

# --weights across ranks: each rank keeps its rows' part of the file, and the step-size search
# gathers the weights with its rows: 2 x 2 on the cache evaluates as 1 x 4 on the text, and
# not as the unweighted model.
awk 'BEGIN { srand(3) } { print (NR % 8 == 0) ? 0 : 0.25 + 2 * rand() }' "$dir/data0.svm" >"$dir/weights.txt"
cp "$dir/two.json" "$dir/unweighted.json"
"$corral" train --data "$dir/data0.svm" "${nolr[@]}" --threads 4 --weights "$dir/weights.txt" --quiet \
  --save "$dir/one.model" >"$log" 2>&1 || fail "1 x 4 with --weights failed"
"$mpiexec" -n 2 "$corral" train --data "$dir/data0.cache" "${nolr[@]}" --threads 2 \
  --weights "$dir/weights.txt" --save "$dir/two.model" >"$log" 2>&1 || fail "2 x 2 with --weights failed"
grep -q "^data: .*each rank reads its own rows (rank 0: 1500 rows" "$log" ||
  fail "--weights: expected rank 0 to read its 1500 rows"
evaluate_alike "--weights: "
cmp -s "$dir/two.json" "$dir/unweighted.json" && fail "--weights: the weighted model evaluates as the unweighted one"

# Each rank reads "$dir/data<rank>.svm" (and --init "$dir/init<rank>.model"): rank 1's is missing.
# per_rank ALGO EXTRA: EXTRA is expanded on each rank.
per_rank() {
  "$mpiexec" -n 2 bash -c 'r=$OMPI_COMM_WORLD_RANK; exec "$0" train "$@" --data "'"$dir"'/data$r.svm" '"$2" \
    "$corral" --algo "$1" --threads 2 --epochs 2 --lr 0.05 --pin none --quiet >"$log" 2>&1
}
per_rank dpsgd ""
rc=$?
[[ $rc == 2 ]] || fail "data missing on rank 1: exit $rc, expected 2"
grep -q "rank 1: .*data1.svm" "$log" || fail "data missing on rank 1: no message naming rank 1 and the file"

cp "$dir/data0.svm" "$dir/data1.svm"
cp "$dir/one.model" "$dir/init0.model"
per_rank hogwild++ '--init "'"$dir"'/init$r.model"'
rc=$?
[[ $rc != 0 ]] || fail "--init missing on rank 1: exit 0"
grep -q "rank 1: .*init1.model" "$log" || fail "--init missing on rank 1: no message naming rank 1 and the file"

# hogwild++ across ranks checkpoints (2 x 1: one group per rank): after each of 2 epochs, rank 0
# writing the file, which a run of 3 epochs resumes; one process with the same 2 threads (and 2
# groups) refuses it, naming the file and the layout.
hpp=(--data "$dir/data0.svm" --lr 0.05 --pin none --seed 9 --algo hogwild++ --quiet)
"$mpiexec" -n 2 "$corral" train "${hpp[@]}" --threads 1 --epochs 2 --checkpoint-every 1 \
  --save "$dir/hpp.model" >"$log" 2>&1 || fail "hogwild++ 2 x 1 with --checkpoint-every failed"
"$mpiexec" -n 2 "$corral" train "${hpp[@]}" --threads 1 --epochs 3 --resume "$dir/hpp.model" \
  --save "$dir/hpp3.model" >"$log" 2>&1 || fail "hogwild++ 2 x 1 --resume failed"
[[ -s $dir/hpp3.model ]] || fail "hogwild++ 2 x 1 --resume saved no model"
"$corral" train "${hpp[@]}" --threads 2 --group-size 1 --epochs 3 --resume "$dir/hpp.model" \
  >"$log" 2>&1
rc=$?
[[ $rc == 2 ]] || fail "hogwild++ ranks' checkpoint in one process: exit $rc, expected 2"
grep -q "hpp.model: cannot resume: the checkpoint was written with hogwild++ across ranks" "$log" ||
  fail "hogwild++ ranks' checkpoint in one process: no message naming the file and the layout"

"$mpiexec" -n 2 "$corral" train "${common[@]}" --algo hogwild --threads 2 >"$log" 2>&1
rc=$?
[[ $rc == 2 ]] || fail "hogwild across ranks: exit $rc, expected 2"
grep -q "rank 0: --algo hogwild does not run across 2 ranks" "$log" || fail "hogwild across ranks: no message naming --algo"
cleanup
echo "ok"
