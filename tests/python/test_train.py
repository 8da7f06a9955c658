"""corral.train: the same models as the CLI, errors with the CLI's messages, stopping."""
import _thread
import json
import os
import resource
import subprocess
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp

import corral
from conftest import random_csr

FIXED = dict(threads=1, epochs=3, seed=5, lr=0.05)


def run_cli(cli, *args):
    return subprocess.run([cli, *args], capture_output=True, text=True)


def test_csr_and_the_same_libsvm_file_give_bit_identical_models(sparse_problem):
    X, y, path = sparse_problem
    from_csr = corral.train(X, y, **FIXED)
    from_file = corral.train(path, **FIXED)
    assert from_csr.params.dtype == np.float32
    np.testing.assert_array_equal(from_csr.params, from_file.params)
    # The step-size search too (lr unset) reads the same data.
    searched = dict(FIXED, lr=0)
    np.testing.assert_array_equal(corral.train(X, y, **searched).params,
                                  corral.train(path, **searched).params)


def test_python_and_cli_train_the_same_model_and_read_each_others_files(cli, sparse_problem, tmp_path):
    X, y, path = sparse_problem
    cli_model = tmp_path / "cli.model"
    r = run_cli(cli, "train", "--data", path, "--threads", "1", "--epochs", "3", "--seed", "5",
                "--lr", "0.05", "--quiet", "--save", str(cli_model))
    assert r.returncode == 0, r.stderr
    py = corral.train(X, y, **FIXED)
    loaded = corral.load_model(cli_model)
    np.testing.assert_array_equal(loaded.params, py.params)
    assert loaded.kind == "logistic" and loaded.epochs_done == 3

    py_model = tmp_path / "py.model"
    py.save(str(py_model))
    r = run_cli(cli, "eval", "--model-file", str(py_model), "--data", path, "--json")
    assert r.returncode == 0, r.stderr
    cli_eval = json.loads(r.stdout)
    ours = corral.load_model(py_model).evaluate(corral.load(path))
    assert cli_eval["loss"] == pytest.approx(ours["loss"], rel=1e-12)
    assert cli_eval["accuracy"] == pytest.approx(ours["accuracy"], rel=1e-12)
    # A Python-saved checkpoint resumes in the CLI.
    resumed = tmp_path / "resumed.model"
    r = run_cli(cli, "train", "--data", path, "--threads", "1", "--epochs", "4", "--seed", "5",
                "--quiet", "--resume", str(py_model), "--save", str(resumed))
    assert r.returncode == 0, r.stderr
    assert corral.load_model(resumed).epochs_done == 4


def test_result_has_history_summary_and_predictions(sparse_problem):
    X, y, _ = sparse_problem
    r = corral.train(X, y, test=(X, y), **FIXED)
    assert [p["epoch"] for p in r.history] == [1, 2, 3]
    assert {"objective", "train_loss", "test_acc", "samples_per_s"} <= set(r.history[-1])
    assert r.summary["stop_reason"] == "epochs" and r.summary["threads"] == 1
    assert isinstance(r.warnings, list)
    margins = r.model.predict(corral.as_dataset(X, y))[:, 0]
    np.testing.assert_allclose(margins, X @ r.params, rtol=1e-4, atol=1e-5)


def test_auto_is_the_default_and_the_summary_names_the_mode_that_ran(sparse_problem):
    X, y, _ = sparse_problem
    linear = corral.train(X, y, threads=2, epochs=1)
    assert linear.summary["algo"] == "hogwild"
    assert linear.summary["algo_reason"] == "logistic updates its rows' coordinates at 2 threads (sparse rows)"
    mlp = corral.train(X, y, model="mlp", hidden=[8], batch=8, threads=2, epochs=1)
    assert mlp.summary["algo"] == "hogwild++" and mlp.summary["group_size"] == 1
    assert mlp.summary["algo_reason"] == "dense model mlp at 2 threads, groups of 1"
    given = corral.train(X, y, algo="hogwild", threads=2, epochs=1)
    assert given.summary["algo"] == "hogwild" and "algo_reason" not in given.summary


def test_shuffle_defaults_to_auto_and_reports_its_choice(sparse_problem):
    """auto resolves on a described machine: with an L3 (hwloc's synthetic 16 MiB) the small set
    is read in place, without a cache size it is re-laid out; the model is the same either way."""
    X, y, _ = sparse_problem
    cached = corral.train(X, y, hardware="synthetic:pack:1 l3:1 core:1", **FIXED)
    uncached = corral.train(X, y, hardware="synthetic:core:1", **FIXED)
    assert cached.summary["shuffle"] == "index" and cached.summary["shuffle_copy_bytes"] == 0
    assert cached.summary["shuffle_reason"].startswith("shard ")
    assert cached.summary["shuffle_requested"] == "auto"
    assert uncached.summary["shuffle"] == "epoch"
    assert uncached.summary["shuffle_reason"] == "no cache size known"
    assert np.array_equal(cached.params, uncached.params)
    explicit = corral.train(X, y, hardware="synthetic:pack:1 l3:1 core:1", shuffle="epoch", **FIXED)
    assert explicit.summary["shuffle"] == "epoch" and "shuffle_reason" not in explicit.summary


# (Python options, the same flags for the CLI): each must fail with the CLI's message.
BAD = [
    (dict(epochs=0), ["--epochs", "0"]),
    (dict(algo="nope"), ["--algo", "nope"]),
    (dict(lr_decay=2.0), ["--lr-decay", "2"]),
    (dict(gamma="x"), ["--gamma", "x"]),
    (dict(algo="adpsgd", gamma="theory"), ["--algo", "adpsgd", "--gamma", "theory"]),
    (dict(hot_sync=-1), ["--hot-sync", "-1"]),
    (dict(shuffle="sometimes"), ["--shuffle", "sometimes"]),
    (dict(algo="dcd", compress="qsgd:99"), ["--algo", "dcd", "--compress", "qsgd:99"]),
    (dict(link="latency=5ms"), ["--link", "latency=5ms"]),
]


@pytest.mark.parametrize("options,flags", BAD)
def test_bad_options_raise_value_error_with_the_cli_message(cli, sparse_problem, options, flags):
    X, y, path = sparse_problem
    r = run_cli(cli, "train", "--data", path, "--quiet", *flags)
    assert r.returncode == 2
    message = r.stderr.strip().removeprefix("corral: error: ")
    with pytest.raises(ValueError) as e:
        corral.train(X, y, **options)
    assert str(e.value) == message


def test_unknown_or_mistyped_options_name_the_option(sparse_problem):
    X, y, _ = sparse_problem
    with pytest.raises(ValueError, match="unknown option 'epoch'"):
        corral.train(X, y, epoch=3)
    with pytest.raises(ValueError, match="--threads: expected an integer"):
        corral.train(X, y, threads="two")


def test_divergence_is_a_runtime_error():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5)).astype(np.float32) * 100
    y = rng.normal(size=200).astype(np.float32) * 100
    with pytest.raises(RuntimeError, match="diverged|NaN|Inf|objective"):
        corral.train(X, y, model="squared", lr=10.0, lr_decay=1.0, epochs=20, threads=1)


def test_callbacks_see_every_epoch_and_can_stop(sparse_problem):
    X, y, _ = sparse_problem
    seen = []
    r = corral.train(X, y, callbacks=[lambda m: seen.append(m["epoch"]) or m["epoch"] < 2],
                     **dict(FIXED, epochs=10))
    assert seen == [1, 2]
    assert r.stop_reason == "observer"


def test_callback_exception_is_raised_after_the_run():
    X, y = random_csr(300, 50, 5, seed=3)

    def boom(metrics):
        raise KeyError("from the callback")
    with pytest.raises(KeyError, match="from the callback"):
        corral.train(X, y, callbacks=[boom], threads=2, epochs=5, lr=0.1)


def test_keyboard_interrupt_from_a_timer_thread_stops_a_long_run():
    X, y = random_csr(20000, 1000, 20, seed=11)
    live = corral.LiveModel()
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            corral.train(X, y, threads=2, epochs=100000, lr=0.01, live=live)
    finally:
        timer.cancel()
    # The run detached its live model: Train returned, after its workers joined.
    assert not live.training
    assert live.snapshot().shape == (1000,)


def test_live_snapshots_from_another_thread():
    X, y = random_csr(20000, 1000, 20, seed=12)
    live = corral.LiveModel()
    assert live.snapshot() is None
    snaps = []
    done = threading.Event()

    def reader():
        while not done.is_set():
            s = live.snapshot()
            if s is not None:
                snaps.append(s)
            time.sleep(0.01)
    t = threading.Thread(target=reader)
    t.start()
    try:
        corral.train(X, y, threads=2, epochs=20, lr=0.01, live=live)
    finally:
        done.set()
        t.join()
    assert snaps and all(s.shape == (1000,) for s in snaps)


def _peak_rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def test_training_on_a_large_csr_matrix_does_not_copy_it():
    # ~240 MB of float32 values and int32 indices, built in chunks (no large temporaries).
    rows, per_row, features = 600_000, 50, 100_000
    nnz = rows * per_row
    data = np.empty(nnz, dtype=np.float32)
    indices = np.empty(nnz, dtype=np.int32)
    rng = np.random.default_rng(1)
    chunk = 50_000
    for r in range(0, rows, chunk):
        n = min(chunk, rows - r)
        cols = np.sort(rng.integers(0, features // per_row, size=(n, per_row), dtype=np.int32)
                       + np.arange(per_row, dtype=np.int32) * (features // per_row), axis=1)
        indices[r * per_row:(r + n) * per_row] = cols.ravel()
        data[r * per_row:(r + n) * per_row] = rng.random(n * per_row, dtype=np.float32)
    indptr = np.arange(0, nnz + 1, per_row, dtype=np.int64)
    X = sp.csr_matrix((data, indices, indptr), shape=(rows, features), copy=False)
    assert np.shares_memory(X.data, data)
    y = np.where(np.arange(rows) % 2 == 0, 1.0, -1.0).astype(np.float32)
    size = data.nbytes + indices.nbytes
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets the peak (VmHWM) to the current RSS
    except OSError:
        pass
    before = _peak_rss_bytes()
    # --shuffle epoch would copy the rows into each epoch's order by design (README,
    # "Shuffling"); index reads them where they lie, which is what this test is about.
    corral.train(X, y, threads=2, epochs=1, lr=0.01, shuffle="index", hot_coords="off")
    grown = _peak_rss_bytes() - before
    assert grown < 0.10 * size, f"peak RSS grew by {grown / 1e6:.0f} MB for {size / 1e6:.0f} MB of data"


def test_every_cli_option_is_an_option_of_train(cli, sparse_problem):
    """Each `corral train` flag is a train() option (or one of its own arguments): a value of the
    wrong type is refused naming that flag, never as an unknown option."""
    import re
    X, y, _ = sparse_problem
    flags = re.findall(r"^\s+--([a-z0-9-]+)", run_cli(cli, "train", "--help").stdout, re.M)
    assert len(flags) > 30
    # train()'s arguments; sample_weight= stands for --weights and --weight-column.
    own = {"data", "test", "format", "features", "quiet", "save", "help", "weights",
           "weight_column"}
    for flag in flags:
        name = flag.replace("-", "_")
        if name in own:
            continue
        with pytest.raises(ValueError) as e:
            corral.train(X, y, **{name: object()})
        assert str(e.value).startswith(f"--{flag}: expected"), str(e.value)


def test_early_stop_keeps_the_best_epochs_model(sparse_problem):
    """validation=FRACTION and early_stop=N reach the library as the CLI's flags do: the run
    stops N epochs after its best validation loss and returns that epoch's model."""
    X, y, _ = sparse_problem
    r = corral.train(X, y, threads=1, epochs=200, lr=2.0, lr_decay=1.0, validation=0.1,
                     early_stop=2)
    assert r.stop_reason == "early-stop"
    best = min(r.history, key=lambda m: m["validation_loss"])
    assert r.summary["best_epoch"] == best["epoch"]
    assert r.history[-1]["epoch"] == best["epoch"] + 2
    assert "validation_auc" in best
    with pytest.raises(ValueError, match="--early-stop watches a validation set"):
        corral.train(X, y, threads=1, early_stop=2)


def test_sample_weights_of_one_are_the_unweighted_run_bit_for_bit(sparse_problem):
    # The library multiplies each loss derivative by its weight: by exactly 1.0f here, at a
    # fixed step and at the searched one (the search steps and scores with the weights too).
    X, y, _ = sparse_problem
    ones = np.ones(X.shape[0], dtype=np.float32)
    for options in (FIXED, dict(FIXED, lr=0)):
        np.testing.assert_array_equal(corral.train(X, y, sample_weight=ones, **options).params,
                                      corral.train(X, y, **options).params)


def test_sample_weights_of_two_are_twice_the_step_at_half_the_l2(sparse_problem):
    # With s = 2 on every row the objective is 2 (mean loss + (l2/4)|w|^2), so SGD at step eta
    # takes the unweighted run's steps at 2 eta with l2 / 2: each update subtracts
    # eta * (2 dloss) x = (2 eta) * dloss x and shrinks by 1 / (1 + eta l2_u) =
    # 1 / (1 + 2 eta (l2_u / 2)). Scaling by 2 is exact in floating point: bit for bit.
    X, y, _ = sparse_problem
    twos = np.full(X.shape[0], 2, dtype=np.int64)  # converted to float32 once
    weighted = corral.train(X, y, sample_weight=twos, **dict(FIXED, l2=1e-3))
    doubled = corral.train(X, y, **dict(FIXED, lr=2 * FIXED["lr"], l2=0.5e-3))
    np.testing.assert_array_equal(weighted.params, doubled.params)
    # The objective it reports is the weighted one: twice the doubled run's.
    assert weighted.history[-1]["objective"] == pytest.approx(
        2 * doubled.history[-1]["objective"], rel=1e-6)


def test_sample_weight_is_the_clis_weights_file_bit_for_bit(cli, sparse_problem, tmp_path):
    X, y, path = sparse_problem
    w = np.random.default_rng(3).integers(0, 4, X.shape[0]).astype(np.float32)
    weights = tmp_path / "weights.txt"
    weights.write_text("".join(f"{v:g}\n" for v in w))
    model = tmp_path / "cli.model"
    r = run_cli(cli, "train", "--data", path, "--weights", str(weights), "--threads", "1",
                "--epochs", "3", "--seed", "5", "--lr", "0.05", "--quiet", "--save", str(model))
    assert r.returncode == 0, r.stderr
    py = corral.train(X, y, sample_weight=w, **FIXED)
    np.testing.assert_array_equal(corral.load_model(model).params, py.params)
    assert not np.array_equal(py.params, corral.train(X, y, **FIXED).params)


@pytest.mark.parametrize("weights, message", [
    (np.ones(5), "sample_weight: has 5 weights for the 2000 rows of csr_matrix, expected one weight per row"),
    (np.ones(0), "sample_weight: has 0 weights for the 2000 rows"),
    (np.ones((2000, 1)), r"sample_weight: expected a 1-d array, one weight per row, got shape \(2000, 1\)"),
    (np.where(np.arange(2000) == 3, -1.0, 1.0), "sample_weight: row 3's weight is -1, expected a finite number >= 0"),
    (np.where(np.arange(2000) == 7, np.nan, 1.0), "sample_weight: row 7's weight is nan"),
    (np.full(2000, 1e40), "sample_weight: row 0's weight is inf"),  # beyond float32
    (np.array(["a"] * 2000), "sample_weight: expected numbers"),
    (np.zeros(2000, dtype=np.float32), "every sample weight is 0, expected at least one above 0"),
])
def test_bad_sample_weights_raise_value_error_naming_the_problem(sparse_problem, weights, message):
    X, y, _ = sparse_problem
    with pytest.raises(ValueError, match=message):
        corral.train(X, y, sample_weight=weights, **FIXED)


def test_the_clis_weight_flags_point_to_sample_weight(sparse_problem):
    X, y, _ = sparse_problem
    for name in ("weights", "weight_column"):
        with pytest.raises(ValueError, match=f"{name}: train\\(\\) takes the weights as sample_weight="):
            corral.train(X, y, **{name: "w.txt"})
