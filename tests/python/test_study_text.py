"""The study on real text and rule P (scripts/stacklab/studies/text.py, configs/experiments/study_rules.json) on
fabricated runs: criterion S seen, not seen at its boundary and not run; rule P seen, not seen and not run;
the report's "On real text" with the synthetic and text verdicts side by side; the summary's row for P; the
one line that stands for the claims a tier did not run."""
import tempfile
import unittest

import fabricate
from stacklab.studies import claims, prepost_map as stability_map, text as study_text
from stacklab.studies.claims import ClaimVerdict as Verdict
from stacklab.report import doc as report_doc
from stacklab.report import sections
from stacklab.report import text as report_text
from stacklab.studies import findings as sf

TEXT_UNIGRAM = 3.3091  # tiny Shakespeare's training split (study_rules.json)


def text_run(wiring, depth, lr, seed, final):
    """A training run on text: its own unigram loss in its start record and summary, 65 characters."""
    r = fabricate.run(wiring, depth, lr, seed, final)
    refs = {"uniform": 4.17439, "unigram": TEXT_UNIGRAM}
    r.summary["reference_losses"] = dict(refs)
    r.records["start"][0]["reference_losses"] = dict(refs)
    r.config["model"]["vocab_size"] = 65
    r.summary["steps"] = 300
    return r


def text_training(finals, wiring="pre-layernorm-res", depth=8, lr=1e-3):
    return sf.Training([fabricate.FakeSweep("text_train", [text_run(wiring, depth, lr, s, f)
                                                           for s, f in enumerate(finals)])])


def outcome(r):
    return claims.outcome(r)  # claims.json's margin: 0.05


def pmap(cells):
    """A map from {(variant, init, lr): outcome of all 3 seeds} at L = 32."""
    return stability_map.build([fabricate.map_run(v, i, 32, lr, s, o) for (v, i, lr), o in cells.items()
                                for s in range(3)], outcome)


ALL_TRAINED = {(v, i, lr): "trained" for v in ("pre", "post") for i in ("scaled", "xavier") for lr in (1e-3, 1e-2)}


class CriterionS(unittest.TestCase):
    # study_rules.json: pre-norm at L = 8 at its best rate ends >= 0.8 below 3.3091, i.e. <= 2.5091.
    def test_every_seed_at_least_08_below_the_text_unigram_loss_is_seen(self):
        v = study_text.structure(text_training([2.40, 2.45, 2.5091]))
        self.assertEqual(v.verdict, "seen")
        self.assertIn("vs <= 2.509 (unigram 3.309 - 0.8)", v.deciding)
        self.assertIn("3 of 3 seeds", v.deciding)

    def test_one_seed_above_the_line_with_a_wide_interval_is_not_seen(self):
        # mean 2.4833, sd 0.1041, t(2) 4.303: the interval reaches 2.742, above 2.5091
        v = study_text.structure(text_training([2.40, 2.45, 2.60]))
        self.assertEqual(v.verdict, "not seen")
        self.assertIn("2 of 3 seeds", v.deciding)

    def test_without_a_pre_norm_run_at_l8_it_is_not_run(self):
        self.assertEqual(study_text.structure(None).verdict, "not run")
        self.assertEqual(study_text.structure(text_training([2.4], depth=2)).verdict, "not run")


class RuleP(unittest.TestCase):
    def test_pre_training_where_post_fails_and_never_the_reverse_is_seen(self):
        v = study_text.pre_post(pmap({**ALL_TRAINED, ("post", "xavier", 1e-2): "diverged"}))
        self.assertEqual(v.verdict, "seen")
        self.assertIn("pre trains where post fails at xavier lr 0.01 (pre 3/0/0, post 0/3/0)", v.deciding)
        self.assertIn("post trains where pre fails at nowhere", v.deciding)

    def test_one_cell_of_the_reverse_makes_it_not_seen(self):
        cells = {**ALL_TRAINED, ("post", "xavier", 1e-2): "diverged", ("pre", "scaled", 1e-2): "plateau"}
        v = study_text.pre_post(pmap(cells))
        self.assertEqual(v.verdict, "not seen")
        self.assertIn("post trains where pre fails at scaled lr 0.01 (pre 0/0/3, post 3/0/0)", v.deciding)

    def test_both_training_everywhere_is_not_seen(self):
        self.assertEqual(study_text.pre_post(pmap(ALL_TRAINED)).verdict, "not seen")

    def test_a_named_cell_without_runs_is_not_run_and_named(self):
        cells = {k: o for k, o in ALL_TRAINED.items() if k != ("post", "scaled", 1e-3)}
        v = study_text.pre_post(pmap(cells))
        self.assertEqual(v.verdict, "not run")
        self.assertIn("init scaled lr 0.001", v.deciding)


def summary_md(claims, extra=()):
    doc = report_doc.Doc()
    findings = [sf.finding(i, f"claim {i}.", "c", ["x"], True, deciding=f"n {i}") for i in range(1, 6)]
    sections.summary(doc, findings, claims, ["map line."], extra=extra)
    return doc.markdown()


class Summary(unittest.TestCase):
    def test_the_summary_has_a_row_for_pre_vs_post_norm_with_its_deciding_numbers_and_verdict(self):
        p = study_text.pre_post(pmap({**ALL_TRAINED, ("post", "xavier", 1e-2): "diverged"}))
        text = study_text.TextStudy([], None, None, [], None, p,
                                    study_text.pre_post(stability_map.build([], outcome), source="text"))
        md = summary_md([], report_text.summary_extra(text))
        row = next(line for line in md.splitlines() if line.startswith("| [P](#pre-post) |"))
        self.assertIn("Pre-norm trains where post-norm fails, not the reverse (L = 32, inits scaled and xavier)", row)
        self.assertIn("xavier lr 0.01 (pre 3/0/0, post 0/3/0)", row)
        self.assertTrue(row.endswith("| **seen** |"), row)
        self.assertNotIn("P (text)", md)  # the text map did not run: no row for it

    def test_claims_a_tier_did_not_run_are_one_line_with_the_command_and_its_time(self):
        claims = [Verdict(f"C{i}", f"Claim {i}.", "s", "r", "runs missing (18 configs): pre ...",
                          "not run", "") for i in range(1, 8)]
        md = summary_md(claims)
        self.assertIn("Claims C1-C7 of `configs/experiments/claims.json`: not run at this tier; "
                      "`bash scripts/reproduce.sh --claims` runs them (measured times: "
                      "`configs/experiments/README.md`, \"Two tiers\").", md)
        self.assertNotIn("runs missing", md)
        self.assertNotIn("(#claim-c", md)

    def test_claims_of_both_rounds_not_run_are_one_line_naming_each_rounds_file(self):
        ids = [f"C{i}" for i in range(1, 8)] + ["C1r2", "C2r2", "C3r2", "C4r2", "C7r2"]
        claims = [Verdict(c, f"Claim {c}.", "s", "r", "runs missing", "not run", "", 2 if "r2" in c else 1)
                  for c in ids]
        md = summary_md(claims)
        self.assertIn("Claims C1-C7 of `configs/experiments/claims.json` and C1r2-C4r2, C7r2 of "
                      "`configs/experiments/claims_round2.json`: not run at this tier; "
                      "`bash scripts/reproduce.sh --claims` runs them (measured times: ", md)
        self.assertNotIn("minutes", md)  # a time is the tier table's, never the code's
        self.assertNotIn("(#claim-c", md)
        ran = [Verdict(c.id, c.claim, "s", "r", "x = 1", "seen", "", c.round) for c in claims]
        self.assertEqual(sections.claims_not_run_line(ran), "")
        self.assertEqual(len([line for line in summary_md(ran).splitlines() if line.startswith("| [C")]), 12)

    def test_a_claim_that_ran_keeps_its_row_and_only_the_others_are_in_the_line(self):
        claims = [Verdict("C1", "Claim 1.", "s", "r", "x = 1", "seen", ""),
                  Verdict("C2", "Claim 2.", "s", "r", "runs missing", "not run", "")]
        md = summary_md(claims)
        self.assertIn("| [C1](#claim-c1) | Claim 1 | x = 1 | **seen** |", md)
        self.assertIn("Claims C2 of `configs/experiments/claims.json`: not run at this tier", md)
        self.assertEqual(sections.claims_not_run_line(claims[:1]), "")


def section_md(text_findings, point_runs=(), text_map=None, crit=None):
    syn = [sf.finding(i, f"claim {i}.", "c", ["x"], True, deciding=f"synthetic {i}.5") for i in range(1, 6)]
    syn_tr = sf.Training([fabricate.FakeSweep("train_grid", [fabricate.run(w, 32, 1e-3, s, f)
                                                             for w, f in (("pre-layernorm-res", 3.05),
                                                                          ("post-layernorm-res", 2.91),
                                                                          ("pre-layernorm-nores", 3.44))
                                                             for s in range(3)])])
    syn_map = pmap({**ALL_TRAINED, ("post", "xavier", 1e-2): "diverged"})
    text_map = text_map or stability_map.build([], outcome)
    doc = report_doc.Doc()
    text = study_text.TextStudy(text_findings, None, crit or study_text.structure(None), list(point_runs), text_map,
                                study_text.pre_post(syn_map), study_text.pre_post(text_map, source="text"),
                                study_text.text_point(syn_tr, list(point_runs)))
    report_text.text_section(doc, syn, syn_tr, syn_map, text)
    return doc.markdown().split('<a id="on-real-text"></a>')[1]


class OnRealText(unittest.TestCase):
    def test_each_finding_shows_the_synthetic_and_the_text_verdict_side_by_side(self):
        text = [sf.finding(i, f"claim {i}.", "c", ["x"], i != 2, deciding=f"text {i}.5") for i in range(1, 6)]
        md = section_md(text, crit=study_text.structure(text_training([2.40, 2.45, 2.50])))
        self.assertIn(f"| 2 | {sf.title(2)} | synthetic 2.5; **seen** | text 2.5; **not seen** |", md)
        self.assertIn(f"| 3 | {sf.title(3)} | synthetic 3.5; **seen** | text 3.5; **seen** |", md)
        self.assertIn("The verdicts differ for finding(s) 2.", md)
        self.assertIn("Criterion S (the text horizon learns real structure)", md)
        self.assertIn("Verdict: **seen**.", md)

    def test_a_missed_criterion_stays_and_says_what_it_means(self):
        md = section_md([], crit=study_text.structure(text_training([2.40, 2.45, 2.60])))
        self.assertIn("Verdict: **not seen**. The first result stays", md)

    def test_without_the_text_sweeps_it_says_how_to_run_them(self):
        md = section_md([])
        self.assertIn("The findings on text (text_probe, text_train) were not run at this tier: "
                      "`bash scripts/reproduce.sh --text` runs them", md)
        self.assertIn("The text map (text_map) was not run at this tier", md)
        self.assertIn("What differs between the two sources, and why:", md)

    def test_the_text_point_shows_both_sources_with_their_outcomes(self):
        runs = [text_run("pre-layernorm-res", 32, 1e-3, s, 2.30) for s in range(3)]
        runs += [text_run("post-layernorm-res", 32, 1e-3, s, 3.30 - 0.01 * s) for s in range(3)]  # not trained
        runs += [text_run("pre-layernorm-nores", 32, 1e-3, s, 3.32) for s in range(3)]
        md = section_md([], point_runs=runs)
        self.assertIn("| `pre-layernorm-res` | 3.0500 (3.0500-3.0500", md)
        self.assertIn("| trains | 2.3000 (2.3000-2.3000", md)
        self.assertIn("| `pre-layernorm-nores` |", md)
        self.assertIn("Finding 3 at L=32 (both residual wirings train, `f(norm(x))` stuck): synthetic **seen**, "
                      "text **not seen**", md)
        row = next(line for line in md.splitlines() if line.startswith("| `post-layernorm-res` |"))
        self.assertTrue(row.endswith("| stuck |") or row.endswith("| mixed |"), row)

    def test_every_map_cell_shows_both_sources(self):
        tmap = pmap({**ALL_TRAINED, ("post", "xavier", 1e-2): "plateau"})
        md = section_md([], text_map=tmap)
        self.assertIn("| `post` | xavier | 32 | 0.01 | 0/3/0 **diverged** | 0/0/3 **plateau**, mean 3.420 |", md)
        self.assertIn("rule P: synthetic **seen**, text **seen**", md)


class OffTheRules(unittest.TestCase):
    """Issue 60, defect 1: a run of the sweeps study_rules.json judges whose settings differ from its sweep
    file's (the tier's) is not judged: rule P and the text findings read the others, the text names it."""

    def test_a_map_run_off_its_sweep_file_is_left_out_of_rule_p_and_named(self):
        runs = [(f"{v}-{i}-{lr:g}-s{s}", fabricate.map_run(v, i, 32, lr, s, o))
                for (v, i, lr), o in {**ALL_TRAINED, ("post", "scaled", 1e-2): "diverged"}.items() for s in range(3)]
        runs[0][1].config["model"]["n_embd"] = 16
        runs[1][1].config["optim"]["learning_rate"] = 3e-3  # outside map_core's grid
        with tempfile.TemporaryDirectory() as root:
            fabricate.write_sweep_dir(root, "map_core", runs)
            data, refused = study_text.rule_map(root, "map_core")
        self.assertEqual([(sweep, rid, [d.key for d in ds]) for sweep, rid, ds in refused],
                         [("map_core", "pre-scaled-0.001-s0", ["model.n_embd"]),
                          ("map_core", "pre-scaled-0.001-s1", ["optim.learning_rate"])])
        self.assertEqual(data.cell("pre", "scaled", 32, 1e-3).n, 1)
        doc = report_doc.Doc()
        sections.pre_post_section(doc, [study_text.pre_post(data)], study_text.load_rules()["pre_post"], refused)
        self.assertIn("Not judged, their settings differ from the rules' (`configs/experiments/study_rules.json` and "
                      "the sweep files it judges):\n\n- model.n_embd 16 (the rules: 64): 1 run "
                      "(map_core/pre-scaled-0.001-s0)\n- optim.learning_rate 0.003 (the rules: one of 0.001, 0.01): "
                      "1 run (map_core/pre-scaled-0.001-s1)", doc.markdown())

    def test_a_text_training_off_the_rules_is_not_judged_and_its_vocabulary_is_the_texts(self):
        good = [text_run("pre-layernorm-res", 8, 1e-3, s, 2.4) for s in range(3)]  # vocab 65: the text's
        for r in good:
            r.config["data"] = {"source": "text", "path": "/x/data/shakespeare_char/input.txt"}
            r.config["train"]["max_iters"] = 300
        bad = text_run("pre-layernorm-res", 8, 1e-3, 1, 2.4)
        bad.config["data"] = {"source": "text", "path": "/x/data/shakespeare_char/input.txt"}
        bad.config["train"]["max_iters"] = 20
        bad.path += "-short"
        with tempfile.TemporaryDirectory() as root:
            ts = study_text.text_study(root, {"text_train": fabricate.FakeSweep("text_train", good + [bad])},
                                       stability_map.build([]), None)
        self.assertEqual([(s, [d.key for d in ds]) for s, _, ds in ts.refused], [("text_train", ["train.max_iters"])])
        self.assertEqual(len(ts.tr.runs), 3)
        self.assertEqual(ts.crit.verdict, "seen")


if __name__ == "__main__":
    unittest.main()
