"""AI Platform's built-in algorithms end to end (docs/builtin-algorithms.md): jobs whose image is
gcr.io/cloud-ml-algos/<name>, submitted with the `trainyard` CLI and with the real gcloud, run
Trainyard's trainers on Debian's XGBoost and PyTorch; the models they write are loaded here with
those libraries directly. One daemon for the module; the jobs of a test run side by side."""

import csv
import json
import os
import random
import subprocess
import urllib.request

import numpy as np
import pytest

from conftest import BIN, PROJECT, Daemon

BUCKET = "algos-itest"
BT = "gcr.io/cloud-ml-algos/boosted_trees:latest"


@pytest.fixture(scope="module")
def algos(tmp_path_factory):
    root = tmp_path_factory.mktemp("algos")
    data = root / "data"
    data.mkdir()
    cfg = root / "trainyardd.yaml"
    # Room for the jobs of one test at once, whatever this machine has.
    cfg.write_text("node_cpus: 16\nnode_memory: \"64GiB\"\n")
    d = Daemon(str(data), extra_args=["--config", str(cfg)]).start()
    status, body = d.request("POST", "/storage/v1/b?project=%s" % PROJECT, {"name": BUCKET})
    assert status == 200, body
    d.buckets = os.path.join(str(data), "buckets")
    yield d
    d.stop()


def upload(d, name, text):
    status, body = d.request(
        "POST", "/upload/storage/v1/b/%s/o?uploadType=media&name=%s" % (
            BUCKET, urllib.request.quote(name, safe="")), raw=text.encode())
    assert status == 200, body
    return "gs://%s/%s" % (BUCKET, name)


def local(d, uri):
    assert uri.startswith("gs://")
    return os.path.join(d.buckets, uri[len("gs://"):])


def classification_csv(n=300, seed=0, blanks=True):
    """Target 0/1 from two numeric features and a categorical one; a few blanks."""
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        a, b = rng.gauss(0, 1), rng.gauss(0, 1)
        color = rng.choice(["red", "green", "blue"])
        y = int(1.5 * a - b + (1.0 if color == "red" else 0.0) + rng.gauss(0, 0.3) > 0)
        row = [str(y), "%.4f" % a, "%.4f" % b, color, "%.4f" % rng.gauss(0, 1)]
        if blanks and i % 40 == 7:
            row[4] = ""
        lines.append(",".join(row))
    return "\n".join(lines) + "\n"


def regression_csv(n=300, seed=1):
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        x = [rng.gauss(0, 1) for _ in range(3)]
        y = 3 * x[0] - 2 * x[1] + 0.5 * x[2] + rng.gauss(0, 0.1)
        lines.append(",".join("%.4f" % v for v in [y] + x))
    return "\n".join(lines) + "\n"


def submit(d, job_id, image, job_dir, args, *extra):
    p = d.cli("jobs", "submit", "training", job_id, "--master-image-uri", image,
              "--job-dir", job_dir, "--region", "us-central1", *extra, "--", *args)
    assert "Job [%s] submitted successfully." % job_id in p.stderr, p.stderr


def finished(d, job_ids, timeout=240):
    out = {}
    for j in job_ids:
        out[j] = d.wait_state(j, ("SUCCEEDED", "FAILED", "CANCELLED"), timeout=timeout)
    return out


def processed(d, job_dir, name):
    with open(local(d, job_dir + "/processed_data/%s.csv" % name)) as f:
        m = np.array([[float(v) for v in row] for row in csv.reader(f)])
    return m[:, 0], m[:, 1:]


# ---------------------------------------------------------------------------------------------


def test_xgboost_linear_and_distributed_with_the_trainyard_cli(algos):
    d = algos
    cls = upload(d, "data/cls.csv", classification_csv())
    reg = upload(d, "data/reg.csv", regression_csv())
    # Three parts of the same regression data for the distributed algorithm (a wildcard).
    lines = regression_csv(seed=2).splitlines()
    for k in range(3):
        upload(d, "data/parts/reg-%d.csv" % k, "\n".join(lines[k::3]) + "\n")
    jd = {j: "gs://%s/out/%s" % (BUCKET, j) for j in ("bt_cls", "bt_reg", "xgb_dist", "ll_cls")}
    submit(d, "bt_cls", BT, jd["bt_cls"], ["--preprocess", "--training_data_path", cls,
                                            "--objective", "binary:logistic",
                                            "--eval_metric", "auc,error", "--num_boost_round",
                                            "20", "--max_depth", "3"])
    submit(d, "bt_reg", "gcr.io/cloud-ml-algos/boosted_trees@sha256:" + "ab" * 32, jd["bt_reg"],
           ["--training_data_path", reg, "--objective", "reg:linear", "--num_boost_round=30"])
    submit(d, "xgb_dist", "gcr.io/cloud-ml-algos/xgboost_dist:latest", jd["xgb_dist"],
           ["--training_data_path", "gs://%s/data/parts/reg-*.csv" % BUCKET,
            "--validation_data_path", reg, "--objective", "reg:squarederror",
            "--num_boost_round", "30"],
           "--scale-tier", "CUSTOM", "--master-machine-type", "n1-standard-4",
           "--worker-machine-type", "n1-standard-4", "--worker-count", "2")
    submit(d, "ll_cls", "gcr.io/cloud-ml-algos/linear_learner_cpu:latest", jd["ll_cls"],
           ["--preprocess", "--training_data_path", cls, "--model_type", "classification",
            "--learning_rate", "0.1", "--max_steps", "150", "--batch_size", "50"])
    jobs = finished(d, jd)
    for j, job in jobs.items():
        assert job["state"] == "SUCCEEDED", (j, job, d.logs(j)[-15:])
        out = job["trainingOutput"]
        assert out["isBuiltInAlgorithmJob"] is True, out
        bio = out["builtInAlgorithmOutput"]
        assert bio["modelPath"] == jd[j] + "/model", bio
        assert bio["pythonVersion"] == "%d.%d" % __import__("sys").version_info[:2], bio

    import torch
    import xgboost
    for j in ("bt_cls", "bt_reg", "xgb_dist"):
        bio = jobs[j]["trainingOutput"]["builtInAlgorithmOutput"]
        assert bio["framework"] == "XGBOOST" and bio["runtimeVersion"] == xgboost.__version__

    # boosted_trees, classification: the model XGBoost loads predicts the held-out test split
    # (as the preprocessing wrote it) well; the metadata says how columns were encoded.
    booster = xgboost.Booster(model_file=local(d, jd["bt_cls"] + "/model/model.bst"))
    y, x = processed(d, jd["bt_cls"], "test")
    acc = float(((booster.predict(xgboost.DMatrix(x)) > 0.5) == (y > 0.5)).mean())
    assert acc > 0.8, acc
    meta = json.load(open(local(d, jd["bt_cls"] + "/artifacts/metadata.json")))
    # The 8 rows with a blank miss 1 of 5 values (more than 10%): dropped; then 0.20 and 0.20.
    rows = meta["rows"]
    assert rows["read"] == 300 and rows["dropped"] == 8, rows
    assert rows["test"] == 58 and rows["validation"] == 58 and rows["training"] == 176, rows
    cat = [c for c in meta["preprocessing"]["features"] if c["type"] == "categorical"]
    assert [c["index"] for c in cat] == [3] and sorted(cat[0]["vocabulary"]) == [
        "blue", "green", "red"]
    assert set(meta["metrics"]["validation"]) == {"auc", "error"}
    logs = "\n".join(e.get("jsonPayload", {}).get("message", "") for e in d.logs("bt_cls"))
    assert "step 20: auc=" in logs, logs

    # boosted_trees, regression without preprocessing, on the raw columns.
    booster = xgboost.Booster(model_file=local(d, jd["bt_reg"] + "/model/model.bst"))
    m = np.array([[float(v) for v in line.split(",")] for line in regression_csv().splitlines()])
    rmse = float(np.sqrt(((booster.predict(xgboost.DMatrix(m[:, 1:])) - m[:, 0]) ** 2).mean()))
    assert rmse < 1.0, rmse  # the target's spread is about 3.6

    # xgboost_dist: three replicas trained one model through XGBoost's collective.
    meta = json.load(open(local(d, jd["xgb_dist"] + "/artifacts/metadata.json")))
    assert meta["replicas"] == 3, meta
    dist_logs = "\n".join(e.get("jsonPayload", {}).get("message", "") for e in d.logs("xgb_dist"))
    for rank in (1, 2):
        assert "Replica %d of 3: 100 training rows" % rank in dist_logs, dist_logs
    booster = xgboost.Booster(model_file=local(d, jd["xgb_dist"] + "/model/model.bst"))
    rmse = float(np.sqrt(((booster.predict(xgboost.DMatrix(m[:, 1:])) - m[:, 0]) ** 2).mean()))
    assert rmse < 1.0, rmse

    # linear learner: a TorchScript model torch loads without Trainyard.
    bio = jobs["ll_cls"]["trainingOutput"]["builtInAlgorithmOutput"]
    assert bio["framework"] == "PYTORCH" and bio["runtimeVersion"] == torch.__version__
    model = torch.jit.load(local(d, jd["ll_cls"] + "/model/model.pt"))
    meta = json.load(open(local(d, jd["ll_cls"] + "/artifacts/metadata.json")))
    assert meta["model_inputs"] == {"dense": [1, 2, 4], "ids": [3]}, meta["model_inputs"]
    vocab = {v: i + 1 for i, v in enumerate(meta["preprocessing"]["features"][2]["vocabulary"])}
    rows = [line.split(",") for line in classification_csv(seed=5, blanks=False).splitlines()]
    dense = torch.tensor([[float(r[1]), float(r[2]), float(r[4])] for r in rows])
    ids = torch.tensor([[vocab[r[3]]] for r in rows])
    with torch.no_grad():
        p = model(dense, ids).numpy()
    acc = float(((p > 0.5) == np.array([r[0] == "1" for r in rows])).mean())
    assert acc > 0.8, acc

    # describe shows them as gcloud does (the trainingOutput block).
    text = d.cli("jobs", "describe", "bt_cls").stdout
    assert "isBuiltInAlgorithmJob: true" in text, text
    assert "framework: XGBOOST" in text and "modelPath: %s/model" % jd["bt_cls"] in text, text


def test_bad_input_fails_the_job_naming_the_argument_or_row(algos, tmp_path):
    d = algos
    reg = upload(d, "bad/reg.csv", regression_csv(n=50))
    ragged = upload(d, "bad/ragged.csv", "1,2,3\n4,5,6\n7,8\n")
    words = upload(d, "bad/words.csv", "1.5,2\n2.5,3\nhigh,4\n")
    header = upload(d, "bad/header.csv", "price,size\n1,2\n")
    huge = upload(d, "bad/huge.csv", "1,2\n")
    # A sparse file of 1 TiB: the trainer refuses it from its size, before reading a byte.
    with open(local(d, huge), "r+b") as f:
        f.truncate(1 << 40)
    out = "gs://%s/bad-out" % BUCKET
    cases = {
        "bad_missing": (BT, ["--training_data_path", "gs://%s/bad/nope.csv" % BUCKET,
                             "--objective", "reg:linear"],
                        "--training_data_path: gs://%s/bad/nope.csv does not exist" % BUCKET),
        "bad_ragged": (BT, ["--training_data_path", ragged, "--objective", "reg:linear"],
                       "row 3 of %s has 2 columns; the rows before it have 3" % ragged),
        "bad_target": (BT, ["--preprocess", "--training_data_path", words, "--objective",
                            "reg:squarederror"],
                       "row 3 of %s: the target (first column) is 'high', not a number; "
                       "--objective reg:squarederror needs a numeric target" % words),
        "bad_header": ("gcr.io/cloud-ml-algos/linear_learner_cpu",
                       ["--training_data_path", header, "--model_type", "regression"],
                       "a header row? the CSV must not have one"),
        "bad_arg": (BT, ["--training_data_path", reg, "--objective", "reg:linear",
                         "--max_dept=3"], "Unknown argument --max_dept"),
        "bad_value": (BT, ["--training_data_path", reg, "--objective", "reg:linear",
                           "--max_depth", "deep"], "argument --max_depth: invalid int value"),
        "bad_objective": (BT, ["--training_data_path", reg, "--objective", "reg:cubic"],
                          "--objective reg:cubic is not an objective"),
        "bad_memory": (BT, ["--training_data_path", huge, "--objective", "reg:linear"],
                       "does not fit this replica's memory"),
        "bad_dist_alone": ("gcr.io/cloud-ml-algos/xgboost_dist",
                           ["--training_data_path", reg, "--objective", "reg:linear"],
                           "runs on a master and at least one worker"),
    }
    for job_id, (image, args, _) in cases.items():
        submit(d, job_id, image, out + "/" + job_id, args)
    jobs = finished(d, cases)
    for job_id, (_, _, words_) in cases.items():
        job = jobs[job_id]
        assert job["state"] == "FAILED", (job_id, job)
        msg = job["errorMessage"]
        assert msg.startswith("The replica master 0 exited with a non-zero status of 1."), msg
        assert words_ in msg, (job_id, msg)
        assert job["trainingOutput"]["isBuiltInAlgorithmJob"] is True
        assert "modelPath" not in job["trainingOutput"].get("builtInAlgorithmOutput", {})
    # A built-in algorithm needs a job dir: refused at create (400 naming the field).
    status, body = d.request("POST", "/v1/projects/%s/jobs" % PROJECT, {
        "jobId": "bad_nodir", "trainingInput": {
            "region": "us-central1", "masterConfig": {"imageUri": BT},
            "args": ["--training_data_path", reg, "--objective", "reg:linear"]}})
    assert status == 400, body
    assert "trainingInput.jobDir" in json.dumps(body), body


# ---------------------------------------------------------------------------------------------
# The real gcloud: submit, tune, describe.


@pytest.fixture(scope="module")
def gcloud(algos, tmp_path_factory):
    import shutil
    if shutil.which("gcloud") is None:
        pytest.fail("`gcloud` is not installed (google-cloud-cli): these tests check built-in "
                    "algorithms against the real client")
    cfg = str(tmp_path_factory.mktemp("cloudsdk"))
    env = dict(os.environ, CLOUDSDK_CONFIG=cfg, CLOUDSDK_CORE_DISABLE_PROMPTS="1",
               TRAINYARD_ENDPOINT=algos.url, TRAINYARD_PROJECT=PROJECT)
    if algos.token:  # authentication on: gcloud sends the administrator's token
        env["TRAINYARD_TOKEN"] = algos.token
    for leak in ("BOTO_CONFIG", "BOTO_PATH", "CLOUDSDK_ACTIVE_CONFIG_NAME",
                 "CLOUDSDK_CORE_PROJECT", "GOOGLE_APPLICATION_CREDENTIALS"):
        env.pop(leak, None)
    p = subprocess.run([os.path.join(BIN, "trainyard"), "gcloud-config", "--apply", "--activate",
                        "--tls-endpoint", "https://127.0.0.1:8471"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert "Activated [trainyard]." in p.stderr, p.stderr

    def run(*args):
        p = subprocess.run(["gcloud"] + list(args), env=env, capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0, (args, p.stdout, p.stderr)
        return p
    return run


def test_gcloud_submits_and_tunes_built_in_algorithms(algos, gcloud, tmp_path):
    d = algos
    cls = upload(d, "g/cls.csv", classification_csv(seed=3))
    wd_dir = "gs://%s/g/wide_deep" % BUCKET
    gcloud("ai-platform", "jobs", "submit", "training", "g_wide_deep", "--master-image-uri",
           "gcr.io/cloud-ml-algos/wide_deep_learner_cpu:latest", "--scale-tier", "BASIC",
           "--job-dir", wd_dir, "--region", "us-central1", "--", "--preprocess",
           "--training_data_path", cls, "--model_type", "classification", "--learning_rate",
           "0.1", "--dnn_learning_rate", "0.05", "--hidden_units", "16,8", "--max_steps", "120",
           "--batch_size", "50")
    # Tuning boosted_trees for its own metric name (auc), two trials at a time.
    config = tmp_path / "hp.yaml"
    config.write_text(
        "trainingInput:\n"
        "  scaleTier: BASIC\n"
        "  hyperparameters:\n"
        "    goal: MAXIMIZE\n"
        "    hyperparameterMetricTag: auc\n"
        "    maxTrials: 3\n"
        "    maxParallelTrials: 2\n"
        "    params:\n"
        "    - parameterName: max_depth\n"
        "      type: INTEGER\n"
        "      minValue: 1\n"
        "      maxValue: 4\n"
        "    - parameterName: eta\n"
        "      type: DOUBLE\n"
        "      minValue: 0.05\n"
        "      maxValue: 0.5\n")
    hp_dir = "gs://%s/g/tuned" % BUCKET
    gcloud("ai-platform", "jobs", "submit", "training", "g_tuned", "--master-image-uri", BT,
           "--config", str(config), "--job-dir", hp_dir, "--region", "us-central1", "--",
           "--preprocess", "--training_data_path", cls, "--objective", "binary:logistic",
           "--eval_metric", "auc", "--num_boost_round", "10")
    finished(d, ["g_wide_deep", "g_tuned"], timeout=300)

    job = json.loads(gcloud("ai-platform", "jobs", "describe", "g_wide_deep", "--format",
                            "json").stdout)
    assert job["state"] == "SUCCEEDED", (job, d.logs("g_wide_deep")[-10:])
    assert job["trainingOutput"]["isBuiltInAlgorithmJob"] is True
    assert job["trainingOutput"]["builtInAlgorithmOutput"]["modelPath"] == wd_dir + "/model"
    import torch
    model = torch.jit.load(local(d, wd_dir + "/model/model.pt"))
    assert model.use_deep and model.use_wide

    job = json.loads(gcloud("ai-platform", "jobs", "describe", "g_tuned", "--format",
                            "json").stdout)
    assert job["state"] == "SUCCEEDED", (job, d.logs("g_tuned")[-10:])
    out = job["trainingOutput"]
    assert out["isHyperparameterTuningJob"] is True and out["isBuiltInAlgorithmJob"] is True
    assert out["hyperparameterMetricTag"] == "auc" and out["completedTrialCount"] == "3"
    assert "modelPath" not in out.get("builtInAlgorithmOutput", {})
    import xgboost
    for t in out["trials"]:
        assert t["state"] == "SUCCEEDED", t
        assert t["builtInAlgorithmOutput"]["framework"] == "XGBOOST", t
        assert "modelPath" not in t["builtInAlgorithmOutput"], t
        # The trial's auc is the last validation auc its trainer reported.
        meta = json.load(open(local(d, "%s/%s/artifacts/metadata.json" % (hp_dir, t["trialId"]))))
        assert abs(meta["metrics"]["validation"]["auc"] - t["finalMetric"]["objectiveValue"]) \
            < 1e-6, (meta["metrics"], t)
        assert meta["arguments"]["max_depth"] == int(t["hyperparameters"]["max_depth"])
        assert t["finalMetric"]["trainingStep"] == "10"
        booster = xgboost.Booster(
            model_file=local(d, "%s/%s/model/model.bst" % (hp_dir, t["trialId"])))
        assert booster.num_boosted_rounds() == 10
    text = gcloud("ai-platform", "jobs", "describe", "g_tuned").stdout
    assert "isBuiltInAlgorithmJob: true" in text and "framework: XGBOOST" in text, text
