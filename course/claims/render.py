"""docs/claims/NN.md, rendered from docs/claims/NN.toml for readers (never edited by hand)."""
from __future__ import annotations

from course.claims.ledger import KINDS, Ledger
from course.claims.prose import source_path

LABELS = {"source": "Source", "cell": "Computed by", "test": "Re-checked by", "formula": "Formula",
          "evidence": "Evidence", "verified": "Verified", "corrects": "Corrects"}


def _quote(text: str) -> str:
    return " ".join(text.split())


def title(lesson: str) -> str:
    path = source_path(lesson)
    if path is None:
        return f"Lesson {lesson}"
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# # "):
            return line[4:].strip()
    return f"Lesson {lesson}"


def render(ledger: Ledger) -> str:
    counts = ledger.by_kind()
    lines = [f"# Claims ledger: {title(ledger.lesson)}", "",
             f"Rendered from `{ledger.lesson}.toml` by `python -m course.claims --render`; edit the "
             f"TOML, not this page. Each claim is quoted as it stands in the English and the Chinese "
             f"lesson; `tests/test_claims.py` fails when the lesson and this ledger part.", "",
             f"**{len(ledger.rows)} claims:** "
             + ", ".join(f"{counts[kind]} {kind}" for kind in KINDS) + ".", ""]
    for review in ledger.reviews:
        lines += [f"**Review** by {review.reader} at `{review.commit}`: {review.checked} checked, "
                  f"{review.wrong} wrong, {review.imprecise} imprecise, {review.fixed} fixed.", ""]
    lines += ["## Claims", ""]
    for row in ledger.rows:
        lines += [f"### {row.id} ({row.kind})", "", f"> {_quote(row.en)}", ">",
                  f"> {_quote(row.zh)}", ""]
        for name in ("source", "cell", "test", "formula", "evidence", "verified", "corrects"):
            text = getattr(row, name)
            if text:
                shown = f"`{_quote(text)}`" if name in ("cell", "test") else _quote(text)
                lines.append(f"- **{LABELS[name]}:** {shown}")
        lines.append("")
    lines += ["## Reviews", ""]
    for review in ledger.reviews:
        lines += [f"### {review.reader}, at `{review.commit}`", "",
                  "| checked | wrong | imprecise | fixed |", "|---|---|---|---|",
                  f"| {review.checked} | {review.wrong} | {review.imprecise} | {review.fixed} |", "",
                  "Read against:", ""]
        lines += [f"- {_quote(source)}" for source in review.sources]
        lines += ["", review.notes.strip(), ""]
    return "\n".join(lines).rstrip() + "\n"
