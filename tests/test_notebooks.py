"""Every notebook in notebooks/ is committed executed top to bottom, and runs again, through a real
Jupyter kernel on the CPU, without an error (a cell that raises, e.g. a failed assert, fails CI)."""
import os
import pathlib

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT_S = 120


def _code_cells(notebook):
    return [c for c in notebook.cells if c.cell_type == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_with_outputs_in_execution_order(path):
    cells = _code_cells(nbformat.read(path, as_version=4))
    assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1))
    outputs = [o for c in cells for o in c.outputs]
    assert outputs and not [o for o in outputs if o.output_type == "error"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_on_cpu_through_a_kernel(path):
    notebook = nbformat.read(path, as_version=4)
    env = dict(os.environ, MPLBACKEND="module://matplotlib_inline.backend_inline",
               PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    client = nbclient.NotebookClient(notebook, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute(env=env)            # raises CellExecutionError on the first cell that fails
    assert any(o.get("name") == "stdout" for c in _code_cells(notebook) for o in c.outputs)


def test_every_notebook_is_listed_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    assert [p.name for p in NOTEBOOKS if f"(notebooks/{p.name})" not in readme] == []
