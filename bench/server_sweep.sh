#!/bin/bash
# The big-server thread sweep (issue: ready for the big server): `corral scale` over a list of thread
# counts for hogwild, hogwild++ (automatic groups) and the replica modes on the generated Zipf set,
# a9a and the Fashion-MNIST MLP, then bench/replica_speed.py at 2 and at the largest thread count.
# Every section is skipped once the time budget is spent, so a lent machine's minutes are never
# overrun; everything lands in OUTDIR as it is produced (log.txt, sweep_csv.txt, plots.tar,
# replica_*.txt). Speeds are samples/s; quote speedups (each scale table's first row is its baseline).
#
#   bench/server_sweep.sh CORRAL DATA_DIR OUTDIR [THREADS=1,2,4,8,16] [BUDGET_S=470]
#
# DATA_DIR is laid out like ../shared/data (a9a/a9a, a9a/a9a.t); Fashion-MNIST is read from
# /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist) or DATA_DIR/fashion.
set -u
[ $# -ge 3 ] || { sed -n '2,12p' "$0"; exit 2; }
C=$(readlink -f "$1"); D=$(readlink -f "$2"); OUT=$3; T=${4:-1,2,4,8,16}; BUDGET=${5:-470}
START=$SECONDS; BENCH=$(cd "$(dirname "$0")" && pwd); TMP=$(mktemp -d); mkdir -p "$OUT" "$TMP/plots"
exec > >(tee -a "$OUT/log.txt") 2>&1
left() { echo $(( BUDGET - (SECONDS - START) )); }
date -u; nproc; lscpu | head -25; cat /sys/kernel/mm/transparent_hugepage/enabled
"$C" topology --hardware --threads "${T##*,}" | head -40

F=/usr/share/datasets/fashion-mnist
[ -e "$F/train-images-idx3-ubyte.gz" ] || F=$D/fashion
ZIPF=$TMP/zipf.cache
python3 -c "import sys; sys.path.insert(0, '$BENCH'); import zipf_set; zipf_set.make('$C', '$ZIPF')"

sweep() { # NAME ALGO TIME_LIMIT_S ARGS...: one `corral scale` row per thread count
  local name=$1 algo=$2 limit=$3; shift 3
  [ "$(left)" -lt 20 ] && { echo "=== skip $name $algo (budget)"; return; }
  echo "=== $name $algo $* (budget left $(left) s)"
  local t=$(( $(left) < 120 ? $(left) : 120 ))
  timeout "$t" "$C" scale --algo "$algo" --threads "$T" --time-limit "$limit" --csv "$TMP/s.csv" \
      --plot "$TMP/plots/${name}_${algo}" "$@" &&
    { echo "# $name $algo"; cat "$TMP/s.csv"; } >> "$OUT/sweep_csv.txt"
}
for a in hogwild hogwild++ dpsgd local choco; do
  sweep zipf "$a" 6 --data "$ZIPF" --epochs 10 --lr 0.25
done
for a in hogwild hogwild++ dpsgd local; do
  sweep a9a "$a" 6 --data "$D/a9a/a9a" --test "$D/a9a/a9a.t" --epochs 20
done
for a in hogwild hogwild++ dpsgd local; do
  sweep mlp "$a" 10 --data "$F/train-images-idx3-ubyte.gz" --test "$F/t10k-images-idx3-ubyte.gz" \
      --format idx --model mlp --hidden 256,128 --batch 16 --lr 0.05 --epochs 3
done
tar cf "$OUT/plots.tar" -C "$TMP" plots

replica_speed() { # FILE TIMEOUT_S ARGS...
  local file=$1 most=$2; shift 2
  [ "$(left)" -lt 30 ] && { echo "=== skip replica_speed $* (budget)"; return; }
  echo "=== replica_speed $* (budget left $(left) s)"
  timeout $(( $(left) < most ? $(left) : most )) python3 "$BENCH/replica_speed.py" --corral "$C" \
      --data "$D" --repeat 1 "$@" >> "$OUT/$file" 2>&1
  tail -30 "$OUT/$file"
}
replica_speed replica_2.txt 150 --threads 2 --only zipf
replica_speed replica_2.txt 100 --threads 2 --only mlp
replica_speed replica_2.txt 40 --threads 2 --only a9a
replica_speed "replica_${T##*,}.txt" 60 --threads "${T##*,}" --only zipf
rm -rf "$TMP"; date -u; echo "total $((SECONDS - START)) s"
