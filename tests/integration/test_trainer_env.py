"""What a trainer sees (docs/writing-a-trainer.md): a clean environment without the daemon's
secrets (issue 17), gcloud/gsutil/`/gcs` reaching Trainyard's buckets, unbuffered Python output,
and the warning for outputs written into a relative `gs:` directory (issue 16)."""

import json
import os
import time
import urllib.parse

import pytest

from conftest import PROJECT, Daemon, build_sdist, make_package, upload_package, wait_for

CANARY = "trainyard-canary-%d" % os.getpid()
BUCKET = "itest-trainer"
JOBS = "/v1/projects/%s/jobs" % PROJECT


@pytest.fixture(scope="module")
def td(tmp_path_factory):
    """A daemon started with secrets in its environment, and a bucket."""
    root = tmp_path_factory.mktemp("trainer_env")
    saved = dict(os.environ)
    os.environ["AWS_SECRET_ACCESS_KEY"] = CANARY
    os.environ["TRAINYARD_TEST_SECRET_TOKEN"] = CANARY
    os.environ["PYTHONUNBUFFERED"] = ""  # the daemon's value must not decide the trainer's
    try:
        d = Daemon(str(root / "data"))
        os.makedirs(d.data_dir)
        d.start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    status, body = d.request("POST", "/storage/v1/b?project=%s" % PROJECT, {"name": BUCKET})
    assert status == 200, body
    d.root = root
    yield d
    d.stop()


def run_job(d, job_id, code, timeout=300, **training):
    pkg = make_package(d.root / job_id, code)
    uri = upload_package(d, build_sdist(pkg), bucket=BUCKET)
    body = {"jobId": job_id, "trainingInput": dict(
        {"packageUris": [uri], "pythonModule": "trainer.task", "region": "us-central1"},
        **training)}
    status, created = d.request("POST", JOBS, body)
    assert status == 200, created
    return d.wait_state(job_id, ("SUCCEEDED", "FAILED", "CANCELLED"), timeout=timeout)


def messages(d, job_id):
    return [e["jsonPayload"]["message"] for e in d.logs(job_id)]


def object_bytes(d, name):
    import urllib.request
    url = "%s/storage/v1/b/%s/o/%s?alt=media" % (d.url, BUCKET, urllib.parse.quote(name, safe=""))
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + d.token}
                                 if d.token else {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.read()
    except OSError:
        return None


def test_trainer_environment_is_clean(td):
    job = run_job(td, "env_clean", """
        import json, os
        print("ENV " + json.dumps(dict(os.environ), sort_keys=True))
    """)
    assert job["state"] == "SUCCEEDED", job
    lines = messages(td, "env_clean")
    assert not [l for l in lines if CANARY in l], "the daemon's secret reached the logs"
    env = json.loads([l for l in lines if l.startswith("ENV ")][0][4:])
    assert "AWS_SECRET_ACCESS_KEY" not in env and "TRAINYARD_TEST_SECRET_TOKEN" not in env
    # What a trainer needs is still there.
    assert env["PATH"] and env["CLOUD_ML_JOB_ID"] == "env_clean"
    assert json.loads(env["TF_CONFIG"])["task"]["type"] in ("master", "chief")
    assert "PYTHONUNBUFFERED" not in env  # the daemon had it (empty); the flusher replaces it
    assert env["PYTHONPATH"].split(":")[0].endswith("/trainyard-site")
    assert env["STORAGE_EMULATOR_HOST"] == td.url
    assert env["CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE"] == td.url + "/storage/v1/"
    # Authentication is on: the job's own credential, which dies with the job (docs/security.md).
    assert "CLOUDSDK_AUTH_DISABLE_CREDENTIALS" not in env
    assert env["TRAINYARD_JOB_TOKEN"].startswith("ty1j.%s/env_clean." % PROJECT)
    with open(env["CLOUDSDK_AUTH_ACCESS_TOKEN_FILE"]) as f:
        assert f.read().strip() == env["TRAINYARD_JOB_TOKEN"]
    status, _ = td.request("GET", "/storage/v1/b/%s/o" % BUCKET, token=env["TRAINYARD_JOB_TOKEN"])
    assert status == 401  # the job has ended
    assert env["CLOUDSDK_CORE_PROJECT"] == PROJECT
    with open(env["BOTO_CONFIG"]) as f:
        assert "use_gcloud_storage = True" in f.read()


def test_print_without_flush_is_logged_while_the_trainer_runs(td):
    status, body = None, None
    pkg = make_package(td.root / "unbuffered", """
        import time
        print("early line")          # no flush: block-buffered Python would hold it
        time.sleep(120)
    """)
    uri = upload_package(td, build_sdist(pkg), bucket=BUCKET)
    status, body = td.request("POST", JOBS, {"jobId": "unbuffered", "trainingInput": {
        "packageUris": [uri], "pythonModule": "trainer.task", "region": "us-central1"}})
    assert status == 200, body
    try:
        wait_for(lambda: "early line" in messages(td, "unbuffered"), timeout=90,
                 what="the unflushed line in the logs")
        assert td.job("unbuffered")["state"] == "RUNNING"
    finally:
        td.request("POST", JOBS + "/unbuffered:cancel", {})


def test_gsutil_gcloud_and_gcs_paths_reach_the_buckets(td):
    # Each client gets a time limit far below the ~10 minutes a client that tries Google's
    # endpoint hangs for; the job fails (and the test with it) if one does.
    job = run_job(td, "clients", """
        import os, subprocess
        with open("model.joblib", "w") as f:
            f.write("model bytes")
        subprocess.check_call(["gsutil", "cp", "model.joblib", "gs://%(b)s/out/gsutil.joblib"],
                              timeout=240)
        subprocess.check_call(["gcloud", "storage", "cp", "model.joblib",
                               "gs://%(b)s/out/gcloud.joblib"], timeout=240)
        out = subprocess.check_output(["gsutil", "cat", "gs://%(b)s/out/gcloud.joblib"],
                                      timeout=240)
        print("CAT " + out.decode())
        os.makedirs("/gcs/%(b)s/out", exist_ok=True)
        with open("/gcs/%(b)s/out/vertex.txt", "w") as f:
            f.write("via /gcs")
        # What torch.save("gs://...") does: a local directory named gs:.
        os.makedirs("gs:/%(b)s/lost", exist_ok=True)
        with open("gs:/%(b)s/lost/model.pt", "w") as f:
            f.write("lost")
    """ % {"b": BUCKET}, timeout=900)
    lines = messages(td, "clients")
    assert job["state"] == "SUCCEEDED", (job, lines[-30:])
    assert object_bytes(td, "out/gsutil.joblib") == b"model bytes"
    assert object_bytes(td, "out/gcloud.joblib") == b"model bytes"
    assert "CAT model bytes" in lines
    assert object_bytes(td, "out/vertex.txt") == b"via /gcs"
    warning = [l for l in lines if "relative directory gs:" in l]
    assert warning and "gs:/%s/lost/model.pt" % BUCKET in warning[0], lines[-20:]
    exit_file = os.path.join(td.data_dir, "jobs", PROJECT, "clients", "master-replica-0",
                             "exit.json")
    with open(exit_file) as f:
        assert "gs:/%s/lost/model.pt" % BUCKET in " ".join(json.load(f)["warnings"])


EXAMPLE = "localhost/trainyard-example:1"


def have_example_image():
    import shutil
    import subprocess
    if shutil.which("podman") is None:
        return False
    conf = "/tmp/trainyard-itest-trainer-env.conf"
    with open(conf, "w") as f:
        f.write('[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n'
                '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n')
    env = dict(os.environ)
    if shutil.which("runc"):
        env.setdefault("CONTAINERS_CONF", conf)
    return subprocess.run(["podman", "image", "exists", EXAMPLE], env=env,
                          capture_output=True).returncode == 0


@pytest.mark.skipif(not have_example_image(),
                    reason="needs podman and %s (examples/container/build.sh)" % EXAMPLE)
def test_container_gets_clean_env_gcs_and_its_local_job_dir(td, tmp_path):
    job_dir = str(tmp_path / "ctr-job-dir")
    os.makedirs(job_dir)
    code = """
import json, os, sys
env = dict(os.environ)
print("ENV " + json.dumps(env, sort_keys=True))
print("BOTO " + str(os.path.isfile(env["BOTO_CONFIG"])))
os.makedirs("/gcs/%(b)s/ctr", exist_ok=True)
with open("/gcs/%(b)s/ctr/model.txt", "w") as f:
    f.write("container via /gcs")
job_dir = sys.argv[sys.argv.index("--job-dir") + 1]
with open(os.path.join(job_dir, "model.txt"), "w") as f:
    f.write("container job dir")
""" % {"b": BUCKET}
    status, body = td.request("POST", JOBS, {"jobId": "ctr_env", "trainingInput": {
        "region": "us-central1", "jobDir": job_dir,
        "masterConfig": {"imageUri": EXAMPLE, "containerCommand": ["python3", "-c", code]}}})
    assert status == 200, body
    job = td.wait_state("ctr_env", ("SUCCEEDED", "FAILED", "CANCELLED"), timeout=300)
    lines = messages(td, "ctr_env")
    assert job["state"] == "SUCCEEDED", (job, lines[-20:])
    assert not [l for l in lines if CANARY in l]
    env = json.loads([l for l in lines if l.startswith("ENV ")][0][4:])
    assert "AWS_SECRET_ACCESS_KEY" not in env
    assert env["PYTHONUNBUFFERED"] == "1"
    assert env["CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE"] == td.url + "/storage/v1/"
    assert "BOTO True" in lines  # the per-replica gsutil config is mounted into the container
    assert object_bytes(td, "ctr/model.txt") == b"container via /gcs"
    with open(os.path.join(job_dir, "model.txt")) as f:
        assert f.read() == "container job dir"


def test_anonymous_google_auth_sessions_carry_the_job_credential(td):
    # google-cloud-storage under STORAGE_EMULATOR_HOST sends its requests through google-auth's
    # AuthorizedSession with AnonymousCredentials (its default there, and what emulator code
    # passes explicitly). Debian packages google-auth but not google-cloud-storage, so the
    # trainer makes the library's requests itself: list, upload (as the client's simple upload
    # does) and download, with authentication on.
    job = run_job(td, "gauth", """
        import json, os
        import google.auth.credentials
        from google.auth.transport.requests import AuthorizedSession
        host = os.environ["STORAGE_EMULATOR_HOST"]
        s = AuthorizedSession(google.auth.credentials.AnonymousCredentials())
        up = s.post(host + "/upload/storage/v1/b/%(b)s/o?uploadType=media&name=gauth/model.txt",
                    data=b"written by google-auth", headers={"Content-Type": "text/plain"})
        print("UPLOAD", up.status_code)
        listed = s.get(host + "/storage/v1/b/%(b)s/o?prefix=gauth/")
        print("LIST", listed.status_code, [o["name"] for o in listed.json().get("items", [])])
        got = s.get(host + "/storage/v1/b/%(b)s/o/gauth%%2Fmodel.txt?alt=media")
        print("GET", got.status_code, got.content.decode())
        # Requests elsewhere never get the credential.
        creds = google.auth.credentials.AnonymousCredentials()
        headers = {}
        creds.before_request(None, "GET", "http://elsewhere.example/x", headers)
        print("ELSEWHERE", json.dumps(headers))
    """ % {"b": BUCKET})
    lines = messages(td, "gauth")
    assert job["state"] == "SUCCEEDED", (job, lines[-20:])
    assert "UPLOAD 200" in lines
    assert "LIST 200 ['gauth/model.txt']" in lines
    assert "GET 200 written by google-auth" in lines
    assert "ELSEWHERE {}" in lines
    assert object_bytes(td, "gauth/model.txt") == b"written by google-auth"
