"""Google's own clients against Trainyard: the preinstalled `gcloud` (ai-platform jobs, storage)
and `gsutil`, configured by `trainyard gcloud-config --apply` in a private CLOUDSDK_CONFIG.

One daemon (with its TLS listener for native gsutil) serves the whole module to keep the runtime
modest: every gcloud call costs about a second of start-up."""

import base64
import hashlib
import json
import os
import shutil
import subprocess
import textwrap

import pytest

from conftest import BIN, PROJECT, REPO, Daemon, make_package

SAMPLE = os.path.join(REPO, "examples", "sklearn", "trainer")
BUCKET = "gcloud-itest"


def require_tool(name):
    path = shutil.which(name)
    if path is None:
        pytest.fail("`%s` is not installed, and test_gcloud.py checks Trainyard against the real "
                    "Google client: install google-cloud-cli (it provides gcloud and gsutil)" % name)
    return path


def daemon_has_tls_setting():
    p = subprocess.run([os.path.join(BIN, "trainyardd"), "--print-config"],
                       capture_output=True, text=True, timeout=30)
    return "tls_listen" in p.stdout


class Google:
    """Runs gcloud/gsutil/trainyard with the private gcloud configuration."""

    def __init__(self, daemon, config_dir, tls_port):
        self.daemon = daemon
        self.config_dir = config_dir
        self.tls_port = tls_port
        self.env = dict(os.environ, CLOUDSDK_CONFIG=config_dir, CLOUDSDK_CORE_DISABLE_PROMPTS="1",
                        TRAINYARD_ENDPOINT=daemon.url, TRAINYARD_PROJECT=PROJECT)
        for leak in ("BOTO_CONFIG", "BOTO_PATH", "CLOUDSDK_ACTIVE_CONFIG_NAME",
                     "CLOUDSDK_CORE_PROJECT", "GOOGLE_APPLICATION_CREDENTIALS"):
            self.env.pop(leak, None)

    def run(self, argv, check=True, timeout=300):
        p = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError("%s failed (%d):\nstdout:\n%s\nstderr:\n%s" % (
                " ".join(argv), p.returncode, p.stdout, p.stderr))
        return p

    def gcloud(self, *args, **kw):
        return self.run(["gcloud"] + list(args), **kw)

    def gsutil(self, *args, **kw):
        return self.run(["gsutil"] + list(args), **kw)

    def trainyard(self, *args, **kw):
        return self.run([os.path.join(BIN, "trainyard")] + list(args), **kw)


@pytest.fixture(scope="module")
def google(tmp_path_factory):
    require_tool("gcloud")
    require_tool("gsutil")
    root = tmp_path_factory.mktemp("gcloud")
    data = root / "data"
    data.mkdir()
    extra, tls = [], daemon_has_tls_setting()
    if tls:
        cfg = root / "trainyardd.yaml"
        cfg.write_text("tls_listen: 127.0.0.1:0\n")
        extra = ["--config", str(cfg)]
    # Google's clients with the placeholder token gcloud-config writes: authentication off
    # (test_auth_google.py runs them with it on).
    d = Daemon(str(data), extra_args=extra, auth=False).start()
    tls_port = None
    if tls:
        # trainyardd prints the TLS address on the line after `listening on`.
        line = d.proc.stdout.readline().decode()
        assert line.startswith("tls listening on https://"), "no TLS address: %r" % line
        tls_port = int(line.rsplit(":", 1)[1])
    g = Google(d, str(root / "cloudsdk"), tls_port)
    p = g.trainyard("gcloud-config", "--apply", "--activate",
                    "--tls-endpoint", "https://127.0.0.1:%d" % (tls_port or 8471))
    assert "Activated [trainyard]." in p.stderr, p.stderr
    g.env["BOTO_CONFIG"] = os.path.join(g.config_dir, "trainyard.boto")
    g.trainyard("buckets", "create", "gs://" + BUCKET)
    yield g
    d.stop()


def describe(google, job_id):
    return json.loads(google.gcloud("ai-platform", "jobs", "describe", job_id,
                                    "--format", "json").stdout)


def test_gcloud_config_is_what_gcloud_reads(google):
    props = json.loads(google.gcloud("config", "list", "--format", "json").stdout)
    overrides = props["api_endpoint_overrides"]
    assert overrides["ml"] == google.daemon.url + "/"
    assert overrides["storage"] == google.daemon.url + "/storage/v1/"
    assert overrides["logging"] == google.daemon.url + "/"
    assert props["core"]["project"] == PROJECT
    assert props["compute"]["region"] == "us-central1"
    names = google.gcloud("config", "configurations", "list", "--format",
                          "value(name,is_active)").stdout.split("\n")
    assert "trainyard\tTrue" in names and "default\tFalse" in names, names
    # Printing (no --apply) describes the same files.
    printed = google.trainyard("gcloud-config").stdout
    assert "ml = %s/" % google.daemon.url in printed


def test_submit_stream_logs_describe_list(google):
    p = google.gcloud("ai-platform", "jobs", "submit", "training", "gc_sample_1",
                      "--package-path", SAMPLE, "--module-name", "trainer.task",
                      "--staging-bucket", "gs://" + BUCKET, "--job-dir", "gs://%s/out1" % BUCKET,
                      "--region", "us-central1", "--", "--epochs", "2")
    assert "Job [gc_sample_1] submitted successfully." in p.stderr, p.stderr
    assert "jobId: gc_sample_1" in p.stdout, p.stdout
    # gcloud built the sdist and uploaded it through the storage API.
    staged = describe(google, "gc_sample_1")["trainingInput"]["packageUris"][0]
    assert staged.startswith("gs://%s/gc_sample_1/" % BUCKET) and staged.endswith(".tar.gz")

    logs = google.gcloud("ai-platform", "jobs", "stream-logs", "gc_sample_1",
                         "--polling-interval", "1", timeout=240)
    lines = logs.stdout.splitlines()
    assert any("\tmaster-replica-0\t\t" in l and "epoch 2/2 accuracy" in l for l in lines), lines
    assert any("Job completed successfully." in l for l in lines), lines

    job = describe(google, "gc_sample_1")
    assert job["state"] == "SUCCEEDED", job
    plain = google.gcloud("ai-platform", "jobs", "describe", "gc_sample_1").stdout
    assert "state: SUCCEEDED" in plain

    listed = google.gcloud("ai-platform", "jobs", "list", "--filter", "jobId:gc_sample*").stdout
    rows = [l.split() for l in listed.splitlines()]
    assert rows[0] == ["JOB_ID", "STATUS", "CREATED"], rows
    assert ["gc_sample_1", "SUCCEEDED"] == rows[1][:2], rows
    assert len(rows) == 2, rows


def test_config_file_update_labels_and_cancel(google, tmp_path):
    pkg = make_package(tmp_path / "slow", """
        import sys, time
        print("sleeper started", flush=True)
        time.sleep(float(sys.argv[sys.argv.index("--seconds") + 1]))
    """, name="sleeper")
    config = tmp_path / "config.yaml"
    config.write_text(textwrap.dedent("""\
        labels:
          team: ml
        trainingInput:
          scaleTier: BASIC
          pythonModule: sleeper.task
          region: us-central1
          args: ["--seconds", "120"]
    """))
    google.gcloud("ai-platform", "jobs", "submit", "training", "gc_cfg_1", "--config",
                  str(config), "--package-path", pkg, "--staging-bucket", "gs://" + BUCKET)
    job = describe(google, "gc_cfg_1")
    assert job["labels"] == {"team": "ml"}, job
    assert job["trainingInput"]["pythonModule"] == "sleeper.task"
    assert job["trainingInput"]["args"] == ["--seconds", "120"]

    p = google.gcloud("ai-platform", "jobs", "update", "gc_cfg_1", "--update-labels", "k=v")
    assert describe(google, "gc_cfg_1")["labels"] == {"team": "ml", "k": "v"}, p.stderr

    google.daemon.wait_state("gc_cfg_1", "RUNNING", timeout=120)
    google.gcloud("ai-platform", "jobs", "cancel", "gc_cfg_1")
    job = google.daemon.wait_state("gc_cfg_1", ["CANCELLED", "FAILED", "SUCCEEDED"], timeout=60)
    assert job["state"] == "CANCELLED", job
    assert "state: CANCELLED" in google.gcloud("ai-platform", "jobs", "describe",
                                               "gc_cfg_1").stdout


def test_gcloud_submits_a_custom_cluster_and_streams_every_replica(google, tmp_path):
    # gcloud's own machine-type and count flags (compat §9.1); each replica prints its task.
    # Each replica prints its line, then leaves a file in a directory the test shares; the
    # master ends the job (stopping the others) only once both workers have printed theirs.
    ready = tmp_path / "ready"
    ready.mkdir()
    pkg = make_package(tmp_path / "cluster", """
        import json, os, sys, time
        ready = sys.argv[sys.argv.index("--ready-dir") + 1]
        tf = json.loads(os.environ["TF_CONFIG"])
        t = tf["task"]
        print("replica %s %d of cluster %s rank %s" % (
            t["type"], t["index"], sorted(tf["cluster"]), os.environ.get("RANK")), flush=True)
        open(os.path.join(ready, "%s-%d" % (t["type"], t["index"])), "w").close()
        if t["type"] == "master":
            deadline = time.time() + 300
            while not all(os.path.exists(os.path.join(ready, w))
                          for w in ("worker-0", "worker-1")):
                if time.time() > deadline:
                    sys.exit("the workers never started")
                time.sleep(0.05)
    """, name="clustered")
    google.gcloud("ai-platform", "jobs", "submit", "training", "gc_cluster_1",
                  "--package-path", pkg, "--module-name", "clustered.task",
                  "--staging-bucket", "gs://" + BUCKET, "--region", "us-central1",
                  "--scale-tier", "custom", "--master-machine-type", "n1-standard-4",
                  "--worker-machine-type", "n1-standard-4", "--worker-count", "2",
                  "--parameter-server-machine-type", "n1-highmem-2",
                  "--parameter-server-count", "1", "--", "--ready-dir", str(ready))
    logs = google.gcloud("ai-platform", "jobs", "stream-logs", "gc_cluster_1",
                         "--polling-interval", "1", timeout=240).stdout.splitlines()
    for task, text in [("master-replica-0", "replica master 0"),
                       ("worker-replica-0", "replica worker 0"),
                       ("worker-replica-1", "replica worker 1")]:
        assert any("\t%s\t" % task in l and text in l for l in logs), (task, logs)
    job = describe(google, "gc_cluster_1")
    assert job["state"] == "SUCCEEDED", job
    ti = job["trainingInput"]
    assert (ti["scaleTier"], ti["workerCount"], ti["parameterServerCount"]) == \
        ("CUSTOM", "2", "1"), ti
    assert job["trainingOutput"]["consumedMLUnits"] > 0, job


def test_gcloud_runs_the_hptuning_example_and_summarizes_its_trials(google, tmp_path):
    # Google's sample shape: a trainer using hypertune and argparse, config.yaml's
    # hyperparameters section, submitted and described by the real gcloud.
    example = os.path.join(REPO, "examples", "hptuning")
    config = tmp_path / "config.yaml"
    text = open(os.path.join(example, "config.yaml")).read()
    config.write_text(text.replace("maxTrials: 8", "maxTrials: 3"))
    google.gcloud("ai-platform", "jobs", "submit", "training", "gc_hp_1",
                  "--package-path", os.path.join(example, "trainer"),
                  "--module-name", "trainer.task", "--staging-bucket", "gs://" + BUCKET,
                  "--job-dir", "gs://%s/gc_hp_1" % BUCKET, "--region", "us-central1",
                  "--config", str(config))
    job = google.daemon.wait_state("gc_hp_1", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=300)
    assert job["state"] == "SUCCEEDED", job
    out = describe(google, "gc_hp_1")["trainingOutput"]
    assert out["isHyperparameterTuningJob"] is True, out
    assert out["completedTrialCount"] == "3", out
    assert [t["trialId"] for t in out["trials"]] == ["1", "2", "3"], out
    assert all(t["state"] == "SUCCEEDED" and "finalMetric" in t for t in out["trials"]), out
    # gcloud's own table (sorted by trialId) and Trainyard's (best first) have the same columns.
    def trial_rows(text):
        lines = text.splitlines()
        start = next(i for i, l in enumerate(lines) if "Training Output Trials" in l)
        cells = [[c.strip() for c in l.strip().split("\u2502")[1:-1]] for l in lines[start + 1:]
                 if l.strip().startswith("\u2502")]
        assert len(cells) > 1, text
        return cells[0], [c for c in cells[1:] if c[0]]
    header, rows = trial_rows(google.gcloud("ai-platform", "jobs", "describe", "gc_hp_1",
                                            "--summarize").stdout)
    assert header == ["TRIAL", "OBJECTIVE_VALUE", "STEP", "HYPERPARAMETERS"], header
    assert [r[0] for r in rows] == ["1", "2", "3"], rows
    ours_header, ours = trial_rows(google.trainyard("jobs", "describe", "gc_hp_1",
                                                    "--summarize").stdout)
    assert ours_header == header, ours_header
    best = max(out["trials"], key=lambda t: t["finalMetric"]["objectiveValue"])
    assert ours[0][0] == best["trialId"], ours


@pytest.mark.skipif(shutil.which("podman") is None, reason="needs podman")
def test_gcloud_submits_a_custom_container_job(google):
    image = "localhost/trainyard-example:1"
    env = dict(os.environ, CONTAINERS_CONF=os.path.join(google.daemon.data_dir, "containers.conf"))
    if subprocess.run(["podman", "image", "exists", image], env=env).returncode != 0:
        pytest.skip("needs %s (examples/container/build.sh)" % image)
    google.gcloud("ai-platform", "jobs", "submit", "training", "gc_ctr_1",
                  "--master-image-uri", image, "--region", "us-central1",
                  "--job-dir", "gs://%s/gc_ctr_1" % BUCKET, "--", "--epochs", "2")
    logs = google.gcloud("ai-platform", "jobs", "stream-logs", "gc_ctr_1",
                         "--polling-interval", "1", timeout=240).stdout
    assert "epoch 2/2" in logs, logs
    job = describe(google, "gc_ctr_1")
    assert job["state"] == "SUCCEEDED", job
    assert job["trainingInput"]["masterConfig"]["imageUri"] == image, job
    model = os.path.join(google.daemon.data_dir, "buckets", BUCKET, "gc_ctr_1", "model.json")
    assert json.load(open(model))["epochs"] == 2


def md5_of(path):
    h = hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def test_gsutil_copies_a_large_file_both_ways_and_lists_prefixes(google, tmp_path):
    if google.tls_port is None:
        pytest.skip("trainyardd has no `tls_listen` setting (see --print-config), and native "
                    "gsutil only speaks https to its JSON API")
    tree = tmp_path / "tree"
    (tree / "data" / "nested").mkdir(parents=True)
    big = tree / "data" / "big.bin"
    big.write_bytes(os.urandom(20 * 1024 * 1024))  # a resumable upload
    (tree / "data" / "nested" / "small.txt").write_text("hello\n")
    (tree / "top.txt").write_text("top\n")
    dest = "gs://%s/gsutil/" % BUCKET
    google.gsutil("cp", "-r", str(tree / "data"), str(tree / "top.txt"), dest)

    top = sorted(google.gsutil("ls", dest).stdout.split())
    assert top == [dest + "data/", dest + "top.txt"], top
    data = sorted(google.gsutil("ls", dest + "data/").stdout.split())
    assert data == [dest + "data/big.bin", dest + "data/nested/"], data

    # The daemon stored the bytes, and gsutil's md5 matches the local file's.
    stored = os.path.join(google.daemon.data_dir, "buckets", BUCKET, "gsutil", "data", "big.bin")
    assert md5_of(stored) == md5_of(big)
    listing = google.gsutil("ls", "-L", dest + "data/big.bin").stdout
    md5_b64 = base64.b64encode(bytes.fromhex(md5_of(big))).decode()
    assert "Hash (md5):" in listing and md5_b64 in listing, listing

    back = tmp_path / "back.bin"
    google.gsutil("cp", dest + "data/big.bin", str(back))
    assert md5_of(back) == md5_of(big)
