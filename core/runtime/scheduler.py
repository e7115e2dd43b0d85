"""A dependency-driven job scheduler on a thread pool.

Jobs are added with the ids of the jobs they wait for; a job starts as soon
as all of them are done.  Jobs may be added while others run (streaming
adds one frame at a time).  Device and native work release the GIL, so
independent nodes really run at the same time.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Hashable, Iterable

from ..threads import available_cores


class DagScheduler:
    def __init__(self, workers: int | None = None):
        self._pool = ThreadPoolExecutor(max_workers=workers or max(4, 2 * available_cores()),
                                        thread_name_prefix="hpvm")
        self._lock = threading.Lock()
        self._futures: dict[Hashable, Future] = {}
        self._waiting: dict[Hashable, int] = {}
        self._dependents: dict[Hashable, list[Hashable]] = {}
        self._work: dict[Hashable, Callable[[], Any]] = {}
        self._done: dict[Hashable, BaseException | None] = {}
        self._inline: set[Hashable] = set()

    def add(self, job: Hashable, deps: Iterable[Hashable], work: Callable[[], Any],
            hold: bool = False, inline: bool = False) -> Future:
        """Schedule ``work`` after ``deps``; returns the job's future.  A
        failed dependency fails the job with the same exception.  With
        ``hold`` a job that is ready at once waits for :meth:`release` or
        :meth:`run_here` instead of starting on the pool.  An ``inline``
        job (cheap, or one that only queues work on a device) never goes to
        the pool: the thread that makes it ready runs it, since handing it
        to another thread would cost more than running it."""
        future: Future = Future()
        with self._lock:
            self._futures[job] = future
            self._work[job] = work
            if inline:
                self._inline.add(job)
            deps = list(deps)
            pending = [d for d in deps if d not in self._done]
            self._waiting[job] = len(pending)
            for d in pending:
                self._dependents.setdefault(d, []).append(job)
            errors = [self._done[d] for d in deps if self._done.get(d) is not None]
        if errors:
            self._finish(job, error=errors[0])
        elif not pending and not hold:
            self._start(job)
        return future

    def release(self, job: Hashable) -> None:
        """Start a held job on the pool."""
        self._start(job)

    def run_here(self, job: Hashable) -> None:
        """Run a held job in the calling thread, then the chain of jobs it
        makes ready, as a worker would."""
        work = self._take(job)
        if work is not None:
            self._run(job, work)

    def future(self, job: Hashable) -> Future:
        return self._futures[job]

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait)

    def is_held(self, job: Hashable) -> bool:
        """Whether ``job`` is ready but held (added with ``hold``)."""
        with self._lock:
            return job in self._work and self._waiting.get(job) == 0

    def _start(self, job: Hashable) -> None:
        work = self._take(job)
        if work is None:
            return
        if job in self._inline:
            self._run(job, work)
        else:
            self._pool.submit(self._run, job, work)

    def _take(self, job: Hashable) -> Callable[[], Any] | None:
        with self._lock:
            return self._work.pop(job, None)

    def _run(self, job: Hashable, work: Callable[[], Any] | None) -> None:
        """Run ``job``, then in this same thread every inline job and one
        other job it made ready (a chain of nodes costs no thread hand-off
        per node); the others go to the pool."""
        stack = [(job, work)] if work is not None else []
        while stack:
            job, work = stack.pop()
            try:
                result = work()
            except BaseException as error:  # reported through the future
                ready = self._finish(job, error=error)
            else:
                ready = self._finish(job, result=result)
            keep_one = all(queued in self._inline for queued, _ in stack)
            for dependent in ready:
                inline = dependent in self._inline
                if not (inline or keep_one):
                    self._start(dependent)
                    continue
                work = self._take(dependent)
                if work is not None:
                    stack.append((dependent, work))
                    keep_one = keep_one and inline

    def _finish(self, job: Hashable, result: Any = None,
                error: BaseException | None = None) -> list[Hashable]:
        """Record ``job``'s outcome and return the dependents it made ready;
        a failure fails its dependents at once instead."""
        with self._lock:
            if job in self._done:
                return []
            self._done[job] = error
            self._work.pop(job, None)
            self._inline.discard(job)
            dependents = self._dependents.pop(job, [])
            ready = []
            for d in dependents:
                self._waiting[d] -= 1
                if self._waiting[d] == 0 or error is not None:
                    ready.append(d)
        future = self._futures[job]
        if error is not None:
            future.set_exception(error)
            for d in ready:
                self._finish(d, error=error)
            return []
        future.set_result(result)
        return ready
