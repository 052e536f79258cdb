"""Result files: deterministic JSON, CSV headers, and inputs are never overwritten."""

import json

import numpy as np
import pytest

from simulator.errors import InputError
from simulator.reports.export import write_csv, write_json
from simulator.metrics.collective_stats import element_count
from simulator.reports.nccl_table import nccl_text


def test_json_is_sorted_and_handles_numpy(tmp_path):
    path = write_json(tmp_path / "r.json", {"b": np.float64(1.5), "a": np.arange(3)})
    text = path.read_text()
    assert text.index('"a"') < text.index('"b"')
    assert json.loads(text) == {"a": [0, 1, 2], "b": 1.5}


def test_refuses_to_overwrite_an_input(tmp_path):
    source = tmp_path / "scenario.yaml"
    source.write_text("name: mine\n")
    with pytest.raises(InputError):
        write_json(source, {"x": 1}, inputs=[source])
    assert source.read_text() == "name: mine\n"


def test_csv_header_is_union_of_keys(tmp_path):
    path = write_csv(tmp_path / "r.csv", [{"a": 1}, {"a": 2, "b": 3}])
    assert path.read_text().splitlines() == ["a,b", "1,", "2,3"]


def test_nccl_count_column_follows_nccl_tests():
    assert element_count("all_reduce", 1 << 20, 8) == 262144
    assert element_count("all_gather", 1 << 20, 8) == 32768
    text = nccl_text("all_reduce", 8, [{"bytes": 1024, "time_us": 10.0, "algbw_GBps": 0.1, "busbw_GBps": 0.18}])
    assert "1024" in text and "256" in text
