"""A stand-in for the `openenv` package (openenv-core), for tests only: PyPI is
not reachable from harnessd's test machines. Only openenv.core.generic_client
is provided."""
