"""``python -m torch_foo profile script.py [args]``: runs a script as ``python
script.py args`` would, under torch.profiler (CPU and foo activity) and with
foo memory history recorded, then writes beside the script:

  script.foo_trace.json     chrome trace (chrome://tracing, ui.perfetto.dev)
  script.foo_memory.pickle  memory snapshot (torch.cuda._memory_viz, pytorch.org/memory_viz)
  script.foo_memory.html    its memory timeline, rendered by torch.cuda._memory_viz
"""

import os
import pickle
import runpy
import sys
import traceback

import torch

MAX_MEMORY_ENTRIES = 200_000  # the memory trace keeps the newest entries per device


def _outputs(script: str) -> dict[str, str]:
    base = os.path.splitext(os.path.abspath(script))[0]
    return {"trace": base + ".foo_trace.json", "pickle": base + ".foo_memory.pickle", "html": base + ".foo_memory.html"}


def profile_script(script: str, args: list[str]) -> int:
    if not os.path.isfile(script):
        print(f"python -m torch_foo profile: no such script: {script}", file=sys.stderr)
        return 2
    from torch.cuda import _memory_viz
    from torch.profiler import ProfilerActivity, profile

    outputs = _outputs(script)
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    status = 0
    torch.foo.memory._record_memory_history("all", context="all", stacks="python", max_entries=MAX_MEMORY_ENTRIES)
    try:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
            try:
                runpy.run_path(script, run_name="__main__")
            except SystemExit as e:
                status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException:
                traceback.print_exc()
                status = 1
        snapshot = torch.foo.memory._snapshot()
    finally:
        torch.foo.memory._record_memory_history(None)

    prof.export_chrome_trace(outputs["trace"])
    with open(outputs["pickle"], "wb") as f:
        pickle.dump(snapshot, f)
    with open(outputs["html"], "w") as f:
        f.write(_memory_viz.trace_plot(snapshot))

    print(prof.key_averages().table(sort_by="self_device_time_total", row_limit=15), file=sys.stderr)
    print(f"chrome trace:     {outputs['trace']}", file=sys.stderr)
    print(f"memory snapshot:  {outputs['pickle']}", file=sys.stderr)
    print(f"memory timeline:  {outputs['html']}  (its viewer script loads from cdn.jsdelivr.net)", file=sys.stderr)
    return status
