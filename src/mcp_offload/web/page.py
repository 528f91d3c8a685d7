"""The look of the pages the HTTP front ends serve to people (the MCP service's status page and login form, the
gateway's `/`): one style sheet and one page frame. Self-contained: no scripts, no external assets."""

from __future__ import annotations

import html

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;background:#fff}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}
table{border-collapse:collapse}td,th{padding:.25em .8em;border-bottom:1px solid #ddd;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
caption{text-align:left;color:#555}.empty{color:#555}
.ready{color:#17702a}.failed,.stopped,.error{color:#b00020}.starting,.restarting{color:#8a6d00}
input{font:inherit;padding:.3em;width:28em}
"""


def html_page(title: str, *body: str, head: str = "") -> str:
    """A whole page: `title` (escaped here), extra `head` markup (a meta refresh), and the `body` parts, one a line."""
    return "\n".join(
        [
            f"<!doctype html><html lang=en><head><meta charset=utf-8>{head}",
            f"<title>{html.escape(title)}</title>",
            f"<style>{STYLE}</style></head><body>",
            *body,
            "</body></html>",
        ]
    )
