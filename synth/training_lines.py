"""Lines of the synthetic training logs, in Megatron-LM's and torchtitan's real formats.

Templates follow the frameworks' own print statements (checked against their sources and the
real slices in ``tests/pipelines/sources/samples/training/``):

- Megatron-LM: ``training_log``'s `` [YYYY-MM-DD HH:MM:SS] iteration {:8d}/{:8d} | ...`` line;
  ``checkpointing.py``'s ``saving checkpoint at iteration {:7d} to {}``, ``  successfully saved
  checkpoint at iteration {:7d} to {}``, `` loading checkpoint from {} at iteration {}`` and
  ``  successfully loaded checkpoint from {} [ t 0/1, p 0/1 ] at iteration {}``; and the timer
  block ``timers.log(['save-checkpoint'])`` prints (``(min, max) time across ranks (ms):`` then
  the name left-justified to 48 with dots and ``: ({:.2f}, {:.2f})``). The interval timer stops
  during a save, so ``elapsed time per iteration`` is the step time.
- torchtitan: ``[rank0]:[titan] YYYY-MM-DD HH:MM:SS,mmm - root - INFO - step: {:2}  loss: ...``,
  ``components/checkpoint.py``'s ``Saving the checkpoint (or staging if async is enabled).``,
  ``Finished saving the checkpoint (or staging if async is enabled) in {:.2f} seconds.``,
  ``Loading the checkpoint at step {}.`` and ``Finished loading the checkpoint in {:.2f}
  seconds.`` (the load messages of the releases that print the step; the save message with the
  space before ``in`` that later releases restored).

Around them: an arguments dump, warnings, memory reports, garbage-collection lines and Slurm's
end-of-job lines, which a parser must ignore.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from synth import straggler_lines

if TYPE_CHECKING:
    from synth.failslow import Pace
    from synth.workload import Attempt, Jobs

TITAN = "[rank0]:[titan] {} - root - {} - {}"
WARN_GATHER = (
    "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py:2387: "
    "UserWarning: torch.distributed._all_gather_base is a private function and will be "
    "deprecated. Please use torch.distributed.all_gather_into_tensor instead."
)
#: torchtitan's garbage-collection line, with its own spelling
GC_LINE = "[GC] Peforming periodical GC collection. 0.06 seconds."  # codespell:ignore
_SAVE_TIMER = "    " + "save-checkpoint ".ljust(48, ".") + ": ({:.2f}, {:.2f})"


@dataclass(frozen=True)
class Knobs:
    """One job's training parameters (milliseconds; Megatron's are whole seconds)."""

    framework: str
    step_ms: int
    log_every: int
    ckpt_every: int
    save_ms: int


@dataclass(frozen=True)
class Straggler:
    """Straggler reports to write (``SynthConfig.straggler_lines``) and their draws."""

    kind: str  # "megatron" | "nvrx"
    report_s: int
    gpus_per_node: int
    rng: np.random.Generator


@dataclass
class Run:
    """The physical timeline of one attempt (milliseconds since the epoch)."""

    start: int
    end: int
    resume: int
    first: int
    load: tuple[int, int] | None
    steps: np.ndarray
    step_end: np.ndarray
    save_step: np.ndarray
    save_start: np.ndarray
    save_done: np.ndarray
    durations: np.ndarray | None = None  # per step (ms), with fail-slow or step jitter on
    pace: Pace | None = None
    factor: np.ndarray | None = None  # per step, M at its start (with ``durations``)


def interval_means(durations: np.ndarray, shown: np.ndarray) -> np.ndarray:
    """Mean step duration over each shown step's log interval (its steps since the last one)."""
    idx = np.flatnonzero(shown)
    csum = np.concatenate([[0], np.cumsum(durations)])
    lo = np.concatenate([[0], idx[:-1] + 1])
    means: np.ndarray = (csum[idx + 1] - csum[lo]) / (idx + 1 - lo)
    return means


def stamps(ms: np.ndarray) -> list[str]:
    """Epoch milliseconds as ``YYYY-MM-DDTHH:MM:SS.mmm`` strings."""
    text: list[str] = np.datetime_as_string(
        np.asarray(ms, dtype=np.int64).astype("datetime64[ms]"), unit="ms"
    ).tolist()
    return text


def megatron_time(stamp: str) -> str:
    """``YYYY-MM-DD HH:MM:SS`` (Megatron's ``[date]`` prefix) from :func:`stamps`' text."""
    return f"{stamp[:10]} {stamp[11:19]}"


def titan_time(stamp: str) -> str:
    """``YYYY-MM-DD HH:MM:SS,mmm`` (Python logging) from :func:`stamps`' text."""
    return f"{stamp[:10]} {stamp[11:19]},{stamp[20:23]}"


class LogWriter:
    """Collects one job's log, attempt after attempt."""

    def __init__(
        self,
        knobs: Knobs,
        jobs: Jobs,
        j: int,
        rng: np.random.Generator,
        host_names: list[str] | None,
        straggler: Straggler | None = None,
    ) -> None:
        self.knobs = knobs
        self.straggler = straggler
        self.hosts: list[str] = []
        self.world = 0
        self.rng = rng
        self.raw_id = jobs.raw_id[j]
        self.name = jobs.name[j]
        self.n_nodes = jobs.n_nodes[j]
        self.host_names = host_names
        self.total = max(10, jobs.work_s[j] * 1000 // knobs.step_ms + 1)
        self.path = f"/lustre/checkpoints/{self.name}-{self.raw_id}"
        self.gbs = int(rng.choice([256, 512, 1024]))
        self.tflops = float(rng.uniform(180.0, 420.0))
        self.chunks: list[str] = []

    def text(self) -> str:
        """Return the file's text."""
        return "".join(self.chunks)

    def host(self, a: Attempt) -> str:
        """Name of the attempt's first node."""
        node = a.nodes[0] if a.nodes else 0
        return self.host_names[node] if self.host_names else f"gpu{node + 1:04d}"

    def attempt(self, run: Run, a: Attempt) -> None:
        """Append one attempt's lines (none after its end)."""
        if self.straggler is not None:
            g = self.straggler.gpus_per_node
            names = self.host_names or [
                f"gpu{n + 1:04d}" for n in range(max(a.nodes, default=0) + 1)
            ]
            self.hosts = sorted(names[n] for n in a.nodes) or [self.host(a)]
            self.world = g * len(self.hosts)
        lines = (
            self.megatron(run, a) if self.knobs.framework == "megatron" else self.torchtitan(run)
        )
        if run.end == a.end_s * 1000:  # still running at the window end: no end line yet
            lines += self.slurm_end(run, a)
        self.chunks.append("\n".join(lines) + "\n")

    def slurm_end(self, run: Run, a: Attempt) -> list[str]:
        """Return what Slurm appends when the step ends other than by a clean exit."""
        when = stamps(np.array([run.end]))[0][:19]
        host = self.host(a)
        if a.state.startswith("CANCELLED"):
            return [f"slurmstepd: error: *** JOB {self.raw_id} ON {host} CANCELLED AT {when} ***"]
        if a.state == "TIMEOUT":
            return [
                f"slurmstepd: error: *** JOB {self.raw_id} ON {host} CANCELLED AT {when} "
                "DUE TO TIME LIMIT ***"
            ]
        if a.state in ("FAILED", "NODE_FAIL", "OUT_OF_MEMORY"):
            return [f"srun: error: {host}: task 0: Exited with exit code 1"]
        return []

    def losses(self, steps: np.ndarray) -> np.ndarray:
        """Return a falling loss curve with noise at ``steps``."""
        noise = 0.02 * self.rng.standard_normal(steps.size)
        curve: np.ndarray = 1.7 + 9.3 * np.exp(-steps / 4000.0) + noise
        return curve

    def megatron(self, run: Run, a: Attempt) -> list[str]:
        """Megatron-LM lines of one attempt."""
        lines = self._megatron_arguments()
        stamp = stamps(np.array([run.start, run.first]))
        if run.load is None:
            lines += [
                f"WARNING: could not find the metadata file {self.path}/"
                "latest_checkpointed_iteration.txt",
                "    will not load any checkpoints and will start from random",
            ]
        elif run.load[1] <= run.end:
            lines += [
                f" loading checkpoint from {self.path} at iteration {run.resume}",
                " checkpoint version 3.0",
                f"  successfully loaded checkpoint from {self.path} [ t 0/1, p 0/1 ] "
                f"at iteration {run.resume}",
            ]
        else:
            lines.append(f" loading checkpoint from {self.path} at iteration {run.resume}")
            return lines
        if run.first > run.end:
            return lines
        lines += [
            WARN_GATHER,
            "  warnings.warn(",
            "training ...",
            f"[before the start of training step] datetime: {megatron_time(stamp[1])} ",
        ]
        return lines + self._megatron_steps(run)

    def _megatron_arguments(self) -> list[str]:
        """Megatron-LM's start: world sizes, the arguments block, the model build."""
        k = self.knobs
        world = 8 * self.n_nodes
        lines = [
            f"using world size: {world}, data-parallel size: {max(1, world // 8)}, "
            "context-parallel size: 1, tensor-model-parallel size: 8, "
            "pipeline-model-parallel size: 1",
            "------------------------ arguments ------------------------",
        ]
        args = (
            ("global_batch_size", self.gbs),
            ("load", self.path),
            ("log_interval", k.log_every),
            ("save", self.path),
            ("save_interval", k.ckpt_every),
            ("train_iters", self.total),
        )
        lines += [f"  {key} {'.' * (48 - len(key))} {value}" for key, value in args]
        lines += [
            "-------------------- end of arguments ---------------------",
            "> building GPT model ...",
        ]
        return lines

    def _megatron_steps(self, run: Run) -> list[str]:
        """Megatron-LM's progress lines of one attempt, with its checkpoint saves."""
        k = self.knobs
        lines: list[str] = []
        shown = (run.steps % k.log_every) == 0
        steps, ends = run.steps[shown], run.step_end[shown]
        if steps.size == 0:
            return lines
        times = [megatron_time(s) for s in stamps(ends)]
        loss = self.losses(steps).tolist()
        grad = (0.2 + 0.8 * self.rng.random(steps.size)).tolist()
        tput = (self.tflops * (1 + 0.01 * self.rng.standard_normal(steps.size))).tolist()
        saves = dict(
            zip(run.save_step.tolist(), run.save_done.tolist(), strict=True),
        )
        jitter = self.rng.uniform(0.0, 50.0, size=max(1, len(saves))).tolist()
        elapsed = [f"{k.step_ms:.1f}"] * steps.size
        if run.durations is not None:  # fail-slow, jitter: the exact mean over the line's steps
            means = interval_means(run.durations, shown)
            elapsed = [f"{m:.1f}" for m in means.tolist()]
            tput = (np.array(tput) * k.step_ms / means).tolist()
        reports = self._reports(run, shown, times)
        total, gbs = self.total, self.gbs
        head = " | elapsed time per iteration (ms): "
        n_save = 0
        for i, (n, when) in enumerate(zip(steps.tolist(), times, strict=True)):
            lr = 3.0e-4 * min(1.0, n / 2000)
            lines.append(
                f" [{when}] iteration {n:8d}/{total:8d} | consumed samples: {n * gbs:12d}"
                f"{head}{elapsed[i]} | throughput per GPU (TFLOP/s/GPU): "
                f"{tput[i]:.1f} | learning rate: {lr:E} | global batch size: {gbs:5d} | "
                f"lm loss: {loss[i]:E} | loss scale: 1.0 | grad norm: {grad[i]:.3f} | "
                "number of skipped iterations:   0 | number of nan iterations:   0 |"
            )
            lines += reports.get(i, [])
            if i == 0:
                lines.append(
                    f"[Rank 0] (after {n} iterations) memory (MB) | allocated: 33437.7109375 | "
                    "max allocated: 61396.447265625 | reserved: 61620.0 | max reserved: 61620.0"
                )
            if n in saves:
                lines.append(f"saving checkpoint at iteration {n:7d} to {self.path}")
                if saves[n]:
                    c = float(k.save_ms)
                    lines += [
                        f"  successfully saved checkpoint at iteration {n:7d} to {self.path}",
                        "(min, max) time across ranks (ms):",
                        _SAVE_TIMER.format(c - jitter[n_save], c),
                    ]
                n_save += 1
        return lines

    def _reports(self, run: Run, shown: np.ndarray, times: list[str]) -> dict[int, list[str]]:
        """Straggler report lines to print after each progress line (by its index)."""
        spec = self.straggler
        if spec is None:
            return {}
        k = self.knobs
        durations = (
            run.durations if run.durations is not None else np.full(run.steps.size, k.step_ms)
        )
        starts = run.step_end - durations
        idx = np.flatnonzero(shown)
        out: dict[int, list[str]] = {}
        if spec.kind == "megatron":
            lo = np.maximum(idx + 1 - k.log_every, 0)
            for i, (a, b) in enumerate(zip(lo.tolist(), idx.tolist(), strict=True)):
                slow = straggler_lines.slow_means(run.pace, starts[a : b + 1])
                clocks = {} if run.pace is None else run.pace.signature_clocks(int(run.step_end[b]))
                out[i] = straggler_lines.megatron_report(
                    spec.rng, times[i], self.world, k.step_ms, self.tflops, slow, clocks
                )
            return out
        due = run.first + spec.report_s * 1000 * np.arange(
            1, 1 + (run.end - run.first) // (spec.report_s * 1000)
        )
        at = np.searchsorted(run.step_end, due)  # the step whose end reaches the report time
        prev = 0
        for step_i in at.tolist():
            line_i = int(np.searchsorted(idx, step_i))
            if step_i >= run.steps.size or line_i >= idx.size or step_i < prev:
                continue
            slow = straggler_lines.slow_means(run.pace, starts[prev : step_i + 1])
            out.setdefault(line_i, []).extend(
                straggler_lines.nvrx_report(
                    spec.rng, self.world, self.hosts, spec.gpus_per_node, slow
                )
            )
            prev = step_i + 1
        return out

    def torchtitan(self, run: Run) -> list[str]:
        """Torchtitan lines of one attempt."""
        s0 = titan_time(stamps(np.array([run.start]))[0])
        lines = [
            TITAN.format(s0, "INFO", f"Starting job: {self.name} training"),
            TITAN.format(
                s0,
                "WARNING",
                "ENV[TORCH_NCCL_ASYNC_ERROR_HANDLING] = 1 will be overridden to 3 based on "
                "job config",
            ),
            TITAN.format(
                s0, "INFO", f"Building 1-D device mesh with ['dp_shard'], [{8 * self.n_nodes}]"
            ),
            TITAN.format(
                s0,
                "INFO",
                "Checkpointing active. Checkpoints will be loaded from and saved to "
                f"{self.path}/checkpoint",
            ),
        ]
        if run.load is not None:
            load_start, load_end = run.load
            if load_start > run.end:
                return lines
            st = stamps(np.array([load_start, load_end]))
            lines.append(
                TITAN.format(
                    titan_time(st[0]), "INFO", f"Loading the checkpoint at step {run.resume}."
                )
            )
            if load_end > run.end:
                return lines
            seconds = (load_end - load_start) / 1000
            lines.append(
                TITAN.format(
                    titan_time(st[1]),
                    "INFO",
                    f"Finished loading the checkpoint in {seconds:.2f} seconds.",
                )
            )
        if run.first > run.end:
            return lines
        lines.append(
            TITAN.format(
                titan_time(stamps(np.array([run.first]))[0]),
                "INFO",
                f"Training starts at step {run.resume + 1}.",
            )
        )
        return lines + self._titan_steps(run)

    def _titan_steps(self, run: Run) -> list[str]:
        """Torchtitan's progress lines of one attempt, with its checkpoint saves."""
        k = self.knobs
        lines: list[str] = []
        shown = (run.steps % k.log_every) == 0
        steps, ends = run.steps[shown], run.step_end[shown]
        if steps.size == 0:
            return lines
        times = [titan_time(s) for s in stamps(ends)]
        loss = self.losses(steps).tolist()
        tps = np.round(2000 + 40 * self.tflops * (1 + 0.01 * self.rng.standard_normal(steps.size)))
        if run.durations is not None:  # fail-slow, jitter: tokens per second follow the pace
            tps = np.round(tps * k.step_ms / interval_means(run.durations, shown))
        tps_list = tps.astype(np.int64).tolist()
        saves = dict(zip(run.save_step.tolist(), run.save_done.tolist(), strict=True))
        save_ends = [titan_time(s) for s in stamps(run.save_start + k.save_ms)]
        c = k.save_ms / 1000
        n_save = 0
        gc_every = 5 * k.log_every
        for i, (n, when) in enumerate(zip(steps.tolist(), times, strict=True)):
            if n % gc_every == 0:
                lines.append(TITAN.format(when, "INFO", GC_LINE))
            tf = tps_list[i] / 40
            lines.append(
                f"[rank0]:[titan] {when} - root - INFO - step: {n:2}  loss: {loss[i]:7.4f}  "
                f"memory: 49.66GiB(52.28%)  tps: {tps_list[i]:,}  tflops: {tf:,.2f}  "
                f"mfu: {tf / 9.89:.2f}%"
            )
            if n in saves:
                lines.append(
                    TITAN.format(
                        when, "INFO", "Saving the checkpoint (or staging if async is enabled)."
                    )
                )
                if saves[n]:
                    lines.append(
                        TITAN.format(
                            save_ends[n_save],
                            "INFO",
                            "Finished saving the checkpoint (or staging if async is enabled) "
                            f"in {c:.2f} seconds.",
                        )
                    )
                n_save += 1
        return lines
