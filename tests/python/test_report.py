"""The report's tables and findings on fabricated runs (scripts/stacklab/report/tables.py, study_findings.py): a
diverged run (summary.json status) is in no number, and a cell that lost seeds says how many. Its
summary (report/sections.py): a row per finding and per claim, each linked to a section that exists,
the numbers folded under it, claims from any object with a claim verdict's fields."""
import re
import unittest
from dataclasses import dataclass

import fabricate
from stacklab.studies import claims, prepost_map as stability_map
from stacklab.report import doc as report_doc
from stacklab.report import map as report_map
from stacklab.report import sections, tables
from stacklab.studies import findings as sf


def study():
    """f(x) at L=8: lr 1e-3 three completed seeds; lr 1e-2 two completed, one diverged whose last
    loss was 24967.77 (what the report used to average in); L=2 at lr 1e-3 one seed never finished."""
    runs = [fabricate.run("none-nores", 8, 1e-3, s, 3.436 + 0.001 * s) for s in range(3)]
    runs += [fabricate.run("none-nores", 8, 1e-2, 0, 3.4594), fabricate.run("none-nores", 8, 1e-2, 2, 3.4665),
             fabricate.run("none-nores", 8, 1e-2, 1, 24967.7744, status="diverged", diverged_step=133)]
    runs += [fabricate.run("none-nores", 2, 1e-3, s, 3.437) for s in range(2)]
    runs += [fabricate.run("none-nores", 2, 1e-3, 2, None, status="interrupted")]
    return sf.Training([fabricate.FakeSweep("train_grid", runs)])


def cell(table, wiring, col, depth=None):
    header, rows = table
    row = next(r for r in rows if r[0] == f"`{wiring}`" and (depth is None or r[1] == str(depth)))
    return row[header.index(col)]


class Tables(unittest.TestCase):
    def test_a_diverged_seed_is_left_out_and_counted_in_its_cell(self):
        tr = study()
        c = cell(tables.lr_table(tr), "none-nores", "lr 0.01", depth=8)
        self.assertIn("n=2", c)
        self.assertIn("1 of 3 seeds excluded", c)
        self.assertIn("diverged at step 133", c)
        self.assertNotIn("8324", c)  # the mean with the exploded seed in it

    def test_a_rate_whose_every_seed_diverged_keeps_its_column_and_says_so(self):
        tr = study()
        tr = sf.Training([fabricate.FakeSweep("train_grid", tr.runs + [
            fabricate.run("none-nores", 8, 3e-2, s, None, status="diverged", diverged_step=9) for s in range(3)])])
        c = cell(tables.lr_table(tr), "none-nores", "lr 0.03", depth=8)
        why = "; ".join(f"s{s} diverged at step 9" for s in range(3))
        self.assertEqual(c, f"excluded: 3 of 3 seeds ({why})")

    def test_a_cell_without_excluded_seeds_says_nothing_about_them(self):
        c = cell(tables.lr_table(study()), "none-nores", "lr 0.001", depth=8)
        self.assertIn("n=3", c)
        self.assertNotIn("excluded", c)

    def test_the_loss_table_counts_the_excluded_seeds_at_its_rate_only(self):
        tr = study()
        self.assertEqual(tr.ref_lr, 1e-3)
        c8 = cell(tables.loss_table(tr), "none-nores", "L=8")
        self.assertNotIn("excluded", c8)  # the diverged seed is at lr 1e-2, not in this table
        c2 = cell(tables.loss_table(tr), "none-nores", "L=2")
        self.assertIn("1 of 3 seeds excluded: s2 incomplete", c2)

    def test_no_interval_in_a_table_reaches_below_zero(self):
        tr = study()
        far = fabricate.run("none-nores", 8, 3e-3, 0, 3.44), fabricate.run("none-nores", 8, 3e-3, 1, 30.0)
        tr = sf.Training([fabricate.FakeSweep("train_grid", tr.runs + list(far))])
        c = cell(tables.lr_table(tr), "none-nores", "lr 0.003", depth=8)
        self.assertIn("95% CI 0.0000-", c)
        self.assertIn("clipped at 0", c)

    def test_the_seed_count_names_the_points_that_excluded_runs_left_short(self):
        text = tables.seeds_per_point(study())
        self.assertTrue(text.startswith("3 seeds per point, but 2 points hold fewer"), text)
        self.assertIn("none-nores L=8 lr 0.01 holds 2", text)
        self.assertIn("none-nores L=2 lr 0.001 holds 2", text)
        self.assertNotIn("1/3", text)

    def test_a_point_whose_every_seed_was_excluded_holds_zero(self):
        tr = study()
        tr = sf.Training([fabricate.FakeSweep("train_grid", tr.runs + [
            fabricate.run("none-nores", 8, 3e-2, s, None, status="diverged", diverged_step=9) for s in range(3)])])
        text = tables.seeds_per_point(tr)
        self.assertIn("3 points hold fewer", text)
        self.assertIn("none-nores L=8 lr 0.03 holds 0", text)
        self.assertLess(text.index("L=2 "), text.index("L=8 "))  # depths in numeric order

    def test_the_seed_count_of_full_points_is_one_number(self):
        runs = [fabricate.run("none-nores", 8, 1e-3, s, 3.436) for s in range(3)]
        self.assertEqual(tables.seeds_per_point(sf.Training([fabricate.FakeSweep("train_grid", runs)])),
                         "3 seeds per point")


class Findings(unittest.TestCase):
    def test_the_plateau_finding_lists_the_diverged_seed_it_could_not_judge(self):
        f = sf.finding_5(study())
        text = " ".join(f.measured)
        self.assertIn("left out", text)
        self.assertIn("none-nores L=8 lr 0.01", text)
        self.assertIn("diverged at step 133", text)


# ---- the summary, the sections and their links -------------------------------------------------

@dataclass
class Verdict:
    """A stand-in for claims.ClaimVerdict: the fields the report reads."""
    id: str
    claim: str
    source: str
    rule: str
    value: str
    verdict: str
    details: str


def fabricated_findings():
    return [sf.finding(i, f"claim {i}.", f"criterion {i}", [f"line {i}.{k}: {k}.5" for k in range(3)], i % 2,
                       deciding=f"number {i}.25") for i in range(1, 6)]


def page(claims, map_data=None):
    """The report's opening on fabricated findings and claims: (markdown, html, ids, summary hrefs)."""
    doc = report_doc.Doc()
    findings = fabricated_findings()
    map_data = map_data or stability_map.build([], lambda r: None)
    lines = report_map.map_text(map_data, stability_map.map_facts(map_data))
    sections.summary(doc, findings, claims, lines)
    for f in findings:
        sections.finding_section(doc, f, None, "")
    sections.claims_section(doc, claims, "test")
    sections.map_section(doc, "/nonexistent", map_data, lines, "", [], report_map.counts_table(map_data))
    html = doc.html("/nonexistent", "t")
    summary = html.split('id="summary"', 1)[1].split("</table>", 1)[0]
    return doc.markdown(), html, set(re.findall(r'id="([^"]+)"', html)), re.findall(r'<a href="#([^"]+)">', summary)


class Summary(unittest.TestCase):
    def setUp(self):
        self.claims = [Verdict(f"C{i}", f"Claim {i} holds; more words.", "Someone et al. 2020", "seen if x",
                               f"x = {i}.5 (0.1-0.9 over 3 seeds)", v, "| a | b |\n|---|---|\n| 1 | 2 |")
                       for i, v in zip(range(1, 4), ("seen", "not seen", "not run"))]

    def test_the_summary_lists_every_finding_and_claim_that_ran_with_a_link_whose_target_exists(self):
        _, html, ids, hrefs = page(self.claims)
        self.assertEqual(hrefs, [f"finding-{i}" for i in range(1, 6)] + ["claim-c1", "claim-c2"])
        for h in hrefs:
            self.assertIn(h, ids)
        for h in re.findall(r'<a href="#([^"]+)">', html):  # every in-page link of the page
            self.assertIn(h, ids)

    def test_a_row_gives_what_it_says_its_deciding_numbers_and_its_verdict(self):
        md, html, _, _ = page(self.claims)
        self.assertIn("| [3](#finding-3) | " + sf.title(3) + " | number 3.25 | **seen** |", md)
        self.assertIn("| [C2](#claim-c2) | Claim 2 holds | x = 2.5 (0.1-0.9 over 3 seeds) | **not seen** |", md)
        self.assertNotIn('href="#claim-c3"', html)  # not run: the one line below the table instead

    def test_every_number_of_a_finding_is_folded_under_its_section(self):
        md, html, _, _ = page(self.claims)
        sec = md.split('<a id="finding-2"></a>')[1].split("<a id=")[0]
        folded = sec.split("<details>")[1].split("</details>")[0]
        for k in range(3):
            self.assertIn(f"- line 2.{k}: {k}.5", folded)
        self.assertEqual(html.count("<details>"), 5 + 2)  # each finding, each claim that ran

    def test_a_claim_not_seen_says_why_and_one_without_a_reason_says_nothing(self):
        # The reason is data (claims_round2.json's why_not_seen, read by claims.py into `why`).
        why = Verdict("C2", "Claim 2 holds.", "S 2020", "seen if x", "x = 2.5", "not seen", "")
        why.why = "Category b, the rule asked more than the paper states: the paper says y."
        md, html, _, _ = page([why, self.claims[0]])
        self.assertIn("Why not seen: Category b, the rule asked more than the paper states: the paper says y.", md)
        self.assertEqual(md.count("Why not seen:"), 1)

    def test_a_claims_markdown_details_become_a_table_in_both_outputs(self):
        md, html, _, _ = page(self.claims)
        self.assertEqual(md.splitlines().count("|---|---|"), 2)
        self.assertEqual(html.count("<table>"), 1 + 2)  # the summary and each judged claim's table

    def test_a_tier_without_the_claims_runs_lists_every_claim_as_not_run_in_one_line(self):
        rows = claims.evaluate_all("/nonexistent")
        ids = []
        for _, doc in claims.rounds():  # round 1, then round 2
            ids += [c["id"] for c in doc["claims"]]
        self.assertEqual([r.id for r in rows], ids)
        self.assertEqual({r.verdict for r in rows}, {"not run"})
        md, _, page_ids, hrefs = page(rows)
        self.assertEqual(hrefs[5:], [])  # one line for all of them, no row each
        self.assertIn("Claims C1-C7 of `configs/experiments/claims.json` and C1r2-C4r2, C7r2 of "
                      "`configs/experiments/claims_round2.json`: not run at this tier", md)

    def test_without_map_runs_the_map_section_says_how_to_run_it(self):
        md, _, ids, _ = page(self.claims)
        self.assertIn(sections.MAP_ANCHOR, ids)
        sec = md.split(f'<a id="{sections.MAP_ANCHOR}"></a>')[1]
        self.assertIn("was not run", sec)
        self.assertIn("`bash scripts/reproduce.sh --claims`", sec)

    def test_with_map_runs_the_section_has_the_generated_text_and_every_cell(self):
        runs = [fabricate.map_run(v, "xavier", 32, 1e-2, s, "diverged" if v == "post" else "trained")
                for v in ("pre", "post") for s in range(3)]
        md, _, _, _ = page(self.claims, stability_map.build(runs, claims.outcome))
        sec = md.split(f'<a id="{sections.MAP_ANCHOR}"></a>')[1]
        self.assertIn("Post-norm fails where pre-norm trains at init xavier, L=32, lr 0.01 (post 0/3/0, pre 3/0/0)",
                      sec)
        self.assertIn("| `post` | xavier | 32 | 0/3/0 (diverged) |", sec)
        # issue 57 section 4: the section says once what its "trains" is (the rules' word: leaving the plateau)
        self.assertEqual(sec.count(report_map.TRAINS_MEANS), 1)
        self.assertIn("it left the plateau; whether it learns beyond symbol pairs", report_map.TRAINS_MEANS)
        self.assertNotIn(report_map.TRAINS_MEANS, md.split(f'<a id="{sections.MAP_ANCHOR}"></a>')[0])


if __name__ == "__main__":
    unittest.main()
