from setuptools import find_packages, setup

setup(
    name="trainer",
    version="0.1",
    packages=find_packages(include=["trainer", "trainer.*"]),
    # scikit-learn comes from Debian's python3-sklearn in the default runtime (no download).
    # `hypertune` is not listed: Trainyard puts its own copy on every trial's path. For Google's
    # AI Platform, add "cloudml-hypertune" here, as Google's samples do.
    install_requires=["scikit-learn"],
    description="Hyperparameter tuning sample (scikit-learn) for Trainyard",
)
