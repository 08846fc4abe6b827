"""The built-in distributed XGBoost algorithm (gcr.io/cloud-ml-algos/xgboost_dist).

Every replica (the master and each worker) trains on its share of the data with XGBoost's own
collective (Rabit): the master runs XGBoost's RabitTracker on its address from TF_CONFIG's
cluster (the port Trainyard picked for it), the workers connect to it, and the trees are built
from histograms summed over all replicas. The master writes the model and reports the metrics.

As on AI Platform: no automatic preprocessing (every value a number, blank = missing), the data
is one CSV file or a wildcard of files (--training_data_path gs://b/data/part-*.csv), and the
algorithm needs workers (use boosted_trees for one replica). A replica's share: whole files when
there are at least as many files as replicas, else every N-th row.
"""

import json
import os
import time

import numpy as np

from . import common, xgb_common

ALGORITHM = "xgboost_dist"


def cluster():
    """(my rank, world size, tracker host, tracker port) from TF_CONFIG: the master is rank 0,
    worker i is rank i + 1; the tracker listens on the master's address."""
    try:
        tf_config = json.loads(os.environ.get("TF_CONFIG", "") or "{}")
    except ValueError:
        tf_config = {}
    spec = tf_config.get("cluster", {})
    task = tf_config.get("task", {})
    primary = "chief" if "chief" in spec else "master"
    masters, workers = spec.get(primary, []), spec.get("worker", [])
    if not masters or not workers:
        common.fail("the distributed XGBoost algorithm (xgboost_dist) runs on a master and at "
                    "least one worker: set --scale-tier CUSTOM with --worker-count (workerCount "
                    "and workerType); for one replica use the boosted_trees algorithm")
    if "ps" in spec or "evaluator" in spec:
        common.fail("the distributed XGBoost algorithm uses a master and workers only: remove "
                    "the parameter servers and evaluators (parameterServerCount, "
                    "evaluatorCount)")
    kind, index = task.get("type", primary), int(task.get("index", 0))
    rank = 0 if kind == primary else index + 1
    host, port = masters[0].rsplit(":", 1)
    mine = (masters + workers)[rank].rsplit(":", 1)[0]
    same_host = sum(1 for a in masters + workers if a.rsplit(":", 1)[0] == mine)
    return rank, 1 + len(workers), host, int(port), kind == primary, same_host


def threads(replicas_here):
    """XGBoost's threads: this replica's share of the CPUs it may use. Replicas on one host
    (Trainyard's local backend) would otherwise each start a thread per CPU and spin against
    each other in every allreduce."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, cpus // max(1, replicas_here))


def main(argv):
    p = common.ArgumentParser(ALGORITHM)
    common.add_data_arguments(p, preprocessing=False)
    xgb_common.add_xgboost_arguments(p)
    args = p.parse(argv)
    metrics = xgb_common.check_objective(args)
    rank, world, host, port, is_master, replicas_here = cluster()
    reporter = common.Reporter(metrics) if is_master else None

    import xgboost
    from xgboost import collective
    from xgboost.tracker import RabitTracker

    started = time.time()
    tracker = None
    if is_master:
        tracker = RabitTracker(host_ip=host, n_workers=world, port=port, sortby="task")
        tracker.start(world)
        print("Rabit tracker for %d replicas on %s:%d" % (world, host, port), flush=True)

    sets = {}
    for name, arg in (("training", "training_data_path"), ("validation", "validation_data_path")):
        uri = getattr(args, arg)
        if not uri:
            continue
        files = common.expand_paths(uri, arg)
        if len(files) >= world:
            mine, shard = files[rank::world], None
            common.check_fits(mine)
        else:
            mine, shard = files, (rank, world)
            common.check_fits(mine, 1.0 / world)
        rows, where = common.read_csv(uri, arg, files=mine, shard=shard)
        if args.csv_weight and len(rows[0]) < 3:
            common.fail("--csv_weight 1 takes the second column as the weights: the CSV needs "
                        "the target, the weight and at least one feature")
        m = common.numeric_matrix(rows, where, arg, allow_missing=True)
        y = m[:, 0]
        weights = m[:, 1] if args.csv_weight else None
        x = m[:, 2:] if args.csv_weight else m[:, 1:]
        xgb_common.check_labels(args, y, where, arg)
        sets[name] = xgboost.DMatrix(x, label=y, weight=weights, missing=np.nan,
                                     nthread=threads(replicas_here))
    print("Replica %d of %d: %d training rows x %d features" % (
        rank, world, sets["training"].num_row(), sets["training"].num_col()), flush=True)

    env = {"DMLC_TRACKER_URI": host, "DMLC_TRACKER_PORT": port, "DMLC_TASK_ID": "%04d" % rank}
    params = xgb_common.params_of(args, metrics)
    params.setdefault("nthread", threads(replicas_here))
    eval_name = "validation" if "validation" in sets else "training"
    evals = [(sets["training"], "training")]
    if "validation" in sets:
        evals.append((sets["validation"], "validation"))
    with collective.CommunicatorContext(**env):
        cb = xgb_common.MetricCallback(reporter or _Silent(), eval_name)
        try:
            booster = xgboost.train(params, sets["training"], num_boost_round=args.num_boost_round,
                                    evals=evals, callbacks=[cb.callback], verbose_eval=False,
                                    early_stopping_rounds=args.early_stopping_rounds)
        except xgboost.core.XGBoostError as e:
            first = str(e).strip().splitlines()[0]
            if "Allreduce failed" in first or "Socket" in first or "connect" in first.lower():
                common.fail("XGBoost's collective failed (was another replica lost?): %s"
                            % first)
            common.fail("XGBoost refused the training: %s" % first)
        world_seen = collective.get_world_size()
    if tracker is not None:
        tracker.join()
    if not is_master:
        print("Replica %d done." % rank, flush=True)
        return
    out = common.output_dir(args.job_dir)
    model_dir = common.makedirs_for(out + "/model")
    booster.save_model(os.path.join(model_dir, "model.bst"))
    common.write_metadata(out, {
        "algorithm": ALGORITHM,
        "framework": "XGBOOST",
        "framework_version": xgboost.__version__,
        "runtime_version": xgboost.__version__,
        "python_version": common.python_version(),
        "model_file": "model/model.bst",
        "replicas": world_seen,
        "arguments": {k: v for k, v in vars(args).items() if v is not None},
        "xgboost_params": params,
        "num_boost_round": booster.num_boosted_rounds(),
        "metrics": {eval_name: cb.last},
        "training_seconds": round(time.time() - started, 3),
    })
    print("Model written to %s/model/model.bst (trained on %d replicas)" % (out, world_seen),
          flush=True)


class _Silent(object):
    def report(self, metrics, step):
        pass


if __name__ == "__main__":
    common.run_main(main)
