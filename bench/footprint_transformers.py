"""What `lawkit footprint record` costs a real serving engine's host regions: transformers'
continuous batching on a GPU.

Run: python bench/footprint_transformers.py [--rounds 3] [--requests 32] [--new-tokens 160]
     (needs a CUDA GPU, torch and transformers 5 beside lawkit; not part of the suite)

The engine is transformers' continuous batching (``transformers/generation/continuous_batching``,
the folder the workspace hashes), serving a small random Llama (no download) in bfloat16: its
warm-up (CUDA graph capture through the step code) on the main thread, then its step loop in
its own background thread while the main thread waits for results, as it does in
``generate_batch``. The harness wraps four of the engine's methods in ``lawkit.capture``
regions, each a host region a simulator prices:

- ``schedule_s``: the scheduler's ``schedule_batch``;
- ``prepare_s``: the inputs' ``prepare_batch_tensors``;
- ``forward_s``: the processor's ``_generation_step`` (forward, sampling, the copy back);
- ``update_s``: the processor's ``update_batch``.

Each step of the loop is a ``cap.step``, a warm-up run a warm-up step; every request is queued
before the loop starts, with greedy decoding and no end token, so every run schedules the same
batches. Variants, one process each, interleaved in every round: ``bare`` (lawkit imported,
capturing, not recording), ``A/A`` (bare again, the control), ``floor`` (a minimal recorder in
the harness: ``sys.monitoring`` ``PY_START``/``PY_RESUME`` on the engine's code objects, each
answered with ``DISABLE``, ``restart_events`` at every region's enter and exit, no other rule)
and ``lawkit`` (the bare command under ``lawkit footprint record``). Per region it prints the
median over the steps of all rounds of the paired ratio variant/bare (step i of a run against
step i of the same round's bare run), read from the captures themselves. Target: every region
of 0.1 ms or more at most 1.05x. What it last measured, dated, is in docs/performance.md.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REGIONS = ("schedule_s", "prepare_s", "forward_s", "update_s")
VARIANTS = ("bare", "A/A", "floor", "lawkit")
PACKAGE = "transformers/generation/continuous_batching"

HARNESS = r'''
import sys
import torch
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM
from transformers.generation import ContinuousBatchingConfig
from transformers.generation.continuous_batching import continuous_api, input_outputs
from transformers.generation.continuous_batching import model_runner, scheduler

from lawkit import capture

out, requests, new_tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
floor = sys.argv[4] == "floor"
REGIONS = ("schedule_s", "prepare_s", "forward_s", "update_s")
torch.manual_seed(0)
config = LlamaConfig(vocab_size=4096, hidden_size=512, intermediate_size=1024,
                     num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
                     max_position_embeddings=2048)
model = LlamaForCausalLM(config).to("cuda", torch.bfloat16).eval()
generation = GenerationConfig(max_new_tokens=new_tokens, do_sample=False, eos_token_id=-1,
                              pad_token_id=0)
batching = ContinuousBatchingConfig(use_async_batching=False)
prompts = [[(7 * i + 13 * j) % 4000 + 10 for j in range(24 + i % 9)] for i in range(requests)]

cap = capture.open(out, features=("batch",), regions=REGIONS)

restart = None
if floor:  # the minimal recorder: re-arm at every switch, no other rule
    import os
    import floor_recorder
    restart = floor_recorder.arm(os.path.join(os.path.dirname(continuous_api.__file__), ""))

def region(name, method):
    def timed(*args, **kwargs):
        with cap.region(name):
            return method(*args, **kwargs)
    def timed_floor(*args, **kwargs):
        with cap.region(name):
            restart()
            try:
                return method(*args, **kwargs)
            finally:
                restart()
    return timed_floor if floor else timed

for cls in (scheduler.FIFOScheduler, scheduler.PrefillFirstScheduler):
    cls.schedule_batch = region("schedule_s", cls.schedule_batch)
io = input_outputs.ContinuousBatchingIOs
io.prepare_batch_tensors = region("prepare_s", io.prepare_batch_tensors)
proc = continuous_api.ContinuousBatchProcessor
proc._generation_step = region("forward_s", proc._generation_step)
proc.update_batch = region("update_s", proc.update_batch)

steps = [0]
body = continuous_api.ContinuousBatchingManager._generation_loop_body
def loop_body(self, processor, bootstrapping):
    if not (processor.scheduler.has_pending_requests() or not self.input_queue.empty()):
        return body(self, processor, bootstrapping)  # waiting for requests: no step
    steps[0] += 1
    with cap.step(batch=steps[0]):
        return body(self, processor, bootstrapping)
continuous_api.ContinuousBatchingManager._generation_loop_body = loop_body

warm = model_runner.ModelRunner.run_one_warmup
def warmup(self, *args, **kwargs):
    with cap.step(batch=0):
        return warm(self, *args, **kwargs)
model_runner.ModelRunner.run_one_warmup = warmup

with cap:
    manager = model.init_continuous_batching(generation_config=generation,
                                             continuous_batching_config=batching)
    manager.warmup()
    for i, prompt in enumerate(prompts):
        manager.add_request(prompt, request_id=f"r{i}", max_new_tokens=new_tokens)
    cap.steps()
    manager.start()
    done = 0
    while done < requests:
        result = manager.get_result(timeout=30)
        if result is None:
            sys.exit("no result in 30 s")
        if result.is_finished():
            done += 1
    manager.stop(block=True)
'''


def run(workspace: Path, variant: str, index: int, requests: int, new_tokens: int) -> Path:
    """One run of the harness; the path of its captures."""
    out = workspace / f"run{index}.csv"
    command = [sys.executable, str(workspace / "harness.py"), str(out), str(requests),
               str(new_tokens), variant]
    if variant == "lawkit":
        command = [sys.executable, "-m", "lawkit", "footprint", "record", "-q",
                   "--config", str(workspace / "lawkit.toml"),
                   "--out", str(workspace / f"run{index}.footprint.json"), "--", *command]
    subprocess.run(command, check=True, cwd=workspace)
    return out


def region_times(path: Path) -> dict[str, list[float]]:
    """Each region's seconds per captured step, in step order."""
    with path.open(newline="") as file:
        rows = list(csv.DictReader(file))
    return {name: [float(row[name]) for row in rows if row[name]] for name in REGIONS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=160)
    args = parser.parse_args()
    import transformers

    site = Path(transformers.__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        (workspace / "harness.py").write_text(HARNESS)
        shutil.copy(Path(__file__).with_name("floor_recorder.py"), workspace)
        (workspace / "laws").mkdir()
        (workspace / "lawkit.toml").write_text(
            f'laws = "laws"\n\n[digest]\nroot = "{site}"\npackages = ["{PACKAGE}"]\n')
        ratios: dict[str, dict[str, list[float]]] = {v: {r: [] for r in REGIONS}
                                                      for v in VARIANTS[1:]}
        bare_ms: dict[str, list[float]] = {r: [] for r in REGIONS}
        index = 0
        for round_ in range(args.rounds):
            times = {}
            for variant in VARIANTS:
                index += 1
                times[variant] = region_times(run(workspace, variant, index, args.requests,
                                                  args.new_tokens))
            for name in REGIONS:
                bare = times["bare"][name]
                bare_ms[name].extend(t * 1e3 for t in bare)
                for variant in VARIANTS[1:]:
                    ratios[variant][name].extend(
                        t / b for t, b in zip(times[variant][name], bare, strict=False) if b)
            print(f"round {round_ + 1}: steps {len(times['bare']['forward_s'])}", flush=True)
    print(f"Python {sys.version.split()[0]}, transformers {transformers.__version__}, "
          f"{args.rounds} rounds, {args.requests} requests of {args.new_tokens} tokens")
    print(f"{'region':<12} {'bare ms':>8} " + " ".join(f"{v:>8}" for v in VARIANTS[1:]))
    for name in REGIONS:
        cells = " ".join(f"{statistics.median(ratios[v][name]):>7.3f}x" for v in VARIANTS[1:])
        print(f"{name:<12} {statistics.median(bare_ms[name]):>8.3f} {cells}")


if __name__ == "__main__":
    main()
