"""Stand-in input preparation: flattens a batch into token and position lists."""

from __future__ import annotations

from atom.scheduler import Sequence


def prepare_inputs(batch: list[Sequence]) -> tuple[list[int], list[int]]:
    """Token ids and positions for one decode step of every sequence in the batch."""
    tokens = [s.seq_id for s in batch]
    positions = [s.prompt_len + s.generated for s in batch]
    return tokens, positions
