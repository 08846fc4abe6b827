"""The linear learner and wide and deep, in PyTorch (Google's are TensorFlow 1.14 estimators).

One model family: a wide part (linear over the standardized numeric columns plus one weight per
category of each categorical column, i.e. linear over their one-hot encoding) and, for wide and
deep, a deep part (the numeric columns and an embedding per categorical column through a ReLU
network). The linear learner is the wide part alone. The model is saved as TorchScript,
<output>/model/model.pt, loadable with torch.jit.load without Trainyard:

    model = torch.jit.load("model.pt")
    out = model(dense, ids)  # dense: float32 [N, numeric columns] (blank = the column mean from
                             # artifacts/metadata.json), ids: int64 [N, categorical columns]
                             # (0 = blank or unseen, i = the i-th vocabulary entry)
    # classification: the probability of class 1 [N] (two classes) or of each class [N, K];
    # regression: the prediction [N]

Metrics (the names of TensorFlow's canned estimators, so hyperparameterMetricTag stays the
same): loss, average_loss, and for classification accuracy (and auc, precision, recall with two
classes); rmse for regression.
"""

import math
import os
import time

import numpy as np

from . import common


def add_training_arguments(p, optimizer_default):
    p.add_argument("--model_type", choices=("classification", "regression"), required=True)
    p.add_argument("--max_steps", type=common.positive_int, default=None)
    p.add_argument("--num_epochs", type=common.positive_int, default=None)
    p.add_argument("--batch_size", type=common.positive_int, default=100)
    p.add_argument("--eval_steps", type=common.positive_int, default=None)
    p.add_argument("--eval_frequency_secs", type=float, default=600.0)
    p.add_argument("--learning_rate", type=float, default=0.001)
    p.add_argument("--optimizer_type", choices=("ftrl", "sgd", "adam", "adagrad"),
                   default=optimizer_default)
    p.add_argument("--l1_regularization_strength", type=float, default=0.0)
    p.add_argument("--l2_regularization_strength", type=float, default=0.0)
    p.add_argument("--l2_shrinkage_regularization_strength", type=float, default=0.0)
    p.add_argument("--learning_rate_power", type=float, default=-0.5)
    p.add_argument("--initial_accumulator_value", type=float, default=0.1)
    p.add_argument("--beta_1", type=float, default=0.9)
    p.add_argument("--beta_2", type=float, default=0.999)
    p.add_argument("--seed", type=int, default=0)


def metric_names(classification, n_classes):
    if not classification:
        return ["loss", "average_loss", "rmse"]
    if n_classes == 2:
        return ["loss", "average_loss", "accuracy", "auc", "precision", "recall"]
    return ["loss", "average_loss", "accuracy"]


def make_ftrl(torch):
    class Ftrl(torch.optim.Optimizer):
        """FTRL-Proximal with TensorFlow's update rule (tf.compat.v1.train.FtrlOptimizer):
        learning_rate_power, initial_accumulator_value, l1, l2 and l2 shrinkage."""

        def __init__(self, params, lr, lr_power, init_acc, l1, l2, l2_shrinkage):
            super().__init__(params, dict(lr=lr, lr_power=lr_power, init_acc=init_acc, l1=l1,
                                          l2=l2, l2_shrinkage=l2_shrinkage))

        @torch.no_grad()
        def step(self, closure=None):
            for g in self.param_groups:
                for w in g["params"]:
                    if w.grad is None:
                        continue
                    st = self.state[w]
                    if not st:
                        st["n"] = torch.full_like(w, g["init_acc"])
                        st["z"] = torch.zeros_like(w)
                    grad = w.grad
                    shrunk = grad + 2.0 * g["l2_shrinkage"] * w
                    n, z = st["n"], st["z"]
                    n_new = n + grad * grad
                    p = -g["lr_power"]
                    sigma = (n_new.pow(p) - n.pow(p)) / g["lr"]
                    z.add_(shrunk - sigma * w)
                    n.copy_(n_new)
                    quad = n.pow(p) / g["lr"] + 2.0 * g["l2"]
                    w.copy_(torch.where(z.abs() > g["l1"], (torch.sign(z) * g["l1"] - z) / quad,
                                        torch.zeros_like(w)))
    return Ftrl


def make_optimizer(torch, kind, params, args, lr, l1=0.0, l2=0.0):
    if kind == "ftrl":
        return make_ftrl(torch)(params, lr, args.learning_rate_power,
                                args.initial_accumulator_value, l1, l2,
                                args.l2_shrinkage_regularization_strength)
    if kind == "adagrad":
        return torch.optim.Adagrad(params, lr=lr,
                                   initial_accumulator_value=args.initial_accumulator_value,
                                   weight_decay=2 * l2)
    if kind == "adam":
        return torch.optim.Adam(params, lr=lr, betas=(args.beta_1, args.beta_2),
                                weight_decay=2 * l2)
    return torch.optim.SGD(params, lr=lr, weight_decay=2 * l2)


def build_model(torch, n_numeric, vocab_sizes, out_dim, mean, std, task, hidden_units,
                embedding_dim, dropout, use_wide):
    nn = torch.nn

    class WideDeep(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32))
            self.register_buffer("std", torch.tensor(std, dtype=torch.float32))
            self.task = task  # 0 regression, 1 binary, 2 multi-class
            self.use_wide = use_wide
            self.use_deep = len(hidden_units) > 0
            self.wide_dense = nn.Linear(n_numeric, out_dim)
            self.wide_cats = nn.ModuleList([nn.Embedding(v + 1, out_dim) for v in vocab_sizes])
            for e in self.wide_cats:
                nn.init.zeros_(e.weight)
            self.deep_cats = nn.ModuleList([nn.Embedding(v + 1, embedding_dim)
                                            for v in vocab_sizes])
            layers = []
            width = n_numeric + embedding_dim * len(vocab_sizes)
            for h in hidden_units:
                layers += [nn.Linear(width, h), nn.ReLU()]
                if dropout > 0:
                    layers.append(nn.Dropout(dropout))
                width = h
            layers.append(nn.Linear(width, out_dim))
            self.deep = nn.Sequential(*layers) if self.use_deep else nn.Sequential()

        def scores(self, dense, ids):
            x = (dense - self.mean) / self.std
            out = torch.zeros(dense.shape[0], self.wide_dense.out_features, dtype=x.dtype,
                              device=x.device)
            if self.use_wide:
                out = out + self.wide_dense(x)
                for k, emb in enumerate(self.wide_cats):
                    out = out + emb(ids[:, k])
            if self.use_deep:
                parts = [x]
                for k, emb in enumerate(self.deep_cats):
                    parts.append(emb(ids[:, k]))
                out = out + self.deep(torch.cat(parts, dim=1))
            return out

        def forward(self, dense, ids):
            s = self.scores(dense, ids)
            if self.task == 1:
                return torch.sigmoid(s[:, 0])
            if self.task == 2:
                return torch.softmax(s, dim=1)
            return s[:, 0]

    return WideDeep()


def load(args):
    """(sets {name: (dense, ids, y)}, preprocessor or None, classes, counts)."""
    classification = args.model_type == "classification"
    v_split, t_split = common.check_splits(args)
    files = common.expand_paths(args.training_data_path, "training_data_path")
    extra = []
    for name in ("validation_data_path", "test_data_path"):
        if getattr(args, name):
            extra += common.expand_paths(getattr(args, name), name)
    common.check_fits(files + extra)
    rows, where = common.read_csv(args.training_data_path, "training_data_path", files=files)
    counts = {"read": len(rows)}
    raw = {"training": (rows, where, "training_data_path")}
    for name, arg in (("validation", "validation_data_path"), ("test", "test_data_path")):
        if getattr(args, arg):
            r, w = common.read_csv(getattr(args, arg), arg)
            if len(r[0]) != len(rows[0]):
                common.fail("--%s has %d columns; --training_data_path has %d"
                            % (arg, len(r[0]), len(rows[0])))
            raw[name] = (r, w, arg)
    pre = None
    if args.preprocess:
        counts["dropped"], (tr, trw) = common.preprocess_splits(
            raw, rows, where, v_split, t_split, args.seed)
        pre = common.Preprocessor(classification, "--model_type regression").fit(tr, trw)
    sets, classes = {}, None
    for name, (r, w, arg) in raw.items():
        if pre is not None:
            y = pre.labels(r, w, arg)
            dense, ids = pre.dense(r), pre.ids(r)
        else:
            m = common.numeric_matrix(r, w, arg, allow_missing=False)
            y, dense, ids = m[:, 0], m[:, 1:], np.zeros((len(r), 0), dtype=np.int64)
            if classification:
                bad = np.nonzero((y < 0) | (y != np.floor(y)))[0]
                if len(bad):
                    i = bad[0]
                    common.fail("--%s: row %d of %s has the label %g; without --preprocess a "
                                "classification target must be 0, 1, ... (--preprocess turns "
                                "any values into classes)" % (arg, w[i][1], w[i][0], y[i]))
        sets[name] = (dense, ids, y)
        counts[name] = len(r)
    if classification:
        if pre is not None:
            classes = pre.classes
        else:
            classes = [str(c) for c in range(int(sets["training"][2].max()) + 1)]
        if len(classes) < 2:
            common.fail("--model_type classification needs at least two classes in the target; "
                        "the training data has one (%s)" % classes[0])
    return sets, pre, classes, counts


def evaluate(torch, model, data, task, n_classes, batch_size, eval_steps):
    dense, ids, y = data
    n = len(y) if eval_steps is None else min(len(y), eval_steps * batch_size)
    model.eval()
    with torch.no_grad():
        s = model.scores(torch.from_numpy(dense[:n]).float(), torch.from_numpy(ids[:n]))
    model.train()
    yt = torch.from_numpy(y[:n])
    m = {}
    if task == 0:
        pred = s[:, 0].double()
        per = (pred - yt) ** 2
        m["average_loss"] = float(per.mean())
        m["rmse"] = math.sqrt(m["average_loss"])
    elif task == 1:
        logits = s[:, 0].double()
        per = torch.nn.functional.binary_cross_entropy_with_logits(logits, yt, reduction="none")
        m["average_loss"] = float(per.mean())
        p = torch.sigmoid(logits).numpy()
        pred = p >= 0.5
        truth = y[:n] >= 0.5
        m["accuracy"] = float((pred == truth).mean())
        tp = float((pred & truth).sum())
        m["precision"] = tp / float(pred.sum()) if pred.sum() else 0.0
        m["recall"] = tp / float(truth.sum()) if truth.sum() else 0.0
        m["auc"] = auc(p, truth)
    else:
        per = torch.nn.functional.cross_entropy(s.double(), yt.long(), reduction="none")
        m["average_loss"] = float(per.mean())
        m["accuracy"] = float((s.argmax(dim=1).numpy() == y[:n]).mean())
    # TensorFlow's "loss": the summed loss of a batch, averaged over the batches.
    m["loss"] = m["average_loss"] * min(batch_size, n)
    return {k: m[k] for k in metric_names(task != 0, n_classes) if k in m}


def auc(scores, truth):
    """The area under the ROC curve (ties counted half)."""
    pos, neg = int(truth.sum()), int(len(truth) - truth.sum())
    if pos == 0 or neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    i = 0
    while i < len(scores):
        j = i
        while j + 1 < len(scores) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1
        i = j + 1
    return float((ranks[truth].sum() - pos * (pos + 1) / 2.0) / (pos * neg))


def train(args, algorithm, hidden_units=(), embedding_dim=8, dropout=0.0, use_wide=True,
          dnn_optimizer="adagrad", dnn_learning_rate=0.001):
    import torch
    torch.manual_seed(args.seed)
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    started = time.time()
    sets, pre, classes, counts = load(args)
    task = 0 if args.model_type == "regression" else (1 if len(classes) == 2 else 2)
    n_classes = len(classes) if classes else 0
    reporter = common.Reporter(metric_names(task != 0, n_classes))
    dense, ids, y = sets["training"]
    mean = dense.mean(axis=0) if len(dense) else np.zeros(dense.shape[1])
    std = dense.std(axis=0) if len(dense) else np.ones(dense.shape[1])
    std[std == 0] = 1.0
    vocab = [len(c["vocabulary"]) for c in pre.categorical] if pre is not None else []
    out_dim = n_classes if task == 2 else 1
    model = build_model(torch, dense.shape[1], vocab, out_dim, mean.tolist(), std.tolist(), task,
                        list(hidden_units), embedding_dim, dropout, use_wide)
    wide_params = list(model.wide_dense.parameters()) + list(model.wide_cats.parameters())
    deep_params = list(model.deep.parameters()) + list(model.deep_cats.parameters())
    opts = []
    if use_wide:
        opts.append(make_optimizer(torch, args.optimizer_type, wide_params, args,
                                   args.learning_rate, args.l1_regularization_strength,
                                   args.l2_regularization_strength))
    if hidden_units:
        opts.append(make_optimizer(torch, dnn_optimizer, deep_params, args, dnn_learning_rate))
    n = len(y)
    batches_per_epoch = max(1, math.ceil(n / args.batch_size))
    if args.max_steps is not None:
        steps = args.max_steps
    else:
        steps = (args.num_epochs or 10) * batches_per_epoch
    eval_name = "validation" if "validation" in sets else "training"
    print("Training %s (PyTorch %s) for %d steps of %d rows on %d rows: %d numeric and %d "
          "categorical columns, %s" % (algorithm, torch.__version__, steps, args.batch_size, n,
                                       dense.shape[1], ids.shape[1], args.model_type), flush=True)
    td, ti = torch.from_numpy(dense).float(), torch.from_numpy(ids)
    ty = torch.from_numpy(y).double()
    gen = torch.Generator().manual_seed(args.seed)
    perm, pos, last_eval, last = torch.randperm(n, generator=gen), 0, time.time(), {}
    for step in range(1, steps + 1):
        if pos >= n:
            perm, pos = torch.randperm(n, generator=gen), 0
        idx = perm[pos:pos + args.batch_size]
        pos += args.batch_size
        s = model.scores(td[idx], ti[idx])
        if task == 0:
            loss = ((s[:, 0].double() - ty[idx]) ** 2).sum()
        elif task == 1:
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                s[:, 0].double(), ty[idx], reduction="sum")
        else:
            loss = torch.nn.functional.cross_entropy(s.double(), ty[idx].long(), reduction="sum")
        for o in opts:
            o.zero_grad()
        # TensorFlow's canned estimators minimize the batch's summed loss; so does this.
        loss.backward()
        for o in opts:
            o.step()
        if not math.isfinite(float(loss)):
            common.fail("the training diverged (loss %s at step %d): lower --learning_rate"
                        % (float(loss), step))
        end_of_epoch = step % batches_per_epoch == 0
        due = time.time() - last_eval >= args.eval_frequency_secs
        if step == steps or end_of_epoch or due:
            last = evaluate(torch, model, sets[eval_name], task, n_classes, args.batch_size,
                            args.eval_steps)
            reporter.report(last, step)
            last_eval = time.time()
    result = {eval_name: last}
    if "test" in sets:
        result["test"] = evaluate(torch, model, sets["test"], task, n_classes, args.batch_size,
                                  None)
        print("test: %s" % " ".join("%s=%.6g" % kv for kv in result["test"].items()), flush=True)
    out = common.output_dir(args.job_dir)
    model_dir = common.makedirs_for(out + "/model")
    model.eval()
    scripted = torch.jit.script(model)
    tmp = os.path.join(model_dir, ".model.pt.tmp")
    scripted.save(tmp)
    os.replace(tmp, os.path.join(model_dir, "model.pt"))
    if pre is not None:
        d = common.makedirs_for(out + "/processed_data")
        for name, (dn, ci, yy) in sets.items():
            common.write_csv(os.path.join(d, name + ".csv"), yy, np.hstack([dn, ci]))
    common.write_metadata(out, {
        "algorithm": algorithm,
        "framework": "PYTORCH",
        "framework_version": torch.__version__,
        "runtime_version": torch.__version__,
        "python_version": common.python_version(),
        "model_file": "model/model.pt",
        "model_inputs": {"dense": [c["index"] for c in pre.numeric] if pre else
                         list(range(1, dense.shape[1] + 1)),
                         "ids": [c["index"] for c in pre.categorical] if pre else []},
        "classes": classes,
        "arguments": {k: v for k, v in vars(args).items() if v is not None},
        "steps": steps,
        "preprocessing": pre.to_json() if pre is not None else None,
        "rows": counts,
        "metrics": result,
        "training_seconds": round(time.time() - started, 3),
    })
    print("Model written to %s/model/model.pt" % out, flush=True)
