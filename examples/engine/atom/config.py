"""Stand-in engine configuration: checked once, at start-up."""

from __future__ import annotations

from dataclasses import dataclass

MAX_BATCH = 256


@dataclass(frozen=True)
class EngineConfig:
    max_num_seqs: int = 8
    vocab_size: int = 32


def check_config(config: EngineConfig) -> EngineConfig:
    """Refuse a configuration the engine cannot run."""
    if not 0 < config.max_num_seqs <= MAX_BATCH:
        raise ValueError(f"max_num_seqs must be in 1..{MAX_BATCH}, got {config.max_num_seqs}")
    if config.vocab_size < 2:
        raise ValueError(f"vocab_size must be at least 2, got {config.vocab_size}")
    return config
