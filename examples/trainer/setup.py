"""Packaging for the example trainer: ``python setup.py sdist`` builds the archive that a
CustomJob's ``python_package_spec.package_uris`` can point at."""

from setuptools import find_packages, setup  # type: ignore[import-untyped]

setup(
    name="trainer",
    version="0.1.0",
    description="Example numpy-only trainer for the local Vertex AI training emulator",
    packages=find_packages(include=["trainer", "trainer.*"]),
    python_requires=">=3.11",
    install_requires=["numpy"],
)
