"""The built-in linear learner (gcr.io/cloud-ml-algos/linear_learner_cpu and _gpu), in PyTorch.

    python -m trainyard_algorithms.linear_learner --job-dir DIR --training_data_path CSV \
        --model_type classification [--preprocess] [--max_steps N] [--learning_rate 0.001]

A linear model (logistic for classification, softmax with more than two classes, least squares
for regression) trained with mini-batches of --batch_size rows by FTRL (Google's default
optimizer, TensorFlow's update rule), SGD, Adam or Adagrad, with L1, L2 and L2-shrinkage
regularization. nn_common.py describes the model file and the metrics.
"""

from . import common, nn_common

ALGORITHM = "linear_learner"


def main(argv):
    p = common.ArgumentParser(ALGORITHM)
    common.add_data_arguments(p)
    nn_common.add_training_arguments(p, optimizer_default="ftrl")
    args = p.parse(argv)
    nn_common.train(args, ALGORITHM)


if __name__ == "__main__":
    common.run_main(main)
