"""Every shipped scenario, every validate entry and a grid of bench requests, run through the CLI,
their numbers written to one JSON file: two checkouts' digests compared show whether a refactor
changed any result (issue 26: "results unchanged, to the digit").

    python3 benchmarks/results_digest.py OUT.json            # this checkout
    python3 benchmarks/results_digest.py --diff A.json B.json

Wall time here (2 cores): about 2-4 minutes; scenarios run with --json -.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP_SCENARIOS = {"sweep_credit_buffer", "sweep_rack_scale"}  # sweep files: fabricsim sweep
BENCH_GRID = [
    ["hgx_h100", "--sizes", "1K,1M,256M", "--engine", "flow"],
    ["hgx_h100", "--op", "all_gather", "--sizes", "64M", "--engine", "packet"],
    ["hgx_h100", "--op", "alltoall", "--sizes", "4M", "--engine", "packet", "--arbiter", "islip"],
    ["hgx_h100", "--op", "all_reduce", "--sizes", "4M", "--engine", "packet", "--queueing", "fifo"],
    ["hgx_h100", "--sizes", "32M", "--dtype", "half", "--timing", "single"],
    ["dgx_a100", "--op", "reduce_scatter", "--sizes", "1M:64M", "-f", "8"],
    ["gb200_nvl72", "--sizes", "1M,1G", "--engine", "flow"],
    ["gb200_nvl72", "--sizes", "16M", "--engine", "packet"],
    ["gb200_nvl72_x8_ib", "--gpus", "128", "--per-rack", "64", "--sizes", "1G", "--engine", "flow"],
    ["hopper_ib_rack", "--op", "broadcast", "--sizes", "64M", "--root", "3"],
    ["pcie_server", "--op", "h2d", "--sizes", "1G"],
    ["gb200_nvl72", "--sizes", "256M", "--engine", "flow", "--fault", "topologies/faults/nvl72_tray_down.yaml"],
    ["teaching", "--sizes", "1M", "--engine", "packet", "--arbiter", "oldest_first"],
    ["hgx_h100", "--sizes", "64M", "--fault", "degraded_width:from=hgx.gpu0,to=hgx.nvsw0,lanes=1",
     "--engine", "flow"],
]


def _cli(args: list[str]) -> dict:
    from typer.testing import CliRunner

    from simulator.cli.app import _register, app

    _register()
    got = CliRunner().invoke(app, args)
    if got.exit_code not in (0, 1) or (got.exit_code == 1 and args[0] != "validate"):
        return {"exit": got.exit_code, "output": got.output[-400:]}
    return json.loads(got.stdout) if "--json" in args else {"output": got.stdout}


def digest() -> dict:
    out: dict = {"scenarios": {}, "bench": {}, "sweeps": {}, "labs": {}, "validate": None}
    for path in sorted((ROOT / "scenarios").glob("*.yaml")):
        if path.stem in SKIP_SCENARIOS:
            continue
        command = "serve" if path.stem.startswith("serving_") else "run"
        print(command, path.stem, file=sys.stderr, flush=True)
        out["scenarios"][path.stem] = _cli([command, str(path), "--json", "-"])
    for args in BENCH_GRID:
        print("bench", *args, file=sys.stderr, flush=True)
        out["bench"][" ".join(args)] = _cli(["bench", *args, "--json", "-"])
    for path in sorted((ROOT / "scenarios").glob("sweep_*.yaml")):
        print("sweep", path.stem, file=sys.stderr, flush=True)
        out["sweeps"][path.stem] = _cli(["sweep", str(path), "--json", "-"])
    for lab in (["lab", "arbitration"], ["lab", "hol"], ["lab", "switch"], ["lab", "credits"], ["lab", "retry"]):
        print(*lab, file=sys.stderr, flush=True)
        out["labs"][" ".join(lab)] = _cli([*lab, "--json"])
    print("validate", file=sys.stderr, flush=True)
    out["validate"] = _cli(["validate", "--json"])
    return out


def _diff(a, b, path="") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        lines = []
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                lines.append(f"{path}/{k}: only in {'B' if k not in a else 'A'}")
            else:
                lines += _diff(a[k], b[k], f"{path}/{k}")
        return lines
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} vs {len(b)} items"]
        return [line for i, (x, y) in enumerate(zip(a, b)) for line in _diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} vs {b!r}"]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--diff"]:
        a, b = (json.loads(Path(p).read_text()) for p in argv[1:3])
        lines = _diff(a, b)
        print("\n".join(lines[:200]) or "identical")
        return 1 if lines else 0
    Path(argv[0]).write_text(json.dumps(digest(), indent=1, sort_keys=True, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
