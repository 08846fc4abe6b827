"""Trainyard's implementation of cloudml-hypertune's public API (compat §7).

Trainers written for AI Platform report their tuning metric with

    import hypertune
    hpt = hypertune.HyperTune()
    hpt.report_hyperparameter_tuning_metric(
        hyperparameter_metric_tag='accuracy', metric_value=0.97, global_step=1000)

and the service reads the metric file that the library writes. Trainyard puts this package on
every trial's path, so such trainers run unchanged; a trainer that installs Google's
cloudml-hypertune gets the same file format from either.
"""

from .hypertune import HyperTune

__all__ = ["HyperTune"]
