"""Google's own clients against trainyardd: googleapiclient (discovery build from the served
document and from Google's 2018 document), the Cloud Logging entries:list subset with gcloud's
filter forms, credentials that are accepted and ignored, and the TLS listener."""

import json
import os
import ssl
import time
import urllib.error
import urllib.request

import httplib2
import pytest
from googleapiclient import discovery
from googleapiclient.errors import HttpError

from conftest import REPO, Daemon, build_sdist, make_package, upload_package, wait_for

PROJECT = "gapi"

TRAINER = """
    import argparse, logging, sys, time
    p = argparse.ArgumentParser()
    p.add_argument('--sleep', type=float, default=0)
    p.add_argument('--job-dir')
    a, _ = p.parse_known_args()
    for i in range(5):
        print('step %d' % i, flush=True)
    logging.warning('almost done')
    time.sleep(a.sleep)
"""


@pytest.fixture(scope="module")
def gd(tmp_path_factory):
    """A daemon with an https listener (self-signed), and a trainer package in a bucket."""
    root = tmp_path_factory.mktemp("gapi")
    # Credentials that are accepted and ignored: authentication off (test_auth_google.py).
    d = Daemon(str(root / "data"), auth=False)
    os.makedirs(d.data_dir)
    old = os.environ.get("TRAINYARD_TLS_LISTEN")
    os.environ["TRAINYARD_TLS_LISTEN"] = "127.0.0.1:0"
    try:
        d.start()
    finally:
        if old is None:
            del os.environ["TRAINYARD_TLS_LISTEN"]
        else:
            os.environ["TRAINYARD_TLS_LISTEN"] = old
    line = d.proc.stdout.readline().decode()
    assert line.startswith("tls listening on https://"), line
    d.tls_url = line.split()[-1]
    d.package = upload_package(d, build_sdist(make_package(root / "pkg", TRAINER)))
    yield d
    d.stop()


def ml(gd, **kwargs):
    url = gd.url + "/discovery/v1/apis/{api}/{apiVersion}/rest"
    return discovery.build("ml", "v1", discoveryServiceUrl=url, cache_discovery=False, **kwargs)


def training_input(gd, job_id, *args):
    return {"scaleTier": "BASIC", "packageUris": [gd.package], "pythonModule": "trainer.task",
            "region": "us-central1", "jobDir": "gs://itest-bkt/%s" % job_id,
            "runtimeVersion": "2.11", "pythonVersion": "3.7", "args": list(args)}


def run_seed_snippet(gd):
    """The shape of the seed repository's submit code, pointed at Trainyard; returns the
    request and the finished job (submitted once per daemon)."""
    training_inputs = training_input(gd, "seed_job")
    job_spec = {"jobId": "seed_job", "trainingInput": training_inputs}
    cloudml = ml(gd)
    request = cloudml.projects().jobs().create(body=job_spec, parent="projects/" + PROJECT)
    if not getattr(gd, "seed_submitted", False):
        response = request.execute()
        gd.seed_submitted = True
        assert response["jobId"] == "seed_job"
        assert response["state"] == "QUEUED"
    name = "projects/%s/jobs/seed_job" % PROJECT
    job = wait_for(lambda: (lambda j: j if j["state"] in ("SUCCEEDED", "FAILED") else None)(
        cloudml.projects().jobs().get(name=name).execute()), timeout=120, what="seed_job ends")
    return cloudml, request, job


def test_seed_snippet_runs_to_succeeded(gd):
    cloudml, request, job = run_seed_snippet(gd)
    assert job["state"] == "SUCCEEDED", job

    with pytest.raises(HttpError) as e:
        request.execute()
    assert e.value.resp.status == 409
    assert json.loads(e.value.content)["error"]["status"] == "ALREADY_EXISTS"
    with pytest.raises(HttpError) as e:
        cloudml.projects().jobs().get(name="projects/%s/jobs/nope" % PROJECT).execute()
    assert e.value.resp.status == 404


def test_list_pages_cancel_and_patch_with_etag(gd):
    gd.request("PUT", "/v1/admin/admission", {"paused": True})
    try:
        # Credentials are accepted and ignored: an API key and a bearer token.
        import google.oauth2.credentials
        jobs = ml(gd, developerKey="x",
                  credentials=google.oauth2.credentials.Credentials(token="fake")).projects().jobs()
        parent = "projects/gapi-list"
        for i in range(5):
            jobs.create(parent=parent, body={"jobId": "l%d" % i,
                                             "trainingInput": training_input(gd, "l%d" % i)}
                        ).execute()
        seen, request, pages = [], jobs.list(parent=parent, pageSize=2), 0
        while request is not None:
            page = request.execute()
            pages += 1
            seen += [j["jobId"] for j in page.get("jobs", [])]
            request = jobs.list_next(request, page)
        assert seen == ["l4", "l3", "l2", "l1", "l0"]
        assert pages == 3
        assert jobs.list(parent=parent, filter="jobId:l3").execute()["jobs"][0]["jobId"] == "l3"

        name = parent + "/jobs/l1"
        etag = jobs.get(name=name).execute()["etag"]
        patched = jobs.patch(name=name, updateMask="labels,etag",
                             body={"labels": {"owner": "alice"}, "etag": etag}).execute()
        assert patched["labels"] == {"owner": "alice"}
        with pytest.raises(HttpError) as e:  # the etag is stale now
            jobs.patch(name=name, updateMask="labels,etag",
                       body={"labels": {"owner": "bob"}, "etag": etag}).execute()
        assert e.value.resp.status == 409

        for i in range(5):
            assert jobs.cancel(name="%s/jobs/l%d" % (parent, i), body={}).execute() == {}
        wait_for(lambda: all(jobs.get(name="%s/jobs/l%d" % (parent, i)).execute()["state"] ==
                             "CANCELLED" for i in range(5)), timeout=30, what="cancelled")
        with pytest.raises(HttpError) as e:
            jobs.cancel(name=parent + "/jobs/nope", body={}).execute()
        assert e.value.resp.status == 404
    finally:
        gd.request("PUT", "/v1/admin/admission", {"paused": False})


def test_build_from_googles_2018_document(gd):
    with open(os.path.join(REPO, "tests", "data", "ml-v1-discovery-20181207.json")) as f:
        doc = json.load(f)
    doc["rootUrl"] = doc["baseUrl"] = gd.url + "/"
    service = discovery.build_from_document(doc, http=httplib2.Http())
    jobs = service.projects().jobs()
    created = jobs.create(parent="projects/gapi-2018", body={
        "jobId": "doc2018", "trainingInput": training_input(gd, "doc2018", "--sleep", "30")}
    ).execute()
    assert created["jobId"] == "doc2018"
    assert jobs.list(parent="projects/gapi-2018").execute()["jobs"][0]["jobId"] == "doc2018"
    jobs.cancel(name="projects/gapi-2018/jobs/doc2018", body={}).execute()
    keyed = discovery.build_from_document(doc, developerKey="k")
    assert keyed.projects().jobs().get(name="projects/gapi-2018/jobs/doc2018").execute()[
        "jobId"] == "doc2018"


def entries_list(gd, body, headers=None):
    req = urllib.request.Request(gd.url + "/v2/entries:list?alt=json",
                                 data=json.dumps(body).encode(), method="POST",
                                 headers=dict({"Content-Type": "application/json"},
                                              **(headers or {})))
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_entries_list_with_gclouds_filters(gd):
    assert run_seed_snippet(gd)[2]["state"] == "SUCCEEDED"
    base = ['(resource.type="ml_job" OR resource.type="cloudml_job")',
            'resource.labels.job_id="seed_job"']
    upper = 'timestamp<"%s"' % time.strftime("%Y-%m-%dT%H:%M:%S.000000+00:00",
                                             time.gmtime(time.time() + 60))
    lower = 'timestamp>="1970-01-01T01:00:00.000000000Z"'

    # gcloud logging read style: all of them, pages of 2, following nextPageToken.
    body = {"resourceNames": ["projects/" + PROJECT], "filter": " AND ".join(base + [lower, upper]),
            "orderBy": "timestamp asc", "pageSize": 2}
    entries = []
    while True:
        status, page = entries_list(gd, body, {"Authorization": "Bearer fake"})
        assert status == 200, page
        entries += page.get("entries", [])
        if "nextPageToken" not in page:
            break
        body["pageToken"] = page["nextPageToken"]
    messages = [e.get("jsonPayload", {}).get("message") or e.get("textPayload") for e in entries]
    assert [m for m in messages if m.startswith("step")] == ["step %d" % i for i in range(5)]
    assert any(e["resource"]["labels"]["task_name"] == "service" and "textPayload" in e
               for e in entries)
    stamps = [(e["timestamp"], e["insertId"]) for e in entries]
    assert stamps == sorted(stamps)  # gcloud compares both as strings
    assert all(e["logName"].startswith("projects/%s/logs/" % PROJECT) for e in entries)

    # stream-logs style: the task filter, then resuming with the cursor form.
    task = '(resource.labels.task_name="master-replica-0" OR labels.task_name="master-replica-0")'
    body = {"resourceNames": ["projects/" + PROJECT], "orderBy": "timestamp asc", "pageSize": 1000,
            "filter": " AND ".join(base + [task, lower, upper])}
    status, page = entries_list(gd, body)
    master = page["entries"]
    assert {e["resource"]["labels"]["task_name"] for e in master} == {"master-replica-0"}
    assert len(master) == len([e for e in entries if
                               e["resource"]["labels"]["task_name"] == "master-replica-0"])
    third = master[2]
    cursor = '((timestamp="{0}" AND insertId>"{1}") OR timestamp>"{0}")'.format(
        third["timestamp"], third["insertId"])
    body["filter"] = " AND ".join(base + [task, cursor, upper])
    status, page = entries_list(gd, body)
    assert status == 200, page
    assert [e["insertId"] for e in page["entries"]] == [e["insertId"] for e in master[3:]]
    warn = [e for e in master if e["severity"] == "WARNING"]
    assert warn and "almost done" in warn[0]["jsonPayload"]["message"]

    # Newest first, as `gcloud logging read` asks by default; severity filter.
    status, page = entries_list(gd, {"resourceNames": ["projects/" + PROJECT],
                                     "filter": " ".join(base) + " severity>=WARNING",
                                     "orderBy": "timestamp desc", "pageSize": 1})
    assert status == 200 and page["entries"][0]["severity"] in ("WARNING", "ERROR")

    status, page = entries_list(gd, {"resourceNames": ["projects/" + PROJECT],
                                     "filter": "resource.labels.job_id=\"seed_job\" AND oops"})
    assert status == 400 and page["error"]["status"] == "INVALID_ARGUMENT"


def test_discovery_paths_credentials_and_body_limit(gd):
    for path in ("/discovery/v1/apis/ml/v1/rest", "/$discovery/rest?version=v1"):
        status, doc = gd.request("GET", path)
        assert status == 200 and doc["id"] == "ml:v1" and "auth" not in doc
        assert doc["rootUrl"] == gd.url + "/"
    assert gd.request("GET", "/$discovery/rest?version=v9")[0] == 404
    # Route labels are Prometheus-escaped (the pattern has a backslash).
    with urllib.request.urlopen(gd.url + "/metrics", timeout=10) as r:
        assert 'route="/\\\\$discovery/rest",code="200"' in r.read().decode()
    status, body = gd.request("GET", "/v1/projects/%s/jobs?key=abc&access_token=t" % PROJECT)
    assert status == 200
    status, body = gd.request("POST", "/v1/projects/%s/jobs" % PROJECT,
                              raw=b'{"jobId": "big", "x": "' + b"a" * (9 << 20) + b'"}')
    assert status == 413 and "payload size exceeds" in body["error"]["message"], body
    # Storage uploads are not limited by it.
    status, body = gd.request("POST", "/upload/storage/v1/b/itest-bkt/o?uploadType=media&name=big",
                              raw=b"b" * (9 << 20))
    assert status == 200 and body["size"] == str(9 << 20)


def test_tls_listener_serves_the_same_routes(gd):
    run_seed_snippet(gd)
    cert = os.path.join(gd.data_dir, "tls", "cert.pem")
    ctx = ssl.create_default_context(cafile=cert)  # verifies the self-signed certificate
    with urllib.request.urlopen(gd.tls_url + "/healthz", context=ctx, timeout=10) as r:
        assert r.status == 200
    with urllib.request.urlopen(gd.tls_url + "/discovery/v1/apis/ml/v1/rest", context=ctx,
                                timeout=10) as r:
        assert json.loads(r.read())["rootUrl"] == gd.tls_url + "/"
    with urllib.request.urlopen(gd.tls_url + "/storage/v1/b/itest-bkt", context=ctx,
                                timeout=10) as r:
        assert json.loads(r.read())["name"] == "itest-bkt"
    # googleapiclient over https, trusting the daemon's certificate.
    service = discovery.build("ml", "v1", cache_discovery=False, http=httplib2.Http(ca_certs=cert),
                              discoveryServiceUrl=gd.tls_url + "/$discovery/rest?version={apiVersion}")
    got = service.projects().jobs().get(name="projects/%s/jobs/seed_job" % PROJECT).execute()
    assert got["jobId"] == "seed_job"
