"""Footprint verdicts on a real project's releases: is every `untouched` byte-identical?

Run: .venv/bin/python bench/releases.py [--releases N] [--keep DIR]

DOWNLOADS AT RUN TIME: the last N (default 10) releases of `sqlparse` from PyPI and the one
before them (`pip index versions sqlparse`, then `pip download --no-deps --only-binary :all:
sqlparse==X` for each, into a temporary folder; nothing of theirs is kept or committed).

For each release R and its predecessor P, the predecessor's package is an engine workspace
(`[digest] packages = ["sqlparse"]`) with a harness that imports it (start-up), calls
``lawkit.footprint.phase("steps")`` and formats a fixed SQL file with six option sets, splits
it and lists its tokens' types, writing everything to one output file. The harness is recorded
once on P (`record_footprint`, the recorder of this checkout), and P's output kept. Then:

1. release: the whole of R in place of P: `footprint diff`'s verdict, and whether R's output is
   byte-identical to P's;
2. one file: P with a single file of R's (each file the release changed, added or removed), a
   tree a one-file commit could give. Trees that do not import or run are skipped (counted).

Every tree judged `untouched` must give output byte-identical to P's: the bench exits 1
naming any that does not. (Every release changes ``__version__`` in ``sqlparse/__init__.py``, a
module body that runs at import, so no whole release can be `untouched`: the one-file trees are
where `untouched` is said.) What it last measured, dated, is in docs/performance.md
(footprint verdicts on sqlparse's releases); docs/commands.md, `lawkit footprint`, says what
the verdicts mean for a user.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

try:
    from lawkit.config import load_workspace
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from lawkit.config import load_workspace

from lawkit.footprint.document import Footprint
from lawkit.footprint.record import record_footprint
from lawkit.footprint.trees import work_tree_sources
from lawkit.footprint.verdict import FootprintDiff, diff_footprint

PACKAGE = "sqlparse"

SQL = """-- monthly revenue by region, with a running total
WITH orders_2024 AS (
    SELECT o.id, o.customer_id, o.amount, o.created_at::date AS day
    FROM orders o WHERE o.created_at >= '2024-01-01' AND o.status <> 'cancelled'
), by_region AS (
    SELECT c.region, date_trunc('month', day) AS month, sum(amount) AS revenue,
           count(DISTINCT o.customer_id) AS customers
    FROM orders_2024 o JOIN customers c ON c.id = o.customer_id
    GROUP BY 1, 2
)
select region, month, revenue, customers,
       sum(revenue) over (partition by region order by month rows between unbounded preceding
       and current row) as running,
       case when revenue > 10000 then 'high' when revenue > 1000 then 'mid' else 'low' end tier
from by_region where region in (select region from regions where active = true)
order by region, month desc limit 100 offset 0;
INSERT INTO audit (who, what, at) VALUES ('bench', 'it''s a "test"', now()),
    ($1, :name, %(at)s);
UPDATE customers SET tier = 'gold', updated_at = CURRENT_TIMESTAMP
 WHERE id IN (SELECT customer_id FROM orders GROUP BY customer_id HAVING sum(amount) > 5e4);
/* a block comment
   over two lines */
CREATE TABLE IF NOT EXISTS regions (id serial PRIMARY KEY, region varchar(32) NOT NULL UNIQUE,
    active boolean DEFAULT true, created timestamp with time zone);
DELETE FROM audit WHERE at < now() - interval '90 days' RETURNING id;
"""

HARNESS = r'''
import sys
import lawkit.footprint
import sqlparse

OPTIONS = [
    {"reindent": True, "keyword_case": "upper"},
    {"reindent_aligned": True, "strip_comments": True},
    {"reindent": True, "indent_width": 2, "identifier_case": "lower", "wrap_after": 40},
    {"reindent": True, "comma_first": True, "use_space_around_operators": True},
    {"output_format": "python"},
    {"strip_whitespace": True, "keyword_case": "lower"},
]
sql = open("query.sql", encoding="utf-8").read()
lawkit.footprint.phase("steps")
out = []
for options in OPTIONS:
    out.append(sqlparse.format(sql, **options))
for statement in sqlparse.split(sql):
    parsed = sqlparse.parse(statement)[0]
    out.append(f"{parsed.get_type()}: " + " ".join(str(t.ttype) for t in parsed.flatten()))
open(sys.argv[1], "w", encoding="utf-8").write("\n----\n".join(out))
'''


@dataclass(frozen=True)
class Judged:
    """One tree compared with a footprint recorded on its predecessor."""

    release: str
    tree: str  # "release" or the file taken from the release
    verdict: str
    changed: int
    ran: int  # changed, absent or new units that count as steps or startup
    identical: bool


def releases(count: int) -> list[str]:
    """The last ``count`` + 1 final releases of the package, oldest first (PyPI, at run time)."""
    out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", PACKAGE],
                         capture_output=True, text=True, check=True).stdout
    line = next(x for x in out.splitlines() if x.startswith("Available versions:"))
    versions = [v.strip() for v in line.partition(":")[2].split(",")]
    final = [v for v in versions if re.fullmatch(r"\d+(\.\d+)*", v)]
    return list(reversed(final[: count + 1]))


def download(version: str, into: Path) -> Path:
    """The package folder of one release's wheel, unpacked under ``into``."""
    wheels = into / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary",
                    ":all:", "--dest", str(wheels), f"{PACKAGE}=={version}"], check=True,
                   capture_output=True)
    [wheel] = wheels.glob(f"{PACKAGE}-{version}-*.whl")
    dest = into / "releases" / version
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(dest, [n for n in zf.namelist() if n.startswith(f"{PACKAGE}/")])
    return dest / PACKAGE


def workspace(folder: Path, package: Path) -> Path:
    """An engine workspace holding a copy of one package, the SQL file and the harness."""
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(package, folder / PACKAGE)
    (folder / "lawkit.toml").write_text(f'[digest]\npackages = ["{PACKAGE}"]\n')
    (folder / "query.sql").write_text(SQL, encoding="utf-8")
    (folder / "harness.py").write_text(HARNESS, encoding="utf-8")
    return folder


def run_harness(root: Path) -> bytes | None:
    """The harness's output on one tree; None when the tree does not import or run."""
    result = subprocess.run([sys.executable, "harness.py", "out.txt"], cwd=root,
                            capture_output=True, check=False)
    return (root / "out.txt").read_bytes() if result.returncode == 0 else None


def judge(root: Path, footprint: Footprint) -> FootprintDiff:
    """The footprint's diff against a workspace's work tree."""
    ws = load_workspace(config=root / "lawkit.toml")
    return diff_footprint(footprint, work_tree_sources(ws.digest))


def changed_files(old: Path, new: Path) -> list[str]:
    """The .py files (relative to the package) that differ between two releases."""
    names = {p.relative_to(old).as_posix() for p in old.rglob("*.py")} | \
        {p.relative_to(new).as_posix() for p in new.rglob("*.py")}
    return sorted(n for n in names if _bytes(old / n) != _bytes(new / n))


def _bytes(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


def bench_pair(work: Path, before: str, old: Path, after: str, new: Path) -> list[Judged]:
    """Record on ``before``; judge the release ``after`` and each one-file tree."""
    root = workspace(work / f"recorded-{before}", old)
    ws = load_workspace(config=root / "lawkit.toml")
    footprint = record_footprint(ws, [sys.executable, "harness.py", "out.txt"],
                                 root / "fp.json", cwd=root).footprint
    expected = (root / "out.txt").read_bytes()
    judged = [judge_tree(work / "target", after, "release", new, footprint, expected)]
    for name in changed_files(old, new):
        one = work / "one-file" / PACKAGE
        shutil.rmtree(one.parent, ignore_errors=True)
        shutil.copytree(old, one)
        (one / name).unlink(missing_ok=True)
        if (new / name).exists():
            (one / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(new / name, one / name)
        judged.append(judge_tree(work / "target", after, name, one, footprint, expected))
    return judged


def judge_tree(folder: Path, release: str, label: str, package: Path, footprint: Footprint,
               expected: bytes) -> Judged:
    """One tree's verdict against the footprint, and whether its output is the recorded one."""
    root = workspace(folder, package)
    output = run_harness(root)
    if output is None:
        return Judged(release, label, "does not run", 0, 0, False)
    diff = judge(root, footprint)
    ran = sum(1 for u in diff.units if u.counts_as != "not run")
    return Judged(release, label, diff.verdict, len(diff.units), ran, output == expected)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--releases", type=int, default=10)
    parser.add_argument("--keep", type=Path, help="keep the downloads and trees here")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="lawkit-releases-"))
    try:
        versions = releases(args.releases)
        packages = {v: download(v, work) for v in versions}
        judged: list[Judged] = []
        for before, after in itertools.pairwise(versions):
            pair = bench_pair(work, before, packages[before], after, packages[after])
            judged += pair
            for j in pair:
                same = "-" if j.verdict == "does not run" else \
                    "identical" if j.identical else "differs"
                units = f"{j.changed} unit{'' if j.changed == 1 else 's'}"
                print(f"{before} -> {after}  {j.tree:<28} {j.verdict:<12} {units:>9} changed "
                      f"({j.ran} ran)  output {same}", flush=True)
        print(json.dumps(summary(judged), indent=1))
        wrong = [j for j in judged if j.verdict == "untouched" and not j.identical]
        for j in wrong:
            print(f"UNSOUND: {j.release} {j.tree}: untouched, but the output differs")
        return 1 if wrong else 0
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


def summary(judged: list[Judged]) -> dict[str, object]:
    """Counts by kind of tree and verdict, with how many gave byte-identical output."""
    out: dict[str, object] = {"python": sys.version.split()[0]}
    for kind in ("release", "one file"):
        rows = [j for j in judged if (j.tree == "release") == (kind == "release")]
        by: dict[str, dict[str, int]] = {}
        for j in rows:
            entry = by.setdefault(j.verdict, {"trees": 0, "identical": 0})
            entry["trees"] += 1
            entry["identical"] += j.identical
        out[kind] = by
    return out


if __name__ == "__main__":
    sys.exit(main())
