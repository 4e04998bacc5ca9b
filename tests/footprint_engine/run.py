"""The capture harness: start-up, a subprocess, the steps, then a pool of forked workers that
the pool terminates (SIGTERM) once their work is done."""

import multiprocessing
import subprocess
import sys

from atom.runner import Runner
from atom.worker import work

import lawkit.footprint


def main():
    runner = Runner()
    subprocess.run([sys.executable, "-c", "from atom.worker import in_subprocess; "
                    "in_subprocess()"], check=True)
    lawkit.footprint.phase("steps")
    runner.run()
    pool = multiprocessing.get_context("fork").Pool(2)
    assert pool.map(work, range(6)) == [x * x for x in range(6)]
    pool.terminate()
    pool.join()


if __name__ == "__main__":
    main()
