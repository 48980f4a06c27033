"""Every internal link of the repository's Markdown resolves: README.md, docs/**/*.md (the log
included) and every other .md in the tree. A relative link's file must exist, and its `#anchor`
must be the GitHub slug of a heading in the target (lowercase, punctuation but - and _ dropped,
spaces to -, a repeated heading -1, -2, ...) or an explicit <a id/name>. Sources and configs
that name a doc section in prose ("docs/study.md, 'Embedding scale'") must name a heading that
starts so. The slug rules and the checker are tested on inline text first, so that a checker
that finds nothing cannot pass: a broken link must fail.
"""
import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP_DIRS = {".git", "runs", "node_modules", "__pycache__"}
SOURCE_EXTS = (".py", ".sh", ".cpp", ".h", ".json", ".txt", ".cmake")

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"", re.I)
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# A doc section named in prose: docs/usage.md, "Sweep files" / docs/usage.md ("Exit codes")
NAMED_SECTION = re.compile(r"(docs/[\w/.-]+\.md),? \(?[\"']([^\"'\n]{2,80})[\"']")
# A doc anchor named in a source: docs/study.md#measurements
SOURCE_ANCHOR = re.compile(r"((?:docs/[\w/.-]+|README)\.md)#([\w-]+)")


# Test data: generated documents pinned as expected outputs (a report.md whose figures the test
# does not keep), not the project's writing.
FIXTURE_DIRS = (os.path.join("tests", "python", "data"), os.path.join("tests", "fixtures"))


def md_files():
    """Every .md file of the tree but build output, runs and test data, as paths relative to ROOT."""
    out = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("build"))
        if os.path.relpath(dirpath, ROOT).startswith(FIXTURE_DIRS):
            continue
        out += [os.path.relpath(os.path.join(dirpath, f), ROOT) for f in sorted(filenames) if f.endswith(".md")]
    return out


def prose_lines(text: str):
    """(line number, line) of the lines outside fenced code blocks."""
    fenced = False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def heading_text(raw: str) -> str:
    """A heading's text as GitHub renders it: links to their text, code and emphasis to their content."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    return re.sub(r"<[^>]+>", "", text)


def slug(text: str) -> str:
    """GitHub's anchor for a heading: lowercase, every character but letters, digits, spaces, - and _
    dropped, each space a -."""
    text = heading_text(text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def headings(text: str):
    """The headings' texts, in order, outside code blocks."""
    return [heading_text(m.group(2)) for _, line in prose_lines(text) if (m := HEADING.match(line))]


def anchors(text: str) -> set:
    """Every anchor a Markdown text defines: its headings' slugs (repeats numbered -1, -2, ...) and
    explicit <a id="..."> or <a name="...">."""
    seen: dict = {}
    out = set()
    for h in headings(text):
        s = slug(h)
        if s in seen:
            seen[s] += 1
            s = f"{s}-{seen[s]}"
        else:
            seen[s] = 0
        out.add(s)
    out.update(m.group(1) for _, line in prose_lines(text) for m in HTML_ANCHOR.finditer(line))
    return out


def links(text: str):
    """(line number, target) of each inline link and image outside code."""
    for n, line in prose_lines(text):
        for m in LINK.finditer(INLINE_CODE.sub("", line)):
            yield n, m.group(1)


def read_doc(path: str) -> str:
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def in_tree(path: str) -> bool:
    return os.path.exists(os.path.join(ROOT, path))


def broken_links(rel: str, text: str, read=read_doc, exists=in_tree):
    """The broken internal links of the Markdown text of file `rel` (relative to ROOT), each as
    'rel:line: target: why'. `read(path)` gives a target's text and `exists(path)` says whether it
    is there (the file system by default)."""
    out = []
    for n, target in links(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(rel), path)) if path else rel
        if dest.startswith(".."):
            out.append(f"{rel}:{n}: {target}: points outside the repository")
            continue
        if path and not exists(dest):
            out.append(f"{rel}:{n}: {target}: no file {dest}")
            continue
        if anchor and dest.endswith(".md"):
            if anchor not in anchors(text if dest == rel else read(dest)):
                out.append(f"{rel}:{n}: {target}: no heading in {dest} has the anchor #{anchor}")
    return out


def source_files():
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("build"))
        for f in sorted(filenames):
            if f.endswith(SOURCE_EXTS):
                yield os.path.relpath(os.path.join(dirpath, f), ROOT)


class SlugRules(unittest.TestCase):
    def test_github_slugs_of_the_docs_kinds_of_heading(self):
        self.assertEqual(slug("Convergence: does deep stacking fail, or only start late?"),
                         "convergence-does-deep-stacking-fail-or-only-start-late")
        self.assertEqual(slug("Round 2's verdicts"), "round-2s-verdicts")
        self.assertEqual(slug("A worked 4-number example of `x + F(norm(x))`"),
                         "a-worked-4-number-example-of-x--fnormx")
        self.assertEqual(slug("Again on an Intel Xeon (2026-12-05): the cells at L = 2 and 8"),
                         "again-on-an-intel-xeon-2026-12-05-the-cells-at-l--2-and-8")
        self.assertEqual(slug("The quick tier now: pre- vs post-norm and a text point"),
                         "the-quick-tier-now-pre--vs-post-norm-and-a-text-point")
        self.assertEqual(slug("`train.flush_subnormals` and [links](x.md)"), "trainflush_subnormals-and-links")

    def test_repeated_headings_are_numbered_and_code_blocks_hold_no_heading(self):
        text = "# A\n\n## Setup\n\n```sh\n# not a heading\n```\n\n## Setup\n\n### Setup\n<a id=\"here\"></a>\n"
        self.assertEqual(anchors(text), {"a", "setup", "setup-1", "setup-2", "here"})


class Checker(unittest.TestCase):
    """The checker on inline files: it must report each kind of broken link, so that the real scan
    below cannot pass by finding nothing."""
    FILES = {"docs/a.md": "# Title\n\n## Two words\n", "docs/log/x.md": "# Log\n"}

    def check(self, rel, text):
        return broken_links(rel, text, read=lambda p: self.FILES[p],
                            exists=lambda p: p in self.FILES or in_tree(p))

    def test_good_links_pass(self):
        text = ("[t](../README.md) [t](a.md#two-words) [t](#here) [w](https://example.com/#x) "
                "![f](figures/escape_step_vs_depth.png) [l](log/x.md#log)\n\n## Here\n")
        self.assertEqual(self.check("docs/b.md", text), [])

    def test_a_missing_file_or_anchor_fails(self):
        self.assertEqual(len(self.check("docs/b.md", "[t](a.md#three-words)\n")), 1)
        self.assertEqual(len(self.check("docs/b.md", "[t](nothere.md)\n")), 1)
        self.assertEqual(len(self.check("docs/b.md", "[t](#nowhere)\n## Somewhere\n")), 1)
        self.assertEqual(len(self.check("docs/b.md", "[t](../../outside.md)\n")), 1)

    def test_links_in_code_are_not_links(self):
        self.assertEqual(self.check("docs/b.md", "`[t](nothere.md)`\n```\n[t](nothere.md)\n```\n"), [])


class RepositoryDocs(unittest.TestCase):
    def test_every_internal_link_and_anchor_resolves(self):
        files = md_files()
        for must in ("README.md", "docs/study.md", "docs/benchmarks.md"):
            self.assertIn(must, files)
        broken = []
        for rel in files:
            with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
                broken += broken_links(rel, f.read())
        self.assertEqual(broken, [], "broken links:\n" + "\n".join(broken))

    def test_anchors_named_in_sources_resolve(self):
        """An anchor of a doc named in a source, a script or a config (docs/study.md#measurements) is a
        heading of that doc."""
        broken = []
        for rel in source_files():
            with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as f:
                for m in SOURCE_ANCHOR.finditer(f.read()):
                    doc, anchor = m.group(1), m.group(2)
                    if not in_tree(doc) or anchor not in anchors(read_doc(doc)):
                        broken.append(f"{rel}: {doc}#{anchor}")
        self.assertEqual(broken, [], "\n".join(broken))

    def test_sections_named_in_sources_exist(self):
        """'docs/study.md, "Measured on tiny Shakespeare"' in a source or config names a heading of
        that doc that starts with the quoted words."""
        missing, named = [], 0
        for rel in source_files():
            with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as f:
                text = f.read()
            for m in NAMED_SECTION.finditer(text):
                doc, name = m.group(1), m.group(2)
                named += 1
                if not os.path.exists(os.path.join(ROOT, doc)):
                    missing.append(f"{rel}: {doc}: no such file")
                    continue
                doc_text = read_doc(doc)
                leads = headings(doc_text) + re.findall(r"\*\*([^*]+)\*\*", doc_text)
                if not any(h.lower().startswith(name.lower()) for h in leads):
                    missing.append(f"{rel}: {doc}, '{name}': no heading (or bold lead) starts so")
        self.assertGreater(named, 5, "the pattern found no named section: is it still the sources' form?")
        self.assertEqual(missing, [], "\n".join(missing))


if __name__ == "__main__":
    unittest.main()
