"""nccl-tests logs: the reader on every variant (-g, MPI, old columns, in-place, extra columns), its
FILE:LINE errors, and ``validate --nccl-tests`` end to end (rows per logged size, errors as
100 (pred - meas) / meas)."""

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.errors import InputError
from simulator.runner.nccl_tests_validation import settings_for, summarize
from simulator.runner.validation import load_published
from simulator.workloads.collectives import busbw_factor
from simulator.workloads.traces.nccl_tests_log import PER_RANK_COUNT_OPS, TYPE_BYTES, parse_log, parse_text

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted((ROOT / "validation" / "nccl-tests").glob("*.log"))
_register()
runner = CliRunner()

HEADER = """#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
"""

G_RUN = """# nccl-tests version 2.17.6 nccl-headers=22703 nccl-library=22703
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 4 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   4242 on      box-a device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   4242 on      box-a device  1 [0000:2a:00] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid   4242 on      box-a device  2 [0000:3a:00] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid   4242 on      box-a device  3 [0000:5d:00] NVIDIA H100 80GB HBM3
""" + HEADER + """     1048576        262144     float     sum      -1    20.00   52.43   78.64       0    19.00   55.19   82.78       0
     2097152        524288     float     sum      -1    30.00   69.91  104.86       0    29.00   72.32  108.47       0
     4194304       1048576     float     sum      -1    50.00   83.89  125.83       0    48.00   87.38  131.07       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 105.275
#
# Collective test concluded: all_reduce_perf
"""

MPI_RUN = """$ mpirun -np 4 -H a:2,b:2 -x NCCL_PROTO=Simple -x NCCL_ALGO=Ring ./build/all_gather_perf -b 1M -e 2M -f 2 -g 1
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid    101 on     node-a device  0 [0x18] NVIDIA A100-SXM4-80GB
#  Rank  1 Group  0 Pid    102 on     node-a device  1 [0x2a] NVIDIA A100-SXM4-80GB
#  Rank  2 Group  0 Pid    201 on     node-b device  0 [0x18] NVIDIA A100-SXM4-80GB
#  Rank  3 Group  0 Pid    202 on     node-b device  1 [0x2a] NVIDIA A100-SXM4-80GB
""" + HEADER + """     1048576         65536     float    none      -1    40.00   26.21   19.66       0    41.00   25.58   19.18       0
     2097152        131072     float    none      -1    60.00   34.95   26.21       0    61.00   34.38   25.78       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 22.7075
"""

OLD_COLUMNS = """ nThread 1 nGpus 8 minBytes 4294967296 maxBytes 4294967296 step: 1048576(bytes) warmup iters: 5 iters: 100 validation: 1

 Using devices
   Rank  0 Pid  31337 on     dgx1 device  0 [0x06] Tesla V100-SXM2-32GB
   Rank  1 Pid  31337 on     dgx1 device  1 [0x07] Tesla V100-SXM2-32GB

                                             out-of-place                       in-place
       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error
        (B)    (elements)             (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
  4294967296     536870912   float    29122  147.48   73.74  0e+00    29169  147.24   73.62  0e+00
 Out of bounds values : 0 OK
 Avg bus bandwidth    : 73.68
"""


def _rows(run, placement="out_of_place"):
    return [(r.bytes, getattr(r, placement).time_us, getattr(r, placement).busbw_GBps) for r in run.rows]


def test_g_run_one_process_several_ranks():
    (run,) = parse_text(G_RUN, "g.log")
    assert (run.op, run.ranks, run.processes, run.hosts) == ("all_reduce", 4, 1, ("box-a",))
    assert run.op_from == "binary name (line 2)"
    assert (run.threads, run.gpus_per_thread, run.version) == (1, 4, "2.17.6")
    assert run.header_line == 12
    assert _rows(run) == [(1048576, 20.0, 78.64), (2097152, 30.0, 104.86), (4194304, 50.0, 125.83)]
    assert _rows(run, "in_place") == [(1048576, 19.0, 82.78), (2097152, 29.0, 108.47), (4194304, 48.0, 131.07)]
    assert [r.line for r in run.rows] == [14, 15, 16]
    assert run.avg_busbw_GBps == pytest.approx(105.275) and run.out_of_bounds == "0 OK"
    assert run.gpu_names == ("NVIDIA H100 80GB HBM3",)


def test_mpi_run_counts_rank_lines_across_hosts():
    (run,) = parse_text(MPI_RUN, "mpi.log")
    assert (run.op, run.ranks, run.processes, run.hosts) == ("all_gather", 4, 4, ("node-a", "node-b"))
    # all_gather prints the whole array: size = count x ranks x 4 B
    assert all(r.bytes == r.count * run.ranks * TYPE_BYTES[r.type] for r in run.rows)
    assert run.setting("NCCL_PROTO") == ("Simple", 1) and run.setting("NCCL_ALGO") == ("Ring", 1)
    settings = settings_for(run)
    assert (settings.algo, settings.protocol, settings.channels) == ("ring", "Simple", None)
    assert settings_for(run, algo="tree").algo == "tree"
    assert any("overridden by --algo tree" in note for note in settings_for(run, algo="tree").notes)


def test_nccl_algo_lists_and_exclusions_leave_the_tuner_a_choice():
    """NCCL_ALGO's syntax (src/graph/tuning.cc parseList): a list, ^ to leave some out, per function."""
    def algo(value: str) -> tuple[str, str]:
        text = MPI_RUN.replace("NCCL_ALGO=Ring", f"NCCL_ALGO={value}").replace(
            "-g 1", "-g 1  # NCCL_MIN_NCHANNELS=4 NCCL_MAX_NCHANNELS=4")
        settings = settings_for(parse_text(text)[0])
        assert settings.channels == 4
        return settings.algo, settings.notes[0].split(": ", 1)[1]

    assert algo("^NVLS") == ("^nvls", "the tuner chooses among the others")
    assert algo("Ring,Tree") == ("ring,tree", "the tuner chooses among ring, tree")
    assert algo("ring,CollNetDirect") == ("ring", "--algo ring; collnetdirect not modelled, left out")
    assert algo("PAT") == ("pat", "--algo pat")
    assert algo("CollNetDirect") == ("auto", "names no fabricsim algorithm; collnetdirect not modelled, left out; "
                                             "the tuner chooses")
    assert algo("allgather:ring") == ("ring", "--algo ring")  # MPI_RUN is all_gather
    assert algo("allreduce:tree") == ("auto", "names other functions only; the tuner chooses")
    from simulator.runner.nccl_tests_validation import nccl_algo_choice
    assert nccl_algo_choice(";", "all_reduce") == ("auto", "names no algorithm; the tuner chooses")
    assert nccl_algo_choice("allreduce:ring,tree;allgather:ring", "all_reduce")[0] == "ring,tree"


def test_older_columns_without_redop_root_and_with_error_column():
    with pytest.raises(InputError) as err:
        parse_text(OLD_COLUMNS, "old.log")  # no binary name; all_gather or alltoall fit the columns
    assert (err.value.file, err.value.line) == ("old.log", 8)
    assert "all_gather or alltoall" in err.value.message and "--op" in err.value.message
    (run,) = parse_text(OLD_COLUMNS, "old.log", op="all_gather")
    assert (run.op, run.op_from, run.ranks) == ("all_gather", "given", 2)
    (row,) = run.rows
    assert (row.redop, row.root, row.out_of_place.wrong) == (None, None, "0e+00")
    assert (row.out_of_place.time_us, row.in_place.busbw_GBps) == (29122.0, 73.62)


def test_columns_found_by_name_in_newer_layouts():
    """Per-iteration columns between the placements and a trailing timestamp (nccl-tests 2.18+)."""
    text = ("# Collective test starting: broadcast_perf\n"
            "#  Rank  0 Group  0 Pid 1 on h device  0 [0000:01:00] GPU\n"
            "#  Rank  1 Group  0 Pid 1 on h device  1 [0000:02:00] GPU\n"
            "#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max"
            "    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%  timestamp\n"
            "     1048576        262144     float    none       0    40.00   26.21   26.21     N/A    39.00    41.00"
            "    41.00     1.20    42.00   24.97   24.97     N/A    41.00    43.00    43.00     1.10 2026-11-30 21:30:00\n")
    (run,) = parse_text(text)
    (row,) = run.rows
    assert (run.op, row.root, row.out_of_place.time_us, row.out_of_place.wrong) == ("broadcast", 0, 40.0, "N/A")
    assert (row.in_place.time_us, row.in_place.busbw_GBps) == (42.0, 24.97)


@pytest.mark.parametrize("redop,root,count,busbw,busbw_in,op", [
    ("sum", -1, 262144, "78.64", "82.78", "all_reduce"), ("sum", -1, 65536, "39.32", "41.39", "reduce_scatter"),
    ("sum", 0, 262144, "52.43", "55.19", "reduce"), ("none", 0, 262144, "52.43", "55.19", "broadcast"),
    ("none", -1, 262144, "52.43", "55.19", "sendrecv"), ("sum", -1, 262144, "52.43", "55.19", "sendrecv")])
def test_op_from_columns_and_size_to_count_ratio(redop, root, count, busbw, busbw_in, op):
    """Without a binary name: the redop and root columns, size / count, and the bus factor of busbw /
    algbw (sendrecv prints -o's 'sum' but its busbw is its algbw; all_reduce's on 4 ranks is 1.5 x)."""
    text = G_RUN.replace("# Collective test starting: all_reduce_perf\n", "").replace(
        "     1048576        262144     float     sum      -1    20.00   52.43   78.64       0",
        f"     1048576  {count:12d}     float  {redop:>6s}  {root:6d}    20.00   52.43  {busbw:>6s}       0").replace(
        "19.00   55.19   82.78", f"19.00   55.19  {busbw_in:>6s}")
    (run,) = parse_text(text.split("     2097152")[0] + "# Avg bus bandwidth : 1\n")
    assert (run.op, run.op_from, run.ranks) == (op, "columns", 4)
    assert run.rows[0].out_of_place.busbw_GBps == float(busbw)
    per_rank = run.rows[0].bytes // (run.rows[0].count * 4) == run.ranks
    assert (op in PER_RANK_COUNT_OPS) == per_rank


def test_several_tests_in_one_file():
    runs = parse_text(G_RUN + MPI_RUN, "both.log")
    assert [(r.op, r.ranks, len(r.rows)) for r in runs] == [("all_reduce", 4, 3), ("all_gather", 4, 2)]
    assert runs[1].setting("NCCL_PROTO") is not None and runs[0].setting("NCCL_PROTO") is None


@pytest.mark.parametrize("change,line,words", [
    (lambda t: t.split("     1048576")[0], 12, "no data rows"),
    (lambda t: t.replace("all_reduce_perf", "hypercube_perf"), 2, "hypercube_perf"),
    (lambda t: t.replace("#  Rank  1 Group  0 Pid   4242", "#  Rank  0 Group  0 Pid   4243"), 7, "MPI=1"),
])
def test_bad_logs_name_file_and_line(change, line, words):
    with pytest.raises(InputError) as err:
        parse_text(change(G_RUN), "bad.log")
    assert (err.value.file, err.value.line) == ("bad.log", line)
    assert words in err.value.message
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("change,line,words", [
    (lambda t: t.replace("30.00   69.91", "3O.00   69.91", 1), 15, "'3O.00'"),
    (lambda t: t.replace("    50.00   83.89  125.83       0    48.00   87.38  131.07       0", "    50.00"), 16,
     "fields"),
    (lambda t: t.replace(t.splitlines()[15], t.splitlines()[13]), 16, "does not grow"),
    (lambda t: t.replace("    20.00   52.43", "     0.00   52.43"), 14, "positive"),
])
def test_unusable_rows_are_warnings_at_their_line_and_errors_with_strict(change, line, words):
    (run,) = parse_text(change(G_RUN), "bad.log")
    assert line not in [r.line for r in run.rows] and len(run.rows) == 2
    row_warnings = [w for w in run.warnings if w.row]
    assert [(w.file, w.line) for w in row_warnings] == [("bad.log", line)] and words in row_warnings[0].message
    assert run.skipped_rows == 1
    with pytest.raises(InputError) as err:
        parse_text(change(G_RUN), "bad.log", strict=True)
    assert (err.value.file, err.value.line) == ("bad.log", line) and words in err.value.message
    assert "\n" not in str(err.value)


def test_text_without_nccl_tests_output_is_refused(tmp_path):
    path = tmp_path / "empty.log"
    path.write_text("NCCL INFO nothing to see\n")
    with pytest.raises(InputError, match="no nccl-tests column header"):
        parse_log(path)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_logs_are_labelled_and_self_consistent(path):
    """Written by hand from published figures: they say so, and their columns obey nccl-tests'
    definitions (algbw = size / time, busbw = algbw x factor, average of every busbw printed)."""
    assert path.read_text().startswith("# written by fabricsim developers from published figures (")
    assert "not a raw measurement" in " ".join(path.read_text().split("\n#  Rank")[0].split("\n# "))
    (run,) = parse_log(path)
    factor = busbw_factor(run.op, run.ranks)
    for row in run.rows:
        for timing in (row.out_of_place, row.in_place):
            assert timing.algbw_GBps == pytest.approx(row.bytes / timing.time_us / 1e3, abs=0.006)
            assert timing.busbw_GBps == pytest.approx(timing.algbw_GBps * factor, rel=1e-4, abs=0.006)
    average = sum(r.out_of_place.busbw_GBps + r.in_place.busbw_GBps for r in run.rows) / (2 * len(run.rows))
    assert run.avg_busbw_GBps == pytest.approx(average, rel=1e-4)


def test_shipped_logs_carry_the_published_figures():
    """Every row of a shipped log is a figure of validation/published.yaml (same system, ranks and
    size; busbw where it has three digits, else the time), so the logs invent nothing."""
    from simulator.units import parse_size

    entries = [e for e in load_published(ROOT / "validation" / "published.yaml") if e.kind == "collective"]
    for path in SHIPPED:
        system = re.match(r"(.+)_all_reduce_\d+gpu", path.stem).group(1)
        (run,) = parse_log(path)
        for row in run.rows:
            metric, value = (("busbw_GBps", row.out_of_place.busbw_GBps) if row.out_of_place.busbw_GBps >= 1
                             else ("time_us", row.out_of_place.time_us))
            figures = [e.published for e in entries if Path(e.topology).stem == system and e.gpus == run.ranks
                       and e.metric == metric and parse_size(str(e.bytes)) == row.bytes and e.op == run.op]
            assert any(abs(value - f) <= 0.05 for f in figures), (path.name, row.bytes, metric, value)


def _small_log(tmp_path: Path) -> Path:
    """A 2-rank sendrecv log on sizes the flow engine simulates in milliseconds."""
    text = MPI_RUN.replace("all_gather_perf", "sendrecv_perf").replace("-x NCCL_PROTO=Simple -x NCCL_ALGO=Ring ", "")
    text = text.replace("-np 4 -H a:2,b:2", "-np 2 -H a:2")
    text = text.replace("#  Rank  2 Group  0 Pid    201 on     node-b device  0 [0x18] NVIDIA A100-SXM4-80GB\n", "")
    text = text.replace("#  Rank  3 Group  0 Pid    202 on     node-b device  1 [0x2a] NVIDIA A100-SXM4-80GB\n", "")
    text = text.replace("     1048576         65536     float    none", "     1048576        262144     float    none")
    text = text.replace("     2097152        131072     float    none", "     2097152        524288     float    none")
    # sendrecv's bus factor is 1: busbw = algbw
    text = text.replace("26.21   19.66", "26.21   26.21").replace("25.58   19.18", "25.58   25.58")
    text = text.replace("34.95   26.21", "34.95   34.95").replace("34.38   25.78", "34.38   34.38")
    text = text.replace("22.7075", "30.28")
    path = tmp_path / "sendrecv.log"
    path.write_text(text)
    return path


def test_validate_log_end_to_end(tmp_path):
    log = _small_log(tmp_path)
    plot = tmp_path / "measured.png"
    result = runner.invoke(app, ["validate", "--nccl-tests", str(log), "--topology",
                                 str(ROOT / "topologies" / "teaching.yaml"), "--engine", "flow", "--json",
                                 "--threshold", "1000", "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (entry,) = data["logs"]
    assert (entry["op"], entry["ranks_in_log"]) == ("sendrecv", 2)
    rows = entry["rows"]
    (run,) = parse_log(log)
    assert [r["bytes"] for r in rows] == [r.bytes for r in run.rows] == [1048576, 2097152]
    for row, logged in zip(rows, run.rows):
        assert row["measured_time_us"] == logged.out_of_place.time_us
        assert row["measured_busbw_GBps"] == logged.out_of_place.busbw_GBps
        assert row["time_error_pct"] == pytest.approx(
            100 * (row["predicted_time_us"] - row["measured_time_us"]) / row["measured_time_us"])
        assert row["busbw_error_pct"] == pytest.approx(
            100 * (row["predicted_busbw_GBps"] - row["measured_busbw_GBps"]) / row["measured_busbw_GBps"])
        # busbw = size x factor / time: the prediction's two figures agree with each other
        assert row["predicted_busbw_GBps"] == pytest.approx(row["bytes"] / row["predicted_time_us"] / 1e3)
        assert (row["engine"], row["placement"]) == ("flow", "out-of-place")
    summary = data["summary"]
    assert summary["busbw_worst_pct"] == pytest.approx(max(abs(r["busbw_error_pct"]) for r in rows))
    assert summary["time_median_pct"] == pytest.approx(summarize(rows).time_median_pct)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    in_place = runner.invoke(app, ["validate", "--nccl-tests", str(log), "--topology",
                                   str(ROOT / "topologies" / "teaching.yaml"), "--engine", "flow", "--json",
                                   "--in-place", "--threshold", "1000"])
    rows_in = json.loads(in_place.stdout)["logs"][0]["rows"]
    assert [r["measured_time_us"] for r in rows_in] == [r.in_place.time_us for r in run.rows]
    assert [r["predicted_time_us"] for r in rows_in] == pytest.approx([r["predicted_time_us"] for r in rows])


def test_validate_table_and_threshold_exit_code(tmp_path):
    log = _small_log(tmp_path)
    args = ["validate", "--nccl-tests", str(log), "--topology", str(ROOT / "topologies" / "teaching.yaml"),
            "--engine", "flow"]
    strict = runner.invoke(app, args + ["--threshold", "0.001"])
    assert strict.exit_code == 1, strict.output
    assert "1 MiB" in strict.stdout and "2 MiB" in strict.stdout and "busbw |error| median" in strict.stdout
    assert "0 of 2 sizes within" in strict.stdout


def test_validate_shipped_log_flow_engine():
    log = ROOT / "validation" / "nccl-tests" / "hgx_h100_all_reduce_8gpu.log"
    result = runner.invoke(app, ["validate", "--nccl-tests", str(log), "--topology",
                                 str(ROOT / "topologies" / "hgx_h100.yaml"), "--engine", "flow", "--json",
                                 "--threshold", "1000"])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["logs"]
    (row,) = entry["rows"]
    assert (row["bytes"], row["measured_busbw_GBps"], row["algo"]) == (8 << 30, 365.0, "ring")  # NCCL_ALGO=Ring
    assert entry["settings_from_log"] == ["NCCL_ALGO=Ring (line 5): --algo ring"]


@pytest.mark.parametrize("args,words", [
    (["validate", "--nccl-tests", "{bad}", "--topology", "{topo}", "--strict"], "{bad}:15: row left out: out-of-place time"),
    (["validate", "--nccl-tests", "{good}", "--topology", "{topo}", "--op", "allreduce"], "op: unknown nccl-tests operation"),
    (["validate", "--nccl-tests", "{good}"], "needs --topology"),
    (["validate", "{good}"], "need --nccl-tests"),
    (["validate", "--topology", "{topo}"], "topology: only with --nccl-tests"),
    (["validate", "--engine", "flow"], "engine: only with --nccl-tests"),
    (["validate", "--nccl-tests", "{good}", "--topology", "{topo}", "--gpus", "64"],
     "{good}:6: --gpus 64 contradicts the log, which ran on 4 ranks"),
    (["validate", "--nccl-tests", "{good}", "--topology", "{topo}"], "the log ran on 4 ranks but teaching has 2 GPUs"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, args, words):
    good = tmp_path / "good.log"
    good.write_text(G_RUN)
    bad = tmp_path / "bad.log"
    bad.write_text(G_RUN.replace("30.00   69.91", "3O.00   69.91", 1))
    names = {"good": good, "bad": bad, "topo": ROOT / "topologies" / "teaching.yaml"}
    result = runner.invoke(app, [a.format(**names) for a in args])
    assert result.exit_code == 2, result.output
    assert words.format(**names) in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_plot_never_overwrites_a_log(tmp_path):
    log = _small_log(tmp_path)
    log = log.rename(log.with_suffix(".png"))  # a log whose name a figure could take
    before = log.read_text()
    result = runner.invoke(app, ["validate", "--nccl-tests", str(log), "--topology",
                                 str(ROOT / "topologies" / "teaching.yaml"), "--engine", "flow", "--plot", str(log)])
    assert result.exit_code == 2 and "fabricsim: --plot: " in result.stderr and "refusing to overwrite an input" in result.stderr
    assert log.read_text() == before


def test_a_log_on_other_gpus_than_the_topology_says_so():
    """The '#  Rank' lines name the GPU model: another architecture than the topology's is a note
    that the comparison is of another system; the same architecture a note that the model is the
    same (H200 on H100 parts), or that its NVLink is not the log's (A800's 8 links on A100 parts);
    a model fabricsim does not know by name a note that the topology's GPUs stand in; the
    topology's own GPUs, or a generic name, no note."""
    from simulator.runner.nccl_tests_validation import gpu_note

    (run,) = parse_text(MPI_RUN)  # NVIDIA A100-SXM4-80GB, first '#  Rank' line 4
    line = run.rank_lines[0].line
    assert gpu_note(run, {"a100": "ampere"}) is None
    assert gpu_note(run, {"h100": "hopper"}) == (
        f"the log's GPUs are A100 (line {line}, ampere), the topology's h100 (hopper): another architecture's "
        "CTA rates, NVLink and NVLS; validate on a topology of the log's GPUs")
    (a800,) = parse_text(MPI_RUN.replace("A100-SXM4-80GB", "A800-SXM4-80GB"))
    assert gpu_note(a800, {"a100": "ampere"}) == (
        f"the log's GPUs are A800 (line {line}), the topology's a100: the same architecture (ampere), but A800 "
        "SXM has 8 NVLink 3 links, 400 GB/s both directions, where A100 SXM has 12, 600 GB/s (NVIDIA A800 "
        "datasheet), so the topology's NVLink is not the log's")
    (h200,) = parse_text(MPI_RUN.replace("A100-SXM4-80GB", "H200"))
    assert gpu_note(h200, {"h100": "hopper"}) == (
        f"the log's GPUs are H200 (line {line}), the topology's h100: the same architecture (hopper), whose "
        "collective model is the same")
    (unnamed,) = parse_text(MPI_RUN.replace("A100-SXM4-80GB", "Graphics Device"))
    assert gpu_note(unnamed, {"h100": "hopper"}) is None
    (other,) = parse_text(MPI_RUN.replace("NVIDIA A100-SXM4-80GB", "AMD Instinct MI300X"))
    note = gpu_note(other, {"h100": "hopper"})
    assert note.startswith(f"the log's GPUs are AMD Instinct MI300X (line {line}), not a GPU model fabricsim "
                           "knows by name (GB300, GB200,") and note.endswith(
        "the topology's h100 stand in for their CTA rates, NVLink and NVLS")


def test_an_off_setting_read_off_a_sentence_is_off():
    """'NCCL_NVLS_ENABLE=0,' in a command written in prose is 0: NVLS and NVLSTree left out."""
    text = MPI_RUN.replace("NCCL_ALGO=Ring", "NCCL_NVLS_ENABLE=0,")
    settings = settings_for(parse_text(text)[0])
    assert settings.algo == "^nvls,nvls_tree"
    assert any("left out of the tuner's choice" in note for note in settings.notes)


def test_a_log_of_an_older_nccl_leaves_out_the_algorithms_it_did_not_have(tmp_path):
    """NCCL 2.16 predates NVLS (2.17), NVLSTree (2.18) and PAT (2.23) (the first tags defining their
    NCCL_ALGO_* ids): an all_reduce on 8 H100s then runs ring, as that NCCL did, where 2.27's NVLS
    would be fabricsim's choice; a 2.27 log keeps them all."""
    body = ("# nccl-tests version 2.13.6 nccl-headers={v} nccl-library={v}\n"
            "# Collective test starting: all_reduce_perf\n#\n"
            "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
            "  1073741824     268435456     float     sum      -1   5000.0  214.75  375.81      0   5000.0  214.75  375.81      0\n")
    old, new = (parse_text(body.format(v=v), f"{v}.log", gpus=8)[0] for v in (21603, 22703))
    settings = settings_for(old)
    assert settings.algo == "^nvls,nvls_tree,pat"
    assert settings.notes == ("NCCL 2.16.3 (the log's, older than these algorithms): nvls, nvls_tree and pat left "
                              "out of the tuner's choice",)
    assert settings_for(new).algo == "auto" and settings_for(new).notes == ()
    assert settings_for(old, algo="nvls").algo == "nvls"  # asked for by name: as asked
    from simulator.runner.nccl_tests_validation import compare_run
    from simulator.api import load_topology
    (row,) = compare_run(load_topology("hgx_h100"), old, engine="flow")
    assert row["algo"] == "ring"
