"""Stand-in scheduler: picks the sequences that run in the next forward step."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Sequence:
    seq_id: int
    prompt_len: int
    generated: int = 0


@dataclass
class Scheduler:
    max_num_seqs: int
    waiting: list[Sequence] = field(default_factory=list)
    running: list[Sequence] = field(default_factory=list)

    def add(self, seq: Sequence) -> None:
        """Queue a sequence until there is room for it."""
        self.waiting.append(seq)

    def schedule(self) -> list[Sequence]:
        """Admit waiting sequences up to max_num_seqs; host time grows with the batch."""
        while self.waiting and len(self.running) < self.max_num_seqs:
            self.running.append(self.waiting.pop(0))
        return list(self.running)

    def debug_dump(self) -> str:
        """The queues, for a person debugging the scheduler (no run calls it)."""
        lines = [f"waiting {s.seq_id}" for s in self.waiting]
        lines += [f"running {s.seq_id}" for s in self.running]
        return "\n".join(lines)
