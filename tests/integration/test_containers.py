"""End-to-end checks of custom-container jobs (issue 5) with real podman.

They need podman and the example image `localhost/trainyard-example:1`
(examples/container/build.sh, which scripts/test.sh runs); without them the module is skipped.
Replicas reach the shared directory of a test through the job dir: a gs:// URI whose bucket
store is mounted into every container at the same path (TRAINYARD_BUCKETS_DIR)."""

import json
import os
import shutil
import signal
import subprocess
import textwrap

import pytest

from conftest import PROJECT, Daemon, wait_for

EXAMPLE = "localhost/trainyard-example:1"
JOBS = "/v1/projects/%s/jobs" % PROJECT
BUCKET = "itest-ctr"
TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")

# Runs as `python3 -c RECORDER <name>` inside the container (containerCommand): records what the
# replica sees into the job dir, then behaves as its first argument says.
RECORDER = textwrap.dedent("""
    import json, os, sys, time
    root = os.environ["TRAINYARD_BUCKETS_DIR"]
    out = os.path.join(root, "%s", os.environ["CLOUD_ML_JOB_ID"])
    os.makedirs(out, exist_ok=True)
    tf = json.loads(os.environ["TF_CONFIG"])
    me = "%%s-%%d" %% (tf["task"]["type"], tf["task"]["index"])
    keys = ("TF_CONFIG", "CLUSTER_SPEC", "CLOUD_ML_JOB", "CLOUD_ML_JOB_ID", "IMAGE_NAME", "RANK")
    rec = {k: os.environ.get(k) for k in keys}
    rec["argv"] = sys.argv[1:]
    with open(os.path.join(out, me + ".tmp"), "w") as f:
        json.dump(rec, f)
    os.rename(os.path.join(out, me + ".tmp"), os.path.join(out, me + ".json"))
    print("recorded", me, flush=True)
    if "--wait" in sys.argv:  # the master: until every replica has recorded what it saw
        n = int(sys.argv[sys.argv.index("--wait") + 1])
        while len([f for f in os.listdir(out) if f.endswith(".json")]) < n:
            time.sleep(0.05)
    if "--sleep" in sys.argv:
        time.sleep(300)
    if tf["task"]["type"] == "ps":
        while True:
            time.sleep(1)
""" % BUCKET)


def engine():
    return shutil.which("podman")


def podman(*args, check=True):
    env = dict(os.environ)
    conf = "/tmp/trainyard-itest-containers.conf"
    with open(conf, "w") as f:
        f.write('[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n'
                '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n')
    if shutil.which("runc"):
        env.setdefault("CONTAINERS_CONF", conf)
    return subprocess.run(["podman"] + list(args), capture_output=True, text=True, env=env,
                          check=check, timeout=120)


pytestmark = pytest.mark.skipif(
    engine() is None or podman("image", "exists", EXAMPLE, check=False).returncode != 0,
    reason="needs podman and %s (examples/container/build.sh)" % EXAMPLE)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("ctr")
    d = Daemon(str(root)).start()
    status, body = d.request("POST", "/storage/v1/b?project=%s" % PROJECT, {"name": BUCKET})
    assert status in (200, 409), body
    # Three images that differ only in IMAGE_NAME, for the one-image-per-role test.
    for name in ("master", "worker", "ps"):
        ctx = root / ("img-" + name)
        ctx.mkdir()
        (ctx / "Containerfile").write_text("FROM %s\nENV IMAGE_NAME=%s\n" % (EXAMPLE, name))
        podman("build", "-q", "-t", "localhost/trainyard-itest-%s:1" % name, str(ctx))
    yield d
    d.stop()


def submit(daemon, job_id, **training):
    training.setdefault("region", "us-central1")
    status, body = daemon.request("POST", JOBS, {"jobId": job_id, "trainingInput": training})
    assert status == 200, body
    return body


def finish(daemon, job_id, timeout=120):
    return daemon.wait_state(job_id, list(TERMINAL), timeout=timeout)


def records(daemon, job_id):
    out = os.path.join(daemon.data_dir, "buckets", BUCKET, job_id)
    found = {}
    for name in os.listdir(out) if os.path.isdir(out) else []:
        if name.endswith(".json") and name != "model.json":
            with open(os.path.join(out, name)) as f:
                found[name[:-5]] = json.load(f)
    return found


def containers_of(job_id):
    p = podman("ps", "-a", "--format", "{{.Names}}", check=False)
    return [n for n in p.stdout.split() if job_id.lower() in n]


def test_basic_container_job_writes_its_model_to_the_job_dir(daemon):
    submit(daemon, "ctr_basic", masterConfig={"imageUri": EXAMPLE},
           jobDir="gs://%s/ctr_basic" % BUCKET, args=["--epochs", "2"])
    job = finish(daemon, "ctr_basic")
    assert job["state"] == "SUCCEEDED", job
    model = os.path.join(daemon.data_dir, "buckets", BUCKET, "ctr_basic", "model.json")
    with open(model) as f:
        assert json.load(f)["epochs"] == 2
    lines = [e["jsonPayload"]["message"] for e in daemon.logs("ctr_basic")
             if e["resource"]["labels"]["task_name"] == "master-replica-0"]
    assert "epoch 2/2" in " ".join(lines), lines
    assert containers_of("ctr_basic") == []


def test_one_image_per_role_with_tf_config_and_cluster_spec(daemon):
    command = ["python3", "-c", RECORDER]
    submit(daemon, "ctr_roles", scaleTier="CUSTOM",
           masterType="n1-standard-4", workerType="n1-standard-4", workerCount="2",
           parameterServerType="n1-standard-4", parameterServerCount="1",
           evaluatorType="n1-standard-4", evaluatorCount="1",
           masterConfig={"imageUri": "localhost/trainyard-itest-master:1",
                         "containerCommand": command, "containerArgs": ["--wait", "5"]},
           workerConfig={"imageUri": "localhost/trainyard-itest-worker:1",
                         "containerCommand": command},
           parameterServerConfig={"imageUri": "localhost/trainyard-itest-ps:1",
                                  "containerCommand": command},
           evaluatorConfig={"containerCommand": command})  # the master's image
    wait_for(lambda: len(records(daemon, "ctr_roles")) == 5, timeout=120, what="5 replicas")
    job = finish(daemon, "ctr_roles")
    assert job["state"] == "SUCCEEDED", job
    recs = records(daemon, "ctr_roles")
    images = {name: r["IMAGE_NAME"] for name, r in recs.items()}
    assert images == {"master-0": "master", "worker-0": "worker", "worker-1": "worker",
                      "ps-0": "ps", "evaluator-0": "master"}, images
    clusters = set()
    for name, r in recs.items():
        tf = json.loads(r["TF_CONFIG"])
        cs = json.loads(r["CLUSTER_SPEC"])
        assert "master" in tf["cluster"] and "evaluator" not in tf["cluster"], tf
        assert "master" in cs["cluster"] and len(cs["cluster"]["evaluator"]) == 1, cs
        assert tf["environment"] == "cloud" and cs["environment"] == "cloud"
        assert cs["task"]["type"] == name.split("-")[0], cs
        clusters.add(json.dumps(tf["cluster"], sort_keys=True))
        assert json.loads(r["CLOUD_ML_JOB"])["worker_count"] in ("2", 2), r["CLOUD_ML_JOB"]
    assert len(clusters) == 1, clusters
    assert containers_of("ctr_roles") == []


def test_chief_with_use_chief_in_tf_config(daemon):
    submit(daemon, "ctr_chief", masterConfig={"imageUri": EXAMPLE,
                                              "containerCommand": ["python3", "-c", RECORDER]},
           useChiefInTfConfig=True)
    assert finish(daemon, "ctr_chief")["state"] == "SUCCEEDED"
    rec = records(daemon, "ctr_chief")["chief-0"]
    assert list(json.loads(rec["TF_CONFIG"])["cluster"]) == ["chief"]
    assert list(json.loads(rec["CLUSTER_SPEC"])["cluster"]) == ["master"]


def test_container_command_and_args_override_the_entrypoint(daemon):
    submit(daemon, "ctr_cmd", masterConfig={
        "imageUri": EXAMPLE,
        "containerCommand": ["python3", "-c", RECORDER],
        "containerArgs": ["--alpha", "1"]})
    assert finish(daemon, "ctr_cmd")["state"] == "SUCCEEDED"
    assert records(daemon, "ctr_cmd")["master-0"]["argv"] == ["--alpha", "1"]
    # Args only: the image's ENTRYPOINT (the trainer) gets them.
    submit(daemon, "ctr_args", masterConfig={"imageUri": EXAMPLE,
                                             "containerArgs": ["--epochs", "1"]})
    assert finish(daemon, "ctr_args")["state"] == "SUCCEEDED"
    lines = " ".join(e["jsonPayload"]["message"] for e in daemon.logs("ctr_args"))
    assert "epoch 1/1" in lines, lines


def test_cancelled_container_job_leaves_no_container(daemon):
    submit(daemon, "ctr_cancel", masterConfig={
        "imageUri": EXAMPLE, "containerCommand": ["python3", "-c", RECORDER],
        "containerArgs": ["--sleep"]})
    wait_for(lambda: "master-0" in records(daemon, "ctr_cancel"), timeout=120, what="start")
    status, body = daemon.request("POST", JOBS + "/ctr_cancel:cancel", {})
    assert status == 200, body
    job = finish(daemon, "ctr_cancel", timeout=60)
    assert job["state"] == "CANCELLED", job
    assert containers_of("ctr_cancel") == []


def test_killed_launcher_or_early_cancel_leaves_no_container(daemon):
    """Issue 17 (docs/faults.md): a container replica's launcher SIGKILLed while the container
    runs: the container is removed, the replica restarted per the restart rules with a message
    that names the kill; and a job cancelled right after its create, while its container is
    being started, leaves none either."""
    submit(daemon, "ctr_lkill", masterConfig={
        "imageUri": EXAMPLE, "containerCommand": ["python3", "-c", RECORDER],
        "containerArgs": ["--sleep"]})
    submit(daemon, "ctr_early", masterConfig={
        "imageUri": EXAMPLE, "containerCommand": ["python3", "-c", RECORDER],
        "containerArgs": ["--sleep"]})
    status, body = daemon.request("POST", JOBS + "/ctr_early:cancel", {})
    assert status == 200, body
    wait_for(lambda: "master-0" in records(daemon, "ctr_lkill"), timeout=120, what="start")
    pid_file = os.path.join(daemon.data_dir, "jobs", PROJECT, "ctr_lkill", "master-replica-0",
                            "launcher.pid")
    with open(pid_file) as f:
        os.kill(int(f.read().split()[0]), signal.SIGKILL)
    wait_for(lambda: any("restarting it with the same identity" in e["jsonPayload"]["message"]
                         for e in daemon.logs("ctr_lkill")), timeout=60, what="the restart")
    restart = [e["jsonPayload"]["message"] for e in daemon.logs("ctr_lkill")
               if "restarting it" in e["jsonPayload"]["message"]]
    assert "killed by signal 9 (SIGKILL)" in restart[0], restart
    status, body = daemon.request("POST", JOBS + "/ctr_lkill:cancel", {})
    assert status == 200, body
    for job_id in ("ctr_lkill", "ctr_early"):
        assert finish(daemon, job_id, timeout=90)["state"] == "CANCELLED"
        wait_for(lambda: containers_of(job_id) == [], timeout=30, what="no container")


def test_missing_image_fails_with_a_clear_message(daemon):
    submit(daemon, "ctr_missing", masterConfig={"imageUri": "localhost/no-such-image:9"})
    job = finish(daemon, "ctr_missing")
    assert job["state"] == "FAILED", job
    assert "localhost/no-such-image:9 is not in the local storage" in job["errorMessage"], job
