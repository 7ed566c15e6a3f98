"""The package list, which pyproject.toml cannot express: the packages `find` discovers plus the data-only
ones that [tool.setuptools.package-dir] maps onto sql/migrations/ and cassandra/ (they stay where they are
in the repository and install as package data, see shared/package_data.py)."""
from setuptools import find_packages, setup

MAPPED_PACKAGES = ["blackwidow.migrations", "blackwidow.migrations.versions", "shared.revisions.cql"]

setup(packages=find_packages(include=["blackwidow*", "spawn*", "shared*"]) + MAPPED_PACKAGES)
