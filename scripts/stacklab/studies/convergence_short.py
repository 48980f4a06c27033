"""The convergence study's pre vs post and short against long (issue 36, configs/experiments/
convergence_rules.json): rule P at convergence and which wiring ends lower per init (on a map's cells:
the long runs' or a short horizon's, judged by the same rule), and each short-horizon statement (finding
3's parts, rule P, post-norm lower) beside its long verdict, reversals named. convergence.py calls it and
keeps its names (convergence.pre_post_map, compare, ...).

    pp = pre_post_map(stability_map.build(runs), rules, "synthetic")
    rows = compare(short, long_statements(points, {"synthetic": pp}, rules), rules)
Not here: the points and the escape fit (convergence.py), the text (report/convergence.py).
"""
from dataclasses import dataclass

from stacklab.studies import prepost_map as stability_map
from stacklab.studies import stats
from stacklab.studies.findings import finding_3
from stacklab.studies.text import pre_post as rule_p  # the short horizon's rule P, on the cells named here


@dataclass
class PrePost:
    source: str
    p_verdict: str      # rule P at convergence: seen / not seen / not run
    p_deciding: str
    lower: dict         # init -> "post lower" | "pre lower" | "not told apart" | "not both trained" | "not run"
    lines: list


def which_lower(pre: list, post: list) -> str:
    """The rule's second part (which ends lower) on two lists of final losses."""
    if not pre or not post:
        return "not run"
    sp, so = stats.summarize_loss(pre), stats.summarize_loss(post)

    def apart(lo, hi, s_lo, s_hi):
        every = max(lo) < min(hi)
        ci = s_lo["ci"] is not None and s_hi["ci"] is not None and s_lo["ci"][1] < s_hi["ci"][0]
        return every or ci
    if so["mean"] < sp["mean"] and apart(post, pre, so, sp):
        return "post lower"
    if sp["mean"] < so["mean"] and apart(pre, post, sp, so):
        return "pre lower"
    return "not told apart"


def pre_post_map(data: stability_map.MapData, rules: dict, source: str) -> PrePost:
    """pre_post on a map already built: the long runs' map, or a short horizon's (map_core, text_map),
    so that the short verdict beside the long one is judged on the same cells by the same rule."""
    p = rules["pre_post"]
    d, lr, inits = p["depth"], p["learning_rate"], p["inits"]
    v = rule_p(data, {"pre_post": {"id": "P at convergence", "depth": d, "inits": inits, "rates": [lr]}}, source)
    lower, lines = {}, list(v.lines)
    for i in inits:
        pre, post = data.cell("pre", i, d, lr), data.cell("post", i, d, lr)
        if not pre.n or not post.n:
            lower[i] = "not run"
        elif pre.majority != "trained" or post.majority != "trained":
            lower[i] = "not both trained"
        else:
            lower[i] = which_lower(pre.finals, post.finals)
        s_pre, s_post = stats.summarize_loss(pre.finals), stats.summarize_loss(post.finals)
        lines.append(f"{source}, init {i}, L={d}, lr {lr:g}: pre {stats.fmt_summary(s_pre, 4)}, post "
                     f"{stats.fmt_summary(s_post, 4)}: **{lower[i]}**")
    return PrePost(source, v.verdict, v.deciding, lower, lines)


# ---- short against long ------------------------------------------------------------------------

def long_statements(points: list, pp: dict, rules: dict) -> dict:
    """The long-horizon verdict of each short statement (short_vs_long.statements), per source:
    {(id, source): "seen" | "not seen" | "not run"}. F3i: every residual point's majority escaped
    (converged or still learning); F3ii: no point without a residual at L >= 8 escaped within its
    longest horizon with a seed that finished without diverging (escape_fits' horizon); P and
    post_lower from pre_post (`pp`: source -> PrePost)."""
    out = {}
    for src in sorted({p.source for p in points} | set(pp)):
        pts = [p for p in points if p.source == src]
        res = [p for p in pts if p.wiring.endswith("-res")]
        longest = {}
        for p in pts:  # the longest horizon with a seed finished without diverging, as the escape fit takes
            if p.wiring.endswith("-nores") and p.depth >= 8 and p.escape_judged:
                k = (p.wiring, p.depth)
                if k not in longest or (p.horizon or 0) > (longest[k].horizon or 0):
                    longest[k] = p
        escaped = ("converged", "still learning")
        out[("F3i", src)] = ("not run" if not res else
                             "seen" if all(p.verdict in escaped for p in res) else "not seen")
        out[("F3ii", src)] = ("not run" if not longest else
                              "seen" if all(p.verdict == "never escaped" for p in longest.values()) else "not seen")
        if src in pp:
            out[("P", src)] = pp[src].p_verdict
            out[("post_lower", src)] = post_lower(pp[src])
    return out


def post_lower(pp: PrePost) -> str:
    """The statement 'post-norm ends lower under the scaled init at L = 32' on one PrePost: seen where
    its scaled cell says 'post lower', not run where that cell was not run, else not seen."""
    low = pp.lower.get("scaled", "not run")
    return "not run" if low == "not run" else "seen" if low == "post lower" else "not seen"


def compare(short: dict, long: dict, rules: dict) -> list:
    """[(id, source, statement, short verdict, long verdict, note)] over every statement judged at
    the long horizon; the note says 'reversed at the long horizon: <short> -> <long>' where they differ
    (both judged), and nothing is left out: a statement without a short verdict shows 'not run'."""
    texts = {s["id"]: s["short"] for s in rules["short_vs_long"]["statements"]}
    rows = []
    for (sid, src), lv in sorted(long.items(), key=lambda kv: (kv[0][1], list(texts).index(kv[0][0]))):
        sv = short.get((sid, src), "not run")
        judged = sv != "not run" and lv != "not run"
        note = f"reversed at the long horizon: {sv} -> {lv}" if judged and sv != lv else ""
        rows.append((sid, src, texts[sid], sv, lv, note))
    return rows


def short_statements(syn_tr, text_tr, syn_map, syn_map_name, text_map, text_map_name, rules):
    """({(id, source): short verdict}, {(id, source): where from}, {source: PrePost}) from what this
    output folder holds: finding 3's parts (i) and (ii) on the training sweeps (synthetic) and on
    text_train (text); rule P and post-lower on the short map's cells the long rule names."""
    short, where, pps = {}, {}, {}
    for src, tr, name in (("synthetic", syn_tr, "train_grid/lr_grid"), ("text", text_tr, "text_train")):
        if tr is None or not tr.runs:
            continue
        parts = finding_3(tr).parts or {}
        steps = "/".join(str(s) for s in sorted({r.summary.get("steps") for r in tr.runs if r.summary} - {None}))
        for sid, part in (("F3i", "i"), ("F3ii", "ii")):
            if parts.get(part, "not run") != "not run":
                short[(sid, src)] = parts[part]
                where[(sid, src)] = f"finding 3 on {name}, {steps or '?'} steps"
    cells = f"cells at L={rules['pre_post']['depth']}, lr {rules['pre_post']['learning_rate']:g}"
    for src, data, name in (("synthetic", syn_map, syn_map_name), ("text", text_map, text_map_name)):
        if data is None or data.empty:
            continue
        pp = pre_post_map(data, rules, src)
        pps[src] = pp
        for sid, v in (("P", pp.p_verdict), ("post_lower", post_lower(pp))):
            if v != "not run":
                short[(sid, src)] = v
                where[(sid, src)] = f"{name}'s {cells}"
    return short, where, pps


def short_map(map_data, map_name, fallback_runs, fallback_name):
    """(map, its name) for the short horizon's pre vs post: the map sweep when it holds cells, else
    the cells the training runs hold (train_grid's L = 32; text_train's or text_point's)."""
    if map_data is not None and not map_data.empty:
        return map_data, map_name
    return stability_map.build(fallback_runs), fallback_name
