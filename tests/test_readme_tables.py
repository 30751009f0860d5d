"""The measured tables of README.md and docs/{gemm,fft,fp64}.md are the ones
``benchmarks/readme_table.py`` writes from the newest results files: nobody edits the numbers by
hand, and a new run without regenerated pages fails."""
import importlib.util
import json
import pathlib
import shutil

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
spec = importlib.util.spec_from_file_location("readme_table", ROOT / "benchmarks" / "readme_table.py")
readme_table = importlib.util.module_from_spec(spec)
spec.loader.exec_module(readme_table)


def _copy_pages(tmp_path):
    for page in {page for pages in readme_table.PAGES.values() for page in pages}:
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / page, tmp_path / page)


def test_tables_in_readme_and_docs_are_the_newest_results(tmp_path):
    _copy_pages(tmp_path)
    readme_table.main(["--write", str(tmp_path)])
    for page in {page for pages in readme_table.PAGES.values() for page in pages}:
        assert (tmp_path / page).read_text() == (ROOT / page).read_text(), f"{page} is stale"
    assert "<!-- gemm-table:start -->\n8192x8192x8192, N(0,1) inputs, NVIDIA H200" in (ROOT / "docs/gemm.md").read_text()
    assert "<!-- fft-table:start -->\nNVIDIA H200, " in (ROOT / "docs/fft.md").read_text()
    assert "<!-- fp64-table:start -->\nNVIDIA H200, " in (ROOT / "docs/fp64.md").read_text()
    for page in ("README.md", "docs/kernels.md"):
        assert "<!-- shapes-table:start -->\nNVIDIA H200, per shape the newest of `gemm-shapes-" in (ROOT / page).read_text()


def test_headline_rows_carry_class_gemm_and_fft_figures():
    paths = {"gemm": RESULTS / "gemm-2026-12-01-6dc3e99.json", "fft": RESULTS / "fft-2026-12-01-0b24d48.json",
             "fp64": RESULTS / "gemm-fp64-2026-11-30-d6496df.json"}
    text = readme_table.tables(paths)["headline"]
    assert "| `tf32x3`† | 2 tf32, 3 | fp32 | 108.6 (2.13x) | 1.2e-06 | 203 (0.36x) | 1.9e-07 |" in text
    assert "| `bf16`† | 1 bf16, 1 | < fp32 (8-bit split) | 563.6 (11.04x) | 2.4e-03 | — | — |" in text
    assert "| `fp16x3`† | 2 fp16, 3 | fp32 within 25 binades |" in text
    assert "| cuBLAS SGEMM, cuFFT | | fp32 | 51.0 (1.00x) | 1.6e-06 | 74 (1.00x) | 1.9e-07 |" in text
    assert ("| `ozaki2_int8x14` (float64) | 14 int8, 14 | fp64 within 2 binades | 67.2 (1.22x DGEMM) | 2.9e-15 "
            "| — | — |") in text
    assert "(58.8 TFLOP/s) `ozaki2_int8x14` would be 1.14x." in text      # the settled DGEMM of the GEMM run


def test_headline_says_which_rows_predate_the_range_work_regression(tmp_path):
    """Results measured before 8f93165 (power-of-two scaling of every float32 scheme and FFT line)
    are marked, with the figures that predate it; a GEMM run after it clears the GEMM marks."""
    paths = {"gemm": RESULTS / "gemm-2026-12-01-6dc3e99.json", "fft": RESULTS / "fft-2026-12-01-0b24d48.json",
             "fp64": RESULTS / "gemm-fp64-2026-11-30-d6496df.json"}
    text = readme_table.tables(paths)["headline"]
    assert "| `fp16` | 1 fp16, 1 |" in text and "| `bf16x9`† | 3 bf16, 9 |" in text    # fp16 scaled already
    assert ("Rows marked † predate the range work (power-of-two scaling of every float32 scheme's rows and "
            "columns and of every FFT line, commit 8f93165, 2026-12-01) and are not re-measured yet: "
            "`tf32x3` (GEMM and FFT), `bf16x6` (GEMM and FFT), `bf16x9` (GEMM), `fp16x3` (FFT),") in text
    later = json.loads(paths["gemm"].read_text())
    later["date"] = "2026-12-02T00:00:00Z"
    (tmp_path / "gemm.json").write_text(json.dumps(later))
    text = readme_table.tables({**paths, "gemm": tmp_path / "gemm.json"})["headline"]
    assert "| `bf16x9` | 3 bf16, 9 |" in text and "| `tf32x3`† |" in text
    assert "are not re-measured yet: `tf32x3` (FFT), `bf16x6` (FFT), `fp16x3` (FFT)." in text


def test_fp64_table_has_every_size_and_the_exact_reference_errors():
    text = readme_table.fp64_table(json.loads((RESULTS / "gemm-fp64-2026-11-30-d6496df.json").read_text()))
    assert "| 8192 | 55.2 | 63.3 (1.15) | 60.6 (1.10) | 67.2 (1.22) | 54.3 (0.98) | 50.6 (0.92) |" in text
    assert "| 1.24e-15 | 4.65e-14 | 2.90e-15 | 3.06e-16 | 2.96e-17 |" in text


def test_fft_table_rows_carry_ratio_error_and_plan():
    path = RESULTS / "fft-2026-12-01-c54afb6.json"
    text = readme_table.fft_table(json.loads(path.read_text()))
    assert ("| fft | 4096 × 4096 | 73, 1.9e-07 | 145 (0.51), 9.4e-08 | 204 (0.36), 1.9e-07 | 256 (0.29), 2.0e-07 "
            "| 194 (0.43) |") in text
    assert "| fft (3 launches) | 16777216 × 1 |" in text and "| fft (Bluestein) | 4095 × 4097 |" in text
    assert "| rfft (3 launches) | 16777216 × 1 |" in text
    older = readme_table.fft_table(json.loads((path.parent / "fft-2026-12-01-27c8f64.json").read_text()))
    assert "| 144 (0.51), 9.4e-08 | 201 (0.37), 1.9e-07 |  | 182 (0.45) |" in older     # a run without fp16x3


def test_a_results_file_named_replaces_the_newest_of_its_kind(capsys):
    readme_table.main([str(RESULTS / "fft-2026-12-01-27c8f64.json")])
    assert "git 27c8f64 (`benchmarks/fft.py`)" in capsys.readouterr().out


def test_readme_table_refuses_a_page_without_markers(tmp_path):
    _copy_pages(tmp_path)
    (tmp_path / "docs" / "gemm.md").write_text("no tables here\n")
    with pytest.raises(ValueError, match="has no <!-- gemm-table:start -->"):
        readme_table.main(["--write", str(tmp_path)])
