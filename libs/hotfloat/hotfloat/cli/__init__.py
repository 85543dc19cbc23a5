"""The `hotfloat` command line: thin click commands over the library."""
