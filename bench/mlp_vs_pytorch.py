#!/usr/bin/python3
"""Corral's mlp against PyTorch's HOGWILD! pattern on Fashion-MNIST, side by side, one epoch.

Both sides train a 784-256-128-10 ReLU network with softmax cross-entropy, plain SGD, batch 16,
for one epoch over the 60,000 training images, with the same number of workers:
  corral:  `corral train --model mlp --algo hogwild --threads N` (samples/s of the summary
           line in --metrics: training time only, evaluation excluded);
  pytorch: the pattern of PyTorch's examples/mnist_hogwild: model.share_memory(), N processes
           from torch.multiprocessing, each with torch.set_num_threads(1), its own optimizer and
           its own 1/N shard, unsynchronised updates of the shared weights. Timed from the start
           barrier to the last process's end (process start-up and imports excluded).
Prints samples/s of both and the ratio corral/pytorch per worker count.

Needs Debian's python3-torch and python3-numpy, and dataset-fashion-mnist (.ci/setup).
Run with the system interpreter (/usr/bin/python3): Debian's torch lives there.

  bench/mlp_vs_pytorch.py --corral build/engine/cli/corral --threads 1,2
"""

import argparse
import gzip
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    """An IDX file (gzip or plain) as a numpy array of its dimensions."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, dtype, dims = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes")
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def labels_path(images_path):
    return images_path.replace("-images-idx3-", "-labels-idx1-")


def run_corral(binary, train, test, threads, lr, epochs, extra):
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "metrics.jsonl")
        cmd = [binary, "train", "--data", train, "--test", test, "--format", "idx",
               "--model", "mlp", "--hidden", "256,128", "--batch", "16", "--algo", "hogwild",
               "--threads", str(threads), "--epochs", str(epochs), "--lr", str(lr),
               "--metrics", metrics, "--quiet"] + extra
        subprocess.run(cmd, check=True)
        with open(metrics) as f:
            lines = [json.loads(line) for line in f if line.strip()]
    summary = next(l for l in lines if l.get("event") == "summary")
    last = [l for l in lines if l.get("event") != "summary"][-1]
    return summary["samples_per_s"], last.get("test_acc")


def torch_worker(rank, processes, model, x, y, lr, batch, barrier, done):
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(rank + 1)
    # The worker's own contiguous shard, visited in a fresh random order (as Corral's workers).
    begin, end = len(x) * rank // processes, len(x) * (rank + 1) // processes
    xs, ys = x[begin:end], y[begin:end]
    order = torch.randperm(end - begin)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    barrier.wait()
    for k in range(0, end - begin, batch):
        idx = order[k:k + batch]
        optimizer.zero_grad()
        loss_fn(model(xs[idx]), ys[idx]).backward()
        optimizer.step()
    done.put(time.perf_counter())


def run_pytorch(train, test, processes, lr, batch):
    import torch
    import torch.multiprocessing as mp
    torch.set_num_threads(1)
    x = torch.from_numpy(read_idx(train).reshape(-1, 784).astype(np.float32) / 255.0)
    y = torch.from_numpy(read_idx(labels_path(train)).astype(np.int64))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10))
    model.share_memory()
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(processes + 1)
    done = ctx.Queue()
    workers = [ctx.Process(target=torch_worker,
                           args=(rank, processes, model, x, y, lr, batch, barrier, done))
               for rank in range(processes)]
    for p in workers:
        p.start()
    barrier.wait()
    start = time.perf_counter()
    end = max(done.get() for _ in workers)
    for p in workers:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"a PyTorch worker failed with exit code {p.exitcode}")
    samples_per_s = len(x) / (end - start)

    xt = torch.from_numpy(read_idx(test).reshape(-1, 784).astype(np.float32) / 255.0)
    yt = torch.from_numpy(read_idx(labels_path(test)).astype(np.int64))
    with torch.no_grad():
        acc = (model(xt).argmax(1) == yt).float().mean().item()
    return samples_per_s, acc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corral", default="build/engine/cli/corral", help="the corral binary")
    ap.add_argument("--train", default=f"{DATA}/train-images-idx3-ubyte.gz")
    ap.add_argument("--test", default=f"{DATA}/t10k-images-idx3-ubyte.gz")
    ap.add_argument("--threads", default="1,2", help="worker counts, comma-separated")
    ap.add_argument("--lr", type=float, default=0.05,
                    help="step size of both sides (fixed, so no step-size search is timed)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per side; the best is shown")
    ap.add_argument("--corral-arg", action="append", default=[],
                    help="extra argument for corral train (repeatable)")
    args = ap.parse_args()

    print(f"{'workers':>7} {'corral samples/s':>17} {'pytorch samples/s':>18} {'ratio':>7}"
          f" {'corral acc':>10} {'pytorch acc':>11}")
    for n in (int(t) for t in args.threads.split(",")):
        corral = max((run_corral(args.corral, args.train, args.test, n, args.lr, 1,
                                 args.corral_arg) for _ in range(args.repeat)),
                     key=lambda r: r[0])
        torch_ = max((run_pytorch(args.train, args.test, n, args.lr, 16)
                      for _ in range(args.repeat)), key=lambda r: r[0])
        acc = f"{corral[1]:.4f}" if corral[1] is not None else "-"
        print(f"{n:>7} {corral[0]:>17,.0f} {torch_[0]:>18,.0f} {corral[0] / torch_[0]:>7.2f}"
              f" {acc:>10} {torch_[1]:>11.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
