#!/usr/bin/python3
"""Experiment 1: DCD's replicas are exact; ECD's estimator is unbiased with variance ~1/t.

1a. DCD-PSGD (Tang et al. 2018, Alg. 1): every worker's copies of its neighbours' models must be
    bit-identical to the owners' models after every round (the compressed difference is decoded
    the same way on both sides). Runs corral_dcd_exactness: a ring of 8 on a9a, every round
    compared bitwise, for several compressors.
1b. ECD-PSGD (Alg. 2): over many independent trials of compressing one sender's converging
    trajectory, the receiver's estimate is unbiased (relative bias within 3 standard errors)
    and t * E|yh_t - x_t|^2 levels off (variance ~1/t). Runs corral_ecd_estimator.
Writes estimators_ecd.csv, estimators_dcd.csv and estimators.png.

  bench/experiments/estimators.py [--bin build/bench]
"""

import csv
import io
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

ECD_CODECS = ["qsgd:4", "qsgd:8", "randk:0.1"]
DCD_CODECS = ["qsgd:8", "qsgd:2", "randk:0.1", "none"]


def run(command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    return list(csv.DictReader(io.StringIO(done.stdout)))


def main():
    args = common.arguments(__doc__, bin=(os.path.join(common.ROOT, "build", "bench"),
                                          "the folder with corral_ecd_estimator and corral_dcd_exactness"),
                            trials=(1000, "ECD Monte Carlo trials"))
    ok, why = True, []

    # 1a: DCD exactness.
    dcd_rows = []
    exact = os.path.join(args.bin, "corral_dcd_exactness")
    for codec in DCD_CODECS:
        rows = run([exact, "--data", common.dataset(args, "a9a", "a9a"), "--compress", codec])
        for r in rows:
            dcd_rows.append([codec, r["round"], r["mismatched_coordinates"], r["max_abs_difference"]])
        mismatches = sum(int(r["mismatched_coordinates"]) for r in rows)
        print(f"dcd {codec:10}: {len(rows)} rounds checked, {mismatches} coordinates differ")
        ok &= mismatches == 0 and len(rows) > 0
        why.append(f"dcd {codec}: {mismatches} mismatches in {len(rows)} rounds")
    common.write_csv(args, "estimators_dcd", ["compress", "round", "mismatched_coordinates",
                                              "max_abs_difference"], dcd_rows)

    # 1b: ECD estimator.
    ecd_rows, blocks = [], []
    for codec in ECD_CODECS:
        rows = run([os.path.join(args.bin, "corral_ecd_estimator"), "--compress", codec,
                    "--trials", str(args.trials)])
        block = []
        for r in rows:
            ecd_rows.append([codec, r["t"], r["relative_bias"], r["bias_standard_error"],
                             r["variance_per_coordinate"], r["t_times_variance"]])
            block.append(f"{r['t']},{r['variance_per_coordinate']},{r['t_times_variance']}")
        blocks.append("\n".join(block))
        unbiased = all(float(r["relative_bias"]) <= 3 * float(r["bias_standard_error"]) for r in rows)
        late = [float(r["t_times_variance"]) for r in rows if int(r["t"]) >= 32]
        levels = max(late) / min(late) < 1.5
        print(f"ecd {codec:10}: bias within 3 s.e. at every t: {unbiased}; t*variance from t=32 on "
              f"{min(late):.4g}..{max(late):.4g}")
        ok &= unbiased and levels
        why.append(f"ecd {codec}: unbiased {unbiased}, variance ~1/t {levels}")
    common.write_csv(args, "estimators_ecd", ["compress", "t", "relative_bias", "bias_standard_error",
                                              "variance_per_coordinate", "t_times_variance"], ecd_rows)
    dat = os.path.join(args.out, "estimators_plot.csv")
    with open(dat, "w") as f:
        f.write("\n\n\n".join(blocks) + "\n")
    series = ", \\\n     ".join(f"'{dat}' index {k} using 1:2 with linespoints title 'ecd {c}'"
                                for k, c in enumerate(ECD_CODECS))
    common.plot(args, "estimators", f"""
set title 'ECD estimator: E|yh_t - x_t|^2 per coordinate over {args.trials} trials (dashed: 1/t)'
set logscale xy
set xlabel 't (rounds)'
set ylabel 'variance per coordinate'
plot {series}, \\
     1.0/x dashtype 2 title '1/t'
""")
    return common.verdict("estimators", ok, "; ".join(why))


if __name__ == "__main__":
    sys.exit(main())
