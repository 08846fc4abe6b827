"""End-to-end checks of distributed jobs (issue 4): multi-replica clusters with their TF_CONFIG
and torch.distributed variables, a real PyTorch DDP run, job outcome driven by the master,
restarts of replicas killed from outside, the GPU queue (priority, jobPosition, one GPU at a
time), maxRunningTime, consumedMLUnits and impossible GPU requests.

One trainer package serves every test: its first argument names the scenario and its second a
directory the test shares with the replicas (they run on this machine). Replicas leave what
they saw there (environment, pid, times) as JSON files written atomically, and wait for each
other through files, so no test sleeps to synchronise. One daemon (no GPUs) serves the module
and a second one owns a single fake NVIDIA_TESLA_T4; each builds the package's environment
once."""

import datetime
import json
import os
import signal
import time
import urllib.request

import pytest

from conftest import PROJECT, Daemon, build_sdist, job_body, make_package, upload_package, wait_for

TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")
BUCKET = "itest-dist"
JOBS = "/v1/projects/%s/jobs" % PROJECT

TRAINER = r'''
import json
import os
import subprocess
import sys
import time

STARTED = time.time()
SCENARIO, SHARED = sys.argv[1], sys.argv[2]
EXTRA = sys.argv[3:]
TF = json.loads(os.environ.get("TF_CONFIG") or "{}")
TYPE = TF.get("task", {}).get("type", "master")
INDEX = TF.get("task", {}).get("index", 0)
PRIMARY = TYPE in ("master", "chief")
JOB = os.environ.get("CLOUD_ML_JOB_ID", "nojob")
NAME = "%s-%s-%d" % (JOB, TYPE, INDEX)
ENV_KEYS = ("TF_CONFIG", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK",
            "CLOUD_ML_JOB_ID", "CUDA_VISIBLE_DEVICES")


def path(name):
    return os.path.join(SHARED, name)


def write_json(name, data):
    tmp = path(".%s.%d.tmp" % (name, os.getpid()))
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path(name))


def wait_until(predicate, what, timeout=90):
    deadline = time.time() + timeout
    while not predicate():
        if time.time() > deadline:
            sys.exit("%s: timed out waiting for %s" % (NAME, what))
        time.sleep(0.02)


def wait_files(prefix, count):
    def enough():
        return len([n for n in os.listdir(SHARED) if n.startswith(prefix)]) >= count
    wait_until(enough, "%d files %s*" % (count, prefix))


def record(name=None, **more):
    data = {"env": {k: os.environ[k] for k in ENV_KEYS if k in os.environ},
            "pid": os.getpid(), "start": STARTED}
    data.update(more)
    write_json(name or "env-%s.json" % NAME, data)


def forever():
    while True:
        time.sleep(0.1)


def child_with_marker():
    # A grandchild of the launcher: "no process left" must cover it too.
    return subprocess.Popen(["/bin/sleep", "1000", "tymark-" + os.path.basename(SHARED)])


print("hello from %s" % NAME, flush=True)

if SCENARIO == "ddp":
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", init_method="env://")
    torch.manual_seed(rank)  # different initial weights on every rank: DDP must align them
    model = torch.nn.Linear(4, 1)
    init = {k: v.flatten().tolist() for k, v in model.state_dict().items()}
    ddp = DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(1000 + rank)  # and different data on every rank
    for step in range(5):
        x = torch.randn(16, 4, generator=data)
        y = x.sum(dim=1, keepdim=True) + 0.1 * torch.randn(16, 1, generator=data)
        opt.zero_grad()
        loss = ((ddp(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        print("rank %d step %d loss %.4f" % (rank, step, loss.item()), flush=True)
    job_dir = EXTRA[EXTRA.index("--job-dir") + 1]
    bucket, _, obj = job_dir[len("gs://"):].partition("/")
    out = os.path.join(os.environ["TRAINYARD_BUCKETS_DIR"], bucket, obj)
    os.makedirs(out, exist_ok=True)
    final = {k: v.flatten().tolist() for k, v in model.state_dict().items()}
    tmp = os.path.join(out, ".weights-rank%d.tmp" % rank)
    with open(tmp, "w") as f:
        json.dump({"rank": rank, "world": dist.get_world_size(), "init": init, "final": final}, f)
    os.replace(tmp, os.path.join(out, "weights-rank%d.json" % rank))
    dist.barrier()  # the master must not end the job before every rank has written its weights
    dist.destroy_process_group()

elif SCENARIO == "cluster":
    # Every replica records what it got; the primary ends the job once all of them did.
    # EXTRA: number of replicas that record (evaluators included).
    record()
    if PRIMARY:
        wait_files("env-%s-" % JOB, int(EXTRA[0]))
    else:
        forever()

elif SCENARIO == "ps":
    # Parameter-server shape: ps and workers never end; the master ends the job.
    if TYPE == "ps":
        child_with_marker()
    record()
    if PRIMARY:
        wait_files("env-%s-" % JOB, int(EXTRA[0]))
        time.sleep(1.0)
    else:
        forever()

elif SCENARIO == "fail":
    record()
    if TYPE == "worker" and INDEX == 1:
        wait_files("env-%s-" % JOB, int(EXTRA[0]))  # everyone else is running

        def deep_inside():
            raise ValueError("worker one gives up")
        deep_inside()
    forever()

elif SCENARIO == "restart":
    if TYPE == "worker":
        if os.path.exists(path("worker-started")):
            record("attempt-2.json")
            open(path("worker-restarted"), "w").close()
            sys.exit(0)
        open(path("worker-started"), "w").close()
        record("attempt-1.json")
        forever()
    wait_until(lambda: os.path.exists(path("worker-restarted")), "the restarted worker")

elif SCENARIO == "down":
    # The worker fails once released, the master succeeds once released (the test releases
    # them one after the other while the daemon is down).
    record()
    wait_until(lambda: os.path.exists(path("release-%s" % TYPE)), "release-" + TYPE)
    sys.exit(7 if TYPE == "worker" else 0)

elif SCENARIO == "gpu":
    # EXTRA: seconds the primary holds the job, number of replicas that record.
    record()
    if PRIMARY:
        wait_files("env-%s-" % JOB, int(EXTRA[1]))
        time.sleep(float(EXTRA[0]))
        write_json("end-%s.json" % JOB, {"end": time.time()})
    else:
        forever()

elif SCENARIO == "sleep":
    child_with_marker()
    record()
    forever()

else:
    sys.exit("unknown scenario " + SCENARIO)
'''


# ------------------------------------------------------------------------------------------
# Helpers


def config_daemon(root, settings):
    """A started daemon whose --config file holds settings (keys of trainyardd's config)."""
    data = os.path.join(str(root), "data")
    os.makedirs(data)
    cfg = os.path.join(str(root), "trainyardd.yaml")
    with open(cfg, "w") as f:
        for key, value in settings.items():
            f.write("%s: %s\n" % (key, json.dumps(value)))
    return Daemon(data, extra_args=["--config", cfg]).start()


def stage(daemon, root):
    pkg = make_package(root, TRAINER)
    return upload_package(daemon, build_sdist(pkg), bucket=BUCKET)


def custom(job_id, uri, args, **training):
    """A CUSTOM-tier job body; training holds the *Type/*Count/*Config fields."""
    return job_body(job_id, uri, args=args, scaleTier="CUSTOM", **training)


def submit(daemon, body):
    status, out = daemon.request("POST", JOBS, body)
    assert status == 200, out
    return out


def finish(daemon, job_id, timeout=120):
    return daemon.wait_state(job_id, TERMINAL, timeout=timeout)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def replica_files(shared, job_id):
    """{"master-0": record, ...} of the env files the replicas of job_id left in shared."""
    prefix = "env-%s-" % job_id
    return {n[len(prefix):-len(".json")]: read_json(os.path.join(shared, n))
            for n in os.listdir(shared) if n.startswith(prefix) and n.endswith(".json")}


def alive(pid, marker):
    """True while pid is a live process whose command line holds marker (not a zombie, not a
    reused pid)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return marker.encode() in f.read()
    except OSError:
        return False


def marked_processes(marker):
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and alive(int(pid), marker):
            found.append(int(pid))
    return found


def assert_nothing_left(shared, records):
    """Every recorded trainer and every child carrying the shared dir's marker is gone."""
    marker = os.path.basename(str(shared))
    wait_for(lambda: not [r["pid"] for r in records if alive(r["pid"], marker)]
             and not marked_processes("tymark-" + marker),
             timeout=20, what="every process of the job gone (pids %s)" % [
                 r["pid"] for r in records if alive(r["pid"], marker)])


def rfc3339(text):
    """Seconds since the epoch of a UTC timestamp like 2026-11-21T10:00:00.123456Z."""
    base, _, frac = text.rstrip("Z").partition(".")
    t = datetime.datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    return t + (float("0." + frac) if frac else 0.0)


def port_of(address):
    host, _, port = address.rpartition(":")
    assert host == "127.0.0.1", address
    return int(port)


# ------------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="module")
def cpu(tmp_path_factory):
    """A daemon without GPUs and with a fixed node size, so admission does not depend on the
    machine the tests run on: 8 CPUs and 64 GiB (x the default overcommit)."""
    root = tmp_path_factory.mktemp("dist")
    d = config_daemon(root, {"gpus": "none", "node_cpus": 8, "node_memory": "64GiB"})
    d.uri = stage(d, root / "pkg")
    yield d
    d.stop()


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    """A daemon that owns one (pretend) NVIDIA_TESLA_T4 as GPU index 0."""
    root = tmp_path_factory.mktemp("gpu")
    d = config_daemon(root, {"gpus": "NVIDIA_TESLA_T4", "node_cpus": 8,
                             "node_memory": "64GiB"})
    d.uri = stage(d, root / "pkg")
    yield d
    d.stop()


@pytest.fixture
def shared(tmp_path):
    d = tmp_path / ("s%d" % time.time_ns())
    d.mkdir()
    return str(d)


N1 = "n1-standard-4"
GPU_MASTER = {"acceleratorConfig": {"type": "NVIDIA_TESLA_T4", "count": "1"}}


# ------------------------------------------------------------------------------------------
# Tests


def test_pytorch_ddp_ranks_end_with_identical_weights(cpu, shared):
    job_dir = "gs://%s/ddp_out" % BUCKET
    submit(cpu, custom("ddp_1", cpu.uri, ["ddp", shared], masterType=N1, workerType=N1,
                       workerCount="2", jobDir=job_dir))
    job = finish(cpu, "ddp_1", timeout=180)
    assert job["state"] == "SUCCEEDED", job
    out = os.path.join(cpu.data_dir, "buckets", BUCKET, "ddp_out")
    ranks = [read_json(os.path.join(out, "weights-rank%d.json" % r)) for r in range(3)]
    assert [r["rank"] for r in ranks] == [0, 1, 2] and {r["world"] for r in ranks} == {3}
    # Different starting points (each rank seeded its own), one end point: the gradients were
    # all-reduced over gloo and rank 0's initial weights were broadcast.
    assert ranks[0]["init"] != ranks[1]["init"]
    final = ranks[0]["final"]
    for r in ranks[1:]:
        assert r["final"].keys() == final.keys()
        for key in final:
            assert r["final"][key] == pytest.approx(final[key], abs=1e-6), (key, r["rank"])
    assert final != ranks[0]["init"], "training did not change the weights"
    tasks = {e["resource"]["labels"]["task_name"] for e in cpu.logs("ddp_1")}
    assert {"master-replica-0", "worker-replica-0", "worker-replica-1"} <= tasks, tasks


def test_parameter_server_job_ends_with_the_master_and_leaves_nothing(cpu, shared):
    submit(cpu, custom("ps_1", cpu.uri, ["ps", shared, "4"], masterType=N1, workerType=N1,
                       workerCount="1", parameterServerType=N1, parameterServerCount="2"))
    job = finish(cpu, "ps_1")
    assert job["state"] == "SUCCEEDED", job
    records = replica_files(shared, "ps_1")
    assert sorted(records) == ["master-0", "ps-0", "ps-1", "worker-0"]
    assert_nothing_left(shared, records.values())


def test_failing_worker_fails_the_job_and_stops_the_others(cpu, shared):
    submit(cpu, custom("wfail_1", cpu.uri, ["fail", shared, "3"], masterType=N1, workerType=N1,
                       workerCount="2"))
    job = finish(cpu, "wfail_1")
    assert job["state"] == "FAILED", job
    msg = job["errorMessage"]
    assert "The replica worker 1 exited with a non-zero status of 1." in msg, msg
    assert "Termination reason: Error." in msg and "ValueError: worker one gives up" in msg, msg
    assert "master 0" not in msg and "worker 0" not in msg, msg  # they were stopped, not failed
    records = replica_files(shared, "wfail_1")
    assert sorted(records) == ["master-0", "worker-0", "worker-1"]
    assert_nothing_left(shared, records.values())
    err = [e for e in cpu.logs("wfail_1") if "ValueError: worker one gives up" in
           e["jsonPayload"]["message"]]
    assert err and err[0]["resource"]["labels"]["task_name"] == "worker-replica-1", err


def test_replica_killed_from_outside_is_restarted_with_the_same_tf_config(cpu, shared):
    submit(cpu, custom("restart_1", cpu.uri, ["restart", shared], masterType=N1, workerType=N1,
                       workerCount="1"))
    first_file = os.path.join(shared, "attempt-1.json")
    wait_for(lambda: os.path.exists(first_file), timeout=90, what="the worker's first attempt")
    first = read_json(first_file)
    os.kill(first["pid"], signal.SIGKILL)
    job = finish(cpu, "restart_1")
    assert job["state"] == "SUCCEEDED", job
    second = read_json(os.path.join(shared, "attempt-2.json"))
    assert second["pid"] != first["pid"]
    assert json.loads(second["env"]["TF_CONFIG"]) == json.loads(first["env"]["TF_CONFIG"])
    assert second["env"] == first["env"]  # same MASTER_PORT, RANK, ... too
    task = json.loads(first["env"]["TF_CONFIG"])["task"]
    assert (task["type"], task["index"]) == ("worker", 0), task
    logs = json.dumps(cpu.logs("restart_1"))
    assert "restarting it with the same identity (restart 1 of 5)" in logs, logs
    metrics = metric_values(cpu)
    assert metrics["trainyard_replica_restarts_total"] >= 1, metrics


def check_cluster(job_id, records, primary, counts, training):
    """Every TF_CONFIG / torch rule of compat §6.1 for one job's replica records.
    counts: {"master": 1, "worker": n, "ps": n, "evaluator": n}."""
    expected = ["%s-%d" % (primary if t == "master" else t, i)
                for t, n in counts.items() for i in range(n)]
    assert sorted(records) == sorted(expected)
    tfs = {name: json.loads(r["env"]["TF_CONFIG"]) for name, r in records.items()}
    cluster = tfs["%s-0" % primary]["cluster"]
    want_keys = {primary} | {t for t in ("worker", "ps") if counts[t]}
    assert set(cluster) == want_keys, cluster  # never an evaluator key
    assert len(cluster[primary]) == 1
    assert len(cluster.get("worker", [])) == counts["worker"]
    assert len(cluster.get("ps", [])) == counts["ps"]
    ports = [port_of(a) for addrs in cluster.values() for a in addrs]
    assert len(set(ports)) == len(ports), cluster
    primary_port = port_of(cluster[primary][0])
    world = 1 + counts["worker"]
    for name, tf in tfs.items():
        env = records[name]["env"]
        t, _, i = name.rpartition("-")
        assert tf["cluster"] == cluster, name
        assert tf["task"]["type"] == t and tf["task"]["index"] == int(i), (name, tf["task"])
        assert isinstance(tf["task"].get("cloud"), str) and tf["task"]["cloud"], tf["task"]
        assert "trial" not in tf["task"]
        assert tf["environment"] == "cloud"
        for key, value in training.items():
            assert str(tf["job"].get(key)) == str(value), (name, key, tf["job"])
        assert env["CLOUD_ML_JOB_ID"] == job_id
        assert env.get("CUDA_VISIBLE_DEVICES") == "", (name, env)
        # torch.distributed's env:// world is the primary (rank 0) and the workers.
        if t in (primary, "worker"):
            rank = 0 if t == primary else int(i) + 1
            assert env["MASTER_ADDR"] == "127.0.0.1" and int(env["MASTER_PORT"]) == primary_port
            assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"]) == (
                str(rank), str(world), "0"), (name, env)
        else:
            assert not {"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK"} & set(
                env), (name, env)


def test_exits_while_the_daemon_was_down_are_judged_in_the_order_they_happened(tmp_path, shared):
    """A worker that failed before the master succeeded, both while trainyardd was down (kill
    -9): the restarted daemon reads both exits at once and must still fail the job, as it would
    have live, and date its end when the replicas ended, not when it came back."""
    d = config_daemon(tmp_path, {"gpus": "none", "node_cpus": 8, "node_memory": "64GiB"})
    try:
        uri = stage(d, tmp_path / "pkg")
        submit(d, custom("down_1", uri, ["down", shared], masterType=N1, workerType=N1,
                         workerCount="1"))
        wait_for(lambda: len(replica_files(shared, "down_1")) == 2, timeout=90,
                 what="both replicas running")
        d.stop(signal.SIGKILL)
        work = os.path.join(d.data_dir, "jobs", PROJECT, "down_1")
        ended = {}
        for task in ("worker", "master"):
            open(os.path.join(shared, "release-" + task), "w").close()
            exit_file = os.path.join(work, "%s-replica-0" % task, "exit.json")
            wait_for(lambda: os.path.exists(exit_file), timeout=60, what=task + "'s exit.json")
            ended[task] = os.stat(exit_file).st_mtime
        # The restart comes seconds later, so an end dated by the restart would show.
        wait_for(lambda: time.time() > ended["master"] + 2, timeout=5, what="two seconds")
        back = time.time()
        d.start()
        job = finish(d, "down_1")
        assert job["state"] == "FAILED", job
        assert job["errorMessage"].startswith(
            "The replica worker 0 exited with a non-zero status of 7."), job
        end = rfc3339(job["endTime"])
        assert int(ended["master"]) <= end <= ended["master"] < back - 1, (job, ended, back)
    finally:
        d.stop()


def test_tf_config_and_torch_variables_of_every_replica(cpu, shared):
    # Both jobs at once (13 replicas): each job's cluster is its own.
    submit(cpu, job_body("std1_1", cpu.uri, args=["cluster", shared, "8"],
                         scaleTier="STANDARD_1"))
    submit(cpu, custom("chief_1", cpu.uri, ["cluster", shared, "5"], runtimeVersion="2.11",
                       masterType=N1, workerType=N1, workerCount="2", parameterServerType=N1,
                       parameterServerCount="1", evaluatorType=N1, evaluatorCount="1"))
    for job_id in ("std1_1", "chief_1"):
        job = finish(cpu, job_id)
        assert job["state"] == "SUCCEEDED", job
    std = replica_files(shared, "std1_1")
    check_cluster("std1_1", std, "master", {"master": 1, "worker": 4, "ps": 3, "evaluator": 0},
                  {"scaleTier": "STANDARD_1", "pythonModule": "trainer.task"})
    chief = replica_files(shared, "chief_1")
    check_cluster("chief_1", chief, "chief", {"master": 1, "worker": 2, "ps": 1, "evaluator": 1},
                  {"scaleTier": "CUSTOM", "runtimeVersion": "2.11", "workerCount": "2",
                   "evaluatorType": N1})
    tasks = {e["resource"]["labels"]["task_name"] for e in cpu.logs("std1_1")}
    assert {"master-replica-0", "worker-replica-3", "ps-replica-2"} <= tasks, tasks
    tasks = {e["resource"]["labels"]["task_name"] for e in cpu.logs("chief_1")}
    # Log names keep "master" whatever TF_CONFIG calls the primary (as the service's hostnames).
    assert {"master-replica-0", "worker-replica-1", "ps-replica-0",
            "evaluator-replica-0"} <= tasks, tasks


def test_max_running_time_cancels_the_job(cpu, shared):
    body = custom("mrt_1", cpu.uri, ["sleep", shared], masterType=N1, workerType=N1,
                  workerCount="1", scheduling={"maxRunningTime": "3s"})
    submit(cpu, body)
    job = finish(cpu, "mrt_1", timeout=60)
    assert job["state"] == "CANCELLED", job
    assert "maxRunningTime" in job["errorMessage"], job
    records = replica_files(shared, "mrt_1")
    assert sorted(records) == ["master-0", "worker-0"]
    assert_nothing_left(shared, records.values())
    # Counted from RUNNING: the trainers had their 3 s, and not much more. startTime is set at
    # PREPARING (before the environment is ready), so it bounds the run from below only; the
    # master's own start time bounds it from above, however long the preparation took.
    ran = rfc3339(job["endTime"]) - rfc3339(job["startTime"])
    assert ran >= 3.0, job
    ran_after_start = rfc3339(job["endTime"]) - records["master-0"]["start"]
    assert ran_after_start <= 20.0, (job, records["master-0"])


def test_consumed_ml_units_grow_while_running(cpu, shared):
    submit(cpu, custom("units_1", cpu.uri, ["sleep", shared], masterType=N1, workerType=N1,
                       workerCount="1"))
    cpu.wait_state("units_1", "RUNNING", timeout=90)

    def units():
        j = cpu.job("units_1")
        assert j["state"] == "RUNNING", j
        return float(j.get("trainingOutput", {}).get("consumedMLUnits", 0)) > 0 and j

    job = wait_for(units, timeout=60, what="consumedMLUnits > 0")
    assert float(job["trainingOutput"]["consumedMLUnits"]) < 1.0, job  # two n1-standard-4, s
    assert cpu.request("POST", JOBS + "/units_1:cancel", {})[0] == 200
    assert finish(cpu, "units_1", timeout=60)["state"] == "CANCELLED"


def test_gpu_requests_on_a_daemon_without_gpus_are_refused(cpu):
    body = custom("nogpu_1", cpu.uri, ["sleep", "/nonexistent"], masterType=N1,
                  masterConfig=GPU_MASTER)
    status, out = cpu.request("POST", JOBS, body)
    assert status == 400 and out["error"]["status"] == "INVALID_ARGUMENT", out
    assert "acceleratorConfig" in json.dumps(out), out


N96 = "n1-standard-96"  # 96 vCPUs, 360 GiB


def test_a_job_bigger_than_the_node_runs_alone_with_a_warning(cpu, shared):
    """oversize_jobs: run_alone (the default): 3 x n1-standard-96 (288 vCPUs) on a node of 256
    (8 CPUs x 32) is accepted, waits while another job runs, then runs alone with its whole
    cluster and a WARNING line in its log."""
    holder = os.path.join(shared, "holder")
    os.mkdir(holder)
    submit(cpu, custom("small_1", cpu.uri, ["sleep", holder], masterType=N1))
    cpu.wait_state("small_1", "RUNNING", timeout=90)
    big = custom("big_1", cpu.uri, ["gpu", shared, "0", "3"], masterType=N96, workerType=N96,
                 workerCount="2")
    submit(cpu, big)
    # Admission passes run every few ms: a second is many passes, and the big job waits.
    time.sleep(1.0)
    job = cpu.job("big_1")
    assert job["state"] == "QUEUED" and job["jobPosition"] == "1", job
    assert cpu.request("POST", JOBS + "/small_1:cancel", {})[0] == 200
    assert finish(cpu, "small_1", timeout=60)["state"] == "CANCELLED"
    job = finish(cpu, "big_1", timeout=180)
    assert job["state"] == "SUCCEEDED", job
    seen = replica_files(shared, "big_1")
    assert sorted(seen) == ["master-0", "worker-0", "worker-1"], sorted(seen)
    cluster = json.loads(seen["worker-1"]["env"]["TF_CONFIG"])["cluster"]
    assert len(cluster["master"]) == 1 and len(cluster["worker"]) == 2, cluster
    warnings = [e for e in cpu.logs("big_1")
                if e["severity"] == "WARNING"
                and "bigger than this Trainyard" in e["jsonPayload"]["message"]]
    assert len(warnings) == 1, cpu.logs("big_1")
    assert "288 vCPUs in all but this Trainyard offers 256" in warnings[0]["jsonPayload"]["message"], warnings
    assert "oversize_jobs: run_alone" in warnings[0]["jsonPayload"]["message"], warnings


def test_oversize_jobs_refuse_refuses_a_job_bigger_than_the_node(tmp_path):
    d = config_daemon(tmp_path, {"gpus": "none", "node_cpus": 8, "node_memory": "64GiB",
                                 "oversize_jobs": "refuse"})
    try:
        uri = stage(d, tmp_path / "pkg")
        body = custom("big_2", uri, ["gpu", str(tmp_path), "0", "3"], masterType=N96,
                      workerType=N96, workerCount="2")
        status, out = d.request("POST", JOBS, body)
        assert status == 400 and out["error"]["status"] == "INVALID_ARGUMENT", out
        assert "288 vCPUs in all but this Trainyard offers 256" in json.dumps(out), out
        assert d.request("GET", JOBS + "/big_2")[0] == 404  # nothing was stored
    finally:
        d.stop()


def metric_values(daemon):
    """The daemon's /metrics samples without labels, plus node_* ones keyed with theirs."""
    status, text = daemon.request("GET", "/metrics")
    assert status == 200, text
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


def test_metrics_show_the_gpu_inventory(gpu):
    m = metric_values(gpu)
    assert m['trainyard_node_capacity{resource="gpu"}'] == 1, m
    assert 0 <= m['trainyard_node_free{resource="gpu"}'] <= 1, m
    assert m['trainyard_node_capacity{resource="cpu"}'] == 8 * 32, m  # node_cpus x overcommit


def test_gpu_request_larger_than_the_inventory_is_refused(gpu):
    two = {"acceleratorConfig": {"type": "NVIDIA_TESLA_T4", "count": "2"}}
    body = custom("toomany_1", gpu.uri, ["sleep", "/nonexistent"], masterType=N1,
                  masterConfig=two)
    status, out = gpu.request("POST", JOBS, body)
    assert status == 400 and out["error"]["status"] == "INVALID_ARGUMENT", out
    assert "acceleratorConfig" in json.dumps(out), out
    assert gpu.request("GET", JOBS + "/toomany_1")[0] == 404  # nothing was stored


def test_gpu_queue_runs_jobs_one_at_a_time_by_priority(gpu, shared):
    assert gpu.request("PUT", "/v1/admin/admission", {"paused": True})[0] == 200
    try:
        for job_id, priority in (("prio_10", 10), ("prio_500", 500), ("prio_100", 100)):
            submit(gpu, custom(job_id, gpu.uri, ["gpu", shared, "1.5", "1"], masterType=N1,
                               masterConfig=GPU_MASTER, scheduling={"priority": priority}))
        positions = {j: gpu.job(j)["jobPosition"] for j in ("prio_500", "prio_100", "prio_10")}
        assert positions == {"prio_500": "1", "prio_100": "2", "prio_10": "3"}, positions
    finally:
        assert gpu.request("PUT", "/v1/admin/admission", {"paused": False})[0] == 200

    seen = []  # jobPosition of the priority-10 job while it waits

    def low_started():
        j = gpu.job("prio_10")
        if j["state"] == "QUEUED":
            seen.append(int(j["jobPosition"]))
            return False
        return True

    wait_for(low_started, timeout=120, interval=0.02, what="prio_10 leaving the queue")
    assert seen == sorted(seen, reverse=True), seen
    assert 2 in seen and 1 in seen, seen  # 3 -> 2 -> 1 as the jobs ahead were admitted
    spans = []
    for job_id in ("prio_500", "prio_100", "prio_10"):
        job = finish(gpu, job_id)
        assert job["state"] == "SUCCEEDED", job
        assert "jobPosition" not in job or job["jobPosition"] in ("0", 0), job
        rec = replica_files(shared, job_id)["master-0"]
        assert rec["env"]["CUDA_VISIBLE_DEVICES"] == "0", rec
        spans.append((rec["start"], read_json(os.path.join(shared, "end-%s.json" % job_id))["end"]))
    # In priority order, one at a time: each starts after the one before it ended.
    for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
        assert e1 <= s2, spans


def test_cpu_only_replica_of_a_gpu_job_sees_no_gpu(gpu, shared):
    submit(gpu, custom("mixed_1", gpu.uri, ["gpu", shared, "0", "2"], masterType=N1,
                       masterConfig=GPU_MASTER, workerType=N1, workerCount="1"))
    job = finish(gpu, "mixed_1")
    assert job["state"] == "SUCCEEDED", job
    recs = replica_files(shared, "mixed_1")
    assert recs["master-0"]["env"]["CUDA_VISIBLE_DEVICES"] == "0"
    assert recs["worker-0"]["env"]["CUDA_VISIBLE_DEVICES"] == ""
