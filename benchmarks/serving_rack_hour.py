"""Wall time of ``fabricsim serve``'s whole path on one GB200 NVL72 rack: one hour of a 20 requests/s
Poisson trace (72,000 requests), and how it grows with the request rate (issue 25's target: the
hour in 60 s or less on 2 cores).

Everything a serving run does is timed: the scenario planned, each pool's collectives simulated on
the fabric (flow engine) at every size an iteration asks, the requests drawn, nine TP8 instances of
Llama-3-70B scheduled (vLLM-style continuous batching, each iteration costed by the kernel model,
cached by shape), and the summary. Lengths: prompts lognormal of mean 1,500 tokens, outputs of mean
300 (sigma 0.8), as the shipped scenario.

    python benchmarks/serving_rack_hour.py [--hours 1] [--rates 20,40,80]

Measured here (2 cores, Python 3.11), one hour each: 20 req/s (72,000 requests) 17.9 s (0.1 s of
planning, 17.8 s of serving: 248 us per request); 40 req/s 26.5 s (181 us per request); 80 req/s
45.8 s (155 us per request). Wall time grows more slowly than the rate: fuller batches mean fewer
iterations per request, and their shapes repeat more (the cost cache hits).
"""

from __future__ import annotations

import argparse
import tempfile
import textwrap
import time
from pathlib import Path

from simulator.runner.serve import ServeRequest, plan_serve, run_serve

ROOT = Path(__file__).resolve().parents[1]

SCENARIO = """\
    name: one NVL72 rack, one hour
    topologies: [{root}/topologies/gb200_nvl72.yaml]
    model: llama-3-70b
    load:
      arrival: poisson
      rates: [{rate}]
      duration: {seconds} s
      prompt_tokens: {{lognormal: {{mean: 1500, sigma: 0.8}}}}
      output_tokens: {{lognormal: {{mean: 300, sigma: 0.8}}}}
    slo: {{ttft: 2 s, tpot: 50 ms}}
    deployments:
      - {{name: 9 x TP8, tp: 8}}
"""


def one(rate: float, seconds: float, folder: Path) -> tuple[float, float, dict]:
    path = folder / f"rate{rate:g}.yaml"
    path.write_text(textwrap.dedent(SCENARIO.format(root=ROOT, rate=rate, seconds=seconds)))
    t0 = time.perf_counter()
    planned = plan_serve(ServeRequest(str(path)))
    t1 = time.perf_counter()
    out = run_serve(planned)
    return t1 - t0, time.perf_counter() - t1, out.rows[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--rates", default="20,40,80")
    args = parser.parse_args()
    seconds = args.hours * 3600
    print(f"{'rate (req/s)':>12} {'requests':>9} {'plan (s)':>9} {'run (s)':>8} {'us/request':>11} "
          f"{'TTFT p50 (ms)':>13} {'TPOT p50 (ms)':>13}")
    with tempfile.TemporaryDirectory() as folder:
        for rate in (float(r) for r in args.rates.split(",")):
            plan_s, run_s, row = one(rate, seconds, Path(folder))
            n = row["requests"]
            print(f"{rate:>12g} {n:>9,} {plan_s:>9.1f} {run_s:>8.1f} {1e6 * run_s / n:>11.0f} "
                  f"{row['ttft_p50_ms']:>13.1f} {row['tpot_p50_ms']:>13.2f}", flush=True)


if __name__ == "__main__":
    main()
