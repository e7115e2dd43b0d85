"""Where samples run: worker processes on this machine (``local``, the
default), or a Ray cluster (``ray``) for users who outgrow one machine.

Both take a batch of SampleJobs and give back one Outcome per job, in
order.  A sample that outlives ``timeout`` seconds, or kills the process
running it, is an infeasible Outcome saying so.

Measured samples that run at the same time share the machine's cores and
memory bandwidth, which disturbs their timings: keep ``jobs`` at 1 when
measuring on one machine, and use more for estimates or on a cluster.
"""
from __future__ import annotations

import queue
from concurrent.futures import ThreadPoolExecutor

from ..codegen.worker import ToolchainCrash, Worker
from .evaluate import SampleJob, evaluate_sample, load_arrays, remember_arrays
from .search import Outcome
from .space import TuneError

EXECUTORS = ("local", "ray")
SAMPLE_FUNCTION = "hpvm.tune.evaluate:evaluate_sample"
TOGETHER_FUNCTION = "hpvm.tune.evaluate:evaluate_interleaved"


class LocalExecutor:
    """``jobs`` worker processes, each evaluating one sample at a time."""

    name = "local"

    def __init__(self, jobs: int = 1):
        if jobs < 1:
            raise TuneError(f"--jobs must be at least 1, not {jobs}")
        self.jobs = jobs
        self._idle: queue.Queue[Worker] = queue.Queue()
        for _ in range(jobs):
            self._idle.put(Worker())
        self._threads = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="hpvm-tune")

    def evaluate(self, jobs: list[SampleJob], timeout: float) -> list[Outcome]:
        return list(self._threads.map(lambda job: self._one(job, timeout), jobs))

    def evaluate_together(self, jobs: list[SampleJob], timeout: float) -> list[Outcome]:
        """``jobs`` measured in one worker, their calls interleaved
        (evaluate.evaluate_interleaved); if that worker crashes or runs
        out of time, each job alone."""
        worker = self._idle.get()
        try:
            return worker.call(TOGETHER_FUNCTION, (jobs,), timeout * len(jobs))
        except ToolchainCrash:
            pass
        finally:
            self._idle.put(worker)
        return self.evaluate(jobs, timeout)

    def _one(self, job: SampleJob, timeout: float) -> Outcome:
        worker = self._idle.get()
        try:
            return worker.call(SAMPLE_FUNCTION, (job,), timeout)
        except ToolchainCrash as crash:
            return Outcome(False, error=f"the sample {crash}")
        finally:
            self._idle.put(worker)

    def close(self) -> None:
        self._threads.shutdown()
        while not self._idle.empty():
            self._idle.get().close()


class RayExecutor:
    """Samples as Ray tasks: on a local ``ray.init()`` without ``address``,
    on a cluster with it.  The inputs and the reference outputs go to the
    object store once; a task asks Ray for ``gpus`` GPUs when the targets
    need one."""

    name = "ray"

    def __init__(self, address: str | None = None, gpus: float = 0, jobs: int | None = None):
        try:
            import ray  # ray (optional)
        except ImportError:
            raise TuneError("the ray executor needs Ray (fix: pip install 'hpvm[ray]')") from None
        self._ray = ray
        self._started_here = not ray.is_initialized()
        if self._started_here:
            options = {"address": address} if address else {"num_cpus": jobs} if jobs else {}
            ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False,
                     **options)
        self.jobs = jobs or max(1, int(ray.cluster_resources().get("CPU", 1)))
        """Samples per batch: one per CPU of the cluster unless told."""
        self._task = ray.remote(num_gpus=gpus, max_retries=0)(_ray_sample)
        self._shared: dict[str, object] = {}

    def evaluate(self, jobs: list[SampleJob], timeout: float) -> list[Outcome]:
        ray = self._ray
        refs = [self._task.remote(job, self._stored(job.inputs_path),
                                  self._stored(job.reference_path)) for job in jobs]
        ready, late = ray.wait(refs, num_returns=len(refs), timeout=timeout)
        for ref in late:
            ray.cancel(ref, force=True)
        outcomes = []
        for ref in refs:
            if ref not in ready:
                outcomes.append(Outcome(False, error=f"the sample ran for more than {timeout:g} s "
                                                     "and was stopped"))
                continue
            try:
                outcomes.append(ray.get(ref))
            except Exception as error:  # the task's worker died, or Ray failed it
                outcomes.append(Outcome(False, error=f"the sample failed on Ray: "
                                                     f"{type(error).__name__}: {error}"[:500]))
        return outcomes

    def _stored(self, path: str | None):
        """The arrays of an npz file, put in Ray's object store once."""
        if path is None:
            return None
        if path not in self._shared:
            self._shared[path] = self._ray.put(load_arrays(path))
        return self._shared[path]

    def close(self) -> None:
        if self._started_here:
            self._ray.shutdown()


def _ray_sample(job: SampleJob, inputs, reference) -> Outcome:
    remember_arrays(job.inputs_path, inputs)
    if job.reference_path is not None:
        remember_arrays(job.reference_path, reference)
    return evaluate_sample(job)


def executor(name: str, jobs: int = 1, address: str | None = None, gpus: float = 0):
    """The executor called ``name`` (see EXECUTORS)."""
    if name == "local":
        if address:
            raise TuneError("--address is for --executor ray")
        return LocalExecutor(jobs)
    if name == "ray":
        return RayExecutor(address, gpus, jobs)
    raise TuneError(f"no executor '{name}' (fix: use one of {', '.join(EXECUTORS)})")
