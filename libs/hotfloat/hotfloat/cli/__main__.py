"""`python -m hotfloat.cli`: the same entry point as the `hotfloat` script."""

from .main import main

main()
