"""Image pulls from a real registry on loopback (issue 16 item 2; docs/containers.md, "Registries").

Debian's docker-registry (scripts/install-deps.sh) serves a temporary storage directory on free
ports, twice: once open and once behind htpasswd basic auth (bcrypt, `htpasswd -B`). An image of
this test's own (the example image plus an ENV with a token, so the container proves which image
it came from) is pushed with podman and removed from local storage; jobs then name it as
gcr.io/... or *-docker.pkg.dev/..., which registry_mirrors maps to the registries. Needs podman,
the example image (examples/container/build.sh), docker-registry and htpasswd; skipped without.
Only images named after this process are removed from podman's storage (other tests share it)."""

import base64
import json
import os
import shutil
import socket
import subprocess
import textwrap
import urllib.error
import urllib.request
import uuid

import pytest

from conftest import PROJECT, Daemon, wait_for

EXAMPLE = "localhost/trainyard-example:1"
REGISTRY_BIN = "/usr/bin/docker-registry"
JOBS = "/v1/projects/%s/jobs" % PROJECT
TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")
TOKEN = uuid.uuid4().hex
# Names of this run only: gcr.io/<project>/trainer:1 maps to <registry>/<project>/trainer:1.
GCP_PROJECT = "itest-reg-%d" % os.getpid()
LOCAL = "localhost/trainyard-itest-registry-%d:1" % os.getpid()
USER, PASSWORD = "trainer-bot", "pw-" + uuid.uuid4().hex[:12]
# Prints the token the image carries, so the log shows the container ran the pulled image. In
# a job with workers, the master waits (up to 2 minutes) until every replica has printed it.
SHOW = ["python3", "-c", textwrap.dedent('''
    import json, os, time
    print('image token', os.environ.get('ITEST_TOKEN'), flush=True)
    tf = json.loads(os.environ['TF_CONFIG'])
    out = os.path.join(os.environ['TRAINYARD_BUCKETS_DIR'], 'itest-registry',
                       os.environ['CLOUD_ML_JOB_ID'])
    os.makedirs(out, exist_ok=True)
    open(os.path.join(out, '%s-%d' % (tf['task']['type'], tf['task']['index'])), 'w').close()
    if tf['task']['type'] == 'master':
        n = sum(len(v) for v in tf['cluster'].values())
        deadline = time.time() + 120
        while len(os.listdir(out)) < n and time.time() < deadline:
            time.sleep(0.1)
''')]


def podman(*args, check=True, timeout=180):
    env = dict(os.environ)
    conf = "/tmp/trainyard-itest-containers.conf"
    with open(conf, "w") as f:
        f.write('[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n'
                '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n')
    if shutil.which("runc"):
        env.setdefault("CONTAINERS_CONF", conf)
    return subprocess.run(["podman"] + list(args), capture_output=True, text=True, env=env,
                          check=check, timeout=timeout)


def usable():
    if not shutil.which("podman") or not os.access(REGISTRY_BIN, os.X_OK):
        return False
    if not shutil.which("htpasswd"):
        return False
    return podman("image", "exists", EXAMPLE, check=False).returncode == 0


pytestmark = pytest.mark.skipif(
    not usable(), reason="needs podman, %s (examples/container/build.sh), docker-registry and "
    "htpasswd (scripts/install-deps.sh)" % EXAMPLE)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Registry:
    """docker-registry serving `storage` on a free loopback port (never the system service)."""

    def __init__(self, root, storage, htpasswd=None):
        self.port = free_port()
        self.host = "127.0.0.1:%d" % self.port
        config = os.path.join(root, "registry-%d.yml" % self.port)
        auth = ("auth:\n  htpasswd:\n    realm: trainyard-itest\n    path: %s\n" % htpasswd
                if htpasswd else "")
        with open(config, "w") as f:
            f.write("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
                    "    rootdirectory: %s\nhttp:\n  addr: %s\n  secret: itest\n%s"
                    % (storage, self.host, auth))
        self.log = open(os.path.join(root, "registry-%d.log" % self.port), "ab")
        self.proc = subprocess.Popen([REGISTRY_BIN, "serve", config], stdout=self.log,
                                     stderr=self.log, start_new_session=True)
        wait_for(lambda: self.status() in (200, 401), timeout=30, what="registry " + self.host)

    def status(self):
        try:
            with urllib.request.urlopen("http://%s/v2/" % self.host, timeout=5) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            return None

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


@pytest.fixture(scope="module")
def registries(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("registry"))
    storage = os.path.join(root, "storage")
    htpasswd = os.path.join(root, "htpasswd")
    subprocess.run(["htpasswd", "-B", "-b", "-c", htpasswd, USER, PASSWORD], check=True,
                   capture_output=True)
    open_reg = Registry(root, storage)
    # The same storage behind basic auth: the image is pushed once.
    auth_reg = Registry(root, storage, htpasswd=htpasswd)
    ctx = os.path.join(root, "ctx")
    os.mkdir(ctx)
    with open(os.path.join(ctx, "Containerfile"), "w") as f:
        f.write("FROM %s\nENV ITEST_TOKEN=%s\n" % (EXAMPLE, TOKEN))
    podman("build", "-q", "-t", LOCAL, ctx)
    for repo in ("%s/trainer:1" % GCP_PROJECT, "private/trainer:1"):
        # zstd: a fifth of gzip's time for the example's 170 MB layer.
        podman("push", "-q", "--tls-verify=false", "--compression-format", "zstd", LOCAL,
               "%s/%s" % (open_reg.host, repo))
    podman("rmi", LOCAL)
    yield open_reg, auth_reg, root
    forget(open_reg, auth_reg)
    for r in (open_reg, auth_reg):
        r.stop()


def pulled_names(open_reg, auth_reg):
    return ["%s/%s/trainer:1" % (open_reg.host, GCP_PROJECT),
            "localhost:%d/%s/trainer:1" % (open_reg.port, GCP_PROJECT),
            "%s/private/trainer:1" % auth_reg.host,
            "localhost:%d/private/trainer:1" % auth_reg.port,
            "gcr.io/%s/trainer:1" % GCP_PROJECT, LOCAL]


def forget(open_reg, auth_reg):
    """Removes what this module pulled (only its own names) from podman's local storage."""
    for name in pulled_names(open_reg, auth_reg):
        podman("rmi", "-f", name, check=False)


def start_daemon(root, name, open_reg, auth_reg, policy, auth_file=None):
    """A daemon whose mirrors send gcr.io to the open registry and *-docker.pkg.dev to the one
    with basic auth; eu.gcr.io goes to the auth registry under another name (localhost:PORT) for
    which the credentials file has no entry; asia.gcr.io to the open one as localhost:PORT, which
    is not in registry_insecure (TLS is not off globally)."""
    data = os.path.join(root, name)
    os.mkdir(data)
    config = os.path.join(data, "trainyardd.yaml")
    lines = [
        "image_pull_policy: %s" % policy,
        "registry_mirrors:",
        '  "gcr.io": "%s"' % open_reg.host,
        '  "*-docker.pkg.dev": "%s"' % auth_reg.host,
        '  "eu.gcr.io/%s": "localhost:%d/private"' % (GCP_PROJECT, auth_reg.port),
        '  "asia.gcr.io": "localhost:%d"' % open_reg.port,
        "registry_insecure: [%s, %s, localhost:%d]" % (open_reg.host, auth_reg.host,
                                                       auth_reg.port),
    ]
    if auth_file:
        lines.append("registry_auth_file: %s" % auth_file)
    with open(config, "w") as f:
        f.write("\n".join(lines) + "\n")
    return Daemon(data, extra_args=["--config", config]).start()


def submit(daemon, job_id, **training):
    training.setdefault("region", "us-central1")
    status, body = daemon.request("POST", JOBS, {"jobId": job_id, "trainingInput": training})
    assert status == 200, body
    return body


def finish(daemon, job_id, timeout=180):
    return daemon.wait_state(job_id, list(TERMINAL), timeout=timeout)


def messages(daemon, job_id):
    return [e["jsonPayload"]["message"] for e in daemon.logs(job_id)]


@pytest.fixture(scope="module")
def auth_file(registries):
    _, auth_reg, root = registries
    path = os.path.join(root, "auth.json")
    token = base64.b64encode(("%s:%s" % (USER, PASSWORD)).encode()).decode()
    with open(path, "w") as f:
        json.dump({"auths": {auth_reg.host: {"auth": token}}}, f)
    return path


@pytest.fixture(scope="module")
def missing_daemon(registries, auth_file):
    open_reg, auth_reg, root = registries
    d = start_daemon(root, "missing", open_reg, auth_reg, "missing", auth_file=auth_file)
    yield d
    d.stop()


@pytest.fixture(autouse=True)
def clean_images(registries):
    open_reg, auth_reg, _ = registries
    forget(open_reg, auth_reg)
    yield


def test_gcr_uri_is_pulled_from_the_mirror_once_for_all_replicas_and_runs(
        registries, missing_daemon, auth_file):
    open_reg, _, _ = registries
    d = missing_daemon
    image = "gcr.io/%s/trainer:1" % GCP_PROJECT
    submit(d, "reg_gcr", scaleTier="CUSTOM", masterType="n1-standard-4",
           workerType="n1-standard-4", workerCount="2",
           masterConfig={"imageUri": image, "containerCommand": SHOW},
           workerConfig={"containerCommand": SHOW})
    job = finish(d, "reg_gcr")
    assert job["state"] == "SUCCEEDED", job
    lines = messages(d, "reg_gcr")
    text = "\n".join(lines)
    mapped = "%s/%s/trainer:1" % (open_reg.host, GCP_PROJECT)
    pulling = [m for m in lines if m.startswith("Pulling the container image ")]
    # Three replicas, one pull: the others waited for it and found the image.
    assert pulling == [
        "Pulling the container image %s (as %s through registry_mirrors gcr.io=%s) from the "
        "registry %s (image_pull_policy missing, without TLS verification, credentials from %s)."
        % (image, mapped, open_reg.host, open_reg.host, auth_file)], text
    assert "Pulled %s from the registry %s in " % (mapped, open_reg.host) in text, text
    assert text.count("image token %s" % TOKEN) == 3, text
    assert podman("image", "exists", mapped, check=False).returncode == 0
    assert PASSWORD not in text


def test_an_image_already_here_is_not_pulled_with_policy_missing(registries, missing_daemon):
    open_reg, _, _ = registries
    mapped = "%s/%s/trainer:1" % (open_reg.host, GCP_PROJECT)
    podman("pull", "-q", "--tls-verify=false", mapped)
    submit(missing_daemon, "reg_here", masterConfig={
        "imageUri": "gcr.io/%s/trainer:1" % GCP_PROJECT, "containerCommand": SHOW})
    job = finish(missing_daemon, "reg_here")
    assert job["state"] == "SUCCEEDED", job
    text = "\n".join(messages(missing_daemon, "reg_here"))
    assert "Pulling" not in text, text
    assert "Running container image %s." % mapped in text, text


def test_a_missing_image_in_the_registry_says_what_was_tried(registries, missing_daemon):
    open_reg, _, _ = registries
    image = "gcr.io/%s/nothere:7" % GCP_PROJECT
    submit(missing_daemon, "reg_nothere", masterConfig={"imageUri": image})
    job = finish(missing_daemon, "reg_nothere")
    assert job["state"] == "FAILED", job
    msg = job["errorMessage"]
    assert msg.startswith(
        "The replica master 0 could not be started: Cannot pull the container image %s (as "
        "%s/%s/nothere:7 through registry_mirrors gcr.io=%s) from the registry %s "
        "(image_pull_policy missing, without TLS verification" % (
            image, open_reg.host, GCP_PROJECT, open_reg.host, open_reg.host)), msg
    assert "podman pull exited with status 125" in msg, msg
    assert "manifest unknown" in msg, msg
    assert "Failed to install the training packages" not in msg, msg


def test_credentials_reach_a_registry_with_basic_auth(registries, missing_daemon):
    _, auth_reg, _ = registries
    image = "us-central1-docker.pkg.dev/private/trainer:1"
    submit(missing_daemon, "reg_auth", masterConfig={"imageUri": image, "containerCommand": SHOW})
    job = finish(missing_daemon, "reg_auth")
    assert job["state"] == "SUCCEEDED", job
    text = "\n".join(messages(missing_daemon, "reg_auth"))
    assert "from the registry %s" % auth_reg.host in text, text
    assert "image token %s" % TOKEN in text, text
    assert PASSWORD not in text
    with open(os.path.join(missing_daemon.data_dir, "daemon.log")) as f:
        assert PASSWORD not in f.read()


def test_a_registry_without_credentials_refuses_and_the_message_says_so(registries,
                                                                       missing_daemon):
    _, auth_reg, _ = registries
    # eu.gcr.io/<project> goes to the auth registry as localhost:PORT: no entry in auth.json.
    image = "eu.gcr.io/%s/trainer:1" % GCP_PROJECT
    submit(missing_daemon, "reg_noauth", masterConfig={"imageUri": image})
    job = finish(missing_daemon, "reg_noauth")
    assert job["state"] == "FAILED", job
    msg = job["errorMessage"]
    assert "from the registry localhost:%d" % auth_reg.port in msg, msg
    assert "unauthorized" in msg or "authentication required" in msg, msg


def test_tls_is_only_off_for_the_registries_listed(registries, missing_daemon):
    open_reg, _, _ = registries
    image = "asia.gcr.io/%s/trainer:1" % GCP_PROJECT
    submit(missing_daemon, "reg_tls", masterConfig={"imageUri": image})
    job = finish(missing_daemon, "reg_tls")
    assert job["state"] == "FAILED", job
    msg = job["errorMessage"]
    assert "from the registry localhost:%d (image_pull_policy missing, credentials" % (
        open_reg.port) in msg, msg
    assert "HTTP response to HTTPS client" in msg, msg


def test_policy_never_fails_clearly(registries, auth_file):
    open_reg, auth_reg, root = registries
    d = start_daemon(root, "never", open_reg, auth_reg, "never", auth_file=auth_file)
    try:
        image = "gcr.io/%s/trainer:1" % GCP_PROJECT
        submit(d, "reg_never", masterConfig={"imageUri": image})
        job = finish(d, "reg_never")
        assert job["state"] == "FAILED", job
        msg = job["errorMessage"]
        assert msg.startswith(
            "The replica master 0 could not be started: The container image %s is not in the "
            "local storage of podman and image_pull_policy is never: " % image), msg
        assert "pull %s/%s/trainer:1)" % (open_reg.host, GCP_PROJECT) in msg, msg
        assert "Pulling" not in "\n".join(messages(d, "reg_never"))
    finally:
        d.stop()


def test_policy_always_pulls_an_image_that_is_here_once_per_job(registries, auth_file):
    open_reg, auth_reg, root = registries
    mapped = "%s/%s/trainer:1" % (open_reg.host, GCP_PROJECT)
    podman("pull", "-q", "--tls-verify=false", mapped)
    d = start_daemon(root, "always", open_reg, auth_reg, "always", auth_file=auth_file)
    try:
        for job_id in ("reg_always_1", "reg_always_2"):
            submit(d, job_id, scaleTier="CUSTOM", masterType="n1-standard-4",
                   workerType="n1-standard-4", workerCount="1",
                   masterConfig={"imageUri": "gcr.io/%s/trainer:1" % GCP_PROJECT,
                                 "containerCommand": SHOW},
                   workerConfig={"containerCommand": SHOW})
            job = finish(d, job_id)
            assert job["state"] == "SUCCEEDED", job
            text = "\n".join(messages(d, job_id))
            assert text.count("Pulling the container image") == 1, text
            assert text.count("image token %s" % TOKEN) == 2, text
            assert "image_pull_policy always" in text, text
            assert "Pulled %s from the registry %s in " % (mapped, open_reg.host) in text, text
    finally:
        d.stop()
