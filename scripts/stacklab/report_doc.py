"""The report as a list of blocks, written out twice: as Markdown (report.md, figures linked by
relative path) and as one self-contained HTML page (report.html: inline CSS, every figure embedded
as a base64 PNG data URI, no network). Used by report.py.

    doc = Doc(); doc.h(1, "Title"); doc.p("text with `code` and **bold**")
    doc.table(["a", "b"], [["1", ["line 1", "line 2"]]]); doc.figure("figures/x.png", "caption")
    doc.markdown(); doc.html(root)
Not here: what the report says (report.py).
"""
import base64
import html
import os
import re

CSS = """body{font:15px/1.45 system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}th,td{border:1px solid #bbb;padding:4px 6px;
vertical-align:top;text-align:left}th{background:#eee}code{background:#f3f3f3;padding:0 2px}
figure{margin:1.5em 0}figure img{max-width:100%;border:1px solid #ddd}figcaption{font-size:13px;color:#444;
margin-top:.3em}h2{border-bottom:1px solid #ccc;margin-top:2em}.seen td:last-child{color:#070}
.notseen td:last-child{color:#a00}"""

# On load, count the figures that decoded (complete with a natural width) and write the counts
# into #figure-check: the headless-browser check (tests/integration/check_report_html.sh) reads them back.
CHECK_JS = """window.addEventListener('load',function(){var im=document.images,ok=0;
for(var i=0;i<im.length;i++){if(im[i].complete&&im[i].naturalWidth>0)ok++;}
var e=document.getElementById('figure-check');e.setAttribute('data-loaded',ok);
e.setAttribute('data-total',im.length);e.textContent=ok+' of '+im.length+' figures loaded';});"""


def inline_html(text):
    """Markdown inline marks (`code`, **bold**) to HTML, everything else escaped."""
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for p in parts:
        if len(p) >= 2 and p.startswith("`") and p.endswith("`"):
            out.append(f"<code>{html.escape(p[1:-1])}</code>")
        else:
            e = html.escape(p)
            e = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", e)
            out.append(e)
    return "".join(out)


def md_cell(c):
    return "<br>".join(c) if isinstance(c, list) else str(c)


def _cells_html(row, tag):
    """One table row's cells; a cell that is a list becomes lines joined by <br>."""
    return "".join(f"<{tag}>{'<br>'.join(inline_html(x) for x in (c if isinstance(c, list) else [str(c)]))}</{tag}>"
                   for c in row)


def _row_class(row):
    """'notseen' or 'seen' from the row's last cell (a finding's verdict), else ''."""
    verdict = "".join(row[-1:]) if row else ""
    return "notseen" if "not seen" in verdict else "seen" if "**seen**" in verdict else ""


class Doc:
    def __init__(self):
        self.blocks = []

    def h(self, level, text):
        self.blocks.append(("h", level, text))

    def p(self, text):
        self.blocks.append(("p", text))

    def ul(self, items):
        self.blocks.append(("ul", list(items)))

    def table(self, header, rows):
        self.blocks.append(("table", header, rows))

    def figure(self, rel, caption):
        self.blocks.append(("fig", rel, caption))

    def markdown(self):
        out = []
        for b in self.blocks:
            if b[0] == "h":
                out += ["#" * b[1] + " " + b[2], ""]
            elif b[0] == "p":
                out += [b[1], ""]
            elif b[0] == "ul":
                out += [("  - " + i.strip()) if i.startswith("  ") else ("- " + i) for i in b[1]] + [""]
            elif b[0] == "table":
                out.append(("| " + " | ".join(b[1]) + " |").replace("|  |", "| |"))
                out.append("|" + "---|" * len(b[1]))
                out += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in b[2]]
                out.append("")
            elif b[0] == "fig":
                out += [f"![{b[1]}]({b[1]})", "", f"Figure: {b[2]}", ""]
        return "\n".join(out)

    def html(self, root, title):
        out = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
               f"<title>{html.escape(title)}</title><style>{CSS}</style>",
               f"<script>{CHECK_JS}</script></head><body>", "<p id=\"figure-check\" data-loaded=\"-1\"></p>"]
        for b in self.blocks:
            if b[0] == "h":
                out.append(f"<h{b[1]}>{inline_html(b[2])}</h{b[1]}>")
            elif b[0] == "p":
                out.append(f"<p>{inline_html(b[1])}</p>")
            elif b[0] == "ul":
                out.append("<ul>" + "".join(f"<li>{inline_html(i.strip())}</li>" for i in b[1]) + "</ul>")
            elif b[0] == "table":
                body = "".join(f"<tr class=\"{_row_class(r)}\">{_cells_html(r, 'td')}</tr>" for r in b[2])
                out.append(f"<table><thead><tr>{_cells_html(b[1], 'th')}</tr></thead><tbody>{body}</tbody></table>")
            elif b[0] == "fig":
                with open(os.path.join(root, b[1]), "rb") as f:
                    data = base64.b64encode(f.read()).decode("ascii")
                out.append(f"<figure><img alt=\"{html.escape(b[1])}\" src=\"data:image/png;base64,{data}\">"
                           f"<figcaption>{inline_html(b[2])}</figcaption></figure>")
        out.append("</body></html>")
        return "\n".join(out) + "\n"
