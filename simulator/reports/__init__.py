"""Reports: tables, JSON/CSV files, traces and plots made from results after a run."""
