"""The capture harness of the stand-in engine: its start-up, then scheduled steps.

Outside the hashed package `atom/`, so it may import lawkit: `lawkit.footprint.phase("steps")`
marks where the steps begin (a no-op unless `lawkit footprint record` runs this script).
"""

import sys

from atom.config import EngineConfig
from atom.engine import Engine

import lawkit.footprint


def main(steps: int) -> None:
    engine = Engine(EngineConfig(max_num_seqs=4))
    for seq_id in range(6):
        engine.add_request(seq_id, prompt_len=16 + seq_id)
    lawkit.footprint.phase("steps")
    try:
        for _ in range(steps):
            engine.step()
    finally:
        engine.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8)
