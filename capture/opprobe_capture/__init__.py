"""opprobe's capture: the Python that runs inside the user's process and records the aten calls of a PyTorch script
into a trace (schemas/trace.schema.json). Its modules, by responsibility:

    __main__.py        the one entry point, run by path (`python .../opprobe_capture ...`); picks the tool below
    runner.py          the capture's command line: checks the arguments, then runs the script (recorder.run_script)
    recorder.py        the TorchDispatchMode and the recorder that keys, counts and records every call
    schema_types.py    the declared argument types of an operator schema's text (shared with
                       analyzer/loaders/gen_op_schemas.py); top_level.py its bracket-aware splitter
    standins.py        torch_xla / torchax / CUDA stand-ins where those are missing
    real_torchax.py    the real torchax, recorded where it answers a call
    steps.py           the graphs torch_xla would run (the trace's `graphs`)
    program.py         the first training step's data flow (`--program`)
    progress.py        the counter of calls captured so far
    native.py          the fast path (fastpath.cpp, a PyTorch C++ extension): building and loading it
    torch_xla_watch.py the real torch_xla's host fallbacks (`analyze --lowering torch_xla`)
    torchax_lower.py   torchax's own lowering of each call (`analyze --lowering torchax`)

Importing the package imports nothing else (no torch): analyzer/loaders/gen_op_schemas.py imports schema_types.py.
See docs/capture.md.
"""
