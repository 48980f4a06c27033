"""Self-contained HTML views to explore, beside the PNGs: one run's (loss curves, its per-block
gradient norms over steps as a heatmap, every per-layer metric over steps) and a sweep's (runs
picked side by side on shared axes, and every run's heatmap, one at a time). Drawn with plotly
(Debian's python3-plotly). plotly.js (8.7 MB) is not in the page: one copy, plotly-<version>.js, lies in
the folder `plotly_dir` (default: the view's own), and every view written with that folder loads it by
its relative path, so a study's views share one copy (reproduce.sh: OUT/figures/) and each still opens
from disk with no server and no network.

    write_run_view(run, out_dir, plotly_dir=None)     -> out_dir/view.html   (called by plot_run.py)
    write_sweep_view(runs, out_dir, plotly_dir=None)  -> out_dir/view.html   (called by plot_compare.py)

Each page writes what it rendered into #view-check on load (charts, charts drawn, script errors,
network requests):
tests/integration/check_views.sh reads it in headless Chromium. Not here: the PNG figures.
"""
import html
import math
import os
import sys

from stacklab.runs import runlog

VIEW_NAME = "view.html"
MAX_PICKED = 10  # a sweep view starts with at most this many runs shown; the picker adds others

# Before anything else on the page: every script error and console.error is kept for #view-check.
ERRORS_JS = """window.viewErrors=[];window.addEventListener('error',function(e){
window.viewErrors.push(String(e.message||e));});(function(){var ce=console.error;console.error=function(){
window.viewErrors.push(Array.prototype.join.call(arguments,' '));ce.apply(console,arguments);};})();"""
# On load: how many charts the page has, how many plotly drew (an SVG with data), the errors, and
# any resource fetched over the network (a view must need none).
CHECK_JS = """window.addEventListener('load',function(){setTimeout(function(){
var g=document.querySelectorAll('.plotly-graph-div'),ok=0;for(var i=0;i<g.length;i++){
if(g[i].querySelector('svg.main-svg')&&g[i].data&&g[i].data.length)ok++;}
var e=document.getElementById('view-check');e.setAttribute('data-charts',g.length);
e.setAttribute('data-rendered',ok);e.setAttribute('data-errors',window.viewErrors.join(' | '));
var net=performance.getEntriesByType('resource').filter(function(r){return /^https?:/.test(r.name);});
e.setAttribute('data-network',net.map(function(r){return r.name;}).join(' '));
e.textContent=ok+' of '+g.length+' charts drawn, '+window.viewErrors.length+' script errors, '+
net.length+' network requests';},0);});"""
# The sweep view's run picker: a trace belongs to the run named by its legendgroup; a trace of no
# run (the one-run-at-a-time heatmaps, which their own menu shows) is left as it is.
PICKER_JS = """function pickRuns(){var on={};document.querySelectorAll('#run-picker input').forEach(
function(c){on[c.value]=c.checked;});document.querySelectorAll('.plotly-graph-div').forEach(function(gd){
if(!gd.data)return;Plotly.restyle(gd,{visible:gd.data.map(function(t){
return (t.legendgroup in on)?on[t.legendgroup]:t.visible;})});});}"""
CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1200px;color:#222;padding:0 1em}
h1{font-size:20px}h2{font-size:16px;margin-top:1.6em}p.note{color:#555}#run-picker label{margin-right:1em;
white-space:nowrap}footer{margin-top:2em;font-size:12px;color:#666}"""


def available() -> bool:
    """True when plotly can be imported (python3-plotly; scripts/setup.sh installs it)."""
    try:
        import plotly  # noqa: F401 (only whether it imports)
        return True
    except ImportError:
        return False


def num(v, digits=5):
    """A finite float rounded to `digits` significant digits (smaller pages), else None (a gap)."""
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(f"{v:.{digits}g}")


def log_scaled(values):
    """True when a metric's positive values span more than 30x: coloured on a log10 scale."""
    pos = [v for v in values if v is not None and v > 0]
    return bool(pos) and min(pos) * 30 < max(pos) and len(pos) == len([v for v in values if v is not None])


def write_view(writer, what, out_dir, written, plotly_dir=None):
    """writer(what, out_dir, plotly_dir) with its path appended to `written`; without plotly, a loud line
    and no view (the PNGs are still written)."""
    if not available():
        print(f"views: SKIPPED {os.path.join(out_dir, VIEW_NAME)}: no plotly (apt-get install python3-plotly; "
              "scripts/setup.sh installs it)", file=sys.stderr)
        return
    written.append(writer(what, out_dir, plotly_dir))


# ---- one run ------------------------------------------------------------------------------------

# A loss as metrics.jsonl writes it (5 decimals, 6 significant digits below 10) shows unchanged.
LOSS_HOVER = "{name}<br>step %{{x}}: %{{y:.6g}}<extra></extra>"


def loss_figure(run):
    import plotly.graph_objects as go
    fig = go.Figure()
    tr = [r for r in run.records["train"] if num(r.get("loss")) is not None]
    # One point in "lines" mode draws nothing (a 1-step run): then a marker, as the eval traces have.
    fig.add_trace(go.Scatter(x=[r["step"] for r in tr], y=[num(r["loss"], 6) for r in tr], name="train loss (batch)",
                             mode="lines" if len(tr) > 1 else "lines+markers",
                             line={"width": 1, "color": "rgba(31,119,180,0.6)"},
                             hovertemplate=LOSS_HOVER.format(name="train loss (batch)")))
    for key, name, color in (("val_loss", "val loss", "#d62728"), ("train_loss", "train loss (eval)", "#1f77b4")):
        ev = [r for r in run.records["eval"] if num(r.get(key)) is not None]
        if ev:
            fig.add_trace(go.Scatter(x=[r["step"] for r in ev], y=[num(r[key], 6) for r in ev], name=name,
                                     mode="lines+markers", line={"color": color},
                                     hovertemplate=LOSS_HOVER.format(name=name)))
    for name, v in run.reference_losses.items():
        if num(v) is not None:
            fig.add_hline(y=v, line_dash="dot", line_color="#888", annotation_text=f"{name} {v:.3f}")
    if run.diverged_step is not None:
        fig.add_vline(x=run.diverged_step, line_color="black", annotation_text="diverged")
    fig.update_layout(title=f"Loss: {runlog.label(run)}", xaxis_title="step", yaxis_title="loss (nats/token)",
                      height=420, margin={"t": 60})
    return fig


def layer_grid(run, key):
    """(steps, rows): the layers records' steps and, per block or boundary, its value at each step."""
    recs = [r for r in run.records["layers"] if isinstance(r.get(key), list)]
    steps = [r.get("step") for r in recs]
    n = max((len(r[key]) for r in recs), default=0)
    rows = [[num(r[key][i]) if i < len(r[key]) else None for r in recs] for i in range(n)]
    return steps, rows


def heatmap_trace(run, desc, visible=True):
    """A block (or boundary) x step heatmap of one per-layer metric; hover: where, step, value."""
    import plotly.graph_objects as go
    key, axis = desc["name"], desc.get("axis", "block")
    steps, rows = layer_grid(run, key)
    flat = [v for row in rows for v in row]
    logc = log_scaled(flat)
    z = [[(num(math.log10(v), 4) if v is not None and v > 0 else None) for v in row] for row in rows] if logc else rows
    where = "block" if axis == "block" else "boundary"
    return go.Heatmap(
        x=steps, y=list(range(len(rows))), z=z, customdata=rows, visible=visible, colorscale="Viridis",
        name=key, colorbar={"title": f"log10 {key}" if logc else key},
        hovertemplate=f"{where} %{{y}}<br>step %{{x}}<br>{key} %{{customdata:.5g}}<extra></extra>")


def grad_heatmap_figure(run):
    import plotly.graph_objects as go
    fig = go.Figure(heatmap_trace(run, {"name": "grad_norm", "axis": "block"}))
    fig.update_layout(title="Gradient norm of each block's parameters over training",
                      xaxis_title="step", yaxis_title="block (0 = next to the embedding)", height=520)
    return fig


def metrics_figure(run):
    """Every per-layer metric the run declares, one at a time (the menu), as a heatmap over steps."""
    import plotly.graph_objects as go
    descs = [d for d in run.layer_metrics if any(isinstance(r.get(d["name"]), list) for r in run.records["layers"])]
    if not descs:
        return None
    fig = go.Figure([heatmap_trace(run, d, visible=(i == 0)) for i, d in enumerate(descs)])

    def ytitle(d):
        return "block" if d.get("axis") == "block" else "boundary (0 = embedding output)"
    buttons = [{"label": d["name"], "method": "update",
                "args": [{"visible": [j == i for j in range(len(descs))]},
                         {"yaxis": {"title": ytitle(d)}, "title": d.get("label") or d["name"]}]}
               for i, d in enumerate(descs)]
    fig.update_layout(updatemenus=[{"buttons": buttons, "direction": "down", "x": 0, "xanchor": "left",
                                    "y": 1.14, "yanchor": "top"}],
                      title=descs[0].get("label") or descs[0]["name"], xaxis_title="step",
                      yaxis_title=ytitle(descs[0]), height=520, margin={"t": 110})
    return fig


def run_sections(run):
    out = [("Loss", "Click a legend entry to hide it; drag to zoom, double-click to reset.", loss_figure(run))]
    if run.records["layers"]:
        out.append(("Gradient norm per block over steps", "Hover a cell for its block, step and value.",
                    grad_heatmap_figure(run)))
        fig = metrics_figure(run)
        if fig is not None:
            out.append(("Every per-layer metric over steps", "Pick a metric in the menu.", fig))
    return out


def write_run_view(run, out_dir, plotly_dir=None) -> str:
    """Writes out_dir/view.html for one run (plotly.js in plotly_dir, default out_dir); returns its path."""
    desc = f"{runlog.label(run)}; {run.status}, last step {run.last_step}"
    return write_page(os.path.join(out_dir, VIEW_NAME), f"stacklab run {run.name}", desc, run_sections(run),
                      plotly_dir=plotly_dir)


# ---- a sweep --------------------------------------------------------------------------------------

def run_key(run):
    return os.path.basename(os.path.normpath(run.path))


def sweep_sections(runs):
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    runs = sorted(runs, key=lambda r: (r.wiring, r.n_layer or 0, run_key(r)))
    picked = {run_key(r) for r in runs[:MAX_PICKED]}
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
    color = {w: palette[i % len(palette)] for i, w in enumerate(sorted({r.wiring for r in runs}))}
    dashes = ["solid", "dash", "dot", "dashdot", "longdash"]
    depth_dash = {d: dashes[i % len(dashes)] for i, d in enumerate(sorted({r.n_layer or 0 for r in runs}))}

    def style(r, first):
        k = run_key(r)
        return {"name": f"{k} ({r.wiring}, L={r.n_layer})", "legendgroup": k, "showlegend": first,
                "visible": k in picked, "line": {"color": color[r.wiring], "dash": depth_dash[r.n_layer or 0]}}

    loss = go.Figure()
    for r in runs:
        ev = [e for e in r.records["eval"] if num(e.get("val_loss")) is not None]
        loss.add_trace(go.Scatter(x=[e["step"] for e in ev], y=[num(e["val_loss"], 6) for e in ev],
                                  mode="lines+markers", marker={"size": 4}, **style(r, True),
                                  hovertemplate=LOSS_HOVER.format(name=run_key(r) + " val loss")))
    loss.update_layout(title="Validation loss over steps (colour: wiring, dash: depth)", xaxis_title="step",
                       yaxis_title="val loss (nats/token)", height=480)

    grad = make_subplots(rows=1, cols=2, shared_yaxes=True,
                         subplot_titles=("first layers record", "last layers record"))
    for r in runs:
        recs = [x for x in r.records["layers"] if isinstance(x.get("grad_norm"), list)]
        for col, rec in ((1, recs[0] if recs else None), (2, recs[-1] if recs else None)):
            g = [num(v) for v in rec["grad_norm"]] if rec else []
            x = [(i + 0.5) / len(g) for i in range(len(g))]
            grad.add_trace(go.Scatter(x=x, y=g, mode="lines+markers", marker={"size": 3},
                                      customdata=[[i, rec.get("step")] for i in range(len(g))],
                                      hovertemplate=f"{run_key(r)}<br>block %{{customdata[0]}} of {len(g)}, "
                                                    "step %{customdata[1]}<br>grad norm %{y:.4g}<extra></extra>",
                                      **style(r, col == 1)), row=1, col=col)
    grad.update_yaxes(type="log", title_text="grad norm of the block (log)", row=1, col=1)
    grad.update_xaxes(title_text="block position l/L (0 = next to the embedding)")
    grad.update_layout(title="Gradient norm per block, depths on one axis", height=480)

    descs = {}
    for r in runs:
        for d in r.layer_metrics:
            descs.setdefault(d["name"], d)
    names = [n for n in descs if any(isinstance((r.records["layers"] or [{}])[-1].get(n), list) for r in runs)]
    cols = 3
    rows = max(1, (len(names) + cols - 1) // cols)
    metrics = make_subplots(rows=rows, cols=cols, subplot_titles=[descs[n].get("label") or n for n in names],
                            vertical_spacing=0.5 / rows)
    for i, n in enumerate(names):
        for r in runs:
            rec = (r.records["layers"] or [{}])[-1]
            v = [num(x) for x in rec.get(n) or []]
            metrics.add_trace(go.Scatter(x=[(j + 0.5) / len(v) for j in range(len(v))], y=v, mode="lines",
                                         hovertemplate=f"{run_key(r)}<br>{n} %{{y:.4g}}<extra></extra>",
                                         **style(r, i == 0)), row=i // cols + 1, col=i % cols + 1)
    metrics.update_layout(title="Every per-layer metric at each run's last layers record, against position l/L",
                          height=300 * rows + 100, showlegend=False)
    sections = [("Validation loss", "", loss), ("Gradient norm per block", "", grad),
                ("Per-layer metrics", "", metrics)]
    heat = run_heatmaps_figure(runs)
    if heat is not None:
        sections.append(("Gradient norm per block over steps, one run at a time",
                         "Pick the run in the menu; hover a cell for its block, step and value.", heat))
    return runs, picked, sections


def run_heatmaps_figure(runs):
    """Every run's block x step gradient-norm heatmap (its own view's), one shown at a time."""
    import plotly.graph_objects as go
    runs = [r for r in runs
            if not r.is_probe and any(isinstance(x.get("grad_norm"), list) for x in r.records["layers"])]
    if not runs:
        return None
    fig = go.Figure([heatmap_trace(r, {"name": "grad_norm", "axis": "block"}, visible=(i == 0))
                     for i, r in enumerate(runs)])
    buttons = [{"label": f"{run_key(r)} ({r.wiring}, L={r.n_layer})", "method": "update",
                "args": [{"visible": [j == i for j in range(len(runs))]}]} for i, r in enumerate(runs)]
    fig.update_layout(updatemenus=[{"buttons": buttons, "direction": "down", "x": 0, "xanchor": "left",
                                    "y": 1.14, "yanchor": "top"}],
                      xaxis_title="step", yaxis_title="block (0 = next to the embedding)", height=560,
                      margin={"t": 110})
    return fig


def write_sweep_view(runs, out_dir, plotly_dir=None) -> str:
    """Writes out_dir/view.html comparing runs (run dirs; probe files count as step-0 runs; plotly.js in
    plotly_dir, default out_dir)."""
    runs, picked, sections = sweep_sections(runs)
    boxes = "".join(f'<label><input type="checkbox" value="{html.escape(run_key(r))}" onchange="pickRuns()"'
                    f'{" checked" if run_key(r) in picked else ""}> {html.escape(run_key(r))}</label> '
                    for r in runs)
    picker = (f'<div id="run-picker"><strong>Runs shown</strong> (every chart follows): {boxes}</div>'
              f'<p class="note">{len(runs)} runs; the first {len(picked)} are shown. Hover for values, drag to '
              "zoom, double-click to reset.</p>")
    return write_page(os.path.join(out_dir, VIEW_NAME), "stacklab sweep view", f"{len(runs)} runs", sections,
                      picker, PICKER_JS, plotly_dir=plotly_dir)


# ---- the page -----------------------------------------------------------------------------------

def plotly_file_name() -> str:
    """The shared copy's name, with plotly.js's version: a view never loads another version's copy."""
    from plotly.offline import get_plotlyjs_version
    return f"plotly-{get_plotlyjs_version()}.js"


def write_atomic(path, text):
    """Writes text to path through a temporary file and a rename: a reader (a browser, another plot
    process writing the same shared copy) sees the old file or the new one, never a part."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def shared_plotly(plotly_dir) -> str:
    """The path of plotly_dir's copy of plotly.js, written unless an equal one is there (plot processes
    running at once may each write it: each write is whole, and all are the same bytes)."""
    from plotly.offline import get_plotlyjs
    path = os.path.join(plotly_dir, plotly_file_name())
    js = get_plotlyjs()
    if not (os.path.isfile(path) and os.path.getsize(path) == len(js.encode("utf-8"))):
        write_atomic(path, js)
    return path


# Right after plotly.js's script tag: a page whose copy is missing (the view moved out of its folder)
# says where it looks, instead of showing empty charts.
MISSING_JS = """if(!window.Plotly)document.addEventListener('DOMContentLoaded',function(){
var p=document.createElement('p');p.id='plotly-missing';p.style.color='#b00';p.textContent=
'plotly.js not found at SRC (relative to this page): the views of a folder share one copy of it; open '+
'view.html where the plotting wrote it, or plot the runs again.';document.body.insertBefore(p,
document.body.firstChild);});"""


def write_page(path, title, subtitle, sections, top_html="", extra_js="", plotly_dir=None) -> str:
    """Writes one view page to path; plotly.js is loaded from plotly_dir's shared copy (default: the
    page's own folder) by its path relative to the page."""
    script = shared_plotly(plotly_dir or os.path.dirname(os.path.abspath(path)))
    src = os.path.relpath(script, os.path.dirname(os.path.abspath(path))).replace(os.sep, "/")
    parts = []
    for heading, note, fig in sections:
        parts.append(f"<h2>{html.escape(heading)}</h2>" + (f'<p class="note">{html.escape(note)}</p>' if note else ""))
        parts.append(fig.to_html(full_html=False, include_plotlyjs=False,
                                 config={"displaylogo": False, "responsive": True}))
    missing = MISSING_JS.replace("SRC", src.replace("'", "\\'"))
    page = (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{CSS}</style><script>{ERRORS_JS}</script>"
            f'<script src="{html.escape(src)}" charset="utf-8"></script><script>{missing}</script>'
            f"<script>{extra_js}</script></head><body><h1>{html.escape(title)}</h1>"
            f'<p class="note">{html.escape(subtitle)}</p>{top_html}{"".join(parts)}'
            f'<footer><div id="view-check">charts not checked (scripts off?)</div>'
            f"written by scripts/stacklab/plots/views.py</footer><script>{CHECK_JS}</script></body></html>\n")
    write_atomic(path, page)
    return path
