"""The built-in XGBoost algorithm, single replica (gcr.io/cloud-ml-algos/boosted_trees).

    python -m trainyard_algorithms.boosted_trees --job-dir DIR --training_data_path CSV \
        --objective binary:logistic [--preprocess] [--validation_split 0.2] [hyperparameters]

Trains with Debian's XGBoost (1.7) instead of Google's 0.81; the model is
<output>/model/model.bst, loadable with xgboost.Booster(model_file=...). Each boosting round
reports the validation set's evaluation metrics (XGBoost's names: rmse, error, auc, ...), which
are the metrics a tuning job's hyperparameterMetricTag can name.
"""

import os
import time

import numpy as np

from . import common, xgb_common

ALGORITHM = "boosted_trees"


def load_sets(args, classification):
    """The training, validation and test sets as (X, y, weights, where) plus the preprocessor
    (None without --preprocess) and row counts."""
    v_split, t_split = common.check_splits(args)
    files = common.expand_paths(args.training_data_path, "training_data_path")
    extra = []
    for name in ("validation_data_path", "test_data_path"):
        if getattr(args, name):
            extra += common.expand_paths(getattr(args, name), name)
    common.check_fits(files + extra)
    train_rows, train_where = common.read_csv(args.training_data_path, "training_data_path",
                                              files=files)
    counts = {"read": len(train_rows)}
    sets = {"training": (train_rows, train_where, "training_data_path")}
    if args.validation_data_path:
        r, w = common.read_csv(args.validation_data_path, "validation_data_path")
        sets["validation"] = (r, w, "validation_data_path")
    if args.test_data_path:
        r, w = common.read_csv(args.test_data_path, "test_data_path")
        sets["test"] = (r, w, "test_data_path")
    width = len(train_rows[0])
    for name, (r, w, arg) in sets.items():
        if len(r[0]) != width:
            common.fail("--%s has %d columns; --training_data_path has %d" % (arg, len(r[0]),
                                                                              width))
    if args.csv_weight and width < 3:
        common.fail("--csv_weight 1 takes the second column as the weights: the CSV needs the "
                    "target, the weight and at least one feature")

    pre = None
    if args.preprocess:
        counts["dropped"], _ = common.preprocess_splits(
            sets, train_rows, train_where, v_split, t_split)
        weight_col = None
        if args.csv_weight:
            # The weight column is no feature: keep it aside from the preprocessing.
            weight_col = 1
        fit_rows = [[r[0]] + [v for j, v in enumerate(r) if j > 0 and j != weight_col]
                    for r in sets["training"][0]]
        pre = common.Preprocessor(classification, "--objective %s" % args.objective).fit(
            fit_rows, sets["training"][1])
    out = {}
    for name, (rows, where, arg) in sets.items():
        weights = None
        if args.csv_weight:
            try:
                weights = np.array([float(r[1]) for r in rows])
            except ValueError:
                for i, r in enumerate(rows):
                    if not common.is_number(r[1]):
                        common.fail("--%s: row %d of %s has the weight %r (second column, "
                                    "--csv_weight 1), not a number" % (arg, where[i][1],
                                                                       where[i][0], r[1]))
            rows = [[r[0]] + r[2:] for r in rows]
        if pre is not None:
            y = pre.labels(rows, where, arg)
            x = pre.one_hot(rows)
        else:
            m = common.numeric_matrix(rows, where, arg, allow_missing=True)
            y, x = m[:, 0], m[:, 1:]
        out[name] = (x, y, weights, where, arg)
        counts[name] = len(rows)
    return out, pre, counts


def main(argv):
    p = common.ArgumentParser(ALGORITHM)
    common.add_data_arguments(p)
    xgb_common.add_xgboost_arguments(p)
    args = p.parse(argv)
    metrics = xgb_common.check_objective(args)
    reporter = common.Reporter(metrics)
    classification = xgb_common.is_classification(args.objective)

    import xgboost
    started = time.time()
    sets, pre, counts = load_sets(args, classification)
    if pre is not None and classification and args.objective.startswith("multi:") and \
            len(pre.classes) > args.num_class:
        common.fail("--num_class %d, but the target has %d classes (%s)" % (
            args.num_class, len(pre.classes), ", ".join(pre.classes[:10])))
    for name, (x, y, w, where, arg) in sets.items():
        xgb_common.check_labels(args, y, where, arg)
    names = pre.one_hot_names() if pre is not None else None
    dm = {}
    for name, (x, y, w, _, _) in sets.items():
        dm[name] = xgboost.DMatrix(x, label=y, weight=w, missing=np.nan, feature_names=names,
                                   nthread=-1)
    eval_name = "validation" if "validation" in dm else "training"
    evals = [(dm[eval_name], eval_name)]
    if "test" in dm:
        evals.append((dm["test"], "test"))  # logged, never reported for tuning
    history = {}
    cb = xgb_common.MetricCallback(reporter, eval_name)
    params = xgb_common.params_of(args, metrics)
    print("Training XGBoost %s on %d rows x %d features (%s), evaluating on %s" % (
        xgboost.__version__, dm["training"].num_row(), dm["training"].num_col(),
        args.objective, eval_name), flush=True)
    try:
        booster = xgboost.train(params, dm["training"], num_boost_round=args.num_boost_round,
                                evals=evals, callbacks=[cb.callback], verbose_eval=False,
                                early_stopping_rounds=args.early_stopping_rounds,
                                evals_result=history)
    except xgboost.core.XGBoostError as e:
        common.fail("XGBoost refused the training: %s" % str(e).strip().splitlines()[-1])
    out = common.output_dir(args.job_dir)
    model_dir = common.makedirs_for(out + "/model")
    booster.save_model(os.path.join(model_dir, "model.bst"))
    result = {"validation" if eval_name == "validation" else "training": cb.last}
    if "test" in dm:
        result["test"] = {k: float(v[-1]) for k, v in history.get("test", {}).items()}
        print("test: %s" % " ".join("%s=%.6g" % kv for kv in result["test"].items()), flush=True)
    if pre is not None:
        write_processed(out, sets)
    common.write_metadata(out, {
        "algorithm": ALGORITHM,
        "framework": "XGBOOST",
        "framework_version": xgboost.__version__,
        "runtime_version": xgboost.__version__,
        "python_version": common.python_version(),
        "model_file": "model/model.bst",
        "arguments": {k: v for k, v in vars(args).items() if v is not None},
        "xgboost_params": params,
        "num_boost_round": booster.num_boosted_rounds(),
        "preprocessing": pre.to_json() if pre is not None else None,
        "rows": counts,
        "metrics": result,
        "training_seconds": round(time.time() - started, 3),
    })
    print("Model written to %s/model/model.bst" % out, flush=True)


def write_processed(out, sets):
    d = common.makedirs_for(out + "/processed_data")
    for name, (x, y, _, _, _) in sets.items():
        common.write_csv(os.path.join(d, name + ".csv"), y, x)


if __name__ == "__main__":
    common.run_main(main)
