"""The accelsim version: written here only (pyproject.toml and the package read it)."""

__version__ = "0.1.0"
