"""A compile worker: a child process that runs a toolchain (LLVM, an
OpenCL or vendor compiler driven through its library) on the caller's
behalf, so that an abort, a segfault or a hang in it costs that child, not
the user's process.

    from hpvm.codegen.worker import run_isolated, ToolchainCrash
    try:
        object_code = run_isolated("hpvm_cpu.codegen.pipeline:emit", (ir_text, spec),
                                   timeout=120)
    except ToolchainCrash as crash:
        ...  # crash.reason: "aborted (SIGABRT)", crash.output: its last stderr lines

``run_isolated(function, args)`` imports ``"module:function"`` in a
worker and calls it with ``args``; the arguments and the result travel
pickled.  An exception the function raises is raised again here (an
``HpvmError`` as itself, anything else as a ``TargetError``).  The
process's workers are a pool, started as calls need them, up to
``compile_jobs()`` (one per core, at most MAX_COMPILE_JOBS, or
``$HPVM_COMPILE_JOBS``): calls from several threads run at the same time,
each in a worker of its own, and a worker that died is started again.
``HPVM_COMPILE_IN_PROCESS=1`` runs the function in this process instead
(for debuggers and profilers).
"""
from __future__ import annotations

import atexit
import importlib
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from ..errors import HpvmError, TargetError

MAX_COMPILE_JOBS = 8
"""Workers the pool starts at most unless ``$HPVM_COMPILE_JOBS`` says
otherwise: each holds its own toolchain (about 120 MB resident with LLVM)."""
DEFAULT_TIMEOUT = 300.0
"""Seconds a single toolchain call may take before it counts as hung."""
OUTPUT_TAIL = 2000
"""Characters of the worker's stderr kept in a crash report."""
_HEADER = struct.Struct("<Q")


class ToolchainCrash(TargetError):
    """The toolchain died or hung in the worker.  ``reason`` says how
    (``aborted (SIGABRT)``, ``hung for more than 300 s``), ``output`` is
    what it printed last (an assertion message, a stack dump)."""

    def __init__(self, function: str, reason: str, output: str):
        self.function = function
        self.reason = reason
        self.output = output
        said = _last_meaningful_line(output)
        super().__init__(f"{reason}" + (f": {said}" if said else ""))


def in_process() -> bool:
    return os.environ.get("HPVM_COMPILE_IN_PROCESS", "") not in ("", "0")


def run_isolated(function: str, args: tuple = (), timeout: float = DEFAULT_TIMEOUT) -> Any:
    """``function(*args)`` (``"package.module:name"``) run in the compile
    worker; see the module docstring."""
    if in_process():
        return _resolve(function)(*args)
    return _POOL.call(function, args, timeout)


def warm_up(modules: tuple[str, ...], workers: int | None = None) -> list[threading.Thread]:
    """Start up to ``workers`` (default, and at most: ``compile_jobs()``)
    workers now, in the background, each importing ``modules``, so that the
    toolchain calls that follow do not wait for a process to start and its
    toolchain to load (half a second each).  A caller asks for no more than
    it will use: a worker that no call needs would still be loading when
    the program first runs, and take a core from it.  Returns the threads
    waiting on them (none when every worker is started, or in process)."""
    if in_process():
        return []
    wanted = min(workers, compile_jobs()) if workers else compile_jobs()
    threads = [threading.Thread(target=_preload_quietly, args=(modules,), daemon=True,
                                name="hpvm-compile-warm-up")
               for _ in range(_POOL.unstarted(wanted))]
    for thread in threads:
        thread.start()
    return threads


def _preload_quietly(modules: tuple[str, ...]) -> None:
    try:
        _POOL.call("hpvm.codegen.worker:preload", (modules,), DEFAULT_TIMEOUT)
    except HpvmError:  # the call that needs the toolchain will say what is wrong
        pass


def preload(modules: tuple[str, ...]) -> None:
    """Run in a worker: import ``modules``."""
    for module in modules:
        importlib.import_module(module)


def compile_jobs() -> int:
    """How many workers run toolchains at once: ``$HPVM_COMPILE_JOBS``, else
    one per available core, at most MAX_COMPILE_JOBS."""
    from ..threads import available_cores
    text = os.environ.get("HPVM_COMPILE_JOBS", "").strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    return min(available_cores(), MAX_COMPILE_JOBS)


def _resolve(function: str):
    module, _, name = function.partition(":")
    return getattr(importlib.import_module(module), name)


def _last_meaningful_line(output: str) -> str:
    for line in reversed(output.strip().splitlines()):
        line = line.strip()
        if line and not line.startswith(("#", "Stack dump", "PLEASE submit", "0.", "1.")):
            return line[:600]
    return ""


class Worker:
    """One worker: the child process and the pipes to it.  ``call(function,
    args, timeout)`` is what run_isolated does with the process-wide
    worker; tools that want several at once (the tuner) make their own."""

    def __init__(self):
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._stderr = None
        self._owner = os.getpid()

    def call(self, function: str, args: tuple, timeout: float) -> Any:
        payload = pickle.dumps((function, args), protocol=pickle.HIGHEST_PROTOCOL)
        with self._lock:
            process = self._started()
            try:
                _write_message(process.stdin, payload)
                status, value = pickle.loads(self._read_reply(process, function, timeout))
            except (OSError, EOFError, pickle.UnpicklingError):  # the pipe broke: it died
                raise self._crash(function, None) from None
            except BaseException:  # interrupted mid-call: its reply must never be read later
                self.close()
                raise
        if status == "ok":
            return value
        raise value

    def _started(self) -> subprocess.Popen:
        # A forked child must not share its parent's worker (and its pipes).
        if self._process is not None and self._process.poll() is None \
                and self._owner == os.getpid():
            return self._process
        self._owner = os.getpid()
        self._stderr = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            [sys.executable, "-c", "from hpvm.codegen.worker import serve; serve()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        return self._process

    def _read_reply(self, process: subprocess.Popen, function: str, timeout: float) -> bytes:
        deadline = time.monotonic() + timeout
        header = _read_exactly(process.stdout, _HEADER.size, deadline)
        body = None if header is None else _read_exactly(
            process.stdout, _HEADER.unpack(header)[0], deadline)
        if body is None:
            raise self._crash(function, timeout if time.monotonic() >= deadline else None)
        return body

    def _crash(self, function: str, timeout: float | None) -> ToolchainCrash:
        """Stop the worker and describe how it ended: ``timeout`` when it
        hung that long, None when its pipe closed (it died)."""
        process = self._process
        if timeout is not None:
            process.kill()
        try:
            code = process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # closed its pipe but lives on
            process.kill()
            code = process.wait()
        self._stderr.seek(0)
        output = self._stderr.read().decode(errors="replace")[-OUTPUT_TAIL:]
        self._process = None
        if timeout is not None:
            reason = f"hung for more than {timeout:g} s and was stopped"
        elif code < 0:
            reason = f"{_signal_word(-code)} ({signal.Signals(-code).name})"
        else:
            reason = f"exited with status {code}"
        return ToolchainCrash(function, reason, output)

    def close(self) -> None:
        """Stop the worker (the next call starts a new one)."""
        if self._process is not None and self._owner == os.getpid() \
                and self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        self._process = None


def _signal_word(number: int) -> str:
    return {signal.SIGABRT: "aborted", signal.SIGSEGV: "crashed (segmentation fault)",
            signal.SIGILL: "crashed (illegal instruction)", signal.SIGBUS: "crashed (bus error)",
            signal.SIGKILL: "was killed", signal.SIGFPE: "crashed (arithmetic fault)",
            }.get(number, "died of a signal")


def _read_exactly(stream, count: int, deadline: float) -> bytes | None:
    """``count`` bytes from the pipe, or None at end of file or past the
    deadline."""
    chunks, missing = [], count
    fd = stream.fileno()
    while missing:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return None
        chunk = os.read(fd, min(missing, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def _write_message(stream, payload: bytes) -> None:
    stream.write(_HEADER.pack(len(payload)) + payload)
    stream.flush()


class WorkerPool:
    """Workers started as calls need them, up to ``size()`` at once; a call
    takes an idle one, or waits for one."""

    def __init__(self, size=compile_jobs):
        self._size = size
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[Worker] = []
        self._free = threading.Semaphore(0)
        self._started = 0

    def call(self, function: str, args: tuple, timeout: float) -> Any:
        worker = self._take()
        try:
            return worker.call(function, args, timeout)
        finally:
            with self._lock:
                self._idle.append(worker)
            self._free.release()

    def unstarted(self, wanted: int) -> int:
        """How many workers more there may be, up to ``wanted`` in all."""
        with self._lock:
            return max(0, min(wanted, self._size()) - self._started)

    def _take(self) -> Worker:
        with self._lock:
            if not self._idle and self._started < self._size():
                self._started += 1
                return Worker()
        self._free.acquire()
        with self._lock:
            return self._idle.pop()

    def close(self) -> None:
        """Stop the idle workers (a later call starts new ones)."""
        with self._lock:
            workers, self._idle = self._idle, []
            self._started -= len(workers)
            for worker in workers:
                self._free.acquire(blocking=False)
                worker.close()

    def after_fork(self) -> None:
        """In a forked child: the parent's workers and locks are not ours."""
        self._reset()


_POOL = WorkerPool()
atexit.register(_POOL.close)
os.register_at_fork(after_in_child=_POOL.after_fork)


def _print_and_abort(message: str) -> None:
    """Say ``message`` on stderr and abort, as a failed LLVM assertion does
    (for tests of crash reports)."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    os.abort()


def serve() -> None:
    """The worker's loop: read a call, run it, write the result, until the
    parent closes the pipe."""
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what the toolchain prints goes to stderr, not the protocol
    while True:
        header = requests.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        function, args = pickle.loads(requests.read(_HEADER.unpack(header)[0]))
        try:
            reply = ("ok", _resolve(function)(*args))
        except HpvmError as error:
            reply = ("error", error)
        except Exception as error:  # a toolchain binding's own exception
            reply = ("error", TargetError(f"{type(error).__name__}: {error}"))
        try:
            payload = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as error:  # an exception that does not pickle
            payload = pickle.dumps(("error", TargetError(str(reply[1]) or repr(error))))
        _write_message(replies, payload)
