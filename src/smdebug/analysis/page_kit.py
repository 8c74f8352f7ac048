"""The pieces every self-contained HTML page of smdebug is made of, written once: ``smdebug report``
(cli/report.py), CreateXgboostReport's page (rules/builtin/xgboost_report.py) and the profiler report
(profiler/views/report/page.py). Each page keeps its own CSS and content; escaping, sections,
tables, images and the document shell are these.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Iterable, Sequence
from typing import Any

__all__ = ["Raw", "section", "table", "text_cell", "img", "png_img", "document"]


class Raw:
    """A table cell that is already HTML (with an optional CSS class)."""

    def __init__(self, markup: str, cls: str = "") -> None:
        self.html, self.cls = markup, cls


def section(sid: str, title: str, body: str) -> str:
    """``<section id=sid><h2>title</h2>body</section>`` (the title escaped, the body as it is)."""
    return f"<section id='{sid}'><h2>{html.escape(title)}</h2>{body}</section>"


def _class(cls: str) -> str:
    return f" class='{cls}'" if cls else ""


def text_cell(value: Any, cls: str = "") -> str:
    """A ``<td>`` holding ``value`` as text (escaped; None as ``-``), or a :class:`Raw` cell as it is."""
    if isinstance(value, Raw):
        return f"<td{_class(value.cls)}>{value.html}</td>"
    return f"<td{_class(cls)}>{html.escape('-' if value is None else str(value))}</td>"


def table(
    headers: Sequence[Any] | None,
    rows: Iterable[Sequence[Any]],
    *,
    tid: str | None = None,
    cell: Callable[[Any], str] = text_cell,
    first_cls: str = "",
) -> str:
    """A table: a header row when ``headers`` has a non-empty entry, then one row per item of
    ``rows``, each value made a cell by ``cell`` (default :func:`text_cell`); ``first_cls`` is the
    CSS class of the first column's cells and heading."""
    head = ""
    if headers and any(headers):
        head = "".join(
            f"<th{_class(first_cls if i == 0 else '')}>{html.escape(str(h))}</th>" for i, h in enumerate(headers)
        )
        head = f"<thead><tr>{head}</tr></thead>"

    def row(r: Sequence[Any]) -> str:
        if not first_cls:
            return "".join(cell(v) for v in r)
        return "".join(
            text_cell(v, first_cls) if i == 0 and not isinstance(v, Raw) else cell(v) for i, v in enumerate(r)
        )

    body = "".join(f"<tr>{row(r)}</tr>" for r in rows)
    ident = f" id='{tid}'" if tid else ""
    return f"<table{ident}>{head}<tbody>{body}</tbody></table>"


def img(src: str, alt: str, cls: str = "") -> str:
    """An ``<img>`` (``src`` a URL or a ``data:`` URI; ``alt`` escaped)."""
    return f"<img{_class(cls)} alt='{html.escape(alt)}' src='{src}'>"


def png_img(png: bytes, alt: str, cls: str = "") -> str:
    """A PNG inlined as a ``data:`` URI: the page needs no other file."""
    return img("data:image/png;base64," + base64.b64encode(png).decode("ascii"), alt, cls)


def document(title: str, body: str, css: str, script: str = "") -> str:
    """The whole page: one file, its style (and script) inline, nothing fetched from the network."""
    return (
        f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{css}</style></head>\n<body>{body}{script}</body></html>\n"
    )
