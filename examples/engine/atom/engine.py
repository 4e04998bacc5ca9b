"""Stand-in engine: a start-up (check the config, build the scheduler and the input worker),
then one call of `step` per forward step."""

from __future__ import annotations

import multiprocessing

from atom.config import EngineConfig, check_config
from atom.outputs import process_model_outputs
from atom.sampler import sample
from atom.scheduler import Scheduler, Sequence
from atom.worker.prepare_inputs import prepare_inputs


class Engine:
    def __init__(self, config: EngineConfig) -> None:
        self.config = check_config(config)
        self.scheduler = Scheduler(config.max_num_seqs)
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        self.worker = context.Pool(1)  # prepares the inputs of each step

    def add_request(self, seq_id: int, prompt_len: int) -> None:
        self.scheduler.add(Sequence(seq_id, prompt_len))

    def step(self) -> list[str]:
        """One forward step: schedule, prepare inputs (in the worker), sample, process outputs."""
        batch = self.scheduler.schedule()
        tokens, positions = self.worker.apply(prepare_inputs, (batch,))
        vocab = self.config.vocab_size
        logits = [[float((t * 7 + p + v) % vocab) for v in range(vocab)]
                  for t, p in zip(tokens, positions, strict=True)]
        return process_model_outputs(batch, sample(logits))

    def close(self) -> None:
        self.worker.close()
        self.worker.join()
