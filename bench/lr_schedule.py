#!/usr/bin/python3
"""--lr-schedule and --warmup: the final objective per schedule (issue 20).

For a9a and the generated Zipf set (bench/zipf_set.py): `corral train --algo hogwild --threads 2
--epochs 10` with each schedule (exp, the default, with its --lr-decay 0.9; inv-sqrt; cosine;
cosine with --warmup 1), once at the searched step (--lr unset, the default) and once at every
fixed step 2^-7 .. 2^1. Reported: the 10th epoch's objective at the searched step, the best
fixed step and its objective, and the searched step's objective relative to that best.

  bench/lr_schedule.py --corral build/engine/cli/corral --a9a ../shared/data/a9a/a9a
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zipf_set  # noqa: E402

SCHEDULES = [("exp", ["--lr-schedule", "exp"]), ("inv-sqrt", ["--lr-schedule", "inv-sqrt"]),
             ("cosine", ["--lr-schedule", "cosine"]),
             ("cosine --warmup 1", ["--lr-schedule", "cosine", "--warmup", "1"])]
GRID = [2.0 ** k for k in range(-7, 2)]


def final(corral, path, epochs, flags, tmp):
    """The last epoch's objective and the run's starting step."""
    metrics = os.path.join(tmp, "m.jsonl")
    subprocess.run([corral, "train", "--data", path, "--algo", "hogwild", "--threads", "2",
                    "--epochs", str(epochs), "--metrics", metrics, "--quiet", *flags], check=True)
    lines = [json.loads(line) for line in open(metrics)]
    summary = next(e for e in lines if e.get("event") == "summary")
    return [e["objective"] for e in lines if e.get("event") != "summary"][-1], summary["lr"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--corral", required=True)
    parser.add_argument("--a9a", required=True)
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="corral-lr-schedule-") as tmp:
        zipf = zipf_set.make(args.corral, os.path.join(tmp, "zipf.cache"))
        for name, path in (("a9a", args.a9a), ("Zipf set", zipf)):
            print(f"{name}: hogwild, 2 threads, {args.epochs} epochs; final objective")
            print(f"  {'schedule':18} {'searched lr':>11} {'objective':>10} "
                  f"{'best fixed lr':>13} {'objective':>10} {'searched/best':>13}")
            for label, flags in SCHEDULES:
                searched, lr = final(args.corral, path, args.epochs, flags, tmp)
                fixed = [(final(args.corral, path, args.epochs, flags + ["--lr", str(g)], tmp)[0], g)
                         for g in GRID]
                best, best_lr = min(fixed)
                print(f"  {label:18} {lr:11.4g} {searched:10.6f} {best_lr:13.4g} {best:10.6f} "
                      f"{searched / best:13.4f}", flush=True)


if __name__ == "__main__":
    main()
