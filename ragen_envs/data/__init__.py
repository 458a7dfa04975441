"""Data files shipped with ragen-envs (a package so that setuptools installs them as package data)."""
