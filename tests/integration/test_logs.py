"""Every log line of a distributed job, counted exactly: through the real gcloud
(`ai-platform jobs stream-logs` of a finished and of a running job, `logging read` in both
orders) and through `trainyard jobs logs` / `stream-logs`, including a follower that lives
through a daemon restart. Real daemon, real launchers and trainers, SQLite.

Each of the three replicas (master, two workers) prints numbered lines in bursts, so the
replicas' lines reach the store batch by batch, out of timestamp order across replicas."""

import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import BIN, PROJECT, Daemon, build_sdist, make_package, upload_package, wait_for

BUCKET = "logs-itest"
JOBS = "/v1/projects/%s/jobs" % PROJECT

# argv: LINES PER REPLICA, SECONDS TO SPREAD THEM OVER. The master prints its lines last
# (the job ends when the master does), and keeps printing until it exits.
TRAINER = r"""
import json, os, sys, time
lines, spread = int(sys.argv[1]), float(sys.argv[2])
task = json.loads(os.environ["TF_CONFIG"])["task"]
name = "%s-%d" % (task["type"], task["index"])
worker = task["type"] != "master"
# All replicas print at once, ten lines every few milliseconds, so their lines interleave
# closely in time; the workers finish first (the job ends with the master).
pause = spread * (0.6 if worker else 1.0) / (lines / 10)
for i in range(lines):
    print("%s line %d" % (name, i))
    if i % 10 == 9:
        sys.stdout.flush()
        time.sleep(pause)
sys.stdout.flush()
"""

LINE = re.compile(r"^((?:master|worker)-\d+) line (\d+)$")
REPLICAS = ["master-0", "worker-0", "worker-1"]


def require_gcloud():
    if shutil.which("gcloud") is None:
        pytest.fail("`gcloud` is not installed, and test_logs.py counts lines through the real "
                    "Google client: install google-cloud-cli")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("logs")
    data = root / "data"
    data.mkdir()
    cfg = root / "trainyardd.yaml"
    cfg.write_text("gpus: none\nnode_cpus: 16\nnode_memory: 64GiB\n")
    # gcloud with the placeholder token: authentication off (test_auth_google.py has it on).
    d = Daemon(str(data), extra_args=["--config", str(cfg)], auth=False).start()
    d.config = str(cfg)
    pkg = make_package(root / "pkg", TRAINER, name="printer")
    d.uri = upload_package(d, build_sdist(pkg), bucket=BUCKET)
    cloudsdk = str(root / "cloudsdk")
    d.gcloud_env = dict(os.environ, CLOUDSDK_CONFIG=cloudsdk, CLOUDSDK_CORE_DISABLE_PROMPTS="1",
                        TRAINYARD_ENDPOINT=d.url, TRAINYARD_PROJECT=PROJECT)
    for leak in ("CLOUDSDK_ACTIVE_CONFIG_NAME", "CLOUDSDK_CORE_PROJECT",
                 "GOOGLE_APPLICATION_CREDENTIALS"):
        d.gcloud_env.pop(leak, None)
    yield d
    d.stop()


def submit(d, job_id, lines, spread):
    body = {"jobId": job_id, "trainingInput": {
        "packageUris": [d.uri], "pythonModule": "printer.task", "region": "us-central1",
        "scaleTier": "CUSTOM", "masterType": "n1-standard-4", "workerType": "n1-standard-4",
        "workerCount": "2", "args": [str(lines), str(spread)]}}
    status, out = d.request("POST", JOBS, body)
    assert status == 200, out


def wait_done(d, job_id, timeout=240):
    job = wait_for(lambda: (lambda j: j if "endTime" in j else None)(d.job(job_id)),
                   timeout=timeout, what="%s to end" % job_id)
    assert job["state"] == "SUCCEEDED", job
    return job


def gcloud(d, *args, timeout=300):
    p = subprocess.run(["gcloud"] + list(args), env=d.gcloud_env, capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, "gcloud %s failed (%d):\n%s" % (" ".join(args), p.returncode,
                                                             p.stderr[-3000:])
    return p.stdout


def trainyard(d, *args, timeout=300, check=True):
    p = subprocess.run([os.path.join(BIN, "trainyard")] + list(args), env=d.gcloud_env,
                       capture_output=True, text=True, timeout=timeout)
    if check:
        assert p.returncode == 0, "trainyard %s failed (%d):\n%s" % (" ".join(args),
                                                                    p.returncode, p.stderr)
    return p


@pytest.fixture(scope="module")
def gcloud_ready(env):
    require_gcloud()
    p = trainyard(env, "gcloud-config", "--apply", "--activate",
                  "--tls-endpoint", "https://127.0.0.1:8471")
    assert "Activated [trainyard]." in p.stderr, p.stderr
    return env


def count_lines(messages, per_replica):
    """Asserts every replica's numbered lines appear exactly once and in order."""
    seen = {r: [] for r in REPLICAS}
    for m in messages:
        hit = LINE.match(m)
        if hit:
            seen[hit.group(1)].append(int(hit.group(2)))
    for r in REPLICAS:
        got = seen[r]
        missing = sorted(set(range(per_replica)) - set(got))
        assert len(got) == per_replica and got == list(range(per_replica)), \
            "%s: %d lines, %d missing (first %s), %d duplicated" % (
                r, len(got), len(missing), missing[:10], len(got) - len(set(got)))
    return sum(len(v) for v in seen.values())


def stream_messages(out):
    """The MESSAGE column of gcloud's / trainyard's stream-logs output (compat §11.2)."""
    return [line.split("\t", 4)[4] for line in out.splitlines() if line.count("\t") >= 4]


def api_entries(d, job_id, order="timestamp asc"):
    """Every entry of the job through the logs API's listing, page by page."""
    entries, token = [], ""
    while True:
        q = "orderBy=%s&pageSize=700" % order.replace(" ", "%20")
        if token:
            q += "&pageToken=" + token
        status, body = d.request("GET", "%s/%s/logs?%s" % (JOBS, job_id, q))
        assert status == 200, body
        entries += body["entries"]
        token = body.get("nextPageToken", "")
        if not token:
            return entries


def is_ordered(entries, descending=False):
    keys = [(e["timestamp"], int(e["insertId"])) for e in entries]
    return keys == sorted(keys, reverse=descending)


@pytest.fixture(scope="module")
def finished(env):
    """A finished 3-replica job with 1,500 lines per replica."""
    submit(env, "logs_done", 1500, 3)
    wait_done(env, "logs_done")
    return "logs_done"


def test_the_store_holds_replicas_lines_out_of_timestamp_order(env, finished):
    # The premise of the ordering tests: ingestion order is not timestamp order.
    entries, after = [], 0
    while True:
        status, body = env.request("GET", "%s/%s/logs?afterInsertId=%d" % (JOBS, finished, after))
        assert status == 200, body
        if not body["entries"]:
            break
        entries += body["entries"]
        after = int(body["nextAfterInsertId"])
    assert count_lines([e["jsonPayload"]["message"] for e in entries], 1500) == 4500
    assert not is_ordered(entries)
    listed = api_entries(env, finished)
    assert is_ordered(listed)
    assert sorted(e["insertId"] for e in listed) == sorted(e["insertId"] for e in entries)
    desc = api_entries(env, finished, "timestamp desc")
    assert desc == listed[::-1]


def test_gcloud_stream_logs_of_a_finished_job_prints_every_line_once(gcloud_ready, finished):
    out = gcloud(gcloud_ready, "ai-platform", "jobs", "stream-logs", finished,
                 "--polling-interval", "1")
    assert count_lines(stream_messages(out), 1500) == 4500


def test_gcloud_stream_logs_following_a_running_job_prints_every_line_once(gcloud_ready):
    d = gcloud_ready
    submit(d, "logs_follow", 1500, 10)
    out = gcloud(d, "ai-platform", "jobs", "stream-logs", "logs_follow", "--polling-interval", "1")
    job = d.job("logs_follow")
    assert job["state"] == "SUCCEEDED", job
    assert count_lines(stream_messages(out), 1500) == 4500


def test_gcloud_logging_read_both_orders_every_line_once(gcloud_ready, finished):
    flt = 'resource.type="ml_job" AND resource.labels.job_id="%s"' % finished
    for order in ("asc", "desc"):
        entries = json.loads(gcloud(gcloud_ready, "logging", "read", flt, "--order", order,
                                    "--format", "json"))
        assert count_lines([e.get("jsonPayload", {}).get("message", "")
                            for e in (entries if order == "asc" else entries[::-1])],
                           1500) == 4500
        keys = [(e["timestamp"], e["insertId"]) for e in entries]
        assert keys == sorted(keys, reverse=order == "desc"), order


def test_trainyard_logs_lists_tails_and_filters(env, finished):
    out = trainyard(env, "jobs", "logs", finished).stdout
    assert count_lines(stream_messages(out), 1500) == 4500
    tail = stream_messages(trainyard(env, "jobs", "logs", finished, "--tail", "5").stdout)
    listed = stream_messages(out)
    assert tail == listed[-5:], (tail, listed[-5:])
    worker = stream_messages(trainyard(env, "jobs", "logs", finished, "--task-name",
                                       "worker-replica-1").stdout)
    assert [m for m in worker if LINE.match(m)] == ["worker-1 line %d" % i for i in range(1500)]
    entries = json.loads(trainyard(env, "jobs", "logs", finished, "--format", "json",
                                   "--since", "1d").stdout)
    assert count_lines([e["jsonPayload"]["message"] for e in entries], 1500) == 4500
    assert is_ordered(entries)
    # The trainer prints to stdout only: INFO, so nothing is at least WARNING but what the
    # service or launcher said.
    warned = json.loads(trainyard(env, "jobs", "logs", finished, "--severity", "WARNING",
                                  "--format", "json").stdout)
    assert not any(LINE.match(e["jsonPayload"]["message"]) for e in warned)


def test_trainyard_stream_logs_follows_through_a_daemon_restart(env):
    submit(env, "logs_restart", 1500, 12)
    follower = subprocess.Popen(
        [os.path.join(BIN, "trainyard"), "jobs", "stream-logs", "logs_restart",
         "--polling-interval", "0.2"],
        env=env.gcloud_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Restart once the follower has printed some lines (the job is running).
        wait_for(lambda: (lambda e: e if len(e) > 50 else None)(
            api_entries(env, "logs_restart")), timeout=120, what="lines of logs_restart")
        env.stop()
        time.sleep(2)  # the replicas keep printing while no daemon runs
        env.start()
        out, err = follower.communicate(timeout=240)
    finally:
        if follower.poll() is None:
            follower.kill()
    assert follower.returncode == 0, err
    assert "Lost the connection to the daemon" in err, err
    assert "Reconnected" in err, err
    assert env.job("logs_restart")["state"] == "SUCCEEDED"
    assert count_lines(stream_messages(out), 1500) == 4500
