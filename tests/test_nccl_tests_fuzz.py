"""Corrupted nccl-tests logs (issue 24 "Done when", issue 28): truncated, binary junk, one field garbled,
a line deleted or doubled, CRLF, UTF-16. Each either reads, with every data-looking line a row or a
warning at its line, or is one InputError naming the file; never another exception."""

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.errors import InputError
from simulator.workloads.traces import nccl_tests_lines as lines
from simulator.workloads.traces.nccl_tests_log import decode, parse_log

DATA = Path(__file__).resolve().parent / "data" / "nccl_tests"
BASES = ["several_runs.log", "info_interleaved.log", "zero_bytes_all_gather.log", "garbled.log", "grep_rows.log",
         "slurm_prefixes.log", "rank_list_cut.log", "all_reduce.json"]
JUNK = st.text(alphabet="0123456789.-+eEx,/#: abcfilnortu\t\f\x00\x7f\u2028\ufffd", min_size=1, max_size=12)


@st.composite
def corrupted(draw) -> bytes:
    text = (DATA / draw(st.sampled_from(BASES))).read_text()
    kind = draw(st.sampled_from(["truncate", "junk", "field", "delete", "double", "crlf", "utf16", "bytes"]))
    rows = text.split("\n")
    if kind == "truncate":
        return text.encode()[: draw(st.integers(0, len(text.encode())))]
    if kind == "bytes":
        at = draw(st.integers(0, len(text)))
        return text[:at].encode() + draw(st.binary(min_size=1, max_size=40)) + text[at:].encode()
    i = draw(st.integers(0, len(rows) - 1))
    if kind == "junk":
        rows.insert(i, draw(JUNK))
    elif kind == "field":
        fields = rows[i].split()
        if fields:
            fields[draw(st.integers(0, len(fields) - 1))] = draw(JUNK)
            rows[i] = "  ".join(fields)
    elif kind == "delete":
        del rows[i]
    elif kind == "double":
        rows.insert(i, rows[i])
    joined = "\n".join(rows)
    if kind == "crlf":
        return joined.replace("\n", "\r\n").encode()
    if kind == "utf16":
        return joined.encode("utf-16")
    return joined.encode()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=corrupted())
def test_corrupted_logs_read_with_warnings_or_fail_in_one_line(tmp_path, data):
    path = tmp_path / "log"
    path.write_bytes(data)
    try:
        runs = parse_log(path)
    except InputError as err:
        assert err.file == str(path) and "\n" not in str(err)
        return
    text = decode(data)
    if text.lstrip().startswith("{") or '"results"' in text:
        return  # JSON: one line holds every result
    used = {r.line for run in runs for r in run.rows}
    warned = {w.line for run in runs for w in run.warnings}
    raw = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
    for number, line in enumerate(raw, start=1):
        cleaned = lines.clean(line)
        fields = cleaned.text.split()
        if cleaned.text.startswith("#") or not lines.is_data_like(fields):
            continue
        continued = number > 1 and lines.clean(raw[number - 2]).glued and number - 1 in used | warned
        assert number in used | warned or continued, (number, line)
