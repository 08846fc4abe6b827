"""The XGBoost parts the single-replica and the distributed algorithm share: the hyperparameter
arguments (Google's reference page, defaults included), the objective's kind, the metrics."""

from . import common

# Objectives of XGBoost 0.81 that Google lists, with 1.7's names beside the old ones.
CLASSIFICATION = ("binary:logistic", "binary:logitraw", "binary:hinge", "multi:softmax",
                  "multi:softprob")
REGRESSION = ("reg:linear", "reg:squarederror", "reg:squaredlogerror", "reg:logistic",
              "reg:pseudohubererror", "reg:gamma", "reg:tweedie", "count:poisson", "survival:cox",
              "rank:pairwise", "rank:ndcg", "rank:map")
OBJECTIVES = CLASSIFICATION + REGRESSION

# XGBoost's default evaluation metric per objective (what it reports without eval_metric).
DEFAULT_METRIC = {
    "binary:logistic": "error", "binary:logitraw": "error", "binary:hinge": "error",
    "multi:softmax": "merror", "multi:softprob": "merror", "reg:logistic": "rmse",
    "reg:gamma": "gamma-deviance", "reg:tweedie": "tweedie-nloglik@1.5",
    "count:poisson": "poisson-nloglik", "survival:cox": "cox-nloglik", "rank:pairwise": "map",
    "rank:ndcg": "ndcg", "rank:map": "map", "reg:squaredlogerror": "rmsle",
    "reg:pseudohubererror": "mphe",
}
METRICS = ("rmse", "rmsle", "mae", "mape", "mphe", "logloss", "error", "merror", "mlogloss",
           "auc", "aucpr", "ndcg", "map", "poisson-nloglik", "gamma-nloglik", "cox-nloglik",
           "gamma-deviance", "tweedie-nloglik")

# (argument, type, default or None = XGBoost's own) passed to XGBoost as parameters.
TREE_PARAMS = [
    ("booster", str, "gbtree"),
    ("max_depth", int, 6),
    ("eta", float, 0.3),
    ("gamma", float, 0.0),
    ("min_child_weight", float, 1.0),
    ("max_delta_step", float, 0.0),
    ("subsample", float, 1.0),
    ("colsample_bytree", float, 1.0),
    ("colsample_bylevel", float, 1.0),
    ("colsample_bynode", float, 1.0),
    ("lambda", float, 1.0),
    ("alpha", float, 0.0),
    ("tree_method", str, "auto"),
    ("sketch_eps", float, None),
    ("scale_pos_weight", float, 1.0),
    ("updater", str, None),
    ("refresh_leaf", int, None),
    ("process_type", str, None),
    ("grow_policy", str, None),
    ("max_leaves", int, None),
    ("max_bin", int, None),
    ("num_class", int, None),
    ("base_score", float, None),
    ("sample_type", str, None),
    ("normalize_type", str, None),
    ("rate_drop", float, None),
    ("one_drop", int, None),
    ("skip_drop", float, None),
    ("tweedie_variance_power", float, None),
    ("seed", int, 0),
]


def add_xgboost_arguments(p):
    p.add_argument("--objective", required=True)
    p.add_argument("--eval_metric", default=None)
    p.add_argument("--num_boost_round", type=common.positive_int, default=10)
    p.add_argument("--early_stopping_rounds", type=common.positive_int, default=None)
    p.add_argument("--csv_weight", type=int, choices=(0, 1), default=0)
    for name, typ, default in TREE_PARAMS:
        p.add_argument("--" + name, type=typ, default=default)


def check_objective(args):
    if args.objective not in OBJECTIVES:
        common.fail("--objective %s is not an objective of the built-in XGBoost algorithm; use "
                    "one of %s" % (args.objective, ", ".join(OBJECTIVES)))
    if args.booster not in ("gbtree", "gblinear", "dart"):
        common.fail("--booster %s: use gbtree, gblinear or dart" % args.booster)
    if args.objective.startswith("multi:") and args.num_class is None:
        common.fail("--num_class is required with --objective %s" % args.objective)
    if args.objective == "reg:linear":
        args.objective = "reg:squarederror"  # XGBoost 0.81's name for it
    metrics = (args.eval_metric or DEFAULT_METRIC.get(args.objective, "rmse")).split(",")
    for m in metrics:
        base = m.split("@", 1)[0]
        if base not in METRICS:
            common.fail("--eval_metric %s is not an evaluation metric of XGBoost; use one of %s"
                        % (m, ", ".join(METRICS)))
    return [m.strip() for m in metrics]


def is_classification(objective):
    return objective in CLASSIFICATION


def params_of(args, metrics):
    params = {"objective": args.objective, "eval_metric": metrics, "verbosity": 1}
    for name, _, _ in TREE_PARAMS:
        value = getattr(args, name)
        if value is not None:
            params[name] = value
    if not args.objective.startswith("multi:"):
        params.pop("num_class", None)
    return params


def check_labels(args, y, where, arg):
    """The labels the objective accepts: 0/1 for binary, 0..num_class-1 for multi."""
    import numpy as np
    if args.objective.startswith("binary:") or args.objective == "reg:logistic":
        bad = np.nonzero((y < 0) | (y > 1))[0]
        if len(bad):
            i = bad[0]
            common.fail("--%s: row %d of %s has the label %g; --objective %s needs labels in "
                        "[0, 1] (with --preprocess a target of two classes becomes 0 and 1)"
                        % (arg, where[i][1], where[i][0], y[i], args.objective))
    if args.objective.startswith("multi:"):
        bad = np.nonzero((y < 0) | (y >= args.num_class) | (y != np.floor(y)))[0]
        if len(bad):
            i = bad[0]
            common.fail("--%s: row %d of %s has the label %g; --num_class %d needs labels 0 to %d"
                        % (arg, where[i][1], where[i][0], y[i], args.num_class,
                           args.num_class - 1))


class MetricCallback(object):
    """Reports each round's metrics of the evaluation set (the last in evals) via Reporter."""

    def __init__(self, reporter, eval_name):
        import xgboost
        self.reporter = reporter
        self.eval_name = eval_name
        self.last = {}

        outer = self

        class _CB(xgboost.callback.TrainingCallback):
            def after_iteration(self, model, epoch, evals_log):
                metrics = {k: float(v[-1]) for k, v in evals_log.get(outer.eval_name, {}).items()}
                outer.last = metrics
                outer.reporter.report(metrics, epoch + 1)
                return False

        self.callback = _CB()
