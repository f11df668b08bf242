"""A stand-in `sglang` package for tests (../standin_server.py)."""
