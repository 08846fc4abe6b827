"""The built-in wide and deep algorithm (gcr.io/cloud-ml-algos/wide_deep_learner_cpu and _gpu),
in PyTorch.

    python -m trainyard_algorithms.wide_deep --job-dir DIR --training_data_path CSV \
        --model_type classification --preprocess [--hidden_units 30,30,30] [--max_steps N]

The wide part is the linear learner's model (numeric columns and one weight per category,
optimized by --optimizer_type, FTRL by default); the deep part embeds each categorical column
(--embedding_dim) and feeds it with the numeric columns through ReLU layers of --hidden_units,
optimized by --dnn_optimizer_type (Adagrad by default) at --dnn_learning_rate. Both parts' scores
are summed, as in TensorFlow's DNNLinearCombined estimators. nn_common.py describes the model
file and the metrics.
"""

import argparse

from . import common, nn_common

ALGORITHM = "wide_deep"


def hidden_units(value):
    try:
        units = [int(v) for v in value.replace(" ", "").split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError("comma-separated layer sizes, e.g. 30,30,30: %r" % value)
    if not units or any(u < 1 for u in units):
        raise argparse.ArgumentTypeError("comma-separated positive layer sizes: %r" % value)
    return units


def main(argv):
    p = common.ArgumentParser(ALGORITHM)
    common.add_data_arguments(p)
    nn_common.add_training_arguments(p, optimizer_default="ftrl")
    p.add_argument("--hidden_units", type=hidden_units, default=[30, 30, 30])
    p.add_argument("--dnn_learning_rate", type=float, default=0.001)
    p.add_argument("--dnn_optimizer_type", choices=("adagrad", "adam", "sgd"), default="adagrad")
    p.add_argument("--dnn_dropout", type=float, default=0.0)
    p.add_argument("--embedding_dim", type=common.positive_int, default=8)
    p.add_argument("--use_wide", nargs="?", const=True, default=True, type=common.str2bool)
    args = p.parse(argv)
    nn_common.train(args, ALGORITHM, hidden_units=args.hidden_units,
                    embedding_dim=args.embedding_dim, dropout=args.dnn_dropout,
                    use_wide=args.use_wide, dnn_optimizer=args.dnn_optimizer_type,
                    dnn_learning_rate=args.dnn_learning_rate)


if __name__ == "__main__":
    common.run_main(main)
