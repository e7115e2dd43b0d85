"""The native fork-join pool that runs a launch's chunks on every core.

Handing each chunk of a launch to a Python thread pool costs tens of
microseconds per chunk and more as cores are added (every worker takes the
GIL to start its ctypes call): on 16 cores small nodes got slower than on
one.  Here the hand-off is machine code.  The pool's workers are Python
threads that each make one ctypes call into :data:`POOL_IR`'s
``hpvm_pool_worker``, which never returns while the pool lives: it waits for
a job (spinning briefly, then on a condition variable), takes chunks and
calls the kernel's entry for each.  ``hpvm_pool_run``, called by the
launching thread with the GIL released, publishes a job, takes chunks
itself and waits for the last one.  No Python runs between a launch and
its chunks.

Chunks are taken home first: participant p (worker p, the launcher last)
owns the p-th of as many contiguous ranges of a job's chunks as there are
participants, takes its own by an atomic counter per range, then steals
from the others' ranges in turn (reading a range's counter before taking
from it, so that a finished range is not written by every participant).
The same rows land on the same core in consecutive launches of one size
(a producer's output is still in that core's cache when its consumer
runs), and a core that is late or slow has its chunks taken by the others.

The pool also clears and copies large host buffers (:meth:`ThreadPool.clear`,
:meth:`ThreadPool.copy`): jobs whose chunks are ranges of whole pages, run
by ``hpvm_pool_clear`` (memset) or ``hpvm_pool_copy`` (memcpy).

A job is published without a lock.  The record's ``generation`` is odd
while a job is open: the launcher waits until no worker is left in the
previous job (``active`` is 0), writes the job, and adds one; when the
last chunk is done it adds one again, closing it.  A worker that sees an
open generation it has not run counts itself ``active`` and reads the
generation again: still the same, the job cannot change under it (its
launcher waits for ``active``); changed, it missed the job and leaves it.
(Both sides write, then read the other's word, with sequentially
consistent atomics: one of the two sees the other.)  Workers that found no
job in SPINS polls sleep on the condition variable, counted in
``sleepers``; a launcher locks the mutex and wakes them only when that
count is not 0.  The words spun on and counted (generation, active, done)
and each participant's home counter lie on cache lines of their own.
One job runs at a time: launches from other threads wait for the pool (a
kernel never launches another, so none waits on itself).

The pool record (``POOL_BYTES`` bytes, zeroed, owned by Python): i64 words
at the indices of ``WORDS``, the pthread mutex at byte 256 and condition
variable at byte 384 (128 bytes each, more than any libc needs),
initialised by ``pthread_*_init``.
``calls`` is a ``[count, 3]`` uint64 array of (argument slots, first, end);
``homes`` an i64 array, per participant (HOME_STRIDE apart) the next chunk
of its range.
"""
from __future__ import annotations

import atexit
import ctypes
import functools
import os
import platform
import threading

import llvmlite.binding as llvm
import numpy as np

from hpvm.host_arrays import PAGE
from hpvm.threads import available_cores

from .machine import MachineSpec, initialize, parse

POOL_BYTES = 512
HOME_STRIDE = 8
"""i64 words between two participants' home counters (a cache line)."""
CLEARS_PER_CORE = 2
"""Ranges per participant of :meth:`ThreadPool.clear` and
:meth:`ThreadPool.copy`: a late core's range is taken by another."""
MUTEX, CONDITION = 256, 384
SPINS = 4000
"""Polls of a worker for the next job before it sleeps (a pause each:
about 0.1-0.5 ms), so back-to-back launches find it awake."""


def split_range(count: int, parts: int, unit: int = 1) -> list[tuple[int, int]]:
    """``[0, count)`` as at most ``parts`` contiguous, near-equal chunks,
    each a multiple of ``unit`` long but the last."""
    units = -(-count // unit)
    parts = max(1, min(parts, units))
    base, extra = divmod(units, parts)
    chunks, begin = [], 0
    for index in range(parts):
        end = min(count, begin + (base + (index < extra)) * unit)
        chunks.append((begin, end))
        begin = end
    return chunks


WORDS = {"generation": 0, "active": 8, "done": 16, "stop": 24, "entry.at": 25, "calls.at": 26,
         "count.at": 27, "homes.at": 28, "participants": 29, "sleepers": 30}
"""The pool record's i64 words and their indices: the three written while
a job runs on cache lines of their own, the job's fields on a fourth."""

_PAUSE = {"x86_64": "call void @llvm.x86.sse2.pause()",
          "aarch64": "call void @llvm.aarch64.hint(i32 1)"}
_PAUSE_DECLARATION = {"x86_64": "declare void @llvm.x86.sse2.pause()",
                      "aarch64": "declare void @llvm.aarch64.hint(i32)"}


def _fields(*names: str) -> str:
    """IR lines pointing ``%name`` at each named field of the record."""
    places = {**{word: f"i64, ptr %pool, i64 {index}" for word, index in WORDS.items()},
              "mutex": f"i8, ptr %pool, i64 {MUTEX}", "cond": f"i8, ptr %pool, i64 {CONDITION}"}
    return "\n".join(f"  %{name} = getelementptr {places[name]}" for name in names)


def pool_ir(machine: str) -> str:
    """The pool's LLVM IR for processor ``machine`` (``platform.machine()``:
    it picks the spin-wait hint)."""
    pause = _PAUSE.get(machine, "")
    declare = _PAUSE_DECLARATION.get(machine, "")
    return f"""
declare i32 @pthread_mutex_init(ptr, ptr)
declare i32 @pthread_cond_init(ptr, ptr)
declare i32 @pthread_mutex_lock(ptr)
declare i32 @pthread_mutex_unlock(ptr)
declare i32 @pthread_cond_wait(ptr, ptr)
declare i32 @pthread_cond_broadcast(ptr)
declare i32 @sched_yield()
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
{declare}

define void @hpvm_pool_clear(ptr %base, i64 %first, i64 %end) {{
entry:
  %at = getelementptr i8, ptr %base, i64 %first
  %bytes = sub i64 %end, %first
  call void @llvm.memset.p0.i64(ptr %at, i8 0, i64 %bytes, i1 false)
  ret void
}}

define void @hpvm_pool_copy(ptr %pair, i64 %first, i64 %end) {{
entry:
  %to.base = load ptr, ptr %pair
  %from.at = getelementptr ptr, ptr %pair, i64 1
  %from.base = load ptr, ptr %from.at
  %to = getelementptr i8, ptr %to.base, i64 %first
  %from = getelementptr i8, ptr %from.base, i64 %first
  %bytes = sub i64 %end, %first
  call void @llvm.memcpy.p0.p0.i64(ptr %to, ptr %from, i64 %bytes, i1 false)
  ret void
}}

define void @hpvm_pool_init(ptr %pool) {{
entry:
{_fields('mutex', 'cond')}
  %a = call i32 @pthread_mutex_init(ptr %mutex, ptr null)
  %b = call i32 @pthread_cond_init(ptr %cond, ptr null)
  ret void
}}

define private void @take_range(ptr %pool, ptr %kernel, ptr %calls, i64 %count, i64 %owner) {{
entry:
{_fields('done', 'homes.at', 'participants')}
  %homes.word = load i64, ptr %homes.at
  %homes = inttoptr i64 %homes.word to ptr
  %next = getelementptr [{HOME_STRIDE} x i64], ptr %homes, i64 %owner
  %parts = load i64, ptr %participants
  %owner.after = add i64 %owner, 1
  %scaled = mul i64 %owner.after, %count
  %end = udiv i64 %scaled, %parts
  %peek = load atomic i64, ptr %next monotonic, align 8
  %left = icmp ult i64 %peek, %end
  br i1 %left, label %loop, label %exit
loop:
  %i = atomicrmw add ptr %next, i64 1 seq_cst
  %more = icmp ult i64 %i, %end
  br i1 %more, label %run, label %exit
run:
  %call = getelementptr [3 x i64], ptr %calls, i64 %i
  %slots = load i64, ptr %call
  %first.at = getelementptr i64, ptr %call, i64 1
  %first = load i64, ptr %first.at
  %end.at = getelementptr i64, ptr %call, i64 2
  %last = load i64, ptr %end.at
  %arguments = inttoptr i64 %slots to ptr
  call void %kernel(ptr %arguments, i64 %first, i64 %last)
  %finished = atomicrmw add ptr %done, i64 1 seq_cst
  br label %loop
exit:
  ret void
}}

define private void @take_chunks(ptr %pool, ptr %kernel, ptr %calls, i64 %count, i64 %me) {{
entry:
{_fields('participants')}
  %parts = load i64, ptr %participants
  br label %loop
loop:
  %step = phi i64 [ 0, %entry ], [ %step.next, %loop ]
  %shifted = add i64 %me, %step
  %owner = urem i64 %shifted, %parts
  call void @take_range(ptr %pool, ptr %kernel, ptr %calls, i64 %count, i64 %owner)
  %step.next = add i64 %step, 1
  %again = icmp ult i64 %step.next, %parts
  br i1 %again, label %loop, label %exit
exit:
  ret void
}}

define void @hpvm_pool_worker(ptr %pool, i64 %me) {{
entry:
{_fields('generation', 'active', 'sleepers', 'stop', 'entry.at', 'calls.at', 'count.at',
          'mutex', 'cond')}
  %start = load atomic i64, ptr %generation seq_cst, align 8
  br label %idle
idle:
  %seen = phi i64 [ %start, %entry ], [ %g, %next ]
  br label %spin
spin:
  %polls = phi i64 [ 0, %idle ], [ %polls.next, %spin.again ]
  %now = load atomic i64, ptr %generation seq_cst, align 8
  %now.odd = trunc i64 %now to i1
  %now.new = icmp ne i64 %now, %seen
  %now.job = and i1 %now.odd, %now.new
  br i1 %now.job, label %join, label %spin.again
spin.again:
  {pause}
  %polls.next = add i64 %polls, 1
  %keep = icmp slt i64 %polls.next, {SPINS}
  br i1 %keep, label %spin, label %sleep
sleep:
  %l = call i32 @pthread_mutex_lock(ptr %mutex)
  %asleep = atomicrmw add ptr %sleepers, i64 1 seq_cst
  br label %check
check:
  %stopping = load atomic i64, ptr %stop seq_cst, align 8
  %quit = icmp ne i64 %stopping, 0
  br i1 %quit, label %leave, label %check.job
check.job:
  %later = load atomic i64, ptr %generation seq_cst, align 8
  %later.odd = trunc i64 %later to i1
  %later.new = icmp ne i64 %later, %seen
  %later.job = and i1 %later.odd, %later.new
  br i1 %later.job, label %woken, label %wait
wait:
  %w = call i32 @pthread_cond_wait(ptr %cond, ptr %mutex)
  br label %check
woken:
  %awake = atomicrmw sub ptr %sleepers, i64 1 seq_cst
  %u = call i32 @pthread_mutex_unlock(ptr %mutex)
  br label %join
join:
  %g = phi i64 [ %now, %spin ], [ %later, %woken ]
  %joining = atomicrmw add ptr %active, i64 1 seq_cst
  %again = load atomic i64, ptr %generation seq_cst, align 8
  %same = icmp eq i64 %again, %g
  br i1 %same, label %work, label %missed
work:
  %entry.word = load i64, ptr %entry.at
  %calls.word = load i64, ptr %calls.at
  %count = load i64, ptr %count.at
  %entry.fn = inttoptr i64 %entry.word to ptr
  %calls = inttoptr i64 %calls.word to ptr
  call void @take_chunks(ptr %pool, ptr %entry.fn, ptr %calls, i64 %count, i64 %me)
  br label %missed
missed:
  %leaving = atomicrmw sub ptr %active, i64 1 seq_cst
  br label %next
next:
  br label %idle
leave:
  %gone = atomicrmw sub ptr %sleepers, i64 1 seq_cst
  %u2 = call i32 @pthread_mutex_unlock(ptr %mutex)
  ret void
}}

define void @hpvm_pool_run(ptr %pool, ptr %entry.fn, ptr %calls, i64 %count) {{
entry:
{_fields('generation', 'done', 'active', 'sleepers', 'entry.at', 'calls.at', 'count.at',
          'homes.at', 'participants', 'mutex', 'cond')}
  br label %drain
drain:
  %drains = phi i64 [ 0, %entry ], [ %drains.next, %drain.again ], [ %drains.next, %drain.yield ]
  %busy = load atomic i64, ptr %active seq_cst, align 8
  %stragglers = icmp ne i64 %busy, 0
  br i1 %stragglers, label %drain.again, label %publish
drain.again:
  {pause}
  %drains.next = add i64 %drains, 1
  %drain.long = icmp sgt i64 %drains.next, {SPINS}
  br i1 %drain.long, label %drain.yield, label %drain
drain.yield:
  %y = call i32 @sched_yield()
  br label %drain
publish:
  %entry.word = ptrtoint ptr %entry.fn to i64
  store i64 %entry.word, ptr %entry.at
  %calls.word = ptrtoint ptr %calls to i64
  store i64 %calls.word, ptr %calls.at
  store i64 %count, ptr %count.at
  store atomic i64 0, ptr %done seq_cst, align 8
  %homes.word = load i64, ptr %homes.at
  %homes = inttoptr i64 %homes.word to ptr
  %parts = load i64, ptr %participants
  br label %home
home:
  %owner = phi i64 [ 0, %publish ], [ %owner.next, %home ]
  %scaled = mul i64 %owner, %count
  %start = udiv i64 %scaled, %parts
  %next = getelementptr [{HOME_STRIDE} x i64], ptr %homes, i64 %owner
  store atomic i64 %start, ptr %next seq_cst, align 8
  %owner.next = add i64 %owner, 1
  %more.homes = icmp ult i64 %owner.next, %parts
  br i1 %more.homes, label %home, label %open
open:
  %opened = atomicrmw add ptr %generation, i64 1 seq_cst
  %asleep = load atomic i64, ptr %sleepers seq_cst, align 8
  %sleeping = icmp ne i64 %asleep, 0
  br i1 %sleeping, label %wake, label %go
wake:
  %l = call i32 @pthread_mutex_lock(ptr %mutex)
  %b = call i32 @pthread_cond_broadcast(ptr %cond)
  %u = call i32 @pthread_mutex_unlock(ptr %mutex)
  br label %go
go:
  %me = sub i64 %parts, 1
  call void @take_chunks(ptr %pool, ptr %entry.fn, ptr %calls, i64 %count, i64 %me)
  br label %wait
wait:
  %polls = phi i64 [ 0, %go ], [ %polls.next, %wait.again ], [ %polls.next, %wait.yield ]
  %finished = load atomic i64, ptr %done seq_cst, align 8
  %all = icmp sge i64 %finished, %count
  br i1 %all, label %exit, label %wait.again
wait.again:
  {pause}
  %polls.next = add i64 %polls, 1
  %long = icmp sgt i64 %polls.next, {SPINS}
  br i1 %long, label %wait.yield, label %wait
wait.yield:
  %y2 = call i32 @sched_yield()
  br label %wait
exit:
  %closed = atomicrmw add ptr %generation, i64 1 seq_cst
  ret void
}}

define void @hpvm_pool_stop(ptr %pool) {{
entry:
{_fields('stop', 'mutex', 'cond')}
  %l = call i32 @pthread_mutex_lock(ptr %mutex)
  store atomic i64 1, ptr %stop seq_cst, align 8
  %b = call i32 @pthread_cond_broadcast(ptr %cond)
  %u = call i32 @pthread_mutex_unlock(ptr %mutex)
  ret void
}}
"""


_ADDRESS = ctypes.c_void_p
_INIT = ctypes.CFUNCTYPE(None, _ADDRESS)
_WORKER = ctypes.CFUNCTYPE(None, _ADDRESS, ctypes.c_int64)
_RUN = ctypes.CFUNCTYPE(None, _ADDRESS, _ADDRESS, _ADDRESS, ctypes.c_int64)


class ThreadPool:
    """``workers`` native worker threads; :meth:`run` runs a launch's
    chunks on them and the calling thread."""

    def __init__(self, workers: int):
        from .compiler import load_optimised_ir
        initialize()
        code = load_optimised_ir("hpvm_pool", pool_ir(platform.machine()), "thread_pool.ll")
        self._engine = llvm.create_mcjit_compiler(parse(""), MachineSpec.host().create(jit=True))
        self._engine.add_object_file(llvm.ObjectFileRef.from_data(code.object_code))
        self._engine.finalize_object()
        address = self._engine.get_function_address
        self._run = _RUN(address("hpvm_pool_run"))
        self._clear = address("hpvm_pool_clear")
        self._copy = address("hpvm_pool_copy")
        self._stop = _INIT(address("hpvm_pool_stop"))
        worker = _WORKER(address("hpvm_pool_worker"))
        self._record = np.zeros(POOL_BYTES, np.uint8)
        self.address = self._record.ctypes.data
        self._participants = workers + 1
        self._homes = np.zeros(self._participants * HOME_STRIDE, np.int64)
        words = self._record[:MUTEX].view(np.int64)
        words[WORDS["homes.at"]] = self._homes.ctypes.data
        words[WORDS["participants"]] = self._participants
        _INIT(address("hpvm_pool_init"))(self.address)
        self._busy = threading.Lock()
        self.workers = [threading.Thread(target=worker, args=(self.address, index), daemon=True,
                                         name=f"hpvm-cpu-{index}") for index in range(workers)]
        for thread in self.workers:
            thread.start()

    def run(self, entry: int, calls: np.ndarray) -> None:
        """Run every (slots, first, end) row of ``calls`` through ``entry``
        (a function address).  Launches from other threads wait their turn:
        each uses every core."""
        with self._busy:
            self._run(self.address, entry, calls.ctypes.data, len(calls))

    def clear(self, array: np.ndarray) -> None:
        """Zero-fill ``array`` (C-contiguous) on every core: a memset of
        each range of its bytes (``hpvm_pool_clear``, the base address in
        each chunk's first column)."""
        self._run_in_pages(self._clear, array.ctypes.data, array.nbytes)

    def copy(self, to: np.ndarray, source: np.ndarray) -> None:
        """Copy ``source`` into ``to`` (both C-contiguous, the same size) on
        every core: a memcpy of each range of bytes (``hpvm_pool_copy``,
        the two base addresses at the address in each chunk's first
        column)."""
        pair = np.array([to.ctypes.data, source.ctypes.data], dtype=np.uint64)
        self._run_in_pages(self._copy, pair.ctypes.data, to.nbytes)

    def _run_in_pages(self, entry: int, argument: int, size: int) -> None:
        """``entry`` over ``[0, size)`` bytes in CLEARS_PER_CORE ranges of
        whole pages per participant."""
        ranges = split_range(size, self._participants * CLEARS_PER_CORE, PAGE)
        self.run(entry, np.array([(argument, first, end) for first, end in ranges],
                                 dtype=np.uint64))

    def stop(self) -> None:
        """End the workers (the pool cannot run jobs afterwards)."""
        self._stop(self.address)
        for thread in self.workers:
            thread.join()


@functools.cache
def thread_pool() -> ThreadPool:
    """The process's pool: one worker per available core beside the
    launching thread."""
    return ThreadPool(available_cores() - 1)


@atexit.register
def _stop_pool() -> None:
    """Workers leave the machine code before the interpreter frees it."""
    if thread_pool.cache_info().currsize:
        thread_pool().stop()


def _forget_pool_in_child() -> None:
    """A forked child has none of the parent's threads: it makes its own
    pool when it first needs one."""
    thread_pool.cache_clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)
