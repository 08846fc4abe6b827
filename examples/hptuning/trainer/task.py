"""A scikit-learn trainer for hyperparameter tuning, in the shape of Google's AI Platform samples.

It trains a gradient-boosted classifier on the digits data set (bundled with scikit-learn, so no
download), 5 boosting stages at a time, and after each round reports the test accuracy to the
tuning service with cloudml-hypertune, so the service sees a learning curve (which early stopping
uses). At the end it writes model.joblib and metrics.json to <job-dir>/<trial id>/, since every
trial gets the same --job-dir.

The tuned hyperparameters arrive as flags (--learning_rate=0.1 --max_depth=3 --max_features=sqrt),
after --job-dir; config.yaml next to this package declares them.

Run it directly (from examples/hptuning):
  PYTHONPATH=../../python python3 -m trainer.task --job-dir /tmp/out --max_depth=2
On Trainyard: see README.md (trainyard jobs submit training JOB --config config.yaml ...).
"""

import argparse
import io
import json
import logging
import os
import sys
import urllib.parse
import urllib.request

import hypertune
import joblib
from sklearn.datasets import load_digits
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.model_selection import train_test_split

METRIC_TAG = "accuracy"  # hyperparameterMetricTag in config.yaml


def write_output(job_dir, name, data):
    """Writes bytes to job_dir/name, where job_dir is a local path or a gs:// URI.

    A gs:// URI goes to the bucket store Trainyard serves: straight to its directory when the
    replica runs on the same machine (TRAINYARD_BUCKETS_DIR), otherwise through the Cloud
    Storage JSON API at STORAGE_EMULATOR_HOST (the variable Google's storage clients honour).
    """
    if not job_dir.startswith("gs://"):
        os.makedirs(job_dir, exist_ok=True)
        with open(os.path.join(job_dir, name), "wb") as f:
            f.write(data)
        return os.path.join(job_dir, name)
    bucket, _, prefix = job_dir[len("gs://"):].partition("/")
    obj = "/".join(p for p in (prefix.strip("/"), name) if p)
    local_root = os.environ.get("TRAINYARD_BUCKETS_DIR")
    if local_root and os.path.isdir(os.path.join(local_root, bucket)):
        path = os.path.join(local_root, bucket, obj)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    else:
        host = os.environ.get("STORAGE_EMULATOR_HOST", "https://storage.googleapis.com")
        url = "%s/upload/storage/v1/b/%s/o?uploadType=media&name=%s" % (
            host.rstrip("/"), bucket, urllib.parse.quote(obj, safe=""))
        req = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/octet-stream"})
        urllib.request.urlopen(req).read()
    return "gs://%s/%s" % (bucket, obj)


def trial_id():
    """The trial number, as Google's samples read it: TF_CONFIG's task.trial, else
    CLOUD_ML_TRIAL_ID; empty outside a tuning job."""
    task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {})
    return str(task.get("trial") or os.environ.get("CLOUD_ML_TRIAL_ID", ""))


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--job-dir", default=os.environ.get("AIP_MODEL_DIR", "/tmp/hptuning-out"))
    # Tuned (config.yaml): every trial gets one value of each.
    parser.add_argument("--learning_rate", type=float, default=0.1)
    parser.add_argument("--max_depth", type=int, default=3)
    parser.add_argument("--max_features", choices=["sqrt", "log2"], default="sqrt")
    # Fixed for the whole job.
    parser.add_argument("--n_estimators", type=int, default=40,
                        help="boosting stages in all")
    parser.add_argument("--eval_every", type=int, default=5,
                        help="stages between two accuracy reports")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    logging.basicConfig(level=logging.INFO)
    trial = trial_id()
    logging.info("trial %s: learning_rate=%g max_depth=%d max_features=%s", trial or "-",
                 args.learning_rate, args.max_depth, args.max_features)

    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.3, random_state=args.seed)
    # warm_start: each fit() adds the stages that n_estimators grew by, so the curve is real
    # training progress and a trial stopped early has done less work.
    model = GradientBoostingClassifier(
        learning_rate=args.learning_rate, max_depth=args.max_depth, max_features=args.max_features,
        n_estimators=args.eval_every, warm_start=True, random_state=args.seed)
    hpt = hypertune.HyperTune()
    accuracy = 0.0
    for stages in range(args.eval_every, args.n_estimators + 1, args.eval_every):
        model.set_params(n_estimators=stages)
        model.fit(x_train, y_train)
        accuracy = float(model.score(x_test, y_test))
        hpt.report_hyperparameter_tuning_metric(hyperparameter_metric_tag=METRIC_TAG,
                                                metric_value=accuracy, global_step=stages)
        logging.info("trial %s step %d accuracy %.4f", trial or "-", stages, accuracy)

    # Every trial gets the same --job-dir: keep each trial's model apart, as Google's samples do.
    out_dir = args.job_dir.rstrip("/") + "/" + trial if trial else args.job_dir
    buf = io.BytesIO()
    joblib.dump(model, buf)
    model_uri = write_output(out_dir, "model.joblib", buf.getvalue())
    write_output(out_dir, "metrics.json", json.dumps({
        "accuracy": accuracy, "learning_rate": args.learning_rate, "max_depth": args.max_depth,
        "max_features": args.max_features, "n_estimators": args.n_estimators}).encode())
    print("Saved model to %s (accuracy %.4f)" % (model_uri, accuracy))
    return 0


if __name__ == "__main__":
    sys.exit(main())
