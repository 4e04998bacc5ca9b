"""Stand-in output processing: appends sampled tokens and detokenizes."""

from __future__ import annotations

from atom.scheduler import Sequence


def process_model_outputs(batch: list[Sequence], tokens: list[int]) -> list[str]:
    """Advance each sequence by its sampled token and return the text pieces."""
    for seq in batch:
        seq.generated += 1
    return [chr(32 + t % 95) for t in tokens]
