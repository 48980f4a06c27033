"""The report as a list of blocks, written out twice: as Markdown (report.md, figures linked by
relative path, folded parts in <details>, which GitHub renders too) and as one self-contained HTML
page (report.html: inline CSS, every figure embedded as a base64 PNG data URI, no network). Used by
the report's sections (page.py).

    doc = Doc(); doc.h(1, "Title"); doc.h(2, "Finding 1", anchor="finding-1")
    doc.p("`code`, **bold**, [a link](#finding-1)")
    doc.table(["a", "b"], [["1", ["line 1", "line 2"]]]); doc.figure("figures/x.png", "caption")
    doc.beside("figures/x.png", "caption", ["text left of the figure"]); doc.fold("All numbers"); ...; doc.unfold()
    doc.markdown_text("- a list\n\n| a |\n|---|\n| 1 |")   # Markdown from elsewhere, as blocks
    doc.markdown(); doc.html(root)
Not here: what the report says (the other modules of report/).
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
.notseen td:last-child{color:#a00}.notrun td:last-child{color:#777}
.seen td:last-child,.notseen td:last-child,.notrun td:last-child{white-space:nowrap}
.beside{display:flex;gap:1.5em;align-items:flex-start;flex-wrap:wrap}.beside>div{flex:1 1 320px}
.beside>figure{flex:1 1 480px;margin:0}details{margin:.8em 0}summary{cursor:pointer;color:#245}
footer{margin-top:3em;font-size:12px;color:#666}"""

# On load, count the figures that decoded (complete with a natural width) and the in-page links
# whose target id exists, and write the counts into #figure-check and #link-check (at the page's
# foot): the headless-browser check (tests/integration/check_report_html.sh) reads them back.
CHECK_JS = """window.addEventListener('load',function(){var im=document.images,ok=0;
for(var i=0;i<im.length;i++){if(im[i].complete&&im[i].naturalWidth>0)ok++;}
var e=document.getElementById('figure-check');e.setAttribute('data-loaded',ok);
e.setAttribute('data-total',im.length);e.textContent=ok+' of '+im.length+' figures loaded';
var a=document.querySelectorAll('a[href^="#"]'),n=0,bad=[];
for(var j=0;j<a.length;j++){var t=a[j].getAttribute('href').slice(1);
if(t&&document.getElementById(t))n++;else bad.push(t);}
var l=document.getElementById('link-check');l.setAttribute('data-resolved',n);
l.setAttribute('data-links',a.length);l.setAttribute('data-broken',bad.join(' '));
l.textContent=n+' of '+a.length+' links in the page resolve';});"""


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
            e = re.sub(r"\[([^\]]+)\]\(#([-\w]+)\)", r'<a href="#\2">\1</a>', e)  # in-page links
            # a page beside the report (a view), by a relative path: never a URL
            e = re.sub(r"\[([^\]]+)\]\(((?!/)[-\w./]+\.html)\)", r'<a href="\2">\1</a>', e)
            out.append(e)
    return "".join(out)


def md_cell(c):
    return "<br>".join(c) if isinstance(c, list) else str(c)


def _cells_html(row, tag):
    """One table row's cells; a cell that is a list becomes lines joined by <br>."""
    return "".join(f"<{tag}>{'<br>'.join(inline_html(x) for x in (c if isinstance(c, list) else [str(c)]))}</{tag}>"
                   for c in row)


def _row_class(row):
    """'notseen', 'seen' or 'notrun' from the row's last cell (a verdict), else ''."""
    verdict = md_cell(row[-1]) if row else ""
    return ("notseen" if "not seen" in verdict else "seen" if "**seen**" in verdict
            else "notrun" if "not run" in verdict else "")


def anchor_md(anchor):
    """An id GitHub keeps (as user-content-<id>, which its page scrolls to for #<id>)."""
    return f'<a id="{anchor}"></a>'


def parse_markdown(text):
    """Blocks of a small Markdown subset (paragraphs, "- " lists, pipe tables), for text written
    elsewhere (a claim's details): so its tables are tables in both outputs."""
    blocks, para, lines = [], [], text.splitlines() + [""]
    i = 0
    while i < len(lines):
        ln = lines[i].rstrip()
        if ln.startswith("|") and i + 1 < len(lines) and re.match(r"^\|\s*:?-{3,}", lines[i + 1]):
            if para:
                blocks.append(("p", " ".join(para)))
                para = []
            head = [c.strip() for c in ln.strip("|").split("|")]
            i += 2
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append([c.strip() for c in lines[i].rstrip().strip("|").split("|")])
                i += 1
            blocks.append(("table", head, rows))
            continue
        if ln.startswith(("- ", "* ")):
            if para:
                blocks.append(("p", " ".join(para)))
                para = []
            items = []
            while i < len(lines) and lines[i].startswith(("- ", "* ", "  ")) and lines[i].strip():
                items.append(lines[i][2:].strip() if lines[i].startswith(("- ", "* ")) else lines[i])
                i += 1
            blocks.append(("ul", items))
            continue
        if ln.strip():
            para.append(ln.strip())
        elif para:
            blocks.append(("p", " ".join(para)))
            para = []
        i += 1
    return blocks


def _figure_html(root, rel, caption):
    with open(os.path.join(root, rel), "rb") as f:
        data = base64.b64encode(f.read()).decode("ascii")
    return (f"<figure><img alt=\"{html.escape(rel)}\" src=\"data:image/png;base64,{data}\">"
            f"<figcaption>{inline_html(caption)}</figcaption></figure>")


class Doc:
    def __init__(self):
        self.blocks = []

    def h(self, level, text, anchor=None):
        self.blocks.append(("h", level, text, anchor))

    def p(self, text):
        self.blocks.append(("p", text))

    def ul(self, items):
        self.blocks.append(("ul", list(items)))

    def table(self, header, rows):
        self.blocks.append(("table", header, rows))

    def figure(self, rel, caption):
        self.blocks.append(("fig", rel, caption))

    def beside(self, rel, caption, paragraphs):
        """Text with its figure: side by side in HTML, text then figure in Markdown."""
        self.blocks.append(("beside", rel, caption, list(paragraphs)))

    def fold(self, summary):
        """Everything added until unfold() is folded in a <details> whose line is `summary`."""
        self.blocks.append(("fold", summary))

    def unfold(self):
        self.blocks.append(("unfold",))

    def markdown_text(self, text):
        self.blocks.extend(parse_markdown(text))

    def markdown(self):
        out = []
        for b in self.blocks:
            if b[0] == "h":
                out += ([anchor_md(b[3])] if b[3] else []) + ["#" * b[1] + " " + b[2], ""]
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
            elif b[0] == "beside":
                for para in b[3]:
                    out += [para, ""]
                out += [f"![{b[1]}]({b[1]})", "", f"Figure: {b[2]}", ""]
            elif b[0] == "fold":  # GitHub renders Markdown inside <details> after a blank line
                out += ["<details>", f"<summary>{inline_html(b[1])}</summary>", ""]
            elif b[0] == "unfold":
                out += ["</details>", ""]
        return "\n".join(out)

    def html(self, root, title):
        out = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
               f"<title>{html.escape(title)}</title><style>{CSS}</style>",
               f"<script>{CHECK_JS}</script></head><body>"]
        for b in self.blocks:
            if b[0] == "h":
                aid = f' id="{b[3]}"' if b[3] else ""
                out.append(f"<h{b[1]}{aid}>{inline_html(b[2])}</h{b[1]}>")
            elif b[0] == "p":
                out.append(f"<p>{inline_html(b[1])}</p>")
            elif b[0] == "ul":
                out.append("<ul>" + "".join(f"<li>{inline_html(i.strip())}</li>" for i in b[1]) + "</ul>")
            elif b[0] == "table":
                body = "".join(f"<tr class=\"{_row_class(r)}\">{_cells_html(r, 'td')}</tr>" for r in b[2])
                out.append(f"<table><thead><tr>{_cells_html(b[1], 'th')}</tr></thead><tbody>{body}</tbody></table>")
            elif b[0] == "fig":
                out.append(_figure_html(root, b[1], b[2]))
            elif b[0] == "beside":
                text = "".join(f"<p>{inline_html(x)}</p>" for x in b[3])
                out.append(f"<div class=\"beside\"><div>{text}</div>{_figure_html(root, b[1], b[2])}</div>")
            elif b[0] == "fold":
                out.append(f"<details><summary>{inline_html(b[1])}</summary>")
            elif b[0] == "unfold":
                out.append("</details>")
        out.append("<footer><p id=\"figure-check\" data-loaded=\"-1\"></p>"
                   "<p id=\"link-check\" data-resolved=\"-1\"></p></footer>")
        out.append("</body></html>")
        return "\n".join(out) + "\n"
