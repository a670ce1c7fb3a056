"""The command line of ``python -m torch_foo`` (see main.py)."""
