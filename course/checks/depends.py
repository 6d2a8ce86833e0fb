"""One bug, one failure: a check whose exercise calls a failing exercise says so first.

Each Check declares `uses`, the checks of the exercises its exercise calls, and `provides`, the
parts of its own exercise a stand-in can take the place of (a function; a class's methods).
When an exercise fails as written and one of the exercises it uses fails its own check (or is
still a stub), the message starts with that root cause (BLOCKED), then says whether this exercise
is right on its own: it runs again with the failing ones replaced by stand-ins that replay the
reference's recorded calls (course/confirm/standins.py).

With COURSE_ISOLATE=1 (what the grader sets in its sandboxes) a check judges only its own
exercise: every exercise it uses is replaced by a stand-in from the start, so a bug is charged to
the exercise that has it. BLOCKED then remains only where no stand-in can separate the two (a
bug in a constructor two checks share).
"""
from __future__ import annotations

import inspect
import os
from dataclasses import dataclass

from course.checks import lines, messages
from course.checks.failures import Blocked, CheckFailed, NotImplementedYet
from course.checks.running import namespaces_of, run_all
from course.confirm.standins import name_of
from course.i18n import _, listed
from course.stub_message import parse_stub_message, stub_left

ISOLATE = "COURSE_ISOLATE"


def isolating() -> bool:
    """Whether checks judge their own exercise only (COURSE_ISOLATE=1)."""
    return os.environ.get(ISOLATE, "") == "1"


def closure(check) -> list:
    """Every check `check` uses, directly or through others, each once."""
    found: dict[str, object] = {}

    def visit(current):
        for used in current.uses:
            if used.id not in found:
                found[used.id] = used
                visit(used)

    visit(check)
    return list(found.values())


@dataclass
class Status:
    check: object
    status: str                 # PASS, FAIL, BLOCKED or TODO, as written
    roots: tuple[str, ...] = ()  # what blocks it (BLOCKED), or itself (FAIL, TODO)
    via: object = None           # BLOCKED: the first check it uses that does not pass


class Session:
    """What is known about the checks of one package: a check cell, or a whole `make check`."""

    def __init__(self, reference):
        self.reference = reference
        self.statuses: dict[str, Status] = {}
        self.covered: dict[str, bool] = {}
        self.running: set[str] = set()

    def note(self, check, failure: CheckFailed | None) -> None:
        if failure is None:
            self.statuses[check.id] = Status(check, lines.PASS)
        elif isinstance(failure, Blocked):
            self.statuses[check.id] = Status(check, lines.BLOCKED, tuple(failure.roots),
                                             getattr(failure, "via", None))
        elif isinstance(failure, NotImplementedYet):
            self.statuses[check.id] = Status(check, lines.TODO, (check.id,))
        else:
            self.statuses[check.id] = Status(check, lines.FAIL, (check.id,))


def judge(check, impl, session: Session, explain: bool = True,
          isolate: bool | None = None) -> CheckFailed | None:
    """None when the exercise passes, else what to raise (FAIL, BLOCKED or NOT IMPLEMENTED YET).

    explain: for a BLOCKED exercise, also try it on its own (a dependency's status needs not).
    """
    isolate = isolating() if isolate is None else isolate
    session.running.add(check.id)
    try:
        if isolate and check.stand_in_targets():
            failure = _isolated(check, impl, session)
        else:
            outcomes = run_all(check, impl, session.reference)
            failure = _as_written(check, impl, outcomes, session, explain)
    finally:
        session.running.discard(check.id)
    session.note(check, failure)
    return failure


def status_of(check, package: str, session: Session) -> Status:
    """How `check` fares on the student's package as written (computed once per session)."""
    if check.id in session.statuses:
        return session.statuses[check.id]
    if check.id in session.running:
        return Status(check, lines.PASS)  # a loop of uses cannot block itself
    try:
        impl = check.resolve(package)
    except Exception:  # noqa: BLE001 - a file that does not import fails its checks
        unknown = not _is_package(package)  # code defined in a notebook: nothing to look up
        session.statuses[check.id] = Status(check, lines.PASS if unknown else lines.FAIL,
                                            () if unknown else (check.id,))
        return session.statuses[check.id]
    judge(check, impl, session, explain=False, isolate=False)
    return session.statuses[check.id]


def _is_package(name: str) -> bool:
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.submodule_search_locations is not None


# ---------------------------------------------------------------------------- as written

def _as_written(check, impl, outcomes, session, explain) -> CheckFailed | None:
    found = _failing(check, impl, outcomes, session)
    if found is None or isinstance(found, CheckFailed):
        return found
    stub, blockers = found
    if not blockers:
        return messages.not_implemented(check, stub[1]) if stub else messages.fail(check, outcomes)
    return _blocked(check, impl, outcomes, blockers, session, explain)


def _failing(check, impl, outcomes, session):
    """None when every case passed; NOT IMPLEMENTED YET for the exercise's own stub; else (the
    stub of an exercise it uses, or None; the statuses of the exercises it uses that fail)."""
    if not any(o.failed for o in outcomes):
        return None
    stub = _stub(check, impl, outcomes)
    if stub is not None and stub[0] is None:
        return messages.not_implemented(check, stub[1])
    package = namespaces_of(impl)[0]
    return stub, [s for s in (status_of(used, package, session) for used in check.uses)
                  if s.status != lines.PASS]


def _blocked(check, impl, outcomes, blockers, session, explain) -> Blocked:
    roots = list(dict.fromkeys(root for b in blockers for root in b.roots))
    text = [lines.blocked_header(check.id, roots)]
    text += [f"  {line}" for line in _leads(check, blockers, session)]
    errors = messages.errors(outcomes)
    if not explain:
        failure = Blocked("\n".join(text), roots, "untried", errors=errors)
    else:
        replaced = _replaced(blockers, session)
        alone, own, line = _alone(check, impl, replaced, session, outcomes)
        text += [f"  {line}"] + ([_indent(str(own))] if own is not None else [])
        failure = Blocked("\n".join(text), roots, alone, own, errors)
    failure.via = blockers[0].check
    return failure


def _independent(check, outcomes, replaced):
    """BLOCKED hides only what depends on the blocker: the failing cases that called none of
    the blocked exercises (a module's parameter names, a probe of its own) are this exercise's
    own failure, reported as such: ("fail", that failure, the line that says so), or None.
    Only where the blocked exercises are calls a stand-in could answer: code no stand-in
    replaces (a shared constructor) runs in every case, called or not."""
    blocked = {t for used in replaced for t in used.provides}
    own = [o for o in outcomes if o.failed and o.status != "todo" and
           not any(call["target"] in blocked for call in o.seen)]
    if not own:
        return None
    shown = own + [o for o in outcomes if not o.failed]
    failure = messages.fail(check, shown, tally=False)
    names = ", ".join(sorted({name_of(t) for t in blocked}))
    return "fail", failure, _("It also fails on its own: a case that calls none of {names} "
                              "fails too:").format(names=names)


def _leads(check, blockers: list[Status], session) -> list[str]:
    """What to say first: which exercise this one uses fails (or is blocked), what to fix first;
    further exercises blocked by the same root causes in one more line."""
    out, done = [], set()
    for blocker in blockers:
        if blocker.roots in done:
            continue
        done.add(blocker.roots)
        out.append(_lead(check, blocker, session))
        others = [b.check.id for b in blockers if b.roots == blocker.roots and b is not blocker]
        if others:
            out.append(_("(also blocked by the same: {ids})").format(ids=listed(others)))
    return out


def _lead(check, blocker: Status, session) -> str:
    """One blocking exercise: through which of the student's functions, and what to fix first."""
    used, root = blocker.check, _root(blocker, session)
    names = {"exercise": check.attribute, "used": used.attribute, "id": used.id,
             "root": root.attribute, "root_id": root.id, "lesson": used.lesson}
    if used.attribute == check.attribute:
        start = _("this check also runs your {used}'s lesson {lesson} part").format(**names)
    else:
        start = _("your {exercise} calls your {used}").format(**names)
    if blocker.status == lines.BLOCKED and root is not used:
        start += _(", and through it your {root}").format(**names)
    status = session.statuses.get(root.id, blocker)
    if status.status == lines.TODO:
        return start + _(", which is not written yet ({root_id}): write it first.").format(**names)
    return start + _(", which fails {root_id}: fix that first.").format(**names)


def _root(blocker: Status, session):
    """The check at the end of a chain of BLOCKED ones: the first that fails on its own."""
    current, seen = blocker, set()
    while current.status == lines.BLOCKED and current.via is not None and \
            current.check.id not in seen:
        seen.add(current.check.id)
        current = session.statuses.get(current.via.id, current)
        if current.via is None and current.status == lines.BLOCKED:
            break
    return current.check


def _replaced(blockers, session) -> list:
    """The blocking checks and, below them, every check of theirs that does not pass."""
    found: dict[str, object] = {}
    for blocker in blockers:
        for used in [blocker.check] + closure(blocker.check):
            status = session.statuses.get(used.id)
            if status is not None and status.status != lines.PASS:
                found[used.id] = used
    return list(found.values())


def _alone(check, impl, replaced, session,
           written=()) -> tuple[str, CheckFailed | None, str]:
    """("pass" | "fail" | "untried", the failure on its own, the line that says so)."""
    own = set(check.own_targets())
    targets = [t for used in replaced for t in used.provides if t not in own]
    if not targets:
        return "untried", None, _untried_shared(check, replaced)
    outcomes = run_all(check, impl, session.reference, replace=targets)
    used = sorted({name_of(t) for o in outcomes for t in o.replaced}) or \
        sorted({name_of(t) for t in targets})
    names = listed(used)
    if not any(o.failed for o in outcomes):
        return "pass", None, _("On its own, your {exercise} is right: with the reference {names} "
                               "in place of yours, all {n} cases pass.").format(
            exercise=check.attribute, names=names, n=len(outcomes))
    package = namespaces_of(impl)[0]
    uncovered = [u for u in replaced if not covered(u, package, session)]
    if uncovered:
        return "untried", None, _untried_shared(check, uncovered)
    missed = [(o, m) for o in outcomes for m in o.misses if m["target"] in targets]
    if missed and not _fails_where_answered(outcomes):
        independent = _independent(check, written, replaced)
        if independent:
            return independent
        outcome, miss = missed[0]
        return "untried", None, _(
            "It could not be tried on its own: in case '{case}' it calls {callee} with other "
            "arguments than the reference does ({why} differs by {gap:.3g}), so your own "
            "{callee} ran there.").format(case=lines.case_name(outcome.case.name),
                                          callee=name_of(miss["target"]),
                                          why=f"`{miss['why']}`" if miss["why"] else _("a value"),
                                          gap=miss["gap"])
    stub = _stub(check, impl, outcomes)
    own = messages.not_implemented(check, stub[1]) if stub else messages.fail(check, outcomes)
    return "fail", own, _("It also fails on its own, with the reference {names} in place of "
                          "yours:").format(names=names)


def _fails_where_answered(outcomes) -> bool:
    """Whether some case fails although every call it made to a replaced exercise was answered
    by a stand-in (a miss elsewhere, e.g. a gradient the student's own bug changed, does not
    hide that)."""
    return any(o.failed and o.replaced and not o.misses for o in outcomes)


def _untried_shared(check, replaced) -> str:
    names = listed(u.id for u in replaced)
    return _("It could not be tried on its own: what {ids} checks sits in code no stand-in can "
             "replace (a constructor, or forward itself), and this exercise runs that code "
             "too.").format(ids=names)


def covered(check, package: str, session: Session) -> bool:
    """Whether stand-ins for `check`'s `provides` take its whole bug away (always, for a
    function; for a class, when its check passes with them in place)."""
    if not check.is_class:
        return bool(check.provides)
    if check.id not in session.covered:
        ok = False
        if check.provides:
            try:
                outcomes = run_all(check, check.resolve(package), session.reference,
                                   replace=check.provides)
                ok = not any(o.failed for o in outcomes)
            except Exception:  # noqa: BLE001 - what cannot even be resolved is not covered
                ok = False
        session.covered[check.id] = ok
    return session.covered[check.id]


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


# ------------------------------------------------------------------------------ on its own

def _isolated(check, impl, session) -> CheckFailed | None:
    """COURSE_ISOLATE=1: every exercise this one uses answered by stand-ins from the start."""
    outcomes = run_all(check, impl, session.reference, replace=check.stand_in_targets())
    found = _failing(check, impl, outcomes, session)
    if found is None or isinstance(found, CheckFailed):
        return found
    stub, blockers = found
    package = namespaces_of(impl)[0]
    replaced = _replaced(blockers, session)
    uncovered = [u for u in replaced if not covered(u, package, session)]
    missed = {m["target"] for o in outcomes for m in o.misses} & \
        {t for u in replaced for t in u.provides}
    if _fails_where_answered(outcomes):
        missed = set()  # a case the stand-ins answered in full fails: the bug is this exercise's
    if blockers and (uncovered or missed or stub):
        roots = list(dict.fromkeys(root for b in blockers for root in b.roots))
        text = [lines.blocked_header(check.id, roots)]
        text += [f"  {line}" for line in _leads(check, blockers, session)]
        found = None if uncovered else _independent(check, outcomes, replaced)
        if found:
            alone, own, line = found
            text += [f"  {line}", _indent(str(own))]
            return Blocked("\n".join(text), roots, alone, own, messages.errors(outcomes))
        text.append("  " + (_untried_shared(check, uncovered) if uncovered else _(
            "It could not be tried on its own: the stand-ins found no recorded call to answer.")))
        return Blocked("\n".join(text), roots, "untried", errors=messages.errors(outcomes))
    return messages.not_implemented(check, stub[1]) if stub else messages.fail(check, outcomes)


# ------------------------------------------------------------------------------------ stubs

def _stub(check, impl, outcomes):
    """None if no case met a stub; (None, outcome) if it is this exercise's own stub;
    (used check, outcome) if it is the stub of an exercise it uses."""
    todo = [o for o in outcomes if o.status == "todo"]
    if not todo:
        return None
    if own_stub_left(check, impl):
        return None, todo[0]
    match = parse_stub_message(todo[0].problem)  # English or Chinese stubs (course/stub_message.py)
    if match:
        lesson, qualname, module = match
        for used in closure(check):
            if used.lesson == lesson and used.module == module and (
                    qualname == used.attribute or qualname.startswith(used.attribute + ".")):
                return used, todo[0]
    return None, todo[0]


def own_stub_left(check, impl) -> bool:
    """Whether the exercise's own part still holds its stub's `raise NotImplementedError`."""
    try:
        source = inspect.getsource(impl)
    except (OSError, TypeError):
        return False
    return stub_left(source, check.lesson, check.attribute)
