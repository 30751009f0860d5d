"""``splitprec report`` argument checks: --out, --sizes, --force, --schemes and --help."""
import json
import os
import re

import pytest

from splitprec.accuracy import cli, gemm_schemes, report


@pytest.fixture
def suite_never_runs(monkeypatch):
    """Fail the test if the suite starts: these errors must come before any measurement."""
    def refuse(*args, **kwargs):
        raise AssertionError("the suite ran")
    monkeypatch.setattr(report, "run", refuse)


def _usage_error(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2
    return err.strip().splitlines()[-1]


def test_out_naming_an_existing_file_fails_before_the_suite_regression(tmp_path, capsys, suite_never_runs):
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    line = _usage_error(["report", "--quick", "--out", str(target)], capsys)
    assert line == (f"splitprec report: error: --out {str(target)!r} is an existing file; expected a "
                    f"folder (created if missing)")
    assert target.read_text() == "mine"


def test_out_in_an_unwritable_place_fails_before_the_suite_regression(tmp_path, capsys, suite_never_runs):
    blocker = tmp_path / "file"
    blocker.write_text("")
    out = blocker / "report"                          # a folder below a file: cannot be made, even as root
    line = _usage_error(["report", "--quick", "--out", str(out)], capsys)
    assert line.startswith(f"splitprec report: error: --out {str(out)!r} is not writable: ")


@pytest.mark.parametrize("sizes, shown", [("-5", "-5"), ("0", "0"), ("16,0", "0"), ("16,abc", "'abc'")])
def test_sizes_must_be_positive_integers_regression(sizes, shown, capsys, suite_never_runs):
    line = _usage_error(["report", "--quick", "--sizes", sizes], capsys)
    assert line == f"splitprec report: error: argument --sizes: sizes must be positive integers, got {shown}"


def test_existing_report_is_refused_unless_forced_regression(tmp_path, capsys, monkeypatch):
    (tmp_path / "report.md").write_text("an earlier report")
    monkeypatch.setattr(report, "run", lambda *a, **k: (_ for _ in ()).throw(AssertionError("the suite ran")))
    line = _usage_error(["report", "--quick", "--out", str(tmp_path)], capsys)
    assert line == (f"splitprec report: error: --out {str(tmp_path)!r} already holds a report (report.md); "
                    f"pass --force to overwrite it, or choose another --out")
    monkeypatch.undo()
    for flag in ("--force", "--overwrite"):
        status = cli.main(["report", "--quick", "--schemes", "bf16x9", "--ops", "gemm", "--sizes", "16",
                           "--out", str(tmp_path), "--no-plots", flag])
        assert status == 0 and (tmp_path / "report.md").read_text().startswith("# splitprec accuracy report")


def test_help_names_force_and_the_file_to_open(capsys):
    with pytest.raises(SystemExit):
        cli.main(["report", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--force, --overwrite overwrite a report already in --out" in text
    assert "report.html (open this)" in text


@pytest.mark.parametrize("asked", ["bf16x9,tf32x3", "ozaki2_int8_adaptive", "bf16x9,bf16x9,tf32",
                                   "tf32,ozaki2_int8_adaptive"])
def test_schemes_runs_exactly_the_schemes_asked_for_regression(asked, tmp_path, capsys):
    """The tracked-bounds section ran on bf16x9 whatever --schemes asked for."""
    status = cli.main(["report", "--quick", "--schemes", asked, "--ops", "gemm", "--sizes", "16",
                       "--out", str(tmp_path), "--no-plots"])
    assert status == 0
    rows = json.loads((tmp_path / "report.json").read_text())["measurements"]
    assert {row["scheme"] for row in rows} == set(asked.split(","))
    printed = capsys.readouterr()
    assert "added" not in printed.err
    float32 = [name for name in dict.fromkeys(asked.split(",")) if name in gemm_schemes("float32")]
    for text in (printed.out, (tmp_path / "report.md").read_text()):
        assert re.findall(r"^Tracked error bounds \((\w+),", text, re.MULTILINE) == float32
        left_out = ("\nTracked error bounds: left out; tracked arrays hold float32-target schemes and "
                    f"none was asked for ({asked})\n")
        assert (left_out in text) == (not float32)


def test_help_lists_every_bounded_scheme_the_adaptive_one_included_regression(capsys):
    with pytest.raises(SystemExit):
        cli.main(["report", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert all(name in text for name in gemm_schemes())
    assert "ozaki2_int8_adaptive" in text


def test_report_files_land_in_a_new_folder(tmp_path):
    out = tmp_path / "a" / "b"
    assert cli.main(["report", "--quick", "--schemes", "bf16", "--ops", "gemm", "--sizes", "16",
                     "--out", str(out), "--no-plots"]) == 0
    assert set(os.listdir(out)) == {"report.md", "report.html", "report.json"}


@pytest.mark.parametrize("argv, message", [
    (["--quick", "--level", "full"], "--quick is --level quick; got --level full too (give one of them)"),
    (["--schemes", "nope"], "argument --schemes: unknown"),
])
def test_conflicting_level_and_unknown_schemes_are_usage_errors_regression(argv, message, capsys, suite_never_runs):
    """``--quick --level full`` ran the quick suite silently; an unknown scheme's error did not name
    --schemes as the other options' errors name theirs."""
    assert _usage_error(["report", *argv], capsys).startswith(f"splitprec report: error: {message}")


def test_a_selection_of_no_case_is_a_usage_error_regression(tmp_path, capsys):
    """``--schemes ozaki2_int8x14 --ops fft`` ran no case, exited 0 and said every error was within its
    bound."""
    line = _usage_error(["report", "--quick", "--schemes", "ozaki2_int8x14", "--ops", "fft",
                         "--out", str(tmp_path), "--no-plots"], capsys)
    assert line.startswith("splitprec report: error: the schemes, ops and sizes asked for select no case")


def test_engines_given_twice_run_once_and_exact_cases_print_as_such_regression(tmp_path, capsys):
    """``--engines cpu,cpu`` ran every case twice; a scheme exact on every case, as native is, printed
    "nan" as its ratio to native."""
    assert cli.main(["report", "--quick", "--schemes", "bf16x6", "--ops", "rfft", "--sizes", "1",
                     "--engines", "cpu,cpu", "--out", str(tmp_path), "--no-plots"]) == 0
    rows = json.loads((tmp_path / "report.json").read_text())["measurements"]
    assert len(rows) == len({(row["case"], row["engine"]) for row in rows})
    summary = capsys.readouterr().out
    assert "nan" not in summary and "both exact" in summary
