"""What the recorder's start-up imports into every measured process, beyond the recorder."""

from __future__ import annotations

import json
import subprocess
import sys

# the start-up hook imports these in every measured process (it imports nothing later)
MEASURED = ("lawkit.footprint.measured.process", "lawkit.footprint.measured.sysmon")
HEAVY = ("urllib.request", "http.client", "email", "importlib.metadata", "zipfile")


def test_the_environment_modules_a_measured_process_imports_leave_urllib_and_metadata_out() -> None:
    code = (f"import importlib, json, sys\nfor m in {MEASURED!r}: importlib.import_module(m)\n"
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert json.loads(result.stdout) == []
