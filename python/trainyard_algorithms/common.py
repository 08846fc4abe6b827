"""What every built-in algorithm shares: arguments, paths, reading the CSV files, the automatic
preprocessing, the output directory, metric reports, and failing with a clear message.

Input rules (Google's, for every tabular algorithm): CSV in UTF-8, no header row, the target in
the first column, blank values are missing. With --preprocess the data is split into training,
validation and test sets (validation_split, test_split), rows with more than 10% of their values
missing are dropped, missing numeric values become the column's mean (over the training rows),
and categorical (non-numeric) columns are encoded: one-hot for XGBoost and the linear learner's
linear part, integer ids (for embeddings) for wide and deep. Without --preprocess every value
must be a number.

Output (under --job-dir, or <job-dir>/<trialId> for a trial of a tuning job):
    model/                  the model file (model.bst for XGBoost, model.pt for PyTorch)
    artifacts/metadata.json what the preprocessing learnt (column types, means, vocabularies,
                            target classes), the arguments, the final metrics and the versions
    processed_data/         training.csv, validation.csv, test.csv as the model sees them
                            (--preprocess only)
"""

import argparse
import csv
import glob
import json
import math
import os
import random
import sys

import numpy as np

MISSING_ROW_FRACTION = 0.10  # rows missing more than this fraction of their values are dropped


class AlgorithmError(Exception):
    """A problem with the job's input or arguments: the job fails with this message."""


def fail(message):
    raise AlgorithmError(message)


def run_main(main, argv=None):
    """Runs main(argv); an AlgorithmError ends the process with status 1 and its message as the
    last line of stderr (which becomes the job's errorMessage)."""
    try:
        main(sys.argv[1:] if argv is None else argv)
    except AlgorithmError as e:
        sys.stdout.flush()
        print("ERROR: %s" % e, file=sys.stderr, flush=True)
        sys.exit(1)
    except MemoryError:
        sys.stdout.flush()
        print("ERROR: the data set does not fit the replica's memory: use a machine type with "
              "more memory (masterType) or the distributed XGBoost algorithm (xgboost_dist)",
              file=sys.stderr, flush=True)
        sys.exit(1)


# ---------------------------------------------------------------------------------------------
# Arguments


def str2bool(value):
    v = str(value).strip().lower()
    if v in ("1", "true", "yes", "y", "t"):
        return True
    if v in ("0", "false", "no", "n", "f"):
        return False
    raise argparse.ArgumentTypeError("invalid boolean value: %r" % value)


def fraction(value):
    v = float(value)
    if not 0.0 <= v < 1.0:
        raise argparse.ArgumentTypeError("must be in [0, 1): %r" % value)
    return v


def positive_int(value):
    v = int(value)
    if v < 1:
        raise argparse.ArgumentTypeError("must be a positive integer: %r" % value)
    return v


class ArgumentParser(argparse.ArgumentParser):
    """argparse that raises AlgorithmError (no usage text, no exit 2) and refuses unknown or
    abbreviated arguments."""

    def __init__(self, algorithm):
        super().__init__(prog=algorithm, allow_abbrev=False, add_help=False)
        self.algorithm = algorithm

    def error(self, message):
        fail("Invalid arguments for the built-in algorithm %s: %s" % (self.algorithm, message))

    def parse(self, argv):
        args, unknown = self.parse_known_args(argv)
        if unknown:
            names = [u.split("=", 1)[0] for u in unknown if u.startswith("-")] or unknown
            fail("Unknown argument %s: the built-in algorithm %s does not take it "
                 "(docs/builtin-algorithms.md lists its arguments)"
                 % (", ".join(names), self.algorithm))
        return args


def add_data_arguments(p, preprocessing=True):
    """The data format arguments of Google's reference pages."""
    p.add_argument("--job-dir", "--job_dir", dest="job_dir", required=True)
    p.add_argument("--training_data_path", required=True)
    p.add_argument("--validation_data_path", default=None)
    if preprocessing:
        p.add_argument("--test_data_path", default=None)
        p.add_argument("--preprocess", nargs="?", const=True, default=False, type=str2bool)
        p.add_argument("--validation_split", type=fraction, default=None)
        p.add_argument("--test_split", type=fraction, default=None)


def check_splits(args):
    """validation_split and test_split (defaults 0.20 each, together at most 0.40), only with
    --preprocess and only for the sets that have no file of their own."""
    for name in ("validation_split", "test_split"):
        if getattr(args, name) is not None and not args.preprocess:
            fail("--%s needs --preprocess (the split is part of the automatic preprocessing)"
                 % name)
    if args.validation_split is not None and args.validation_data_path:
        fail("--validation_split and --validation_data_path exclude each other: give one")
    if args.test_split is not None and args.test_data_path:
        fail("--test_split and --test_data_path exclude each other: give one")
    v = 0.0 if args.validation_data_path else (
        0.20 if args.validation_split is None else args.validation_split)
    t = 0.0 if args.test_data_path else (0.20 if args.test_split is None else args.test_split)
    if v + t > 0.40 + 1e-9:
        fail("--validation_split + --test_split must be at most 0.40 (they are %g + %g)" % (v, t))
    return v, t


# ---------------------------------------------------------------------------------------------
# Paths


def local_path(uri):
    """The file a gs://BUCKET/PATH (or /gcs/..., file://..., local) path is on this machine."""
    if uri.startswith("gs://"):
        rest = uri[len("gs://"):]
        root = os.environ.get("TRAINYARD_BUCKETS_DIR")
        if root:
            return os.path.join(root, rest)
        return "/gcs/" + rest
    if uri.startswith("file://"):
        return uri[len("file://"):]
    return uri


def expand_paths(uri, arg):
    """The files a path names: one file, or every match of a wildcard (sorted)."""
    path = local_path(uri)
    if any(c in path for c in "*?["):
        files = sorted(f for f in glob.glob(path) if os.path.isfile(f))
        if not files:
            fail("--%s: no file matches %s" % (arg, uri))
        return files
    if os.path.isdir(path):
        fail("--%s: %s is a directory; give a CSV file (or a wildcard)" % (arg, uri))
    if not os.path.isfile(path):
        fail("--%s: %s does not exist" % (arg, uri))
    return [path]


def output_dir(job_dir):
    """The job dir, or <job-dir>/<trialId> in a trial of a tuning job (each trial its own)."""
    d = job_dir.rstrip("/") or job_dir
    trial = os.environ.get("CLOUD_ML_TRIAL_ID", "")
    return d + "/" + trial if trial else d


def makedirs_for(uri):
    path = local_path(uri)
    os.makedirs(path, exist_ok=True)
    return path


# ---------------------------------------------------------------------------------------------
# Memory


def available_memory():
    """Bytes this replica may still use: the cgroup's limit (v1 or v2) and MemAvailable."""
    limits = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    limits.append(int(line.split()[1]) * 1024)
    except OSError:
        pass
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                parts = line.rstrip("\n").split(":", 2)
                if len(parts) != 3:
                    continue
                if parts[1] == "" and parts[0] == "0":
                    candidates = ["/sys/fs/cgroup%s/memory.max" % parts[2]]
                elif "memory" in parts[1].split(","):
                    candidates = ["/sys/fs/cgroup/memory%s/memory.limit_in_bytes" % parts[2]]
                else:
                    continue
                for c in candidates:
                    try:
                        with open(c) as lf:
                            text = lf.read().strip()
                        if text and text != "max" and int(text) < (1 << 60):
                            limits.append(int(text))
                    except (OSError, ValueError):
                        pass
    except OSError:
        pass
    return min(limits) if limits else None


# Reading a CSV file into rows of strings takes about this many bytes of memory per byte of the
# file at the peak (Python's str objects and lists, then the float arrays).
MEMORY_PER_FILE_BYTE = 12


def check_fits(files, replica_share=1.0):
    """Fails before reading anything when the files cannot fit this replica's memory."""
    total = sum(os.path.getsize(f) for f in files)
    need = int(total * replica_share * MEMORY_PER_FILE_BYTE)
    avail = available_memory()
    if avail is not None and need > avail:
        gib = 1 << 30
        fail("the data set (%.2f GiB of CSV, about %.1f GiB in memory) does not fit this "
             "replica's memory (%.1f GiB available): use a machine type with more memory "
             "(masterType) or the distributed XGBoost algorithm (xgboost_dist)"
             % (total / gib, need / gib, avail / gib))


# ---------------------------------------------------------------------------------------------
# CSV


def read_csv(uri, arg, files=None, shard=None):
    """Rows of strings of the CSV file(s) `uri` names. Every row has the same number of columns
    (at least 2: the target and one feature). shard=(rank, world) keeps every world-th row.
    Each row keeps where it came from, for messages: a list of (file, line number)."""
    files = files if files is not None else expand_paths(uri, arg)
    rows, where, width = [], [], None
    for path in files:
        shown = uri if len(files) == 1 else path
        try:
            with open(path, newline="", encoding="utf-8") as f:
                for n, row in enumerate(csv.reader(f), start=1):
                    if not row or (len(row) == 1 and row[0].strip() == ""):
                        continue  # blank line
                    if width is None:
                        width = len(row)
                        if width < 2:
                            fail("--%s: row %d of %s has %d column; the CSV needs the target in "
                                 "the first column and at least one feature" % (arg, n, shown,
                                                                               width))
                    elif len(row) != width:
                        fail("--%s: row %d of %s has %d columns; the rows before it have %d"
                             % (arg, n, shown, len(row), width))
                    rows.append([c.strip() for c in row])
                    where.append((shown, n))
        except UnicodeDecodeError as e:
            fail("--%s: %s is not UTF-8 text (byte %d)" % (arg, shown, e.start))
        except csv.Error as e:
            fail("--%s: %s is not a valid CSV file: %s" % (arg, shown, e))
    if not rows:
        fail("--%s: %s has no rows" % (arg, uri))
    if shard is not None:
        rank, world = shard
        rows, where = rows[rank::world], where[rank::world]
    return rows, where


def is_number(text):
    try:
        v = float(text)
    except ValueError:
        return False
    return not math.isnan(v) or text.lower() == "nan"


def parse_float(text):
    return float("nan") if text == "" else float(text)


# ---------------------------------------------------------------------------------------------
# Preprocessing


class Preprocessor(object):
    """What --preprocess learns from the training rows, and applies to every set.

    Feature column j (1-based in the CSV) is numeric when every non-blank value is a number,
    else categorical. numeric: blank -> the column's training mean. categorical: a vocabulary
    (most frequent first); blank or unseen values get no category (one-hot all zero, id 0).
    The target: numeric for regression; for classification its distinct values are the classes
    (sorted: numbers numerically, else as text) and the label is the class's index.
    """

    def __init__(self, classification, objective_hint="a regression objective"):
        self.classification = classification
        self.objective_hint = objective_hint
        self.columns = []  # per feature: {"index", "type", "mean"} / {"vocabulary"}
        self.classes = None
        self.target_numeric = True

    def fit(self, rows, where):
        width = len(rows[0])
        for j in range(1, width):
            values = [r[j] for r in rows if r[j] != ""]
            if all(is_number(v) for v in values):
                nums = [float(v) for v in values]
                mean = sum(nums) / len(nums) if nums else 0.0
                self.columns.append({"index": j, "type": "numeric", "mean": mean})
            else:
                counts = {}
                for v in values:
                    counts[v] = counts.get(v, 0) + 1
                vocab = sorted(counts, key=lambda v: (-counts[v], v))
                self.columns.append({"index": j, "type": "categorical", "vocabulary": vocab})
        targets = [r[0] for r in rows]
        self.target_numeric = all(is_number(t) for t in targets)
        if self.classification:
            distinct = set(targets)
            if self.target_numeric:
                self.classes = sorted(distinct, key=float)
            else:
                self.classes = sorted(distinct)
        else:
            check_numeric_target(rows, where, self.objective_hint)
        return self

    @property
    def numeric(self):
        return [c for c in self.columns if c["type"] == "numeric"]

    @property
    def categorical(self):
        return [c for c in self.columns if c["type"] == "categorical"]

    def labels(self, rows, where, arg):
        if not self.classification:
            check_numeric_target(rows, where, self.objective_hint)
            return np.array([float(r[0]) for r in rows], dtype=np.float64)
        index = {c: i for i, c in enumerate(self.classes)}
        out = np.empty(len(rows), dtype=np.float64)
        for i, r in enumerate(rows):
            if r[0] not in index:
                fail("--%s: row %d of %s has the target %r, which is not a class of the training "
                     "data (%s)" % (arg, where[i][1], where[i][0], r[0],
                                    ", ".join(self.classes[:10])))
            out[i] = index[r[0]]
        return out

    def dense(self, rows):
        """The numeric features, blanks filled with the training mean: [N, numeric]."""
        cols = self.numeric
        out = np.empty((len(rows), len(cols)), dtype=np.float64)
        for k, c in enumerate(cols):
            j, mean = c["index"], c["mean"]
            for i, r in enumerate(rows):
                v = r[j]
                if v == "":
                    out[i, k] = mean
                else:
                    try:
                        out[i, k] = float(v)
                    except ValueError:
                        out[i, k] = mean  # a word in a numeric column of another set
        return out

    def ids(self, rows):
        """The categorical features as ids: 0 = blank or unseen, 1.. = vocabulary order."""
        cols = self.categorical
        out = np.zeros((len(rows), len(cols)), dtype=np.int64)
        for k, c in enumerate(cols):
            index = {v: i + 1 for i, v in enumerate(c["vocabulary"])}
            j = c["index"]
            for i, r in enumerate(rows):
                out[i, k] = index.get(r[j], 0)
        return out

    def one_hot(self, rows):
        """numeric features, then each categorical column one-hot: the matrix XGBoost sees."""
        dense = self.dense(rows)
        ids = self.ids(rows)
        parts = [dense]
        for k, c in enumerate(self.categorical):
            block = np.zeros((len(rows), len(c["vocabulary"])), dtype=np.float64)
            nz = ids[:, k] > 0
            block[np.nonzero(nz)[0], ids[nz, k] - 1] = 1.0
            parts.append(block)
        return np.hstack(parts) if parts else dense

    def one_hot_names(self):
        names = ["col%d" % c["index"] for c in self.numeric]
        for c in self.categorical:
            names += ["col%d=%s" % (c["index"], v) for v in c["vocabulary"]]
        return names

    def to_json(self):
        target = {"column": 0, "type": "numeric" if self.target_numeric else "categorical"}
        if self.classes is not None:
            target["classes"] = self.classes
        return {"target": target, "features": self.columns,
                "encoded_features": self.one_hot_names()}


def check_numeric_target(rows, where, objective_hint="a regression objective"):
    for i, r in enumerate(rows):
        if not is_number(r[0]):
            hint = " (a header row? the CSV must not have one)" if where[i][1] == 1 else ""
            fail("row %d of %s: the target (first column) is %r, not a number; %s needs a "
                 "numeric target%s" % (where[i][1], where[i][0], r[0], objective_hint, hint))


def drop_incomplete_rows(rows, where):
    """--preprocess: drops rows with more than 10% of their values missing, and rows without a
    target. Returns the rows kept and how many were dropped."""
    width = len(rows[0])
    kept, kept_where = [], []
    for r, w in zip(rows, where):
        missing = sum(1 for v in r if v == "")
        if r[0] == "" or missing > MISSING_ROW_FRACTION * width:
            continue
        kept.append(r)
        kept_where.append(w)
    if not kept:
        fail("every row has more than 10% of its values (or its target) missing")
    return kept, kept_where, len(rows) - len(kept)


def split(rows, where, validation_split, test_split, seed=0):
    """Shuffles (fixed seed) and cuts off the test, then the validation fraction."""
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    n = len(order)
    n_test = int(round(n * test_split))
    n_val = int(round(n * validation_split))
    if n - n_test - n_val < 1:
        fail("the training data has %d usable rows: too few to split off %g for validation and %g "
             "for test" % (n, validation_split, test_split))
    test_idx = order[:n_test]
    val_idx = order[n_test:n_test + n_val]
    train_idx = order[n_test + n_val:]

    def pick(idx):
        return [rows[i] for i in idx], [where[i] for i in idx]
    return pick(train_idx), pick(val_idx), pick(test_idx)



def preprocess_splits(sets, rows, where, validation_split, test_split, seed=0):
    """--preprocess: drops incomplete rows of the training data and cuts the validation and
    test sets from it (into `sets`, name -> (rows, where, argument)); a validation or test set
    given as its own file keeps it and loses its incomplete rows too. Returns how many training
    rows were dropped and the training set."""
    rows, where, dropped = drop_incomplete_rows(rows, where)
    (tr, trw), (va, vaw), (te, tew) = split(rows, where, validation_split, test_split, seed)
    sets["training"] = (tr, trw, "training_data_path")
    if va:
        sets["validation"] = (va, vaw, "training_data_path")
    if te:
        sets["test"] = (te, tew, "training_data_path")
    for name in ("validation", "test"):
        if name in sets and sets[name][2] != "training_data_path":
            r, w, arg = sets[name]
            r, w, _ = drop_incomplete_rows(r, w)
            sets[name] = (r, w, arg)
    return dropped, (tr, trw)

def numeric_matrix(rows, where, arg, allow_missing):
    """Without --preprocess: every value a number (blank = missing when allowed)."""
    try:
        return np.array(rows, dtype=np.float64)  # the common case, at numpy's speed
    except ValueError:
        pass  # a blank or a word: the loop below says where (or fills the blanks)
    out = np.empty((len(rows), len(rows[0])), dtype=np.float64)
    for i, r in enumerate(rows):
        for j, v in enumerate(r):
            if v == "":
                if j == 0:
                    fail("--%s: row %d of %s has no target (first column)"
                         % (arg, where[i][1], where[i][0]))
                if not allow_missing:
                    fail("--%s: row %d of %s, column %d is blank: missing values need "
                         "--preprocess" % (arg, where[i][1], where[i][0], j + 1))
                out[i, j] = float("nan")
                continue
            try:
                out[i, j] = float(v)
            except ValueError:
                hint = " (a header row? the CSV must not have one)" if where[i][1] == 1 else ""
                what = "the target (first column)" if j == 0 else "column %d" % (j + 1)
                fail("--%s: row %d of %s: %s is %r, not a number; without --preprocess every "
                     "value must be numeric (--preprocess encodes categorical columns)%s"
                     % (arg, where[i][1], where[i][0], what, v, hint))
    return out


def write_csv(path, y, x):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        for i in range(len(y)):
            w.writerow([repr(float(y[i]))] + ["%.17g" % v for v in x[i]])


# ---------------------------------------------------------------------------------------------
# Metrics


DEFAULT_METRIC_TAG = "training/hptuning/metric"


class Reporter(object):
    """Metrics go to the log and, for hyperparameter tuning, through the hypertune module:
    in a trial only the job's hyperparameterMetricTag (which must be one of `names`; without a
    tag, names[0] under hypertune's default tag), else all."""

    def __init__(self, names):
        self.names = list(names)
        self.tag = os.environ.get("CLOUD_ML_HP_METRIC_TAG", "")
        if self.tag == DEFAULT_METRIC_TAG:
            self.tag = ""  # the job named no hyperparameterMetricTag
        self.trial = os.environ.get("CLOUD_ML_TRIAL_ID", "")
        if self.trial and self.tag and self.tag not in self.names:
            fail("hyperparameterMetricTag %r is not a metric of this algorithm; it reports %s"
                 % (self.tag, ", ".join(self.names)))
        self.hpt = None
        try:
            import hypertune  # Trainyard ships it (python/hypertune)
            self.hpt = hypertune.HyperTune()
        except ImportError:
            pass

    def report(self, metrics, step):
        print("step %d: %s" % (step, " ".join("%s=%.6g" % (k, v) for k, v in metrics.items())),
              flush=True)
        if self.hpt is None:
            return
        if self.trial and not self.tag:
            # A tuning job without hyperparameterMetricTag: the algorithm's first metric under
            # hypertune's default tag (training/hptuning/metric), which the service then reads.
            value = metrics.get(self.names[0])
            if value is not None and math.isfinite(value):
                self.hpt.report_hyperparameter_tuning_metric(
                    hyperparameter_metric_tag=None, metric_value=value, global_step=step)
            return
        for name, value in metrics.items():
            if self.trial and name != self.tag:
                continue
            if value is None or not math.isfinite(value):
                continue
            self.hpt.report_hyperparameter_tuning_metric(
                hyperparameter_metric_tag=name, metric_value=value, global_step=step)


# ---------------------------------------------------------------------------------------------
# Output


def python_version():
    return "%d.%d" % sys.version_info[:2]


def write_metadata(out_dir, metadata):
    art = makedirs_for(out_dir + "/artifacts")
    tmp = os.path.join(art, ".metadata.json.tmp")
    with open(tmp, "w") as f:
        json.dump(metadata, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, os.path.join(art, "metadata.json"))
