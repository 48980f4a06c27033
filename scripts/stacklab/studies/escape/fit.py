"""The escape law (issue 45): how the step at which a stack without a residual escapes the plateau
grows with depth, fitted by interval-censored maximum likelihood, as configs/experiments/
escape_law_rules.json fixes it. Numpy only (no scipy): the normal tail, the optimiser (Nelder-Mead)
and the profile-likelihood interval are written here and tested in tests/python/test_escape_law.py.

Data: one Obs per run, the interval its escape step lies in. An escape seen at eval step s happened
in (previous eval step, s] (the eval grid quantises it: interval censoring); a run that never
escaped within its last eval N escaped in (N, inf) (right censoring). Noise model: ln(step) ~
Normal(mu(L), sigma), independent over runs; each run's likelihood is the probability of its
interval, so a censored run pulls the fit as far as its interval says and no further.
Forms of mu(L), two parameters each (plus sigma):
    exponential         ln step = a + b L
    power               ln step = c + p ln L
    doubly exponential  ln ln step = e + f L   (mu = exp(e + f L))
    linear              ln step = g + h x      (x given per run, e.g. -ln(rank ratio at init))
With equal parameter counts AIC orders the forms as the likelihood does; a form wins when every
other's AIC is at least DELTA_AIC (2) above its own, else the forms are "not told apart".
Prediction: the median escape step exp(mu(L)) with a 95 % profile-likelihood interval (the
values of mu(L) whose profile log-likelihood is within chi2_1(0.95) / 2 = 1.92 of the maximum; no
random draws, so it is reproducible as it stands). An end of the interval the profile does not reach
within 1e300 steps is None: the data do not bound it, and the text says "no bound" (step_text).

    obs = [escaped_at(2, 400, 50), never_within(3, 6000), ...]
    fits = fit_all(obs)                  # {form: FormFit}
    best, delta = compare(fits)          # "exponential" | ... | None (not told apart), {form: dAIC}
    predict(obs, fits[best], 96)         # (median, lo, hi)
    falsifier(fits[best], obs)           # does the law predict an escape before 22000 at L = 8?
    fit_points([2, 8, 32], [5.1, 7.9, 9.3], "power")   # every step exact: the same law by least squares
Not here: reading runs (escape_results.py), the figure (plot_escape_law.py), running anything.
"""
import math
from dataclasses import dataclass

import numpy as np

from stacklab.studies.findings import fit_line

FORMS = ("exponential", "power", "doubly exponential")
DELTA_AIC = 2.0          # a form wins when every other's AIC is at least this much higher
CHI2_1_95 = 3.841458820694124  # the chi-square(1) 95 % quantile: the profile interval's cut
N_PARAMS = 3             # two of mu(L) and sigma, for every form
_BIG = 690.0             # ln of the largest step a prediction reports (exp(690) ~ 1e300)


@dataclass(frozen=True)
class Obs:
    """One run: its escape step lies in (lo, hi]; hi = inf: never escaped within lo (censored).
    depth: the covariate of the form (L; for "linear", x)."""
    depth: float
    lo: float
    hi: float

    @property
    def censored(self) -> bool:
        return math.isinf(self.hi)


def escaped_at(depth: float, step: float, eval_interval: float, previous: float | None = None) -> Obs:
    """A run whose first escaped eval is at `step`: (previous eval step, step], the previous eval
    step defaulting to step - eval_interval (never below 0)."""
    lo = step - eval_interval if previous is None else previous
    return Obs(float(depth), max(float(lo), 0.0), max(float(step), 1.0))


def never_within(depth: float, last: float) -> Obs:
    """A run that never escaped up to its last eval step `last`."""
    return Obs(float(depth), float(last), math.inf)


# ---- the normal distribution, numpy only -------------------------------------------------------

def _erfc(x):
    """erfc by Numerical Recipes' erfcc (Chebyshev fit, relative error < 1.2e-7 everywhere, so the
    far tails a censored run sits in keep their precision)."""
    x = np.asarray(x, dtype=float)
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = (-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277)))))))))
    r = t * np.exp(poly)
    return np.where(x >= 0, r, 2.0 - r)


def norm_cdf(z):
    return 0.5 * _erfc(-np.asarray(z, dtype=float) / math.sqrt(2.0))


def norm_sf(z):
    return 0.5 * _erfc(np.asarray(z, dtype=float) / math.sqrt(2.0))


def interval_prob(zl, zh):
    """P(zl < Z <= zh) for a standard normal Z, from the nearer tail (no cancellation in the
    upper tail where censored runs lie)."""
    zl, zh = np.asarray(zl, dtype=float), np.asarray(zh, dtype=float)
    # sf(zl) - sf(zh) where zl > 0, else cdf(zh) - cdf(zl) = -(0.5 erfc(-zl/r2) - 0.5 erfc(-zh/r2)):
    # one pair of erfc with the sign s folded in, the same bits as the two pairs it replaces
    s = np.where(zl > 0, 1.0, -1.0)
    r2 = math.sqrt(2.0)
    return s * (0.5 * _erfc(s * zl / r2) - 0.5 * _erfc(s * zh / r2))


# ---- forms and likelihood ---------------------------------------------------------------------

def mu(form: str, theta, x):
    """The mean of ln(step) at covariate x under `form` with parameters theta = (t0, t1)."""
    t0, t1 = theta
    x = np.asarray(x, dtype=float)
    if form in ("exponential", "linear"):
        return t0 + t1 * x
    if form == "power":
        return t0 + t1 * np.log(x)
    if form == "doubly exponential":
        return np.exp(np.clip(t0 + t1 * x, -_BIG, 30.0))
    raise ValueError(f"escape_law: unknown form {form!r} (one of {FORMS + ('linear',)})")


def _arrays(obs):
    x = np.array([o.depth for o in obs], dtype=float)
    with np.errstate(divide="ignore"):
        llo = np.log(np.array([o.lo for o in obs], dtype=float))    # ln 0 = -inf
        lhi = np.log(np.array([o.hi for o in obs], dtype=float))    # ln inf = inf
    return x, llo, lhi


def loglik(form: str, params, data) -> float:
    """Sum over runs of ln P(escape step in its interval) at params = (t0, t1, ln sigma); `data`
    is _arrays(obs)."""
    x, llo, lhi = data
    m = mu(form, params[:2], x)
    s = math.exp(params[2])
    with np.errstate(invalid="ignore", over="ignore"):
        p = interval_prob((llo - m) / s, (lhi - m) / s)
    p = np.where(np.isfinite(p), p, 0.0)
    return float(np.sum(np.log(np.maximum(p, 1e-300))))


def nelder_mead(f, x0, step=0.5, tol=1e-9, max_iter=4000):
    """Minimises f from x0 (Nelder-Mead, standard coefficients 1, 2, 0.5, 0.5); returns (x, f(x)).
    Stops when the simplex's values agree within tol and its points within tol * 100."""
    n = len(x0)
    pts = [np.asarray(x0, dtype=float)]
    for i in range(n):
        p = pts[0].copy()
        p[i] += step if np.ndim(step) == 0 else step[i]
        pts.append(p)
    vals = [f(p) for p in pts]
    for _ in range(max_iter):
        order = np.argsort(vals)
        pts, vals = [pts[i] for i in order], [vals[i] for i in order]
        if abs(vals[-1] - vals[0]) <= tol and max(np.max(np.abs(p - pts[0])) for p in pts) <= tol * 100:
            break
        c = np.mean(pts[:-1], axis=0)
        xr = c + (c - pts[-1])
        fr = f(xr)
        if fr < vals[0]:
            xe = c + 2.0 * (c - pts[-1])
            fe = f(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = c + 0.5 * (pts[-1] - c) if fr >= vals[-1] else c + 0.5 * (xr - c)
            fc = f(xc)
            if fc < min(fr, vals[-1]):
                pts[-1], vals[-1] = xc, fc
            else:
                pts = [pts[0]] + [pts[0] + 0.5 * (p - pts[0]) for p in pts[1:]]
                vals = [vals[0]] + [f(p) for p in pts[1:]]
    i = int(np.argmin(vals))
    return pts[i], vals[i]


@dataclass
class FormFit:
    form: str
    theta: tuple        # (t0, t1) of mu
    sigma: float
    loglik: float
    n: int
    n_censored: int
    ssr: float | None = None  # the residual sum of squares of ln step, where every step is exact (fit_points)

    @property
    def aic(self) -> float:
        return 2 * N_PARAMS - 2 * self.loglik

    def mu_at(self, x) -> float:
        return float(mu(self.form, self.theta, x))

    def median_at(self, x) -> float:
        """The median escape step exp(mu(x)); inf past 1e300."""
        m = self.mu_at(x)
        return math.inf if m > _BIG else math.exp(m)


def _start(obs, form):
    """Least squares on each interval's geometric midpoint (a censored run at twice its horizon)."""
    x = np.array([o.depth for o in obs], dtype=float)
    mid = np.array([2 * o.lo if o.censored else math.sqrt(max(o.lo, 1.0) * o.hi) for o in obs])
    y = np.log(np.maximum(mid, 1.0))
    if form == "doubly exponential":
        y = np.log(np.maximum(y, 1e-3))
    g = np.log(x) if form == "power" else x
    A = np.vstack([np.ones_like(g), g]).T
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ coef
    return np.array([coef[0], coef[1], math.log(max(float(np.std(resid)), 0.1))])


def fit_form(obs, form: str) -> FormFit:
    """The maximum-likelihood fit of `form` to obs: Nelder-Mead from the midpoints' least squares,
    restarted from its own optimum until the likelihood stops improving (at most 5 times)."""
    if len(obs) < 3:
        raise ValueError(f"escape_law: {len(obs)} runs cannot fit 3 parameters")
    data = _arrays(obs)

    def neg(p):
        return 1e300 if p[2] < -12 or p[2] > 8 else -loglik(form, p, data)
    x, fx = _start(obs, form), math.inf
    for _ in range(5):
        x, f_new = nelder_mead(neg, x, step=np.array([0.5, 0.2, 0.3]))
        if f_new > fx - 1e-7:
            break
        fx = f_new
    fx = min(fx, f_new)
    return FormFit(form, (float(x[0]), float(x[1])), math.exp(x[2]), -fx, len(obs),
                   sum(o.censored for o in obs))


def fit_points(x, ln_step, form: str) -> FormFit | None:
    """The same law fitted where every escape step is seen exactly (each interval shrunk to its point):
    the likelihood is then the normal density of ln step, and its maximum is the least-squares line
    ln step = t0 + t1 g(x) (g = ln for "power"; findings.fit_line, the package's one line fit), with
    sigma^2 = SSR / n. FormFit.ssr holds that SSR (with equal n, a ratio of SSRs is a likelihood ratio:
    ln L = -n/2 (ln(2 pi SSR / n) + 1)). None with fewer than 2 distinct x. The convergence rules read
    their escape fit from it (convergence.growth_fit, on the seeds' median steps). Not for the doubly
    exponential form: its mu is not linear in the parameters."""
    if form not in ("exponential", "power", "linear"):
        raise ValueError(f"escape_law: fit_points fits a form linear in its parameters, not {form!r}")
    g = [math.log(v) for v in x] if form == "power" else list(x)
    line = fit_line(g, ln_step)
    if line is None:
        return None
    n = len(g)
    sigma = math.sqrt(line.ssr / n)
    ll = -0.5 * n * (math.log(2 * math.pi * sigma * sigma) + 1) if sigma > 0 else math.inf
    return FormFit(form, (line.intercept, line.slope), sigma, ll, n, 0, line.ssr)


def fit_all(obs, forms=FORMS) -> dict:
    return {f: fit_form(obs, f) for f in forms}


def compare(fits: dict, threshold: float = DELTA_AIC):
    """(the winning form or None, {form: AIC - the lowest AIC}): a form wins when every other's AIC
    is at least `threshold` above its own (equal parameter counts: twice the log-likelihood gap)."""
    best = min(fits, key=lambda f: fits[f].aic)
    delta = {f: fits[f].aic - fits[best].aic for f in fits}
    won = all(d >= threshold for f, d in delta.items() if f != best)
    return (best if won else None), delta


# ---- the prediction and its interval ----------------------------------------------------------

def _g(form, x):
    return math.log(x) if form == "power" else x


def profile(obs, fit: FormFit, x: float, v: float) -> float:
    """The profile log-likelihood of mu(x) = v: the likelihood maximised over the other
    parameters with t0 fixed by the constraint."""
    data = _arrays(obs)
    form, gx = fit.form, _g(fit.form, x)
    if form == "doubly exponential":
        if v <= 0:
            return -math.inf
        lv = math.log(v)

        def neg(q):
            return 1e300 if q[1] < -12 or q[1] > 8 else -loglik(form, (lv - q[0] * x, q[0], q[1]), data)
    else:
        def neg(q):
            return 1e300 if q[1] < -12 or q[1] > 8 else -loglik(form, (v - q[0] * gx, q[0], q[1]), data)
    # Two starts: the fit's slope, and the slope that keeps mu at the runs' mean covariate where the
    # fit has it while mu(x) = v (far from the estimate the first lies far from the optimum).
    xbar = float(np.mean([o.depth for o in obs]))
    span = (x - xbar) if form == "doubly exponential" else (gx - _g(form, xbar))
    if form == "doubly exponential":
        pivot = math.log(max(fit.mu_at(xbar), 1e-9))
        slope = (lv - pivot) / span if span else fit.theta[1]
    else:
        slope = (v - fit.mu_at(xbar)) / span if span else fit.theta[1]
    best = math.inf
    for b0 in (fit.theta[1], slope):
        q, fq_prev = np.array([b0, math.log(fit.sigma)]), math.inf
        for _ in range(3):
            q, fq = nelder_mead(neg, q, step=np.array([0.2, 0.3]))
            if fq > fq_prev - 1e-7:
                break
            fq_prev = fq
        best = min(best, fq, fq_prev)
    return -best


def predict(obs, fit: FormFit, x: float, level_cut: float = CHI2_1_95):
    """(median escape step at x, lower, upper) with the profile-likelihood interval of mu(x):
    each end found by stepping out from the estimate until the profile drops by level_cut / 2,
    then bisection, the range's edge (ln step = +-690; for the doubly exponential form a step of 1
    below) tried before an end is given up; an end the profile does not reach within that range is
    None: the data do not bound it (step_text says "no bound")."""
    v_hat = fit.mu_at(x)
    top = fit.loglik

    def drop(v):
        return 2 * (top - profile(obs, fit, x, v)) - level_cut
    # the range of mu(x) an end is looked for in: ln step within +-690; the doubly exponential form's mu
    # is positive (a step above 1), so its lower edge is a mu just above 0
    edge = {1.0: _BIG, -1.0: 1e-9 if fit.form == "doubly exponential" else -_BIG}
    ends = []
    for sign in (-1.0, 1.0):
        inner, h, outer = v_hat, 0.25, None
        while True:
            v = v_hat + sign * h
            last = sign * (v - edge[sign]) >= 0
            if last:  # the step crosses the edge: the edge itself is the last value tried
                v = edge[sign]
                if sign * (v - inner) <= 0:
                    break
            if drop(v) > 0:
                outer = v
                break
            if last:
                break
            inner, h = v, h * 2
        if outer is None:  # the profile does not drop by the cut within the range: the data do not bound this end
            ends.append(None)
            continue
        for _ in range(40):
            mid = 0.5 * (inner + outer)
            if drop(mid) > 0:
                outer = mid
            else:
                inner = mid
            if abs(outer - inner) < 1e-4:
                break
        ends.append(math.exp(min(0.5 * (inner + outer), _BIG)))
    return fit.median_at(x), ends[0], ends[1]


def step_text(x) -> str:
    """A predicted step in words: "4.47e+06", "> 4.6e+299" past the largest step reported, "no bound" for
    None (an end of an interval the data do not bound: predict)."""
    if x is None:
        return "no bound"
    if x >= math.exp(_BIG):  # the largest step a prediction reports (a median past it is inf)
        return f"> {math.exp(_BIG):.2g}"
    return f"{x:.3g}"


def interval_text(lo, hi) -> str:
    """A 95 % interval of predict in words: "2.87e+06-7.07e+06", "3.64e+122 to no upper bound", "no lower
    bound to 2e+21", "no bound either side", "all above 4.6e+299" (its lower end past the largest step
    reported: the upper one is not looked for)."""
    if lo is not None and lo >= math.exp(_BIG):
        return f"all above {math.exp(_BIG):.2g}"
    if lo is None and hi is None:
        return "no bound either side"
    if lo is None or hi is None:
        return (f"{'no lower bound' if lo is None else step_text(lo)} to "
                f"{'no upper bound' if hi is None else step_text(hi)}")
    return f"{step_text(lo)}-{step_text(hi)}"


def within(x, lo, hi) -> bool:
    """Whether x lies in the interval (lo, hi) of predict, an end None being no bound."""
    return (lo is None or lo <= x) and (hi is None or x <= hi)


# ---- the falsifier and the rank fit -------------------------------------------------------------

@dataclass
class Falsifier:
    depth: float
    horizon: float
    median: float
    p_escape: float     # the law's chance that one run escapes by the horizon
    n_never: int        # runs measured never escaping there (the convergence study: 3 seeds)
    chance_all_never: float
    fires: bool         # the law predicts a typical run escapes before the horizon: falsified

    @property
    def text(self) -> str:
        verdict = "FALSIFIED" if self.fires else "not falsified"
        return (f"at L = {self.depth:g} the law's median escape step is "
                f"{f'{self.median:.4g}' if math.isfinite(self.median) else step_text(self.median)} "
                f"({'before' if self.fires else 'not before'} {self.horizon:g}); its chance that all "
                f"{self.n_never} measured runs stay on the plateau to {self.horizon:g} is "
                f"{self.chance_all_never:.3g}: {verdict}")


def falsifier(fit: FormFit, depth: float = 8, horizon: float = 22000, n_never: int = 3) -> Falsifier:
    """The rules' falsifier: the law read at a rate where n_never runs at `depth` never escaped
    within `horizon` steps is falsified when its median escape step there is below the horizon."""
    m = fit.mu_at(depth)
    p = float(norm_cdf((math.log(horizon) - m) / fit.sigma))
    return Falsifier(depth, horizon, fit.median_at(depth), p, n_never, (1 - p) ** n_never,
                     fit.median_at(depth) < horizon)


def with_rank_covariate(obs, rank_ratio: dict) -> list:
    """obs with each run's depth L replaced by -ln(rank ratio at init at L) (rank_ratio: {L: ratio}
    from `stacklab probe`, e.g. rank_ratio_of_probe), for the "linear" form; runs at a depth
    without a ratio are left out."""
    out = []
    for o in obs:
        r = rank_ratio.get(int(o.depth)) if float(o.depth).is_integer() else None
        if r is not None and r > 0:
            out.append(Obs(-math.log(r), o.lo, o.hi))
    return out


def fit_rank(obs, rank_ratio: dict) -> FormFit:
    """ln step = g + h (-ln rank ratio at init), by the same likelihood."""
    return fit_form(with_rank_covariate(obs, rank_ratio), "linear")


def rank_ratio_of_probe(probe: dict):
    """The rank ratio at init of a probe.json (`stacklab probe`): the seeds' mean at the last
    boundary (the top of the stack); None without one."""
    vals = (probe.get("mean") or {}).get("rank_ratio")
    if not vals:
        return None
    last = vals[-1]
    return float(last) if last is not None else None
