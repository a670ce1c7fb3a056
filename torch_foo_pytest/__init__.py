"""torch_foo's pytest plugin, registered as ``torch_foo`` (the ``pytest11`` entry point).

pytest imports every installed plugin in every run, so this module stays
light: it adds the ``--foo*`` options and nothing else unless ``--foo`` is
given. It imports neither torch nor torch_foo: any module of the torch_foo
package imports torch first (``torch_foo/__init__.py``), which is why this
part is a package of its own. With ``--foo`` it sets the simulated machine's
``FOO_SIM_*`` variables before conftest files can import torch, then hands
over to :mod:`torch_foo.testing._plugin`.
"""

import os
import sys

import pytest

# The strict mode's launch delay when the environment sets none: long
# enough that a kernel queued without a wait reliably runs after the host
# has moved on, short enough for a suite of small tests (see
# docs/guide/testing-your-library.md for what it costs).
STRICT_LAUNCH_DELAY_US = "100"

_OPTIONS_NEEDING_FOO = ("foo_devices", "foo_memory", "foo_strict", "foo_report", "foo_faults")

# (the FOO_SIM_* values the options ask for, their values before, whether the runtime had started)
_MACHINE = pytest.StashKey[tuple]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("torch_foo", "torch_foo: test on the simulated accelerator 'foo'")
    group.addoption("--foo", action="store_true", default=False,
                    help="run with foo as the accelerator: each test's device errors fail that test")
    group.addoption("--foo-devices", type=int, default=None, metavar="N",
                    help="number of simulated foo devices (FOO_SIM_DEVICE_COUNT)")
    group.addoption("--foo-memory", default=None, metavar="SIZE",
                    help="memory of each foo device, e.g. 2GiB (FOO_SIM_DEVICE_MEMORY)")
    group.addoption("--foo-strict", action="store_true", default=False,
                    help="make GPU bugs show: launch delay, the race detector in raise mode, launch blocking off")
    group.addoption("--foo-report", default=None, metavar="PATH",
                    help="write a JSON report: per test, its fallback operators, host syncs, races, kernel warnings")
    group.addoption("--foo-faults", default=None, metavar="SPEC",
                    help="inject faults, e.g. oom@3,kernel@aten::mm:2 (FOO_SIM_FAULTS)")


def _simulated_machine(options) -> dict[str, str]:
    """The FOO_SIM_* values the options ask for."""
    env = {}
    if options.foo_devices is not None:
        if not 1 <= options.foo_devices <= 64:
            raise pytest.UsageError(f"--foo-devices={options.foo_devices}: expected an integer from 1 to 64")
        env["FOO_SIM_DEVICE_COUNT"] = str(options.foo_devices)
    if options.foo_memory is not None:
        env["FOO_SIM_DEVICE_MEMORY"] = options.foo_memory
    if options.foo_strict:
        env["FOO_SIM_RACE_CHECK"] = "raise"
        env["FOO_SIM_LAUNCH_BLOCKING"] = "0"
        delay = os.environ.get("FOO_SIM_LAUNCH_DELAY_US", "").strip()
        env["FOO_SIM_LAUNCH_DELAY_US"] = delay if delay not in ("", "0") else STRICT_LAUNCH_DELAY_US
    if options.foo_faults is not None:
        env["FOO_SIM_FAULTS"] = options.foo_faults
    return env


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    # Before conftest files load: one of them may import torch and start
    # the runtime, which reads FOO_SIM_* once.
    options = early_config.known_args_namespace
    if not getattr(options, "foo", False):
        given = [f"--{name.replace('_', '-')}" for name in _OPTIONS_NEEDING_FOO
                 if getattr(options, name, None) not in (None, False)]
        if given:
            raise pytest.UsageError(f"{', '.join(given)} given without --foo")
        return
    _configure_machine(early_config, options)


def _configure_machine(config: pytest.Config, options) -> None:
    """Sets the FOO_SIM_* variables the options ask for; remembers what they were and whether the
    runtime had already started (then they came too late: the plugin checks what is in force)."""
    wanted = _simulated_machine(options)
    before = {name: os.environ.get(name) for name in wanted}
    config.stash[_MACHINE] = (wanted, before, _runtime_started())
    os.environ.update(wanted)


def _runtime_started() -> bool:
    """Whether foo's runtime already runs in this process (another plugin started it), without
    importing anything."""
    foo = getattr(sys.modules.get("torch"), "foo", None)
    return bool(foo is not None and foo.is_initialized())


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "foo_faults(spec): with --foo, inject faults (as --foo-faults) during "
                                       "this test, counted from its start")
    if not config.getoption("foo"):
        return
    if _MACHINE not in config.stash:  # loaded after the initial conftests (a conftest's pytest_plugins)
        _configure_machine(config, config.option)
    from torch_foo.testing._plugin import activate

    activate(config, *config.stash[_MACHINE])
