"""available_cores: the thread count hpvm's pools use."""
import pytest

from hpvm import threads


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    for variable in threads.THREADS_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    threads.available_cores.cache_clear()
    yield
    threads.available_cores.cache_clear()


def test_the_environment_sets_the_count(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3,2")
    assert threads.available_cores() == 3
    threads.available_cores.cache_clear()
    monkeypatch.setenv("HPVM_NUM_THREADS", "5")
    assert threads.available_cores() == 5


def test_nonsense_in_the_environment_is_ignored(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "lots")
    assert threads.available_cores() >= 1


def test_a_cgroup_quota_caps_the_count(monkeypatch):
    monkeypatch.setattr(threads, "cgroup_cpu_quota", lambda: 1)
    assert threads.available_cores() == 1


@pytest.mark.parametrize("files,expected", [
    ({"cpu.max": "250000 100000\n"}, 3),
    ({"cpu.max": "max 100000\n"}, None),
    ({"cpu/cpu.cfs_quota_us": "50000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 1),
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
    ({}, None),
])
def test_cgroup_quotas_of_both_versions(tmp_path, files, expected):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert threads.cgroup_cpu_quota(tmp_path) == expected
