"""Dispatches ``python -m torch_foo [profile script.py args... | testing-paths [name]]``."""

import sys

USAGE = """usage: python -m torch_foo                         versions, the simulated machine, a self-check
       python -m torch_foo profile SCRIPT [ARGS...]  run SCRIPT under torch.profiler and memory
                                                    history; write its chrome trace and memory
                                                    snapshot page beside it
       python -m torch_foo testing-paths [NAME]     the device spec files for transformers, diffusers
                                                    and PyTorch's tests (NAME: one of them, path only)"""


def main(argv: list[str]) -> int:
    if not argv:
        from torch_foo._cli.info import report

        return report()
    if argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if argv[0] == "profile":
        if len(argv) < 2:
            print("python -m torch_foo profile: which script? (profile SCRIPT [ARGS...])", file=sys.stderr)
            print(USAGE, file=sys.stderr)
            return 2
        from torch_foo._cli.profile_script import profile_script

        return profile_script(argv[1], argv[2:])
    if argv[0] == "testing-paths":
        from torch_foo._cli.testing_paths import testing_paths

        return testing_paths(argv[1:])
    print(f"python -m torch_foo: unknown command {argv[0]!r}", file=sys.stderr)
    print(USAGE, file=sys.stderr)
    return 2
