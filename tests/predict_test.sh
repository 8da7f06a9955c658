#!/usr/bin/env bash
# `corral predict`: its rows reproduce `corral eval` (accuracy from the predicted labels, RMSE
# from the predicted ratings), in both output formats, for a binary, a multiclass and an mf
# model; bad flags and files exit 2 naming what was wrong.
#   predict_test.sh CORRAL DIR            generated sets
#   predict_test.sh CORRAL DIR DATA_DIR   a9a and a9a.t from DATA_DIR (exit 77, skipped, when absent)
set -u
corral=$1 dir=$2/predict.$$
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# eval's value of KEY (accuracy or rmse) for MODEL on DATA.
eval_value() {
  "$corral" eval --model-file "$1" --data "$2" --json |
    sed -n "s/.*\"$3\":\([-0-9.eE+]*\).*/\1/p"
}
# Equal within TOL (absolute); both must be numbers.
close() {
  [[ $1 =~ ^[0-9.eE+-]+$ && $2 =~ ^[0-9.eE+-]+$ ]] || fail "not numbers: '$1' and '$2'"
  awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; exit !(d <= t && -d <= t) }'
}
# Accuracy of predicted labels (one per line in PRED) against the data's first column.
accuracy_of() {
  paste -d' ' "$1" <(cut -d' ' -f1 "$2") |
    awk '{ n++; if (($1 > 0) == ($2 > 0) && $1 == $1 + 0) c++ } END { printf "%.12f\n", c / n }'
}

if [[ $# -ge 3 ]]; then
  train=$3/a9a/a9a test=$3/a9a/a9a.t
  [[ -f $train && -f $test ]] || { echo "a9a not in $3: skipped"; exit 77; }
  "$corral" train --data "$train" --threads 2 --epochs 3 --save "$dir/a9a.model" --quiet || fail "train a9a"
  "$corral" predict --model "$dir/a9a.model" --data "$test" --output "$dir/a9a.csv" || fail "predict a9a.t"
  want=$(eval_value "$dir/a9a.model" "$test" accuracy)
  got=$(accuracy_of <(tail -n +2 "$dir/a9a.csv" | cut -d, -f1) "$test")
  echo "a9a.t: eval accuracy $want, from predict's rows $got"
  close "$got" "$want" 1e-9 || fail "a9a.t accuracy $got from the rows, eval says $want"
  exit 0
fi

# A binary model: CSV rows label,score,probability; the label is the score's sign.
"$corral" data gen classification --rows 3000 --features 60 --nnz-per-row 8 --noise 0.1 --seed 3 \
  --out "$dir/bin.svm" >/dev/null || fail "gen binary"
"$corral" train --data "$dir/bin.svm" --threads 1 --epochs 2 --save "$dir/bin.model" --quiet || fail "train"
"$corral" predict --model "$dir/bin.model" --data "$dir/bin.svm" --output "$dir/bin.csv" || fail "predict"
[[ $(head -1 "$dir/bin.csv") == "label,score,probability" ]] || fail "header $(head -1 "$dir/bin.csv")"
[[ $(wc -l <"$dir/bin.csv") == 3001 ]] || fail "$(wc -l <"$dir/bin.csv") lines, expected 3001"
tail -n +2 "$dir/bin.csv" | awk -F, '{ if (($1 == 1) != ($2 > 0) || ($3 > 0.5) != ($2 > 0)) bad++ }
  END { exit bad > 0 }' || fail "a label or probability disagrees with its score"
want=$(eval_value "$dir/bin.model" "$dir/bin.svm" accuracy)
got=$(accuracy_of <(tail -n +2 "$dir/bin.csv" | cut -d, -f1) "$dir/bin.svm")
close "$got" "$want" 1e-9 || fail "binary accuracy $got from the rows, eval says $want"
# The same rows to stdout as JSON lines, and from a gzip-compressed input.
gzip -c "$dir/bin.svm" >"$dir/bin.svm.gz"
"$corral" predict --model "$dir/bin.model" --data "$dir/bin.svm.gz" --output-format jsonl >"$dir/bin.jsonl" ||
  fail "predict jsonl"
head -1 "$dir/bin.jsonl" | grep -q '^{"label":-\{0,1\}1,"score":[^,]*,"probability":[^,]*}$' ||
  fail "jsonl row $(head -1 "$dir/bin.jsonl")"
got=$(accuracy_of <(sed 's/{"label":\([-0-9]*\),.*/\1/' "$dir/bin.jsonl") "$dir/bin.svm")
close "$got" "$want" 1e-9 || fail "jsonl accuracy $got, eval says $want"

# A multiclass model: the label is the class of the highest probability.
"$corral" data gen classification --rows 900 --features 8 --dense --classes 3 --seed 5 \
  --out "$dir/multi.svm" >/dev/null || fail "gen multiclass"
"$corral" train --data "$dir/multi.svm" --model softmax --threads 1 --epochs 3 --save "$dir/multi.model" \
  --quiet || fail "train softmax"
"$corral" predict --model "$dir/multi.model" --data "$dir/multi.svm" --output "$dir/multi.csv" || fail "predict softmax"
header=$(head -1 "$dir/multi.csv")
[[ $header == label,p_* && $(tr ',' '\n' <<<"$header" | wc -l) == 4 ]] || fail "softmax header $header"
want=$(eval_value "$dir/multi.model" "$dir/multi.svm" accuracy)
got=$(paste -d, <(tail -n +2 "$dir/multi.csv" | cut -d, -f1) <(cut -d' ' -f1 "$dir/multi.svm") |
  awk -F, '{ n++; if ($1 == $2) c++ } END { printf "%.12f\n", c / n }')
close "$got" "$want" 1e-9 || fail "softmax accuracy $got from the rows, eval says $want"

# An mf model: the RMSE of the predicted ratings is eval's.
"$corral" data gen ratings --users 40 --items 50 --rank 2 --ratings 1500 --test-fraction 0.2 --seed 2 \
  --out "$dir/r.data" >/dev/null || fail "gen ratings"
"$corral" train --data "$dir/r.data" --model mf --rank 2 --threads 1 --epochs 3 --save "$dir/mf.model" \
  --quiet || fail "train mf"
"$corral" predict --model "$dir/mf.model" --data "$dir/r.data.test" --output "$dir/mf.csv" || fail "predict mf"
want=$(eval_value "$dir/mf.model" "$dir/r.data.test" rmse)
got=$(paste -d' ' <(tail -n +2 "$dir/mf.csv") <(grep -v '^#' "$dir/r.data.test" | awk '{ print $3 }') |
  awk '{ n++; d = $1 - $2; s += d * d } END { printf "%.12f\n", sqrt(s / n) }')
close "$got" "$want" 1e-5 || fail "mf rmse $got from the rows, eval says $want"

# Bad input: exit status 2 and a message naming the flag or file.
expect_usage_error() {
  local what=$1; shift
  "$corral" predict "$@" >"$dir/out" 2>"$dir/err"
  local rc=$?
  [[ $rc == 2 ]] || fail "$* exited $rc, expected 2: $(cat "$dir/err")"
  grep -qF -- "$what" "$dir/err" || fail "$* said '$(cat "$dir/err")', expected it to name '$what'"
}
expect_usage_error "absent.model" --model "$dir/absent.model" --data "$dir/bin.svm"
expect_usage_error "absent.svm" --model "$dir/bin.model" --data "$dir/absent.svm"
expect_usage_error "--output-format" --model "$dir/bin.model" --data "$dir/bin.svm" --output-format xml
expect_usage_error "--output $dir" --model "$dir/bin.model" --data "$dir/bin.svm" --output "$dir"
printf '+1 1:1\n-1 61:1\n' >"$dir/wide.svm"
expect_usage_error "wide.svm:2:" --model "$dir/bin.model" --data "$dir/wide.svm"
expect_usage_error "--model" --data "$dir/bin.svm"
echo "predict: all checks passed"
