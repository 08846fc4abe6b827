"""projects.jobs.list's orderBy (a Trainyard extension, docs/api.md) against a real daemon:
paging through every job with any orderBy, page size and filter gives exactly a sort of the
whole listing by the values the API shows (ties in creation order, in the key's direction);
a bad orderBy, or a page token used with another orderBy or filter, is a 400 naming the field;
`trainyard jobs list --sort-by` with `--limit` gives what sorting every job gives.

Jobs: a few that ran and succeeded (startTime and endTime set), some cancelled while queued
(endTime only), the rest queued (admission paused), so every key has ties and unset values."""

import urllib.parse

import pytest

from conftest import PROJECT, Daemon, build_sdist, job_body, make_package, upload_package

JOBS = "/v1/projects/%s/jobs" % PROJECT
KEYS = ["createTime", "startTime", "endTime", "jobId", "state"]
RAN = 4
QUEUED = 21


def q(s):
    return urllib.parse.quote(s, safe="")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("order")
    data = root / "data"
    data.mkdir()
    d = Daemon(str(data)).start()
    uri = upload_package(d, build_sdist(make_package(root / "pkg", "print('hi')\n")))

    def create(job_id, group):
        body = job_body(job_id, uri)
        body["labels"] = {"group": group}
        status, out = d.request("POST", JOBS, body)
        assert status == 200, out

    for i in range(RAN):
        create("ran_%d" % (RAN - i), "a" if i % 2 else "b")
    for i in range(RAN):
        d.wait_state("ran_%d" % (RAN - i), "SUCCEEDED")
    status, _ = d.request("PUT", "/v1/admin/admission", {"paused": True})
    assert status == 200
    # Ids not in creation order, some sharing a prefix.
    for i in range(QUEUED):
        create("job_%02d" % ((i * 8) % QUEUED), "a" if i % 3 else "b")
    for i in range(0, QUEUED, 4):
        status, _ = d.request("POST", JOBS + "/job_%02d:cancel" % i, {})
        assert status == 200
        d.wait_state("job_%02d" % i, "CANCELLED")
    yield d
    d.request("PUT", "/v1/admin/admission", {"paused": False})
    d.stop()


def list_all(d, params, page_size):
    """Every job of the listing with `params`, page by page: (ids, pages)."""
    ids, token, pages = [], None, 0
    while True:
        query = dict(params, pageSize=str(page_size))
        if token:
            query["pageToken"] = token
        status, body = d.request("GET", JOBS + "?" + urllib.parse.urlencode(query))
        assert status == 200, body
        pages += 1
        ids += [j["jobId"] for j in body.get("jobs", [])]
        token = body.get("nextPageToken")
        if not token:
            return ids, pages


def reference(d, key, desc, filter_text=""):
    """The whole listing sorted here: creation order (ascending) or newest first (descending),
    then a stable sort by the value as the JSON shows it ("None" when absent, as gcloud)."""
    params = {"filter": filter_text} if filter_text else {}
    status, body = d.request("GET", JOBS + "?pageSize=100&" + urllib.parse.urlencode(params))
    assert status == 200 and "nextPageToken" not in body, body
    jobs = body.get("jobs", [])  # newest first
    if not desc:
        jobs = list(reversed(jobs))
    jobs.sort(key=lambda j: str(j.get(key, "None")), reverse=desc)
    return [j["jobId"] for j in jobs]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("desc", [False, True])
@pytest.mark.parametrize("filter_text", ["", "labels.group=a", "state:QUEUED", "jobId:job_1*"])
def test_paging_in_an_order_equals_sorting_everything(env, key, desc, filter_text):
    want = reference(env, key, desc, filter_text)
    assert len(want) > 3
    params = {"orderBy": key + (" desc" if desc else "")}
    if filter_text:
        params["filter"] = filter_text
    for page_size in (1, 3, 100):
        ids, pages = list_all(env, params, page_size)
        assert ids == want, "orderBy %r filter %r pageSize %d" % (
            params["orderBy"], filter_text, page_size)
        assert pages == max(1, -(-len(want) // page_size))


def test_explicit_ascending_and_snake_case(env):
    a, _ = list_all(env, {"orderBy": "jobId asc"}, 7)
    b, _ = list_all(env, {"orderBy": "job_id"}, 7)
    assert a == b == sorted(a)


def test_without_order_by_the_listing_is_newest_first(env):
    ids, _ = list_all(env, {}, 5)
    assert ids[:2] == ["job_%02d" % ((QUEUED - 1) * 8 % QUEUED), "job_%02d" % (
        (QUEUED - 2) * 8 % QUEUED)]
    assert ids[-1] == "ran_%d" % RAN


def error_field(body):
    return [v["field"] for d in body["error"]["details"] for v in d.get("fieldViolations", [])]


@pytest.mark.parametrize("order_by", ["duration", "createTime up", "state,jobId",
                                      "labels.group", "jobId desc extra"])
def test_a_bad_order_by_is_a_400_naming_it(env, order_by):
    status, body = env.request("GET", JOBS + "?orderBy=" + q(order_by))
    assert status == 400, body
    assert body["error"]["status"] == "INVALID_ARGUMENT"
    assert "orderBy" in body["error"]["message"] and order_by in body["error"]["message"]
    assert error_field(body) == ["orderBy"]


def test_a_token_is_refused_with_another_order_or_filter(env):
    status, page = env.request("GET", JOBS + "?pageSize=2&orderBy=jobId")
    assert status == 200 and page["nextPageToken"]
    token = q(page["nextPageToken"])
    status, plain = env.request("GET", JOBS + "?pageSize=2")
    plain_token = q(plain["nextPageToken"])
    for query in ("orderBy=state&pageToken=" + token,
                  "orderBy=jobId%20desc&pageToken=" + token,
                  "orderBy=jobId&filter=state%3AQUEUED&pageToken=" + token,
                  "pageToken=" + token,
                  "orderBy=jobId&pageToken=" + plain_token):
        status, body = env.request("GET", JOBS + "?pageSize=2&" + query)
        assert status == 400, (query, body)
        assert "another orderBy or filter" in body["error"]["message"]
        assert error_field(body) == ["pageToken"]
    status, body = env.request("GET", JOBS + "?orderBy=jobId&pageToken=bm9wZQ")
    assert status == 400 and error_field(body) == ["pageToken"]
    # The same orderBy continues.
    status, body = env.request("GET", JOBS + "?pageSize=2&orderBy=jobId&pageToken=" + token)
    assert status == 200 and [j["jobId"] for j in body["jobs"]] == sorted(
        reference(env, "jobId", False))[2:4]


def test_discovery_documents_order_by(env):
    status, doc = env.request("GET", "/discovery/v1/apis/ml/v1/rest")
    assert status == 200
    params = doc["resources"]["projects"]["resources"]["jobs"]["methods"]["list"]["parameters"]
    assert params["orderBy"]["location"] == "query"
    assert "Trainyard extension" in params["orderBy"]["description"]


def gcloud_sorted(d, key, desc):
    """What gcloud's --sort-by=[~]KEY prints for every job: the listing (newest first) sorted
    stably by str() of the value ("None" when absent), reversed for ~."""
    status, body = d.request("GET", JOBS + "?pageSize=100")
    assert status == 200 and "nextPageToken" not in body, body
    jobs = sorted(body["jobs"], key=lambda j: str(j.get(key, "None")), reverse=desc)
    return [j["jobId"] for j in jobs]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("desc", [False, True])
def test_cli_sort_by_with_limit_is_the_sort_of_every_job(env, key, desc):
    want = gcloud_sorted(env, key, desc)
    sort_by = ("~" if desc else "") + key
    for limit in (1, 5, len(want)):
        for page_size in ("2", "100"):
            p = env.cli("jobs", "list", "--sort-by", sort_by, "--limit", str(limit),
                        "--page-size", page_size, "--format", "value(jobId)")
            assert p.stdout.split() == want[:limit], (sort_by, limit, page_size)
    # A second key sorts the ties; --filter (gcloud's, on the client) keeps the order.
    p = env.cli("jobs", "list", "--sort-by", sort_by + ",~jobId", "--limit", "6",
                "--page-size", "3", "--filter", "labels.group=a", "--format", "value(jobId)")
    status, body = env.request("GET", JOBS + "?pageSize=100")
    jobs = [j for j in body["jobs"] if j["labels"]["group"] == "a"]
    jobs.sort(key=lambda j: j["jobId"], reverse=True)
    jobs.sort(key=lambda j: str(j.get(key, "None")), reverse=desc)
    assert p.stdout.split() == [j["jobId"] for j in jobs][:6]
