"""``python -m torch_foo``: what this install is and whether it works;
``python -m torch_foo profile script.py [args]``: a script under the profiler."""

import sys

from torch_foo._cli.main import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
