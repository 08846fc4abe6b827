"""End-to-end checks of hyperparameter tuning (issue 6): a real daemon runs real trials.

One daemon serves the whole module (its cached trainer environments are shared), and most
checks use a small probe trainer (PROBE below, plain Python) that records what it was given
(argv, environment, TF_CONFIG) into a directory of the test and reports a metric derived from
its hyperparameters with `hypertune`. The first test runs the real example,
examples/hptuning, unchanged with its config.yaml through the CLI.

The contract these tests hold the daemon to (compat §3, §4, §6.3-6.5, §7):
  * every trial runs every replica with: user args, then `--job-dir DIR` (when jobDir), then one
    `--<parameterName>=<value>` per parameter, the value being the trial's string in
    trainingOutput.trials[].hyperparameters;
  * env CLOUD_ML_TRIAL_ID ("1", "2", ...), CLOUD_ML_HP_METRIC_TAG, CLOUD_ML_HP_METRIC_FILE (one
    path per replica), TF_CONFIG.task.trial (a string), and `import hypertune` works;
  * finalMetric is the last record the trial reported under the job's tag (trainingStep = its
    global_step); a trial that reports nothing (or only under another tag) succeeds without one;
  * maxParallelTrials bounds the trials running at once; GRID_SEARCH runs exactly the grid;
    failed trials beyond maxFailedTrials fail the job; resumePreviousJobId continues the
    numbering without repeating points; early stopping (median rule) SIGTERMs hopeless trials
    and marks them isTrialStoppedEarly.
"""

import datetime
import json
import os
import re
import subprocess
import textwrap
import time

import pytest

from conftest import PROJECT, REPO, Daemon, job_body, wait_for

EXAMPLE = os.path.join(REPO, "examples", "hptuning")
BUCKET = "itest-tuning"
TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")
JOBS = "/v1/projects/%s/jobs" % PROJECT

# The probe trainer. User args (space-separated form, so they never look like a parameter):
#   --record DIR        write <trial>-<task type>-<index>.json there (argv, env, TF_CONFIG, ...)
#   --tag T             report under T (default: $CLOUD_ML_HP_METRIC_TAG)
#   --mode M            report (default): 3 reports at steps 1..3, the last one = objective(params)
#                       curve: report (1/q)*(1 - 0.5**s) at steps s = 1..--steps, --sleep apart
#                       (--slow-sleep apart from the 5th report on when q > --slow-above)
#   --crash-on X,...    exit 3 before reporting when the parameter x has one of these values
#   --silent-on X,...   report nothing when x has one of these values
#   --wrongtag-on X,... report under the tag "not/the/tag" when x has one of these values
# Parameters are every `--name=value` argument. Only the primary (master/chief) reports, once
# every other replica of its trial has written its record.
PROBE = r'''
import json, os, sys, time

argv = sys.argv[1:]


def opt(name, default=None):
    return argv[argv.index(name) + 1] if name in argv else default


def objective(params):
    total = 0.0
    for key in sorted(params):
        try:
            total += float(params[key])
        except ValueError:
            total += len(params[key]) / 10.0
    return total


params = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
task = tf_config.get("task") or {}
trial = os.environ.get("CLOUD_ML_TRIAL_ID", "none")
name = "%s-%s-%s" % (trial, task.get("type", "master"), task.get("index", 0))
record = {"argv": argv, "params": params, "tf_config": tf_config, "pid": os.getpid(),
          "start": time.time(), "last_step": 0,
          "env": {k: os.environ.get(k) for k in (
              "CLOUD_ML_TRIAL_ID", "CLOUD_ML_HP_METRIC_TAG", "CLOUD_ML_HP_METRIC_FILE",
              "CLOUD_ML_JOB_ID", "PYTHONPATH")}}


def save():
    path = os.path.join(opt("--record"), name + ".json")
    with open(path + ".tmp", "w") as f:
        json.dump(record, f)
    os.replace(path + ".tmp", path)


try:
    import hypertune
    record["hypertune_file"] = hypertune.__file__
except ImportError as e:
    record["hypertune_error"] = repr(e)
save()
if task.get("type", "master") not in ("master", "chief"):
    sys.exit(0)
# The job ends when the primary exits, stopping the other replicas: wait until each of them has
# written its record (TF_CONFIG's cluster lists every replica but evaluators).
peers = ["%s-%s-%d" % (trial, kind, i) for kind, addrs in (tf_config.get("cluster") or {}).items()
         for i in range(len(addrs))]
deadline = time.time() + 60
while not all(os.path.exists(os.path.join(opt("--record"), p + ".json")) for p in peers):
    if time.time() > deadline:
        sys.exit("probe: no record from some of %s" % peers)
    time.sleep(0.05)

x = params.get("x")
if x is not None and x in (opt("--crash-on") or "").split(","):
    print("probe: crashing for x=%s" % x, file=sys.stderr, flush=True)
    sys.exit(3)
if x is not None and x in (opt("--silent-on") or "").split(","):
    sys.exit(0)
tag = opt("--tag", os.environ.get("CLOUD_ML_HP_METRIC_TAG"))
if x is not None and x in (opt("--wrongtag-on") or "").split(","):
    tag = "not/the/tag"
hpt = hypertune.HyperTune()
if opt("--mode", "report") == "curve":
    q = float(params["q"])
    for step in range(1, int(opt("--steps", "15")) + 1):
        record["last_step"] = step  # before the report: a SIGTERM between the two leaves
        save()                      # last_step >= the last step reported
        hpt.report_hyperparameter_tuning_metric(tag, (1.0 / q) * (1 - 0.5 ** step), step)
        slow = opt("--slow-above") is not None and q > float(opt("--slow-above")) and step >= 5
        time.sleep(float(opt("--slow-sleep" if slow else "--sleep", "0.2")))
else:
    value = objective(params)
    for step, factor in ((1, 0.5), (2, 0.8), (3, 1.0)):
        hpt.report_hyperparameter_tuning_metric(hyperparameter_metric_tag=tag,
                                                metric_value=value * factor, global_step=step)
        record["last_step"] = step
    save()
print("probe trial %s done" % trial, flush=True)
'''

def _probe_function(name):
    """A function of the probe's source, run here too (the expected finalMetric)."""
    start = PROBE.index("def %s(" % name)
    namespace = {}
    exec(PROBE[start:PROBE.index("\n\n\n", start)], namespace)  # noqa: S102 (our own source)
    return namespace[name]


probe_objective = _probe_function("objective")


# --- fixtures and helpers ---------------------------------------------------------------------

def build_sdist(root, packages, install_requires=()):
    """Writes packages ({package: {file: text}}) and a setup.py under root; returns the sdist."""
    root = str(root)
    for pkg, files in packages.items():
        os.makedirs(os.path.join(root, pkg), exist_ok=True)
        for fname, text in files.items():
            with open(os.path.join(root, pkg, fname), "w") as f:
                f.write(text)
    with open(os.path.join(root, "setup.py"), "w") as f:
        f.write("from setuptools import setup\nsetup(name='probe', version='0.1', packages=%r, "
                "install_requires=%r)\n" % (sorted(packages), list(install_requires)))
    subprocess.run(["/usr/bin/python3", "setup.py", "-q", "sdist", "--dist-dir", "dist"],
                   cwd=root, check=True, capture_output=True)
    dist = os.path.join(root, "dist")
    return os.path.join(dist, os.listdir(dist)[0])


def upload(daemon, sdist):
    name = "packages/%d/%s" % (time.time_ns(), os.path.basename(sdist))
    with open(sdist, "rb") as f:
        status, body = daemon.request(
            "POST", "/upload/storage/v1/b/%s/o?uploadType=media&name=%s" % (
                BUCKET, name.replace("/", "%2F")), raw=f.read())
    assert status == 200, body
    return "gs://%s/%s" % (BUCKET, name)


@pytest.fixture(scope="module")
def tdaemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("tuning")
    d = Daemon(str(root / "data"))
    os.makedirs(d.data_dir)
    d.start()
    status, body = d.request("POST", "/storage/v1/b?project=%s" % PROJECT, {"name": BUCKET})
    assert status == 200, body
    d.probe_uri = upload(d, build_sdist(root / "probe", {
        "trainer": {"__init__.py": "", "task.py": PROBE}}))
    yield d
    # Trials left running by a failed test would outlive the daemon (trainers survive a
    # daemon stop by design): cancel whatever is still active first.
    status, page = d.request("GET", JOBS + "?pageSize=100")
    for job in (page or {}).get("jobs", []):
        if job.get("state") not in TERMINAL:
            d.request("POST", "%s/%s:cancel" % (JOBS, job["jobId"]), {})
    for job in (page or {}).get("jobs", []):
        if job.get("state") not in TERMINAL:
            try:
                d.wait_state(job["jobId"], TERMINAL, timeout=30)
            except AssertionError:
                pass
    d.stop()


def submit(d, job_id, hp, args=(), uri=None, **training):
    body = job_body(job_id, uri or d.probe_uri, args=args, **training)
    body["trainingInput"]["hyperparameters"] = hp
    status, resp = d.request("POST", JOBS, body)
    assert status == 200, resp
    return resp


def trials_of(job):
    trials = (job.get("trainingOutput") or {}).get("trials") or []
    return sorted(trials, key=lambda t: int(t["trialId"]))


def watch(d, job_id, timeout=120, seen=None):
    """Polls the job until it ends; returns it. `seen` collects what the polls observed:
    max_running (most trials RUNNING at once in one poll) and trials_while_running."""
    seen = {} if seen is None else seen
    seen.setdefault("max_running", 0)

    def poll():
        job = d.job(job_id)
        trials = trials_of(job)
        running = sum(1 for t in trials if t.get("state") == "RUNNING")
        seen["max_running"] = max(seen["max_running"], running)
        if job.get("state") == "RUNNING" and trials:
            seen["trials_while_running"] = True
        return job if job.get("state") in TERMINAL else None

    return wait_for(poll, timeout=timeout, interval=0.1, what="job %s to end" % job_id)


def records(rec_dir):
    """The probe's records: {"<trial>-<type>-<index>": record}."""
    out = {}
    for name in os.listdir(str(rec_dir)):
        if name.endswith(".json"):
            with open(os.path.join(str(rec_dir), name)) as f:
                out[name[:-len(".json")]] = json.load(f)
    return out


def parse_time(text):
    """RFC 3339 with Z and any number of fraction digits -> seconds since the epoch."""
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?Z", text)
    assert m, "not an RFC 3339 UTC time: %r" % text
    dt = datetime.datetime(*(int(g) for g in m.groups()[:6]), tzinfo=datetime.timezone.utc)
    return dt.timestamp() + float(m.group(7) or 0)


def max_overlap(trials):
    """The most trials whose [startTime, endTime] intervals overlap at one instant."""
    events = []
    for t in trials:
        start, end = parse_time(t["startTime"]), parse_time(t["endTime"])
        assert start <= end, t
        events += [(start, 1), (end, -1)]
    best = now = 0
    for _, delta in sorted(events, key=lambda e: (e[0], e[1])):  # ends before starts on ties
        now += delta
        best = max(best, now)
    return best


def summarized_trial_ids(text):
    """TRIAL column of `describe --summarize`'s "Training Output Trials" table, in order."""
    lines = text.splitlines()
    start = [i for i, line in enumerate(lines) if "Training Output Trials" in line]
    assert start, text
    ids = []
    for line in lines[start[0] + 1:]:
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip().strip("│").split("│")]
            if cells[0].isdigit():
                ids.append(cells[0])
    return ids


def metric(trial):
    return (trial.get("finalMetric") or {}).get("objectiveValue")


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


# --- (a) the example, unchanged, with its config.yaml ----------------------------------------

def test_example_trainer_eight_trials_two_at_a_time(tdaemon):
    job_id = "hp_example"
    p = tdaemon.cli("jobs", "submit", "training", job_id,
                    "--package-path", os.path.join(EXAMPLE, "trainer"),
                    "--module-name", "trainer.task", "--staging-bucket", "gs://" + BUCKET,
                    "--job-dir", "gs://%s/%s" % (BUCKET, job_id), "--region", "us-central1",
                    "--config", os.path.join(EXAMPLE, "config.yaml"))
    assert "Job [%s] submitted successfully." % job_id in p.stderr
    seen = {}
    job = watch(tdaemon, job_id, timeout=240, seen=seen)
    assert job["state"] == "SUCCEEDED", job

    out = job["trainingOutput"]
    assert out["isHyperparameterTuningJob"] is True
    assert out["hyperparameterMetricTag"] == "accuracy"
    assert out["completedTrialCount"] == "8"  # int64 as a JSON string
    trials = trials_of(job)
    assert [t["trialId"] for t in trials] == [str(i) for i in range(1, 9)]
    assert seen.get("trials_while_running"), "trainingOutput.trials should fill in while running"
    assert seen["max_running"] <= 2, seen

    bucket_dir = os.path.join(tdaemon.data_dir, "buckets", BUCKET, job_id)
    for t in trials:
        assert t["state"] == "SUCCEEDED", t
        assert not t.get("isTrialStoppedEarly"), t
        hp = t["hyperparameters"]
        assert sorted(hp) == ["learning_rate", "max_depth", "max_features"], t
        assert all(isinstance(v, str) for v in hp.values()), t
        assert 0.01 <= float(hp["learning_rate"]) <= 1.0, t
        assert re.fullmatch(r"[1-4]", hp["max_depth"]), t
        assert hp["max_features"] in ("sqrt", "log2"), t
        # The last report (stage 40 of 40), which is also what the trainer saved.
        assert t["finalMetric"]["trainingStep"] == "40", t
        value = t["finalMetric"]["objectiveValue"]
        assert isinstance(value, (int, float)) and 0 <= value <= 1, t
        with open(os.path.join(bucket_dir, t["trialId"], "metrics.json")) as f:
            saved = json.load(f)  # written by the trainer under <job-dir>/<trial>/
        assert close(value, saved["accuracy"]), (t, saved)
        assert close(float(hp["learning_rate"]), saved["learning_rate"]), (t, saved)
        assert int(hp["max_depth"]) == saved["max_depth"]
        assert hp["max_features"] == saved["max_features"]
        assert os.path.getsize(os.path.join(bucket_dir, t["trialId"], "model.joblib")) > 0
    points = {tuple(sorted(t["hyperparameters"].items())) for t in trials}
    assert len(points) == 8, trials
    # maxParallelTrials 2: two trials ran at the same time, never three.
    assert max_overlap(trials) == 2, [(t["startTime"], t["endTime"]) for t in trials]

    summary = tdaemon.cli("jobs", "describe", job_id, "--summarize").stdout
    order = summarized_trial_ids(summary)
    assert sorted(order, key=int) == [t["trialId"] for t in trials], summary
    best = max(trials, key=metric)
    assert metric(trials[int(order[0]) - 1]) == metric(best), summary  # MAXIMIZE: best first
    values = [metric(trials[int(i) - 1]) for i in order]
    assert values == sorted(values, reverse=True), summary
    assert "TRIALS" in summary and "learning_rate=" in summary


# --- (a) what each trial receives ---------------------------------------------------------------

def test_each_trial_gets_its_flags_env_and_tf_config(tdaemon, tmp_path):
    job_id = "hp_probe"
    job_dir = "gs://%s/%s" % (BUCKET, job_id)
    user_args = ["--record", str(tmp_path), "--tag", "probe/metric", "--user-flag", "a b"]
    params = [
        {"parameterName": "lr", "type": "DOUBLE", "minValue": 0.001, "maxValue": 0.1,
         "scaleType": "UNIT_LOG_SCALE"},
        {"parameterName": "first-layer-size", "type": "INTEGER", "minValue": 8, "maxValue": 64},
        {"parameterName": "opt", "type": "CATEGORICAL", "categoricalValues": ["sgd", "adam"]},
        {"parameterName": "batch", "type": "DISCRETE", "discreteValues": [16, 32, 64]},
    ]
    submit(tdaemon, job_id, {"goal": "MINIMIZE", "hyperparameterMetricTag": "probe/metric",
                             "maxTrials": 3, "maxParallelTrials": 1, "params": params},
           args=user_args, jobDir=job_dir, scaleTier="CUSTOM", masterType="n1-standard-4",
           workerType="n1-standard-4", workerCount="1")
    job = watch(tdaemon, job_id)
    assert job["state"] == "SUCCEEDED", job
    out = job["trainingOutput"]
    assert out["isHyperparameterTuningJob"] is True
    assert out["hyperparameterMetricTag"] == "probe/metric"
    assert out["completedTrialCount"] == "3"
    trials = trials_of(job)
    assert [t["trialId"] for t in trials] == ["1", "2", "3"]
    assert max_overlap(trials) == 1  # maxParallelTrials 1: one after the other

    recs = records(tmp_path)
    assert sorted(recs) == sorted("%d-%s-0" % (i, kind) for i in (1, 2, 3)
                                  for kind in ("master", "worker")), sorted(recs)
    metric_files = set()
    for t in trials:
        hp = t["hyperparameters"]
        assert sorted(hp) == ["batch", "first-layer-size", "lr", "opt"], t
        assert all(isinstance(v, str) for v in hp.values()), t
        assert 0.001 <= float(hp["lr"]) <= 0.1
        size = hp["first-layer-size"]
        assert re.fullmatch(r"\d+", size) and 8 <= int(size) <= 64, t  # INTEGER: no ".0"
        assert hp["opt"] in ("sgd", "adam")
        assert hp["batch"] in ("16", "32", "64"), t  # DISCRETE in its shortest form
        for kind in ("master", "worker"):
            rec = recs["%s-%s-0" % (t["trialId"], kind)]
            argv = rec["argv"]
            # User args first, then --job-dir as two entries, then one --name=value per param.
            n = len(user_args)
            assert argv[:n] == user_args, argv
            assert argv[n:n + 2] == ["--job-dir", job_dir], argv
            assert sorted(argv[n + 2:]) == sorted("--%s=%s" % kv for kv in hp.items()), (argv, hp)
            env = rec["env"]
            assert env["CLOUD_ML_TRIAL_ID"] == t["trialId"], env
            assert env["CLOUD_ML_HP_METRIC_TAG"] == "probe/metric", env
            assert env["CLOUD_ML_JOB_ID"] == job_id, env
            assert env["CLOUD_ML_HP_METRIC_FILE"], env
            metric_files.add(env["CLOUD_ML_HP_METRIC_FILE"])
            task = rec["tf_config"]["task"]
            assert task["trial"] == t["trialId"] and isinstance(task["trial"], str), task
            assert task["type"] == kind and task["index"] == 0, task
            assert sorted(rec["tf_config"]["cluster"]) == ["master", "worker"], rec["tf_config"]
            assert "hypertune_error" not in rec, rec  # Trainyard's hypertune is importable
        # The master's last report (step 3) is the final metric.
        assert t["finalMetric"]["trainingStep"] == "3", t
        assert close(metric(t), probe_objective(hp)), (t, probe_objective(hp))
    assert len(metric_files) == 6, metric_files  # one metric file per replica per trial

    # Each trial's log lines carry its id (labels.trial_id), the TRIAL column of stream-logs.
    done = {e["jsonPayload"]["message"]: e for e in tdaemon.logs(job_id)
            if e["jsonPayload"]["message"].startswith("probe trial ")}
    for t in trials:
        entry = done.get("probe trial %s done" % t["trialId"])
        assert entry, sorted(done)
        assert entry["labels"]["trial_id"] == t["trialId"], entry
        assert entry["resource"]["labels"]["task_name"] == "master-replica-0", entry

    summary = tdaemon.cli("jobs", "describe", job_id, "--summarize").stdout
    order = summarized_trial_ids(summary)
    assert order[0] == min(trials, key=metric)["trialId"], summary  # MINIMIZE: lowest first


# --- (b) GRID_SEARCH --------------------------------------------------------------------------

def test_grid_search_runs_exactly_the_grid(tdaemon, tmp_path):
    grid_dir, small_dir = tmp_path / "grid", tmp_path / "small"
    grid_dir.mkdir()
    small_dir.mkdir()
    submit(tdaemon, "hp_grid", {
        "algorithm": "GRID_SEARCH", "maxTrials": 10, "maxParallelTrials": 2,
        "params": [{"parameterName": "a", "type": "INTEGER", "minValue": 1, "maxValue": 3},
                   {"parameterName": "b", "type": "CATEGORICAL", "categoricalValues": ["x", "y"]}]},
        args=["--record", str(grid_dir)])
    # maxTrials below the grid's size: that many distinct grid points, no more.
    submit(tdaemon, "hp_grid_small", {
        "algorithm": "GRID_SEARCH", "maxTrials": 2, "maxParallelTrials": 2,
        "params": [{"parameterName": "d", "type": "DISCRETE", "discreteValues": [1, 2.5, 10]}]},
        args=["--record", str(small_dir)])

    job = watch(tdaemon, "hp_grid")
    assert job["state"] == "SUCCEEDED", job
    trials = trials_of(job)
    assert [t["trialId"] for t in trials] == [str(i) for i in range(1, 7)], trials
    points = [(t["hyperparameters"]["a"], t["hyperparameters"]["b"]) for t in trials]
    assert sorted(points) == sorted((a, b) for a in "123" for b in "xy"), points
    assert all(t["state"] == "SUCCEEDED" and "finalMetric" in t for t in trials), trials
    assert job["trainingOutput"]["completedTrialCount"] == "6"
    assert sorted(records(grid_dir)) == ["%d-master-0" % i for i in range(1, 7)]

    small = watch(tdaemon, "hp_grid_small")
    assert small["state"] == "SUCCEEDED", small
    values = [t["hyperparameters"]["d"] for t in trials_of(small)]
    assert len(values) == 2 and len(set(values)) == 2 and set(values) <= {"1", "2.5", "10"}, values
    assert len(records(small_dir)) == 2


# --- (c) failing trials and maxFailedTrials -----------------------------------------------------

def test_failed_trials_beyond_max_failed_trials_fail_the_job(tdaemon, tmp_path):
    fail_dir, ok_dir = tmp_path / "fail", tmp_path / "ok"
    fail_dir.mkdir()
    ok_dir.mkdir()
    x_grid = [{"parameterName": "x", "type": "INTEGER", "minValue": 1, "maxValue": 8}]
    # Even x crash: 4 of the 8 points. maxFailedTrials 2 tolerates two; the third fails the job.
    submit(tdaemon, "hp_crash", {"algorithm": "GRID_SEARCH", "maxTrials": 8,
                                 "maxParallelTrials": 1, "maxFailedTrials": 2, "params": x_grid},
           args=["--record", str(fail_dir), "--crash-on", "2,4,6,8"])
    # One crash of four: within maxFailedTrials, the job succeeds.
    submit(tdaemon, "hp_crash_ok", {
        "algorithm": "GRID_SEARCH", "maxTrials": 4, "maxParallelTrials": 1, "maxFailedTrials": 2,
        "params": [{"parameterName": "x", "type": "INTEGER", "minValue": 1, "maxValue": 4}]},
        args=["--record", str(ok_dir), "--crash-on", "3"])

    job = watch(tdaemon, "hp_crash")
    assert job["state"] == "FAILED", job
    assert job.get("errorMessage"), job
    trials = trials_of(job)
    failed = [t for t in trials if t["state"] == "FAILED"]
    assert len(failed) == 3, trials
    assert all(int(t["hyperparameters"]["x"]) % 2 == 0 for t in failed), failed
    assert all("finalMetric" not in t for t in failed), failed
    others = [t for t in trials if t["state"] != "FAILED"]
    assert all(t["state"] == "SUCCEEDED" and int(t["hyperparameters"]["x"]) % 2 == 1
               and "finalMetric" in t for t in others), others
    # One trial at a time: the third crash was the last trial started.
    assert trials[-1]["state"] == "FAILED", trials
    assert len(records(fail_dir)) == len(trials), (sorted(records(fail_dir)), trials)
    assert job["trainingOutput"]["completedTrialCount"] == str(len(others))

    ok = watch(tdaemon, "hp_crash_ok")
    assert ok["state"] == "SUCCEEDED", ok
    states = {t["hyperparameters"]["x"]: t["state"] for t in trials_of(ok)}
    assert states == {"1": "SUCCEEDED", "2": "SUCCEEDED", "3": "FAILED", "4": "SUCCEEDED"}, states
    assert ok["trainingOutput"]["completedTrialCount"] == "3"


# --- (d) resumePreviousJobId ----------------------------------------------------------------------

def test_resumed_job_continues_numbering_without_repeating_points(tdaemon, tmp_path):
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    first_dir.mkdir()
    second_dir.mkdir()
    space = [{"parameterName": "n", "type": "INTEGER", "minValue": 1, "maxValue": 6}]  # 6 points
    submit(tdaemon, "hp_resume_a", {"maxTrials": 3, "maxParallelTrials": 1, "params": space},
           args=["--record", str(first_dir)])
    first = watch(tdaemon, "hp_resume_a")
    assert first["state"] == "SUCCEEDED", first
    first_trials = trials_of(first)
    assert [t["trialId"] for t in first_trials] == ["1", "2", "3"]
    first_points = {t["hyperparameters"]["n"] for t in first_trials}
    assert len(first_points) == 3, first_trials

    # maxTrials 6 covers both readings of maxTrials (new trials, or all of the study's): either
    # way exactly the 3 untried points remain.
    submit(tdaemon, "hp_resume_b", {"maxTrials": 6, "maxParallelTrials": 1, "params": space,
                                    "resumePreviousJobId": "hp_resume_a"},
           args=["--record", str(second_dir)])
    second = watch(tdaemon, "hp_resume_b")
    assert second["state"] == "SUCCEEDED", second
    trials = trials_of(second)
    new = [t for t in trials if int(t["trialId"]) > 3]
    assert [t["trialId"] for t in new] == ["4", "5", "6"], trials
    new_points = {t["hyperparameters"]["n"] for t in new}
    assert new_points == {str(n) for n in range(1, 7)} - first_points, (first_trials, new)
    # If the resumed job lists the earlier trials too, they are the earlier job's, unchanged.
    for t in trials:
        if int(t["trialId"]) <= 3:
            old = first_trials[int(t["trialId"]) - 1]
            assert t["hyperparameters"] == old["hyperparameters"], (t, old)
    # Only the new trials ran in the second job.
    assert sorted(records(second_dir)) == ["4-master-0", "5-master-0", "6-master-0"]


# --- (e) early stopping ---------------------------------------------------------------------------

def test_early_stopping_stops_hopeless_trials(tdaemon, tmp_path):
    steps = 15
    # The probe's curve is (1/q)(1 - 0.5^s): q=1 is the best trial, large q are hopeless.
    submit(tdaemon, "hp_stop", {
        "goal": "MAXIMIZE", "algorithm": "GRID_SEARCH", "maxTrials": 10, "maxParallelTrials": 2,
        "enableTrialEarlyStopping": True,
        "params": [{"parameterName": "q", "type": "INTEGER", "minValue": 1, "maxValue": 10}]},
        args=["--record", str(tmp_path), "--mode", "curve", "--steps", str(steps),
              "--sleep", "0.2", "--slow-above", "3", "--slow-sleep", "1"])
    # The trials the rule may stop (q > 3) report every second from their 5th report on (the rule
    # may act from the 2nd; the trials far from the best one, q = 1, are not shielded): the
    # daemon reads metric files every second, and 10 s rather than 2 s between the first report
    # it may act on and the trial's own end keep a late read on a loaded machine from finding
    # them all finished (no trial stopped) or one in its last step (stopped with every step
    # done). q 4 and 5 start before five trials have completed and run to the end (about 11 s).
    job = watch(tdaemon, "hp_stop", timeout=180)
    assert job["state"] == "SUCCEEDED", job
    trials = trials_of(job)
    assert len(trials) == 10, trials
    recs = records(tmp_path)
    stopped = [t for t in trials if t.get("isTrialStoppedEarly")]
    assert stopped, "no trial was stopped early: %s" % trials
    ends = sorted(parse_time(t["endTime"]) for t in trials)
    for t in stopped:
        assert t["state"] != "FAILED", t  # stopping is not a failure
        last = recs["%s-master-0" % t["trialId"]]["last_step"]
        assert 2 <= last < steps, (t, last)  # no decision before the 2nd report; it ran fewer
        step = int(t["finalMetric"]["trainingStep"])
        assert 2 <= step <= last, (t, last)
        q = float(t["hyperparameters"]["q"])
        assert close(metric(t), (1.0 / q) * (1 - 0.5 ** step)), t
        # At least 5 trials had finished before one was stopped.
        # (endTime has whole seconds: one that ended in the same second may have come first)
        assert sum(1 for e in ends if e <= parse_time(t["endTime"])) >= 6, t
    for t in trials:
        if not t.get("isTrialStoppedEarly"):
            assert t["state"] == "SUCCEEDED", t
            assert recs["%s-master-0" % t["trialId"]]["last_step"] == steps, t
            assert t["finalMetric"]["trainingStep"] == str(steps), t
    # Only hopeless trials are stopped: the three best start before five trials have finished.
    assert all(int(t["hyperparameters"]["q"]) > 3 for t in stopped), stopped


# --- (f) trials that report nothing ---------------------------------------------------------------

def test_trial_without_a_metric_completes_without_final_metric(tdaemon, tmp_path):
    submit(tdaemon, "hp_silent", {
        "algorithm": "GRID_SEARCH", "maxTrials": 3, "maxParallelTrials": 3,
        "hyperparameterMetricTag": "wanted",
        "params": [{"parameterName": "x", "type": "INTEGER", "minValue": 1, "maxValue": 3}]},
        args=["--record", str(tmp_path), "--tag", "wanted", "--silent-on", "1",
              "--wrongtag-on", "2"])
    job = watch(tdaemon, "hp_silent")
    assert job["state"] == "SUCCEEDED", job
    by_x = {t["hyperparameters"]["x"]: t for t in trials_of(job)}
    assert sorted(by_x) == ["1", "2", "3"]
    assert all(t["state"] == "SUCCEEDED" for t in by_x.values()), by_x
    assert "finalMetric" not in by_x["1"], by_x["1"]  # reported nothing
    assert "finalMetric" not in by_x["2"], by_x["2"]  # reported under another tag only
    assert by_x["3"]["finalMetric"]["trainingStep"] == "3", by_x["3"]
    assert job["trainingOutput"]["completedTrialCount"] == "3"
    # Each trial without the tag says what it reported instead; one trial had it: no job message.
    assert by_x["1"]["message"] == ("It reported no metric under the tag 'wanted' "
                                    "(hyperparameterMetricTag) and no other metric either."), by_x
    assert by_x["2"]["message"] == ("It reported no metric under the tag 'wanted' "
                                    "(hyperparameterMetricTag); tags reported: 'not/the/tag'."), by_x
    assert "message" not in by_x["3"], by_x["3"]
    assert "errorMessage" not in job, job
    order = summarized_trial_ids(tdaemon.cli("jobs", "describe", "hp_silent", "--summarize").stdout)
    silent_ids = sorted((by_x["1"]["trialId"], by_x["2"]["trialId"]), key=int)
    assert order == [by_x["3"]["trialId"]] + silent_ids, order  # no objective: last, by id


def test_no_trial_with_the_tag_is_said_in_the_jobs_message(tdaemon, tmp_path):
    submit(tdaemon, "hp_wrongtag", {
        "algorithm": "GRID_SEARCH", "maxTrials": 2, "maxParallelTrials": 2,
        "hyperparameterMetricTag": "accuracy",
        "params": [{"parameterName": "x", "type": "INTEGER", "minValue": 1, "maxValue": 2}]},
        args=["--record", str(tmp_path), "--wrongtag-on", "1,2"])
    job = watch(tdaemon, "hp_wrongtag")
    # Green as on AI Platform (compat §7), but it says why the optimiser had nothing to go by.
    assert job["state"] == "SUCCEEDED", job
    want = ("No trial reported the metric tag 'accuracy' (hyperparameterMetricTag); tags "
            "reported: 'not/the/tag'.")
    assert job["errorMessage"] == want, job
    assert all("finalMetric" not in t and "tags reported: 'not/the/tag'" in t["message"]
               for t in trials_of(job)), job
    summary = tdaemon.cli("jobs", "describe", "hp_wrongtag", "--summarize").stdout
    assert "Training Output Notes" in summary and want in summary, summary
    lines = [e["jsonPayload"]["message"] for e in tdaemon.logs("hp_wrongtag")]
    assert want in lines, lines


# --- (g) bad specs --------------------------------------------------------------------------------

BAD_SPECS = [
    # (what, params or whole spec, field the 400 must name)
    ("grid_double", {"algorithm": "GRID_SEARCH", "params": [
        {"parameterName": "lr", "type": "DOUBLE", "minValue": 0.1, "maxValue": 1}]},
     "trainingInput.hyperparameters.params[0].type"),
    ("log_zero_min", {"params": [
        {"parameterName": "a", "type": "INTEGER", "minValue": 1, "maxValue": 4},
        {"parameterName": "lr", "type": "DOUBLE", "minValue": 0, "maxValue": 1,
         "scaleType": "UNIT_LOG_SCALE"}]},
     "trainingInput.hyperparameters.params[1].minValue"),
    ("log_negative_min", {"params": [
        {"parameterName": "lr", "type": "DOUBLE", "minValue": -1, "maxValue": 1,
         "scaleType": "UNIT_REVERSE_LOG_SCALE"}]},
     "trainingInput.hyperparameters.params[0].minValue"),
    ("duplicate_name", {"params": [
        {"parameterName": "lr", "type": "DOUBLE", "minValue": 0.1, "maxValue": 1},
        {"parameterName": "lr", "type": "INTEGER", "minValue": 1, "maxValue": 3}]},
     "trainingInput.hyperparameters.params[1].parameterName"),
    ("no_params", {"maxTrials": 2}, "trainingInput.hyperparameters.params"),
    ("no_type", {"params": [{"parameterName": "lr", "minValue": 0.1, "maxValue": 1}]},
     "trainingInput.hyperparameters.params[0].type"),
    ("categorical_range", {"params": [
        {"parameterName": "c", "type": "CATEGORICAL", "categoricalValues": ["a", "b"],
         "minValue": 1}]},
     "trainingInput.hyperparameters.params[0].minValue"),
    ("integer_fraction", {"params": [
        {"parameterName": "n", "type": "INTEGER", "minValue": 0.5, "maxValue": 3}]},
     "trainingInput.hyperparameters.params[0].minValue"),
    ("discrete_order", {"params": [
        {"parameterName": "d", "type": "DISCRETE", "discreteValues": [1, 4, 2]}]},
     "trainingInput.hyperparameters.params[0].discreteValues"),
    ("negative_max_trials", {"maxTrials": -1, "params": [
        {"parameterName": "n", "type": "INTEGER", "minValue": 1, "maxValue": 3}]},
     "trainingInput.hyperparameters.maxTrials"),
]


@pytest.mark.parametrize("what,spec,field", BAD_SPECS, ids=[b[0] for b in BAD_SPECS])
def test_bad_spec_is_a_400_naming_the_field(tdaemon, what, spec, field):
    job_id = "hp_bad_" + what
    body = job_body(job_id, tdaemon.probe_uri)
    body["trainingInput"]["hyperparameters"] = spec
    status, resp = tdaemon.request("POST", JOBS, body)
    assert status == 400, resp
    err = resp["error"]
    assert err["status"] == "INVALID_ARGUMENT", resp
    fields = [v["field"] for d in err.get("details", []) for v in d.get("fieldViolations", [])]
    assert field in fields, resp
    assert field in err["message"], resp
    status, _ = tdaemon.request("GET", "%s/%s" % (JOBS, job_id))
    assert status == 404  # nothing was stored


def test_bad_spec_from_config_file_is_refused_by_the_cli(tdaemon, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(textwrap.dedent("""\
        trainingInput:
          hyperparameters:
            goal: MAXIMIZE
            algorithm: GRID_SEARCH
            maxTrials: 4
            params:
              - parameterName: learning_rate
                type: DOUBLE
                minValue: 0.01
                maxValue: 0.1
    """))
    p = tdaemon.cli("jobs", "submit", "training", "hp_bad_cli", "--packages", tdaemon.probe_uri,
                    "--module-name", "trainer.task", "--region", "us-central1",
                    "--config", str(config), check=False)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "INVALID_ARGUMENT" in p.stderr, p.stderr
    assert "trainingInput.hyperparameters.params[0].type" in p.stderr, p.stderr


# --- a package that requires cloudml-hypertune, as Google's samples do ---------------------------

def test_a_package_requiring_cloudml_hypertune_installs_without_an_index(tdaemon, tmp_path):
    # pip runs with --no-index here: the cloudml-hypertune Trainyard ships must satisfy it.
    uri = upload(tdaemon, build_sdist(tmp_path / "pkg", {
        "trainer": {"__init__.py": "", "task.py": PROBE}},
        install_requires=["cloudml-hypertune"]))
    rec_dir = tmp_path / "rec"
    rec_dir.mkdir()
    submit(tdaemon, "hp_requires_hypertune", {
        "maxTrials": 1, "params": [{"parameterName": "x", "type": "INTEGER", "minValue": 1,
                                    "maxValue": 2}]},
        args=["--record", str(rec_dir)], uri=uri)
    job = watch(tdaemon, "hp_requires_hypertune")
    assert job["state"] == "SUCCEEDED", job
    rec = records(rec_dir)["1-master-0"]
    assert rec.get("hypertune_file", "").endswith("/python/hypertune/__init__.py"), rec
    (trial,) = trials_of(job)
    assert trial["finalMetric"]["trainingStep"] == "3", trial
    assert close(metric(trial), probe_objective(trial["hyperparameters"])), trial
