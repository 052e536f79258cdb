"""The nccl-tests reader on logs as they are found (issue 24 item 1; issue 28 item 5): one test per
shape in ``tests/data/nccl_tests/`` (written by ``make_fixtures.py``, not real runs), each pinning
the parsed sizes, busbw, op, ranks and settings, and the FILE:LINE of every warning."""

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.errors import InputError
from simulator.runner.nccl_tests_validation import row_counts, settings_for
from simulator.workloads.traces.nccl_tests_log import parse_log, parse_text

DATA = Path(__file__).resolve().parent / "data" / "nccl_tests"
ROOT = Path(__file__).resolve().parent.parent
HGX = str(ROOT / "topologies" / "hgx_h100.yaml")
_register()
runner = CliRunner()

_spec = importlib.util.spec_from_file_location("make_fixtures", DATA / "make_fixtures.py")
fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fixtures)


def _one(name: str, **kw):
    (run,) = parse_log(DATA / name, **kw)
    return run


def _where(run) -> list[tuple[int, str]]:
    return [(w.line, w.message) for w in run.warnings]


def test_every_fixture_says_it_is_not_a_real_run_and_is_what_the_generator_writes():
    for name, make in fixtures.FIXTURES.items():
        text = (DATA / name).read_text()
        assert text.startswith("# written for fabricsim's tests (tests/data/nccl_tests/make_fixtures.py), "
                               "not a real run: "), name
        assert text == make(), f"{name} differs from make_fixtures.py's output; run it again"


def test_zero_byte_rows_are_kept_but_carry_no_size_to_simulate():
    run = _one("zero_bytes_all_gather.log")
    assert (run.op, run.ranks, run.warnings) == ("all_gather", 8, ())
    assert [(r.line, r.bytes, r.count) for r in run.rows[:5]] == [
        (20, 0, 0), (21, 0, 0), (22, 0, 0), (23, 0, 0), (24, 128, 4)]
    assert [(r.out_of_place.time_us, r.out_of_place.busbw_GBps) for r in run.rows[:4]] == [(0.21, 0.0)] * 4
    assert [r.bytes for r in run.sized_rows] == [128 << i for i in range(14)]
    assert run.rows[-1].out_of_place.busbw_GBps == 53.77 and run.rows[-1].in_place.busbw_GBps == 54.73
    assert row_counts(run).as_dict() == {"used": 14, "skipped": 4, "zero_bytes": 4, "unusable": 0}


def test_zero_byte_rows_are_not_fed_to_validation(tmp_path):
    result = runner.invoke(app, ["validate", "--nccl-tests", str(DATA / "zero_bytes_all_gather.log"),
                                 "--topology", HGX, "--engine", "flow", "--json", "--threshold", "1000"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (entry,) = data["logs"]
    assert [r["bytes"] for r in entry["rows"]] == [128 << i for i in range(14)]
    assert entry["row_counts"] == data["row_counts"] == {"used": 14, "skipped": 4, "zero_bytes": 4, "unusable": 0}
    text = runner.invoke(app, ["validate", "--nccl-tests", str(DATA / "zero_bytes_all_gather.log"),
                               "--topology", HGX, "--engine", "flow", "--threshold", "1000"])
    assert text.exit_code == 0 and "rows: 14 used, 4 skipped (4 of 0 B)" in text.stdout


def test_nccl_info_lines_between_glued_to_and_cutting_rows():
    run = _one("info_interleaved.log")
    assert run.warnings == ()
    assert [(r.line, r.bytes) for r in run.rows] == [
        (33, 1 << 20), (35, 2 << 20), (36, 4 << 20), (37, 8 << 20), (38, 16 << 20), (39, 32 << 20), (41, 64 << 20)]
    glued, cut = run.rows[3], run.rows[5]  # INFO glued after line 37; line 39 cut by INFO, its rest on line 40
    assert (glued.out_of_place.busbw_GBps, glued.in_place.busbw_GBps, glued.in_place.wrong) == (199.38, 200.2, "0")
    assert (cut.out_of_place.time_us, cut.out_of_place.busbw_GBps, cut.in_place.busbw_GBps) == (197.29, 297.64, 298.09)
    assert (run.op, run.ranks, run.nccl_version) == ("all_reduce", 8, "2.21.5")
    assert run.setting("NCCL_ALGO") == ("Ring", 19) and run.setting("NCCL_PROTO") == ("Simple", 20)
    assert run.setting("NCCL_NVLS_ENABLE") == ("0", 21) and run.setting("NCCL_DEBUG") is None
    settings = settings_for(run)
    assert (settings.algo, settings.protocol) == ("ring", "Simple")
    assert settings.notes[2] == "NCCL_NVLS_ENABLE=0 (line 21): no matter here, the algorithm is ring"
    assert settings_for(run, algo="auto").notes[2] == "NCCL_NVLS_ENABLE=0 (line 21): no matter here, the algorithm is ring"
    assert settings_for(run, algo="nvls").notes[2] == "NCCL_NVLS_ENABLE=0 (line 21): not applied; the algorithm is nvls, as asked"


def test_nccl_init_lines_give_the_rank_count_without_a_device_list():
    text = "\n".join(line for line in (DATA / "info_interleaved.log").read_text().split("\n") if "Rank " not in line)
    (run,) = parse_text(text, "info.log", op=None)
    # the rows' bus factor says 8 too, and so do the Init COMPLETE lines (22-29)
    assert (run.ranks, run.rank_lines) == (8, ())
    text = text.replace("Init COMPLETE", "Init COMPLETE").replace("nranks 8", "nranks 9", 1)
    (run,) = parse_text(text, "info.log")
    assert [(w.line, w.message[:39]) for w in run.warnings] == [(14, "NCCL's Init lines name communicators of")]


def test_device_list_cut_to_its_last_lines():
    run = _one("rank_list_cut.log")
    assert [r.rank for r in run.rank_lines] == [12, 13, 14, 15] and run.hosts == ("node-01",)
    assert (run.ranks, run.warnings) == (16, ())
    assert run.ranks_from == "busbw / algbw of the rows (16 ranks, line 21)"
    assert [(r.bytes, r.out_of_place.busbw_GBps) for r in run.rows[:2]] == [(1 << 20, 33.85), (2 << 20, 54.23)]
    assert _one("rank_list_cut.log", gpus=16).ranks == 16
    with pytest.raises(InputError) as err:
        parse_log(DATA / "rank_list_cut.log", gpus=8)
    assert (err.value.line, err.value.message) == (
        8, "--gpus 8 contradicts the log, which ran on 16 ranks (busbw / algbw of the rows (16 ranks, line 21)); "
           "drop --gpus or pass --gpus 16")


def test_cut_device_list_of_an_op_without_bus_factor_is_a_lower_bound():
    run = fixtures.Run("sendrecv", 16, 1 << 20, 4 << 20, 10.0, 40.0)
    text = run.log(gpus_per_process=1, ranks=range(12, 16))
    (found,) = parse_text(text, "sr.log")
    assert found.ranks == 16 and found.ranks_from.startswith("at least 16: '#  Rank' lines up to rank 15 (lines 6-9)")
    assert parse_text(text, "sr.log", gpus=32)[0].ranks == 32
    with pytest.raises(InputError, match=r"--gpus 12 contradicts the log: its '#  Rank' lines up to rank 15"):
        parse_text(text, "sr.log", gpus=12)


def test_rows_kept_by_grep_without_a_header():
    first, second = parse_log(DATA / "grep_rows.log")
    assert (first.op, first.op_from, first.ranks, second.ranks) == ("all_reduce", "columns", 8, 16)
    assert first.columns_from == ("no header; inferred from line 2: size count type redop root | "
                                  "time algbw busbw #wrong | time algbw busbw #wrong")
    assert [r.line for r in first.rows] == [2, 3, 4, 5, 6] and [r.line for r in second.rows] == [7, 8, 9, 10, 11]
    assert [(r.bytes, r.out_of_place.busbw_GBps) for r in (first.rows[0], second.rows[0])] == [
        (1 << 20, 54.87), (1 << 20, 33.85)]
    assert (first.warnings, second.warnings, first.test, second.test) == ((), (), 1, 2)


def test_old_layout_rows_without_root_or_redop():
    run = _one("grep_rows_old.log")
    assert (run.op, run.ranks, len(run.rows), run.warnings) == ("all_reduce", 8, 4, ())
    row = run.rows[0]
    assert (row.redop, row.root, row.out_of_place.wrong, row.bytes) == ("sum", None, "0e+00", 1 << 20)
    with pytest.raises(InputError) as err:
        parse_log(DATA / "grep_rows_old_all_gather.log")
    assert err.value.line == 2 and "all_gather or alltoall" in err.value.message and "--op" in err.value.message
    run = _one("grep_rows_old_all_gather.log", op="all_gather")
    assert (run.op, run.ranks, run.ranks_from) == ("all_gather", 8, "size / count of the rows (8 ranks, line 2)")
    assert [(r.bytes, r.count, r.out_of_place.busbw_GBps) for r in run.rows[:2]] == [
        (1 << 20, 32768, 34.10), (2 << 20, 65536, 56.61)]


def test_rows_of_two_layouts_without_header_are_two_tests():
    old = (DATA / "grep_rows_old.log").read_text()
    new = "".join(line + "\n" for line in (DATA / "grep_rows.log").read_text().split("\n")[1:3])
    first, second = parse_text(old + new, "mixed.log")
    assert [r.line for r in first.rows] == [2, 3, 4, 5] and [r.line for r in second.rows] == [6, 7]
    assert (first.rows[0].root, second.rows[0].root) == (None, -1)


def test_several_tests_in_one_file_and_run_selection():
    first, second = parse_log(DATA / "several_runs.log")
    assert [(r.op, r.ranks, r.test, len(r.rows)) for r in (first, second)] == [
        ("all_reduce", 8, 1, 4), ("all_gather", 8, 2, 4)]
    assert (first.setting("NCCL_PROTO"), second.setting("NCCL_PROTO")) == (None, ("LL128", 28))
    assert (first.header_line, second.header_line) == (18, 44)
    result = runner.invoke(app, ["validate", "--nccl-tests", str(DATA / "several_runs.log"), "--topology", HGX,
                                 "--engine", "flow", "--json", "--threshold", "1000", "--run", "2"])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["logs"]
    assert (entry["op"], entry["test"], entry["rows"][0]["line"]) == ("all_gather", 2, 46)
    bad = runner.invoke(app, ["validate", "--nccl-tests", str(DATA / "several_runs.log"), "--topology", HGX,
                              "--run", "3"])
    assert bad.exit_code == 2 and bad.stderr.strip() == (
        f"fabricsim: {DATA / 'several_runs.log'}: --run 3: the log holds 2 tests")


def test_sweeps_of_one_table_are_separate_runs():
    """-o all / -d all print one table whose type or reduction changes: one run each, one op."""
    a = fixtures.Run("all_reduce", 8, 1 << 20, 2 << 20, 25.0, 360.0)
    b = fixtures.Run("all_reduce", 8, 1 << 20, 2 << 20, 27.0, 350.0, redop="prod")
    rows = "".join(r.row_text(i) + "\n" for r in (a, b) for i in range(len(r.rows)))
    text = a.preamble() + a.header() + rows
    first, second = parse_text(text, "o_all.log")
    assert [(r.op, r.rows[0].redop, [x.line for x in r.rows]) for r in (first, second)] == [
        ("all_reduce", "sum", [18, 19]), ("all_reduce", "prod", [20, 21])]
    # no footer: the log was cut after its last row
    assert [(w.line, w.message[:30]) for w in second.warnings] == [(21, "the table ends here without nc")]


@pytest.mark.parametrize("name,op,ranks,algo,rows", [
    ("ompi_prefixes.log", "all_reduce", 4, ("Tree", 2), [(17, 1 << 20, 33.21), (18, 2 << 20, 51.39)]),
    ("slurm_prefixes.log", "reduce_scatter", 8, None, [(21, 0, 0.0), (22, 0, 0.0)]),
    ("host_timestamps.log", "broadcast", 8, None, [(19, 1 << 20, 37.16), (20, 2 << 20, 57.68)]),
])
def test_launcher_prefixes_are_taken_off(name, op, ranks, algo, rows):
    run = _one(name)
    assert (run.op, run.ranks, run.setting("NCCL_ALGO"), run.warnings) == (op, ranks, algo, ())
    assert [(r.line, r.bytes, r.out_of_place.busbw_GBps) for r in run.rows[:2]] == rows
    assert run.avg_busbw_GBps is not None and run.out_of_bounds == "0 OK"


def test_json_output_of_newer_nccl_tests():
    run = _one("all_reduce.json")
    assert (run.op, run.op_from, run.ranks, run.nccl_version) == ("all_reduce", "binary name (line 2)", 8, "2.27.3")
    assert run.setting("NCCL_ALGO") == ("Ring", 2) and run.setting("NCCL_MNNVL_ENABLE") == ("0", 2)
    assert [r.bytes for r in run.rows] == [1 << 20 << i for i in range(5)]
    assert (run.rows[0].out_of_place.time_us, run.rows[0].out_of_place.busbw_GBps) == (33.441261, 54.872572)
    assert (run.rows[0].root, run.rows[0].in_place.busbw_GBps, run.warnings) == (-1, 55.369287, ())
    assert run.hosts == ("node-a",) and run.gpu_names == ("NVIDIA H100 80GB HBM3",)
    assert settings_for(run).algo == "ring"


def test_json_with_a_bad_result_and_cut_short():
    text = (DATA / "all_reduce.json").read_text()
    doc = json.loads(text.split("\n")[1])
    doc["results"][2]["out_of_place"]["bus_bw"] = -1.0
    (run,) = parse_text("\n" + json.dumps(doc, indent=1), "pretty.json")
    assert [r.bytes for r in run.rows] == [1 << 20, 2 << 20, 8 << 20, 16 << 20]
    (warning,) = run.warnings
    line = json.dumps(doc, indent=1).split("\n").index("  {") + 2 + 2 * 0
    assert warning.row and warning.message.startswith("results[2] left out: out_of_place: time, alg_bw and bus_bw")
    assert warning.line > line  # the third result's own line in the pretty-printed file
    cut = text[: text.index('{"size":8388608')]
    (run,) = parse_text(cut, "cut.json")
    assert [r.bytes for r in run.rows] == [1 << 20, 2 << 20, 4 << 20]
    assert [(w.line, w.message[:31]) for w in run.warnings] == [(2, "the JSON is cut short (Expectin")]


GARBLED = [  # issue 28 item 5: each of these was dropped silently or taken as it stood
    (21, "row left out: size '-128' is not a whole number of bytes"),
    (22, "row left out: size '2.56e2' is not a whole number of bytes"),
    (23, "row left out: size '0x200' is not a whole number of bytes"),
    (24, "row left out: size '1,024' is not a whole number of bytes"),
    (25, "row left out: out-of-place busbw '-12.34' is not a non-negative number"),
    (26, "row left out: out-of-place busbw 99999 GB/s is not algbw 0.2 x 1.75 (nccl-tests' bus factor of "
         "all_reduce on 8 ranks)"),
    (27, "row left out: out-of-place algbw 0.41 GB/s is not size / time = 8192 B / 0.001 us = 8192 GB/s"),
]


def test_garbled_fields_are_warnings_at_their_lines():
    """A form feed (line 2) and a U+2028 (line 3) inside comments move no later line number."""
    text = (DATA / "garbled.log").read_text()
    assert "\f" in text.split("\n")[1] and "\u2028" in text.split("\n")[2]
    run = _one("garbled.log")
    assert [(line, message[: len(m)]) for (line, message), (_, m) in zip(_where(run), GARBLED)] == GARBLED
    assert len(run.warnings) == len(GARBLED) and all(w.row for w in run.warnings)
    assert [(r.line, r.bytes) for r in run.rows] == [(28 + i, 16384 << i) for i in range(7)]
    assert row_counts(run).as_dict() == {"used": 7, "skipped": 7, "zero_bytes": 0, "unusable": 7}


def test_garbled_log_in_validate_warns_and_counts_or_fails_with_strict():
    log = str(DATA / "garbled.log")
    args = ["validate", "--nccl-tests", log, "--topology", HGX, "--engine", "flow", "--threshold", "1000"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    warned = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert [w.split(": ", 2)[1] for w in warned] == [f"{log}:{line}" for line, _ in GARBLED]
    assert "rows: 7 used, 7 skipped (7 unusable: warnings above)" in result.stdout
    strict = runner.invoke(app, args + ["--strict"])
    assert strict.exit_code == 2 and "Traceback" not in strict.stderr
    assert strict.stderr.splitlines()[-1] == (f"fabricsim: {log}:21: row left out: size '-128' is not a whole number "
                                              "of bytes (nccl-tests prints plain digits) (--strict; 6 more such lines)")


def test_issue_28_sed_repro_is_no_longer_silent(tmp_path):
    """sed '16s/^ *128 /  -128 /' took a row out of the comparison without a word."""
    text = fixtures.Run("all_reduce", 8, 8, 1 << 20, 20.0, 300.0).log()
    lines = text.split("\n")
    number = next(i for i, line in enumerate(lines, 1) if line.lstrip().startswith("128 "))
    lines[number - 1] = lines[number - 1].replace("         128 ", "        -128 ", 1)
    (run,) = parse_text("\n".join(lines), "bad.log")
    assert [(w.line, w.row) for w in run.warnings] == [(number, True)]
    assert len(run.rows) == 17 and 128 not in [r.bytes for r in run.rows]


def test_settings_fabricsim_does_not_model_are_named_not_dropped():
    """A log's NCCL_IB_HCA (4 of 8 NICs, nccl issue 1357's run) would explain a gap: the comparison
    says it ran without it; NCCL_PXN_DISABLE says which of NCCL's two ways fabricsim's runs take."""
    cmd = ("$ mpirun -np 8 -x NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_4,mlx5_5 -x NCCL_IB_QPS_PER_CONNECTION=2 "
           "-x NCCL_MIN_NCHANNELS=4 -x NCCL_PXN_DISABLE=0 ./build/all_reduce_perf -b 1M -e 4M -g 1\n")
    (run,) = parse_text(cmd + _run_text().log(gpus_per_process=1), "hca.log", env=["NCCL_BUFFSIZE=8388608"])
    notes = settings_for(run).notes
    assert notes[0].startswith("NCCL_PXN_DISABLE=0 (line 1): PXN on, NCCL's default (src/graph/paths.cc")
    assert notes[1:] == ("NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_4,..., NCCL_IB_QPS_PER_CONNECTION=2, NCCL_MIN_NCHANNELS=4 "
                         "(line 1); NCCL_BUFFSIZE=8388608 (--env): not modelled, simulated as if unset",)
    (alone,) = parse_text(cmd.replace("=0 ", "=1 ") + _run_text().log(gpus_per_process=1), "hca.log")
    assert settings_for(alone).notes[0] == ("NCCL_PXN_DISABLE=1 (line 1): PXN off, as in fabricsim's runs: each GPU "
                                            "sends from its own NICs")


def test_env_and_op_flags_fill_in_and_must_agree():
    run = _one("zero_bytes_all_gather.log", env=["NCCL_PROTO=LL", "NCCL_MNNVL_ENABLE=1"])
    assert run.setting("NCCL_PROTO") == ("LL", None) and run.setting("NCCL_MNNVL_ENABLE") == ("1", None)
    notes = settings_for(run).notes
    assert notes[0] == "NCCL_PROTO=LL (--env): --protocol LL"
    assert notes[1] == ("NCCL_MNNVL_ENABLE=1 (--env): each NVLink domain is one NCCL node, as in fabricsim (an NVL72 "
                        "rack's trays joined over NVLink)")
    assert _one("info_interleaved.log", env=["NCCL_ALGO=Ring"]).setting("NCCL_ALGO") == ("Ring", 19)
    log = str(DATA / "info_interleaved.log")
    for flags, message in (
            (["--env", "NCCL_ALGO=Tree"], f"{log}:19: --env NCCL_ALGO=Tree contradicts the log, which sets "
                                          "NCCL_ALGO=Ring; drop it or pass --env NCCL_ALGO=Ring"),
            (["--op", "all_gather"], f"{log}:4: --op all_gather contradicts the log, which ran all_reduce_perf; "
                                     "drop --op or pass --op all_reduce"),
            (["--gpus", "4"], f"{log}:8: --gpus 4 contradicts the log, which ran on 8 ranks (8 '#  Rank' lines "
                              "(lines 8-15)); drop --gpus or pass --gpus 8"),
            (["--env", "NCCL_ALGO"], "--env: 'NCCL_ALGO' is not K=V (e.g. --env NCCL_ALGO=Ring)")):
        result = runner.invoke(app, ["validate", "--nccl-tests", log, "--topology", HGX] + flags)
        assert result.exit_code == 2 and result.stderr.strip() == f"fabricsim: {message}", result.output
    assert runner.invoke(app, ["validate", "--env", "NCCL_ALGO=Ring"]).exit_code == 2


@pytest.mark.parametrize("encode", [
    lambda t: t.replace("\n", "\r\n").encode(), lambda t: t.encode("utf-16"), lambda t: t.encode("utf-16-le"),
    lambda t: b"\xef\xbb\xbf" + t.encode()])
def test_crlf_utf16_and_bom_read_the_same(tmp_path, encode):
    path = tmp_path / "log.txt"
    path.write_bytes(encode((DATA / "several_runs.log").read_text()))
    found = parse_log(path)
    expected = parse_log(DATA / "several_runs.log")
    assert [[(r.line, r.bytes, r.out_of_place.busbw_GBps) for r in run.rows] for run in found] == [
        [(r.line, r.bytes, r.out_of_place.busbw_GBps) for r in run.rows] for run in expected]
    assert all(run.warnings == () for run in found)


def test_empty_file_and_directory_are_one_line_errors(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_text("")
    for path, words in ((empty, "the log is empty"), (tmp_path, "is a directory")):
        result = runner.invoke(app, ["validate", "--nccl-tests", str(path), "--topology", HGX])
        assert result.exit_code == 2 and result.stderr.strip() == f"fabricsim: {path}: {words}" + (
            ", not an nccl-tests log; name the log file" if words == "is a directory" else "")


def test_a_test_without_usable_rows_beside_a_good_one_is_left_out_with_warnings():
    text = (DATA / "several_runs.log").read_text().split("\n")
    for i in range(45, 49):  # every row of the second test (all_gather) garbled
        text[i] = text[i].replace(" 8 ", " 9 ", 1).replace("float", "flaot")
    (run,) = parse_text("\n".join(text), "two.log")
    assert run.op == "all_reduce" and [r.line for r in run.rows] == [20, 21, 22, 23]
    assert [(w.line, w.row) for w in run.warnings] == [(46, True), (46, False), (47, True), (48, True), (49, True)]
    assert run.warnings[1].message.startswith("this test is left out: no usable data rows: all 4 were left out")


def test_a_deleted_row_shows_in_the_average_and_a_cut_table_in_its_footer():
    lines = (DATA / "several_runs.log").read_text().split("\n")
    deleted = lines[:20] + lines[21:]  # line 21 (2 MiB of the all_reduce test) gone
    first, _ = parse_text("\n".join(deleted), "deleted.log")
    assert [r.bytes for r in first.rows] == [1 << 20, 4 << 20, 8 << 20]
    assert [(w.line, w.message[:45]) for w in first.warnings] == [
        (24, "Avg bus bandwidth 122.063 GB/s, but the 6 bus")]
    (cut,) = parse_text("\n".join(lines[:22]), "cut.log")
    assert [(w.line, w.message[:40]) for w in cut.warnings] == [(22, "the table ends here without nccl-tests' ")]


def test_a_garbled_device_line_and_wrong_results_are_warnings():
    lines = (DATA / "several_runs.log").read_text().split("\n")
    lines[9] = lines[9].replace("Rank  2", "Rank  Z")      # line 10: rank 2's device line
    lines[19] = lines[19][:-1] + "3"                       # line 20: in-place #wrong 3
    first, _ = parse_text("\n".join(lines), "dev.log")
    assert [(w.line, w.row, w.message[:32]) for w in first.warnings] == [
        (8, False, "the device list skips rank(s) 2:"), (10, False, "device line not understood (expe"),
        (20, False, "in-place #wrong is 3: nccl-tests")]
    assert first.ranks == 8 and len(first.rows) == 4  # the rows' bus factor still says 8; the row is kept


@pytest.mark.parametrize("algbw,busbw,ok", [
    ("31.36", "54.87", True),    # as printed: 1048576 B / 33.44 us = 31.357 GB/s, x 1.75 = 54.87
    ("31.35", "54.87", True),    # still within half a digit of time and algbw
    ("31.37", "54.87", False),   # algbw one digit too high for size / time
    ("31.36", "54.90", False),   # busbw not algbw x 1.75
    ("31.36", "54.88", True),    # algbw in [31.355, 31.3616] (both bounds) x 1.75, +- 0.005
    ("31.36", "54.86", False)])
def test_consistency_allows_the_printed_digits_and_nothing_more(algbw, busbw, ok):
    text = (DATA / "info_interleaved.log").read_text().replace("33.44   31.36   54.87", f"33.44   {algbw}   {busbw}")
    (run,) = parse_text(text, "digits.log")
    assert (33 in [r.line for r in run.rows]) == ok
    assert [w.line for w in run.warnings] == ([] if ok else [33])


def test_a_row_whose_root_or_redop_is_garbled_is_left_out_not_a_sweep_of_its_own():
    lines = (DATA / "several_runs.log").read_text().split("\n")
    lines[20] = lines[20].replace("   sum      -1", "   sum       0")  # line 21: root 0 in an all_reduce
    first, second = parse_text("\n".join(lines), "root.log")
    assert [r.line for r in first.rows] == [20, 22, 23] and second.op == "all_gather"
    assert [(w.line, w.row, w.message[:53]) for w in first.warnings] == [
        (21, True, "row left out: its type, redop, root (float, sum, 0) d")]  # its busbw still averages right


def test_a_cut_table_followed_by_the_next_command_line():
    lines = (DATA / "several_runs.log").read_text().split("\n")
    lines = [line for line in lines[:22] + lines[27:] if "Collective test" not in line]  # old version, cut table
    first, second = parse_text("\n".join(lines), "cut.log")
    assert (first.op, [r.line for r in first.rows], second.op, second.op_from) == (
        "all_reduce", [19, 20, 21], "all_gather", "binary name (line 22)")
    assert [(w.line, w.message[:24]) for w in first.warnings] == [(21, "the table ends here with")]
    assert second.setting("NCCL_PROTO") == ("LL128", 22)


def test_a_rank_label_inside_a_row_is_taken_off_like_the_one_before_it():
    """MPICH -prepend-rank labels each write, and nccl-tests writes a row in three pieces."""
    run = _one("mpich_prefixes.log")
    assert (run.op, run.ranks, run.warnings) == ("all_reduce", 16, ())
    assert [(r.line, r.bytes, r.out_of_place.busbw_GBps, r.in_place.busbw_GBps) for r in run.rows] == [
        (27, 1 << 20, 33.85, 34.02), (28, 2 << 20, 54.23, 54.46), (29, 4 << 20, 80.41, 80.66),
        (30, 8 << 20, 109.07, 109.30)]
    assert run.out_of_bounds == "0 OK"


def test_a_row_cut_in_each_of_its_three_pieces_by_debug_lines_is_put_back_together():
    """NCCL_DEBUG_SUBSYS=TUNING under -prepend-rank (NVIDIA/nccl issue 1453's log): rank 0's tuner lines
    land after the size piece and after the out-of-place piece of every row, glued to each."""
    tune = "[0] node-00:4000:4000 [0] NCCL INFO {} Bytes -> Algo 0 proto 0 time 25.495272"
    out = []
    for line in (DATA / "mpich_prefixes.log").read_text().split("\n"):
        pieces = line.split("[0] ")
        if len(pieces) != 4 or pieces[1].startswith("#"):
            out.append(line)
            continue
        info = tune.format(pieces[1].split()[0])
        out += [f"[0] {pieces[1]}{info}", info, info, f"[0] {pieces[2]}{info}", info, f"[0] {pieces[3]}"]
    run = parse_text("\n".join(out), "tuning.log")[0]
    assert (run.op, run.ranks, run.warnings) == ("all_reduce", 16, ())
    assert [(r.line, r.bytes, r.out_of_place.busbw_GBps, r.in_place.busbw_GBps) for r in run.rows] == [
        (27, 1 << 20, 33.85, 34.02), (33, 2 << 20, 54.23, 54.46), (39, 4 << 20, 80.41, 80.66),
        (45, 8 << 20, 109.07, 109.30)]


def test_an_old_error_column_warns_only_above_nccl_tests_own_tolerance():
    """Before 2.13 the column held the largest deviation; float sums on 8 ranks allowed 7 x 1e-5."""
    run = _one("old_error_column.log")
    assert (run.op, run.ranks, len(run.rows)) == ("all_reduce", 8, 4)
    assert [r.out_of_place.wrong for r in run.rows] == ["2e-07", "4e-07", "1e-06", "3e-02"]
    assert _where(run) == [(21, "out-of-place error is 3e-02, above nccl-tests' tolerance 7e-05 for float: "
                                "the results of this row were wrong (its time is kept)")]


def test_an_old_error_column_is_told_by_its_printing_where_no_header_names_it():
    """Rows kept without their header (nccl-tests issue 128's paste): '2e-07' and '0e+00' are old
    nccl-tests' %5.0le error, which today's #wrong (%6g of a count) never prints; its 3e-02 is still
    above the tolerance, and --strict lets that note pass (the row is used as it is)."""
    rows = [line for line in (DATA / "old_error_column.log").read_text().split("\n") if line.startswith("  ")]
    (run,) = parse_text("\n".join(rows), "rows.log", gpus=8, strict=True)
    assert run.columns_from == ("no header; inferred from line 1: size count type redop | time algbw busbw error | "
                                "time algbw busbw error")
    assert [(w.line, w.message[:34], w.note) for w in run.warnings] == [
        (4, "out-of-place error is 3e-02, above", True)]


def test_a_cut_row_is_said_cut_once_and_not_read_as_another_layout():
    """Without a header, a row cut after its busbw (8 fields) would fit the layout without a root,
    its '-1' read as a time; and a row cut in its in-place columns whose out-of-place #wrong is
    garbled is left out with that reason alone, not also 'its out-of-place ones are kept'."""
    run = _run_text()
    rows = [run.row_text(i) for i in range(3)]
    cut = " ".join(rows[1].split()[:8])
    garbled = " ".join(rows[2].split()[:8] + ["0e+"])
    (found,) = parse_text("\n".join([rows[0], cut, garbled]), "cut.log", gpus=8)
    assert [r.line for r in found.rows] == [1]
    assert [(w.line, w.message.split(":")[0]) for w in found.warnings] == [
        (2, "data row has 8 fields, the columns (no header; inferred from line 1"),
        (3, "row left out")]
    assert "'0e+' is not a count" in found.warnings[1].message


# Shapes of real logs found in public issues (issue 24 item 1), rows written here with numbers of our own.
_OLD_HEADER = ("#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw"
               "  error\n"
               "#        (B)    (elements)                      (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n")


def test_an_old_alltoall_row_printed_its_redop_as_nothing():
    """Old nccl-tests passed '' as alltoall's redop (TimeTest(..., "", -1)): one field fewer than the header."""
    text = _OLD_HEADER + ("   268435456       1048576   float           5209.3   51.53   50.73  0e+00   5195.6   51.67"
                          "   50.86  0e+00\n"
                          "   536870912       2097152   float          10419.7   51.52   50.72  0e+00  10412.9   51.56"
                          "   50.75  0e+00\n")
    (run,) = parse_text(text + "# Out of bounds values : 0 OK\n", "old_a2a.log", op="alltoall")
    assert (run.ranks, run.warnings) == (64, ())
    assert [(r.bytes, r.redop, r.out_of_place.busbw_GBps) for r in run.rows] == [
        (268435456, "none", 50.73), (536870912, "none", 50.72)]
    # old all_gather printed no redop column; an empty one under the header's was alltoall_perf's
    (found,) = parse_text(text + "# Out of bounds values : 0 OK\n", "old_a2a.log", gpus=64)
    assert (found.op, found.op_from) == ("alltoall", "empty redop (line 3), as old alltoall_perf printed it")


def test_old_all_gather_algbw_is_read_as_nccl_tests_prints_it_since():
    """Before ec1b5e2 (June 2020) all_gather printed algbw = (n - 1) / n x size / time = busbw."""
    text = ("       65536          8192   float    16.57    1.98    1.98  0e+00    13.83    2.37    2.37  0e+00\n"
            "      131072         16384   float    23.07    2.84    2.84  0e+00    18.39    3.56    3.56  0e+00\n")
    (run,) = parse_text(text, "old_ag.log", op="all_gather")
    assert run.ranks == 2
    assert [(r.out_of_place.time_us, round(r.out_of_place.algbw_GBps, 2), r.out_of_place.busbw_GBps)
            for r in run.rows] == [(16.57, 3.96, 1.98), (23.07, 5.68, 2.84)]
    assert _where(run) == [(1, "algbw is (n - 1) / n x size / time and busbw equals it, as nccl-tests printed "
                               "all_gather and reduce_scatter before commit ec1b5e2 (June 2020, first in v2.9.0): "
                               "read as algbw = size / time, busbw as printed (the same as since)")]
    # an algbw that fits neither convention is still left out, with its warning
    (bad,) = parse_text(text.replace("1.98    1.98", "1.50    1.50"), "bad.log", op="all_gather")
    assert [r.line for r in bad.rows] == [2]
    assert bad.warnings[0].line == 1 and "algbw 1.50 GB/s is not size / time" in bad.warnings[0].message


@pytest.mark.parametrize("header", [True, False])
def test_a_row_cut_in_its_in_place_columns_keeps_its_out_of_place_ones(header):
    """With a header, or rows kept by grep: the cut row stays in its table, with a warning."""
    rows = ("        1024            32     float    none      -1    10.80    0.09    0.08      0    10.54    0.10"
            "    0.09      0\n"
            "        2048            64     float    none      -1    11.08    0.18    0.16      0    10.80    0.19"
            "    0.17      0\n"
            "        4096           128     float    none      -1    11.13    0.37    0.32      0    10.9\n")
    head = ("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
            "   busbw #wrong\n") if header else ""
    (run,) = parse_text(head + rows, "cut.log", op="alltoall")
    assert [(r.bytes, r.in_place is None) for r in run.rows] == [(1024, False), (2048, False), (4096, True)]
    line = 4 if header else 3
    assert (line, "data row cut short in its in-place columns (10 of 13 fields): its out-of-place ones are "
                  "kept") in _where(run)
    with pytest.raises(InputError, match="cut short"):
        parse_text(head + rows, "cut.log", op="alltoall", strict=True)


def test_a_json_log_line_above_a_text_table_is_read_as_text():
    """kubectl/fluentd logs open with a JSON line; the table below it is nccl-tests' text output."""
    body = fixtures.Run("all_reduce", 8, 1 << 20, 4 << 20, 25.0, 360.0).log()
    (run,) = parse_text('{"level":"info","msg":"starting job"}\n' + body, "k8s.log")
    assert (run.op, run.ranks, len(run.rows)) == ("all_reduce", 8, 3)
    with pytest.raises(InputError, match="JSON"):
        parse_text('{"level":"info","msg":"starting job"}\nno table here\n', "k8s.log")


def test_words_after_a_number_are_text_not_a_data_row():
    body = fixtures.Run("all_reduce", 8, 1 << 20, 4 << 20, 25.0, 360.0).log()
    (run,) = parse_text("128 GPU all reduce run without sharp\n" + body, "prose.log")
    assert len(run.rows) == 3 and _where(run) == [
        (1, "text starting with a number (128 GPU all reduce ...): mostly words, so not read as a data row")]


def test_validate_asks_for_the_rank_count_a_placement_flag_alone_cannot_give(tmp_path):
    """Rows whose busbw / algbw cannot pin n down (0.00 GB/s), and --per-node without --gpus."""
    log = tmp_path / "coarse.log"
    log.write_text("#       size         count      type   redop    root     time   algbw   busbw #wrong     time"
                   "   algbw   busbw #wrong\n"
                   "         128            32     float     sum      -1    47.76    0.00    0.01      0    46.52"
                   "    0.00    0.01      0\n")
    args = ["validate", "--nccl-tests", str(log), "--topology", "hopper_ib_su", "--engine", "flow"]
    result = runner.invoke(app, args + ["--per-node", "8"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"fabricsim: {log}:1: the log says nothing to count ranks from (no '#  Rank ... device ...' lines, no "
        "NCCL Init lines, and its rows' busbw / algbw do not pin a rank count down); --per-node 8 alone would "
        "take 256 GPUs, from every node of Hopper IB scalable unit (32 x HGX H100): pass --gpus N")
    assert runner.invoke(app, args + ["--per-node", "8", "--gpus", "16"]).exit_code == 0


def test_a_one_rank_log_is_one_error_naming_its_line(tmp_path):
    run = fixtures.Run("all_gather", 1, 1 << 20, 2 << 20, 5.0, 1.0)
    log = tmp_path / "one.log"
    log.write_text(run.log())
    result = runner.invoke(app, ["validate", "--nccl-tests", str(log), "--topology", HGX, "--engine", "flow"])
    assert result.exit_code == 2
    assert result.stderr.strip().startswith(f"fabricsim: {log}:6: the log ran on 1 rank (")
    assert "all_gather on one GPU crosses no link, so there is nothing to compare" in result.stderr


def test_two_tables_side_by_side_read_the_left_one():
    """A diff pasted side by side: header and rows of two runs with a '|' between them."""
    run = fixtures.Run("all_reduce", 8, 1 << 20, 4 << 20, 25.0, 360.0)
    lines_ = (run.header() + "".join(run.row_text(i) + "\n" for i in range(len(run.rows)))).splitlines()
    text = "".join(f"{line}  |  {line}\n" for line in lines_)
    (found,) = parse_text(run.preamble() + text, "diff.log")
    assert [r.out_of_place.busbw_GBps for r in found.rows] == [float(r.split()[7]) for r in lines_[3:]]
    first_row = found.rows[0].line
    assert [w for w in _where(found) if "side by side" in w[1]] == [
        (first_row, "two tables side by side ('|' between them, as a diff shows them): the left one is read")]


def test_another_tools_table_is_named_as_such():
    """mscclpp-test prints size, count, time, algbw, busbw but no type: not read, and the warning says why."""
    text = ("#        size         count     time   algBw   busBw  #wrong     time   algBw   busBw  #wrong\n"
            "       1048576        262144    18.26   57.42   50.24      0    17.91   58.55   51.23      0\n"
            "       2097152        524288    27.02   77.61   67.91      0    26.84   78.13   68.36      0\n")
    with pytest.raises(InputError) as err:
        parse_text(text, "mscclpp.log", op="all_reduce", gpus=8)
    assert "the column header at line 1 is not nccl-tests' (no 'type' column: another tool?)" in err.value.message


def test_a_coarse_bus_factor_gives_the_range_of_rank_counts_it_fits(tmp_path):
    """busbw / algbw = 4.33 / 2.20 is 1.9615-1.9749 at the printed digits: 2(n - 1) / n for n = 52-79,
    not one count."""
    log = tmp_path / "coarse.log"
    log.write_text("#       size         count      type   redop    root     time   algbw   busbw #wrong     time"
                   "   algbw   busbw #wrong\n"
                   "   268435456      67108864     float     sum      -1   122131    2.20    4.33      0   122110"
                   "    2.20    4.33      0\n")
    result = runner.invoke(app, ["validate", "--nccl-tests", str(log), "--topology", "dgx_a100_hdr_su"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1].endswith(
        "pass --gpus N: the rows' busbw / algbw fit 52-79 ranks (line 2)")


def _run_text(op="all_reduce", n=8, **kw):
    return fixtures.Run(op, n, 1 << 20, 4 << 20, 25.0, 360.0, **kw)


def test_a_ray_workers_tag_is_a_launcher_prefix():
    """SkyPilot runs mpirun under Ray: '(head, rank=0, pid=3808) [1,0]<stdout>:' on every line."""
    body = "".join(f"(head, rank=0, pid=3808) [1,0]<stdout>:{line}\n" for line in _run_text().log().splitlines())
    (run,) = parse_text(body, "ray.log")
    assert (run.op, run.ranks, len(run.rows), run.warnings) == ("all_reduce", 8, 3, ())


def test_a_log_quoted_in_a_reply_is_read_whole():
    """'> ' before every line (a mail or an issue reply quoting a log), '>' alone on its blank lines."""
    body = "".join(f"> {line}".rstrip() + "\n" for line in _run_text(n=16).log(gpus_per_process=1).splitlines())
    (run,) = parse_text(body, "quoted.log")
    assert (run.op, run.ranks, len(run.rows), run.warnings) == ("all_reduce", 16, 3, ())
    assert run.hosts == ("node-00", "node-01")


_FAILURE = ("node-01: Test NCCL failure all_reduce.cu:44 'unhandled system error (run with NCCL_DEBUG=INFO for "
            "details) / '\n .. node-01 pid 4011: Test failure common.cu:1302\n"
            "----------------------------------------------------------------\n"
            "Primary job  terminated normally, but 1 process returned\na non-zero exit code.\n")


def test_a_run_that_fails_midway_keeps_its_rows_and_says_where_it_stopped():
    """nccl-tests' NCCLCHECK prints 'host: Test NCCL failure file:line ...' and the job ends: the rows
    before it are kept, the failure is the one warning (not 'cut short?', not one per line of mpirun's
    abort text), and the NCCL_DEBUG=INFO it mentions is no setting of the run."""
    run = _run_text(n=16)
    text = run.preamble(gpus_per_process=1) + run.header() + run.row_text(0) + "\n" + run.row_text(1) + "\n" + _FAILURE
    (found,) = parse_text(text, "died.log")
    assert [r.bytes for r in found.rows] == [1 << 20, 2 << 20] and found.setting("NCCL_DEBUG") is None
    assert [(w.line, w.message) for w in found.warnings] == [
        (28, "nccl-tests reports a failure, \"Test NCCL failure all_reduce.cu:44 'unhandled system error (run "
             "with ...\": the run stopped here (the 2 rows before it kept)")]


@pytest.mark.parametrize("header", [False, True])
def test_a_run_that_fails_before_its_first_row_is_one_error_naming_the_failure(header):
    run = _run_text(n=16)
    text = run.preamble(gpus_per_process=1) + (run.header() if header else "") + _FAILURE
    with pytest.raises(InputError) as err:
        parse_text(text, "died.log")
    assert (err.value.line, err.value.message[:60]) == (
        23 + 3 * header, "nccl-tests reports a failure before its first data row, \"Tes")


def test_a_table_pasted_into_markdown_is_read_and_its_rule_line_skipped():
    run = _run_text()
    head = run.header().replace("# ", "\\# ", 3)
    rows = [" | ".join(run.row_text(i).split()) for i in range(len(run.rows))]
    text = head + rows[0] + "\n" + " | ".join(["--"] * 13) + "\n" + "\n".join(rows[1:]) + "\n" + run.footer()
    (found,) = parse_text(run.preamble() + text, "md.log")
    assert [r.bytes for r in found.rows] == [1 << 20, 2 << 20, 4 << 20] and found.warnings == ()


def test_the_concluded_line_names_the_op_of_a_pasted_table():
    a2a = _run_text("alltoall", 16)
    text = a2a.header() + "".join(a2a.row_text(i) + "\n" for i in range(3)) + a2a.footer()
    (run,) = parse_text(text, "concluded.log", gpus=16)
    assert (run.op, run.op_from) == ("alltoall", f"binary name (line {text.count(chr(10))})")


def test_a_test_whose_op_cannot_be_told_is_left_out_beside_the_others():
    ar, a2a = _run_text(), _run_text("alltoall")
    text = ar.log() + a2a.header() + "".join(a2a.row_text(i) + "\n" for i in range(3))
    (run,) = parse_text(text, "mixed.log")
    assert run.op == "all_reduce"
    assert any(w.message.startswith("this test is left out: cannot tell the operation") for w in run.warnings)
    with pytest.raises(InputError, match="cannot tell the operation"):
        parse_text(a2a.header() + a2a.row_text(0) + "\n", "alone.log")


@pytest.mark.parametrize("command,ranks,said", [
    ("mpirun -np 16 -H a:8,b:8 ./build/all_reduce_perf -b 1M -e 4M -f 2 -g 1", 16,
     "the command line (16 processes x 1 thread x 1 GPU, line 1)"),
    ("srun -N 2 -n 4 ./all_reduce_perf -b 1M -e 4M -f 2 -g 2", 8,
     "the command line (4 processes x 1 thread x 2 GPUs, line 1)"),
    ("NCCL_DEBUG=WARN ./build/all_reduce_perf -b 1M -e 4M -f 2 -g 8", 8,
     "the command line (one process x 1 thread x 8 GPUs, line 1)"),
    ("root@node-a:~/nccl-tests# ./build/all_reduce_perf -b 1M -e 4M -t 2 -g 4", 8,
     "the command line (one process x 2 threads x 4 GPUs, line 1)"),
])
def test_the_command_line_counts_ranks_a_log_does_not_list(command, ranks, said):
    """broadcast: busbw = algbw, so the rows cannot count the ranks."""
    run = _run_text("broadcast", ranks, root=0)
    (found,) = parse_text(command.replace("all_reduce", "broadcast") + "\n" + run.table(), "cmd.log")
    assert (found.ranks, found.ranks_from) == (ranks, said)


def test_a_device_list_shorter_than_the_launch_is_a_cut_list():
    """mpirun -np 16 with the first 4 rank lines pasted: 16 ranks, not 4."""
    run = _run_text("broadcast", 16, root=0)
    text = "mpirun -np 16 ./build/broadcast_perf -g 1\n" + run.preamble(ranks=range(4)) + run.table()
    (found,) = parse_text(text, "cut.log")
    assert found.ranks == 16 and found.ranks_from.endswith("the device list names ranks 0-3 only")


def test_prose_naming_a_binary_is_not_a_command_line():
    run = _run_text()
    (found,) = parse_text("We ran all_reduce_perf with 4 processes\n" + run.log(), "prose.log")
    assert found.ranks == 8 and found.ranks_from.startswith("8 '#  Rank' lines")


def test_a_garbled_in_place_half_keeps_the_out_of_place_one():
    run = _run_text()
    text = run.log()
    rows = [run.row_text(i) for i in range(len(run.rows))]
    cut = rows[1][:rows[1].rindex(" ") + 1] + "N"  # the last field, #wrong, cut to 'N'
    (found,) = parse_text(text.replace(rows[1], cut), "garbled.log")
    assert [r.in_place is None for r in found.rows] == [False, True, False]
    assert any("in-place #wrong 'N' is not a count, N/A or an error figure: the row's out-of-place columns are kept"
               == m for _, m in _where(found))


def test_a_garbled_count_on_the_first_row_costs_only_that_row():
    """size / (count x type bytes) is one figure per sweep: most rows say it, not the first one."""
    a2a = _run_text("alltoall")
    rows = [a2a.row_text(i) for i in range(len(a2a.rows))]
    fields = rows[0].split()
    fields[1] = str(int(fields[1]) * 8)  # the count of one rank x 8: size / (count x 4 B) reads 1, not 8
    (found,) = parse_text(a2a.log().replace(rows[0], "  ".join(fields)), "a2a.log")
    assert (found.op, found.ranks) == ("alltoall", 8)
    assert [r.bytes for r in found.rows] == [2 << 20, 4 << 20] and row_counts(found).unusable == 1
    first = a2a.log().splitlines().index(rows[0]) + 1
    assert (first, "row left out: size / (count x type bytes) is 1, where 2 other rows of this sweep have 8 "
            f"(line {first + 1}): a garbled size or count?") in _where(found)


def test_nccl_algo_does_not_apply_to_point_to_point_ops():
    run = _run_text("alltoall")
    (found,) = parse_text("NCCL_ALGO=Ring mpirun -np 8 ./build/alltoall_perf -g 1\n" + run.log(), "a2a.log")
    settings = settings_for(found)
    assert settings.algo == "auto"
    assert settings.notes[0] == "NCCL_ALGO=Ring (line 1): no matter here, NCCL runs alltoall point to point"


def _two_hosts_of_two() -> str:
    """Rank lines of 2 hosts x 2 GPUs (alltoall on 4 ranks)."""
    run = _run_text("alltoall", 4)
    devices = "".join("#  Rank %2d Group  0 Pid %6d on %10s device %2d [0000:%02x:00] NVIDIA H100 80GB HBM3\n"
                      % (r, 4000 + r, f"node-{r // 2}", r % 2, 0x18 + r) for r in range(4))
    return run.preamble(ranks=[]).replace("#\n# Using devices\n#\n", "#\n# Using devices\n" + devices + "#\n") + run.table()


@pytest.mark.parametrize("text,wrong,right,said", [
    # --per-node 4 would put all four on one server's NVLink
    (_two_hosts_of_two(), "4", "2", "4 ranks 4 GPUs on 1 tray, but the log ran 2 GPUs on each of 2 trays"),
    # the first ranks, the default, are checked too: --per-node 4 would put them on two servers' NICs
    (_run_text("all_reduce", 8).log(), "4", "8", "8 ranks 4 GPUs on each of 2 trays, but the log ran 8 GPUs on 1 tray"),
])
def test_a_placement_flag_must_agree_with_where_the_log_ran(tmp_path, text, wrong, right, said):
    log = tmp_path / "placed.log"
    log.write_text(text)
    args = ["validate", "--nccl-tests", str(log), "--topology", "hopper_ib_su", "--engine", "flow"]
    bad = runner.invoke(app, args + ["--per-node", wrong])
    assert bad.exit_code == 2
    assert bad.stderr.strip().splitlines()[-1].startswith(f"fabricsim: --per-node: puts the log's {said}")
    assert runner.invoke(app, args + ["--per-node", right]).exit_code in (0, 1)


def test_a_wrapper_scripts_test_flag_names_the_op():
    """GKE's gIB wrapper: 'run_nccl_tests.sh -t all_gather ...' (nccl-tests' own -t is a number)."""
    ag = _run_text("all_gather")
    text = "/usr/local/gib/scripts/run_nccl_tests.sh -t all_gather -b 1M -e 4M host-0 host-1\n" + ag.table()
    (run,) = parse_text(text, "gib.log")
    assert (run.op, run.op_from) == ("all_gather", "binary name (line 1)")
    (threads,) = parse_text("./build/all_gather_perf -t 2 -g 4\n" + ag.table(), "t.log")
    assert threads.op == "all_gather"


@pytest.mark.parametrize("with_header", [True, False])
def test_a_scripts_labels_before_the_size_are_taken_off_with_one_warning_per_change(with_header):
    """``p4dn 1  1048576 ...``: a sweep script's own columns in front; the row is read from the size on."""
    run = _run_text()
    rows = [run.row_text(i) for i in range(len(run.rows))]
    labelled = {row: f"{'p4dn 1' if i < 2 else 'p4dn 2'} {row.lstrip()}" for i, row in enumerate(rows)}
    text = run.log() if with_header else "".join(row + "\n" for row in rows)
    for row, new in labelled.items():
        text = text.replace(row, new)
    (found,) = parse_text(text, "labelled.log")
    plain = parse_text(run.log(), "plain.log")[0]
    assert [(r.bytes, r.out_of_place) for r in found.rows] == [(r.bytes, r.out_of_place) for r in plain.rows]
    assert (found.op, found.ranks, row_counts(found).used) == ("all_reduce", 8, 3)
    at = [text.splitlines().index(labelled[rows[i]]) + 1 for i in (0, 2)]
    tail = ("columns added in front of nccl-tests' own (a script's label?); this row and those like it read "
            "from the size on")
    assert _where(found) == [(at[0], f"'p4dn 1' before the row's size: {tail}"),
                             (at[1], f"'p4dn 2' before the row's size (before: 'p4dn 1': rows of another "
                                     f"setup?): {tail}")]
