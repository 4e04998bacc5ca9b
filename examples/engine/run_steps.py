"""The capture harness of the stand-in engine: its start-up, then scheduled steps, one capture
row each, written by `lawkit.capture`.

    python engine/run_steps.py [STEPS] [CAPTURE]      (defaults: 8 steps, captures/steps.csv)

Outside the hashed package `atom/`, so it may import lawkit. `cap.steps()` marks where the
steps begin (`lawkit.footprint.phase("steps")`), and each step times the host regions the
Sarathi-Serve captures have a column for, around the stand-in's scheduler, input preparation
(in the worker process), sampler and output processing. Under `lawkit footprint record` one run
gives both the captures and the footprint, with each unit's regions (docs/footprints.md).
"""

import sys

from atom.config import EngineConfig
from atom.engine import Engine
from atom.outputs import process_model_outputs
from atom.sampler import sample
from atom.worker.prepare_inputs import prepare_inputs

from lawkit import capture

REGIONS = ("schedule_s", "sampler_s", "prepare_inputs_s", "process_model_outputs_s")


def forward(engine: Engine, tokens: list[int], positions: list[int]) -> list[list[float]]:
    """The stand-in model's logits (`Engine.step`'s): on the GPU in a real engine, so outside
    the host regions."""
    vocab = engine.config.vocab_size
    return [[float((t * 7 + p + v) % vocab) for v in range(vocab)]
            for t, p in zip(tokens, positions, strict=True)]


def main(steps: int, path: str) -> None:
    with capture.open(path, features=("batch_size",), regions=REGIONS) as cap:
        engine = Engine(EngineConfig(max_num_seqs=4))
        for seq_id in range(6):
            engine.add_request(seq_id, prompt_len=16 + seq_id)
        cap.steps()
        try:
            for _ in range(steps):
                with cap.step():
                    with cap.region("schedule_s"):
                        batch = engine.scheduler.schedule()
                    cap.set(batch_size=len(batch))
                    with cap.region("prepare_inputs_s"):
                        tokens, positions = engine.worker.apply(prepare_inputs, (batch,))
                    logits = forward(engine, tokens, positions)
                    with cap.region("sampler_s"):
                        sampled = sample(logits)
                    with cap.region("process_model_outputs_s"):
                        process_model_outputs(batch, sampled)
        finally:
            engine.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8,
         sys.argv[2] if len(sys.argv) > 2 else "captures/steps.csv")
