from setuptools import setup

setup(name="trainer", version="0.1", packages=["trainer"])
