"""docs/study.md is the argument and docs/log/ holds the run records (issue 58): study.md names no
commit (7-40 hex characters with a digit and a letter) and no date (YYYY-MM-DD) outside a link,
whose target is the record that holds them. And the README's first screen is a front page, not a
results page: the quick start with its expected output by line 15, no sentence over 40 words in
its first 40 lines. Each checker is tried on inline text first, so that a checker that finds nothing
cannot pass."""
import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# An inline link or image, its text and its target: [text](target), ![alt](target).
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\([^)\s]*(?:\s+\"[^\"]*\")?\)")
DATE = re.compile(r"(?<![\w-])\d{4}-\d{2}-\d{2}(?![\w-])")
# A commit: 7-40 hex characters holding a digit and a letter a-f, so that neither a word (decade,
# faced) nor a number (2732000) is taken for one; a hash of digits alone is missed, a 3.7 % chance.
COMMIT = re.compile(r"(?<![\w.-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])")

FRONT_LINES = 40
MAX_WORDS = 40
QUICK_START_BY = 15


def records_outside_links(text: str) -> list:
    """'line N: what' for each date or commit hash of the text outside a link's text and target."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        bare = LINK.sub("", line)
        out += [f"line {n}: date {m.group(0)}" for m in DATE.finditer(bare)]
        out += [f"line {n}: commit {m.group(0)}" for m in COMMIT.finditer(bare)]
    return out


def prose(lines) -> str:
    """The prose of Markdown lines: code blocks, HTML comments, images and headings left out, links
    reduced to their text."""
    out, fenced = [], False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.startswith(("<!--", "![", "#")) or not line.strip():
            out.append("\n")  # a paragraph ends a sentence
            continue
        out.append(line)
    text = " ".join(out)
    return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)


def long_sentences(lines, limit=MAX_WORDS) -> list:
    """The sentences of the lines' prose longer than `limit` words (a sentence ends at ., ! or ?
    before a space, or at a paragraph's end)."""
    out = []
    for para in prose(lines).split("\n"):
        for sentence in re.split(r"(?<=[.!?])\s+", para.strip()):
            if len(sentence.split()) > limit:
                out.append(f"{len(sentence.split())} words: {sentence[:80]}...")
    return out


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


class Checkers(unittest.TestCase):
    def test_a_date_or_commit_outside_a_link_is_found(self):
        text = ("Run on 2026-12-03 at 7732fc0.\n"
                "[the 2026-12-03 run at 7732fc0](log/2026-12-03-x.md) and [its record](log/2026-12-03-x.md).\n"
                "Numbers are not commits: 2732000, 1.5e8, 3e-4, a decade, 4.4e-23, faced.\n")
        self.assertEqual(records_outside_links(text), ["line 1: date 2026-12-03", "line 1: commit 7732fc0"])

    def test_a_full_hash_and_a_date_range_are_found(self):
        text = "binary of e77d5e2d8756c681d08012b4759865170c58b396; 2026-12-01 to 2026-12-03\n"
        self.assertEqual(len(records_outside_links(text)), 3)

    def test_a_sentence_over_the_limit_is_found_and_code_is_not_prose(self):
        long = " ".join(["word"] * 41) + "."
        self.assertEqual(len(long_sentences(["Short one. " + long, "```sh", " ".join(["x"] * 60), "```"])), 1)
        self.assertEqual(long_sentences(["Ten words " * 3 + "end.", "A new line continues it."]), [])


class StudyMd(unittest.TestCase):
    def test_study_md_names_no_date_or_commit_outside_a_link(self):
        found = records_outside_links(read("docs/study.md"))
        self.assertEqual(found, [], "docs/study.md holds run records; move them to docs/log/ and link them:\n"
                         + "\n".join(found))

    def test_study_md_links_the_records_it_cites(self):
        text = read("docs/study.md")
        self.assertGreater(len(re.findall(r"\]\(log/\d{4}-\d{2}-\d{2}-[\w.-]+\.md\)", text)), 10)
        self.assertGreater(len(re.findall(r"\]\(results/\w+\.csv\)", text)), 5)


class ReadmeFrontPage(unittest.TestCase):
    def setUp(self):
        self.lines = read("README.md").splitlines()

    def test_the_quick_start_and_its_expected_output_come_first(self):
        head = self.lines[:QUICK_START_BY]
        train = [n for n, line in enumerate(head) if line.startswith("build/stacklab train configs/quickstart.json")]
        self.assertTrue(train, f"the quick start's train command is not in the README's first {QUICK_START_BY} lines")
        self.assertIn("val loss", head[train[0]], "the train command's line shows no expected loss")
        self.assertIn("runs/quickstart", head[train[0]], "the train command's line names no output folder")

    def test_no_sentence_of_the_first_screen_is_over_the_limit(self):
        self.assertEqual(long_sentences(self.lines[:FRONT_LINES]), [])


if __name__ == "__main__":
    unittest.main()
