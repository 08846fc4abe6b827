"""Backup and restore (docs/backup.md): `trainyard admin backup` while the daemon runs and takes
writes, `trainyard admin restore` into a fresh data dir, a new daemon on it, and every job and
every log line compared with the original's."""

import os
import subprocess
import threading
import urllib.parse

from conftest import BIN, PROJECT, Daemon, build_sdist, job_body, make_package, upload_package

JOBS = "/v1/projects/%s/jobs" % PROJECT

TRAINER = r'''
import sys
import logging
n = int(sys.argv[1])
for i in range(n):
    print("line %d of %d" % (i, n))
logging.warning("a warning line")
sys.exit(int(sys.argv[2]))
'''


def admin(*args):
    return subprocess.run([os.path.join(BIN, "trainyard"), "admin"] + list(args),
                          capture_output=True, text=True, timeout=300)


def all_jobs(daemon):
    jobs, token = {}, ""
    while True:
        status, body = daemon.request(
            "GET", JOBS + "?pageSize=100&pageToken=" + urllib.parse.quote(token, safe=""))
        assert status == 200, body
        for j in body.get("jobs", []):
            jobs[j["jobId"]] = j
        token = body.get("nextPageToken", "")
        if not token:
            return jobs


def comparable(job):
    job = dict(job)
    job.pop("jobPosition", None)  # where it waits in this daemon's queue, not stored
    return job


def test_backup_while_writing_then_restore_into_a_fresh_daemon(tmp_path):
    a = Daemon(str(tmp_path / "a"))
    os.makedirs(a.data_dir)
    a.start()
    b = None
    try:
        uri = upload_package(a, build_sdist(make_package(tmp_path / "pkg", TRAINER)))
        for job_id, args in (("ok_1", ["3000", "0"]), ("fail_1", ["10", "3"]),
                             ("ok_2", ["5", "0"])):
            assert a.request("POST", JOBS, job_body(job_id, uri, args=args))[0] == 200
        for job_id in ("ok_1", "fail_1", "ok_2"):
            a.wait_state(job_id, ("SUCCEEDED", "FAILED"), timeout=180)
        assert a.job("fail_1")["state"] == "FAILED"
        assert len(a.logs("ok_1")) > 3000

        # Writes go on while the backup runs: queued jobs (admission paused) and objects.
        assert a.request("PUT", "/v1/admin/admission", {"paused": True})[0] == 200
        stop, errors, written = threading.Event(), [], []

        def writer():
            i = 0
            while not stop.is_set():
                body = job_body("during_%d" % i, uri, args=["1", "0"])
                status, out = a.request("POST", JOBS, body)
                (written if status == 200 else errors).append((i, status, out))
                i += 1

        before = set(all_jobs(a))
        t = threading.Thread(target=writer)
        t.start()
        try:
            p = admin("backup", str(tmp_path / "backup"), "--data-dir", a.data_dir)
        finally:
            stop.set()
            t.join()
        assert p.returncode == 0, p.stderr
        assert not errors, errors[:3]
        assert written, "the writer made no job during the backup"
        assert "jobs: " in p.stdout and "schemaVersion: " in p.stdout, p.stdout
        assert os.path.exists(tmp_path / "backup" / "BACKUP.json")
        assert not os.path.exists(tmp_path / "backup" / "envs"), "caches are left out"
        assert not os.path.exists(tmp_path / "backup" / "trainyardd.lock")

        # A restore never overwrites: a non-empty data dir is refused.
        p = admin("restore", str(tmp_path / "backup"), "--data-dir", a.data_dir)
        assert p.returncode != 0 and "is not empty" in p.stderr, p.stderr

        restored = str(tmp_path / "restored")
        p = admin("restore", str(tmp_path / "backup"), "--data-dir", restored)
        assert p.returncode == 0, p.stderr
        b = Daemon(restored, extra_args=["--admission-paused"])
        b.start()

        original, copy = all_jobs(a), all_jobs(b)
        assert before <= set(copy), "every job made before the backup is in it"
        assert set(copy) <= set(original), set(copy) - set(original)
        for job_id, job in copy.items():
            assert comparable(job) == comparable(original[job_id]), job_id
        for job_id in copy:
            if job_id in before:  # quiet during the backup: every line is there
                assert b.logs(job_id) == a.logs(job_id), job_id
            else:  # made during it: the lines committed before the snapshot, in order
                lines = b.logs(job_id)
                assert lines == a.logs(job_id)[:len(lines)], job_id
        assert len(b.logs("ok_1")) > 3000

        # The bucket store came along: the package object, with its generation.
        obj = uri[len("gs://"):].split("/", 1)
        path = "/storage/v1/b/%s/o/%s" % (obj[0], obj[1].replace("/", "%2F"))
        sa, meta_a = a.request("GET", path)
        sb, meta_b = b.request("GET", path)
        assert sa == 200 and sb == 200, (meta_a, meta_b)
        assert meta_b["size"] == meta_a["size"] and meta_b["generation"] == meta_a["generation"]

        # The restored daemon works: a new job on the restored package runs.
        assert b.request("PUT", "/v1/admin/admission", {"paused": False})[0] == 200
        assert b.request("POST", JOBS, job_body("after_1", uri, args=["2", "0"]))[0] == 200
        assert b.wait_state("after_1", ("SUCCEEDED", "FAILED"), timeout=180)["state"] == \
            "SUCCEEDED"
    finally:
        if b is not None:
            b.stop()
        a.stop()


def test_backup_refuses_a_directory_that_is_not_a_data_dir_or_not_empty(tmp_path):
    p = admin("backup", str(tmp_path / "b"), "--data-dir", str(tmp_path / "nothing"))
    assert p.returncode != 0 and "no Trainyard database" in p.stderr, p.stderr
    p = admin("restore", str(tmp_path), "--data-dir", str(tmp_path / "new"))
    assert p.returncode != 0 and "not a complete Trainyard backup" in p.stderr, p.stderr
