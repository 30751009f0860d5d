"""Packaging: the license, the version (package and CLI), py.typed, the extras, the nvrtc marker,
the CI command, and annotations on the public functions of linalg and fft."""
import ast
import importlib
import inspect
import os
import re
from importlib import metadata

import pytest

import splitprec
from splitprec.accuracy import cli
from splitprec import fft, linalg

ROOT = os.path.dirname(os.path.dirname(__file__))


def _read(*path):
    with open(os.path.join(ROOT, *path)) as f:
        return f.read()


@pytest.fixture(scope="module")
def pyproject():
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads(_read("pyproject.toml"))


def test_license_file_is_apache_2_and_matches_pyproject(pyproject):
    text = _read("LICENSE")
    assert text.startswith("Copyright 2026 The splitprec authors\n")
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert pyproject["project"]["license"] == "Apache-2.0" and pyproject["project"]["license-files"] == ["LICENSE"]


def test_version_is_the_distributions(pyproject):
    try:
        installed = metadata.version("splitprec")
    except metadata.PackageNotFoundError:
        installed = "0+unknown"
    assert splitprec.__version__ == installed
    if installed != "0+unknown":
        assert installed == pyproject["project"]["version"]


def test_cli_prints_the_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"splitprec {splitprec.__version__}\n"


def test_py_typed_is_shipped(pyproject):
    assert os.path.isfile(os.path.join(ROOT, "splitprec", "py.typed"))
    assert "py.typed" in pyproject["tool"]["setuptools"]["package-data"]["splitprec"]


def test_extras_say_what_they_are_for(pyproject):
    extras = {name: {re.split(r"[<>=\[]", req)[0] for req in reqs}
              for name, reqs in pyproject["project"]["optional-dependencies"].items()}
    assert {"pytest", "hypothesis", "scipy", "ml_dtypes", "matplotlib", "nbclient", "ipykernel",
            "nbformat"} <= extras["test"]
    assert not {"cupy-cuda13x", "cuda-bindings", "torch"} & extras["test"]
    assert extras["kernels"] == {"cupy-cuda13x", "cuda-bindings", "nvidia-cuda-nvrtc", "nvidia-cuda-runtime"}
    assert extras["gpu"] == {"cupy-cuda13x"} and extras["gpu-cuda12"] == {"cupy-cuda12x"}


def test_ci_runs_the_readme_test_command():
    readme = _read("README.md")
    command = 'pip install -e ".[test,kernels]" && pytest'
    assert f"Run the tests:\n\n```bash\n{command}\n```" in readme
    assert _read(".ci", "run").rstrip().endswith(command)


def test_nvrtc_marker_is_registered_and_on_every_nvrtc_compile_test(pyproject):
    markers = pyproject["tool"]["pytest"]["ini_options"]["markers"]
    assert any(m.startswith("nvrtc:") for m in markers)
    compiling = []
    for name in sorted(os.listdir(os.path.join(ROOT, "tests"))):
        if not name.startswith("test_") or not name.endswith(".py"):
            continue
        for node in ast.parse(_read("tests", name)).body:
            if isinstance(node, ast.FunctionDef) and any(
                    isinstance(call, ast.Call) and getattr(call.func, "id", None) == "_nvrtc_compile"
                    for call in ast.walk(node)) and node.name.startswith("test_"):
                decorators = [ast.unparse(d) for d in node.decorator_list]
                compiling.append(node.name)
                assert "pytest.mark.nvrtc" in decorators, f"{name}::{node.name} compiles with NVRTC unmarked"
    assert len(compiling) == 6


@pytest.mark.parametrize("function", [linalg.matmul] + [getattr(fft, name) for name in fft.__all__],
                         ids=lambda f: f.__name__)
def test_public_functions_are_annotated(function):
    signature = inspect.signature(function)
    assert signature.return_annotation is not inspect.Signature.empty
    assert all(p.annotation is not inspect.Parameter.empty for p in signature.parameters.values())


# The public modules: the package, the families and layers the docs name, and the harness.
PUBLIC_MODULES = ["splitprec", "splitprec.fft", "splitprec.linalg", "splitprec.interop", "splitprec.array_api",
                  "splitprec.array_api.linalg", "splitprec.accuracy", "splitprec.split", "splitprec.formats",
                  "splitprec.dtypes", "splitprec.ozaki", "splitprec.ozaki_plan",
                  pytest.param("splitprec.dask", marks=pytest.mark.skipif(
                      importlib.util.find_spec("dask") is None, reason="needs dask (splitprec[dask])"))]


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_public_modules_list_their_public_names_only_regression(module):
    """``dir(sp.fft)`` listed ``Array``, ``Literal``, ``functools``, ``dask_layer`` and more, and
    ``dir(sp.linalg)``, ``dir(sp.dask)`` and ``dir(sp.interop)`` their imports and helpers; the
    number-system modules the docs cite (``splitprec.split.split``, ``splitprec.ozaki.COUNTS``)
    listed ``np``, ``dataclass`` and ``functools``."""
    public = importlib.import_module(module)
    names = set(dir(public))
    assert set(public.__all__) <= names and all(hasattr(public, name) for name in names)
    assert names - set(public.__all__) <= {"accuracy", "array_api"}
