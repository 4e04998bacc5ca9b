"""What `lawkit footprint record` costs the steps it records, on Python-Markdown.

Run: .venv/bin/python bench/footprint_steps.py [--rounds 11]   (needs `pip install markdown`)

The workload (docs/footprints.md): Python-Markdown, a pure-Python engine nobody here
wrote, copied into a workspace whose digest hashes it; 30 conversions of a fixed 40 KB
document, ``lawkit.footprint.phase("steps")`` after the first. Each round runs it bare, under
`lawkit footprint record`, and bare again, interleaved; each run's fastest step is kept; the
figure is the median over rounds of recorded / mean of the two bare runs, beside the A/A ratio
of the two bare runs (a machine whose A/A is off by more than 3% is too noisy to judge). The
whole process (start-up, cutting units, writing the footprint) is reported beside it.

Then the same with each conversion split into three regions (``lawkit.footprint.region``:
parse, tree, serialize; re-armed at every enter and exit): each region's recorded over
unrecorded time (fastest of the run, median over rounds) against its length; target 1.05x for
regions of 5 ms or more.

What it last measured, dated, is in docs/performance.md (footprint record on the steps
it records).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEPS = 30
DOC_BYTES = 40_000
REGIONS = ("parse_s", "tree_s", "serialize_s")

HARNESS = r'''
import json, sys, time
import lawkit.footprint as fp
import markdown

clock = time.perf_counter_ns


def document(size):
    # A fixed document: headings, paragraphs with emphasis and links, lists, code, quotes.
    parts, i = [], 0
    while sum(map(len, parts)) < size:
        i += 1
        parts.append(f"## Section {i}\n\nSome *emphasis*, **strong** text, `code {i}` and a "
                     f"[link](http://example.com/{i}) in paragraph {i}.\n\n"
                     f"- item {i}.1\n- item {i}.2 with _more_\n    - nested {i}\n\n"
                     f"> a quote {i}\n\n    indented code {i}\n\n1. one\n2. two\n\n")
    return "".join(parts)[:size]


def convert_in_regions(md, text, spans):
    # Markdown.convert, cut into three regions, each timed as lawkit.capture would.
    md.reset()
    a = clock()
    with fp.region("parse_s"):
        md.lines = text.split("\n")
        for prep in md.preprocessors:
            md.lines = prep.run(md.lines)
        root = md.parser.parseDocument(md.lines).getroot()
    b = clock()
    with fp.region("tree_s"):
        for tp in md.treeprocessors:
            new = tp.run(root)
            if new is not None:
                root = new
    c = clock()
    with fp.region("serialize_s"):
        out = md.serializer(root)
        out = out[out.index("<div>") + 5:out.rindex("</div>")].strip()
        for pp in md.postprocessors:
            out = pp.run(out)
    spans.append((b - a, c - b, clock() - c))
    return out.strip()


out, mode, size, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
text = document(size)
md = markdown.Markdown()
times, spans = [], []
for step in range(steps):
    if step == 1:
        fp.phase("steps")
    t0 = clock()
    in_regions = mode == "regions" and step > 0  # regions are parts of steps
    html = convert_in_regions(md, text, spans) if in_regions else md.convert(text)
    times.append(clock() - t0)
assert html == markdown.markdown(text)
with open(out, "w") as f:
    json.dump({"steps": times[1:], "regions": spans}, f)
'''


Run = tuple[dict[str, list[int]], float]
"""A run's step (and region) times, and its wall time."""


def _workspace(root: Path) -> Path:
    """A workspace whose digest hashes a copy of Python-Markdown."""
    import markdown

    shutil.copytree(Path(markdown.__file__).parent, root / "markdown",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (root / "lawkit.toml").write_text('[digest]\npackages = ["markdown"]\n')
    (root / "harness.py").write_text(HARNESS)
    return root


def _run(root: Path, mode: str, recorded: bool) -> Run:
    """One run of the harness (under `footprint record` when ``recorded``); its wall time."""
    out = root / f"steps-{mode}-{int(recorded)}.json"
    bare = [sys.executable, "harness.py", str(out), mode, str(DOC_BYTES), str(STEPS)]
    argv = ([sys.executable, "-m", "lawkit", "footprint", "record", "--out", "fp.json", "--",
             *bare] if recorded else bare)
    t0 = time.perf_counter()
    subprocess.run(argv, cwd=root, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    doc: dict[str, list[int]] = json.loads(out.read_text())
    return doc, wall


def _rounds(root: Path, mode: str, rounds: int) -> list[tuple[Run, Run, Run]]:
    """Interleaved rounds: bare, recorded, bare."""
    return [(_run(root, mode, False), _run(root, mode, True), _run(root, mode, False))
            for _ in range(rounds)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11, help="interleaved rounds")
    measure_steps(parser.parse_args().rounds)
    return 0


def measure_steps(rounds: int) -> None:
    """Print the step, process and region figures of ``rounds`` interleaved rounds."""
    try:
        import markdown  # noqa: F401
    except ImportError:
        print("steps    skipped: Python-Markdown is not installed (pip install markdown)")
        return
    with tempfile.TemporaryDirectory(prefix="bench-steps-") as tmp:
        root = _workspace(Path(tmp))
        walls: dict[bool, list[float]] = {False: [], True: []}
        ratios, aa = [], []
        for (a, wa), (r, wr), (b, wb) in _rounds(root, "plain", rounds):
            fa, fr, fb = min(a["steps"]), min(r["steps"]), min(b["steps"])
            ratios.append(fr / ((fa + fb) / 2))
            aa.append(fb / fa)
            walls[False] += [wa, wb]
            walls[True].append(wr)
        fp = json.loads((root / "fp.json").read_text())
        ran = sum(1 for f in fp["files"].values() for u in f["units"].values() if u["phases"])
        ratio, a_a = statistics.median(ratios), statistics.median(aa)
        noisy = abs(a_a - 1) > 0.03
        print(f"python {sys.version.split()[0]}, recorder {fp['recorder']}, {os.cpu_count()} "
              f"CPUs; Python-Markdown: {len(fp['files'])} files, {ran} units ran; {STEPS} "
              f"conversions of {DOC_BYTES // 1000} KB, {rounds} rounds bare/recorded/bare")
        print(f"steps    recorded/bare {ratio:.3f}x (median of per-round ratios of the fastest "
              f"step; target <= 1.05x)  A/A {a_a:.3f}x"
              + ("  TOO NOISY TO JUDGE (A/A off by more than 3%)" if noisy else ""))
        print(f"process  recorded {statistics.median(walls[True]):.2f} s  bare "
              f"{statistics.median(walls[False]):.2f} s (median wall time: start-up, steps, "
              "cutting units, writing)")
        per_region: dict[str, list[float]] = {r: [] for r in REGIONS}
        region_aa: dict[str, list[float]] = {r: [] for r in REGIONS}
        lengths: dict[str, list[float]] = {r: [] for r in REGIONS}
        step_ratios, step_aa = [], []
        for (a, _), (r, _), (b, _) in _rounds(root, "regions", rounds):
            for i, name in enumerate(REGIONS):
                fa = min(s[i] for s in a["regions"])
                fr = min(s[i] for s in r["regions"])
                fb = min(s[i] for s in b["regions"])
                per_region[name].append(fr / ((fa + fb) / 2))
                region_aa[name].append(fb / fa)
                lengths[name].append((fa + fb) / 2 / 1e6)
            fa, fr, fb = min(a["steps"]), min(r["steps"]), min(b["steps"])
            step_ratios.append(fr / ((fa + fb) / 2))
            step_aa.append(fb / fa)
        print(f"regions  steps with 3 regions: recorded/bare "
              f"{statistics.median(step_ratios):.3f}x  A/A {statistics.median(step_aa):.3f}x")
        for name in REGIONS:
            length = statistics.median(lengths[name])
            target = " (target <= 1.05x)" if length >= 5 else " (under 5 ms: no target)"
            print(f"  {name:12} {length:6.2f} ms  recorded/bare "
                  f"{statistics.median(per_region[name]):.3f}x{target}  A/A "
                  f"{statistics.median(region_aa[name]):.3f}x")


if __name__ == "__main__":
    sys.exit(main())
