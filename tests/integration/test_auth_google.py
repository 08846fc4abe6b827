"""Google's own clients against a trainyardd with authentication on (docs/security.md): the real
gcloud and gsutil configured by `trainyard gcloud-config` with a principal's API token (sent from
auth/access_token_file), and googleapiclient with OAuth credentials holding the token. Each
client also meets a wrong token and a caller without the permission."""

import json
import os

import pytest

from conftest import Daemon, job_body, make_package
from test_gcloud import Google, require_tool

PROJECT = "itest"  # the project test_gcloud's Google helper sets
BUCKET = "authg-bkt"
DEV = "dev@example.com"


@pytest.fixture(scope="module")
def g(tmp_path_factory):
    require_tool("gcloud")
    require_tool("gsutil")
    root = tmp_path_factory.mktemp("authg")
    data = root / "data"
    data.mkdir()
    cfg = root / "trainyardd.yaml"
    cfg.write_text("tls_listen: 127.0.0.1:0\n")
    d = Daemon(str(data), extra_args=["--config", str(cfg)], auth=True).start()
    line = d.proc.stdout.readline().decode()
    assert line.startswith("tls listening on https://"), line
    tls_port = int(line.rsplit(":", 1)[1])
    admin = d.token
    # A developer of the project who may also use its buckets.
    d.request("POST", "/v1/admin/principals", {"email": DEV})
    status, tok = d.request("POST", "/v1/admin/principals/%s/tokens" % DEV, {})
    assert status == 200, tok
    d.request("POST", "/v1/projects/%s:setIamPolicy" % PROJECT, {"policy": {"bindings": [
        {"role": "roles/ml.developer", "members": ["user:" + DEV]},
        {"role": "roles/storage.objectAdmin", "members": ["user:" + DEV]},
        {"role": "roles/logging.viewer", "members": ["user:" + DEV]}]}})
    assert d.request("POST", "/storage/v1/b?project=" + PROJECT, {"name": BUCKET})[0] == 200
    gg = Google(d, str(root / "cloudsdk"), tls_port)
    gg.env["TRAINYARD_TOKEN"] = tok["token"]
    p = gg.trainyard("gcloud-config", "--apply", "--activate",
                     "--tls-endpoint", "https://127.0.0.1:%d" % tls_port)
    assert "Activated [trainyard]." in p.stderr, p.stderr
    assert "WARNING" not in p.stderr
    gg.env["BOTO_CONFIG"] = os.path.join(gg.config_dir, "trainyard.boto")
    gg.token = tok["token"]
    gg.admin = admin
    yield gg
    d.stop()


def test_gcloud_submits_lists_and_describes_with_the_token(g, tmp_path):
    pkg = make_package(tmp_path, "print('trained with a token')\n")
    p = g.gcloud("ai-platform", "jobs", "submit", "training", "authg_job_1",
                 "--package-path", pkg, "--module-name", "trainer.task",
                 "--staging-bucket", "gs://" + BUCKET, "--region", "us-central1")
    assert "Job [authg_job_1] submitted successfully." in p.stderr, p.stderr
    job = json.loads(g.gcloud("ai-platform", "jobs", "describe", "authg_job_1",
                              "--format", "json").stdout)
    assert job["jobId"] == "authg_job_1"
    listed = g.gcloud("ai-platform", "jobs", "list", "--format", "value(jobId)").stdout
    assert "authg_job_1" in listed.split()
    # The creator owns the job: ml.developer alone could not cancel it.
    p = g.gcloud("ai-platform", "jobs", "cancel", "authg_job_1", check=False)
    assert p.returncode == 0, p.stderr
    # The audit log names the developer as the creator.
    status, page = g.daemon.request("POST", "/v2/entries:list", {
        "resourceNames": ["projects/" + PROJECT], "pageSize": 1000,
        "filter": 'logName="projects/%s/logs/cloudaudit.googleapis.com%%2Factivity"' % PROJECT})
    assert status == 200
    assert any(e["protoPayload"]["methodName"] == "ml.projects.jobs.create" and
               e["protoPayload"]["authenticationInfo"]["principalEmail"] == DEV
               for e in page["entries"])


def test_gsutil_and_gcloud_storage_with_the_token(g, tmp_path):
    src = tmp_path / "hello.txt"
    src.write_text("hello under auth\n")
    g.gsutil("cp", str(src), "gs://%s/a/hello.txt" % BUCKET)
    assert "gs://%s/a/hello.txt" % BUCKET in g.gsutil("ls", "gs://%s/a/" % BUCKET).stdout
    assert g.gsutil("cat", "gs://%s/a/hello.txt" % BUCKET).stdout == "hello under auth\n"
    out = g.gcloud("storage", "cat", "gs://%s/a/hello.txt" % BUCKET).stdout
    assert out == "hello under auth\n"


def test_a_wrong_token_gives_gclouds_auth_errors(g):
    token_file = os.path.join(g.config_dir, "trainyard.access_token")
    with open(token_file, "w") as f:
        f.write("ty1.0123456789abcdef." + "A" * 43 + "\n")
    try:
        p = g.gcloud("ai-platform", "jobs", "list", check=False)
        assert p.returncode != 0
        assert "401" in p.stderr or "UNAUTHENTICATED" in p.stderr or "invalid authentication" \
            in p.stderr, p.stderr
        p = g.gsutil("ls", "gs://%s" % BUCKET, check=False)
        assert p.returncode != 0
    finally:
        with open(token_file, "w") as f:
            f.write(g.token + "\n")
    # The right token, another project: 403.
    p = g.gcloud("ai-platform", "jobs", "list", "--project", "someone-else", check=False)
    assert p.returncode != 0 and ("PERMISSION_DENIED" in p.stderr or "403" in p.stderr), p.stderr


def test_googleapiclient_with_the_token(g):
    import google.oauth2.credentials
    from googleapiclient import discovery, errors

    url = g.daemon.url + "/discovery/v1/apis/{api}/{apiVersion}/rest"

    def ml(token):
        creds = google.oauth2.credentials.Credentials(token=token)
        return discovery.build("ml", "v1", discoveryServiceUrl=url, cache_discovery=False,
                               credentials=creds)

    jobs = ml(g.token).projects().jobs()
    listed = jobs.list(parent="projects/" + PROJECT).execute()
    assert "authg_job_1" in [j["jobId"] for j in listed.get("jobs", [])] or listed == {}
    perms = jobs.testIamPermissions(resource="projects/%s/jobs/authg_job_1" % PROJECT,
                                    body={"permissions": ["ml.jobs.get", "ml.jobs.cancel"]}
                                    ).execute()
    assert set(perms.get("permissions", [])) <= {"ml.jobs.get", "ml.jobs.cancel"}
    cfg = ml(g.token).projects().getConfig(name="projects/" + PROJECT).execute()
    assert cfg["serviceAccount"].startswith("service-")
    # A wrong token: the 401 makes google-auth try to refresh the static token, which it
    # cannot (its usual error for an expired or revoked access token).
    import google.auth.exceptions
    with pytest.raises(google.auth.exceptions.RefreshError):
        ml("ty1.0123456789abcdef." + "B" * 43).projects().jobs().list(
            parent="projects/" + PROJECT).execute()
    with pytest.raises(errors.HttpError) as e:
        jobs.create(parent="projects/other", body=job_body("x", "gs://b/p.tar.gz")).execute()
    assert e.value.resp.status == 403
