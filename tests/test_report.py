"""The report command, its files, and check() on user matrices (float32 and float64 operands)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import accuracy.bounds
import accuracy.measure
from accuracy import cases, check, cli, report


def test_report_quick_runs_as_module_and_writes_every_file(tmp_path):
    out = tmp_path / "rep"
    done = subprocess.run([sys.executable, "-m", "splitprec", "report", "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=120,
                          cwd=os.path.dirname(os.path.dirname(__file__)))
    assert done.returncode == 0, done.stderr[-2000:]
    assert {"report.md", "report.html", "error_vs_k.png", "error_vs_span.png", "fp64_error_vs_k.png",
            "fp64_error_vs_span.png", "bound_tightness.png"} <= set(os.listdir(out))
    last = done.stdout.strip().splitlines()
    assert last[0].startswith("wrote ") and "worst error/bound" in done.stdout
    assert any(line.split()[2:3] == ["bf16x9"] for line in last)
    fp64_rows = [line.split() for line in last if line.split()[2:3] and line.split()[2].startswith("ozaki2")]
    assert sorted(row[2] for row in fp64_rows) == ["ozaki2_int8_adaptive"] + [f"ozaki2_int8x{n}" for n in range(12, 19)]
    assert {row[2]: row[3] for row in fp64_rows}["ozaki2_int8x14"] == "fp64"       # class column
    assert {row[2]: row[3] for row in fp64_rows}["ozaki2_int8_adaptive"] == "fp64"
    md = (out / "report.md").read_text()
    assert "All errors are within their bounds." in md
    fp64_section = md.split("## Summary: fp64 schemes")[1].split("##")[0]
    assert "DGEMM" in fp64_section and "| cpu | gemm | ozaki2_int8x14 | fp64 |" in fp64_section
    assert "| fp64_near_max_k16 | cpu | ozaki2_int8x14 |" in md
    assert "Summary: fp64 schemes" in (out / "report.html").read_text()


def test_report_selects_schemes_ops_and_sizes(tmp_path, capsys):
    status = cli.main(["report", "--quick", "--schemes", "bf16x9", "--ops", "gemm", "--sizes", "16,48",
                       "--out", str(tmp_path), "--no-plots"])
    assert status == 0
    text = capsys.readouterr().out
    assert "bf16x9" in text and "tf32x3" not in text and "fft" not in text.split("wrote")[1]
    md = (tmp_path / "report.md").read_text()
    assert "normal_k48" in md and "normal_k256" not in md


def test_report_exits_nonzero_naming_the_violated_case(tmp_path, capsys, monkeypatch):
    tiny = lambda a, b, scheme, engine="cpu", **kw: np.full(np.matmul(a, b).shape, 1e-45)
    monkeypatch.setattr(accuracy.measure, "gemm_bound", tiny)
    status = cli.main(["report", "--quick", "--schemes", "bf16", "--ops", "gemm", "--sizes", "16",
                       "--out", str(tmp_path), "--no-plots"])
    assert status == 1
    assert "bound violated: case 'normal_k16', scheme bf16" in capsys.readouterr().err
    assert "BOUND VIOLATED" in (tmp_path / "report.md").read_text()


def test_report_rejects_unknown_scheme_and_op(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["report", "--schemes", "bf16x4"])
    assert stop.value.code == 2 and "unknown split dtype 'bf16x4'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["report", "--ops", "conv"])
    assert "unknown op 'conv'" in capsys.readouterr().err


def test_report_skips_fft_with_a_message_when_splitprec_has_none(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(report, "has_fft", lambda: False)
    status = cli.main(["report", "--quick", "--schemes", "bf16x9", "--sizes", "16",
                       "--out", str(tmp_path), "--no-plots"])
    assert status == 0
    assert "fft skipped: this splitprec has no splitprec.fft" in capsys.readouterr().err


def test_summary_names_each_schemes_worst_case():
    results = report.run("quick", ["bf16x9", "tf32"], ("gemm",), sizes=[16, 33])
    rows = report.summary_rows(results)
    assert {(r["scheme"], r["op"]) for r in rows} == {("bf16x9", "gemm"), ("tf32", "gemm")}
    assert all(r["worst_case"] in {"normal_k16", "uniform_k16", "rectangular_k33"} for r in rows)
    assert all(0 < r["worst_ratio"] <= 1 for r in rows)


def test_check_tables_every_scheme_on_user_matrices():
    rng = np.random.default_rng(0)
    a, b = cases.normal(rng, (6, 40)), cases.normal(rng, (40, 5))
    result = check(a, b)
    assert [r.scheme for r in result.rows] == sorted(r.scheme for r in result.rows)
    assert len(result.rows) == 8 and all(r.ratio <= 1 for r in result.rows)
    text, md = str(result), result.to_markdown()
    assert "bf16x9" in text and "native float32" in text
    assert md.startswith("| scheme | normwise error | max error/bound | vs native fp32 | time (s) |")
    errors = {r.scheme: r.normwise for r in result.rows}
    assert errors["bf16x9"] < errors["bf16x3"] < errors["bf16"]


def test_check_flags_nonfinite_pattern_mismatch():
    exact = np.array([[np.nan, 1.0]])
    assert accuracy.measure._ratio(np.array([[1.0, 1.0]]), exact, np.ones((1, 2))) == np.inf
    assert accuracy.measure._ratio(np.array([[np.nan, 1.0]]), exact, np.ones((1, 2))) == 0


def test_gpu_vs_cpu_table_compares_engines_per_scheme():
    from dataclasses import replace
    results = report.run("quick", ["bf16x9"], ("gemm",), sizes=[16])
    shifted = [replace(m, engine="gpu", output=m.output * (1 + 2.0 ** -20), normwise=2 * m.normwise)
               for m in results]
    text = report.gpu_vs_cpu(results + shifted)
    scheme, diff, ratio = text.splitlines()[1].split()
    assert scheme == "bf16x9" and 0 < float(diff) < 2.0 ** -19 and float(ratio) == 2


@pytest.mark.gpu
def test_report_runs_the_gpu_engine_and_compares_it_with_cpu(tmp_path, capsys):
    status = cli.main(["report", "--quick", "--ops", "gemm", "--out", str(tmp_path), "--no-plots"])
    out = capsys.readouterr().out
    assert status == 0 and "GPU vs CPU engine" in out and "gpu " in out


# ---- fp64 schemes ------------------------------------------------------------------------------

FP64 = [f"ozaki2_int8x{n}" for n in range(12, 19)]


def test_report_runs_one_fp64_scheme_on_the_float64_cases(tmp_path, capsys):
    status = cli.main(["report", "--quick", "--schemes", "ozaki2_int8x14", "--ops", "gemm", "--sizes", "16,48",
                       "--out", str(tmp_path), "--no-plots"])
    assert status == 0
    text = capsys.readouterr().out
    assert "ozaki2_int8x14" in text and "ozaki2_int8x15" not in text
    md = (tmp_path / "report.md").read_text()
    assert "| fp64_normal_k48 | cpu | ozaki2_int8x14 |" in md and "| normal_k48 | cpu | tf32 |" in md
    assert "| fp64_normal_k48 | cpu | tf32 |" not in md and "| normal_k48 | cpu | ozaki2_int8x14 |" not in md


def test_fp64_schemes_within_bound_on_every_quick_case_and_dgemm_class_on_normal():
    results = report.run("quick", FP64, ("gemm", "fft"))
    assert {m.case for m in results} == {c.name for c in cases.registry("quick", target="float64")}
    assert all(m.ratio <= 1 for m in results), [(m.case, m.scheme, m.ratio) for m in results if m.ratio > 1]
    rows = {r["scheme"]: r for r in report.summary_rows(results)}
    assert set(rows) == set(FP64) and all(r["target"] == "float64" and r["op"] == "gemm" for r in rows.values())
    assert [rows[s]["class"] for s in FP64] == ["<fp64"] * 2 + ["fp64"] * 5
    # x native compares with numpy's float64 matmul (DGEMM): x14 within a few DGEMM errors, x15 below.
    assert rows["ozaki2_int8x14"]["vs_native"] < 4 and rows["ozaki2_int8x15"]["vs_native"] < 1
    assert rows["ozaki2_int8x12"]["vs_native"] > 10


def test_check_on_float64_operands_runs_the_fp64_schemes_against_dgemm():
    rng = np.random.default_rng(1)
    a, b = cases.normal(rng, (6, 300), np.float64), cases.normal(rng, (300, 5), np.float64)
    result = check(a, b)
    assert [r.scheme for r in result.rows] == ["ozaki2_int8_adaptive"] + FP64
    assert all(r.ratio <= 1 for r in result.rows)
    assert result.target == "float64" and result.rows[0].native == accuracy.measure._normwise(
        a @ b, accuracy.exact_matmul(a, b))
    assert result.to_markdown().startswith("| scheme | normwise error | max error/bound | vs native fp64 |")
    assert "native float64 matmul normwise error" in str(result)
    one = check(a, b, ["OZAKI2_INT8x14"])
    assert [r.scheme for r in one.rows] == ["ozaki2_int8x14"]


@pytest.mark.parametrize("operands, schemes, message", [
    ("float32", ["ozaki2_int8x14"], r"^check: a has dtype float32; scheme 'ozaki2_int8x14' takes float64 "
                                    r"operands \(schemes for float32 operands: bf16, "),
    ("float64", ["bf16x9"], r"^check: a has dtype float64; scheme 'bf16x9' takes float32 operands"),
    ("mixed", None, r"^check: b has dtype float32; scheme 'ozaki2_int8_adaptive' takes float64 operands"),
    ("mixed", ["tf32x3"], r"^check: a has dtype float64; scheme 'tf32x3' takes float32 operands"),
    ("int", None, r"^check: a has dtype int64; expected float32 \(or float16\) operands"),
])
def test_check_rejects_operands_of_the_other_target(operands, schemes, message, monkeypatch):
    calls = []
    monkeypatch.setattr(accuracy.measure, "exact_matmul", lambda *args: calls.append(args))
    a = np.ones((2, 3), {"float32": np.float32, "mixed": np.float64, "int": np.int64}.get(operands, np.float64))
    b = np.ones((3, 2), np.float64 if operands == "float64" else np.float32)
    with pytest.raises(TypeError, match=message):
        check(a, b, schemes)
    assert not calls                                  # rejected before the exact product is formed


def test_ratio_accepts_float64_overflow_only_where_the_bound_is_inf():
    ratio = accuracy.measure._ratio
    exact = np.array([[np.inf, 1.0]])                 # an exact product beyond float64's range
    overflowed = np.array([[False, False]])
    assert ratio(np.array([[1.7e308, 1.0]]), exact, np.array([[np.inf, 1.0]]), overflowed) == 0
    assert ratio(np.array([[1.7e308, 1.0]]), exact, np.array([[1.0, 1.0]]), overflowed) == np.inf
    from_inf_input = np.array([[True, False]])        # the same inf caused by an inf input: exact match
    assert ratio(np.array([[1.7e308, 1.0]]), exact, np.array([[np.inf, 1.0]]), from_inf_input) == np.inf
    assert ratio(np.array([[np.inf, 1.0]]), exact, np.array([[np.inf, 1.0]]), from_inf_input) == 0


def test_normwise_error_of_results_near_the_float64_range_edges_is_finite():
    normwise = accuracy.measure._normwise
    assert normwise(np.array([1e308, -1e308]), np.array([1e308 * (1 + 2.0 ** -52), -1e308])) == pytest.approx(
        2.0 ** -52 / np.sqrt(2), rel=0.01)
    assert normwise(np.array([3 * 2.0 ** -1074]), np.array([2 * 2.0 ** -1074])) == 0.5


@pytest.mark.gpu
def test_check_runs_the_fp64_schemes_on_the_gpu_engine_with_the_cpu_engines_bits():
    rng = np.random.default_rng(2)
    a, b = cases.scaled_entries(rng, (9, 200), 40), cases.normal(rng, (200, 7), np.float64)
    cpu, gpu = check(a, b, FP64), check(a, b, FP64, engine="gpu")
    assert [r.engine for r in gpu.rows] == ["gpu"] * len(FP64) and all(r.ratio <= 1 for r in gpu.rows)
    assert all(np.array_equal(g.output, c.output) for g, c in zip(gpu.rows, cpu.rows))
