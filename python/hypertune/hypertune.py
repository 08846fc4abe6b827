"""The HyperTune class: writes a trial's metric reports where the tuning service reads them.

File format (cloudml-hypertune 0.1.0, compat §7): one JSON object per line, keys sorted, for
the last 100 reports of this HyperTune object, oldest first:

    {"checkpoint_path": "", "global_step": "1000", "my_tag": "0.987", "timestamp": 1525851440.1,
     "trial": "3"}

(one line in the file). Every value is a string except "timestamp" (seconds since the epoch, a
float). The whole file is rewritten on each report, so a reader re-reads it rather than tailing
it.

Written for Python 3.7 and later with the standard library only: trainers run under whatever
Python their image or runtime has.
"""

import collections
import json
import os
import threading
import time

_DEFAULT_METRIC_PATH = "/tmp/hypertune/output.metrics"
_DEFAULT_METRIC_TAG = "training/hptuning/metric"
_MAX_RECORDS = 100


class HyperTune(object):
    """Reports hyperparameter tuning metrics for the current trial.

    metric_path: CLOUD_ML_HP_METRIC_FILE, or /tmp/hypertune/output.metrics when unset; its
    parent directory is created here. trial_id: CLOUD_ML_TRIAL_ID, or 0 when unset.
    """

    def __init__(self):
        self.metric_path = os.environ.get("CLOUD_ML_HP_METRIC_FILE") or _DEFAULT_METRIC_PATH
        parent = os.path.dirname(self.metric_path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        self.trial_id = os.environ.get("CLOUD_ML_TRIAL_ID", 0)
        self.metrics_queue = collections.deque(maxlen=_MAX_RECORDS)
        self._lock = threading.Lock()

    def report_hyperparameter_tuning_metric(self, hyperparameter_metric_tag, metric_value,
                                            global_step=None, checkpoint_path=""):
        """Records one value of the tuning metric and rewrites the metric file.

        hyperparameter_metric_tag: the job's hyperparameterMetricTag; an empty or None tag means
        training/hptuning/metric. metric_value: a number (stored as str(float(value))).
        global_step: the training step (stored as str(int(step)); None or 0 store "0").
        checkpoint_path: stored as given.
        """
        tag = hyperparameter_metric_tag or _DEFAULT_METRIC_TAG
        record = {
            "timestamp": time.time(),
            "trial": str(self.trial_id),
            tag: str(float(metric_value)),
            "global_step": str(int(global_step) if global_step else 0),
            "checkpoint_path": checkpoint_path,
        }
        with self._lock:
            self.metrics_queue.append(record)
            text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in self.metrics_queue)
            self._write(text)

    def _write(self, text):
        # Deliberate difference from cloudml-hypertune, which truncates and rewrites the file in
        # place: Trainyard reads the file while the trial runs (for early stopping), and a reader
        # must never see a half-written file. So the text goes to a temporary file in the same
        # directory, which then replaces the metric file in one rename. The file's contents are
        # the same as the original library's. If the directory does not allow that (no write
        # permission on it, only on the file), fall back to the original in-place rewrite.
        tmp = "%s.%d.%d.tmp" % (self.metric_path, os.getpid(), threading.get_ident())
        try:
            # 0o666 minus the umask: the same mode open(path, 'w') would give the file. No
            # following a planted symlink: the default directory is under /tmp.
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(tmp, flags, 0o666)
        except OSError:
            with open(self.metric_path, "w") as f:
                f.write(text)
            return
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, self.metric_path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
