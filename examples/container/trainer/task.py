"""A trainer that runs in a custom container, as on AI Platform.

It reads its arguments (--epochs, --job-dir), the cluster it belongs to (TF_CONFIG and
CLUSTER_SPEC), "trains" a tiny linear model with plain Python and writes it to the job dir.
Inside Trainyard a gs:// job dir is the bucket store mounted at TRAINYARD_BUCKETS_DIR; outside
(a bare `podman run`) a local path works too.
"""

import argparse
import json
import os
import random


def local_path(uri):
    """The file-system path of a job dir: gs://B/O maps into the mounted bucket store."""
    if uri.startswith("gs://"):
        root = os.environ.get("TRAINYARD_BUCKETS_DIR")
        if not root:
            raise SystemExit("job dir %s needs TRAINYARD_BUCKETS_DIR (run it through Trainyard)" % uri)
        return os.path.join(root, uri[len("gs://"):])
    return uri


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--job-dir", default="")
    args = parser.parse_args()

    tf_config = json.loads(os.environ.get("TF_CONFIG", "{}"))
    task = tf_config.get("task", {"type": "master", "index": 0})
    print("task %s %s of cluster %s" % (task.get("type"), task.get("index"),
                                       sorted(tf_config.get("cluster", {}))), flush=True)

    # y = 3x + 1 with noise, fitted by gradient descent.
    rng = random.Random(0)
    data = [(x / 100.0, 3 * x / 100.0 + 1 + rng.gauss(0, 0.05)) for x in range(100)]
    w, b = 0.0, 0.0
    for epoch in range(1, args.epochs + 1):
        for _ in range(200):
            gw = sum((w * x + b - y) * x for x, y in data) / len(data)
            gb = sum((w * x + b - y) for x, y in data) / len(data)
            w, b = w - 0.5 * gw, b - 0.5 * gb
        loss = sum((w * x + b - y) ** 2 for x, y in data) / len(data)
        print("epoch %d/%d loss %.5f" % (epoch, args.epochs, loss), flush=True)

    if args.job_dir and task.get("type") in ("master", "chief"):
        out = local_path(args.job_dir)
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "model.json"), "w") as f:
            json.dump({"w": w, "b": b, "epochs": args.epochs}, f)
        print("model written to %s" % os.path.join(args.job_dir, "model.json"), flush=True)


if __name__ == "__main__":
    main()
