"""Unit tests of python/trainyard_algorithms (docs/builtin-algorithms.md): arguments, the CSV
rules, the automatic preprocessing, the metric reports and the FTRL update, without a daemon.

Run with Debian's Python: /usr/bin/python3 -m pytest -q tests/python/test_builtin_algorithms.py
"""

import json
import os
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))

from trainyard_algorithms import common, nn_common, xgb_common  # noqa: E402


def where(n, name="f.csv"):
    return [(name, i + 1) for i in range(n)]


def test_unknown_and_bad_arguments_name_the_argument():
    p = common.ArgumentParser("boosted_trees")
    common.add_data_arguments(p)
    xgb_common.add_xgboost_arguments(p)
    base = ["--job-dir", "/tmp/x", "--training_data_path", "a.csv", "--objective", "reg:linear"]
    args = p.parse(base + ["--max_depth=3", "--preprocess"])
    assert args.max_depth == 3 and args.preprocess is True and args.num_boost_round == 10
    with pytest.raises(common.AlgorithmError, match="Unknown argument --max_dept"):
        p.parse(base + ["--max_dept=3"])
    with pytest.raises(common.AlgorithmError, match="Unknown argument --max_dep"):
        p.parse(base + ["--max_dep", "3"])  # no abbreviations
    with pytest.raises(common.AlgorithmError, match="argument --eta: invalid float value"):
        p.parse(base + ["--eta", "fast"])
    with pytest.raises(common.AlgorithmError, match="required: --objective"):
        p.parse(base[:4])


def test_objective_metrics_and_splits_are_checked():
    ns = lambda **kw: type("A", (), dict(dict(objective="binary:logistic", booster="gbtree",  # noqa
                                              num_class=None, eval_metric=None), **kw))()
    assert xgb_common.check_objective(ns()) == ["error"]
    assert xgb_common.check_objective(ns(eval_metric="auc,logloss")) == ["auc", "logloss"]
    a = ns(objective="reg:linear")
    assert xgb_common.check_objective(a) == ["rmse"] and a.objective == "reg:squarederror"
    with pytest.raises(common.AlgorithmError, match="--num_class is required"):
        xgb_common.check_objective(ns(objective="multi:softmax"))
    with pytest.raises(common.AlgorithmError, match="--eval_metric accuracy"):
        xgb_common.check_objective(ns(eval_metric="accuracy"))
    s = lambda **kw: type("S", (), dict(dict(preprocess=True, validation_split=None,  # noqa
                                             test_split=None, validation_data_path=None,
                                             test_data_path=None), **kw))()
    assert common.check_splits(s()) == (0.20, 0.20)
    assert common.check_splits(s(validation_data_path="v.csv")) == (0.0, 0.20)
    with pytest.raises(common.AlgorithmError, match="at most 0.40"):
        common.check_splits(s(validation_split=0.3))
    with pytest.raises(common.AlgorithmError, match="needs --preprocess"):
        common.check_splits(s(preprocess=False, test_split=0.1))


def test_csv_rules(tmp_path):
    f = tmp_path / "d.csv"
    f.write_text("1, 2 ,3\n\n4,5,6\n")
    rows, w = common.read_csv(str(f), "training_data_path")
    assert rows == [["1", "2", "3"], ["4", "5", "6"]] and w == [(str(f), 1), (str(f), 3)]
    f.write_text("1,2,3\n4,5\n")
    with pytest.raises(common.AlgorithmError, match="row 2 of .* has 2 columns; the rows before "
                       "it have 3"):
        common.read_csv(str(f), "training_data_path")
    f.write_bytes(b"1,2\n\xff\xfe,3\n")
    with pytest.raises(common.AlgorithmError, match="is not UTF-8"):
        common.read_csv(str(f), "training_data_path")
    f.write_text("7\n")
    with pytest.raises(common.AlgorithmError, match="at least one feature"):
        common.read_csv(str(f), "training_data_path")
    with pytest.raises(common.AlgorithmError, match="does not exist"):
        common.expand_paths(str(tmp_path / "nope.csv"), "training_data_path")
    # Sharding keeps every world-th row.
    f.write_text("".join("%d,1\n" % i for i in range(7)))
    rows, _ = common.read_csv(str(f), "x", shard=(1, 3))
    assert [r[0] for r in rows] == ["1", "4"]


def test_gs_paths_are_the_bucket_store(monkeypatch):
    monkeypatch.setenv("TRAINYARD_BUCKETS_DIR", "/data/buckets")
    assert common.local_path("gs://b/x/y.csv") == "/data/buckets/b/x/y.csv"
    assert common.local_path("file:///tmp/a") == "/tmp/a"
    monkeypatch.setenv("CLOUD_ML_TRIAL_ID", "4")
    assert common.output_dir("gs://b/out/") == "gs://b/out/4"


def test_preprocessing_drops_fills_encodes_and_splits():
    rows = [["1", "0.5", "red", "2"], ["0", "", "blue", "4"], ["1", "1.5", "red", ""],
            ["0", "", "", "6"]] + [["1", "1", "green", "1"]] * 16
    # Row 2 misses 1 of 4 values (25%): dropped, as is row 4 (2 of 4); row 3 too (25%).
    kept, kept_where, dropped = common.drop_incomplete_rows(rows, where(len(rows)))
    assert dropped == 3 and kept[0] == ["1", "0.5", "red", "2"] and len(kept) == 17
    pre = common.Preprocessor(classification=True).fit(
        [["1", "0.5", "red", "2"], ["0", "", "blue", "4"], ["1", "1.5", "red", "x"]], where(3))
    assert [c["type"] for c in pre.columns] == ["numeric", "categorical", "categorical"]
    assert pre.columns[0]["mean"] == 1.0  # blanks are not counted
    assert pre.columns[1]["vocabulary"] == ["red", "blue"]  # most frequent first
    assert pre.classes == ["0", "1"]
    test = [["0", "", "blue", "2"], ["1", "3", "purple", "x"]]
    assert pre.dense(test).tolist() == [[1.0], [3.0]]  # blank -> the training mean
    assert pre.ids(test)[:, 0].tolist() == [2, 0]  # unseen -> 0
    assert pre.one_hot(test)[:, 1:3].tolist() == [[0, 1], [0, 0]]
    assert pre.labels(test, where(2), "x").tolist() == [0.0, 1.0]
    with pytest.raises(common.AlgorithmError, match="row 1 of f.csv has the target '2', which is "
                       "not a class"):
        pre.labels([["2", "1", "red", "2"]], where(1), "x")
    (tr, _), (va, _), (te, _) = common.split(kept, kept_where, 0.2, 0.2)
    assert (len(tr), len(va), len(te)) == (11, 3, 3)  # round(17 x 0.2) = 3
    assert sorted(map(tuple, tr + va + te)) == sorted(map(tuple, kept))


def test_regression_target_must_be_numeric():
    pre = common.Preprocessor(classification=False, objective_hint="--objective reg:gamma")
    with pytest.raises(common.AlgorithmError, match="row 2 of f.csv: the target .* is 'high', not "
                       "a number; --objective reg:gamma needs a numeric target"):
        pre.fit([["1", "2"], ["high", "3"]], where(2))
    with pytest.raises(common.AlgorithmError, match="a header row"):
        common.numeric_matrix([["price", "size"], ["1", "2"]], where(2), "x", True)
    m = common.numeric_matrix([["1", ""], ["2", "3"]], where(2), "x", allow_missing=True)
    assert np.isnan(m[0, 1]) and m[1, 1] == 3.0


def test_memory_check_refuses_what_cannot_fit(tmp_path, monkeypatch):
    f = tmp_path / "big.csv"
    with open(f, "wb") as out:
        out.truncate(1 << 30)
    monkeypatch.setattr(common, "available_memory", lambda: 4 << 30)
    with pytest.raises(common.AlgorithmError, match="does not fit this replica's memory"):
        common.check_fits([str(f)])
    common.check_fits([str(f)], replica_share=0.25)  # a quarter of it fits


def test_reporter_reports_the_trials_tag_or_the_first_metric(tmp_path, monkeypatch):
    path = tmp_path / "m"
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", str(path))
    monkeypatch.setenv("CLOUD_ML_TRIAL_ID", "3")
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_TAG", "auc")
    common.Reporter(["error", "auc"]).report({"error": 0.1, "auc": 0.9}, 5)
    rec = json.loads(path.read_text().splitlines()[-1])
    assert rec["auc"] == "0.9" and "error" not in rec and rec["global_step"] == "5"
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_TAG", "training/hptuning/metric")
    common.Reporter(["error", "auc"]).report({"error": 0.1, "auc": 0.9}, 6)
    rec = json.loads(path.read_text().splitlines()[-1])
    assert rec["training/hptuning/metric"] == "0.1"
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_TAG", "accuracy")
    with pytest.raises(common.AlgorithmError, match="'accuracy' is not a metric of this "
                       "algorithm; it reports error, auc"):
        common.Reporter(["error", "auc"])


def test_ftrl_follows_tensorflows_update_rule():
    import torch
    w = torch.nn.Parameter(torch.tensor([0.0, 0.0]))
    opt = nn_common.make_ftrl(torch)([w], lr=0.5, lr_power=-0.5, init_acc=0.1, l1=0.05, l2=0.1,
                                     l2_shrinkage=0.0)
    n, z, wv = np.array([0.1, 0.1]), np.zeros(2), np.zeros(2)
    for g in ([1.0, 0.01], [-0.5, 0.02], [0.3, -0.04]):
        w.grad = torch.tensor(g)
        opt.step()
        g = np.array(g)
        n_new = n + g * g
        z = z + g - (np.sqrt(n_new) - np.sqrt(n)) / 0.5 * wv
        n = n_new
        wv = np.where(np.abs(z) > 0.05, (np.sign(z) * 0.05 - z) / (np.sqrt(n) / 0.5 + 0.2), 0.0)
        assert np.allclose(w.detach().numpy(), wv), (w, wv)
    assert w.detach().numpy()[1] == 0.0  # L1 keeps the small coordinate at zero


def test_auc_counts_ties_half():
    assert nn_common.auc(np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 0, 1, 1]) == 1) == 0.75
    assert nn_common.auc(np.array([0.5, 0.5]), np.array([0, 1]) == 1) == 0.5
