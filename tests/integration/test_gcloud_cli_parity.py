"""`trainyard` as a drop-in for gcloud in scripts (issue 16 item 7): the same `jobs list
--filter/--format/--sort-by` command lines give the same output with the real gcloud and with
`trainyard`, on the same daemon and the same jobs; `describe` shows why a queued job waits
(item 6) to both.

Admission stays paused, so the jobs stay QUEUED (some are cancelled) and no trainer runs."""

import json
import os

import pytest

from conftest import PROJECT, Daemon, build_sdist, job_body, make_package, upload_package
from test_gcloud import Google, require_tool


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    require_tool("gcloud")
    root = tmp_path_factory.mktemp("parity")
    data = root / "data"
    data.mkdir()
    d = Daemon(str(data)).start()
    g = Google(d, str(root / "cloudsdk"), None)
    if d.token:  # authentication on: trainyard and gcloud send the administrator's token
        g.env["TRAINYARD_TOKEN"] = d.token
    g.trainyard("gcloud-config", "--apply", "--activate")
    d.cli("admin", "pause")
    uri = upload_package(d, build_sdist(make_package(root / "pkg", "print('hi')\n")))
    custom = dict(scaleTier="CUSTOM", masterType="n1-standard-4", workerType="n1-standard-4")
    jobs = [
        ("par_1", {"owner": "alice", "team": "ml"}, ["--epochs", "5"], dict(custom, workerCount="2")),
        ("par_2", {"owner": "bob"}, ["--lr", "0.1"], dict(custom, workerCount="3")),
        ("Par_Big", {"owner": "carol"}, [], {}),
        ("other_3", {}, ["--epochs", "1"], {}),
        ("other_4", {"team": "infra"}, [], {"scheduling": {"maxWaitTime": "3600s"}}),
        ("cancelled_5", {"owner": "alice"}, [], {}),
    ]
    for job_id, labels, args, training in jobs:
        body = job_body(job_id, uri, args, **training)
        if labels:
            body["labels"] = labels
        status, resp = d.request("POST", "/v1/projects/%s/jobs" % PROJECT, body)
        assert status == 200, resp
    d.cli("jobs", "cancel", "cancelled_5")
    g.package_uri = uri
    yield g
    d.stop()


def both(env, *args):
    """The same command line through gcloud and trainyard: (gcloud, trainyard) results."""
    g = env.gcloud("ai-platform", "jobs", *args, check=False)
    t = env.trainyard("jobs", *args, check=False)
    return g, t


FILTERS = [
    "",
    "state:QUEUED",
    "state=queued",
    "state:(QUEUED OR CANCELLED)",
    "state=(cancelled,failed)",
    "jobId:par*",
    "jobId:*_2",
    "jobId:p*g",
    "jobId:ar",
    "jobId=par_1",
    "jobId~^par_[0-9]$",
    "jobId!~_[0-9]$",
    "jobId~'(?i)^par'",
    "labels.owner=alice",
    "labels.owner!=alice",
    "labels:team",
    "labels:ALICE",
    "NOT labels.owner:*",
    "-state:QUEUED",
    "(state:QUEUED AND labels.owner=bob) OR jobId:par_1",
    "state:QUEUED labels.team:*",
    "createTime>-P1D",
    "createTime<-P1D",
    "createTime>=2020-01-01",
    "createTime<2020-01-01T00:00:00Z",
    "trainingInput.workerCount>2",
    "trainingInput.workerCount>=2",
    "trainingInput.args[0]=--epochs",
    "trainingInput.args:0.1",
    "trainingInput.scaleTier=custom",
    "labels.owner<b",
    "errorMessage:cancelled",
    "errorMessage:*",
    "jobId.len()>5",
    "alice",
    "-alice",
    "scheduling:3600s",
    "trainingInput.scheduling.maxWaitTime:3600s",
]


@pytest.mark.parametrize("expr", FILTERS)
def test_filters_keep_the_same_jobs(env, expr):
    # --filter=EXPR: an expression may start with '-'.
    flag = ["--filter=" + expr] if expr else ["--filter", ""]
    g, t = both(env, "list", *flag, "--sort-by", "jobId", "--format", "value(jobId)")
    assert g.returncode == 0, g.stderr
    assert t.returncode == 0, t.stderr
    assert t.stdout == g.stdout, "filter %r: gcloud %r, trainyard %r" % (expr, g.stdout, t.stdout)


FORMATS = [
    "table(jobId,state,createTime.date())",
    "table(jobId.basename(),state:label=STATUS,createTime.date(tz=LOCAL):label=CREATED)",
    "table[no-heading](jobId,labels.owner,trainingInput.workerCount:align=right)",
    "table[box](jobId,state)",
    "table(jobId:sort=1:reverse,labels.owner)",
    "value(jobId,labels,trainingInput.args)",
    "value[separator=','](jobId,state)",
    "csv(jobId,state,labels.owner)",
    "csv[no-heading](jobId,trainingInput.args)",
    "get(jobId)",
]


@pytest.mark.parametrize("fmt", FORMATS)
def test_formats_print_the_same(env, fmt):
    g, t = both(env, "list", "--sort-by", "jobId", "--format", fmt)
    assert g.returncode == 0, g.stderr
    assert t.returncode == 0, t.stderr
    assert t.stdout == g.stdout, "format %r:\ngcloud:\n%s\ntrainyard:\n%s" % (fmt, g.stdout, t.stdout)


@pytest.mark.parametrize("args", [
    ["--sort-by", "~jobId", "--limit", "2"],
    ["--sort-by", "trainingInput.workerCount,jobId"],
    ["--sort-by", "~labels.owner,jobId"],
    ["--sort-by", "state,~createTime,jobId"],
])
def test_sort_by_and_limit_order_the_same(env, args):
    g, t = both(env, "list", "--format", "value(jobId)", *args)
    assert g.returncode == 0 and t.returncode == 0, (g.stderr, t.stderr)
    assert t.stdout == g.stdout


def test_json_projection_is_the_same(env):
    g, t = both(env, "list", "--sort-by", "jobId", "--format", "json(jobId,labels)")
    assert json.loads(t.stdout) == json.loads(g.stdout)


def test_bad_filter_is_an_error_for_both(env):
    g, t = both(env, "list", "--filter", "state:QUEUED AND jobId:a OR jobId:b")
    assert g.returncode != 0 and t.returncode != 0
    for p in (g, t):
        assert "Parenthesis grouping is required when AND and OR are are combined" in p.stderr, \
            p.stderr


def test_missing_filter_keys_are_named_by_both(env):
    g, t = both(env, "list", "--filter", "labels.nosuch:x OR state:CANCELLED",
                "--format", "value(jobId)")
    assert t.stdout == g.stdout == "cancelled_5\n"
    for p in (g, t):
        assert "The following filter keys were not present in any resource : labels.nosuch" \
            in p.stderr, p.stderr


def test_describe_shows_why_a_queued_job_waits(env):
    t = env.trainyard("jobs", "describe", "other_4")
    assert "waitReason: " in t.stdout and "Admission is paused" in t.stdout, t.stdout
    assert "(scheduling.maxWaitTime 3600s)" in t.stdout, t.stdout
    # gcloud keeps the field it does not know and prints it.
    g = env.gcloud("ai-platform", "jobs", "describe", "other_4", "--format", "value(waitReason)")
    assert g.stdout.startswith("Admission is paused"), g.stdout
    listed = env.trainyard("jobs", "list", "--filter", "jobId=other_4",
                           "--format", "value(jobPosition,waitReason)").stdout
    assert listed.split("\t")[1].startswith("Admission is paused"), listed
    # A cancelled job no longer waits.
    assert "waitReason" not in env.trainyard("jobs", "describe", "cancelled_5").stdout


def test_what_trainyard_does_not_run_is_a_clean_gcloud_error(env):
    """An unsupported feature is a 400, not a 5xx: gcloud prints the message, not a network
    failure."""
    argv = ["jobs", "submit", "training", "web_1", "--packages", env.package_uri,
            "--module-name", "trainer.task", "--region", "us-central1", "--enable-web-access"]
    g = env.gcloud("ai-platform", *argv, check=False)
    assert g.returncode == 1
    assert "network connectivity" not in g.stderr, g.stderr
    assert ("FAILED_PRECONDITION: Field: trainingInput.enableWebAccess Error: Trainyard does not "
            "offer interactive shells (web access) yet") in g.stderr, g.stderr
    t = env.trainyard(*argv, check=False)
    assert t.returncode == 1
    assert "FAILED_PRECONDITION" in t.stderr and "web access" in t.stderr, t.stderr
