"""``benchmarks/results/INDEX.md`` lists exactly the files beside it, and every results file the docs
cite exists: a new result without its index line, or a deleted one still indexed or cited, fails."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
INDEX = RESULTS / "INDEX.md"
INDEXED_NAME = re.compile(r"`([\w.-]+\.(?:json|log|txt))`")
CITED_NAME = re.compile(r"(?<![\w.{,-])((?:cpu|fft|gemm|gpu|host|ncu|report|row)-[\w-]*\.(?:json|log|txt))")
CITING = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
          ROOT / "splitprec" / "engines" / "cuda" / "tuning.json"]


def indexed():
    return set(INDEXED_NAME.findall(INDEX.read_text()))


def stored():
    return {p.name for p in RESULTS.iterdir() if p.name != INDEX.name}


def test_index_lists_every_results_file():
    assert sorted(stored() - indexed()) == []


def test_index_names_only_existing_files():
    assert sorted(indexed() - stored()) == []


def test_cited_results_files_exist():
    cited = {(path.relative_to(ROOT).as_posix(), name)
             for path in CITING for name in CITED_NAME.findall(path.read_text())}
    assert len(cited) > 50
    assert sorted((source, name) for source, name in cited if name not in stored()) == []


def test_names_are_found_in_backticks_and_in_paths():
    """The patterns themselves: a backticked name counts for the index, a bare or path-prefixed name
    for the citations, and a shortened ``-<sha>.json`` or a ``{a,b}`` group is not a name."""
    assert INDEXED_NAME.findall("`gemm-2026-12-01-6dc3e99.json` and `splitprec/x/tuning.json`") == [
        "gemm-2026-12-01-6dc3e99.json"]
    text = ("`benchmarks/results/fft-parts-2026-12-01-0b24d48.log`, `gpu-tests-fft16-0b24d48.log`, "
            "`-7ea9a13.json`, `fft-2026-11-30-{e2f2403,bd7e3a7}.json`, `tuning.json`")
    assert CITED_NAME.findall(text) == ["fft-parts-2026-12-01-0b24d48.log", "gpu-tests-fft16-0b24d48.log"]
