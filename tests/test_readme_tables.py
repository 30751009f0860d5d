"""The README's measured tables are the ones ``benchmarks/readme_table.py`` writes from the newest
results files: nobody edits the numbers by hand, and a new run without a regenerated README fails."""
import importlib.util
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("readme_table", ROOT / "benchmarks" / "readme_table.py")
readme_table = importlib.util.module_from_spec(spec)
spec.loader.exec_module(readme_table)


def test_readme_tables_are_the_newest_results(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text((ROOT / "README.md").read_text())
    readme_table.main(["--readme", str(readme)])
    assert readme.read_text() == (ROOT / "README.md").read_text()
    assert "<!-- gemm-table:start -->\n8192x8192x8192, N(0,1) inputs, NVIDIA H200" in readme.read_text()
    assert "<!-- fft-table:start -->\nNVIDIA H200, " in readme.read_text()


def test_fft_table_rows_carry_ratio_error_and_plan():
    path = ROOT / "benchmarks" / "results" / "fft-2026-12-01-c54afb6.json"
    text = readme_table.fft_table(json.loads(path.read_text()))
    assert ("| fft | 4096 × 4096 | 73, 1.9e-07 | 145 (0.51), 9.4e-08 | 204 (0.36), 1.9e-07 | 256 (0.29), 2.0e-07 "
            "| 194 (0.43) |") in text
    assert "| fft (3 launches) | 16777216 × 1 |" in text and "| fft (Bluestein) | 4095 × 4097 |" in text
    assert "| rfft (3 launches) | 16777216 × 1 |" in text
    older = readme_table.fft_table(json.loads((path.parent / "fft-2026-12-01-27c8f64.json").read_text()))
    assert "| 144 (0.51), 9.4e-08 | 201 (0.37), 1.9e-07 |  | 182 (0.45) |" in older     # a run without fp16x3


def test_readme_table_refuses_a_file_without_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("no tables here\n")
    with pytest.raises(ValueError, match="has no <!-- gemm-table:start -->"):
        readme_table.main(["--readme", str(readme)])
