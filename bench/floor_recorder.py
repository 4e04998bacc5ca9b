"""The floor both footprint benches measure lawkit's recorder against: a minimal
``sys.monitoring`` recorder, ``PY_START`` and ``PY_RESUME`` on the engine's code objects only
(those of functions whose file is under ``root``, and the code nested in them, as lawkit arms
only hashed code), each answered with ``DISABLE``. The harness re-arms (the function returned,
``restart_events``) at every switch. No other rule: it is not sound with threads, and records
nothing a verdict could use. Copied into each bench's workspace and imported by its harness."""

import gc
import sys
import types

TOOL_ID = 3


def arm(root: str):
    """Take the tool id, arm the code under ``root``; the re-arm to call at every switch."""
    mon = sys.monitoring
    mon.use_tool_id(TOOL_ID, "floor")

    def on_start(code, offset):
        return mon.DISABLE

    mon.register_callback(TOOL_ID, mon.events.PY_START, on_start)
    mon.register_callback(TOOL_ID, mon.events.PY_RESUME, on_start)
    todo = [o.__code__ for o in gc.get_objects() if isinstance(o, types.FunctionType)
            and o.__code__.co_filename.startswith(root)]
    while todo:
        code = todo.pop()
        mon.set_local_events(TOOL_ID, code, mon.events.PY_START | mon.events.PY_RESUME)
        todo.extend(k for k in code.co_consts if isinstance(k, types.CodeType))
    return mon.restart_events
