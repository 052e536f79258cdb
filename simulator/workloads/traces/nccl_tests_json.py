"""Read the JSON file of newer nccl-tests (``-J FILE.json``, ``--output_file``; nccl-tests 2.17.x on,
October 2025) into the same drafts as the text log.

Its shape, from ``jsonOutputInit`` / ``writeDeviceReport`` / ``writeBenchmarkLine*`` /
``writeResultFooter`` in nccl-tests ``src/util.cu`` (``JSON_FILE_VERSION`` 1 to 3): one object,
written on one line::

    {"version": 3, "start_time": "...", "args": ["./all_reduce_perf", "-b", "8", ...],
     "env": ["NCCL_ALGO=Ring", ...], "nccl_version": 22703,
     "config": {"nthreads": 1, "ngpus": 8, "minimum_bytes": 8, ..., "devices": [
        {"rank": 0, "group": 0, "pid": 1, "hostname": "h", "device": 0, "device_hex": "0000:18:00",
         "device_info": "NVIDIA H100 80GB HBM3"}, ...]},
     "results": [{"size": 8, "count": 2, "type": "float", "redop": "sum", "root": "    -1",
                  "out_of_place": {"time": 37.8, "alg_bw": 0.0, "bus_bw": 0.0, "nwrong": 0.0},
                  "in_place": {...}, "actual_iterations": 20, "experiment_name": "..."}, ...],
     "out_of_bounds": {"count": 0, "okay": "true"},
     "average_bus_bandwidth": {"bandwidth": 45.12, "okay": "unchecked"}, "errors": [], "end_time": "..."}

``devices`` holds one entry per process (the first rank line of each; ``parseRankInfo``), so the rank
count is ``len(devices) x nthreads x ngpus``. Doubles are written with ``%lf`` (6 decimals), ``nan``
as the string ``"nan"``; ``cpu_time`` replaces ``time`` with ``-C 1``. A result's warning names the
line its object starts on (line 1 as nccl-tests writes the file) and its index.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import PurePath

from simulator.errors import InputError
from simulator.workloads.traces.nccl_tests_records import REDOPS, TYPE_BYTES, RankLine, Row, Timing, nccl_version_name
from simulator.workloads.traces.nccl_tests_resolve import Draft, Figures, RowDraft, algbw_ok

KNOWN_VERSIONS = (1, 2, 3)
JSON_HALF = 5e-7
"""Half a unit of the 6th decimal that ``%lf`` writes."""
_RESULT_START = re.compile(r'\{\s*"size"\s*:')
_NCCL_ENV = re.compile(r"(NCCL_[A-Z0-9_]+)=(.*)")


def read_json(text: str, path: str) -> list[Draft]:
    """The one test of an nccl-tests JSON file as a draft; a file cut short keeps the results before
    the cut (with a warning)."""
    draft = Draft(path)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        doc = _salvage(text, err, draft)
    except (RecursionError, ValueError) as err:  # nesting, or an integer of thousands of digits
        raise InputError(f"JSON that cannot be nccl-tests output ({type(err).__name__}: {str(err)[:80]})",
                         file=path) from None
    if not isinstance(doc, dict):
        raise InputError("JSON is not an object; nccl-tests -J writes {\"version\": ..., \"results\": [...]}",
                         file=path)
    first = text.count("\n", 0, len(text) - len(text.lstrip())) + 1
    """The line the JSON object starts on (comment lines may come before it)."""
    version = doc.get("version")
    if version not in KNOWN_VERSIONS:
        draft.warn(first, f"JSON version {version!r}: this reader knows nccl-tests' versions "
                          f"{', '.join(map(str, KNOWN_VERSIONS))}; read as version {KNOWN_VERSIONS[-1]}")
    _preamble(doc, draft, first)
    average, bounds = doc.get("average_bus_bandwidth"), doc.get("out_of_bounds")
    if isinstance(average, dict) and _number(average.get("bandwidth")) is not None:
        draft.avg_busbw = float(average["bandwidth"])
    if isinstance(bounds, dict) and _count(bounds.get("count"), zero=True):
        draft.out_of_bounds = f"{bounds['count']} {'OK' if bounds['count'] == 0 else 'FAILED'}"
    results = doc.get("results")
    if not isinstance(results, list):
        raise InputError("JSON has no \"results\" list: not an nccl-tests -J file, or it stopped before the "
                         "first size", file=path)
    starts = [text.count("\n", 0, m.start()) + 1 for m in _RESULT_START.finditer(text)]
    if len(starts) != len(results):
        starts = [first] * len(results)
    cputime = False
    for index, (item, line) in enumerate(zip(results, starts)):
        found = _row(item, line)
        if isinstance(found, str):
            draft.warn(line, f"results[{index}] left out: {found}", row=True)
            continue
        cputime = cputime or any(f.cputime for f in found.figures)
        _place(draft, found, index)
    draft.header_line = starts[0] if starts else 1
    draft.columns_from = "JSON results" + (" (cpu_time)" if cputime else "")
    return [draft]


def _salvage(text: str, err: json.JSONDecodeError, draft: Draft) -> dict:
    """A JSON file cut short (the run died before ``jsonOutputFinalize``): its complete results."""
    decoder = json.JSONDecoder()
    doc: dict = {}
    for key in ("version", "args", "env", "nccl_version", "config"):
        m = re.search(r'(?<!\\)"%s"\s*:\s*' % key, text)
        if m:
            try:
                doc[key] = decoder.raw_decode(text, m.end())[0]
            except (json.JSONDecodeError, ValueError, RecursionError):
                pass
    m = re.search(r'(?<!\\)"results"\s*:\s*\[', text)
    if m is None:
        raise InputError(f"not valid JSON ({err.msg} at line {err.lineno} column {err.colno}) and no \"results\" "
                         "list in it", file=draft.path, line=err.lineno) from None
    results, at = [], m.end()
    while True:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        if at >= len(text) or text[at] == "]":
            break
        try:
            item, at = decoder.raw_decode(text, at)
        except (json.JSONDecodeError, ValueError, RecursionError):
            break
        results.append(item)
    doc["results"] = results
    draft.warn(err.lineno, f"the JSON is cut short ({err.msg}, column {err.colno}); read the {len(results)} "
                           "complete results before the cut")
    return doc


def _preamble(doc: dict, draft: Draft, line: int) -> None:
    args = doc.get("args")
    if isinstance(args, list) and args and isinstance(args[0], str):
        draft.saw_binary(PurePath(args[0]).name, line, definitive=True)
    env = doc.get("env")
    if isinstance(env, list):
        for item in env:
            m = _NCCL_ENV.fullmatch(item) if isinstance(item, str) else None
            if m and m.group(1) not in ("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"):
                draft.env.append((m.group(1), m.group(2), line))
    code = doc.get("nccl_version")
    if isinstance(code, int) and code > 0:
        draft.nccl_version = nccl_version_name(code)
    config = doc.get("config")
    if not isinstance(config, dict):
        return
    threads, gpus = config.get("nthreads"), config.get("ngpus")
    if _count(threads) and _count(gpus):
        draft.threads, draft.gpus_per_thread = threads, gpus
    devices = config.get("devices")
    if isinstance(devices, list) and devices:
        for d in devices:
            if isinstance(d, dict) and _count(d.get("rank"), zero=True) and isinstance(d.get("hostname"), str):
                draft.rank_lines[d["rank"]] = RankLine(line, d["rank"], d.get("pid") or 0, d["hostname"],
                                                       d.get("device") or 0, str(d.get("device_info", "")))
        if draft.threads and len(draft.rank_lines) == len(devices):
            draft.ranks_listed = len(devices) * draft.threads * draft.gpus_per_thread


def _count(value: object, zero: bool = False) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and (value >= 0 if zero else value > 0)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and value >= 0 else None


def _row(item: object, line: int) -> RowDraft | str:
    """One result as a row, or why it cannot be used."""
    if not isinstance(item, dict):
        return "not an object"
    size, count, dtype = item.get("size"), item.get("count"), item.get("type")
    if not _count(size, zero=True):
        return f"size {size!r} is not a whole number of bytes"
    if not _count(count, zero=True):
        return f"count {count!r} is not a whole number of elements"
    if dtype not in TYPE_BYTES:
        return f"unknown data type {dtype!r}"
    redop = item.get("redop")
    if redop not in REDOPS:
        return f"unknown reduction op {redop!r}"
    root_text = item.get("root")
    try:
        root = int(str(root_text).strip())
    except ValueError:
        return f"root {root_text!r} is not a rank"
    element = TYPE_BYTES[dtype]
    per_rank = 0
    if size or count:
        if count == 0 or size % (count * element):
            return f"size {size} B is not a whole multiple of count {count} x {element} B ({dtype})"
        per_rank = size // (count * element)
    timings, figures = [], []
    for key in ("out_of_place", "in_place"):
        place = item.get(key)
        if place is None and key == "in_place":
            continue
        if not isinstance(place, dict):
            return f"{key} is {place!r}, not an object of time, alg_bw, bus_bw"
        cputime = "cpu_time" in place and "time" not in place
        t = _number(place.get("cpu_time" if cputime else "time"))
        a, b = _number(place.get("alg_bw")), _number(place.get("bus_bw"))
        if t is None or a is None or b is None:
            return f"{key}: time, alg_bw and bus_bw must be non-negative numbers, got {place!r}"
        if t <= 0 and size > 0:
            return f"{key} time must be positive (us), got {t}"
        f = Figures(t, JSON_HALF + 1e-12 * t, a, JSON_HALF + 1e-12 * a, b, JSON_HALF + 1e-12 * b, cputime)
        if not algbw_ok(size, f):
            return f"{key} alg_bw {a} GB/s is not size / time = {size / t / 1e3:.6g} GB/s"
        wrong = place.get("nwrong")
        shown = "N/A" if wrong is None else f"{wrong:g}" if _number(wrong) is not None else str(wrong)
        timings.append(Timing(t, a, b, shown))
        figures.append(f)
    row = Row(line=line, bytes=size, count=count, type=dtype, redop=redop, root=root,
              out_of_place=timings[0], in_place=timings[1] if len(timings) > 1 else None)
    return RowDraft(row, tuple(figures), per_rank)


def _place(draft: Draft, found: RowDraft, index: int) -> None:
    """As the text reader does: a new sweep when type, redop or root change or the sizes start again."""
    row = found.row
    seg = draft.segments[-1] if draft.segments else None
    if seg:
        last = seg[-1].row
        sized = [d.row for d in seg if d.row.bytes > 0]
        if (last.type, last.redop, last.root) != (row.type, row.redop, row.root) or (
                sized and row.bytes > 0 and row.bytes <= sized[0].bytes and row.bytes < sized[-1].bytes):
            seg = None
        elif sized and row.bytes < sized[-1].bytes:
            draft.warn(row.line, f"results[{index}] left out: size {row.bytes} B does not grow from "
                                 f"{sized[-1].bytes} B", row=True)
            return
    if seg is None:
        draft.segments.append([])
    draft.segments[-1].append(found)
