"""The CUDA engines' measured choices, loaded from ``tuning.json`` beside this file (each entry
names the results file it came from)."""
import json
import pathlib

TUNING = json.loads((pathlib.Path(__file__).with_name("tuning.json")).read_text())
