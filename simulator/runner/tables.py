"""Rows as tables: the one flattening of nested row values (``{"dynamic_J": {"nvlink": 1.0}}`` ->
``dynamic_J.nvlink``), shared by the CSV writer (``reports.export``) and the outcomes' ``to_pandas``."""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def flatten(row: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """One level of scalars: ``{"dynamic_J": {"nvlink": 1.0}}`` -> ``{"dynamic_J.nvlink": 1.0}``;
    lists joined with ``;`` (sets sorted first)."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        elif isinstance(value, (list, tuple, set, frozenset)):
            out[name] = ";".join(str(v) for v in (sorted(value) if isinstance(value, (set, frozenset)) else value))
        else:
            out[name] = value
    return out


def rows_frame(rows: Sequence[Mapping[str, Any]]) -> Any:
    """A pandas DataFrame, one row per row (nested values flattened); pandas is optional."""
    try:
        import pandas as pd
    except ImportError as err:  # pandas is optional
        raise ImportError("to_pandas() needs pandas: pip install pandas (to_dict() needs nothing)") from err
    return pd.DataFrame([flatten(r) for r in rows])
