"""The files of a report: markdown, HTML and JSON renderings of one ``content`` dict.

``content`` (built by :func:`accuracy.report.write`) holds ``verdict``, ``note``, ``findings``
(sentences on where schemes are not fp32/fp64 class), ``bounds_note``, ``tables`` (``(title,
header, rows, text)`` per target), ``detail_header`` and ``details`` (one row per measurement),
``sections`` (``(title, text)``), ``images`` and ``provenance`` (:mod:`accuracy.provenance`). JSON is strict: inf is written as the string
``"inf"`` and NaN as ``null``.
"""
from dataclasses import fields
import html as _html
import json
import math

from .provenance import as_text

FINDINGS_TITLE = "fp32 (fp64) class, scheme by scheme"


def _markdown_table(header, rows):
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                     + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"


def markdown(content):
    parts = ["# splitprec accuracy report\n\n",
             f"{content['note']}\n\n" if content["note"] else "",
             f"Provenance: {as_text(content['provenance'])}\n\n",
             f"{content['verdict']}\n\n## {FINDINGS_TITLE}\n\n",
             "".join(f"- {line}\n" for line in content["findings"]), f"\n{content['bounds_note']}\n"]
    parts += [f"\n## Summary: {title}\n\n" + _markdown_table(header, rows) + (f"\n{text}\n" if text else "")
              for title, header, rows, text in content["tables"]]
    parts += [f"\n![{name}]({name})\n" for name in content["images"]]
    parts += [f"\n## {title}\n\n```\n{text}\n```\n" for title, text in content["sections"]]
    parts += ["\n## Every measurement\n\n", _markdown_table(content["detail_header"], content["details"])]
    return "".join(parts)


def _html_table(header, rows):
    e = _html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html(content):
    e = _html.escape
    style = ("body{font-family:sans-serif;max-width:80em;margin:auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}img{max-width:100%}")
    provenance = "".join(f"<tr><th>{e(k)}</th><td>{e(str(v))}</td></tr>" for k, v in content["provenance"].items())
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>splitprec accuracy report"
            f"</title><style>{style}</style></head><body><h1>splitprec accuracy report</h1>"
            f"<p>{e(content['note'])}</p><h2>Provenance</h2><table>{provenance}</table>"
            f"<p><b>{e(content['verdict'])}</b></p><h2>{e(FINDINGS_TITLE)}</h2><ul>"
            + "".join(f"<li>{e(line)}</li>" for line in content["findings"])
            + f"</ul><p>{e(content['bounds_note'])}</p>"
            + "".join(f"<h2>Summary: {e(t)}</h2>{_html_table(h, r)}<p>{e(x)}</p>"
                      for t, h, r, x in content["tables"])
            + "".join(f"<img src='{e(i)}' alt='{e(i)}'>" for i in content["images"])
            + "".join(f"<h2>{e(t)}</h2><pre>{e(x)}</pre>" for t, x in content["sections"])
            + f"<h2>Every measurement</h2>{_html_table(content['detail_header'], content['details'])}</body></html>")


def _strict(value):
    """``value`` with every float made strict JSON (inf -> "inf", NaN -> None), recursively."""
    if isinstance(value, float):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else value
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    return value


def write_json(stream, results, summary, content):
    """``{"provenance", "verdict", "findings", "summary", "measurements"}``: every measurement as
    a row (its fields but the computed output, plus the scheme's target)."""
    names = [f.name for f in fields(results[0])] if results else []
    rows = [{**{n: getattr(m, n) for n in names if n != "output"}, "target": m.target} for m in results]
    json.dump(_strict({"provenance": content["provenance"], "verdict": content["verdict"],
                       "findings": content["findings"], "summary": summary, "measurements": rows}),
              stream, indent=1, allow_nan=False)
    stream.write("\n")
