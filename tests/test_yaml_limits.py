"""The one YAML loader under every input (issue 28, item 4): merge keys work, an alias bomb and
5,000 nested ``[`` are one-line errors at FILE:LINE, quickly; every loader of the package goes
through it."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.errors import InputError
from simulator.hardware import yamlfile
from simulator.hardware.catalog import load_catalog
from simulator.hardware.yamlfile import MAX_DEPTH, MAX_VALUES, YamlFile, load_file
from simulator.topology.builder import build_fabric
from simulator.topology.loader import load_yaml

ROOT = Path(__file__).resolve().parents[1]
_register()
runner = CliRunner()

BOMB = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10))
"""Ten aliases per level, nine levels: 10^9 values once expanded, 10 lines of text."""
DEEP = "name: x\ndevices: " + "[" * 5000 + "]" * 5000 + "\n"
BOMB_MESSAGE = (f"aliases expand the document past {MAX_VALUES:,} values (an alias bomb?); "
                "write the values out or use fewer aliases")
DEEP_MESSAGE = f"YAML syntax error: mappings and lists nested more than {MAX_DEPTH} levels deep"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _one_line_exit_2(result) -> str:  # noqa: ANN001
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr.strip()


# --- merge keys ------------------------------------------------------------------------------------

def test_merge_key_in_a_topology_file_builds_with_the_lines_written(tmp_path):
    path = _write(tmp_path, "t.yaml", "name: merged\n"
                                     "x-link: &nv {generation: nvlink4}\n"
                                     "devices:\n  - {name: gpu, part: h100, count: 2}\n"
                                     "links:\n  - {<<: *nv, from: gpu0, to: gpu1}\n")
    data, sources = load_yaml(path)
    assert data["links"] == [{"generation": "nvlink4", "from": "gpu0", "to": "gpu1"}]
    assert sources.where(("links", 0, "from")) == (str(path), 6)


def test_merge_key_own_keys_win_and_lists_of_merges_apply_in_order(tmp_path):
    path = _write(tmp_path, "m.yaml", "a: &a {x: 1, y: 1}\nb: &b {y: 2, z: 2}\n"
                                     "c: {<<: [*a, *b], z: 3}\n")
    data, _ = load_yaml(path)
    assert data["c"] == {"x": 1, "y": 1, "z": 3}  # YAML 1.1: the first merged mapping wins, own keys over all
    assert load_file(path)["c"] == data["c"]


def test_merge_key_builds_a_fabric_like_the_written_out_file(tmp_path):
    head = "name: t\ndevices:\n  - {name: gpu, part: h100, count: 3}\nlinks:\n"
    merged = _write(tmp_path, "m.yaml", head + "  - &nv {from: gpu0, to: gpu1, generation: nvlink4, links_per_pair: 2}\n"
                                             "  - {<<: *nv, to: gpu2}\n")
    plain = _write(tmp_path, "p.yaml", head + "  - {from: gpu0, to: gpu1, generation: nvlink4, links_per_pair: 2}\n"
                                            "  - {from: gpu0, to: gpu2, generation: nvlink4, links_per_pair: 2}\n")
    a, b = build_fabric(merged), build_fabric(plain)
    assert [(c.src, c.dst, c.rate_Bps) for c in a.channels] == [(c.src, c.dst, c.rate_Bps) for c in b.channels]
    assert len(a.channels) == 8


def test_a_bad_merge_is_a_located_error(tmp_path):
    path = _write(tmp_path, "m.yaml", "name: x\nlinks:\n  - {<<: 3, from: a}\n")
    with pytest.raises(InputError) as err:
        load_yaml(path)
    assert str(err.value) == (f"{path}:3: links[0]: bad merge key (<<): expected a mapping or list of "
                              "mappings for merging, but found scalar")


# --- limits ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("load", [load_yaml, load_file, YamlFile], ids=["topology", "plain", "parts"])
def test_an_alias_bomb_is_refused_at_once_with_its_line(tmp_path, load):
    path = _write(tmp_path, "bomb.yaml", BOMB)
    start = time.perf_counter()
    with pytest.raises(InputError) as err:
        load(path)
    assert time.perf_counter() - start < 1.0
    # a5 is the first level past the limit: 10^6 strings, plus the lists that hold them
    assert str(err.value) == f"{path}:6: {BOMB_MESSAGE}"


@pytest.mark.parametrize("load", [load_yaml, load_file, YamlFile], ids=["topology", "plain", "parts"])
def test_5000_nested_brackets_are_an_error_not_a_recursion_error(tmp_path, load):
    path = _write(tmp_path, "deep.yaml", DEEP)
    with pytest.raises(InputError) as err:
        load(path)
    assert str(err.value) == f"{path}:2: {DEEP_MESSAGE}"


def test_nesting_up_to_the_limit_is_read(tmp_path):
    depth = MAX_DEPTH - 1  # the document's own mapping is one level
    path = _write(tmp_path, "ok.yaml", "a: " + "[" * depth + "1" + "]" * depth + "\n")
    data = load_file(path)["a"]
    for _ in range(depth - 1):
        (data,) = data
    assert data == [1]


def test_moderate_aliases_are_fine(tmp_path):
    path = _write(tmp_path, "a.yaml", "a: &a [1, 2, 3]\nb: [*a, *a, *a]\n")
    assert load_yaml(path)[0]["b"] == [[1, 2, 3]] * 3


def test_a_file_past_the_size_limit_is_refused_unread(tmp_path, monkeypatch):
    path = _write(tmp_path, "big.yaml", "name: " + "x" * 2000 + "\n")
    monkeypatch.setattr(yamlfile, "MAX_BYTES", 1024)
    with pytest.raises(InputError) as err:
        load_yaml(path)
    assert str(err.value) == f"{path}: the file is 2,007 B, over the 1,024 B limit of a YAML input"


def test_python_tags_are_refused(tmp_path):
    path = _write(tmp_path, "t.yaml", "name: !!python/name:os.system x\n")
    with pytest.raises(InputError, match=r"t\.yaml:1: name: cannot read value: could not determine a constructor"):
        load_yaml(path)
    with pytest.raises(InputError, match=r"t\.yaml:1: YAML syntax error: could not determine a constructor"):
        load_file(path)
    path = _write(tmp_path, "s.yaml", "name: !!python/object/apply:os.system [ls]\n")
    with pytest.raises(InputError) as err:
        load_yaml(path)
    assert str(err.value) == (f"{path}:1: name: cannot read value: the tag "
                              "'tag:yaml.org,2002:python/object/apply:os.system' is not supported (plain "
                              "mappings and lists only)")


def test_a_bad_parts_file_of_a_topology_is_located(tmp_path):
    parts = _write(tmp_path, "extra.yaml", BOMB)
    with pytest.raises(InputError) as err:
        load_catalog([parts])
    assert str(err.value) == f"{parts}:6: {BOMB_MESSAGE}"


# --- through the commands ----------------------------------------------------------------------------

@pytest.mark.parametrize("body, line, message", [(BOMB, 6, BOMB_MESSAGE), (DEEP, 2, DEEP_MESSAGE)],
                         ids=["bomb", "deep"])
@pytest.mark.parametrize("command", ["describe", "bench", "run", "sweep", "fault"])
def test_every_command_refuses_a_bomb_or_deep_nesting_in_one_line(tmp_path, command, body, line, message):
    path = _write(tmp_path, "in.yaml", body)
    args = {"describe": ["describe", str(path)],
            "bench": ["bench", str(path), "--sizes", "1M", "--engine", "flow"],
            "run": ["run", str(path)],
            "sweep": ["sweep", str(path), "--dry-run"],
            "fault": ["describe", "teaching", "--fault", str(path)]}[command]
    start = time.perf_counter()
    err = _one_line_exit_2(runner.invoke(app, args))
    assert time.perf_counter() - start < 5.0
    assert err == f"fabricsim: {path}:{line}: {message}"


def test_no_module_loads_yaml_but_the_one_loader():
    """``grep -rn 'yaml\\.' simulator``: only hardware/yamlfile.py parses; others use node types."""
    parse = re.compile(r"yaml\.(safe_load|load|compose|full_load|unsafe_load|SafeLoader|CSafeLoader|Loader)\b")
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in (ROOT / "simulator").rglob("*.py")
                 if p.name != "yamlfile.py"
                 for n, line in enumerate(p.read_text().splitlines(), 1) if parse.search(line)]
    assert offenders == []
