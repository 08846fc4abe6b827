"""`executor: slurm` end to end (issue 12): a real trainyardd submits every job to a real Slurm
cluster (scripts/slurm-dev-cluster.sh: three virtual nodes with two fake GPUs each) and real
trainers run as Slurm steps under trainyard-launcher. The daemon and the nodes share one
directory (here all nodes are this machine). Checks what the trainers saw (TF_CONFIG with every
replica's real host:port, torch's variables, per-step GPUs), what the store holds (states,
errorMessage, every log line once), and that Slurm is left with nothing of ours.

Run with Debian's /usr/bin/python3 -m pytest tests/integration/test_slurm_executor.py."""

import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from conftest import PROJECT, wait_for
from slurm_cluster import messages
from slurm_cluster import slurm_cluster  # noqa: F401
from slurm_cluster import daemon_fixture, requires_slurm, slurm_config

pytestmark = requires_slurm

# Machine types ask for 4 vCPUs and 15 GB; the dev nodes have 4 CPUs and 2000 MB each.
CONFIG = slurm_config(cancel_grace="15s", replica_restarts=None,
                      extra="  gpu_types: {{NVIDIA_TESLA_T4: fake}}\n")

TRAINER = """
import json, os, signal, sys, time
args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
tf = json.loads(os.environ["TF_CONFIG"])
name = "%s-%d" % (tf["task"]["type"], tf["task"]["index"])
seen = {k: os.environ.get(k) for k in ("TF_CONFIG", "CUDA_VISIBLE_DEVICES", "MASTER_ADDR",
        "MASTER_PORT", "WORLD_SIZE", "RANK", "CLOUD_ML_JOB_ID", "SLURM_JOB_ID")}
def on_term(signum, frame):
    print("TERM received by", name, flush=True)
    time.sleep(float(args.get("--term_seconds", "0")))
    print("cleaned up", name, flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
# Written once the TERM handler is in place: a replica that fails on purpose waits for the
# master's record, so the stop it causes never finds a master without its handler.
if "--out" in args:
    with open(os.path.join(args["--out"], name + ".json"), "w") as f:
        json.dump(seen, f)
for i in range(int(args.get("--lines", "3"))):
    print("line %d of %s" % (i, name), flush=True)
    time.sleep(float(args.get("--line_sleep", "0.05")))
if args.get("--fail") == name:
    for _ in range(1200):
        if os.path.exists(os.path.join(args.get("--out", "."), "master-0.json")):
            break
        time.sleep(0.05)
    print("failing on purpose", file=sys.stderr, flush=True)
    sys.exit(3)
time.sleep(float(args.get("--sleep", "0")))
print("done", name, flush=True)
"""


def ours(cluster):
    out = cluster.run("squeue", "-h", "-o", "%i|%T|%j").stdout
    return [line for line in out.splitlines() if "|ty-" in line and
            not line.split("|")[1] in ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT",
                                        "NODE_FAIL")]


# The shared directory, a daemon on the cluster, the trainer package uploaded.
env = daemon_fixture(CONFIG, TRAINER, "ty-slurm-exec-", live=ours)


def submit(env, job_id, args=(), **training):
    out = os.path.join(str(env["root"]), "out-" + job_id)
    os.makedirs(out, exist_ok=True)
    ti = {"packageUris": [env["uri"]], "pythonModule": "trainer.task", "region": "us-central1",
          "args": list(args) + ["--out=" + out]}
    ti.update(training)
    d = env["daemon"]
    status, body = d.request("POST", "/v1/projects/%s/jobs" % PROJECT,
                             {"jobId": job_id, "trainingInput": ti,
                              "labels": {"test": "slurm"}})
    assert status == 200, body
    return out


def seen(out, name):
    with open(os.path.join(out, name + ".json")) as f:
        return json.load(f)


def test_single_replica_job_succeeds_with_its_logs(env):
    d = env["daemon"]
    out = submit(env, "single", ["--lines=5"])
    job = d.wait_state("single", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=180)
    assert job["state"] == "SUCCEEDED", job
    lines = messages(d, "single", "master-replica-0")
    assert [m for m in lines if m.startswith("line ")] == ["line %d of master-0" % i
                                                          for i in range(5)]
    s = seen(out, "master-0")
    tf = json.loads(s["TF_CONFIG"])
    host, port = tf["cluster"]["master"][0].rsplit(":", 1)
    assert (s["MASTER_ADDR"], s["MASTER_PORT"]) == (host, port)
    assert s["SLURM_JOB_ID"] is None  # the trainer's environment is Trainyard's, not Slurm's
    assert s["CUDA_VISIBLE_DEVICES"] == ""
    # The job ends with its master's report; the Slurm job ends once its driver has seen the
    # step exit, a moment later.
    wait_for(lambda: not ours(env["cluster"]), timeout=60, what="no Slurm job left")


def test_distributed_job_gets_real_addresses_and_its_own_gpus(env):
    d = env["daemon"]
    out = submit(env, "dist", [], scaleTier="CUSTOM", masterType="n1-standard-4",
                 masterConfig={"acceleratorConfig": {"type": "NVIDIA_TESLA_T4", "count": 1}},
                 workerType="n1-standard-4", workerCount=2,
                 parameterServerType="n1-standard-4", parameterServerCount=1)
    job = d.wait_state("dist", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=240)
    assert job["state"] == "SUCCEEDED", job
    names = ["master-0", "worker-0", "worker-1", "ps-0"]
    views = {n: seen(out, n) for n in names}
    clusters = {json.dumps(json.loads(v["TF_CONFIG"])["cluster"], sort_keys=True)
                for v in views.values()}
    assert len(clusters) == 1, clusters  # every replica sees the same cluster
    cluster = json.loads(clusters.pop())
    addresses = cluster["master"] + cluster["worker"] + cluster["ps"]
    assert len(set(addresses)) == 4
    assert all(not a.startswith("127.0.0.1:") for a in addresses)
    assert views["master-0"]["CUDA_VISIBLE_DEVICES"] in ("0", "1")
    for n in ("worker-0", "worker-1", "ps-0"):
        assert views[n]["CUDA_VISIBLE_DEVICES"] == "", n
    assert [views[n]["RANK"] for n in ("master-0", "worker-0", "worker-1")] == ["0", "1", "2"]
    assert views["ps-0"]["RANK"] is None
    # Two shapes (the master's GPU): a heterogeneous job, one component per shape.
    gangs = [g for g in os.listdir(os.path.join(env["shared"], "jobs", PROJECT, "dist"))
             if g.startswith("slurm-")]
    script = open(os.path.join(env["shared"], "jobs", PROJECT, "dist", gangs[0], "job.sh")).read()
    assert script.count("#SBATCH hetjob") == 1, script
    assert "--gpus-per-task=fake:1" in script, script
    # Where it ran: said once squeue has shown the job running (or ended, for a job that started
    # and ended between two polls).
    wait_for(lambda: any(m.startswith("Slurm job ") and (" is running on n" in m or " ran on n" in m)
                         for m in messages(d, "dist", "service")),
             timeout=30, what="the nodes in the job's log")
    assert not any("shapes" in m for m in messages(d, "dist", "service"))


def test_more_shapes_than_nodes_run_as_one_envelope_job(env):
    d = env["daemon"]
    out = submit(env, "envelope", [], scaleTier="CUSTOM", masterType="n1-standard-4",
                 workerType="n1-standard-8", workerCount=1,
                 parameterServerType="n1-highmem-2", parameterServerCount=1,
                 evaluatorType="n1-highmem-4", evaluatorCount=1)
    job = d.wait_state("envelope", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=240)
    assert job["state"] == "SUCCEEDED", job
    service = messages(d, "envelope", "service")
    assert any("the replicas have 4 shapes" in m and "partition has 3" in m
               for m in service), service
    # How much the envelope wastes, in total over the replicas.
    # (1, 2, 1 and 1 CPUs, 150 to 300 MiB asked; every task gets 2 CPUs and 308 MiB)
    assert any(m.endswith("every task gets the largest (2 CPUs, 308 MiB); the allocation holds "
                          "3 CPUs and 369 MiB more than the replicas asked for, in total")
               for m in service), service
    assert seen(out, "evaluator-0")["RANK"] is None
    # The job ends with its master's report; the Slurm job ends once its driver has seen the
    # step exit, a moment later.
    wait_for(lambda: not ours(env["cluster"]), timeout=60, what="no Slurm job left")


def test_failing_worker_fails_the_job_and_stops_the_others(env):
    d = env["daemon"]
    submit(env, "failw", ["--fail=worker-1", "--sleep=120", "--term_seconds=1"],
           scaleTier="CUSTOM", masterType="n1-standard-4", workerType="n1-standard-4",
           workerCount=2)
    job = d.wait_state("failw", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=240)
    assert job["state"] == "FAILED", job
    assert job["errorMessage"].startswith(
        "The replica worker 1 exited with a non-zero status of 3."), job
    try:
        wait_for(lambda: "cleaned up master-0" in messages(d, "failw", "master-replica-0"),
                 timeout=60, what="the master's TERM handler")
    except AssertionError as e:
        raise AssertionError("%s; the master's lines: %r"
                             % (e, messages(d, "failw", "master-replica-0"))) from None
    wait_for(lambda: not ours(env["cluster"]), timeout=60, what="no Slurm job left")


def test_cancel_lets_a_slow_term_handler_finish(env):
    d = env["daemon"]
    # The handler needs 7 s, more than the cluster's KillWait (5 s): only a graceful stop
    # (scancel -s TERM, then the daemon's own grace) lets it finish. The cancel comes as soon
    # as the trainer runs, often before squeue has seen the job start: the daemon must not
    # take it for pending then (a plain scancel gives only KillWait).
    submit(env, "cancelrun", ["--sleep=300", "--term_seconds=7"])
    wait_for(lambda: "line 0 of master-0" in messages(d, "cancelrun"), timeout=180,
             what="the trainer running")
    status, body = d.request("POST", "/v1/projects/%s/jobs/cancelrun:cancel" % PROJECT, {})
    assert status == 200, body
    job = d.wait_state("cancelrun", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=120)
    assert job["state"] == "CANCELLED", job
    lines = messages(d, "cancelrun", "master-replica-0")
    assert "TERM received by master-0" in lines
    assert "cleaned up master-0" in lines
    # Its start told at most once (the cancel may come before a squeue saw it running).
    running = [m for m in messages(d, "cancelrun", "service")
               if " is running on " in m or " ran on " in m]
    assert len(running) <= 1, running
    wait_for(lambda: not ours(env["cluster"]), timeout=60, what="no Slurm job left")


def test_cancel_while_pending_in_slurm(env):
    d = env["daemon"]
    c = env["cluster"]
    blockers = [c.sbatch("--cpus-per-task=4", "--mem=100M", "--wrap", "sleep 300")
                for _ in range(3)]
    try:
        for b in blockers:
            c.wait_state(b, "RUNNING", timeout=60)
        submit(env, "pending", ["--sleep=1"])
        wait_for(lambda: any(line.endswith("|PENDING|ty-") or "|PENDING|" in line
                             for line in ours(c)), timeout=60, what="the gang pending in Slurm")
        assert d.job("pending")["state"] in ("QUEUED", "PREPARING")
        wait_for(lambda: any(m.startswith("Waiting in Slurm (job ") and "(Resources)" in m
                             for m in messages(d, "pending", "service")),
                 timeout=30, what="Slurm's pending reason in the job's log")
        status, body = d.request("POST", "/v1/projects/%s/jobs/pending:cancel" % PROJECT, {})
        assert status == 200, body
        asked = time.time()
        job = d.wait_state("pending", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=60)
        assert job["state"] == "CANCELLED", job
        # Slurm cancels a pending job at once: it ends then, not after cancel_grace (15 s;
        # about 1 s here), there being no trainer to give a grace to.
        assert time.time() - asked < 15, time.time() - asked
        wait_for(lambda: not ours(c), timeout=30, what="the pending Slurm job gone")
    finally:
        c.scancel(*blockers)


def test_daemon_killed_mid_job_reattaches_without_losing_a_line(env):
    d = env["daemon"]
    submit(env, "restart", ["--lines=40", "--line_sleep=0.25"])
    wait_for(lambda: "line 3 of master-0" in messages(d, "restart"), timeout=180,
             what="the trainer printing")
    d.stop(signal.SIGKILL)
    time.sleep(2)  # the trainer keeps printing while no daemon watches
    d.start()
    job = d.wait_state("restart", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=180)
    assert job["state"] == "SUCCEEDED", job
    lines = [m for m in messages(d, "restart", "master-replica-0") if m.startswith("line ")]
    assert lines == ["line %d of master-0" % i for i in range(40)]
    # Its start is told once, not again on re-attaching.
    running = [m for m in messages(d, "restart", "service") if " is running on " in m]
    assert len(running) == 1, running


def test_node_failure_restarts_the_replica_in_a_new_allocation(env):
    d = env["daemon"]
    c = env["cluster"]
    submit(env, "nodefail", ["--lines=400", "--line_sleep=0.1"])
    wait_for(lambda: "line 2 of master-0" in messages(d, "nodefail"), timeout=180,
             what="the trainer running")
    info = json.load(open(os.path.join(env["shared"], "jobs", PROJECT, "nodefail",
                                       "master-replica-0", "slurm.json")))
    c.node_down(info["node"], reason="ty-test")
    try:
        wait_for(lambda: any("restarting it with the same identity" in m
                             for m in messages(d, "nodefail")),
                 timeout=90, what="the restart")
        job = d.wait_state("nodefail", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=240)
        assert job["state"] == "SUCCEEDED", job
    finally:
        # ReturnToService=2 may have brought it back already (idle, or running the restart).
        if any(s in c.node_states().get(info["node"], "") for s in ("down", "drain", "fail")):
            c.node_resume(info["node"])


def test_tuning_trials_run_as_their_own_allocations(env):
    d = env["daemon"]
    submit(env, "tune", ["--lines=1"], hyperparameters={
        "goal": "MAXIMIZE", "hyperparameterMetricTag": "m", "maxTrials": 3,
        "maxParallelTrials": 2, "algorithm": "RANDOM_SEARCH",
        "params": [{"parameterName": "lr", "type": "DOUBLE", "minValue": 0.1,
                    "maxValue": 1.0}]})
    job = d.wait_state("tune", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=300)
    assert job["state"] == "SUCCEEDED", job
    assert len(job["trainingOutput"]["trials"]) == 3
    gangs = [g for t in ("1", "2", "3")
             for g in os.listdir(os.path.join(env["shared"], "jobs", PROJECT, "tune",
                                              "trial-" + t)) if g.startswith("slurm-")]
    assert len(gangs) == 3


def test_container_job_runs_as_a_slurm_step(env):
    example = "localhost/trainyard-example:1"
    probe = subprocess.run(["podman", "image", "exists", example], capture_output=True)
    if shutil.which("podman") is None or probe.returncode != 0:
        pytest.skip("needs podman and %s (examples/container/build.sh)" % example)
    d = env["daemon"]
    status, body = d.request("POST", "/v1/projects/%s/jobs" % PROJECT, {
        "jobId": "ctr", "trainingInput": {
            "region": "us-central1", "masterConfig": {"imageUri": example},
            "jobDir": "gs://itest-bkt/ctr", "args": ["--epochs", "2"]}})
    assert status == 200, body
    job = d.wait_state("ctr", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=240)
    assert job["state"] == "SUCCEEDED", job
    with open(os.path.join(env["shared"], "buckets", "itest-bkt", "ctr", "model.json")) as f:
        assert json.load(f)["epochs"] == 2
    assert "epoch 2/2" in " ".join(messages(d, "ctr", "master-replica-0"))
    names = subprocess.run(["podman", "ps", "-a", "--format", "{{.Names}}"],
                           capture_output=True, text=True).stdout.split()
    assert not [n for n in names if "-ctr-" in n], names


def test_a_replica_no_node_can_hold_fails_at_once_with_slurms_reason(env):
    d = env["daemon"]
    # Four GPUs for one replica: the cluster has six, but no node more than two.
    submit(env, "toobig", [], scaleTier="CUSTOM", masterType="n1-standard-4",
           masterConfig={"acceleratorConfig": {"type": "NVIDIA_TESLA_T4", "count": 4}})
    job = d.wait_state("toobig", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=60)
    assert job["state"] == "FAILED", job
    assert "Slurm refused the job" in job["errorMessage"], job
    assert "node configuration is not available" in job["errorMessage"], job
    assert not ours(env["cluster"])


def test_controller_away_keeps_the_jobs_and_says_so_in_readyz(env):
    d = env["daemon"]
    c = env["cluster"]
    submit(env, "away", ["--lines=60", "--line_sleep=0.25"])
    wait_for(lambda: "line 2 of master-0" in messages(d, "away"), timeout=180,
             what="the trainer running")
    ctld = int(c.daemon_pids()["slurmctld"])
    os.kill(ctld, signal.SIGSTOP)  # unresponsive, as a controller that went away
    try:
        wait_for(lambda: d.get_status("/readyz") == 503, timeout=90,
                 what="/readyz saying the controller is away")
        assert d.job("away")["state"] == "RUNNING"
    finally:
        os.kill(ctld, signal.SIGCONT)
    wait_for(lambda: d.get_status("/readyz") == 200, timeout=90, what="/readyz ready again")
    job = d.wait_state("away", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=180)
    assert job["state"] == "SUCCEEDED", job
    lines = [m for m in messages(d, "away", "master-replica-0") if m.startswith("line ")]
    assert lines == ["line %d of master-0" % i for i in range(60)]


def test_slurm_check_runs_a_job_through_the_shared_directory(env):
    trainyardd = os.path.join(os.environ.get("TRAINYARD_BIN_DIR", os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "build",
        "bin")), "trainyardd")
    cfg = str(env["root"] / "config.yaml")
    ok = subprocess.run([trainyardd, "--config", cfg, "--data-dir", str(env["root"] / "check"),
                         "--slurm-check"], env=env["cluster"].env, capture_output=True, text=True,
                        timeout=180)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "ok    a 1-task job ran" in ok.stdout and "trainyard-launcher" in ok.stdout, ok.stdout
    assert ok.stdout.rstrip().endswith("Slurm is ready for executor: slurm"), ok.stdout
    bad = subprocess.run([trainyardd, "--config", cfg, "--data-dir", str(env["root"] / "check"),
                          "--slurm-check"],
                         env=dict(env["cluster"].env, TRAINYARD_SLURM_PARTITION="nope"),
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "slurm.partition nope is not a partition of this cluster" in bad.stdout, bad.stdout


def test_settings_that_override_trainyard_or_name_no_gpu_of_the_cluster_stop_the_daemon(env):
    """slurm.extra_sbatch_args with a flag Trainyard sets (here the partition, which would
    silently beat slurm.partition), and slurm.gpu_types naming a GPU type no node of the
    partition has: trainyardd does not start, and says which setting is wrong."""
    trainyardd = os.path.join(os.environ.get("TRAINYARD_BIN_DIR", os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "build",
        "bin")), "trainyardd")
    cfg = str(env["root"] / "config.yaml")
    for setting, value, said in [
            ("TRAINYARD_SLURM_EXTRA_SBATCH_ARGS", "--partition=high",
             "slurm.extra_sbatch_args: --partition is set by Trainyard"),
            ("TRAINYARD_SLURM_EXTRA_SBATCH_ARGS", "-p high",
             "slurm.extra_sbatch_args: -p is set by Trainyard"),
            ("TRAINYARD_SLURM_EXTRA_SBATCH_ARGS", "--part=high",
             "slurm.extra_sbatch_args: --part is set by Trainyard"),
            ("TRAINYARD_SLURM_EXTRA_SBATCH_ARGS", "-Qp high",
             "slurm.extra_sbatch_args: -p is set by Trainyard"),
            ("TRAINYARD_SLURM_GPU_TYPES", "NVIDIA_TESLA_T4=t4",
             "slurm.gpu_types: NVIDIA_TESLA_T4 maps to the GPU type t4, which no node of "
             "partition low has (their GPU types: fake)")]:
        p = subprocess.run([trainyardd, "--config", cfg, "--data-dir", str(env["root"] / "bad"),
                            "--listen", "127.0.0.1:0"],
                           env=dict(env["cluster"].env, **{setting: value}), capture_output=True,
                           text=True, timeout=60)
        assert p.returncode != 0, (setting, value, p.stdout, p.stderr)
        assert said in p.stdout + p.stderr, (setting, value, p.stdout, p.stderr)
