"""A small scikit-learn trainer in the shape of Google's AI Platform samples.

It trains a logistic-regression classifier on the iris data set (bundled with scikit-learn, so
no download), reports accuracy per epoch, and writes model.joblib and metrics.json to --job-dir.

Run it directly:   python3 -m trainer.task --epochs 3 --job-dir /tmp/out
Or on Trainyard:   trainyard jobs submit training JOB --package-path trainer ...
"""

import argparse
import json
import logging
import os
import sys
import urllib.parse
import urllib.request

import joblib
import numpy as np
from sklearn.datasets import load_iris
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split


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


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--job-dir", default=os.environ.get("AIP_MODEL_DIR", "/tmp/trainer-out"))
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    logging.basicConfig(level=logging.INFO)
    tf_config = json.loads(os.environ.get("TF_CONFIG", "{}"))
    task = tf_config.get("task", {})
    print("Job %s, task %s %s" % (os.environ.get("CLOUD_ML_JOB_ID", "(local)"),
                                   task.get("type", "master"), task.get("index", 0)))

    x, y = load_iris(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.3, random_state=args.seed)
    model = SGDClassifier(loss="log_loss", learning_rate="constant", eta0=args.learning_rate,
                          random_state=args.seed)
    classes = np.unique(y)
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        for _ in range(10):
            model.partial_fit(x_train, y_train, classes=classes)
        accuracy = float(model.score(x_test, y_test))
        logging.info("epoch %d/%d accuracy %.4f", epoch, args.epochs, accuracy)

    model_uri = write_output(args.job_dir, "model.joblib", _dump(model))
    write_output(args.job_dir, "metrics.json",
                 json.dumps({"accuracy": accuracy, "epochs": args.epochs}).encode())
    print("Saved model to %s (accuracy %.4f)" % (model_uri, accuracy))
    return 0


def _dump(model):
    import io
    buf = io.BytesIO()
    joblib.dump(model, buf)
    return buf.getvalue()


if __name__ == "__main__":
    sys.exit(main())
