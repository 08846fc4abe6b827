"""End-to-end checks of the core issue: real daemon, real CLI, real trainer processes."""

import concurrent.futures
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import (BIN, PROJECT, REPO, Daemon, build_sdist, job_body, make_package,
                      upload_package, wait_for)

SAMPLE = os.path.join(REPO, "examples", "sklearn", "trainer")


def processes_with(marker):
    """Pids whose command line contains marker (the trainer leaves it in its argv)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def test_sample_trainer_succeeds_and_writes_model(daemon, tmp_path):
    daemon.cli("buckets", "create", "gs://itest-sample")
    p = daemon.cli("jobs", "submit", "training", "sample_1", "--package-path", SAMPLE,
                   "--module-name", "trainer.task", "--staging-bucket", "gs://itest-sample",
                   "--job-dir", "gs://itest-sample/out", "--region", "us-central1",
                   "--", "--epochs", "2")
    assert "Job [sample_1] submitted successfully." in p.stderr  # status goes to stderr, as gcloud
    job = daemon.wait_state("sample_1", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=180)
    assert job["state"] == "SUCCEEDED", job
    for key in ("createTime", "startTime", "endTime"):
        assert job[key].endswith("Z")
    assert "scaleTier" not in job["trainingInput"]  # BASIC is omitted
    assert job["trainingInput"]["args"] == ["--epochs", "2"]
    staged = job["trainingInput"]["packageUris"][0]
    assert staged.startswith("gs://itest-sample/sample_1/") and staged.endswith(".tar.gz")
    model = os.path.join(daemon.data_dir, "buckets", "itest-sample", "out", "model.joblib")
    assert os.path.getsize(model) > 0
    messages = [e["jsonPayload"]["message"] for e in daemon.logs("sample_1")]
    assert any("epoch 2/2 accuracy" in m for m in messages), messages
    assert "Job completed successfully." in messages
    tasks = {e["resource"]["labels"]["task_name"] for e in daemon.logs("sample_1")}
    assert {"master-replica-0", "service"} <= tasks
    # TF_CONFIG reached the trainer (single-node form, master for an unset runtime).
    assert any("task master 0" in m for m in messages), messages
    described = json.loads(daemon.cli("jobs", "describe", "sample_1", "--format", "json").stdout)
    assert described["state"] == "SUCCEEDED"


def test_raising_trainer_fails_with_ai_platform_message(daemon, tmp_path):
    pkg = make_package(tmp_path, """
        def helper():
            raise ValueError("the data is bad")
        print("starting")
        helper()
    """)
    uri = upload_package(daemon, build_sdist(pkg))
    status, body = daemon.request("POST", "/v1/projects/%s/jobs" % PROJECT, job_body("boom_1", uri))
    assert status == 200, body
    job = daemon.wait_state("boom_1", ["SUCCEEDED", "FAILED", "CANCELLED"])
    assert job["state"] == "FAILED"
    msg = job["errorMessage"]
    assert msg.startswith("The replica master 0 exited with a non-zero status of 1. "
                          "Termination reason: Error."), msg
    assert "Traceback (most recent call last)" in msg and "ValueError: the data is bad" in msg
    entries = daemon.logs("boom_1")
    err = [e for e in entries if "ValueError: the data is bad" in e["jsonPayload"]["message"]
           and e["resource"]["labels"]["task_name"] == "master-replica-0"]
    assert err and err[0]["severity"] == "ERROR"


def test_cancel_stops_every_process(daemon, tmp_path):
    marker = "tymarker%d" % time.time_ns()
    pkg = make_package(tmp_path, """
        import signal, subprocess, sys, time
        child = subprocess.Popen(["/bin/sleep", "1000", "%s"])
        signal.signal(signal.SIGTERM, signal.SIG_IGN)   # a stubborn trainer: needs SIGKILL
        print("started", flush=True)
        while True:
            time.sleep(0.1)
    """ % marker)
    uri = upload_package(daemon, build_sdist(pkg))
    status, body = daemon.request("POST", "/v1/projects/%s/jobs" % PROJECT,
                                  job_body("long_1", uri, args=[marker]))
    assert status == 200, body
    daemon.wait_state("long_1", "RUNNING")
    wait_for(lambda: any("started" == e["jsonPayload"]["message"] for e in daemon.logs("long_1")),
             what="first output line")
    assert processes_with(marker), "the trainer's child should be running"
    daemon.cli("jobs", "cancel", "long_1")
    job = daemon.wait_state("long_1", ["CANCELLED", "FAILED", "SUCCEEDED"], timeout=60)
    assert job["state"] == "CANCELLED", job
    assert job["endTime"]
    wait_for(lambda: not processes_with(marker), timeout=10, what="no process left")
    # Cancelling a finished job is a successful no-op.
    status, body = daemon.request("POST", "/v1/projects/%s/jobs/long_1:cancel" % PROJECT, {})
    assert status == 200 and body == {}


def test_bad_requests_get_google_errors(daemon, tmp_path):
    base = "/v1/projects/%s/jobs" % PROJECT
    pkg = make_package(tmp_path, "print('hi')\n")
    uri = upload_package(daemon, build_sdist(pkg))
    daemon.request("PUT", "/v1/admin/admission", {"paused": True})
    status, _ = daemon.request("POST", base, job_body("dup_1", uri))
    assert status == 200
    status, body = daemon.request("POST", base, job_body("dup_1", uri))
    assert status == 409 and body["error"]["status"] == "ALREADY_EXISTS", body
    status, body = daemon.request("POST", base, job_body("1-bad-id", uri))
    assert status == 400 and body["error"]["status"] == "INVALID_ARGUMENT", body
    assert "jobId" in json.dumps(body)
    bad = job_body("unknown_1", uri)
    bad["trainingInput"]["job_spec"] = {}
    status, body = daemon.request("POST", base, bad)
    assert status == 400, body
    assert 'Unknown name "job_spec"' in body["error"]["message"], body
    status, body = daemon.request("GET", base + "/nope_1")
    assert status == 404 and body["error"]["status"] == "NOT_FOUND"
    status, body = daemon.request("POST", base, raw=b"{not json")
    assert status == 400, body
    # Multi-replica jobs are accepted (test_distributed.py), but workers need a machine type.
    many = job_body("multi_1", uri, scaleTier="CUSTOM", masterType="n1-standard-4",
                    workerCount="2")
    status, body = daemon.request("POST", base, many)
    assert status == 400 and body["error"]["status"] == "INVALID_ARGUMENT", body
    assert "trainingInput.workerType" in json.dumps(body), body
    status, body = daemon.request("POST", base, job_body("nojobdir_1", uri,
                                                          jobDir="gs://no-such-bucket/out"))
    assert status == 400 and "no-such-bucket" in body["error"]["message"], body
    # Hostile paths: bytes that are not UTF-8, a project that would escape the data dir.
    status, body = daemon.request("GET", "/%FF")
    assert status == 404 and body["error"]["status"] == "NOT_FOUND", body
    status, body = daemon.request("GET", base + "/%FF")
    assert status == 404, body
    status, body = daemon.request("GET", base + "?pageSize=%FF")
    assert status == 400, body
    status, body = daemon.request("POST", "/v1/projects/%2E%2E/jobs", job_body("escape_1", uri))
    assert status == 400 and "project" in body["error"]["message"], body
    status, body = daemon.request("POST", base, raw=b'{"jobId": "x\xff"}')
    assert status == 400, body
    # The daemon is still healthy and nothing stored was lost.
    assert daemon.get_status("/healthz") == 200
    assert daemon.job("dup_1")["state"] == "QUEUED"


def test_list_filter_paging_and_label_patch(daemon, tmp_path):
    pkg = make_package(tmp_path, "print('hi')\n")
    uri = upload_package(daemon, build_sdist(pkg))
    daemon.request("PUT", "/v1/admin/admission", {"paused": True})
    base = "/v1/projects/%s/jobs" % PROJECT
    for i in range(25):
        body = job_body("census_%02d" % i if i < 15 else "other_%02d" % i, uri)
        body["labels"] = {"team": "a" if i % 2 else "b"}
        assert daemon.request("POST", base, body)[0] == 200
    status, page = daemon.request("GET", base)
    assert status == 200 and len(page["jobs"]) == 20 and page["nextPageToken"]
    assert page["jobs"][0]["jobId"] == "other_24"  # newest first
    assert page["jobs"][0]["jobPosition"] == "25"
    status, page2 = daemon.request("GET", base + "?pageToken=" + urlq(page["nextPageToken"]))
    assert len(page2["jobs"]) == 5 and "nextPageToken" not in page2
    status, f = daemon.request("GET", base + "?filter=" + urlq("jobId:census* AND labels.team=a"))
    assert status == 200 and len(f["jobs"]) == 7, f
    status, empty = daemon.request("GET", base + "?filter=" + urlq("state:FAILED"))
    assert status == 200 and empty == {}
    status, err = daemon.request("GET", base + "?filter=" + urlq("nosuchfield:1"))
    assert status == 400
    job = daemon.job("census_00")
    status, patched = daemon.request(
        "PATCH", base + "/census_00?updateMask=labels,etag",
        {"labels": {"owner": "alice"}, "etag": job["etag"]})
    assert status == 200 and patched["labels"] == {"owner": "alice"}
    assert patched["etag"] != job["etag"]
    status, body = daemon.request("PATCH", base + "/census_00?updateMask=labels,etag",
                                  {"labels": {"owner": "bob"}, "etag": job["etag"]})
    assert status == 409, body
    status, body = daemon.request("PATCH", base + "/census_00?updateMask=trainingInput",
                                  {"trainingInput": {}})
    assert status == 400
    p = daemon.cli("jobs", "update", "census_01", "--update-labels", "stage=dev")
    assert daemon.job("census_01")["labels"] == {"team": "a", "stage": "dev"}
    table = daemon.cli("jobs", "list", "--filter", "jobId:census_0*").stdout
    assert table.splitlines()[0].split() == ["JOB_ID", "STATUS", "CREATED"]
    assert len(table.splitlines()) == 11


def urlq(s):
    import urllib.parse
    return urllib.parse.quote(s, safe="")


def test_stream_logs_follows_until_the_end(daemon, tmp_path):
    pkg = make_package(tmp_path, """
        import sys, time
        for i in range(1, 6):
            print("line %d" % i, flush=True)
            time.sleep(0.2)
        print("to stderr", file=sys.stderr)
    """)
    uri = upload_package(daemon, build_sdist(pkg))
    assert daemon.request("POST", "/v1/projects/%s/jobs" % PROJECT,
                          job_body("stream_1", uri))[0] == 200
    p = daemon.cli("jobs", "stream-logs", "stream_1", "--polling-interval", "1", timeout=120)
    out = p.stdout + p.stderr
    lines = [l for l in out.splitlines() if "\t" in l]
    line5 = [l for l in lines if l.endswith("line 5")]
    assert line5, out
    cols = line5[0].split("\t")
    assert cols[0] == "INFO" and cols[2] == "master-replica-0" and cols[3] == ""
    assert any(l.startswith("ERROR\t") and l.endswith("to stderr") for l in lines)
    assert daemon.job("stream_1")["state"] == "SUCCEEDED"


def test_missing_dependency_fails_with_pips_message(daemon, tmp_path):
    pkg = make_package(tmp_path, "print('never')\n", install_requires=["no-such-dist-xyz"])
    uri = upload_package(daemon, build_sdist(pkg))
    assert daemon.request("POST", "/v1/projects/%s/jobs" % PROJECT, job_body("dep_1", uri))[0] == 200
    job = daemon.wait_state("dep_1", ["SUCCEEDED", "FAILED", "CANCELLED"])
    assert job["state"] == "FAILED"
    assert "no-such-dist-xyz" in job["errorMessage"], job
    assert any("no-such-dist-xyz" in e["jsonPayload"]["message"] for e in daemon.logs("dep_1"))


def test_daemon_killed_mid_job_keeps_every_acknowledged_job(daemon, tmp_path):
    pkg = make_package(tmp_path, """
        import time
        for i in range(30):
            print("tick %d" % i, flush=True)
            time.sleep(0.1)
    """)
    uri = upload_package(daemon, build_sdist(pkg))
    base = "/v1/projects/%s/jobs" % PROJECT
    assert daemon.request("POST", base, job_body("survivor_1", uri))[0] == 200
    daemon.wait_state("survivor_1", "RUNNING")
    daemon.request("PUT", "/v1/admin/admission", {"paused": True})

    acked = []

    def create(i):
        status, _ = daemon.request("POST", base, job_body("acked_%03d" % i, uri))
        if status == 200:
            acked.append(i)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(60)))
    daemon.stop(signal.SIGKILL)
    daemon.extra_args = ["--admission-paused"]  # keep the acknowledged jobs queued
    daemon.start()
    for i in acked:
        assert daemon.job("acked_%03d" % i)["state"] == "QUEUED"
    # The job that was running was re-attached and finishes with all of its lines.
    job = daemon.wait_state("survivor_1", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=60)
    assert job["state"] == "SUCCEEDED", job
    ticks = [e for e in daemon.logs("survivor_1") if e["jsonPayload"]["message"].startswith("tick")]
    assert [e["jsonPayload"]["message"] for e in ticks] == ["tick %d" % i for i in range(30)]


def test_healthz_readyz_metrics(daemon):
    assert daemon.get_status("/healthz") == 200
    assert daemon.get_status("/readyz") == 200
    status, text = daemon.request("GET", "/metrics")  # trainyard.admin: the admin token
    assert status == 200
    assert daemon.request("GET", "/metrics", token="")[0] == 401
    assert 'trainyard_jobs{state="QUEUED"}' in text
    assert "# TYPE trainyard_api_request_duration_seconds histogram" in text
    assert "trainyard_running_replicas" in text


def test_local_train_runs_without_daemon(tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ, TRAINYARD_ENDPOINT="http://127.0.0.1:9")  # nothing listens there
    p = subprocess.run([os.path.join(BIN, "trainyard"), "local", "train", "--module-name",
                        "trainer.task", "--package-path", SAMPLE, "--job-dir", str(out), "--",
                        "--epochs", "1"], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert (out / "model.joblib").exists()


def test_local_train_reports_trainer_exit_status(tmp_path):
    pkg = make_package(tmp_path, "import sys\nsys.exit(3)\n")
    p = subprocess.run([os.path.join(BIN, "trainyard"), "local", "train", "--module-name",
                        "trainer.task", "--package-path", pkg], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 3
