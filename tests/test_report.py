"""The report command, its files, and check() on user matrices (float32 and float64 operands)."""
import json
import math
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import splitprec as sp
from splitprec import accuracy
from splitprec.accuracy import cases, check, cli, gemm_schemes, plots, report


def test_report_quick_runs_as_module_and_writes_every_file(tmp_path):
    out = tmp_path / "rep"
    done = subprocess.run([sys.executable, "-m", "splitprec", "report", "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=120,
                          cwd=os.path.dirname(os.path.dirname(__file__)))
    assert done.returncode == 0, done.stderr[-2000:]
    assert {"report.md", "report.html", "report.json", "error_vs_k.png", "error_vs_span.png",
            "fp64_error_vs_k.png", "fp64_error_vs_span.png", "fft_error_vs_n.png", "worst_cases.png",
            "bound_tightness.png"} <= set(os.listdir(out))
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("wrote ") and lines[1].startswith("engine  op    scheme")
    assert "worst x native" in lines[1] and "worst error/prob. bound" in lines[1]
    last = [line for line in lines[2:] if line.split()[:1] in (["cpu"], ["gpu"])]   # the table's rows
    assert any(line.split()[2:3] == ["bf16x9"] for line in last)
    fp64_rows = [line.split() for line in last if line.split()[2:3] and line.split()[2].startswith("ozaki2")]
    assert sorted(row[2] for row in fp64_rows) == ["ozaki2_int8_adaptive"] + [f"ozaki2_int8x{n}" for n in range(12, 19)]
    assert " ".join({row[2]: row for row in fp64_rows}["ozaki2_int8x14"][3:7]) == "fp64 within 2 binades"
    assert {row[2]: row[3] for row in fp64_rows}["ozaki2_int8_adaptive"] == "fp64"
    md = (out / "report.md").read_text()
    assert "All errors are within their bounds." in md
    assert "\n## fp32 (fp64) class, scheme by scheme\n" in md and "\nProvenance: splitprec " in md
    saved = _json(out)
    assert saved["verdict"] == "All errors are within their bounds."
    assert len(saved["measurements"]) == md.split("## Every measurement")[1].count("\n| ") - 1
    assert {r["scheme"] for r in saved["summary"]} == {row[2] for row in map(str.split, last)}
    fp64_section = md.split("## Summary: fp64 schemes")[1].split("##")[0]
    assert "DGEMM" in fp64_section and "| cpu | gemm | ozaki2_int8x14 | fp64 within 2 binades |" in fp64_section
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
    assert md.startswith("| scheme | normwise error | max error/bound | max error/prob. bound | vs native fp32 "
                         "| time (s) |")
    assert all(r.ratio <= r.ratio_probabilistic <= 1 for r in result.rows)
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
    assert "| fp64_normal_k48 | cpu | ozaki2_int8x14 |" in md and "| normal_k48 | cpu |" not in md   # no float32 rows


def test_fp64_schemes_within_bound_on_every_quick_case_and_dgemm_class_on_normal():
    results = report.run("quick", FP64, ("gemm", "fft"))
    assert {m.case for m in results} == {c.name for c in cases.registry("quick", target="float64")}
    assert all(m.ratio <= 1 for m in results), [(m.case, m.scheme, m.ratio) for m in results if m.ratio > 1]
    rows = {r["scheme"]: r for r in report.summary_rows(results)}
    assert set(rows) == set(FP64) and all(r["target"] == "float64" and r["op"] == "gemm" for r in rows.values())
    assert [rows[s]["class"] for s in FP64] == ["< fp64"] * 2 + [f"fp64 within {s} binades" for s in (2, 5, 9, 13, 17)]
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
    assert result.to_markdown().startswith("| scheme | normwise error | max error/bound | max error/prob. bound "
                                           "| vs native fp64 |")
    assert "native float64 matmul normwise error" in str(result)
    one = check(a, b, ["OZAKI2_INT8x14"])
    assert [r.scheme for r in one.rows] == ["ozaki2_int8x14"]


@pytest.mark.parametrize("operands, schemes, message", [
    ("float32", ["ozaki2_int8x14"], r"^check: a has dtype float32; scheme 'ozaki2_int8x14' takes float64 "
                                    r"operands \(schemes for float32 operands: bf16, "),
    ("float64", ["bf16x9"], r"^check: a has dtype float64; scheme 'bf16x9' takes float32 operands"),
    ("mixed", None, r"^check: b has dtype float32; scheme 'ozaki2_int8_adaptive' takes float64 operands"),
    ("mixed", ["tf32x3"], r"^check: a has dtype float64; scheme 'tf32x3' takes float32 operands"),
    ("int", ["ozaki2_int8x14"], r"^check: b has dtype float32; scheme 'ozaki2_int8x14' takes float64 operands"),
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


def _json(out):
    with open(out / "report.json") as f:
        return json.load(f)


# ---- check(): arguments ---------------------------------------------------------------------------

ALL_NAMES = ", ".join(repr(n) for n in accuracy.measure.gemm_schemes())


def test_check_takes_one_scheme_name_as_a_string_regression():
    rng = np.random.default_rng(3)
    a, b = cases.normal(rng, (4, 16)), cases.normal(rng, (16, 3))
    assert [r.scheme for r in check(a, b, "bf16x9").rows] == ["bf16x9"]
    assert [r.scheme for r in check(a, b, "3xTF32").rows] == ["tf32x3"]
    assert [r.scheme for r in check(a, b, ("bf16", "tf32")).rows] == ["bf16", "tf32"]


@pytest.mark.parametrize("schemes, error, message", [
    ("bf16x4", ValueError, rf"^check: unknown scheme 'bf16x4' in schemes; expected one of {ALL_NAMES}$"),
    (["tf32", "b"], ValueError, rf"^check: unknown scheme 'b' in schemes; expected one of {ALL_NAMES}$"),
    ([], ValueError, rf"^check: schemes is empty; expected one or more of {ALL_NAMES}$"),
    (5, TypeError, r"^check: schemes must be a scheme name or an iterable of names, got 5$"),
])
def test_check_names_schemes_in_its_errors_regression(schemes, error, message):
    a = np.ones((2, 3), np.float32)
    with pytest.raises(error, match=message):
        check(a, a.T, schemes)


@pytest.mark.parametrize("a, b, label", [(np.float32(2), np.ones((3, 2), np.float32), "a"),
                                         (np.ones((2, 3), np.float32), np.float32(2), "b")])
def test_check_of_a_scalar_names_check_and_the_operand_regression(a, b, label):
    """``check`` of 0-d input raised exact_matmul's error."""
    with pytest.raises(ValueError, match=rf"^check: {label} has shape \(\); expected a vector, a matrix"):
        check(a, b, "bf16x9")


@pytest.mark.parametrize("a_shape, b_shape, message", [
    ((3, 4), (3, 4), r"^check: inner dimensions differ: a has shape \(3, 4\), b has shape \(3, 4\)$"),
    ((2, 3, 4), (5, 4, 2), r"^check: batch dimensions do not broadcast: a has shape \(2, 3, 4\), b has shape "
                           r"\(5, 4, 2\)"),
])
@pytest.mark.parametrize("schemes", [None, "bf16x9"])
def test_check_of_shapes_that_do_not_multiply_names_check_regression(a_shape, b_shape, message, schemes):
    """``check`` of shapes that do not multiply raised ``exact_matmul: inner dimensions differ``."""
    with pytest.raises(ValueError, match=message):
        check(np.ones(a_shape, np.float32), np.ones(b_shape, np.float32), schemes)


def test_check_on_the_gpu_engine_without_a_gpu_says_so_regression(monkeypatch):
    monkeypatch.setattr(accuracy.measure, "gpu_available", lambda: False)
    a = np.ones((2, 3), np.float32)
    with pytest.raises(RuntimeError, match=r"^check: engine='gpu' but no CUDA GPU is usable \(cupy is "
                                           r"missing or sees no device\); use engine='cpu'$"):
        check(a, a.T, "bf16x9", engine="gpu")
    with pytest.raises(ValueError, match=r"^check: unknown engine 'tpu'; expected one of 'cpu', 'gpu'$"):
        check(a, a.T, "bf16x9", engine="tpu")


def test_gemm_schemes_of_float16_operands_are_the_float32_schemes_as_in_matmul_regression():
    """splitprec.matmul widens float16 operands exactly and runs the float32-target schemes."""
    import splitprec
    schemes = accuracy.measure.gemm_schemes("float16")
    assert schemes == accuracy.measure.gemm_schemes("float32") and schemes
    a = np.ones((2, 3), np.float16)
    assert all(splitprec.matmul(a, a.T, dtype=s).dtype == np.float32 for s in schemes)
    with pytest.raises(ValueError, match=r"^gemm_schemes: unknown target 'int8'; expected None, "
                                         r"'float16', 'float32', 'float64'$"):
        accuracy.measure.gemm_schemes("int8")


# ---- the summary: worst case against native, and where a scheme is not of its class -----------------

def _fake(scheme, case, normwise, native, ratio=0.5, op="gemm"):
    return accuracy.measure.Measurement(scheme, op, "cpu", normwise, ratio, native, 1e-3, case=case,
                                        ratio_probabilistic=2 * ratio)


FAKE = [_fake("bf16x9", "normal_k16", 3e-8, 6e-8), _fake("bf16x9", "subnormal_k64", 4.8e-3, 1e-7),
        _fake("bf16x9", "zeros_k16", 0.0, 0.0), _fake("tf32x3", "normal_k16", 1e-7, 6e-8),
        _fake("tf32x3", "subnormal_k64", 3e-7, 1e-7), _fake("bf16", "normal_k16", 2e-3, 6e-8, 0.8),
        _fake("bf16", "near_max_k16", 1e-3, 0.0, 0.9)]


def test_summary_shows_each_schemes_worst_error_against_native_and_its_case():
    rows = {r["scheme"]: r for r in report.summary_rows(FAKE)}
    assert rows["bf16x9"]["worst_vs_native"] == pytest.approx(4.8e4)
    assert rows["bf16x9"]["worst_vs_native_case"] == "subnormal_k64"
    assert rows["bf16x9"]["vs_native"] == 0.5                              # median on normal_* only
    assert rows["bf16"]["worst_vs_native"] == math.inf and rows["bf16"]["worst_vs_native_case"] == "near_max_k16"
    assert rows["bf16"]["worst_ratio"] == 0.9 and rows["bf16"]["worst_ratio_probabilistic"] == 1.8
    text = report.summary(FAKE).splitlines()
    assert text[0].split()[:6] == ["engine", "op", "scheme", "class", "worst", "x"]
    assert text[2].split()[2:6] == ["bf16x9", "fp32", "4.8e+04", "subnormal_k64"]


def test_class_findings_say_in_words_where_a_scheme_is_not_fp32_class():
    assert report.class_findings(FAKE) == [
        "bf16x9 (gemm, cpu engine) is NOT fp32 class on 1 of 3 cases, error above 4x SGEMM's: "
        "subnormal_k64 (4.8e+04x SGEMM).",
        "tf32x3 (gemm, cpu engine): within 4x SGEMM's error on every case.",
        "Below fp32 class by design (docs/bounds.md, section 8; gemm, cpu engine): bf16 (worst: an "
        "error where SGEMM is exact, on near_max_k16)."]


def test_fixed_fp64_schemes_are_reported_as_fp64_only_within_their_span_regression():
    """ozaki2_int8x14 reached error 1 on exp(16 N(0,1)) data: its class says "within 2 binades"
    instead of "fp64", and the findings say so instead of "NOT fp64 class"."""
    spans = [_fake("ozaki2_int8x14", "fp64_span_phi16_k256", 0.9, 1e-15, 1 - 8e-14),
             _fake("ozaki2_int8x14", "fp64_normal_k16", 2e-16, 1e-16),
             _fake("ozaki2_int8_adaptive", "fp64_span_phi16_k256", 1e-15, 1e-15),
             _fake("fp16x3", "span_phi8_k256", 1e-3, 1e-7)]
    rows = {r["scheme"]: r for r in report.summary_rows(spans)}
    assert rows["ozaki2_int8x14"]["class"] == "fp64 within 2 binades"
    assert rows["ozaki2_int8_adaptive"]["class"] == "fp64"
    assert rows["fp16x3"]["class"] == "fp32 within 25 binades"
    findings = report.class_findings(spans)
    assert not any("NOT" in line for line in findings)
    assert ("fp64 class only within an exponent span below each row's and column's largest entry, by design "
            "(docs/bounds.md, section 12; gemm, cpu engine): ozaki2_int8x14 (within 2 binades; worst: 9e+14x "
            "DGEMM, on fp64_span_phi16_k256).") in findings
    assert "ozaki2_int8_adaptive (gemm, cpu engine): within 4x DGEMM's error on every case." in findings
    assert any(line.startswith("fp32 class only within") and "fp16x3 (within 25 binades;" in line for line in findings)


def test_docs_describe_every_summary_column_regression():
    """docs/report.md described four of the summary's columns; worst x native, worst error/prob.
    bound and cases were in every table with no word on what they are."""
    page = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "report.md").read_text()
    described = set(re.findall(r"\*\*([^*]+)\*\*", page))
    headers = {header.removesuffix(" (N(0,1))") for header, _, _ in report._COLUMNS}
    assert headers - {"engine", "op", "scheme", "on case"} <= described


@pytest.mark.parametrize("ratio, text", [(1 - 8e-14, "0.99999999999992"), (0.9996, "0.9996"), (0.5, "0.5"),
                                         (1.0, "1"), (2.5e-3, "0.0025"), (math.inf, "inf"),
                                         (1.0000001, "1.0000001"), (1 + 3e-13, "1.0000000000003"), (1.5, "1.5")])
def test_summary_prints_ratios_as_plain_numbers_regression(ratio, text):
    assert report.ratio_text(ratio) == text
    assert (float(text) < 1) == (ratio < 1) and (float(text) > 1) == (ratio > 1)   # never 1 unless it is


def test_check_table_prints_ratios_below_one_as_plain_numbers_regression():
    row = _fake("ozaki2_int8x14", "", 0.5, 1e-16, 1 - 8e-14)
    result = accuracy.measure.CheckResult([row], ((2, 2), (2, 2)), "float64")
    assert "0.99999999999992" in str(result) and "| 0.99999999999992 |" in result.to_markdown()


def test_check_table_columns_stay_aligned_with_long_ratios_regression():
    """Ratios printed to 14 digits overflowed their 10-character columns, shifting every column
    after them (``print(check(a, b))`` on float64 data of a wide exponent span)."""
    rows = [_fake("ozaki2_int8x14", "", 2e-9, 1e-16, 1 - 2e-10), _fake("ozaki2_int8_adaptive", "", 1e-16, 1e-16, 0.1)]
    lines = str(accuracy.measure.CheckResult(rows, ((2, 2), (2, 2)), "float64")).splitlines()[:3]
    ends = [[match.end() for match in re.finditer(r"\S+", line.replace("vs fp64", "vs_fp64")
                                                           .replace("time s", "time_s"))] for line in lines]
    assert ends[0][1:] == ends[1][1:] == ends[2][1:]       # the numbers right-aligned under their heads


def test_report_no_longer_says_only_within_bounds_when_a_scheme_misses_its_class(tmp_path):
    report.write(FAKE, str(tmp_path), plots=False, info={"splitprec": "test"})
    md = (tmp_path / "report.md").read_text()
    findings = md.split("## fp32 (fp64) class, scheme by scheme\n\n")[1]
    assert md.index("All errors are within their bounds.") < md.index("## fp32 (fp64) class, scheme by scheme")
    assert findings.startswith("- bf16x9 (gemm, cpu engine) is NOT fp32 class on 1 of 3 cases")
    assert "bf16x9 (gemm, cpu engine) is NOT fp32 class" in (tmp_path / "report.html").read_text()


# ---- the FFT's native baseline is a float32 FFT ------------------------------------------------------

def test_fft_native_is_computed_in_single_precision_not_rounded_from_float64():
    """numpy's complex64 FFT is the float64 result rounded once; scipy.fft computes in float32."""
    x = cases.complex_normal(np.random.default_rng(4), 256)
    exact = accuracy.measure.exact_spectrum(x)
    single = accuracy.measure.single_precision_fft(x)
    rounded = np.fft.fft(x.astype(np.complex128)).astype(np.complex64)
    assert not np.array_equal(single.astype(np.complex64), rounded)
    normwise = accuracy.measure._normwise
    assert normwise(single, exact) > 2 * normwise(rounded.astype(np.complex128), exact)
    real = x.real.copy()
    assert normwise(accuracy.measure.single_precision_fft(real, "rfft"), accuracy.measure.exact_spectrum(real, "rfft")) \
        > 2 * normwise(np.fft.rfft(real.astype(np.float64)).astype(np.complex64).astype(np.complex128),
                       accuracy.measure.exact_spectrum(real, "rfft"))
    m = accuracy.measure.measure_fft(x, "bf16x9")
    assert m.native == normwise(single, exact)


# ---- provenance and JSON ------------------------------------------------------------------------------

def test_report_json_holds_provenance_and_every_row(tmp_path):
    results = report.run("quick", ["bf16x9"], ("gemm", "fft"), sizes=[16, 64])
    paths = report.write(results, str(tmp_path), plots=False)
    assert [os.path.basename(p) for p in paths] == ["report.md", "report.html", "report.json"]
    saved = _json(tmp_path)
    info = saved["provenance"]
    assert {"splitprec", "python", "numpy", "blas", "cpu", "date"} <= set(info)
    assert info["numpy"] == np.__version__ and info["python"] == sys.version.split()[0]
    if os.path.isdir(os.path.join(os.path.dirname(os.path.dirname(__file__)), ".git")) or \
            subprocess.run(["git", "rev-parse"], cwd=os.path.dirname(__file__), capture_output=True).returncode == 0:
        assert len(info["git_sha"].split("-")[0]) == 40
    assert [(r["case"], r["scheme"]) for r in saved["measurements"]] == [(m.case, m.scheme) for m in results]
    row = saved["measurements"][0]
    assert {"normwise", "ratio", "ratio_probabilistic", "outside_probabilistic", "native", "target"} <= set(row)
    assert "output" not in row
    md, page = (tmp_path / "report.md").read_text(), (tmp_path / "report.html").read_text()
    assert f"numpy {np.__version__}" in md and f"<th>numpy</th><td>{np.__version__}</td>" in page


def test_strict_json_writes_inf_as_a_string_and_nan_as_null():
    from splitprec.accuracy.report_files import _strict
    assert _strict({"a": [math.inf, -math.inf, math.nan, 1.5], "b": "x"}) == {"a": ["inf", "-inf", None, 1.5], "b": "x"}


def test_measurements_carry_the_probabilistic_ratio_at_most_the_rigorous_one_apart():
    results = report.run("quick", ["bf16x9", "tf32"], ("gemm",), sizes=[256])
    assert all(m.ratio <= m.ratio_probabilistic <= 1 and m.outside_probabilistic == 0 for m in results)
    assert all(m.ratio_probabilistic > 2 * m.ratio for m in results if (m.case, m.scheme) == ("normal_k256", "bf16x9"))


# ---- plots ------------------------------------------------------------------------------------------

@pytest.fixture
def plt():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot
    yield matplotlib.pyplot
    matplotlib.pyplot.close("all")


def test_line_plot_puts_markers_where_measured_on_a_floor_with_the_legend_outside_regression(plt):
    """Markers were shifted sideways (bf16 drawn at phi = 0.35 for phi = 1) and exact errors sat
    on an arbitrary bottom: now every marker is at its measured x, identical schemes differ by
    marker and size, and errors at or below the floor (0 included) lie on the marked floor."""
    from splitprec.accuracy import plots
    fig, ax = plt.subplots()
    same = [(1, 1e-7), (4, 0.0), (16, 3e-7)]
    floor = plots.floor_of("float32")
    plots.draw_lines(ax, {"bf16x6": same, "bf16x9": same}, [(1, 1e-7), (4, 2e-7), (16, 1e3)], False,
                     "native fp32", floor)
    first, second, native = ax.get_lines()[:3]
    assert list(first.get_xdata()) == list(second.get_xdata()) == [1, 4, 16]
    assert first.get_marker() != second.get_marker() and first.get_markersize() > second.get_markersize()
    assert list(first.get_ydata()) == [1e-7, floor, 3e-7] and list(native.get_ydata())[-1] == plots.CEILING
    assert ax.get_ylim()[0] == floor / 2 and [t.get_position()[0] for t in ax.get_xticklabels()] == [1, 4, 16]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(label.startswith("floor 9.3e-10") for label in labels)
    assert any(label.startswith("errors above 10") for label in labels)
    assert ax.get_legend().get_bbox_to_anchor().transformed(ax.transAxes.inverted()).x0 > 1


def test_span_plot_takes_only_its_k_and_fft_plot_one_x_per_length_regression():
    """fp64_error_vs_span mixed the k = 600 cases into its k = 256 line; the quick FFT plot spread
    the schemes of one length over nine x positions."""
    from splitprec.accuracy import plots
    results = [_fake("ozaki2_int8x14", f"fp64_span_phi16_k{k}", e, 1e-16) for k, e in ((256, 1e-9), (600, 1e-8))]
    for m, k in zip(results, (256, 600)):
        m.params = {"phi": 16, "k": k}
    lines, native = plots._series(results, "fp64_span_phi", "phi", {"k": 256}, "gemm")
    assert lines == {"ozaki2_int8x14": [(16, 1e-9)]} and native == [(16, 1e-16)]
    ffts = [_fake(s, "fft_normal_n64", 1e-7, 1e-7, op="fft") for s in ("bf16x6", "tf32x3", "bf16")]
    for m in ffts:
        m.params = {"n": 64}
    lines, _ = plots._series(ffts, "fft_normal_n", "n", {}, "fft")
    assert {x for points in lines.values() for x, _ in points} == {64}


def test_worst_case_figure_plots_each_schemes_worst_case_at_its_value_regression(plt):
    """The worst cases were named in the text and plotted nowhere."""
    from splitprec.accuracy import plots
    rows = report.summary_rows(FAKE)
    fig = plots.worst_case_figure(plt, rows)
    left, right = fig.axes
    names = [t.get_text() for t in left.get_yticklabels()]
    assert sorted(names) == sorted(f"{r['scheme']} (gemm)" for r in rows)
    order = sorted(rows, key=lambda r: (r["target"], r["op"], r["scheme"]), reverse=True)
    for ax, key, case in ((left, "worst_vs_native", "worst_vs_native_case"), (right, "worst_ratio", "worst_case")):
        marked = {text.xy[1]: (text.get_text(), text.xy[0]) for text in ax.texts}     # row -> (case, x)
        for y, r in enumerate(order):
            value = r[key]
            assert marked[y][0] == r[case] + (" (native exact)" if value == math.inf else "")
            if value < math.inf:
                assert marked[y][1] == pytest.approx(value)
            else:
                assert marked[y][1] > max(v[key] for v in rows if v[key] < math.inf)


def test_tightness_plot_has_separate_fp32_and_fp64_panels(plt):
    from splitprec.accuracy import plots
    results = report.run("quick", ["bf16x9", "ozaki2_int8x14"], ("gemm",), sizes=[16])
    fig = plots.tightness_figure(plt, results)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["float32-target schemes", "fp64 schemes (ozaki2_int8xN, adaptive)"]
    ticks = [[t.get_text() for t in ax.get_xticklabels()] for ax in fig.axes]
    assert "bf16x9" in ticks[0] and "ozaki2_int8x14" not in ticks[0] and ticks[1] == ["ozaki2_int8x14"]
    plt.close(fig)


# ---- GPU engine (run on a machine with a CUDA GPU) ---------------------------------------------------

@pytest.mark.gpu
def test_gpu_fft_native_is_cufft_in_single_precision():
    import cupy
    x = cases.complex_normal(np.random.default_rng(5), 256)
    m = accuracy.measure.measure_fft(x, "bf16x9", "gpu")
    cufft = cupy.asnumpy(cupy.fft.fft(cupy.asarray(x))).astype(np.complex128)
    assert m.native == accuracy.measure._normwise(cufft, accuracy.measure.exact_spectrum(x))


@pytest.mark.gpu
def test_probabilistic_bound_holds_at_its_rate_on_the_gpu_engine():
    rng = np.random.default_rng(6)
    a, b = cases.normal(rng, (64, 2048)), cases.normal(rng, (2048, 64))
    rows = check(a, b, engine="gpu").rows
    entries = 64 * 64 * len(rows)
    outside = sum(r.outside_probabilistic * 64 * 64 for r in rows)
    assert outside <= entries * (1 - accuracy.measure.CONFIDENCE) + 4 * math.sqrt(entries * 1e-3) + 1
    assert all(r.ratio <= r.ratio_probabilistic for r in rows)


def test_check_native_baseline_does_not_depend_on_the_operands_layout_regression():
    """check(A.T, A) and check of a contiguous or Fortran-ordered copy of A.T, or of a reversed
    view, compare with the same native error: SGEMM of contiguous copies."""
    a = cases.normal(np.random.default_rng(5), (256, 24))
    reversed_rows = np.ascontiguousarray(a[::-1])[::-1]
    layouts = [a.T, np.ascontiguousarray(a.T), np.asfortranarray(a.T), reversed_rows.T]
    rows = [check(x, a, ["bf16x9"]).rows[0] for x in layouts]
    assert len({r.native for r in rows}) == 1 and len({r.normwise for r in rows}) == 1
    product = np.matmul(np.ascontiguousarray(a.T), a).astype(np.float64)
    assert rows[0].native == accuracy.measure._normwise(product, accuracy.exact_matmul(a.T, a))


@pytest.mark.parametrize("shape_a, shape_b", [((7,), (7,)), ((5, 7), (7,)), ((7,), (7, 5)), ((2, 5, 7), (7,))])
def test_check_of_vectors_gives_numpy_shapes_regression(shape_a, shape_b):
    """``check`` of a vector reported the promoted shapes ``((1, 7), (7, 1))`` and kept each row's
    output in them, although ``exact_matmul`` and ``gemm_bound`` give numpy.matmul's shapes."""
    import splitprec as sp
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(shape_a).astype(np.float32), rng.standard_normal(shape_b).astype(np.float32)
    result = check(a, b, ["bf16x9", "tf32"])
    assert result.shape == (shape_a, shape_b) and str(result).endswith(f"shape {(shape_a, shape_b)}")
    for row in result.rows:
        assert np.array_equal(row.output, sp.matmul(a, b, dtype=row.scheme).astype(np.float64))


@pytest.mark.parametrize("shape_a, shape_b", [((40,), (40, 6)), ((6, 40), (40,)), ((2, 6, 40), (40, 6))])
def test_check_refuses_the_dask_operands_matmul_refuses_regression(shape_a, shape_b):
    """``check`` measured a 1-D dask operand through its promoted 2-D copy, a product sp.matmul refuses,
    and a 3-D one failed with matmul's error after the exact product: now it refuses both up front."""
    da = pytest.importorskip("dask.array")
    import splitprec as sp
    a, b = da.ones(shape_a, np.float32, chunks=20), np.ones(shape_b, np.float32)
    with pytest.raises(ValueError, match=r"^matmul: dask operands must be 2-D"):
        sp.matmul(a, b, dtype="bf16x9")
    with pytest.raises(ValueError, match=rf"^check: dask operands must be 2-D, \(m, k\) and \(k, n\), as "
                                         rf"splitprec.matmul takes them; got a of shape {re.escape(str(shape_a))}"):
        check(a, b, "bf16x9")


def test_tightness_medians_say_how_many_cases_were_exact_regression(plt):
    """The tightness medians leave exact cases out (a log axis cannot show 0), so a scheme exact on
    most cases showed a median near 1: each scheme with exact cases now says how many."""
    results = [_fake("ozaki2_int8x18", f"fp64_case{i}", 0.0 if i < 3 else 1e-17, 1e-16, 0.0 if i < 3 else 0.7)
               for i in range(5)] + [_fake("bf16x9", "normal_k16", 3e-8, 6e-8, 0.1)]
    fig = plots.tightness_figure(plt, results)
    float32, float64 = fig.axes[:2]
    assert [t.get_text() for t in float64.texts] == ["3/5\nexact"] and len(float32.texts) == 0
    assert "medians over the cases with an error" in float64.get_ylabel()
    plt.close(fig)


@pytest.mark.parametrize("plot", [p for p in plots.LINE_PLOTS if p[1] == "phi"], ids=lambda p: p[7])
def test_span_plot_tick_labels_do_not_overlap_regression(plt, plot):
    """On a linear axis up to phi = 64 the labels 0.5, 1 and 2 were drawn over one another."""
    logx = plot[8]
    phis = [0.5, 1, 2, 4, 8, 16, 32, 64]
    fig, ax = plt.subplots(figsize=(8.4, 4.2))
    plots.draw_lines(ax, {"bf16x9": [(p, 1e-7) for p in phis]}, [(p, 1e-7) for p in phis], logx, "native",
                     plots.floor_of("float32"))
    fig.canvas.draw()
    boxes = [t.get_window_extent() for t in ax.get_xticklabels()]
    assert len(boxes) == len(phis) and all(left.x1 < right.x0 for left, right in zip(boxes, boxes[1:]))
    plt.close(fig)


def test_check_and_gemm_bound_read_operands_as_matmul_does_regression():
    """``gemm_bound([[1.0]], [[2.0]], "bf16x9")`` raised "a has dtype float64" and ``check`` ran the
    fp64 schemes on lists, and refused integer arrays, where ``splitprec.matmul`` takes all of them
    as float32 data; a scheme named twice ran twice."""
    lists = ([[1.0, 2.0], [3.0, -1.0]], [[2.0], [0.5]])
    as_float32 = [np.asarray(x, np.float32) for x in lists]
    assert np.array_equal(accuracy.gemm_bound(*lists, "bf16x9"), accuracy.gemm_bound(*as_float32, "bf16x9"))
    result = accuracy.check(*lists)
    assert result.target == "float32" and [m.scheme for m in result.rows] == gemm_schemes("float32")
    integers = accuracy.check(np.ones((2, 3), np.int64), np.arange(6).reshape(3, 2), ["bf16x9", "bf16x9", "BF16X9"])
    assert [m.scheme for m in integers.rows] == ["bf16x9"] and integers.rows[0].normwise == 0
    for call in (lambda: accuracy.check([[0.1]], [[1.0]], ["bf16x9"]), lambda: sp.matmul([[0.1]], [[1.0]])):
        with pytest.raises(TypeError, match=r"a holds a value that float32 cannot hold exactly \(0.1\)"):
            call()
    fp64 = accuracy.check(np.arange(4).reshape(2, 2), np.ones((2, 2)), ["ozaki2_int8x14"])   # integers as float64
    assert fp64.target == "float64" and fp64.rows[0].normwise == 0


def test_check_counts_entries_that_overflow_float32_as_the_exact_products_do_as_right_regression():
    """A product past float32's range showed normwise inf, error/bound 0 and "nanx" against native:
    an entry whose exact value rounds to ±inf in float32 and that the scheme gives as that inf is
    the correct float32 result."""
    big = np.full((2, 3), 1e30, np.float32)
    row = accuracy.check(big, big.T.copy(), ["bf16x9"]).rows[0]
    assert row.normwise == 0 and row.native == 0 and row.ratio == 0 and np.isinf(row.output).all()
    assert "nan" not in str(accuracy.check(big, big.T.copy(), ["bf16x9"]))
