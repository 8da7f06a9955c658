#!/usr/bin/python3
"""Experiment 3: the network grid (Tang et al. 2018, Section 5; Lian et al. 2017).

Softmax on sector (a 5.8M-parameter model), 8 workers, --batch 64, 10 epochs, every link of the
emulated network at latency {0.1, 5} ms x bandwidth {10 Mbit, 1 Gbit} (virtual time, DESIGN.md
§5): sync and qsgd (8 bit) as a parameter server (star), dpsgd on a ring, dcd and ecd on a ring
with qsgd:8, choco on a ring with top-1%. All runs use the step size dpsgd's search picks. The
target objective is dpsgd's final objective + 2%; each cell reports the virtual seconds at the
first evaluation (one per epoch) at or below it. Writes network_grid.csv and network_grid.png.

The seed paper's claim, checked by the verdict: at 5 ms and 10 Mbit, dcd reaches the target
sooner than both dpsgd (ring) and qsgd (star).

  bench/experiments/network_grid.py [--corral build/engine/cli/corral] [--data ../shared/data]
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

CELLS = [("0.1ms", "10Mbit"), ("0.1ms", "1Gbit"), ("5ms", "10Mbit"), ("5ms", "1Gbit")]
ALGOS = [("sync", "star", None), ("qsgd", "star", "qsgd:8"), ("dpsgd", "ring", None),
         ("dcd", "ring", "qsgd:8"), ("ecd", "ring", "qsgd:8"), ("choco", "ring", "topk:0.01")]


def main():
    args = common.arguments(__doc__, workers=(8, "workers"), epochs=(10, "epochs per run"),
                            batch=(64, "rows per worker and round"),
                            target_gap=(0.02, "target = dpsgd's final objective x (1 + this)"))
    train = common.dataset(args, "sector", "sector.scale")
    test = common.dataset(args, "sector", "sector.t.scale")
    base = ["--data", train, "--test", test, "--model", "softmax", "--threads", args.workers,
            "--epochs", args.epochs, "--batch", args.batch, "--seed", 1,
            "--gossip-every", 1]  # the papers' algorithms: a round every step
    reference = common.train(args, "grid_reference", *base, "--algo", "dpsgd", "--topology", "ring")
    if reference.diverged or reference.summary is None:
        sys.exit("dpsgd did not converge:\n" + reference.stderr)
    lr = reference.get("lr")
    target = reference.get("objective") * (1 + args.target_gap)
    print(f"dpsgd reference: objective {reference.get('objective'):.5f}; target {target:.5f}; lr {lr}")

    rows, times = [], {}
    for latency, bandwidth in CELLS:
        link = f"latency={latency},bandwidth={bandwidth}"
        for algo, topology, compress in ALGOS:
            options = [*base, "--algo", algo, "--topology", topology, "--lr", lr, "--link", link]
            if compress:
                options += ["--compress", compress]
            run = common.train(args, f"grid_{algo}_{latency}_{bandwidth}", *options)
            reached = None if run.diverged else run.first_reaching(target)
            final_v = run.points[-1].get("virtual_s") if run.points else None
            times[latency, bandwidth, algo] = reached
            rows.append([latency, bandwidth, algo, topology, compress or "none",
                         f"{reached:.4g}" if reached is not None else "",
                         f"{final_v:.4g}" if final_v is not None else "",
                         f"{run.get('objective'):.6g}", int(run.get("bytes_sent_max", 0)),
                         int(run.diverged)])
            shown = f"{reached:10.2f} s" if reached is not None else "   not reached"
            print(f"{latency:>6} {bandwidth:>7} {algo:6} {topology:5} {compress or 'none':10} "
                  f"to target {shown}   final objective {run.get('objective'):.5f}")
    common.write_csv(args, "network_grid",
                     ["latency", "bandwidth", "algo", "topology", "compress", "virtual_s_to_target",
                      "virtual_s_total", "objective", "bytes_sent_max", "diverged"], rows)

    dat = os.path.join(args.out, "network_grid_plot.csv")
    with open(dat, "w") as f:
        for i, (latency, bandwidth) in enumerate(CELLS):
            cells = [times[latency, bandwidth, a] for a, _, _ in ALGOS]
            f.write(",".join([str(i), f"{latency} {bandwidth}"] +
                             [f"{t:.6g}" if t is not None else "NaN" for t in cells]) + "\n")
    series = ", \\\n     ".join(
        f"'{dat}' using ($1+{(k - 2.5) * 0.13:.3f}):{k + 3}{':xtic(2)' if k == 0 else ''} "
        f"with points pointsize 2 title '{a}'" for k, (a, _, _) in enumerate(ALGOS))
    common.plot(args, "network_grid", f"""
set title 'sector softmax, {args.workers} workers: virtual seconds to dpsgd final objective + {args.target_gap:.0%}'
set ylabel 'virtual seconds to target (log)'
set logscale y
set xrange [-0.6:{len(CELLS) - 0.4}]
set key outside right
plot {series}
""")

    slow = ("5ms", "10Mbit")
    dcd, dpsgd, qsgd = (times[slow + (a,)] for a in ("dcd", "dpsgd", "qsgd"))
    ok = dcd is not None and all(t is None or dcd < t for t in (dpsgd, qsgd))
    show = lambda t: "not reached" if t is None else f"{t:.1f} s"  # noqa: E731
    return common.verdict("network_grid", ok,
                          f"at 5 ms / 10 Mbit dcd {show(dcd)} vs dpsgd {show(dpsgd)} vs qsgd {show(qsgd)}")


if __name__ == "__main__":
    sys.exit(main())
