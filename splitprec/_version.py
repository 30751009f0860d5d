"""``splitprec.__version__``: the installed distribution's version (pyproject.toml is its one source)."""
from importlib import metadata

try:
    __version__ = metadata.version("splitprec")
except metadata.PackageNotFoundError:    # run from a source tree that was never installed
    __version__ = "0+unknown"
