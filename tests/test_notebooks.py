"""Every notebook in notebooks/ runs top to bottom on the CPU (code cells executed in order)."""
import json
import os

import matplotlib
import pytest

NOTEBOOKS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "notebooks")


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(NOTEBOOKS) if n.endswith(".ipynb")))
def test_notebook_runs_on_cpu(name, capsys):
    matplotlib.use("Agg")
    with open(os.path.join(NOTEBOOKS, name)) as f:
        notebook = json.load(f)
    namespace = {"__name__": "__notebook__"}
    for i, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            exec(compile(source, f"{name}[cell {i}]", "exec"), namespace)
    assert capsys.readouterr().out
