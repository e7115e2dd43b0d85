"""thread_pool_bench times launches through the cpu's pool and on the
launching thread alone, for each worker count asked."""
import pytest

pytest.importorskip("hpvm_cpu")

from benchmarks.thread_pool_bench import launch_times, main  # noqa: E402


def test_each_worker_count_gets_a_row_of_two_chunk_counts(capsys):
    assert main(["--workers", "1,2", "--launches", "40"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert [row.split("|")[1:3] for row in rows[2:]] == [
        [" 1 ", " 2 "], [" 1 ", " 8 "], [" 2 ", " 3 "], [" 2 ", " 12 "]]


def test_launch_times_are_one_per_round():
    from hpvm_cpu.codegen.thread_pool import ThreadPool
    pool = ThreadPool(1)
    try:
        times = launch_times(pool, 3, 20)
    finally:
        pool.stop()
    assert len(times) == 5 and all(t > 0 for t in times)
