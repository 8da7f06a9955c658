"""corral.train directly: any algorithm, per-epoch callbacks, live snapshots from another
thread, Ctrl-C (KeyboardInterrupt) stopping cleanly, and a model file the CLI reads.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/train_live.py
"""
import threading
import time

import numpy as np
import scipy.sparse as sp

import corral


def main():
    rng = np.random.default_rng(3)
    rows, features, per_row = 100_000, 5000, 10
    # Each row: per_row distinct sorted columns (one from each band of features // per_row).
    band = features // per_row
    cols = rng.integers(0, band, size=(rows, per_row)) + np.arange(per_row) * band
    X = sp.csr_matrix((rng.random(rows * per_row, dtype=np.float32), cols.ravel().astype(np.int32),
                       np.arange(0, rows * per_row + 1, per_row)), shape=(rows, features))
    y = np.where(X @ rng.normal(size=features) > 0, 1.0, -1.0)
    live = corral.LiveModel()
    stop = threading.Event()

    def watch():  # serves predictions from snapshots while training runs
        while not stop.is_set():
            w = live.snapshot()
            if w is not None:
                print(f"  snapshot: |w| = {np.linalg.norm(w):.3f}")
            time.sleep(0.5)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        result = corral.train(X, y, model="logistic", algo="dpsgd", topology="ring", threads=2,
                              epochs=8, callbacks=[lambda m: print(f"epoch {m['epoch']}: "
                                                                   f"objective {m['objective']:.4f}")],
                              live=live)
    except KeyboardInterrupt:
        print("interrupted: the workers stopped and joined")
        return
    finally:
        stop.set()
        watcher.join()
    result.save("train_live.model")  # corral eval --model-file train_live.model --data ...
    print(result.summary["stop_reason"], f"{result.summary['samples_per_s']:.0f} samples/s",
          "warnings:", result.warnings)


if __name__ == "__main__":
    main()
