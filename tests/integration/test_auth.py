"""Authentication and IAM end to end (docs/security.md): a real trainyardd with authentication on,
principals and tokens made through the admin API and the CLI, the permission matrix generated
from the daemon's own route table (every route x every predefined role x own/other project),
job-level grants, bad credentials and bad policies, and the audit log."""

import json
import os
import re
import subprocess
import time
import urllib.parse

import pytest

from conftest import BIN, Daemon, build_sdist, job_body, make_package, wait_for

OWN, OTHER = "own-proj", "other-proj"
OWN_BUCKET, OTHER_BUCKET = "own-bkt-auth", "other-bkt-auth"


class Auth:
    def __init__(self, daemon):
        self.d = daemon
        self.tokens = {}  # email -> token

    def ok(self, method, path, body=None, token=None):
        status, out = self.d.request(method, path, body, token=token)
        assert 200 <= status < 300, (method, path, status, out)
        return out

    def principal(self, email, kind="user"):
        self.ok("POST", "/v1/admin/principals", {"email": email, "kind": kind})
        t = self.ok("POST", "/v1/admin/principals/%s/tokens" % email, {"description": "test"})
        assert t["token"].startswith("ty1.") and t["principal"] == email
        self.tokens[email] = t["token"]
        return t["token"]

    def grant(self, project, role, member):
        policy = self.ok("POST", "/v1/projects/%s:getIamPolicy" % project, {})
        bindings = policy.get("bindings", [])
        for b in bindings:
            if b["role"] == role:
                b["members"].append(member)
                break
        else:
            bindings.append({"role": role, "members": [member]})
        self.ok("POST", "/v1/projects/%s:setIamPolicy" % project,
                {"policy": {"bindings": bindings, "etag": policy["etag"]}})


def role_user(role):
    return "r-%s@example.com" % role.split("/")[1].replace(".", "-").lower()


@pytest.fixture(scope="module")
def authd(tmp_path_factory):
    root = tmp_path_factory.mktemp("auth")
    data = root / "data"
    data.mkdir()
    d = Daemon(str(data), auth=True).start()
    assert d.token, "the bootstrap administrator token was not written"
    assert oct(os.stat(os.path.join(d.data_dir, "admin-token")).st_mode & 0o777) == "0o600"
    a = Auth(d)
    a.roles = {r["name"]: set(r["includedPermissions"]) for r in a.ok("GET", "/v1/roles")["roles"]}
    for role in a.roles:
        a.principal(role_user(role))
        a.grant(OWN, role, "user:" + role_user(role))
    a.principal("nobody@example.com")
    for bucket, project in ((OWN_BUCKET, OWN), (OTHER_BUCKET, OTHER)):
        a.ok("POST", "/storage/v1/b?project=" + project, {"name": bucket})
        # Non-empty: buckets.delete in the matrix is then refused (409), never performed.
        status, _ = d.request("POST", "/upload/storage/v1/b/%s/o?uploadType=media&name=keep" % bucket,
                              raw=b"keep")
        assert status == 200
    yield a
    d.stop()


def fill(pattern, scope, project, bucket):
    """A request path for a route pattern: its groups filled by the route's scope."""
    values = {"project": [project, "nojob"], "job": [project, "nojob"], "bucket": [bucket],
              "logEntries": [], "daemon": ["x@example.com"]}[scope]
    path = pattern.replace("\\$", "$")
    path = re.sub(r"\(resumable/\)\?", "", path)
    groups = re.findall(r"\([^)]*\)", path)
    for i, g in enumerate(groups):
        value = values[i] if i < len(values) else "us-central1"
        if "0-9a-f" in g:
            value = "0123456789abcdef"
        path = path.replace(g, value, 1)
    return path


def expected_allowed(a, role, permission, scope, own):
    if permission == "authenticated":
        return True
    if permission == "trainyard.admin":
        return False  # no predefined role administers the daemon
    return own and permission in a.roles[role]


def test_every_route_declares_a_permission(authd):
    table = authd.ok("GET", "/v1/help?format=json")
    assert table["routes"] and table["storageOperations"]
    for r in table["routes"]:
        assert r["permission"], "route %s %s declares no permission" % (r["method"], r["pattern"])


def test_permission_matrix_from_the_route_table(authd):
    d = authd.d
    table = authd.ok("GET", "/v1/help?format=json")
    checked = 0
    for r in table["routes"]:
        if r["permission"] == "public" and r["method"] == "POST":
            # The console's sign-in: public, it checks the body's token itself
            # (test_console.py covers it).
            assert r["pattern"] == "/console/session"
            status, _ = d.request("POST", "/console/session", {"token": "ty1.0.x"}, token="")
            assert status == 403  # without the console's header
            continue
        if r["permission"] == "public":
            assert r["method"] == "GET"
            path = fill(r["pattern"], r["scope"], OWN, OWN_BUCKET)
            assert d.get_status(path + ("?version=v1" if "$" in path else "")) == 200, path
            continue
        for own in (True, False):
            project, bucket = (OWN, OWN_BUCKET) if own else (OTHER, OTHER_BUCKET)
            path = fill(r["pattern"], r["scope"], project, bucket)
            body = {"resourceNames": ["projects/" + project]} if r["scope"] == "logEntries" else {}
            if r["method"] in ("GET", "DELETE"):
                body = None
            # No credential: 401 on every route that is not public.
            status, out = d.request(r["method"], path, body, token="")
            assert status == 401, (r["pattern"], status, out)
            assert out["error"]["status"] == "UNAUTHENTICATED"
            for role in authd.roles:
                token = authd.tokens[role_user(role)]
                status, out = d.request(r["method"], path, body, token=token)
                allowed = expected_allowed(authd, role, r["permission"], r["scope"], own)
                if allowed:
                    assert status not in (401, 403), (role, r["method"], path, status, out)
                else:
                    assert status == 403, (role, r["method"], path, status, out)
                    assert out["error"]["status"] == "PERMISSION_DENIED"
                    assert r["permission"] in out["error"]["message"]
                checked += 1
            # The administrator may do everything.
            status, out = d.request(r["method"], path, body)
            assert status not in (401, 403), ("admin", r["method"], path, status, out)
    assert checked > 40 * len(authd.roles)


def test_storage_matrix_from_the_operation_table(authd):
    d = authd.d
    ops = authd.ok("GET", "/v1/help?format=json")["storageOperations"]
    for op in ops:
        for own in (True, False):
            project, bucket = (OWN, OWN_BUCKET) if own else (OTHER, OTHER_BUCKET)
            path = op["example"].replace("BUCKET", bucket).replace("=P", "=" + project)
            body = None if op["method"] in ("GET", "DELETE") else {"name": "mx-" + bucket}
            status, out = d.request(op["method"], path, body, token="")
            assert status == 401, (op, status, out)
            for role in authd.roles:
                status, out = d.request(op["method"], path, body,
                                        token=authd.tokens[role_user(role)])
                perms = authd.roles[role]
                allowed = own and op["permission"] in perms and (
                    op["sourcePermission"] is None or op["sourcePermission"] in perms)
                if allowed:
                    assert status not in (401, 403), (role, op, status, out)
                else:
                    assert status == 403, (role, op, path, status, out)
                    assert out["error"]["errors"][0]["reason"] == "forbidden"


def submit(authd, job_id, token):
    d = authd.d
    pkg = make_package(os.path.join(d.data_dir, "..", "pkg-" + job_id),
                       "print('hello from', __name__)\n")
    sdist = build_sdist(pkg)
    with open(sdist, "rb") as f:
        status, out = d.request("POST", "/upload/storage/v1/b/%s/o?uploadType=media&name=%s" % (
            OWN_BUCKET, urllib.parse.quote("pkgs/%s/%s" % (job_id, os.path.basename(sdist)), safe="")),
            raw=f.read())
    assert status == 200, out
    body = job_body(job_id, "gs://%s/%s" % (OWN_BUCKET, out["name"]))
    return d.request("POST", "/v1/projects/%s/jobs" % OWN, body, token=token)


def test_creator_owns_the_job_and_job_level_grants(authd):
    d = authd.d
    dev = authd.tokens[role_user("roles/ml.developer")]
    viewer_token = authd.tokens[role_user("roles/ml.viewer")]
    nobody = authd.tokens["nobody@example.com"]
    status, job = submit(authd, "owned_job", dev)
    assert status == 200, job
    policy = authd.ok("GET", "/v1/projects/%s/jobs/owned_job:getIamPolicy" % OWN, token=dev)
    assert policy["bindings"] == [{"role": "roles/ml.jobOwner",
                                   "members": ["user:" + role_user("roles/ml.developer")]}]
    # ml.developer has no cancel on the project, but the creator owns the job (compat §13.3).
    tested = authd.ok("POST", "/v1/projects/%s/jobs/owned_job:testIamPermissions" % OWN,
                      {"permissions": ["ml.jobs.cancel", "ml.jobs.get"]}, token=dev)
    assert sorted(tested["permissions"]) == ["ml.jobs.cancel", "ml.jobs.get"]
    tested = authd.ok("POST", "/v1/projects/%s/jobs/owned_job:testIamPermissions" % OWN,
                      {"permissions": ["ml.jobs.cancel", "ml.jobs.get"]}, token=viewer_token)
    assert tested["permissions"] == ["ml.jobs.get"]
    # A job that does not exist: the empty set, not 404 (compat §5.1).
    assert authd.ok("POST", "/v1/projects/%s/jobs/none:testIamPermissions" % OWN,
                    {"permissions": ["ml.jobs.get"]}, token=dev) == {}
    # Someone without get cannot tell an existing job from a missing one.
    s1, e1 = d.request("GET", "/v1/projects/%s/jobs/owned_job" % OWN, token=nobody)
    s2, e2 = d.request("GET", "/v1/projects/%s/jobs/no_such_job" % OWN, token=nobody)
    assert s1 == s2 == 403
    assert e1["error"]["message"].replace("owned_job", "X") == \
        e2["error"]["message"].replace("no_such_job", "X")
    # With get, a missing job is 404.
    assert d.request("GET", "/v1/projects/%s/jobs/no_such_job" % OWN, token=dev)[0] == 404
    # A job-level grant: nobody may now read this job, and only this job.
    policy = authd.ok("GET", "/v1/projects/%s/jobs/owned_job:getIamPolicy" % OWN, token=dev)
    policy["bindings"].append({"role": "roles/ml.viewer", "members": ["user:nobody@example.com"]})
    new = authd.ok("POST", "/v1/projects/%s/jobs/owned_job:setIamPolicy" % OWN,
                   {"policy": policy}, token=dev)
    assert new["etag"] != policy["etag"]
    assert d.request("GET", "/v1/projects/%s/jobs/owned_job" % OWN, token=nobody)[0] == 200
    assert d.request("GET", "/v1/projects/%s/jobs" % OWN, token=nobody)[0] == 403
    # The etag race: a second write with the old etag is refused and changes nothing.
    status, out = d.request("POST", "/v1/projects/%s/jobs/owned_job:setIamPolicy" % OWN,
                            {"policy": {"bindings": [], "etag": policy["etag"]}}, token=dev)
    assert status == 409 and out["error"]["status"] == "ABORTED", out
    assert authd.ok("GET", "/v1/projects/%s/jobs/owned_job:getIamPolicy" % OWN,
                    token=dev)["etag"] == new["etag"]
    # Another developer may not cancel it or change its policy.
    other = authd.principal("dev2@example.com")
    authd.grant(OWN, "roles/ml.developer", "user:dev2@example.com")
    assert d.request("POST", "/v1/projects/%s/jobs/owned_job:cancel" % OWN, {}, token=other)[0] == 403
    assert d.request("POST", "/v1/projects/%s/jobs/owned_job:setIamPolicy" % OWN,
                     {"policy": {"bindings": []}}, token=other)[0] == 403
    assert d.request("POST", "/v1/projects/%s/jobs/owned_job:cancel" % OWN, {}, token=dev)[0] == 200


def test_bad_credentials_are_401_and_never_crash(authd):
    d = authd.d
    path = "/v1/projects/%s/jobs" % OWN
    good = authd.tokens[role_user("roles/ml.viewer")]
    for bad in ["garbage", "ty1.0123456789abcdef.short", good[:-1] + ("A" if good[-1] != "A" else "B"),
                "ty1." + "g" * 16 + "." + "a" * 43, "x" * 5000, "\u00e9t\u00e9"]:
        status, out = d.request("GET", path, token=bad.encode("utf-8").decode("latin-1"))
        assert status == 401, (bad[:40], status, out)
        assert good not in json.dumps(out)
    status, out = d.request("GET", path, headers={"Authorization": "Basic dXNlcjpwYXNz"})
    assert status == 401
    # A header far over the limit is refused before routing; the daemon keeps serving.
    status, _ = d.request("GET", path, headers={"Authorization": "Bearer " + "a" * 100000})
    assert status in (400, 431)
    assert d.get_status("/healthz") == 200
    # ?access_token= works like the header (googleapiclient may send it).
    assert d.request("GET", path + "?access_token=" + good, token="")[0] == 200


def test_expired_revoked_and_disabled(authd):
    d = authd.d
    authd.ok("POST", "/v1/admin/principals", {"email": "temp@example.com"})
    authd.grant(OWN, "roles/ml.viewer", "user:temp@example.com")
    short = authd.ok("POST", "/v1/admin/principals/temp@example.com/tokens", {"ttl": "1s"})
    path = "/v1/projects/%s/jobs" % OWN
    wait_for(lambda: d.request("GET", path, token=short["token"])[0] == 401, timeout=10,
             what="the 1s token to expire")
    assert "expired" in d.request("GET", path, token=short["token"])[1]["error"]["message"]
    live = authd.ok("POST", "/v1/admin/principals/temp@example.com/tokens", {})
    assert d.request("GET", path, token=live["token"])[0] == 200
    authd.ok("POST", "/v1/admin/tokens/%s:revoke" % live["id"], {})
    status, out = d.request("GET", path, token=live["token"])
    assert status == 401 and "revoked" in out["error"]["message"]
    again = authd.ok("POST", "/v1/admin/principals/temp@example.com/tokens", {})
    authd.ok("POST", "/v1/admin/principals/temp@example.com:disable", {})
    assert d.request("GET", path, token=again["token"])[0] == 401
    authd.ok("POST", "/v1/admin/principals/temp@example.com:enable", {})
    assert d.request("GET", path, token=again["token"])[0] == 200
    # Tokens are listed by id, never with their secret.
    listed = authd.ok("GET", "/v1/admin/principals/temp@example.com/tokens")["tokens"]
    assert len(listed) == 3 and all("token" not in t for t in listed)
    assert again["token"] not in open(os.path.join(d.data_dir, "daemon.log")).read()


def test_bad_policies_name_the_field_and_change_nothing(authd):
    d = authd.d
    before = authd.ok("POST", "/v1/projects/%s:getIamPolicy" % OWN, {})
    cases = [
        ({"policy": {"bindings": [{"role": "roles/ml.wizard", "members": ["user:a@x.io"]}]}},
         "policy.bindings[0].role"),
        ({"policy": {"bindings": [{"role": "roles/ml.viewer", "members": ["alice"]}]}},
         "policy.bindings[0].members[0]"),
        ({"policy": {"bindings": [{"role": "roles/ml.viewer", "members": ["group:g@x.io"]}]}},
         "policy.bindings[0].members[0]"),
        ({"policy": {"bindings": "x"}}, "policy.bindings"),
        ({"policy": {}, "updateMask": "owners"}, "updateMask"),
        ({"policy": {"bindings": [], "version": 7}}, "policy.version"),
        ({"bindings": []}, "bindings"),
    ]
    for body, field in cases:
        status, out = d.request("POST", "/v1/projects/%s:setIamPolicy" % OWN, body)
        assert status == 400, (body, out)
        fields = [v["field"] for det in out["error"].get("details", [])
                  for v in det.get("fieldViolations", [])]
        assert field in fields, (body, out)
    status, out = d.request("POST", "/v1/projects/%s:setIamPolicy" % OWN, raw=b"{not json")
    assert status == 400
    assert authd.ok("POST", "/v1/projects/%s:getIamPolicy" % OWN, {}) == before
    # Bad principals and tokens.
    assert d.request("POST", "/v1/admin/principals", {"email": "not-an-email"})[0] == 400
    assert d.request("POST", "/v1/admin/principals", {"email": "a@b.io", "kind": "robot"})[0] == 400
    assert d.request("POST", "/v1/admin/principals/nobody@example.com/tokens",
                     {"ttl": "-5s"})[0] == 400
    assert d.request("POST", "/v1/admin/tokens/0123456789abcdef:revoke", {})[0] == 404


def test_bucket_policies(authd):
    d = authd.d
    authd.principal("reader@example.com")
    tok = authd.tokens["reader@example.com"]
    obj = "/storage/v1/b/%s/o/keep?alt=media" % OWN_BUCKET
    assert d.request("GET", obj, token=tok)[0] == 403
    policy = authd.ok("GET", "/storage/v1/b/%s/iam" % OWN_BUCKET)
    assert policy["kind"] == "storage#policy"
    policy["bindings"] = [{"role": "roles/storage.objectViewer",
                           "members": ["user:reader@example.com"]}]
    authd.ok("PUT", "/storage/v1/b/%s/iam" % OWN_BUCKET, policy)
    status, _ = d.request("GET", "/storage/v1/b/%s/o/keep" % OWN_BUCKET, token=tok)
    assert status == 200
    assert d.request("GET", "/storage/v1/b/%s/o/keep" % OTHER_BUCKET, token=tok)[0] == 403
    assert d.request("DELETE", "/storage/v1/b/%s/o/keep" % OWN_BUCKET, token=tok)[0] == 403
    perms = authd.ok("GET", "/storage/v1/b/%s/iam/testPermissions?permissions=storage.objects.get"
                     "&permissions=storage.objects.delete" % OWN_BUCKET, token=tok)
    assert perms["permissions"] == ["storage.objects.get"]
    status, out = d.request("PUT", "/storage/v1/b/%s/iam" % OWN_BUCKET,
                            {"bindings": [{"role": "roles/ml.jobOwner", "members": ["user:a@b.io"]}]})
    assert status == 400 and "cannot be granted on a bucket" in out["error"]["message"]


def test_projects_config_locations_operations(authd):
    viewer = authd.tokens[role_user("roles/ml.viewer")]
    cfg = authd.ok("GET", "/v1/projects/%s:getConfig" % OWN, token=viewer)
    assert cfg["serviceAccount"].endswith("@cloud-ml.google.com.iam.gserviceaccount.com")
    assert cfg["serviceAccount"] == "service-%s@cloud-ml.google.com.iam.gserviceaccount.com" % \
        cfg["serviceAccountProject"]
    locs = authd.ok("GET", "/v1/projects/%s/locations" % OWN, token=viewer)["locations"]
    assert "projects/%s/locations/us-central1" % OWN in [l["name"] for l in locs]
    assert all(l["capabilities"][0]["type"] == "TRAINING" for l in locs)
    one = authd.ok("GET", "/v1/projects/%s/locations/europe-west4" % OWN, token=viewer)
    assert one["name"].endswith("/europe-west4")
    assert authd.d.request("GET", "/v1/projects/%s/locations/mars-1" % OWN, token=viewer)[0] == 404
    assert authd.ok("GET", "/v1/projects/%s/operations" % OWN, token=viewer) == {}
    assert authd.d.request("GET", "/v1/projects/%s/operations/op1" % OWN, token=viewer)[0] == 404


def test_audit_log_through_the_logging_api_and_cli(authd):
    d = authd.d
    dev = authd.tokens[role_user("roles/ml.developer")]
    d.request("POST", "/v1/projects/%s/jobs/nojob:cancel" % OWN, {}, token=dev)  # denied
    body = {"resourceNames": ["projects/" + OWN],
            "filter": 'logName="projects/%s/logs/cloudaudit.googleapis.com%%2Factivity"' % OWN}
    entries = []
    while True:
        page = authd.ok("POST", "/v2/entries:list", body,
                        token=authd.tokens[role_user("roles/logging.viewer")])
        entries += page["entries"]
        if not page.get("nextPageToken"):
            break
        body["pageToken"] = page["nextPageToken"]
    body.pop("pageToken")
    methods = [(e["protoPayload"]["authenticationInfo"]["principalEmail"],
                e["protoPayload"]["methodName"], e["protoPayload"]["status"]["code"])
               for e in entries]
    assert ("admin@trainyard.local", "cloudresourcemanager.projects.setIamPolicy", 0) in methods
    assert (role_user("roles/ml.developer"), "ml.projects.jobs.cancel", 7) in methods
    assert all(e["logName"].endswith("cloudaudit.googleapis.com%2Factivity") for e in entries)
    # Other projects' records stay there; reading needs logging.logEntries.list.
    assert all(e["resource"]["labels"]["project_id"] == OWN for e in entries)
    assert d.request("POST", "/v2/entries:list", body, token=dev)[0] == 403
    # The CLI prints the daemon-wide log.
    p = d.cli("admin", "audit", "--filter-project", OWN)
    assert "ml.projects.jobs.cancel" in p.stdout


def test_cli_admin_commands(authd, tmp_path):
    d = authd.d
    d.cli("admin", "principals", "create", "cli-user@example.com", "--description", "from cli")
    out = d.cli("admin", "principals", "list").stdout
    assert "cli-user@example.com" in out
    token_file = str(tmp_path / "tok")
    d.cli("admin", "tokens", "create", "cli-user@example.com", "--ttl", "2h",
          "--output-file", token_file)
    assert oct(os.stat(token_file).st_mode & 0o777) == "0o600"
    d.cli("admin", "projects", "add-iam-policy-binding", OWN, "--member",
          "user:cli-user@example.com", "--role", "roles/ml.viewer")
    env = {"TRAINYARD_TOKEN": ""}
    p = d.cli("--token-file", token_file, "--project", OWN, "ai-platform", "jobs", "list",
              env_extra=env)
    assert p.returncode == 0
    p = d.cli("--token-file", token_file, "--project", OTHER, "ai-platform", "jobs", "list",
              env_extra=env, check=False)
    assert p.returncode == 1 and "PERMISSION_DENIED" in p.stderr
    p = d.cli("--project", OWN, "ai-platform", "jobs", "list", env_extra=env, check=False)
    assert p.returncode == 1 and "UNAUTHENTICATED" in p.stderr and "--token-file" in p.stderr
    # The CLI's config file.
    conf = tmp_path / "cli.conf"
    conf.write_text("[default]\ntoken_file = %s\nproject = %s\n" % (token_file, OWN))
    p = d.cli("ai-platform", "jobs", "list", env_extra=dict(env, TRAINYARD_CLI_CONFIG=str(conf),
                                                            TRAINYARD_PROJECT=""))
    assert p.returncode == 0
    who = json.loads(d.cli("--token-file", token_file, "admin", "whoami", env_extra=env).stdout)
    assert who["email"] == "cli-user@example.com"
    d.cli("admin", "projects", "remove-iam-policy-binding", OWN, "--member",
          "user:cli-user@example.com", "--role", "roles/ml.viewer")
    p = d.cli("--token-file", token_file, "--project", OWN, "ai-platform", "jobs", "list",
              env_extra=env, check=False)
    assert p.returncode == 1 and "PERMISSION_DENIED" in p.stderr
    tokens = d.cli("admin", "tokens", "list", "cli-user@example.com").stdout
    token_id = tokens.splitlines()[1].split()[0]
    d.cli("admin", "tokens", "revoke", token_id)
    p = d.cli("--token-file", token_file, "admin", "whoami", env_extra=env, check=False)
    assert "UNAUTHENTICATED" in p.stderr


def test_listener_rules(tmp_path):
    """Authentication off only on loopback; on, plain HTTP only on loopback unless allowed."""
    data = tmp_path / "d"
    data.mkdir()
    for auth, extra, refused in (("false", "", True), ("true", "", True),
                                 ("true", "allow_insecure_http: true\n", False)):
        cfg = tmp_path / "c.yaml"
        cfg.write_text("auth: %s\n%s" % (auth, extra))
        p = subprocess.Popen([os.path.join(BIN, "trainyardd"), "--listen", "0.0.0.0:0",
                              "--data-dir", str(data), "--config", str(cfg)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = p.stdout.readline()
            if refused:
                assert p.wait(timeout=30) != 0
                err = p.stderr.read()
                assert "refusing to listen on 0.0.0.0" in err, err
            else:
                assert line.startswith("listening on "), line
        finally:
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=30)


SA_TRAINER = r"""
import os, sys, urllib.request
host, token = os.environ["STORAGE_EMULATOR_HOST"], os.environ["TRAINYARD_JOB_TOKEN"]
for bucket in sys.argv[1:]:
    req = urllib.request.Request(
        "%s/upload/storage/v1/b/%s/o?uploadType=media&name=from-job" % (host, bucket),
        data=b"written by the job", method="POST", headers={"Authorization": "Bearer " + token})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            print("WRITE %s %d" % (bucket, r.status))
    except urllib.error.HTTPError as e:
        print("WRITE %s %d" % (bucket, e.code))
"""


def test_a_job_runs_as_its_service_account(authd):
    d = authd.d
    sa = "trainer@own-proj.iam.example.com"
    granted, own_other = "sa-granted-bkt", "sa-not-granted-bkt"
    authd.ok("POST", "/v1/admin/principals", {"email": sa, "kind": "serviceAccount"})
    for bucket, project in ((granted, OTHER), (own_other, OWN)):
        authd.ok("POST", "/storage/v1/b?project=" + project, {"name": bucket})
    policy = authd.ok("GET", "/storage/v1/b/%s/iam" % granted)
    policy["bindings"] = [{"role": "roles/storage.objectAdmin", "members": ["serviceAccount:" + sa]}]
    authd.ok("PUT", "/storage/v1/b/%s/iam" % granted, policy)
    pkg = make_package(os.path.join(d.data_dir, "..", "pkg-sa"), SA_TRAINER)
    with open(build_sdist(pkg), "rb") as f:
        status, up = d.request("POST", "/upload/storage/v1/b/%s/o?uploadType=media&name=pkgs%%2Fsa"
                               "%%2Ftrainer-0.1.tar.gz" % OWN_BUCKET, raw=f.read())
    assert status == 200, up
    uri = "gs://%s/%s" % (OWN_BUCKET, up["name"])
    jobs = "/v1/projects/%s/jobs" % OWN
    dev = authd.tokens[role_user("roles/ml.developer")]
    # An account that is not a Trainyard service account: 400 naming the field.
    body = job_body("sa_job", uri, [granted, own_other], serviceAccount="ghost@x.iam.example.com")
    status, out = d.request("POST", jobs, body, token=dev)
    assert status == 400 and "trainingInput.serviceAccount" in json.dumps(out), out
    # Acting as the account needs iam.serviceAccounts.actAs (roles/iam.serviceAccountUser).
    body = job_body("sa_job", uri, [granted, own_other], serviceAccount=sa)
    status, out = d.request("POST", jobs, body, token=dev)
    assert status == 403 and "iam.serviceAccounts.actAs" in out["error"]["message"], out
    assert d.request("GET", jobs + "/sa_job", token=dev)[0] == 404  # nothing was created
    authd.grant(OWN, "roles/iam.serviceAccountUser", "user:" + role_user("roles/ml.developer"))
    status, out = d.request("POST", jobs, body, token=dev)
    assert status == 200, out
    job = d.wait_state("sa_job", ("SUCCEEDED", "FAILED"), project=OWN, timeout=300)
    lines = [e["jsonPayload"]["message"] for e in d.logs("sa_job", project=OWN)]
    assert job["state"] == "SUCCEEDED", (job, lines[-20:])
    # The job's credential holds what the policies grant the account: the granted bucket of
    # another project, and not a bucket of its own project that grants it nothing.
    assert "WRITE %s 200" % granted in lines, lines
    assert "WRITE %s 403" % own_other in lines, lines
