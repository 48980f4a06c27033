"""The report's section "The residual, or the signal?" (issue 45 part 2), from the signal sweeps in OUT
judged by signal_study.py under configs/experiments/signal_rules.json: the rules in one paragraph, the
points table (an attention kind or a one-sub-layer stack at a depth: its seeds' escapes within H, their
steps, whether it trains, the rules' word for leaving the plateau, its rank ratio at init), the verdict
the rules give with its parts per depth and the sentence scoping "trains" (signal_text.TRAINS_MEANS),
the points not judged (fewer than 3 finished seeds), and the runs not judged because their settings
differ from the rules' (with the keys). Without the signal sweeps, one line saying what
runs them; in the summary a row when they ran, else that line. Used by page.py.
Not here: the rules and the verdicts (signal_study.py), running the sweeps (reproduce.sh --signal).
"""
from stacklab.studies import signal as ss, signal_text
from .sections import verdict_mark

ANCHOR = "signal"
TITLE = "The residual, or the signal?"
QUESTION = ("Does a deep stack without a residual stall because it lacks the residual, or because it destroys its "
            "signal on the way up (finding 2's rank collapse)? Shaped attention (A = I at init) keeps the signal: "
            "does it leave the plateau without a residual where softmax attention does not, and which sub-layer "
            "stalls it?")


def rules_text(res: ss.Judged, cpu: str) -> str:
    """The rules the verdict turns on, read from the rules file, and where the runs ran."""
    r = res.rules
    return (f"{QUESTION} Rules fixed in `{ss.RULES_FILE}` on {r['fixed_on']}, before its runs: a run escapes at its "
            f"first eval at or below its unigram loss on val - {r['escaped']['margin']:g} nats (and stops there), "
            f"within H = {r['horizon']['H']} steps. {r['criteria']['trains']} Sweeps: {', '.join(res.sweeps)}; "
            f"runs on {cpu}.")


def escaped_text(p) -> str:
    """"3 of 3 escaped", or "not run" for a point without a finished run."""
    return f"{p.escaped} of {len(p.seeds)} escaped" if p is not None and p.seeds else "not run"


def not_judged(res: ss.Judged) -> list:
    """The planned points with fewer than 3 finished seeds, each with how many finished."""
    out = []
    for name, depth in res.missing:
        p = res.points.get((name, depth))
        n = len(p.seeds) if p is not None else 0
        out.append(f"{name} at L = {depth} ({n} of 3 seeds finished)")
    return out


def section(doc, res: ss.Judged, cpu: str):
    """The section; `cpu`: the CPU model the study folder's timing.jsonl names."""
    doc.h(2, TITLE, anchor=ANCHOR)
    if not res.present:
        doc.p(f"The residual-or-signal study (issue 45 part 2) was not run: `{ss.COMMAND}` runs it.")
        return
    doc.p(rules_text(res, cpu))
    doc.table(*signal_text.table(res))
    doc.p(f"Verdict: {verdict_mark(res.verdicts['overall'])}.")
    doc.ul(signal_text.verdict_items(res))
    doc.p(signal_text.TRAINS_MEANS)
    if res.missing:
        doc.p("Not judged (not run, or unfinished): " + ", ".join(not_judged(res)) + ".")
    if res.refused:
        doc.p(f"Not judged, their settings differ from the rules' (`{ss.RULES_FILE}` and the sweep files it judges):")
        doc.ul(signal_text.refused_lines(res))


def summary_rows(res: ss.Judged) -> list:
    """The summary's row: shaped against softmax attention at L = 8 and 32, the overall verdict."""
    if not res.present:
        return []
    deciding = "; ".join(f"L = {L}: shaped {escaped_text(res.points.get(('shaped', L)))}, softmax "
                         f"{escaped_text(res.points.get(('softmax', L)))}" for L in (8, 32))
    if res.missing:
        deciding += f"; {len(res.missing)} of {len(ss.PLAN)} points not judged yet"
    if res.refused:
        deciding += f"; {len(res.refused)} runs not judged (settings differ from the rules')"
    return [[f"[signal](#{ANCHOR})", "Without a residual, shaped attention leaves the plateau at L = 8 and 32 "
             "where softmax attention does not (issue 45 part 2; learning beyond symbol pairs, the bigram line, is "
             "not measured by these runs)", deciding, verdict_mark(res.verdicts["overall"])]]


def verdict(res: ss.Judged) -> str:
    """The overall verdict, or "not run"."""
    return res.verdicts["overall"] if res.present else "not run"


def summary_line(res: ss.Judged) -> str:
    """One line under the summary when the study was not run ("" when it was: its row says it)."""
    return "" if res.present else f"[{TITLE}](#{ANCHOR}): not run (`{ss.COMMAND}` runs it)."
