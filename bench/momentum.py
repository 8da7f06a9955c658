#!/usr/bin/python3
"""--optimizer momentum against sgd on Fashion-MNIST (issue 20): the mlp's test accuracy.

`corral train --model mlp --hidden 256,128 --batch 16 --algo hogwild --threads 2 --epochs 3`
(replica_speed.py's setting) with sgd and with momentum (mu 0.9) at the same --lr 0.05 and at a
few other steps each (momentum's effective step is lr / (1 - mu), so its grid sits 10x lower).
Reported: each run's test accuracy and objective after the last epoch. Needs Debian's
dataset-fashion-mnist.

  bench/momentum.py --corral build/engine/cli/corral
"""
import argparse
import json
import os
import subprocess
import tempfile

FASHION = "/usr/share/datasets/fashion-mnist"
RUNS = [("sgd", 0.05), ("momentum", 0.05), ("sgd", 0.1), ("sgd", 0.2), ("momentum", 0.005),
        ("momentum", 0.01)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--corral", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    common = ["--data", os.path.join(FASHION, "train-images-idx3-ubyte.gz"),
              "--test", os.path.join(FASHION, "t10k-images-idx3-ubyte.gz"), "--format", "idx",
              "--model", "mlp", "--hidden", "256,128", "--batch", "16", "--algo", "hogwild",
              "--threads", str(args.threads), "--epochs", str(args.epochs), "--quiet"]
    print(f"Fashion-MNIST, mlp 256,128, batch 16, hogwild, {args.threads} threads, "
          f"{args.epochs} epochs (--lr-decay 0.9)")
    print(f"  {'optimizer':10} {'lr':>6} {'test_acc':>9} {'objective':>10}")
    with tempfile.TemporaryDirectory(prefix="corral-momentum-") as tmp:
        metrics = os.path.join(tmp, "m.jsonl")
        for optimizer, lr in RUNS:
            subprocess.run([args.corral, "train", *common, "--optimizer", optimizer, "--lr",
                            str(lr), "--metrics", metrics], check=True)
            last = [json.loads(line) for line in open(metrics)][-2]  # the last epoch
            print(f"  {optimizer:10} {lr:6g} {last['test_acc']:9.4f} {last['objective']:10.6f}",
                  flush=True)


if __name__ == "__main__":
    main()
