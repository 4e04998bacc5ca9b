"""`lawkit review` reports as text, GitHub workflow annotations and a Markdown comment body."""

from __future__ import annotations

import json
import re
from collections import Counter

from lawkit.keying.annotations import annotation
from lawkit.keying.footprints import FileVerdict
from lawkit.keying.review.footprints import EngineFileUnits, grouped
from lawkit.keying.review.lawchange import FileReview, Finding
from lawkit.keying.review.verify import CLASSES, ReviewReport

MARKDOWN_OK_ROWS = 50
"""Verified files listed one per row in a Markdown report; the rest are counted in one row."""
MARKDOWN_ENGINE_LINES = 200
"""Engine files listed in a Markdown report; the rest are counted."""
GITHUB_NOTICES = 50
"""Footprint verdicts annotated, and engine files whose units the summary lists, in a GitHub
report; `--format json` has them all."""

_DONE = {"rekey": "re-keyed", "refit": "refitted", "adopt": "adopted", "new": "new",
         "removed": "removed", "hand-edit": "hand-edited", "invalid": "invalid",
         "forgotten": "forgotten"}


def as_text(report: ReviewReport) -> str:
    """A report a person reads in a terminal: one line per law file, then the explanation."""
    key = report.key
    lines = [f"lawkit review: base {report.base.rev} ({report.base.short}, {key} "
             f"{report.base.digest or 'none'}) -> head {report.head.rev} ({report.head.short}, "
             f"{key} {report.head.digest})"]
    width = max((len(r.path) for r in report.files), default=0)
    for r in report.files:
        verdict = "ok" if r.ok else f"{len(r.findings)} finding{_s(len(r.findings))}"
        lines.append(f"  {r.path:<{width}}  {r.kind:<9}  {_keys(r):<20}  {verdict}")
    lines.append(_share(report))
    lines += [f"  {line}" for line in _reasons(report)]
    engine = report.engine
    if len(engine):
        lines.append(f"engine files changed since base ({len(engine)}), which the re-keys vouch "
                     "cannot move host time:")
        lines += _engine_text(report)
    else:
        lines.append("no hashed engine file changed since base")
    if report.not_hashed:
        lines.append(_not_hashed_line(report) + ":")
        lines += [f"  {n.change:<8} {n.path}" for n in report.not_hashed]
    lines += _footprints_text(report)
    if report.laws:
        lines.append(f"law verdicts at head ({len(report.laws)} law{_s(len(report.laws))}):")
        lines += [f"  {law.line()}" for law in report.laws]
    if report.merge is not None:
        lines.append(_merge_line(report))
        lines += [f"  {how:<8} {path}" for how, path in report.merge.moved.lines()]
    findings = report.findings
    if findings:
        lines.append(f"{len(findings)} finding{_s(len(findings))}:")
        lines += [f"  {finding}" for finding in findings]
    lines.append(f"lawkit review: {_verdict(report)}")
    return "\n".join(lines) + "\n"


def as_github(report: ReviewReport) -> str:
    """GitHub workflow annotations: an error per finding, then a notice with the verdict."""
    lines = [_annotation("error", finding.message, finding,
                         title=f"lawkit review: {finding.kind}") for finding in report.findings]
    summary = f"{_verdict(report)}. {_share(report)}"
    if len(report.engine):
        summary += (f"; {len(report.engine)} hashed engine file{_s(len(report.engine))} "
                    "changed since base")
    if report.merge is not None:
        summary += f"; {_merge_line(report)}"
    if report.not_hashed:
        summary += f"; {_not_hashed_line(report)}: " + ", ".join(
            f"{n.change} {n.path}" for n in report.not_hashed[:GITHUB_NOTICES])
    lines += _footprints_github(report)
    units = [f"{f.how} {f.path}: {f.summary()}"
             + "".join(f"; {u.text().replace('  ', ' ')}" for u in f.units)
             for f in report.engine_units[:GITHUB_NOTICES]]
    summary += "".join(f"\n{line}" for line in units)
    lines.append(_annotation("notice", summary, None, title="lawkit review"))
    return "\n".join(lines) + "\n"


def as_markdown(report: ReviewReport) -> str:
    """A short comment body for the change's page: the verdict first, then one row per file."""
    key = report.key
    mark = "❌" if report.findings else "✅"
    out = [f"{mark} **lawkit review: {_verdict(report)}**", "",
           f"base {_code(report.base.rev)} ({_code(report.base.short)}, {_md(key)} "
           f"{_code(report.base.digest or 'none')}) → head {_code(report.head.rev)} "
           f"({_code(report.head.short)}, {_md(key)} {_code(report.head.digest or 'none')})", ""]
    # Findings on no law file's row: the config's (listed first) and --require's.
    others = [*report.config_findings, *report.footprint_findings]
    if others:
        out += [f"- ❌ {_md(str(f))}" for f in others[:MARKDOWN_ENGINE_LINES]]
        if len(others) > MARKDOWN_ENGINE_LINES:
            out.append(f"- … and {len(others) - MARKDOWN_ENGINE_LINES} more (lawkit review "
                       "--format json lists them all)")
        out.append("")
    if report.files:
        # Every file with a finding gets a row; verified ones up to a cap, so that a change
        # re-keying a thousand files still fits in one comment (GitHub takes 65,536 characters).
        shown_ok = {id(r) for r in [r for r in report.files if r.ok][:MARKDOWN_OK_ROWS]}
        out += ["| file | class | from → to | verdict |", "|---|---|---|---|"]
        for r in report.files:
            if r.ok and id(r) not in shown_ok:
                continue
            verdict = "✅ ok" if r.ok else "❌ " + "<br>".join(_md(_in_file(f))
                                                              for f in r.findings)
            out.append(f"| {_code(r.path)} | {r.kind} | {_md_keys(r)} | {verdict} |")
        left = Counter(r.kind for r in report.files if r.ok and id(r) not in shown_ok)
        if left:
            out.append(f"| … {sum(left.values())} more | "
                       + ", ".join(f"{n} {kind}" for kind, n in left.most_common())
                       + " | | ✅ ok |")
        out.append("")
    out.append(_share(report))
    out += [f"- {_md(line)}" for line in _reasons(report)]
    out.append("")
    engine = report.engine
    if len(engine):
        out += [f"<details><summary>{len(engine)} hashed engine file{_s(len(engine))} changed "
                "since base: what the re-keys vouch cannot move host time</summary>", ""]
        listed = engine.lines()
        units = {f.path: f for f in report.engine_units}
        for how, path in listed[:MARKDOWN_ENGINE_LINES]:
            out.append(f"- {how} {_code(path)}")
            out += _md_units(units.get(path))
        if len(listed) > MARKDOWN_ENGINE_LINES:
            out.append(f"- … and {len(listed) - MARKDOWN_ENGINE_LINES} more (lawkit review "
                       "--format json lists them all)")
        out += ["", "</details>", ""]
    else:
        out += ["No hashed engine file changed since base.", ""]
    if report.not_hashed:
        out += [f"<details><summary>{_html(_not_hashed_line(report))}</summary>", ""]
        out += [f"- {n.change} {_code(n.path)}"
                for n in report.not_hashed[:MARKDOWN_ENGINE_LINES]]
        if len(report.not_hashed) > MARKDOWN_ENGINE_LINES:
            out.append(f"- … and {len(report.not_hashed) - MARKDOWN_ENGINE_LINES} more (lawkit "
                       "review --format json lists them all)")
        out += ["", "</details>", ""]
    out += _footprints_markdown(report)
    out += _laws_markdown(report)
    if report.merge is not None:
        m = report.merge
        out.append(f"{'❌' if m.findings else '✅'} {_md(_merge_line(report))}")
        out += [f"- {how} {_code(path)}" for how, path in m.moved.lines()]
        out += [f"- {_md(f.message)}" for f in m.findings if f.kind == "merge-conflict"]
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _engine_text(report: ReviewReport) -> list[str]:
    """One line per engine file changed, with its units below it."""
    units = {f.path: f for f in report.engine_units}
    lines = []
    for how, path in report.engine.lines():
        file = units.get(path)
        lines.append(f"  {how:<8} {path}")
        if file is not None and file.how == "changed" and file.layout_only:
            lines.append("      (layout, comments or docstrings only)")
        lines += [f"      {u.text()}" for u in (file.units if file else ())]
    return lines


def _not_hashed_line(report: ReviewReport) -> str:
    n = len(report.not_hashed)
    return (f"{n} file{_s(n)} in hashed packages that the digest does not hash changed since "
            "base (not hashed: code there can run unseen by the digest)")


def _footprints_text(report: ReviewReport) -> list[str]:
    """Each law file's footprint verdict, then the units behind each footprint's."""
    if not report.footprints:
        return []
    n = len(report.footprints)
    lines = [f"footprint verdicts at head ({n} law file{_s(n)} naming a footprint):"]
    width = max(len(v.path) for v in report.footprints)
    lines += [f"  {v.path:<{width}}  {v.verdict:<9}  footprint {v.footprint}"
              + (f" ({v.why_unknown})" if v.diff is None else "") for v in report.footprints]
    for path, v in grouped(report.footprints):
        assert v.diff is not None
        lines.append(f"  footprint {path}: {v.summary().partition(': ')[0]}, {report.key} "
                     f"{v.diff.footprint_digest} (recorded) -> {v.diff.target_digest} (head)")
        lines += [f"      {u.line()}" for u in v.diff.units]
        lines += [f"      {line}" for line in _env_lines(v)]
    return lines


def _env_lines(v: FileVerdict) -> list[str]:
    """The differences of the environment behind a verdict, one per line, when a target
    environment was named (`lawkit review --env`, or the config's)."""
    env = v.diff.env if v.diff is not None else None
    if env is None or env.source is None:
        return []
    return env.lines()


def _footprints_github(report: ReviewReport) -> list[str]:
    """A notice per law file's footprint verdict, on the law file."""
    out = []
    for v in report.footprints[:GITHUB_NOTICES]:
        units = [u.line() for u in v.diff.units] + _env_lines(v) if v.diff is not None else []
        below = "\n".join([*units, *(law.line() for law in v.laws)])
        out.append(_annotation("notice", f"footprint verdict {v.summary()}"
                               + (f"\n{below}" if below else ""),
                               Finding("footprint", "", v.path),
                               title=f"lawkit review: footprint {v.verdict}"))
    return out


def _md_units(file: EngineFileUnits | None) -> list[str]:
    """An engine file's units, as a list nested under its line."""
    if file is None:
        return []
    out = ["  - layout, comments or docstrings only"] if file.how == "changed" and \
        file.layout_only else []
    out += [f"  - {u.change} {_code(u.unit)}" + (" (layout only)" if u.layout_only else "")
            for u in file.units[:MARKDOWN_ENGINE_LINES]]
    if len(file.units) > MARKDOWN_ENGINE_LINES:
        out.append(f"  - … and {len(file.units) - MARKDOWN_ENGINE_LINES} more")
    return out


_VERDICT_MARK = {"untouched": "✅", "startup": "⚠️", "steps": "❌", "unknown": "❔"}


def _footprints_markdown(report: ReviewReport) -> list[str]:
    """A table of law files' footprint verdicts, then the units behind each footprint's."""
    if not report.footprints:
        return []
    out = ["| law file | footprint verdict | footprint |", "|---|---|---|"]
    for v in report.footprints[:MARKDOWN_OK_ROWS]:
        why = f" ({_md(v.why_unknown)})" if v.diff is None else ""
        out.append(f"| {_code(v.path)} | {_VERDICT_MARK.get(v.verdict, '')} {v.verdict}{why} | "
                   f"{_code(v.footprint or '')} |")
    if len(report.footprints) > MARKDOWN_OK_ROWS:
        out.append(f"| … {len(report.footprints) - MARKDOWN_OK_ROWS} more | | |")
    out.append("")
    for path, v in grouped(report.footprints):
        assert v.diff is not None
        out += [f"<details><summary>footprint <code>{_html(path)}</code>: "
                f"{_html(v.verdict)}, {_html(v.diff.summary())}</summary>", ""]
        out += [f"- {u.change} {_code(u.path)} {_code(u.unit)}: {_md(u.ran())}, counts as "
                f"{u.counts_as}" + (" (layout only)" if u.layout_only else "")
                for u in v.diff.units[:MARKDOWN_ENGINE_LINES]]
        if len(v.diff.units) > MARKDOWN_ENGINE_LINES:
            out.append(f"- … and {len(v.diff.units) - MARKDOWN_ENGINE_LINES} more (lawkit review "
                       "--format json lists them all)")
        out += [f"- {_md(line)}" for line in _env_lines(v)]
        out += ["", "</details>", ""]
    return out


def _laws_markdown(report: ReviewReport) -> list[str]:
    """A table of each law's verdict: its file, name and target, its region, the verdict."""
    if not report.laws:
        return []
    out = ["| law file | law (target) | region | verdict |", "|---|---|---|---|"]
    for law in report.laws[:MARKDOWN_OK_ROWS]:
        out.append(f"| {_code(law.file)} | {_code(law.name)} ({_code(law.target)}) | "
                   f"{_code(law.region) if law.region else '—'} | "
                   f"{_VERDICT_MARK.get(law.verdict, '')} {law.verdict} |")
    if len(report.laws) > MARKDOWN_OK_ROWS:
        out.append(f"| … {len(report.laws) - MARKDOWN_OK_ROWS} more | | | |")
    return [*out, ""]


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _verdict(report: ReviewReport) -> str:
    findings = len(report.findings)
    if findings:
        return f"{findings} finding{_s(findings)}"
    touched = sum(1 for r in report.files if r.touched)
    return (f"verified: {touched} law file{_s(touched)} changed, every law names {report.key} "
            f"{report.head.digest}")


def _share(report: ReviewReport) -> str:
    """How the changed law files split by class, with the re-keyed and refitted shares."""
    counts = Counter(r.kind for r in report.files if r.touched)
    touched = sum(counts.values())
    parts = []
    for kind in CLASSES:
        n = counts[kind]
        if n and kind in ("rekey", "refit"):
            parts.append(f"{n} {_DONE[kind]} ({100 * n / touched:.0f}%)")
        elif n:
            parts.append(f"{n} {_DONE[kind]}")
    untouched = Counter(r.kind for r in report.files if not r.touched)
    left = [f"{n} {_DONE[kind]}" for kind, n in sorted(untouched.items())]
    left.append(f"{report.unchanged} current")
    return (f"law files changed: {touched}" + (f" ({', '.join(parts)})" if parts else "")
            + f"; untouched: {', '.join(left)}")


def _reasons(report: ReviewReport) -> list[str]:
    """Each distinct re-key/adopt reason with its refs and how many files give it."""
    seen: dict[tuple[str, tuple[str, ...]], int] = {}
    for r in report.files:
        for why in dict.fromkeys(r.whys):
            seen[why, tuple(r.refs)] = seen.get((why, tuple(r.refs)), 0) + 1
    return [f"why: {json.dumps(why, ensure_ascii=False)}"
            + (f" (refs {', '.join(refs)})" if refs else "") + f": {n} file{_s(n)}"
            for (why, refs), n in seen.items()]


def _merge_line(report: ReviewReport) -> str:
    m = report.merge
    assert m is not None
    where = f"merge with {m.rev} ({m.commit[:10]})"
    if m.digest is None:
        state = "conflicts in hashed engine files: the merged digest is unknown"
    elif m.digest == report.head.digest:
        state = f"{report.key} {m.digest}, as at head: the laws stay current"
    else:
        state = (f"{report.key} {m.digest}, not {report.head.digest} as at head: the laws will "
                 "be stale once merged")
    if m.conflicts:
        state += f"; {len(m.conflicts)} conflicted file{_s(len(m.conflicts))}"
    return f"{where}: {state}"


def _keys(r: FileReview) -> str:
    if not r.touched or not (r.key_from or r.key_to):
        return r.key_to or r.key_from or ""
    return f"{r.key_from or ''} -> {r.key_to or ''}".strip()


def _md_keys(r: FileReview) -> str:
    return " ".join(_code(k) if k != "->" else "→" for k in _keys(r).split())


def _in_file(finding: Finding) -> str:
    return f"line {finding.line}: {finding.message}" if finding.line else finding.message


def _md(text: str) -> str:
    """Text that a CommonMark renderer with HTML enabled shows as it is, placed inside a line
    (never at its start): each character that can open inline markup backslash-escaped (a tag
    or autolink `<`, an entity `&`, code, emphasis, links and images, GFM's strikethrough and
    table cells), so nothing a file name, a ref or a --why holds is interpreted; line breaks
    become spaces."""
    return _PUNCTUATION.sub(r"\\\g<0>", _one_line(text))


def _code(text: str) -> str:
    """Text as a code span (HTML is never interpreted inside one): fenced by one backtick more
    than the longest run in it, `|` escaped for a table cell (GFM reads that escape first)."""
    text = _one_line(text)
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) else ""
    return f"{fence}{pad}{text.replace('|', chr(92) + '|')}{pad}{fence}"


def _one_line(text: str) -> str:
    return re.sub(r"[\r\n\u2028\u2029\x85]+", " ", text)


_PUNCTUATION = re.compile(r"[\\`*_\[\]<>&|!~]")


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _annotation(level: str, message: str, finding: Finding | None, *, title: str) -> str:
    path = finding.path if finding is not None else None
    line = finding.line if finding is not None else None
    return annotation(level, message, file=path, line=line, title=title)
