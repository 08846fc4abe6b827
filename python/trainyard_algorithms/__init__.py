"""Trainyard's built-in algorithms: the trainers that run for AI Platform's algorithm images.

A job whose masterConfig.imageUri is gcr.io/cloud-ml-algos/<name> (any tag) runs the module of
that name here on the runtime's Python (Debian's python3-xgboost, python3-sklearn, python3-torch)
instead of pulling the image:

    boosted_trees          -> trainyard_algorithms.boosted_trees   (XGBoost, one replica)
    xgboost_dist           -> trainyard_algorithms.xgboost_dist    (XGBoost, master + workers)
    linear_learner_cpu/gpu -> trainyard_algorithms.linear_learner  (PyTorch)
    wide_deep_learner_*    -> trainyard_algorithms.wide_deep       (PyTorch)

docs/builtin-algorithms.md describes their arguments, inputs, outputs and metrics, and where
they differ from Google's.
"""
