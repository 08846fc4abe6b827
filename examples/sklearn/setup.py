from setuptools import find_packages, setup

setup(
    name="trainer",
    version="0.1",
    packages=find_packages(include=["trainer", "trainer.*"]),
    # Satisfied by Debian's python3-sklearn in the default runtime (no download needed).
    install_requires=["scikit-learn"],
    description="Sample scikit-learn trainer for Trainyard",
)
