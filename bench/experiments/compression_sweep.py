#!/usr/bin/python3
"""Experiment 2: compression sweep (Tang et al. 2018; re-run in Koloskova et al. 2019, CHOCO).

a9a, L2 logistic regression, a ring of 8 workers: dcd, ecd and choco with every compressor of
the sweep (qsgd 16/8/4/2 bits, rand-k 50/10/1%, top-k 50/10/1%, sign), all at the step size
dpsgd's search picks, against dpsgd itself (full precision). Writes compression_sweep.csv
(final objective, bytes per worker, measured relative compression error, diverged) and
compression_sweep.png (objective per compressor and algorithm).

Expected (DESIGN.md §8): DCD fine at 8-16 bits and failing when the compressor is too coarse
(2 bits, rand-1%); CHOCO converging for every compressor; ECD reported as measured. DCD and ECD
need unbiased compressors: they get rand-k scaled by d/k, and run (with the warning the guard
prints) on the biased top-k and sign; CHOCO takes rand-k unscaled, as in its paper.

  bench/experiments/compression_sweep.py [--corral build/engine/cli/corral] [--data ../shared/data]
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

SWEEP = ["qsgd:16", "qsgd:8", "qsgd:4", "qsgd:2", "randk:0.5", "randk:0.1", "randk:0.01",
         "topk:0.5", "topk:0.1", "topk:0.01", "sign"]
ALGOS = ["dcd", "ecd", "choco"]


def spec_for(algo, spec):
    return spec + ":unscaled" if algo == "choco" and spec.startswith("randk") else spec


def main():
    args = common.arguments(__doc__, workers=(8, "replicas on the ring"),
                            epochs=(10, "epochs per run"), batch=(16, "rows per round"))
    data = common.dataset(args, "a9a", "a9a")
    base = ["--data", data, "--model", "logistic", "--l2", "3.0712e-5", "--threads", args.workers,
            "--topology", "ring", "--epochs", args.epochs, "--batch", args.batch, "--seed", 1,
            "--gossip-every", 1]  # the papers' algorithms: a round every step
    reference = common.train(args, "sweep_dpsgd", *base, "--algo", "dpsgd")
    if reference.diverged or reference.summary is None:
        sys.exit("dpsgd itself did not converge:\n" + reference.stderr)
    lr = reference.get("lr")
    ref_obj, ref_bytes = reference.get("objective"), reference.get("bytes_sent_max")
    print(f"dpsgd: objective {ref_obj:.5f}, {ref_bytes / 1e6:.1f} MB from the busiest worker, lr {lr}")

    rows, table = [], {}
    for spec in SWEEP:
        for algo in ALGOS:
            s = spec_for(algo, spec)
            run = common.train(args, f"sweep_{algo}_{s.replace(':', '_')}", *base, "--algo", algo,
                               "--compress", s, "--lr", lr)
            obj = math.nan if run.diverged else run.get("objective")
            bytes_max = run.get("bytes_sent_max")
            rel = run.points[-1].get("compress_rel_error") if run.points else None
            rel = math.nan if rel is None else rel
            table[algo, spec] = obj
            rows.append([algo, s, f"{obj:.6g}", int(bytes_max) if not math.isnan(bytes_max) else "",
                         f"{bytes_max / ref_bytes:.4f}" if ref_bytes else "", f"{rel:.4g}",
                         int(run.diverged)])
            gap = (obj / ref_obj - 1) * 100 if not math.isnan(obj) else math.nan
            print(f"{algo:6} {s:20} objective {obj:10.5f} ({gap:+7.2f}% vs dpsgd) "
                  f"bytes {bytes_max / ref_bytes if ref_bytes else math.nan:7.4f}x rel.err {rel:.3g}"
                  f"{'  DIVERGED' if run.diverged else ''}")
    common.write_csv(args, "compression_sweep",
                     ["algo", "compress", "objective", "bytes_sent_max", "bytes_vs_dpsgd",
                      "compress_rel_error", "diverged"], rows)

    # Plot: objective per compressor, one line per algorithm; a diverged run is drawn at the top.
    cap = 2 * ref_obj
    dat = os.path.join(args.out, "compression_sweep_plot.csv")
    with open(dat, "w") as f:
        for i, spec in enumerate(SWEEP):
            values = [min(cap, table[a, spec]) if not math.isnan(table[a, spec]) else cap for a in ALGOS]
            f.write(",".join([str(i), spec] + [f"{v:.6g}" for v in values]) + "\n")
    common.plot(args, "compression_sweep", f"""
set title 'a9a logistic, ring of {args.workers}: final objective after {args.epochs} epochs (diverged = top)'
set ylabel 'objective'
set xtics rotate by -30
set yrange [{0.98 * ref_obj}:{cap * 1.02}]
set key top left
plot '{dat}' using 1:3:xtic(2) with linespoints title 'dcd', \\
     '' using 1:4 with linespoints title 'ecd', \\
     '' using 1:5 with linespoints title 'choco', \\
     {ref_obj} with lines dashtype 2 title 'dpsgd (fp32)'
""")

    def close(obj, tolerance):
        return not math.isnan(obj) and obj <= ref_obj * (1 + tolerance)

    dcd_fine = all(close(table["dcd", s], 0.01) for s in ("qsgd:16", "qsgd:8"))
    dcd_fails = any(not close(table["dcd", s], 0.05) for s in ("qsgd:2", "randk:0.01"))
    choco_all = all(not math.isnan(table["choco", s]) for s in SWEEP)
    return common.verdict(
        "compression_sweep", dcd_fine and dcd_fails and choco_all,
        f"dcd within 1% at 16/8 bits: {dcd_fine}; dcd worse than 5% or diverged at 2 bits or "
        f"rand-1%: {dcd_fails}; choco finite for every compressor: {choco_all}")


if __name__ == "__main__":
    sys.exit(main())
