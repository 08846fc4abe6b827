#!/usr/bin/python3
"""The built-in algorithms' wrapper overhead: time and accuracy of Trainyard's trainer against
the same library called directly on the same data.

Data: generated with scikit-learn (make_classification, make_regression; seed 0), written as
a CSV without header, target first. Both sides train on the same rows and are scored on the same
held-out rows:

  boosted_trees   `python -m trainyard_algorithms.boosted_trees` (no --preprocess, with
                  --validation_data_path) vs xgboost.train with the same parameters
  linear_learner  `python -m trainyard_algorithms.linear_learner` vs scikit-learn's
                  LogisticRegression (the reference accuracy of a linear model on the data)

Both sides are a fresh /usr/bin/python3 process timed from spawn to exit, run alternately:
"wrapper" is Trainyard's trainer (imports, CSV parsing and checks, training, writing the model
and metadata), "direct" a script that imports the library, loads the CSV with numpy, trains with
the same parameters and saves the model. The difference is the wrapper's overhead. (A job
through trainyardd adds the daemon's start-up overhead on top: bench_overhead.py.)

    /usr/bin/python3 bench/bench_builtin.py [--rows 20000] [--features 20] [--repeat 3]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_csv(path, y, x):
    np.savetxt(path, np.column_stack([y, x]), delimiter=",", fmt="%.6g")


DIRECT_XGB = """
import sys, numpy as np, xgboost
train, val, rounds, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
m, mv = np.loadtxt(train, delimiter=","), np.loadtxt(val, delimiter=",")
dtrain = xgboost.DMatrix(m[:, 1:], label=m[:, 0])
dval = xgboost.DMatrix(mv[:, 1:], label=mv[:, 0])
params = {"objective": "binary:logistic", "eval_metric": "error", "max_depth": 6, "eta": 0.3,
          "seed": 0}
b = xgboost.train(params, dtrain, num_boost_round=rounds, evals=[(dval, "validation")],
                  verbose_eval=False)
b.save_model(out)
"""

DIRECT_LOGREG = """
import sys, pickle, numpy as np
from sklearn.linear_model import LogisticRegression
m = np.loadtxt(sys.argv[1], delimiter=",")
pickle.dump(LogisticRegression(max_iter=1000).fit(m[:, 1:], m[:, 0]), open(sys.argv[2], "wb"))
"""


def run_direct(script, args):
    return run(["/usr/bin/python3", "-c", script] + args, dict(os.environ))


def run_wrapper(module, args):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    env.pop("CLOUD_ML_TRIAL_ID", None)
    return run(["/usr/bin/python3", "-m", module] + args, env)


def run(argv, env):
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit("%s failed:\n%s" % (argv[:3], p.stderr))
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=50)
    a = ap.parse_args()

    import torch
    import xgboost
    from sklearn.datasets import make_classification

    x, y = make_classification(n_samples=a.rows, n_features=a.features, n_informative=10,
                               random_state=0)
    n_train = int(a.rows * 0.8)
    tmp = tempfile.mkdtemp(prefix="bench_builtin_")
    train_csv, val_csv = os.path.join(tmp, "train.csv"), os.path.join(tmp, "val.csv")
    write_csv(train_csv, y[:n_train], x[:n_train])
    write_csv(val_csv, y[n_train:], x[n_train:])
    xv, yv = x[n_train:], y[n_train:]

    rows = []
    # --- XGBoost ---
    w_times, d_times = [], []
    direct_model = os.path.join(tmp, "direct.bst")
    for r in range(a.repeat):
        out = os.path.join(tmp, "bt%d" % r)
        w_times.append(run_wrapper("trainyard_algorithms.boosted_trees", [
            "--job-dir", out, "--training_data_path", train_csv, "--validation_data_path",
            val_csv, "--objective", "binary:logistic", "--num_boost_round", str(a.rounds)]))
        d_times.append(run_direct(DIRECT_XGB, [train_csv, val_csv, str(a.rounds),
                                               direct_model]))
    wrapped = xgboost.Booster(model_file=os.path.join(tmp, "bt0", "model", "model.bst"))
    direct = xgboost.Booster(model_file=direct_model)
    acc_w = float(((wrapped.predict(xgboost.DMatrix(xv)) > 0.5) == yv).mean())
    acc_d = float(((direct.predict(xgboost.DMatrix(xv)) > 0.5) == yv).mean())
    rows.append(("boosted_trees (%d rounds)" % a.rounds, w_times, d_times, acc_w, acc_d,
                 "xgboost.train"))

    # --- linear learner ---
    w_times, d_times = [], []
    ref_path = os.path.join(tmp, "logreg.pkl")
    for r in range(a.repeat):
        out = os.path.join(tmp, "ll%d" % r)
        w_times.append(run_wrapper("trainyard_algorithms.linear_learner", [
            "--job-dir", out, "--training_data_path", train_csv, "--validation_data_path",
            val_csv, "--model_type", "classification", "--learning_rate", "0.1",
            "--num_epochs", "5", "--eval_frequency_secs", "1e9"]))
        d_times.append(run_direct(DIRECT_LOGREG, [train_csv, ref_path]))
    model = torch.jit.load(os.path.join(tmp, "ll0", "model", "model.pt"))
    with torch.no_grad():
        p = model(torch.tensor(xv, dtype=torch.float32), torch.zeros((len(xv), 0),
                                                                       dtype=torch.int64))
    import pickle
    ref = pickle.load(open(ref_path, "rb"))
    acc_w = float(((p.numpy() > 0.5) == yv).mean())
    acc_d = float((ref.predict(xv) == yv).mean())
    rows.append(("linear_learner (FTRL, 5 epochs)", w_times, d_times, acc_w, acc_d,
                 "sklearn LogisticRegression (accuracy reference; not the same algorithm)"))

    print("data: make_classification %d rows x %d features, %d train / %d held out; median of %d"
          % (a.rows, a.features, n_train, a.rows - n_train, a.repeat))
    print("| algorithm | wrapper s | direct s | overhead s | wrapper accuracy | direct accuracy "
          "| direct is |")
    print("|---|---|---|---|---|---|---|")
    for name, wt, dt, aw, ad, what in rows:
        mw, md = statistics.median(wt), statistics.median(dt)
        print("| %s | %.2f | %.2f | %.2f | %.4f | %.4f | %s |" % (name, mw, md, mw - md, aw, ad,
                                                                   what))


if __name__ == "__main__":
    main()
