"""Reproducible OCI images: their specs and locks, the build, the identity they carry, and running them."""
