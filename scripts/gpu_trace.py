"""A torch.profiler (kineto) trace of a real engine's steps, with the `lawkit.capture` CSV of
the same run, and what the profiler's CPU-op profiling adds to host time.

Run (on a CUDA GPU, torch and transformers beside lawkit; not part of the suite):

    python scripts/gpu_trace.py OUT_DIR [--rounds 5] [--decode 3]

The engine: a small random Llama (transformers, bfloat16, no download) served by a step loop
in a background thread, as engines run theirs: each step a prefill of a batch of prompts or a
decode of that batch against its KV cache. Each step is labelled with
`torch.profiler.record_function` in ATOM's style (`atom/model_engine/run_labels.py`):
`prefill[bs=4 tok=256 ctx=[64, 64, 64, 64]]`, `decode[bs=4 tok=4 d=4]`, and three host
regions inside it are ranges of their own and `lawkit.capture` regions at once:

- `prepare`: the step's input tensors built on the host and copied to the GPU;
- `forward`: the model's forward call (the host's kernel launches);
- `sample`: greedy sampling and the copy of the tokens back to the host (it waits for the GPU).

Each round runs the batch sizes' steps twice in the engine thread: bare (captured, no
profiler) and profiled (captured, the profiler started in the engine thread: CPU ops, CUDA,
`record_function`). It writes to OUT_DIR:

- `engine.pt.trace.json.gz`: the first profiled round's trace (the test data, with the
  digest under the trace's top-level key `atom`: `prof.add_metadata`);
- `engine.csv`: that round's `lawkit.capture` rows (the same steps);
- `mainthread.pt.trace.json.gz`: one sweep (one decode step a batch) profiled from the main
  thread while the steps run in the engine thread, to show what such a trace lacks;
- `summary.txt`: per region, the median bare time and the profiled/bare ratio (steps paired
  within a round, all rounds), and what the main-thread trace holds.
"""

from __future__ import annotations

import argparse
import gzip
import json
import queue
import shutil
import statistics
import sys
import tempfile
import threading
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

from lawkit import capture

REGIONS = ("prepare_s", "forward_s", "sample_s")
FEATURES = ("batch_size", "num_tokens", "is_prefill")
DIGEST = "0123abcd"
"""The digest the captures and the trace name: this engine is no lawkit workspace."""
BATCHES = (1, 2, 4, 8, 16, 32)
PROMPT = 64


def ctx_text(lengths: list[int]) -> str:
    """ATOM's `ctx=` field: one length, a short list, or the first three and a count."""
    if len(lengths) == 1:
        return str(lengths[0])
    if len(lengths) <= 5:
        return str(lengths)
    return f"{lengths[:3]}...+{len(lengths) - 3}"


class Engine:
    """A step loop over one model: prefill a batch, then decode it step by step."""

    def __init__(self, layers: int) -> None:
        torch.manual_seed(0)
        config = LlamaConfig(vocab_size=4096, hidden_size=512, intermediate_size=1024,
                             num_hidden_layers=layers, num_attention_heads=8,
                             num_key_value_heads=4, max_position_embeddings=1024)
        self.model = LlamaForCausalLM(config).to("cuda", torch.bfloat16).eval()
        self.cap: capture.Capture | None = None

    def region(self, name: str) -> _Both:
        return _Both(self.cap, name)

    @torch.inference_mode()
    def sweep(self, decode_steps: int) -> None:
        """Every batch size: one prefill step, then `decode_steps` decode steps."""
        for bs in BATCHES:
            cache = DynamicCache()
            prompts = [[(7 * i + 13 * j) % 4000 + 10 for j in range(PROMPT)] for i in range(bs)]
            label = f"prefill[bs={bs} tok={bs * PROMPT} ctx={ctx_text([PROMPT] * bs)}]"
            tokens = self.step(label, prompts, cache, prefill=True)
            for d in range(decode_steps):
                label = f"decode[bs={bs} tok={bs} d={bs}]"
                tokens = self.step(label, [[t] for t in tokens], cache, prefill=False,
                                   past=PROMPT + d)

    def step(self, label: str, rows: list[list[int]], cache: DynamicCache, *, prefill: bool,
             past: int = 0) -> list[int]:
        assert self.cap is not None
        tokens = sum(len(r) for r in rows)
        with self.cap.step(batch_size=len(rows), num_tokens=tokens, is_prefill=int(prefill)), \
                record_function(label):
            with self.region("prepare_s"):
                ids = torch.tensor(rows, dtype=torch.long).to("cuda", non_blocking=True)
                width = ids.shape[1]
                positions = torch.arange(past, past + width).expand(len(rows), width)
                positions = positions.to("cuda", non_blocking=True)
            with self.region("forward_s"):
                logits = self.model(input_ids=ids, position_ids=positions,
                                    past_key_values=cache, use_cache=True).logits
            with self.region("sample_s"):
                out = logits[:, -1, :].argmax(dim=-1).tolist()
        return [int(t) for t in out]


class _Both:
    """A `lawkit.capture` region and, inside it, a `record_function` range of the same name.
    Either way round, the outer one holds the inner one's cost: here the region holds what the
    profiler spends opening and closing the range (7 to 13 us a range on the H100 machine),
    the other way round the range held 19 to 34 us of the region's exit and its own."""

    def __init__(self, cap: capture.Capture | None, name: str) -> None:
        assert cap is not None
        self.outer = cap.region(name)
        self.inner = record_function(name.removesuffix("_s"))

    def __enter__(self) -> None:
        self.outer.__enter__()
        self.inner.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.inner.__exit__(*exc)
        self.outer.__exit__(*exc)


def profiler() -> profile:
    return profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])


def write_trace(prof: profile, path: Path) -> None:
    plain = path.with_suffix("")  # .json
    prof.export_chrome_trace(str(plain))
    with plain.open("rb") as f, gzip.open(path, "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)
    plain.unlink()


def run(out: Path, rounds: int, decode_steps: int, layers: int) -> None:
    engine = Engine(layers)
    jobs: queue.Queue[tuple[str, int] | None] = queue.Queue()
    done: queue.Queue[str] = queue.Queue()

    scratch = Path(tempfile.mkdtemp())

    def loop() -> None:  # the engine thread: every step runs here
        while (job := jobs.get()) is not None:
            what, index = job
            path = out / "engine.csv" if (what, index) == ("profiled", 0) else \
                scratch / f"{what}{index}.csv"
            engine.cap = capture.open(path, features=FEATURES, regions=REGIONS,
                                      digest=DIGEST, key="atom")
            with engine.cap:
                engine.cap.steps()
                if what == "profiled":
                    with profiler() as prof:
                        engine.sweep(decode_steps)
                        prof.add_metadata("atom", DIGEST)  # kept only while it profiles
                    if index == 0:
                        write_trace(prof, out / "engine.pt.trace.json.gz")
                else:
                    engine.sweep(1 if what == "mainthread" else decode_steps)
            done.put(str(path))

    thread = threading.Thread(target=loop, name="engine")
    thread.start()
    jobs.put(("warmup", 0))  # CUDA, cuBLAS and the allocator warmed through the step code
    done.get()
    files: dict[str, list[str]] = {"bare": [], "profiled": []}
    for index in range(rounds):
        for what in ("bare", "profiled"):
            jobs.put((what, index))
            files[what].append(done.get())
    with profiler() as prof:  # started in the main thread: the engine thread's ops?
        jobs.put(("mainthread", 0))
        done.get()
        prof.add_metadata("atom", DIGEST)
    write_trace(prof, out / "mainthread.pt.trace.json.gz")
    jobs.put(None)
    thread.join()
    summary = inflation(files) + main_thread_trace(out / "mainthread.pt.trace.json.gz")
    (out / "summary.txt").write_text("\n".join(summary) + "\n")
    print("\n".join(summary))
    shutil.rmtree(scratch)


def inflation(files: dict[str, list[str]]) -> list[str]:
    """Per region: the median bare time, and the median profiled/bare ratio of paired steps."""
    import csv

    lines = [f"torch {torch.__version__}, {torch.cuda.get_device_name()}, "
             f"{len(files['bare'])} rounds",
             f"{'region':<10} {'bare ms':>8} {'profiled/bare':>14}"]
    for region in REGIONS:
        ratios, bare_ms = [], []
        for bare, profiled in zip(files["bare"], files["profiled"], strict=True):
            with open(bare, newline="") as a, open(profiled, newline="") as b:
                pairs = zip(csv.DictReader(a), csv.DictReader(b), strict=True)
                for x, y in pairs:
                    bare_ms.append(float(x[region]) * 1e3)
                    ratios.append(float(y[region]) / float(x[region]))
        lines.append(f"{region:<10} {statistics.median(bare_ms):>8.3f} "
                     f"{statistics.median(ratios):>13.2f}x")
    return lines


def main_thread_trace(path: Path) -> list[str]:
    """What a trace profiled from the main thread holds of the engine thread's steps."""
    with gzip.open(path, "rb") as f:
        events = json.load(f)["traceEvents"]
    count: dict[str, int] = {}
    steps = 0
    for event in events:
        category = str(event.get("cat"))
        count[category] = count.get(category, 0) + 1
        if category == "user_annotation" and str(event.get("name", "")).startswith(
                ("prefill[", "decode[")):
            steps += 1
    shown = ", ".join(f"{k} {v}" for k, v in sorted(count.items()))
    return [f"profiler started in the main thread: {steps} step labels; events by category: "
            f"{shown}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--decode", type=int, default=3)
    parser.add_argument("--layers", type=int, default=2)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpu_trace.py needs a CUDA GPU")
    args.out.mkdir(parents=True, exist_ok=True)
    run(args.out, args.rounds, args.decode, args.layers)


if __name__ == "__main__":
    main()
