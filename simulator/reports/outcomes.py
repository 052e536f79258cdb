"""Outcomes completed with their words: the one step between ``runner`` and what ``fabricsim``
prints or ``simulator.api`` returns, so that the two agree."""

from __future__ import annotations

from dataclasses import replace

from simulator.reports.scenario_text import comparison_summary
from simulator.runner.scenarios import ScenarioOutcome


def summarized(outcome: ScenarioOutcome) -> ScenarioOutcome:
    """The outcome with its comparison paragraph (``reports.scenario_text.comparison_summary``;
    empty for one system)."""
    return replace(outcome, summary=comparison_summary(outcome.systems))
