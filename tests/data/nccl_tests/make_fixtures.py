"""Writes the nccl-tests logs of this folder: small logs in the shapes real ones are found in, for
fabricsim's reader tests. None is a real run: the figures come from a made-up time model (latency +
size / bandwidth) and are printed the way nccl-tests prints them (``src/util.cu``: ``%12li`` sizes,
``getFloatStr`` times and bandwidths, ``%g`` average), so that algbw = size / time and busbw = algbw x
the bus factor hold to the printed digits. Host names, pids and bus ids are placeholders.

Run ``python tests/data/nccl_tests/make_fixtures.py`` to write them again; the tests pin their
figures, so a change here shows up there.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOTE = "# written for fabricsim's tests (tests/data/nccl_tests/make_fixtures.py), not a real run: {what}\n"
TYPE_BYTES = {"float": 4, "half": 2, "bfloat16": 2}
WHOLE_ARRAY = {"all_gather", "reduce_scatter", "alltoall", "gather", "scatter"}


def factor(op: str, n: int) -> float:
    if op == "all_reduce":
        return 2 * (n - 1) / n
    return (n - 1) / n if op in WHOLE_ARRAY else 1.0


def float_str(value: float, width: int) -> str:
    """nccl-tests' ``getFloatStr``: 2 decimals, then fewer, then an exponent, to fit ``width``."""
    for fmt in ("%*.2f", "%*.1f", "%*.0f"):
        text = fmt % (width, value)
        if len(text) <= width:
            return text
    return ("%*.1e" if width >= 7 else "%*.0e") % (width, value)


def sizes(low: int, high: int, step: int = 2) -> list[int]:
    out = [low]
    while out[-1] * step <= high:
        out.append(out[-1] * step)
    return out


def printed(op: str, size: int, n: int, dtype: str) -> tuple[int, int]:
    """(printed size, count) of nccl-tests' ``setupArgs`` for a requested size: whole-array ops round
    the per-rank count down to 16 B."""
    elem = TYPE_BYTES[dtype]
    count = size // elem
    if op in WHOLE_ARRAY:
        base = (count // n) & ~(16 // elem - 1)
        return base * n * elem, base
    return count * elem, count


def model_time(size: int, latency_us: float, busbw: float, f: float, extra: float) -> float:
    """us: a latency, plus the bytes at a bus bandwidth that ramps up with size."""
    if size == 0:
        return 0.21 + abs(extra) / 10
    algbw = busbw / f if f else busbw
    return latency_us + size / (algbw * 1e3) * (1 + 2e6 / (size + 2e6)) + extra


class Run:
    """One test: its rows as nccl-tests computes them (unrounded), printed on demand."""

    def __init__(self, op: str, n: int, low: int, high: int, latency_us: float, busbw: float,
                 dtype: str = "float", redop: str | None = None, root: int = -1) -> None:
        self.op, self.n, self.dtype = op, n, dtype
        self.redop = redop or ("sum" if op in ("all_reduce", "reduce_scatter", "reduce") else "none")
        self.root = root
        self.low, self.high = low, high
        f = factor(op, n)
        self.rows = []
        for s in sizes(low, high):
            size, count = printed(op, s, n, dtype)
            placements = []
            for extra in (0.0, -0.3):  # in-place a little faster
                t = model_time(size, latency_us, busbw, f, extra)
                algbw = size / t / 1e3
                placements.append((t, algbw, algbw * f))
            self.rows.append((size, count, placements))

    @property
    def average(self) -> float:
        values = [b for _, _, ps in self.rows for _, _, b in ps]
        return sum(values) / len(values)

    def row_text(self, i: int) -> str:
        size, count, placements = self.rows[i]
        text = "%12li  %12li  %8s  %6s  %6s" % (size, count, self.dtype, self.redop, "%6i" % self.root)
        for t, a, b in placements:
            text += "  %7s  %6s  %6s  %6g" % (float_str(t, 7), float_str(a, 6), float_str(b, 6), 0)
        return text

    def preamble(self, host: str = "node-a", gpus_per_process: int | None = None, ranks=None,
                 nccl: int = 22703) -> str:
        per = self.n if gpus_per_process is None else gpus_per_process
        text = (f"# nccl-tests version 2.17.6 nccl-headers={nccl} nccl-library={nccl}\n"
                f"# Collective test starting: {self.op}_perf\n"
                f"# nThread 1 nGpus {per} minBytes {self.low} maxBytes {self.high} step: 2(factor) warmup iters: 5 "
                "iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n")
        for r in (range(self.n) if ranks is None else ranks):
            node, dev = divmod(r, 8)
            pid = 4000 + (r if per == 1 else r // per)
            name = host if self.n <= 8 else f"node-{node:02d}"
            text += "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s\n" % (
                r, 0, pid, name, dev, 0, 0x18 + 0x10 * dev, 0, "NVIDIA H100 80GB HBM3")
        return text + "#\n"

    @staticmethod
    def header() -> str:
        return ("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n"
                % ("", "", "", "", "")
                + "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n"
                % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                   "time", "algbw", "busbw", "#wrong")
                + "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n"
                % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))

    def footer(self) -> str:
        return ("# %-20s : %d %s\n" % ("Out of bounds values", 0, "OK")
                + "# %-20s : %g %s\n" % ("Avg bus bandwidth", self.average, "")
                + f"#\n# Collective test concluded: {self.op}_perf\n")

    def table(self) -> str:
        return self.header() + "".join(self.row_text(i) + "\n" for i in range(len(self.rows))) + self.footer()

    def log(self, **preamble) -> str:
        return self.preamble(**preamble) + self.table()


def info(dev: int, text: str, host: str = "node-a", pid: int = 4000) -> str:
    return f"{host}:{pid}:{pid + 17 + dev} [{dev}] NCCL INFO {text}"


def zero_bytes() -> str:
    """all_gather on 8 GPUs from 8 B: nccl-tests prints 0 B rows until the per-rank count reaches 16 B."""
    run = Run("all_gather", 8, 8, 1 << 20, 12.0, 300.0)
    return (NOTE.format(what="all_gather on 8 GPUs from -b 8: the first four sizes print as 0 B")
            + "$ ./build/all_gather_perf -b 8 -e 1M -f 2 -g 8\n" + run.log())


def info_interleaved() -> str:
    """NCCL_DEBUG=INFO: init lines before the table, lines between rows, one glued to the end of a row,
    one cutting a row in two."""
    run = Run("all_reduce", 8, 1 << 20, 64 << 20, 25.0, 360.0)
    lines = [NOTE.format(what="all_reduce on 8 GPUs with NCCL_DEBUG=INFO, INFO text interleaved with the rows"),
             "$ NCCL_DEBUG=INFO ./build/all_reduce_perf -b 1M -e 64M -f 2 -g 8\n", run.preamble(nccl=22105)]
    lines += [info(0, "Bootstrap : Using eth0:10.0.0.1<0>") + "\n", info(0, "NCCL version 2.21.5+cuda12.4") + "\n",
              info(0, "NCCL_ALGO set by environment to Ring") + "\n",
              info(0, "NCCL_PROTO set by environment to Simple") + "\n",
              info(0, "NCCL_NVLS_ENABLE set by environment to 0.") + "\n"]
    lines += [info(d, f"comm 0x55d0c{d}0 rank {d} nranks 8 cudaDev {d} nvmlDev {d} busId {0x18 + 0x10 * d:x}000 "
                      "commId 0x1f2e3d4c5b6a7988 - Init COMPLETE") + "\n" for d in range(8)]
    lines.append(run.header())
    for i in range(len(run.rows)):
        text = run.row_text(i)
        if i == 1:
            lines.append(info(3, "Channel 00/0 : 3[3] -> 4[4] via P2P/CUMEM") + "\n")
            lines.append(text + "\n")
        elif i == 3:
            lines.append(text + info(0, "Connected all trees") + "\n")  # glued to the end of the row
        elif i == 5:
            head, tail = text[:52], text[52:]  # after the root column
            lines.append(head + info(5, "Connected NVLS") + "\n")  # cuts the row: its rest follows
            lines.append(tail.lstrip() + "\n")
        else:
            lines.append(text + "\n")
    lines.append(run.footer())
    return "".join(lines)


def rank_list_cut() -> str:
    """16 ranks on two nodes, the device list cut to its last four lines (a multi-node log trimmed)."""
    run = Run("all_reduce", 16, 1 << 20, 32 << 20, 40.0, 180.0)
    text = run.log(gpus_per_process=1, ranks=range(12, 16))
    return (NOTE.format(what="all_reduce on 16 GPUs (2 nodes x 8, MPI), the device list cut to its last lines")
            + "$ mpirun -np 16 -N 8 ./build/all_reduce_perf -b 1M -e 32M -f 2 -g 1\n" + text)


def grep_rows() -> str:
    """Rows kept by grep from two logs (no header): all_reduce on 8 GPUs, then on 16."""
    a = Run("all_reduce", 8, 1 << 20, 16 << 20, 25.0, 360.0)
    b = Run("all_reduce", 16, 1 << 20, 16 << 20, 40.0, 180.0)
    return (NOTE.format(what="'grep float' of two all_reduce logs (8 then 16 GPUs): data rows only")
            + "".join(r.row_text(i) + "\n" for r in (a, b) for i in range(len(r.rows))))


def _old_rows(run: Run, redop: bool) -> str:
    """Rows as nccl-tests before ~2.10 printed them: no root column, a redop column only for
    reductions, an ``error`` column (max deviation) instead of ``#wrong``."""
    out = []
    for size, count, placements in run.rows:
        text = "%12li  %12li  %6s" % (size, count, run.dtype) + ("  %6s" % run.redop if redop else "")
        for t, al, bu in placements:
            text += "  %7s  %6s  %6s  %5s" % (float_str(t, 7), float_str(al, 6), float_str(bu, 6), "0e+00")
        out.append(text + "\n")
    return "".join(out)


def grep_rows_old() -> str:
    """Rows of an old nccl-tests all_reduce (no root column), kept by grep."""
    run = Run("all_reduce", 8, 1 << 20, 8 << 20, 25.0, 240.0)
    return (NOTE.format(what="old-layout all_reduce rows kept by grep (size count type redop time ...), 8 GPUs")
            + _old_rows(run, redop=True))


def grep_rows_old_all_gather() -> str:
    """Rows of an old nccl-tests all_gather (no redop, no root), kept by grep: the op needs --op (alltoall
    prints the same columns), the rank count comes from size / count."""
    run = Run("all_gather", 8, 1 << 20, 8 << 20, 20.0, 220.0)
    return (NOTE.format(what="old-layout all_gather rows kept by grep (size count type time ...), 8 GPUs")
            + _old_rows(run, redop=False))


def several_runs() -> str:
    """Two tests in one file, each with its own header, as a job script running two binaries writes."""
    a = Run("all_reduce", 8, 1 << 20, 8 << 20, 25.0, 360.0)
    b = Run("all_gather", 8, 1 << 20, 8 << 20, 20.0, 330.0)
    return (NOTE.format(what="a job that ran all_reduce_perf then all_gather_perf on 8 GPUs into one file")
            + "+ ./build/all_reduce_perf -b 1M -e 8M -f 2 -g 8\n" + a.log()
            + "+ NCCL_PROTO=LL128 ./build/all_gather_perf -b 1M -e 8M -f 2 -g 8\n" + b.log())


def ompi_prefixes() -> str:
    """mpirun --tag-output: every line of rank r starts [1,r]<stdout>:."""
    run = Run("all_reduce", 4, 1 << 20, 8 << 20, 30.0, 150.0)
    text = run.log(gpus_per_process=1)
    body = "".join(f"[1,0]<stdout>:{line}\n" for line in text.splitlines())
    return (NOTE.format(what="all_reduce on 4 GPUs, mpirun --tag-output -x NCCL_ALGO=Tree")
            + "$ mpirun -np 4 --tag-output -x NCCL_ALGO=Tree ./build/all_reduce_perf -b 1M -e 8M -f 2 -g 1\n"
            + "[1,2]<stderr>:Warning: Permanently added 'node-b' (ED25519) to the list of known hosts.\n" + body)


def slurm_prefixes() -> str:
    """srun --label (0: ) on every line of task 0, and srun's own lines."""
    run = Run("reduce_scatter", 8, 8, 4 << 20, 14.0, 310.0)
    out = [NOTE.format(what="reduce_scatter on 8 GPUs under srun --label (one task, -g 8)"),
           "srun: job 4242 queued and waiting for resources\n", "srun: job 4242 has been allocated resources\n"]
    out += [f"0: {line}\n" for line in run.log().splitlines()]
    out.append("srun: error: node-a: task 0: Exited with exit code 0\n")
    return "".join(out)


def host_timestamps() -> str:
    """A collector's timestamp and host name on every line (pdsh/clush through a timestamping tee)."""
    run = Run("broadcast", 8, 1 << 20, 8 << 20, 18.0, 170.0, root=0)
    out = [NOTE.format(what="broadcast on 8 GPUs (root 0), each line stamped with time and host by a collector")]
    for i, line in enumerate(run.log().splitlines()):
        out.append(f"[2025-06-01 10:00:{i % 60:02d}.{i:03d}] node-a: {line}\n")
    return "".join(out)


def mpich_prefixes() -> str:
    """MPICH ``-prepend-rank`` labels every write of rank 0 with ``[0] ``; nccl-tests prints a row in
    three writes (size ... root, out-of-place, in-place), so the label comes back inside the row
    (the shape of NVIDIA/nccl issue 1453's log)."""
    run = Run("all_reduce", 16, 1 << 20, 8 << 20, 40.0, 180.0)
    out = [NOTE.format(what="all_reduce on 16 GPUs (2 nodes) under mpiexec -prepend-rank, rows labelled per write")]
    for line in (run.preamble(gpus_per_process=1) + run.header()).splitlines():
        out.append(f"[0] {line}\n")
    for i in range(len(run.rows)):
        first, oop, ip = _pieces(run.row_text(i))
        out.append(f"[0] {first}[0] {oop}[0] {ip}\n")
    out += [f"[0] {line}\n" for line in run.footer().splitlines()]
    return "".join(out)


def _pieces(row: str) -> tuple[str, str, str]:
    """A data row split where nccl-tests' three writes end: after root, after out-of-place #wrong."""
    cut = [m.start() for m in re.finditer(r"\S+", row)]
    return row[:cut[5]].rstrip(), row[cut[5]:cut[9]].rstrip(), row[cut[9]:]


def old_error_column() -> str:
    """A whole log of an old nccl-tests (before 2.13): no root column and an ``error`` column holding the
    largest deviation from the expected sum (``%5.0le``); one row's deviation is over its tolerance."""
    run = Run("all_reduce", 8, 1 << 20, 8 << 20, 25.0, 240.0)
    header = ("#                                                     out-of-place                       in-place\n"
              "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
              "#        (B)    (elements)                      (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n")
    rows = _old_rows(run, redop=True).splitlines()
    deviations = ["2e-07", "4e-07", "1e-06", "3e-02"]
    rows = [r.replace("0e+00", deviations[i], 1) for i, r in enumerate(rows)]
    pre = run.preamble().replace("# nccl-tests version 2.17.6 nccl-headers=22703 nccl-library=22703\n", "")
    return (NOTE.format(what="an old nccl-tests all_reduce log on 8 GPUs, error column of deviations")
            + pre + header + "".join(r + "\n" for r in rows)
            + "# Out of bounds values : 1 FAILED\n# Avg bus bandwidth    : %g \n#\n" % run.average)


def garbled() -> str:
    """A good log with one field garbled on several rows (issue 28 item 5), and a form feed and a U+2028
    in two comments above them, which must not move the later line numbers."""
    run = Run("all_reduce", 8, 128, 1 << 20, 20.0, 300.0)
    rows = [run.row_text(i) for i in range(len(run.rows))]

    def swap(i: int, column: int, value: str) -> None:
        fields = rows[i].split()
        fields[column] = value
        rows[i] = "  ".join(f"{f:>10s}" for f in fields)

    swap(0, 0, "-128")                   # sed 's/^ *128 /  -128 /'
    swap(1, 0, "2.56e2")                 # 1e3-like spelling
    swap(2, 0, "0x200")
    swap(3, 0, "1,024")
    swap(4, 7, "-12.34")                 # negative busbw
    swap(5, 7, "99999")                  # busbw not algbw x 1.75
    swap(6, 5, "0.001")                  # time inconsistent with algbw
    text = (NOTE.format(what="all_reduce on 8 GPUs, fields garbled on rows 1-7 (issue 28 item 5)")
            + "# a comment with a form feed \f inside\n# and one with a line separator \u2028 inside\n"
            + run.preamble() + run.header() + "".join(r + "\n" for r in rows) + run.footer())
    return text


def json_output() -> str:
    """nccl-tests -J out.json (version 3 of its JSON file): one line."""
    run = Run("all_reduce", 8, 1 << 20, 16 << 20, 25.0, 360.0)
    results = []
    for size, count, placements in run.rows:
        item = {"size": size, "count": count, "type": "float", "redop": "sum", "root": "%6i" % -1}
        for key, (t, a, b) in zip(("out_of_place", "in_place"), placements):
            item[key] = {"time": round(t, 6), "alg_bw": round(a, 6), "bus_bw": round(b, 6), "nwrong": 0.0}
        item.update({"actual_iterations": 20, "experiment_name": ""})
        results.append(item)
    doc = {"version": 3, "start_time": "2025-11-03 10:00:00",
           "args": ["./build/all_reduce_perf", "-b", "1M", "-e", "16M", "-f", "2", "-g", "8", "-J", "out.json"],
           "env": ["PATH=/usr/bin:/bin", "NCCL_ALGO=Ring", "NCCL_MNNVL_ENABLE=0",
                   "NOTE=written for fabricsim's tests (tests/data/nccl_tests/make_fixtures.py), not a real run"],
           "nccl_version": 22703,
           "config": {"nthreads": 1, "ngpus": 8, "minimum_bytes": 1 << 20, "maximum_bytes": 16 << 20,
                      "step_factor": 2, "warmup_iters": 5, "iterations": 20, "aggregated_iterations": 1,
                      "validation": 1, "graph": 0, "blocking_collectives": "false", "per_iter_timing": "false",
                      "per_iter_skip": 0, "parallel_init": "false",
                      "devices": [{"rank": 0, "group": 0, "pid": 4000, "hostname": "node-a", "device": 0,
                                   "device_hex": "0000:18:00", "device_info": "NVIDIA H100 80GB HBM3"}]},
           "results": results, "out_of_bounds": {"count": 0, "okay": "true"},
           "average_bus_bandwidth": {"bandwidth": round(run.average, 6), "okay": "unchecked"}, "errors": [],
           "end_time": "2025-11-03 10:00:09"}
    return (NOTE.format(what="the JSON file of nccl-tests -J (version 3), all_reduce on 8 GPUs; the reader skips "
                             "this comment line") + json.dumps(doc, separators=(",", ":")) + "\n")


FIXTURES = {
    "zero_bytes_all_gather.log": zero_bytes, "info_interleaved.log": info_interleaved,
    "rank_list_cut.log": rank_list_cut, "grep_rows.log": grep_rows, "grep_rows_old.log": grep_rows_old,
    "grep_rows_old_all_gather.log": grep_rows_old_all_gather,
    "several_runs.log": several_runs, "ompi_prefixes.log": ompi_prefixes, "slurm_prefixes.log": slurm_prefixes,
    "host_timestamps.log": host_timestamps, "mpich_prefixes.log": mpich_prefixes,
    "old_error_column.log": old_error_column,
    "garbled.log": garbled, "all_reduce.json": json_output,
}


if __name__ == "__main__":
    for name, make in FIXTURES.items():
        (HERE / name).write_text(make(), newline="\n")
        print("wrote", HERE / name)
