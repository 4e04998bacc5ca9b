"""Helpers shared by the tests and the benchmarks, never imported by lawkit itself.

- `workspaces`: law files and workspaces with correct body hashes (tests and bench/), a
  workspace committed to git, a folder to fit captures in, a snapshot of the files below one.
- `footprints`: footprints built from the document model, as a recorder would write them.
- `reliability`: bounded runs, the one-line error's shape, crash trials (tests and bench/).
- `samples`: sample law-file text.
- `lawrepo`: the one git runner, and repositories of an engine and its law files built
  commit by commit (the review scenario).
- `wheels`: tiny real wheels, and a venv they are installed into by pip, offline.
- `installs`: projects with their own build backend, installed by pip (editable, from a wheel,
  as an egg-info), offline, and the environment a venv's command is recorded in.
- `rows`: generated capture rows with outliers, for the fitting methods' tests.
- `environments`: a repository of laws whose footprint recorded its environment, and a lock.
- `cli`: lawkit's command line run in the test's own process.

How each side imports them (tests never import bench/): pytest puts the repository root on
`sys.path` (`pythonpath = ["."]` in pyproject.toml), so a test writes
`from testing.workspaces import make_workspace`; a bench script, run as
`python bench/NAME.py`, inserts the repository root itself (`sys.path.insert(0, ROOT)`) before
the same import. Fixtures built on these live in tests/conftest.py and tests/<wing>/conftest.py.
"""
