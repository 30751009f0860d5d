"""The CPU engine's measured choices, loaded from ``tuning.json`` beside this file (each entry names
the results file it came from)."""
import json
import pathlib

from ...dtypes import cheapest, dtype

TUNING = json.loads((pathlib.Path(__file__).with_name("tuning.json")).read_text())


def class_scheme(precision):
    """The scheme a precision class runs for products on the CPU engine: the fp32 class's fastest
    scheme there (``tuning.json``), ``dtypes.cheapest`` for fp64."""
    return dtype(TUNING["precision_fp32"]["scheme"]) if precision == "fp32" else cheapest(precision)
