"""fabricsim's version: the one definition (``pyproject.toml`` reads it; result caches and
calibration files record it). A leaf module, so that any layer may import it without importing
the package's lazy API."""

__version__ = "0.1.0"
