"""Interrupts (issue 28, item 9): Ctrl-C while a trace streams leaves no hidden .NAME.partial file
and the old trace as it was; Ctrl-C while the Dask cluster starts is exit 130 with one line, no
traceback (was "AssertionError: Status.init" from distributed's exit hook, or "Nanny failed to
start"). Exit 130 in a shell is also a process killed by SIGINT (return code -2 here): Python
ends that way when Ctrl-C lands while it shuts down."""

from __future__ import annotations

import gc
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simulator.reports.trace import TraceWriter

ROOT = Path(__file__).resolve().parents[1]
INTERRUPTED = (130, -signal.SIGINT)


def test_a_dropped_trace_stream_removes_its_hidden_file(tmp_path):
    path = tmp_path / "t.json"
    path.write_text("old")
    writer = TraceWriter(path=path)
    writer.events.append({"ph": "i", "name": "x", "ts": 0, "pid": 0, "tid": 0, "s": "g"})
    partial = tmp_path / ".t.json.partial"
    assert partial.exists()
    del writer
    gc.collect()
    assert not partial.exists() and path.read_text() == "old"


def test_a_finished_trace_stream_is_moved_into_place(tmp_path):
    path = tmp_path / "t.json"
    writer = TraceWriter(path=path)
    writer.events.append({"ph": "i", "name": "x", "ts": 0, "pid": 0, "tid": 0, "s": "g"})
    writer.write()
    del writer
    gc.collect()
    assert path.is_file() and sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]


def _interrupt(args: list[str], cwd: Path, when, pid: list[int] | None = None) -> subprocess.CompletedProcess:  # noqa: ANN001
    """Run fabricsim, send SIGINT once ``when(seconds since start)`` holds (or it ended, or 60 s)."""
    proc = subprocess.Popen([sys.executable, "-m", "simulator", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if pid is not None:
        pid.append(proc.pid)
    start = time.monotonic()
    while not when(time.monotonic() - start) and proc.poll() is None and time.monotonic() - start < 60:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_ctrl_c_while_a_trace_streams_leaves_no_partial_file_and_the_old_trace(tmp_path):
    old = tmp_path / "tr.json"
    old.write_text("old trace")
    partial = tmp_path / ".tr.json.partial"
    done = _interrupt(["bench", str(ROOT / "topologies" / "hgx_h100.yaml"), "--sizes", "256M", "--engine", "packet",
                       "--trace", str(old)], tmp_path, lambda t: partial.exists() and t > 0.3)
    assert done.returncode in INTERRUPTED, done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tr.json"] and old.read_text() == "old trace"


def _children(pid: int) -> bool:
    """Whether process ``pid`` has started a child (Dask's first worker process)."""
    return any(Path(task, "children").read_text().split() for task in Path(f"/proc/{pid}/task").iterdir())


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc to see the cluster start")
@pytest.mark.parametrize("after_s", [0.0, 0.15, 0.4])
def test_ctrl_c_while_dask_starts_is_one_line_exit_130(tmp_path, after_s):
    sweep = tmp_path / "s.yaml"
    sweep.write_text("name: s\nbase:\n  credit_lab: {generation: nvlink5}\naxes:\n  buffer: [256K, 512K, 1M]\n"
                     "  cable_m: [1, 5, 30]\n")
    seen: list[float] = []

    def starting(t: float) -> bool:  # the first worker process is up, plus after_s
        if not seen and _children(proc_pid[0]):
            seen.append(t)
        return bool(seen) and t >= seen[0] + after_s

    proc_pid: list[int] = []
    done = _interrupt(["sweep", str(sweep), "--workers", "2", "--no-cache"], tmp_path, starting, proc_pid)
    assert done.returncode in INTERRUPTED, done.stderr
    assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr
    lines = [x for x in done.stderr.splitlines() if x.strip()]
    assert lines in ([], ["fabricsim: interrupted"]), done.stderr


def test_an_interrupted_start_closes_what_started(monkeypatch):
    """The start-up path itself: Ctrl-C inside LocalCluster() leaves no cluster for distributed's
    exit hook to close (the hook's traceback was the defect)."""
    distributed = pytest.importorskip("distributed")
    from distributed.deploy.spec import SpecCluster

    from simulator.runner import distributed as runner

    real = distributed.LocalCluster

    def interrupted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        real(*args, **kwargs)  # starts, registers itself, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(distributed, "LocalCluster", interrupted)
    before = set(SpecCluster._instances)
    with pytest.raises(KeyboardInterrupt):
        with runner._client(1, None, processes=False):
            pass
    left = [c for c in SpecCluster._instances if c not in before]
    assert all(not getattr(c, "shutdown_on_close", False) or str(c.status) == "Status.closed" for c in left)
