"""Operating Trainyard for months (issue 15 items 2, 3 and 7): a trainer that fills its disk
fails once, saying so; low free space on the data dir pauses admission with a reason, /readyz
and /metrics say it, and it resumes by itself; the store survives a full disk; retention and
`trainyard admin gc` / `purge` remove what the policy says; operators' metrics; JSON logs.

The disk tests mount small tmpfs filesystems (root only; skipped otherwise)."""

import json
import os
import shutil
import sqlite3
import subprocess
import time
import urllib.request

import pytest

from conftest import (PROJECT, Daemon, build_sdist, job_body, make_package, upload_package,
                      wait_for)

BASE = "/v1/projects/%s/jobs" % PROJECT


@pytest.fixture
def mount_tmpfs():
    """mount_tmpfs(path, size): a tmpfs at path, unmounted after the test whatever happens."""
    mounted = []

    def mount(path, size):
        _mount_tmpfs(path, size)
        mounted.append(path)

    yield mount
    for path in reversed(mounted):
        umount(path)


def _mount_tmpfs(path, size):
    os.makedirs(path, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0700" % size, "tmpfs", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs: %s" % r.stderr.strip())


def umount(path):
    subprocess.run(["umount", "-l", path], capture_output=True)


def write_config(tmp_path, text):
    path = tmp_path / "trainyardd.yaml"
    path.write_text(text)
    return str(path)


def fill(path, leave_bytes):
    """Writes `path` until the filesystem has about `leave_bytes` free (0: until ENOSPC)."""
    st = os.statvfs(os.path.dirname(path))
    want = st.f_bavail * st.f_frsize - leave_bytes
    chunk = b"\0" * (1 << 20)
    written = 0
    with open(path, "wb") as f:
        try:
            while leave_bytes == 0 or written + len(chunk) <= want:
                f.write(chunk)
                f.flush()
                written += len(chunk)
            if leave_bytes == 0:
                raise AssertionError("never full")
        except OSError:
            pass
    return written


def metrics(daemon):
    status, text = daemon.request("GET", "/metrics")  # as the administrator (trainyard.admin)
    assert status == 200, text
    return text


def readyz(daemon):
    try:
        with urllib.request.urlopen(daemon.url + "/readyz", timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_a_trainer_that_fills_its_disk_fails_once_saying_so(tmp_path, mount_tmpfs):
    data = str(tmp_path / "data")
    jobs = os.path.join(data, "jobs")
    mount_tmpfs(jobs, "16m")
    d = Daemon(data).start()
    try:
        pkg = make_package(tmp_path, """
            import os
            print("filling the disk", flush=True)
            with open("ballast", "wb") as f:
                for i in range(1000):
                    f.write(b"x" * (1 << 20))
                    f.flush()
                    print("wrote %d MiB" % (i + 1), flush=True)
        """)
        uri = upload_package(d, build_sdist(pkg))
        assert d.request("POST", BASE, job_body("fills", uri))[0] == 200
        job = d.wait_state("fills", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=180)
        assert job["state"] == "FAILED", job
        msg = job["errorMessage"]
        assert msg.startswith("The replica master 0 ran out of disk space and exited with a "
                              "non-zero status of 1. Termination reason: No space left on "
                              "device."), msg
        assert "No space left on device" in msg.split("Termination reason", 1)[1], msg
        # Not restarted into the same full disk: one launch, no restart line.
        service = [e["jsonPayload"]["message"] for e in d.logs("fills")]
        assert not [m for m in service if "restarting it" in m], service
        work = os.path.join(jobs, PROJECT, "fills", "master-replica-0")
        with open(os.path.join(work, "exit.json")) as f:
            report = json.load(f)
        assert report["diskFull"] is True, report
        # The daemon and its store (on another filesystem) carry on.
        assert d.get_status("/healthz") == 200
        assert d.request("POST", BASE, job_body("after", uri))[0] == 200
    finally:
        d.stop()
        umount(jobs)


def test_low_disk_pauses_admission_with_a_reason_and_a_full_disk_corrupts_nothing(tmp_path,
                                                                                   mount_tmpfs):
    data = str(tmp_path / "data")
    mount_tmpfs(data, "96m")
    config = write_config(tmp_path, 'disk_min_free: "24MiB"\ndisk_check_interval: "1s"\n')
    d = Daemon(data, extra_args=["--config", config]).start()
    filler = os.path.join(data, "filler")
    try:
        assert readyz(d)[0] == 200
        pkg = make_package(tmp_path, "print('ran after the disk was freed')\n")
        uri = upload_package(d, build_sdist(pkg))
        fill(filler, 8 << 20)  # 8 MiB left, under the 24 MiB threshold
        status, text = wait_for(lambda: (lambda r: r if r[0] == 503 else None)(readyz(d)),
                                timeout=30, what="/readyz to say the disk is low")
        assert "degraded: Admission is paused: the data dir %s has" % data in text, text
        assert "less than disk_min_free (24.0 MiB)" in text, text
        m = metrics(d)
        assert 'trainyard_admission_held{reason="disk_space"} 1' in m
        free = [l for l in m.splitlines() if l.startswith('trainyard_disk_free_bytes{dir="data dir"')]
        assert free and int(free[0].split()[-1]) < (24 << 20), free

        # Accepted, kept QUEUED, and it says why.
        assert d.request("POST", BASE, job_body("waits", uri))[0] == 200
        time.sleep(2)  # admission passes run every 200 ms: it would have started by now
        job = d.job("waits")
        assert job["state"] == "QUEUED", job
        assert job["waitReason"].startswith("Admission is paused: the data dir"), job
        assert not job.get("errorMessage"), job  # a wait is not an error
        described = d.cli("jobs", "describe", "waits").stdout
        assert "Admission is paused" in described, described

        # A completely full disk: requests that must write fail cleanly, the daemon stays up.
        # A small create can still fit in space SQLite's WAL already holds (frames rewritten
        # from the start after a checkpoint need no new blocks), so whether one fails depended on
        # when the last checkpoint ran. Creates of 400 KB each need the WAL to grow, and the disk
        # is filled again before each: one is refused within a few; any that fit are
        # acknowledged, so they must be stored (checked again after a restart below).
        acknowledged, refused, fillers = [], None, []
        for i in range(20):
            fillers.append(os.path.join(data, "filler%d" % (i + 2)))
            fill(fillers[-1], 0)
            status, body = d.request("POST", BASE, job_body(
                "no_room_%d" % i, uri, args=["x" * 100000] * 4))
            if status != 200:
                refused = (status, body)
                break
            acknowledged.append("no_room_%d" % i)
        assert refused is not None, "every create on a full disk was acknowledged"
        assert refused[0] >= 400 and refused[1]["error"]["status"], refused
        for job_id in acknowledged:
            assert d.request("GET", BASE + "/" + job_id)[0] == 200, job_id
        assert d.get_status("/healthz") == 200
        assert d.job("waits")["state"] == "QUEUED"

        # Space comes back: admission resumes by itself and the queued job runs.
        for f in fillers:
            os.remove(f)
        os.remove(filler)
        wait_for(lambda: readyz(d)[0] == 200, timeout=30, what="/readyz to recover")
        job = d.wait_state("waits", ["SUCCEEDED", "FAILED"], timeout=120)
        assert job["state"] == "SUCCEEDED", job
        assert "errorMessage" not in job or not job["errorMessage"], job
        assert 'trainyard_admission_held{reason="disk_space"} 0' in metrics(d)
    finally:
        d.stop()
    try:
        # Nothing stored was corrupted, and a new daemon reads it all back.
        db = sqlite3.connect(os.path.join(data, "trainyard.db"))
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        db.close()
        d2 = Daemon(data, extra_args=["--config", config]).start()
        try:
            assert d2.job("waits")["state"] == "SUCCEEDED"
            for job_id in acknowledged:  # acknowledged on a full disk, so stored
                assert d2.job(job_id)["jobId"] == job_id
            lines = [e["jsonPayload"]["message"] for e in d2.logs("waits")]
            assert "ran after the disk was freed" in lines, lines
        finally:
            d2.stop()
    finally:
        umount(data)


def test_retention_gc_and_purge_by_policy(tmp_path):
    data = str(tmp_path / "data")
    os.makedirs(data)
    config = write_config(tmp_path, """
gc_interval: "0"
retention:
  work_dirs_age: "5s"
  envs_age: "2s"
  job_logs_age: "0"
""")
    d = Daemon(data, extra_args=["--config", config]).start()
    try:
        # The trainer holds its environment until the test releases it (a file), so the first
        # gc runs while the job runs however slow or fast this machine is.
        pkg = make_package(tmp_path, """
            import os, sys, time
            release = sys.argv[1]
            for i in range(15):
                print("step %d" % i, flush=True)
            deadline = time.time() + 300
            while not os.path.exists(release) and time.time() < deadline:
                time.sleep(0.05)
            for i in range(15, 30):
                print("step %d" % i, flush=True)
        """)
        uri = upload_package(d, build_sdist(pkg))
        release = str(tmp_path / "release")
        assert d.request("POST", BASE, job_body("kept_record", uri, args=[release]))[0] == 200
        d.wait_state("kept_record", "RUNNING", timeout=120)
        # While it runs: its cgroup figures (where replicas get cgroups), and its environment
        # is in use (not collected).
        with open(os.path.join(data, "daemon.log")) as f:
            cgroups = "replica limits: cgroup v1" in f.read()
        if cgroups:
            prefix = 'trainyard_job_memory_bytes{project="%s",job_id="kept_record"} ' % PROJECT
            m = wait_for(lambda: (lambda t: t if prefix in t else None)(metrics(d)),
                         timeout=30, what="per-job metrics")
            mem = [l for l in m.splitlines() if l.startswith(prefix)]
            assert int(mem[0].split()[-1]) > 0, mem
            assert ('trainyard_job_cpu_seconds_total{project="%s",job_id="kept_record"} '
                    % PROJECT) in m
        envs = os.path.join(data, "envs")
        env_dirs = [e for e in os.listdir(envs) if len(e) == 64]
        assert len(env_dirs) == 1
        time.sleep(2.5)  # past envs_age (2s) since the environment was last used
        p = d.cli("admin", "gc")
        assert "environment" not in p.stdout, p.stdout  # in use, though unused for "2s"
        assert d.job("kept_record")["state"] == "RUNNING"
        open(release, "w").close()
        job = d.wait_state("kept_record", ["SUCCEEDED", "FAILED"], timeout=120)
        assert job["state"] == "SUCCEEDED", job

        work = os.path.join(data, "jobs", PROJECT, "kept_record")
        assert os.path.exists(os.path.join(work, "master-replica-0", "log"))
        p = d.cli("admin", "gc", "--dry-run")
        assert "Would remove raw replica log %s/master-replica-0/log" % work in p.stdout, p.stdout
        assert os.path.exists(os.path.join(work, "master-replica-0", "log"))
        time.sleep(5.5)
        p = d.cli("admin", "gc")
        assert "Removed work dir %s" % work in p.stdout, p.stdout
        assert "(retention.work_dirs_age)" in p.stdout
        assert "Removed environment %s/%s" % (envs, env_dirs[0]) in p.stdout, p.stdout
        assert not os.path.exists(work)
        assert not os.path.exists(os.path.join(envs, env_dirs[0]))
        # The record and its log lines stay (job_logs_age 0).
        assert d.job("kept_record")["state"] == "SUCCEEDED"
        steps = [e["jsonPayload"]["message"] for e in d.logs("kept_record")
                 if e["jsonPayload"]["message"].startswith("step")]
        assert len(steps) == 30
        with open(os.path.join(data, "daemon.log")) as f:
            assert "removed work dir %s" % work in f.read()
        m = metrics(d)
        for name in ("trainyard_gc_runs_total", "trainyard_env_cache_bytes",
                     "trainyard_queue_wait_seconds_count", "trainyard_log_ingestion_lag_seconds_count",
                     'trainyard_disk_free_bytes{dir="data dir"'):
            assert name in m, name
        assert "trainyard_queue_wait_seconds_count 1" in m

        # An explicit purge deletes the record.
        report = json.loads(d.cli("admin", "purge", "--finished-before",
                                  "2999-01-01T00:00:00Z", "--dry-run", "--format", "json").stdout)
        assert [r["jobId"] for r in report["removed"]] == ["kept_record"]
        assert d.job("kept_record")["state"] == "SUCCEEDED"
        p = d.cli("admin", "purge", "--finished-before", "2999-01-01T00:00:00Z")
        assert "Purged job record job %s/kept_record" % PROJECT in p.stdout, p.stdout
        assert d.request("GET", BASE + "/kept_record")[0] == 404
        bad = d.cli("admin", "purge", "--finished-before", "yesterday", check=False)
        assert bad.returncode != 0 and "--finished-before" in bad.stderr
    finally:
        d.stop()


def test_a_rejected_submit_leaves_no_staged_package(tmp_path, daemon):
    pkg = make_package(tmp_path / "one", "print('first')\n")
    daemon.cli("buckets", "create", "gs://ops-stage")
    args = ["jobs", "submit", "training", "dup_job", "--package-path", pkg, "--module-name",
            "trainer.task", "--staging-bucket", "gs://ops-stage", "--region", "us-central1"]
    daemon.cli(*args)
    status, listing = daemon.request("GET", "/storage/v1/b/ops-stage/o")
    before = sorted(o["name"] for o in listing.get("items", []))
    assert len(before) == 1
    # The same id again, with other code: 409, and its new package is gone again.
    pkg2 = make_package(tmp_path / "two", "print('second')\n")
    p = daemon.cli(*(args[:5] + [pkg2] + args[6:]), check=False)
    assert p.returncode != 0 and "already exists" in p.stderr, p.stderr
    status, listing = daemon.request("GET", "/storage/v1/b/ops-stage/o")
    assert sorted(o["name"] for o in listing.get("items", [])) == before


def test_json_log_lines_on_request(tmp_path):
    data = str(tmp_path / "data")
    os.makedirs(data)
    env = dict(os.environ, TRAINYARD_LOG_FORMAT="json")
    d = Daemon(data, env=env).start()
    d.stop()
    with open(os.path.join(data, "daemon.log")) as f:
        lines = [l for l in f.read().splitlines() if l.strip()]
    assert lines
    for line in lines:
        record = json.loads(line)
        assert set(record) == {"time", "level", "logger", "message"}, record
    assert any(r["logger"] == "daemon" and "listening on" in r["message"]
               for r in map(json.loads, lines))
