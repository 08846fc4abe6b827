"""Unit tests of python/hypertune, Trainyard's cloudml-hypertune (compat §7).

Run with Debian's Python: /usr/bin/python3 -m pytest -q tests/python/test_hypertune.py
"""

import ast
import json
import os
import subprocess
import sys
import threading

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_DIR = os.path.join(REPO, "python")
sys.path.insert(0, PYTHON_DIR)

import hypertune  # noqa: E402  (from PYTHON_DIR)

DEFAULT_TAG = "training/hptuning/metric"


@pytest.fixture
def metric_file(tmp_path, monkeypatch):
    """CLOUD_ML_HP_METRIC_FILE in a directory that does not exist yet; no trial id."""
    path = tmp_path / "trial" / "replica" / "output.metrics"
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", str(path))
    monkeypatch.delenv("CLOUD_ML_TRIAL_ID", raising=False)
    return path


def read_lines(path):
    with open(str(path)) as f:
        return f.read().splitlines()


def read_records(path):
    return [json.loads(line) for line in read_lines(path)]


def test_public_api_matches_cloudml_hypertune():
    assert hypertune.HyperTune is hypertune.hypertune.HyperTune  # hypertune/hypertune.py layout
    from hypertune import HyperTune  # noqa: F401
    import inspect
    sig = inspect.signature(hypertune.HyperTune.report_hyperparameter_tuning_metric)
    assert list(sig.parameters) == ["self", "hyperparameter_metric_tag", "metric_value",
                                    "global_step", "checkpoint_path"]
    assert sig.parameters["global_step"].default is None
    assert sig.parameters["checkpoint_path"].default == ""


def test_one_report_is_one_sorted_json_line_of_strings(metric_file):
    hpt = hypertune.HyperTune()
    hpt.report_hyperparameter_tuning_metric(hyperparameter_metric_tag="my_metric_tag",
                                            metric_value=0.987, global_step=1000)
    lines = read_lines(metric_file)
    assert len(lines) == 1
    record = json.loads(lines[0])
    # Byte-exact: json.dumps with sort_keys (default separators), as cloudml-hypertune writes.
    assert lines[0] == json.dumps(record, sort_keys=True)
    assert list(record) == sorted(record)
    assert sorted(record) == ["checkpoint_path", "global_step", "my_metric_tag", "timestamp",
                              "trial"]
    assert record["my_metric_tag"] == "0.987"
    assert record["global_step"] == "1000"
    assert record["trial"] == "0"
    assert record["checkpoint_path"] == ""
    assert isinstance(record["timestamp"], float)
    assert abs(record["timestamp"] - __import__("time").time()) < 60
    with open(str(metric_file)) as f:
        assert f.read().endswith("}\n")


def test_values_are_converted_as_the_original_library_does(metric_file):
    hpt = hypertune.HyperTune()
    hpt.report_hyperparameter_tuning_metric("acc", 1)                   # int metric
    hpt.report_hyperparameter_tuning_metric("acc", "0.5", global_step=0)  # numeric string
    hpt.report_hyperparameter_tuning_metric("acc", 2.5, global_step=12.9)  # float step
    hpt.report_hyperparameter_tuning_metric("acc", 3, global_step="7", checkpoint_path="gs://b/c")
    records = read_records(metric_file)
    assert [r["acc"] for r in records] == ["1.0", "0.5", "2.5", "3.0"]
    assert [r["global_step"] for r in records] == ["0", "0", "12", "7"]
    assert [r["checkpoint_path"] for r in records] == ["", "", "", "gs://b/c"]
    stamps = [r["timestamp"] for r in records]
    assert stamps == sorted(stamps)  # oldest first


def test_a_non_numeric_metric_is_refused(metric_file):
    hpt = hypertune.HyperTune()
    with pytest.raises(ValueError):
        hpt.report_hyperparameter_tuning_metric("acc", "high")


def test_the_file_keeps_only_the_last_100_reports(metric_file):
    hpt = hypertune.HyperTune()
    for step in range(200):
        hpt.report_hyperparameter_tuning_metric("loss", step / 10.0, global_step=step)
        if step == 50:
            assert len(read_lines(metric_file)) == 51  # whole history until the cap
    records = read_records(metric_file)
    assert len(records) == 100
    assert [int(r["global_step"]) for r in records] == list(range(100, 200))
    assert [r["loss"] for r in records] == [str(s / 10.0) for s in range(100, 200)]


def test_defaults_without_environment(monkeypatch):
    monkeypatch.delenv("CLOUD_ML_HP_METRIC_FILE", raising=False)
    monkeypatch.delenv("CLOUD_ML_TRIAL_ID", raising=False)
    hpt = hypertune.HyperTune()
    assert hpt.metric_path == "/tmp/hypertune/output.metrics"
    assert os.path.isdir("/tmp/hypertune")  # the constructor creates the parent directory
    assert hpt.trial_id == 0
    # An empty variable counts as unset for the path (an empty path could not be written).
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", "")
    assert hypertune.HyperTune().metric_path == "/tmp/hypertune/output.metrics"


def test_environment_sets_path_and_trial(metric_file, monkeypatch):
    monkeypatch.setenv("CLOUD_ML_TRIAL_ID", "7")
    assert not metric_file.parent.exists()
    hpt = hypertune.HyperTune()
    assert metric_file.parent.is_dir()  # created at construction, before any report
    assert hpt.metric_path == str(metric_file)
    assert hpt.trial_id == "7"
    hpt.report_hyperparameter_tuning_metric("acc", 0.5, global_step=3)
    assert read_records(metric_file)[0]["trial"] == "7"


@pytest.mark.parametrize("tag", [None, ""])
def test_a_falsy_tag_means_the_default_tag(metric_file, tag):
    hypertune.HyperTune().report_hyperparameter_tuning_metric(tag, 0.25, global_step=5)
    record = read_records(metric_file)[0]
    assert record[DEFAULT_TAG] == "0.25"
    assert sorted(record) == sorted(["checkpoint_path", "global_step", DEFAULT_TAG, "timestamp",
                                     "trial"])


def test_each_report_rewrites_the_whole_file(metric_file):
    first = hypertune.HyperTune()
    first.report_hyperparameter_tuning_metric("acc", 0.1, global_step=1)
    first.report_hyperparameter_tuning_metric("acc", 0.2, global_step=2)
    assert len(read_lines(metric_file)) == 2
    # A new HyperTune starts an empty history and rewrites the file with it (mode 'w' in the
    # original), rather than appending to what an earlier object wrote.
    second = hypertune.HyperTune()
    second.report_hyperparameter_tuning_metric("acc", 0.9, global_step=10)
    records = read_records(metric_file)
    assert [(r["global_step"], r["acc"]) for r in records] == [("10", "0.9")]


def test_no_temporary_files_are_left_behind(metric_file):
    hpt = hypertune.HyperTune()
    for step in range(5):
        hpt.report_hyperparameter_tuning_metric("acc", step, global_step=step)
    assert os.listdir(str(metric_file.parent)) == ["output.metrics"]


def test_file_mode_is_what_open_w_gives(metric_file):
    old = os.umask(0o022)
    try:
        hypertune.HyperTune().report_hyperparameter_tuning_metric("acc", 1, global_step=1)
    finally:
        os.umask(old)
    assert os.stat(str(metric_file)).st_mode & 0o777 == 0o644


def test_a_concurrent_reader_never_sees_a_partial_file(metric_file):
    """The deliberate difference: the file is replaced by a rename, never truncated in place,
    so the daemon reading it during the trial sees complete lines only."""
    hpt = hypertune.HyperTune()
    hpt.report_hyperparameter_tuning_metric("acc", 0, global_step=0)
    done = threading.Event()
    bad = []

    def reader():
        while not done.is_set():
            with open(str(metric_file)) as f:
                text = f.read()
            lines = text.splitlines()
            if not text.endswith("\n") or not 1 <= len(lines) <= 100:
                bad.append(text)
                continue
            try:
                [json.loads(line) for line in lines]
            except ValueError:
                bad.append(text)

    t = threading.Thread(target=reader)
    t.start()
    try:
        for step in range(1, 400):
            hpt.report_hyperparameter_tuning_metric("acc", step * 1.5, global_step=step,
                                                    checkpoint_path="x" * 200)
    finally:
        done.set()
        t.join()
    assert not bad, bad[:1]
    assert [int(r["global_step"]) for r in read_records(metric_file)] == list(range(300, 400))


def test_falls_back_to_rewriting_in_place(metric_file, monkeypatch):
    """When no temporary file can be made beside the metric file (a directory the trial may not
    write, only the file), the file is rewritten in place as the original library does."""
    real_open = os.open

    def refuse_temporaries(path, *args, **kwargs):
        if str(path).endswith(".tmp"):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, *args, **kwargs)

    hpt = hypertune.HyperTune()
    monkeypatch.setattr(os, "open", refuse_temporaries)
    hpt.report_hyperparameter_tuning_metric("acc", 0.5, global_step=1)
    hpt.report_hyperparameter_tuning_metric("acc", 0.6, global_step=2)
    assert [r["acc"] for r in read_records(metric_file)] == ["0.5", "0.6"]


def test_works_from_a_fresh_interpreter(metric_file, tmp_path):
    """As a trainer uses it: the package found through PYTHONPATH, the environment read at
    construction."""
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, CLOUD_ML_TRIAL_ID="3",
               CLOUD_ML_HP_METRIC_FILE=str(metric_file), PYTHONDONTWRITEBYTECODE="1")
    code = ("import hypertune\n"
            "h = hypertune.HyperTune()\n"
            "for s in range(1, 4):\n"
            "    h.report_hyperparameter_tuning_metric(hyperparameter_metric_tag='acc',\n"
            "        metric_value=s / 4, global_step=s * 100)\n")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=str(tmp_path))
    records = read_records(metric_file)
    assert [(r["trial"], r["global_step"], r["acc"]) for r in records] == [
        ("3", "100", "0.25"), ("3", "200", "0.5"), ("3", "300", "0.75")]


@pytest.mark.parametrize("name", ["__init__.py", "hypertune.py"])
def test_sources_are_python_3_7_syntax(name):
    """Trainers may run on older Pythons than the one running this test."""
    path = os.path.join(PYTHON_DIR, "hypertune", name)
    with open(path) as f:
        source = f.read()
    ast.parse(source, filename=path, feature_version=(3, 7))
    tree = ast.parse(source)
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    stdlib = set(getattr(sys, "stdlib_module_names", ())) or {
        "collections", "json", "os", "threading", "time"}
    assert imported <= stdlib, imported - stdlib
