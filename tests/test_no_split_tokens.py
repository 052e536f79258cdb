"""Every table of these commands, at 60, 80, 100 and 120 columns, keeps each word whole (issue 27,
item 1): a token of the unwrapped output (a number, a name, an algo/proto/ch/engine label) is either
in the narrow output intact or not at all (its column was dropped), never cut across two lines."""

import re
import subprocess
import sys

import pytest

COMMANDS = [
    "run scenarios/paged_kv_transfer.yaml",
    "run scenarios/tp_decode.yaml",
    "describe gb200_nvl72",
    "lab hol",
    "bench hgx_h200 --gpus 8 --sizes 8,1M,1G --engine flow",
    "compare gb200_nvl72 hgx_h100 --op all_reduce --sizes 1M,64M --gpus 8 --engine flow",
    "sweep scenarios/sweep_credit_buffer.yaml --no-cache --workers 1",
]
BOX = re.compile(r"[│┃┏┓┗┛┡┩┠┨━─┼╇╈┳┻┬┴┌┐└┘├┤═]+")


def _run(command: str, width: int) -> str:
    env = {"COLUMNS": str(width), "PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"}
    out = subprocess.run([sys.executable, "-m", "simulator", *command.split()], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _cells(text: str) -> set[str]:
    """The words in table rows (lines drawn with box characters or in a frameless table's columns)."""
    words = set()
    for line in text.splitlines():
        if "│" in line or "┃" in line:
            words.update(w for w in BOX.sub(" ", line).split() if len(w) >= 4)
    return words


@pytest.mark.parametrize("command", COMMANDS)
def test_no_token_is_split_across_lines(command):
    wide = _cells(_run(command, 1000))
    for width in (60, 80, 100, 120):
        text = _run(command, width)
        assert max(len(line) for line in text.splitlines()) <= width, (command, width)
        flat = BOX.sub(" ", text)
        present = set(flat.split())
        for token in wide:
            if token in present or not any(ch.isalnum() for ch in token):
                continue
            head = token[: max(3, (len(token) + 1) // 2)]
            cut = [w for w in present if (w == head or (w.startswith(head) and token.startswith(w)))
                   and w not in wide]  # a piece that is a whole value of its own (3.17 beside 3.171) is no cut
            assert not cut, f"{command} at {width}: {token!r} appears cut as {cut[0]!r}"
