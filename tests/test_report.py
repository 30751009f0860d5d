"""The report command, its files, and check() on user matrices."""
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
    assert {"report.md", "report.html", "error_vs_k.png", "error_vs_span.png",
            "bound_tightness.png"} <= set(os.listdir(out))
    last = done.stdout.strip().splitlines()
    assert last[0].startswith("wrote ") and "worst error/bound" in done.stdout
    assert any(line.split()[2:3] == ["bf16x9"] for line in last)
    assert "All errors are within their bounds." in (out / "report.md").read_text()


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
