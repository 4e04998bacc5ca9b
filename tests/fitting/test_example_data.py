"""The bundled example's captures are exactly what its conversion script makes."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sarathi-a100"


def test_the_source_captures_are_the_published_file() -> None:
    digest = hashlib.sha256((EXAMPLE / "cpu_overheads.csv").read_bytes()).hexdigest()
    assert digest == "79694db647120090f96192625c70d74dc79bd3c7e0bfcb053726413e2a25c548"


def test_the_checked_in_captures_are_what_convert_py_makes(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("convert", EXAMPLE / "convert.py")
    assert spec is not None and spec.loader is not None
    convert = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(convert)
    assert convert.convert(EXAMPLE / "cpu_overheads.csv", tmp_path / "captures.csv") == 78
    assert (tmp_path / "captures.csv").read_bytes() == (EXAMPLE / "captures.csv").read_bytes()
    header, first = (tmp_path / "captures.csv").read_text().splitlines()[:2]
    assert header == ("model,tp,batch_size,schedule_s,sampler_s,prepare_inputs_s,"
                      "process_model_outputs_s")
    assert first.startswith("codellama/CodeLlama-34b-Instruct-hf,2,8,0.00019615835238558552,")
