"""Claude Code: its session hooks.

`claude_code_event` handles a Claude Code hook event: `SessionStart` returns the project's
context (nothing when the vault holds nothing for it); `PreCompact` and `SessionEnd` write the
session's handoff, drawn from the transcript (JSONL) — one per session, updated when a later
event of the same session finds something new. `read_transcript` is that extraction;
`claude_code_settings` is the `hooks` block for Claude Code's settings.json.

The transcript is Claude Code's own format, read as it writes it (see tests/data/claude_code/
README.md for where each rule comes from): only the main thread counts (`isSidechain` lines are
a sub-agent's), and only the user's own prompts are requests — not `isMeta` lines, compaction
summaries, interrupt markers, tool results, or markup Claude Code injects (`<command-name>`,
`<local-command-stdout>`, `<task-notification>` …).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optmem import fsio
from optmem.errors import OptmemError, UsageError
from optmem.integrations.git import project_name, repo_project, repo_root
from optmem.vault import Vault

_DONE = re.compile(
    r"\b(done|fixed|added|implemented|created|updated|removed|refactored|completed|"
    r"passing|passes|works)\b|已完成|完成了|已修复|修好|已添加|已实现|搞定",
    re.I,
)
_OPEN = re.compile(
    r"\b(todo|next steps?|remaining|still need|still to do|not yet|follow[- ]up|left to)\b|\bnext\s*:|"
    r"- \[ \]|待办|下一步|还需要|还没做|尚未|未完成",
    re.I,
)
# the label an open item starts with ("Next: ", "TODO - ", "下一步：") — not what is to be done
_LABEL = re.compile(r"^(?:todo|next steps?|next|remaining|follow[- ]up|待办|下一步|还需要)\s*[:：\-–—]?\s*", re.I)
# the label a line of work done starts with ("Done: ", "Completed - ", "已完成：") — the heading says it
_DONE_LABEL = re.compile(r"^(?:done|completed|finished|已完成|完成)\s*[:：\-–—]\s*", re.I)
# the labels of a report, by kind (`_report_parts`): what is left to do, what holds it up, what is done
_OPEN_WORDS = re.compile(
    r"todo|to-?do|to do|next steps?|next up|next|remaining|follow[- ]ups?|still to do|left to do|"
    r"not (?:yet )?done|pending|open items?|待办(?:事项)?|下一步|接下来|后续(?:工作)?|还需要|还没做的?|"
    r"还要做|尚未完成|未完成|剩下的?|剩余"
)
_BLOCKED_WORDS = re.compile(r"blocked|blockers?|blocking|stuck|受阻|阻塞|被阻塞|卡住")
_DONE_WORDS = re.compile(r"done|completed|finished|已完成|完成|做完了")
_LABELS = f"{_OPEN_WORDS.pattern}|{_BLOCKED_WORDS.pattern}|{_DONE_WORDS.pattern}"
_SAID = re.compile(rf"^[*_\s]*(?P<label>{_LABELS})[*_]*(?:\s*[:：]|\s+[-–—]\s)[*_]*\s*", re.I)  # "Next: …"
_HEADING = re.compile(rf"^\s*(?:#+\s*)?[*_]*(?P<label>{_LABELS})[*_]*\s*[:：]?[*_]*\s*$", re.I)  # "Next steps:"
_BULLET = re.compile(r"^\s*(?:(?:[-*•+]|\d{1,3}[.)])\s+|\d{1,3}、\s*|[（(]\d{1,3}[)）]\s*)")  # "- ", "1. ", "1、"
_BOX = re.compile(r"^\[([ xX])\]\s*")  # a task list's box
# and in Chinese ("还没有完成", "没修好", "测试仍然失败")
_NOT_DONE_ZH = re.compile(
    r"(?:还没|没有|没|尚未|未能?)(?:有)?(?:完成|做完|做好|修复|修好|通过|成功|解决)|仍然?(?:失败|报错)|仍未"
)
# what in a report of work done leaves an item it names undone ("the production deploy must wait")
_UNDONE = re.compile(
    r"\b(?:not|never|no longer|wait\w*|until|pending|later|postpon\w*|defer\w*|skipp\w*|blocked|yet to)\b|"
    r"n't\b|还没|没|未|待|暂缓|推迟|跳过|之后|以后",
    re.I,
)
_WORD = re.compile(r"[^\W\d_]{4,}|\d+|[\u3400-\u9fff]+")  # what must recur for a report to name an item
# "Updated none", "Fixed: nothing", "Removed 0 files", "nothing was changed", "未做任何修改": a
# report that nothing happened (sub-agents end with one) is not work done
_NULL = re.compile(
    r"\b(?:done|fixed|added|implemented|created|updated|removed|refactored|changed|"
    r"completed|finished)[:\s]{1,3}(?:none|nothing|n/a|0\s+\w+|no\s+(?:\w+\s+)?(?:files?|changes?))\b|"
    r"\b(?:none|nothing|no\s+(?:files?|changes?))\s+(?:was\s+|were\s+)?(?:done|fixed|added|"
    r"updated|removed|changed|needed)\b|(?:没有|未|无需|无)(?:做)?(?:任何)?(?:需要)?"
    r"(?:更新|修改|改动|变更|修复)",
    re.I,
)
# what a person says when something outside the session holds the work up
_STATED_BLOCKER = re.compile(
    r"\bblocked\s+(?:on|by)\b|\bwaiting\s+(?:for|on)\b|\bstuck\s+on\b|"
    r"\b(?:can't|cannot|can not|unable to)\b[^.!?\n]{0,80}\buntil\b|"
    r"卡在|卡住|在等|等[^，。,.!?！？\s]{1,20}(?:之后|以后|后|再|才)",
    re.I,
)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；\n])\s*")
# Claude Code's own texts in the user's place (its constants INTERRUPT_MESSAGE,
# INTERRUPT_MESSAGE_FOR_TOOL_USE, CANCEL_MESSAGE, REJECT_MESSAGE …, and the compaction summary)
_INTERRUPT = re.compile(r"^\[Request interrupted by user[^\]]*\]$")
_DECLINED = re.compile(r"^(?:\[Request interrupted by user|The user doesn't want to (?:proceed|take))")
_SUMMARY = "This session is being continued from a previous conversation"
_MARKUP = re.compile(r"^<[a-z][\w-]*(?:\s[^>]*)?>")  # <command-name>, <bash-input> …
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
# lines of tool output that say nothing by themselves
_EXIT_LINE = re.compile(r"^(?:Error:\s*)?(?:Exit code|Command failed with exit code)\s*-?\d+$", re.I)
_RULE = re.compile(r"^[\W_]*$|^[=\-_*#~]{3,}.*[=\-_*#~]{3,}$|^Traceback \(most recent call last\):$")
_ERRORISH = re.compile(
    r"error|fail|exception|denied|not found|no such|cannot|can't|could not|unable|"
    r"refused|invalid|fatal|missing|timed? ?out|panic|错误|失败|异常",
    re.I,
)
_TAG = re.compile(r"</?tool_use_error>")
_CD = re.compile(r"^cd \S+ && ")  # `cd repo && pytest` is `pytest`
_TARGETS = ("file_path", "notebook_path", "path", "url")  # what a non-shell tool acted on
# of _note (and of the notes written before it named no AI: "Written by the Claude Code … hook")
_PROVENANCE = re.compile(r"^Written by the (?:Claude Code )?\w+ hook(?: \([^)]*\))?\.\s*")
_HELD_NOTE = re.compile(r"\s*\(\d+ part\(s\) the security scan flagged are held in quarantine\.\)$")  # HELD_NOTE


@dataclass(frozen=True)
class Extract:
    """What a handoff needs from a transcript: the user's first and latest requests, what the
    assistant reported done, open items, and blockers (failures nothing later fixed, and what
    the user said holds the work up)."""

    requests: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    open: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    judged: str = ""  # which open items the reader took as done (`Reports.judged`)
    judged_count: int = 0  # how many (said when the sentence naming them is held by the scanner)

    def empty(self) -> bool:
        return not (self.requests or self.done or self.open or self.blocked)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                out.append(block["text"])
    return out


def _short(text: str, limit: int = 240) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _last(items: list[str], keep: int) -> list[str]:
    """The `keep` latest distinct items, oldest first (a repeated item counts where it was last said)."""
    return list(dict.fromkeys(reversed(items)))[: max(keep, 0)][::-1]


def _prompt(entry: dict[str, Any], content: Any) -> str | None:
    """The user's own words in a `user` line, or None when Claude Code wrote it."""
    if entry.get("isMeta") or entry.get("isCompactSummary") or entry.get("isVisibleInTranscriptOnly"):
        return None
    origin = entry.get("origin")
    if isinstance(origin, dict) and origin.get("kind") not in (None, "human"):
        return None  # e.g. a background agent's <task-notification>
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return None  # a tool's answer; text beside it is the harness talking
    kept = []
    for text in _texts(content):
        text = _REMINDER.sub("", text).strip()
        if text and not (_MARKUP.match(text) or _INTERRUPT.match(text) or text.startswith(_SUMMARY)):
            kept.append(text)
    return "\n".join(kept) or None


def _tool_key(name: str, args: Any) -> str:
    """Which later call would show a failed one was got past: the same shell command, or the
    same tool on the same target (a file, a URL), or else the same tool."""
    args = args if isinstance(args, dict) else {}
    if isinstance(args.get("command"), str):
        command = " ".join(args["command"].split())
        return f"{name}:{_CD.sub('', command)}"
    target = next((args[k] for k in _TARGETS if isinstance(args.get(k), str)), "")
    return f"{name}:{target}"


def _error_line(block: dict[str, Any], result: Any) -> str | None:
    """The informative line of a failed tool's output: the first that names an error, else the
    first that says anything; not Claude Code's "Exit code 1". None for a call the user
    declined or interrupted (that is a choice, not a failure)."""
    text = "\n".join(_texts(block.get("content")))
    if isinstance(result, dict):
        if result.get("interrupted"):
            return None
        text += "\n" + "\n".join(str(result[k]) for k in ("stderr", "stdout") if result.get(k))
    elif isinstance(result, str):
        text += "\n" + result
    text = _TAG.sub("", text).strip()
    if _DECLINED.match(text):
        return None
    lines = [line.strip() for line in text.splitlines()]
    said = [line for line in lines if not _EXIT_LINE.match(line) and not _RULE.match(line)]
    best = next((line for line in said if _ERRORISH.search(line)), said[0] if said else None)
    return _short(best or next((line for line in lines if line), "tool error"))


def _stated_blockers(prompt: str) -> list[str]:
    return [_short(s) for s in _SENTENCE.split(prompt) if _STATED_BLOCKER.search(s)]


def _asked(prompt: str) -> str | None:
    """What a request left unanswered asks, for Next: the prompt less the sentences that say what
    blocks the work (`_stated_blockers`: those are Blocked, and a line is in one part only — tester
    16 #7); None when nothing else is left."""
    if not _STATED_BLOCKER.search(prompt):
        return _short(prompt)
    rest = [s for s in _SENTENCE.split(prompt) if s.strip() and not _STATED_BLOCKER.search(s)]
    return _short(" ".join(rest)) if len("".join(rest).strip()) >= 4 else None


def read_transcript(path: Path, *, keep: int = 3) -> Extract:
    """What a handoff needs from a Claude Code transcript (JSONL); extractive, bad lines skipped.

    Requests: the first (it states the goal) and the latest. Open: what the assistant left open,
    and the user's last request when nothing the assistant wrote answers it (the session ended
    on it: asked, never done) — less its sentences that say what blocks the work, which are
    Blocked (`_asked`). Blocked: a tool failure counts
    only when no later call of the same command (or the same tool on the same target)
    succeeded, plus what the user said blocks the work ("blocked on …", "waiting for …", 卡在 …).
    """
    prompts: list[str] = []
    stated: list[str] = []
    got = Reports()
    answered = True  # whether assistant text came after the latest request
    calls: dict[str, str] = {}  # tool_use id → key
    failures: list[tuple[int, str, str]] = []  # (place, key, line)
    fixed: dict[str, int] = {}  # key → place of its latest success
    with open(path, "rb") as fh:
        for place, (raw, _) in enumerate(fsio.lines(fh)):  # (a line past the bound is skipped unread)
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if (
                not isinstance(entry, dict)
                or entry.get("isSidechain") is True
                or not isinstance(entry.get("message"), dict)
            ):
                continue  # summary, file-history-snapshot, system … lines; a sub-agent's thread
            message = entry["message"]
            content = message.get("content")
            if entry.get("type") == "user":
                prompt = _prompt(entry, content)
                if prompt:
                    prompts.append(prompt)
                    stated += _stated_blockers(prompt)
                    answered = False
                for block in content if isinstance(content, list) else []:
                    if not isinstance(block, dict) or block.get("type") != "tool_result":
                        continue
                    key = calls.get(str(block.get("tool_use_id")), f"?:{block.get('tool_use_id')}")
                    if not block.get("is_error"):
                        fixed[key] = place
                    elif (line := _error_line(block, entry.get("toolUseResult"))) is not None:
                        failures.append((place, key, line))
            elif entry.get("type") == "assistant":
                if entry.get("isApiErrorMessage") or message.get("model") == "<synthetic>":
                    continue
                for block in content if isinstance(content, list) else []:
                    if isinstance(block, dict) and block.get("type") == "tool_use":
                        calls[str(block.get("id"))] = _tool_key(str(block.get("name")), block.get("input"))
                for text in _texts(content):
                    answered = answered or bool(text.strip())
                    got.add(text)
    said = [_short(p) for p in prompts]
    open_items = got.open
    if said and not answered and (asked := _asked(prompts[-1])):  # the last request, unanswered: still to do
        open_items.append(asked)
    requests = said[:1] + _last([p for p in said[1:] if p != said[0]], keep - 1) if keep > 0 else []
    unresolved = [line for place, key, line in failures if fixed.get(key, -1) < place]
    return Extract(
        requests=requests,
        done=_last(got.done, keep),
        open=_last(open_items, keep),
        blocked=_last(got.blocked, keep)
        + [b for b in _last(stated, keep) if b not in got.blocked]
        + [e for e in _last(unresolved, keep) if e not in stated],
        judged=got.judged(),
        judged_count=len(got.settled),
    )


def _transcript_lines(path: Path, look: int = 1000) -> bool:
    """Whether any of the first `look` lines of `path` is a transcript's line (a JSON object with
    a `type`: a turn, a summary, a snapshot …), whatever it says."""
    with open(path, "rb") as fh:
        for place, (raw, _) in enumerate(fsio.lines(fh)):
            if place >= look:
                return False
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if isinstance(entry, dict) and "type" in entry:
                return True
    return False


def _report_parts(text: str) -> list[tuple[str, str]]:
    """What an assistant's text reports, in order: (kind, item) — "done" (work done), "open" (what
    is left to do) or "blocked" (what holds the work up), line by line (extractive). Nothing it
    reports is dropped (tester 18 #9, #12): a label ("Done:", "Next:", "Still to do:", "Blocked:",
    "已完成：", "下一步：", "还没做：", "受阻：" …) starts an item wherever a sentence starts with it;
    a sentence with no label stays with the item before it, except after a label's item ended by
    `;`/`；` ("Next: update nginx; announce in #dev" is two items); a label alone on its line
    ("Next steps:", "## 下一步") files each list line under it ("1. …", "- …") as an item of its
    kind. Sentences before any label are read by their words (`_OPEN`, `_DONE`)."""
    out: list[tuple[str, str]] = []
    under: str | None = None  # the kind of the label alone on a line above: its list lines are items
    for raw in text.splitlines():
        if not raw.strip():
            continue
        if (head := _HEADING.match(raw)) is not None:
            under = _kind_of_label(head.group("label"))
            continue
        bullet = _BULLET.match(raw)
        if bullet is None:
            under = None  # (a line that is no list line ends the list)
        line = (raw[bullet.end() :] if bullet else raw).strip(" -*•\t")
        kind = under
        if (box := _BOX.match(line)) is not None:  # "- [ ] …" open, "- [x] …" done
            kind, line = ("open" if box.group(1) == " " else "done"), line[box.end() :]
        out += _line_parts(line, kind)
    return out


def _line_parts(line: str, under: str | None) -> list[tuple[str, str]]:
    """One line's items (`_report_parts`); `under`: the kind of the list it is a line of."""
    parts: list[list[Any]] = []  # [kind or None, labelled, sentences]
    region = under  # the kind the last label (or the list's heading, or `[x]`) gave
    for sentence in (x for x in _SENTENCE.split(line) if x.strip()):
        if (m := _SAID.match(sentence)) is not None:
            region, said = _kind_of_label(m.group("label")), sentence[m.end() :]
            if region == "done" and _null_report(sentence) and not _not_done(said, labelled=True):
                continue  # ("Done: nothing.", "Finished: none")
            parts.append(["open" if region == "done" and _not_done(said, labelled=True) else region, True, [said]])
            continue
        if region == "done" and parts and parts[-1][1]:
            # a sentence under a "Done" label that says the work is not done is an open item, never
            # done ("Done: migrated the DB. Tests still failing.", "已完成：迁移。测试仍然失败。")
            want = "open" if _not_done(sentence, labelled=True) else "done"
            if parts[-1][0] == want and not parts[-1][2][-1].rstrip().endswith((";", "；")):
                parts[-1][2].append(sentence)
            else:
                parts.append([want, True, [sentence]])
            continue
        said = _word_kind(sentence)
        if not parts:
            kind = "open" if under == "done" and _not_done(sentence, labelled=True) else under or said
            parts.append([kind, under is not None, [sentence]])
        elif parts[-1][1] and parts[-1][2][-1].rstrip().endswith((";", "；")):
            parts.append([parts[-1][0], True, [sentence]])  # (a list after a label: "Next: a; b")
        elif not parts[-1][1] and said and parts[-1][0] not in (None, said):
            parts.append([said, False, [sentence]])  # ("Fixed X; still need Y": read by its words)
        else:
            parts[-1][2].append(sentence)
            parts[-1][0] = parts[-1][0] or said
    out: list[tuple[str, str]] = []
    for kind, labelled, sentences in parts:
        part = "".join(x.strip() + ("" if x.rstrip().endswith(_CJK_STOPS) else " ") for x in sentences)
        part = part.strip().rstrip(";；").strip()
        if not labelled:
            part = (_LABEL if kind == "open" else _DONE_LABEL).sub("", part) or part
        # (a labelled item is kept however short: "Next: B." — tester 18 #12)
        if not part or (not labelled and len(part) < 4) or kind is None or (kind == "done" and _null_report(part)):
            continue
        out.append((kind, _short(part)))
    return out


def _word_kind(sentence: str) -> str | None:
    """What a sentence with no label reports, by its words: open, done, or nothing."""
    if _OPEN.search(sentence) or _NOT_DONE_ZH.search(sentence):
        return "open"
    if not _DONE.search(sentence) or _null_report(sentence):
        return None
    # "not done yet", "I haven't fixed it", "the fix didn't work: still not passing": work left
    # open, never done (tester 18 #17) — a guess reads as what is still to do, never as a claim
    return "open" if _not_done(sentence, labelled=False) else "done"


# what says the work itself is not done: a negation of a word of the work or its state ("not done
# yet", "haven't fixed", "isn't passing", "no longer works", "still failing", "yet to") — not any
# negation: in "no longer crashes on empty input", "tests don't flake anymore", "login would not
# redirect" the negation is what the fix did (`_not_done`)
_STATE_WORDS = (
    r"done|start\w*|finish\w*|complet\w*|pass\w*|work\w*|fix\w*|deploy\w*|merg\w*|run|ran|test\w*|"
    r"been|got|green|ready|there"
)
# the words a report of work with no label is read as done by (`_DONE`), negated as well: "I have
# not added the migration" is no report of work done
_WORK_WORDS = r"add\w*|implement\w*|creat\w*|updat\w*|remov\w*|refactor\w*"
_NEGATION = r"\b(?:(?:not|never|no longer)\s+|\w+n't\s+)(?:yet\s+)?(?:\w+\s+){{0,3}}(?:{words})\b"
_STILL = r"\bstill\s+(?:fail\w*|broken|red|not)\b|\b(?:yet to|not yet)\b"
_NOT_DONE_EN = {
    labelled: re.compile(
        _NEGATION.format(words=_STATE_WORDS if labelled else f"{_STATE_WORDS}|{_WORK_WORDS}") + "|" + _STILL, re.I
    )
    for labelled in (True, False)
}


def _not_done(sentence: str, *, labelled: bool) -> bool:
    """Whether a report of work says the work is not done ("not passing yet", "I haven't fixed it",
    "still failing", "仍然失败") — one rule for a sentence under a done label (`labelled`) and one
    read by its words: a negation undoes the report only when it negates the work or its state.
    A sentence with no label is done only by a word of work done (`_DONE`), so a negation of that
    word undoes it too ("I have not added …"); under a label the label says it ("Done: removed the
    check, so users are not created twice")."""
    return bool(_NOT_DONE_EN[labelled].search(sentence) or _NOT_DONE_ZH.search(sentence))


def _kind_of_label(label: str) -> str:
    said = label.lower()
    return "done" if _DONE_WORDS.fullmatch(said) else "blocked" if _BLOCKED_WORDS.fullmatch(said) else "open"


def report_lines(text: str) -> tuple[list[str], list[str]]:
    """(what an assistant's text reports done, what it leaves open or blocked), line by line
    (extractive)."""
    parts = _report_parts(text)
    return [p for kind, p in parts if kind == "done"], [p for kind, p in parts if kind != "done"]


@dataclass
class Reports:
    """What the assistant's texts, oldest first, report (`reports`): work done, open items, what
    blocks the work, and the open items a later report of work done settled — each with that
    report, so the handoff says the reader judged it (a guess never reads as a fact)."""

    done: list[str] = field(default_factory=list)
    open: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    settled: list[tuple[str, str]] = field(default_factory=list)  # (open item, the report that names it)

    def add(self, text: str) -> None:
        """One more assistant text."""
        for kind, part in _report_parts(text):
            if kind == "done":
                self.done.append(part)
                self.settled += [(item, part) for item in self.open if _settles(part, item)]
                self.open = [item for item in self.open if not _settles(part, item)]
            else:
                (self.open if kind == "open" else self.blocked).append(part)

    def judged(self) -> str:
        """The sentence that says which open items the reader took as done, or ""."""
        if not self.settled:
            return ""
        said = "; ".join(f"“{item}” (by “{by}”)" for item, by in self.settled[-5:])
        if earlier := self.settled[:-5]:  # (each is named: an item that left `open` is said somewhere)
            said += f"; and {len(earlier)} more: " + "; ".join(f"“{item}”" for item, _ in earlier)
        return f"Taken as done, named by a later report of work done: {said}."


def reports(texts: list[str]) -> Reports:
    """What the assistant's texts, oldest first, report: an open item a later report of work done
    clearly names ("Next: run smoke tests" … "Done: ran the smoke tests"; "下一步：导入新库" …
    "已完成：导入新库并验证了行数") is settled, not left open — and said (`Reports.judged`)."""
    got = Reports()
    for text in texts:
        got.add(text)
    return got


def _settles(report: str, item: str) -> bool:
    """Whether a report of work done clearly names an open item as done: one sentence of the
    report holds every word of four letters or more, every number and every run of CJK
    characters of what the item asks (its label left out), and says nothing that leaves it
    undone ("… must wait for sign-off", "not yet", "还没" — tester 18 #13: an item whose words
    recur in a sentence saying it is not done stays open)."""
    said = _WORD.findall(_LABEL.sub("", item).lower())
    if not said:
        return False
    for sentence in _SENTENCE.split(report.lower()):
        if all(w in sentence for w in said) and not _UNDONE.search(sentence):
            return True
    return False


def _null_report(line: str) -> bool:
    """A line whose only "done" is a report that nothing was done."""
    m = _NULL.search(line)
    return m is not None and not _DONE.search(line[: m.start()] + line[m.end() :])


_STOPS = tuple(".!?。！？…")  # a sentence's end
_CJK_STOPS = tuple("。！？；")  # (one that needs no space after it)


def _note(name: str, why: str, requests: list[str], judged: str = "") -> str:
    """The handoff's note: which hook wrote it (matched by _PROVENANCE), then the requests. It
    names no AI: optmem's own words, read together with the items, must not give the scanner an
    AI to read as addressed ("Claude Code … rotate the api keys" trips `instruction_to_agent`);
    the record's source says the host."""
    said = f"Written by the {name} hook" + (f" ({why})" if why else "") + "."
    if len(requests) == 1:
        said += f" Request: {requests[0]}"
    elif requests:  # (a request that ends with no stop of its own is kept apart from the next label)
        apart = "" if requests[0].endswith(_STOPS) else " —"
        said += f" First request: {requests[0]}{apart} Latest requests: " + " / ".join(requests[1:])
    if judged:  # (the reader's own judgement, said as one: `Reports.judged`)
        said += ("" if said.endswith(_STOPS) else ".") + f" {judged}"
    return said


def _session_handoffs(vault: Vault, project: str, session: str) -> list[tuple[str, dict[str, Any]]]:
    """(id, stored fields) of the session's handoffs still in view, newest first."""
    from optmem.index import open_index

    with open_index(vault) as idx:
        return [(row.id, dict(idx.record(row).extra)) for row in idx.handoffs(project, None) if row.session == session]


def _same(fields: dict[str, Any], done: list[str], blocked: list[str], nxt: list[str], note: str) -> bool:
    """Does a stored handoff already say this (whatever event wrote it)?"""
    old_note = _HELD_NOTE.sub("", _PROVENANCE.sub("", str(fields.get("note") or "")))
    return (
        (fields.get("done") or []) == done
        and (fields.get("blocked") or []) == blocked
        and (fields.get("next") or []) == nxt
        and old_note == _PROVENANCE.sub("", note)
    )


SPOOL = "optmem-handoffs.spool"  # beside the transcripts: the handoffs the vault could not take yet


def spool_of(event: dict[str, Any]) -> Path | None:
    """Where the handoffs the vault could not take wait (`SPOOL`): in the folder Claude Code keeps
    the project's transcripts in (its own, outside the vault; every event of the project names a
    transcript there) — not named `*.jsonl`, which Claude Code reads as sessions. None when the
    event names no transcript."""
    path = event.get("transcript_path")
    return Path(os.path.abspath(path)).parent / SPOOL if isinstance(path, str) and path else None


def _write_handoff(vault: Vault, project: str, name: str, event: dict[str, Any]) -> dict[str, Any]:
    """The session's handoff from its transcript: written once, then updated — an identical one
    is not written again, a changed one replaces the session's earlier one (forgotten, so one
    handoff per session stays in view; the log keeps every line). A vault that cannot take it now
    (locked past the wait, read-only) has it wait in the spool (`spool_of`), stored first by the
    next event that can write; what the scanner flags is held, not refused (`handoff.write_kept`)."""
    from optmem import handoff, spool

    path = event.get("transcript_path")
    if not path or not Path(path).is_file():
        why = f"the transcript {path} is not there" if path else "the event names no transcript_path"
        return {
            "event": name,
            "project": project,
            "handoff": None,
            "reason": "no transcript",
            "warnings": [f"{name}: no handoff written: {why}"],
        }
    got = read_transcript(Path(path))
    if got.empty():
        if not _transcript_lines(Path(path)):  # (a file of another kind: said, not passed over in silence)
            return {
                "event": name,
                "project": project,
                "handoff": None,
                "reason": "not a transcript",
                "warnings": [
                    f"{name}: no handoff written: {path} is not a Claude Code transcript (none of its lines is a "
                    'JSON object with a "type"); the hook reads the transcript_path Claude Code sends in its event'
                ],
            }
        return {"event": name, "project": project, "handoff": None, "reason": "empty transcript"}
    why = event.get("trigger") or event.get("reason") or event.get("source") or ""
    entry = {
        "event": name,
        "project": project,
        "session": event.get("session_id") if isinstance(event.get("session_id"), str) else None,
        "why": str(why),
        "requests": got.requests,
        "done": got.done,
        "blocked": got.blocked,
        "next": got.open,
        "judged": got.judged,
        "judged_count": got.judged_count,
    }
    drained, warnings = drain(vault, event)
    if drained:
        try:
            res = _store(vault, entry)
            res["warnings"] = warnings + res.get("warnings", [])
            return res
        except Exception as err:  # noqa: BLE001 - what the vault cannot take now waits; else it is said
            if not spool.transient(err):
                raise
            reason = getattr(err, "message", None) or str(err)
    else:
        reason = "earlier handoffs still wait in the spool"
    where = spool_of(event)
    assert where is not None  # (the transcript is there)
    # (a secret is never written, not even to the spool)
    of = handoff.host_handoff("claude-code", entry["session"] if isinstance(entry["session"], str) else None)
    warnings = warnings + handoff.secrets_told(f"{of} (spooled)", *_without_secrets(entry))
    spool.put(where, entry, within=where.parent)  # (stamped with when it was said)
    if vault.exists():  # (named in the vault's cache, so `doctor` can say it waits: best effort)
        try:
            spool.register(vault.cache(spool.KNOWN), vault.root, project, where, kind=KIND)
        except (OptmemError, OSError):
            pass
    return {
        "event": name,
        "project": project,
        "handoff": None,
        "reason": "spooled",
        "spool": str(where),
        "warnings": warnings
        + [
            f"{name}: the handoff waits in {where} ({reason}); the next hook event that can write stores it "
            "(the next session's start, or `optmem hook claude-code` with this event again)"
        ],
    }


def _without_secrets(entry: dict[str, Any]) -> tuple[list[str], int]:
    """Each secret in a handoff about to be spooled read as its placeholder, the rest of its line
    kept (`handoff.scrub`); (the rules of those secrets, how many lines were left out)."""
    from optmem import handoff

    rules: list[str] = []
    gone = 0
    for part in ("requests", "done", "blocked", "next"):
        entry[part], found, lost = handoff.scrub(entry[part])
        rules, gone = rules + found, gone + lost
    return rules, gone


def drain(vault: Vault, event: dict[str, Any]) -> tuple[bool, list[str]]:
    """Store the handoffs waiting in the event's spool, in order (`optmem.spool`): (whether it is
    empty now, what to tell)."""
    where = spool_of(event)
    return (True, []) if where is None else drain_at(vault, where)


def drain_at(vault: Vault, where: Path) -> tuple[bool, list[str]]:
    """Store the handoffs waiting in the spool at `where`, in order: (whether it is empty now,
    what to tell)."""
    from optmem import spool

    told: list[str] = []
    if not (where.exists() or spool.pending(where)):
        return True, told

    def dropped(entry: dict[str, Any], err: BaseException) -> None:
        if "line" in entry and len(entry) == 1:
            told.append(f"a spooled line could not be read ({err!r}): it is kept in {where}.rejected")
        else:
            told.append(f"a spooled handoff of session {entry.get('session')} was not kept: {err}")

    def store(entry: dict[str, Any]) -> None:
        res = _store(vault, entry, said_at=spool.said_at(entry))
        told.extend(res.get("warnings", []))
        if res.get("handoff"):
            session = entry.get("session")
            told.append(f"the handoff of session {session} that waited in {where} is stored: {res['handoff']}")

    return spool.drain(where, store, within=where.parent, dropped=dropped), told


KIND = "claude-code"  # the spools this hook registers in the vault's cache (`spool.register`)


def drain_spools(vault: Vault) -> list[str]:
    """Store the handoffs each registered Claude Code spool holds (`doctor`'s `agent_spool`), in
    order, as the next hook event of its project would (`doctor --fix`); what still waits is said."""
    from optmem import spool

    said: list[str] = []
    for project, where in spool.known(vault.cache_dir / spool.KNOWN, vault.root, kind=KIND):
        if not spool.pending(where):
            continue
        try:
            drained, told = drain_at(vault, where)
        except Exception as err:  # noqa: BLE001 - what the vault cannot take now waits, said
            if not spool.transient(err):
                raise
            drained, told = False, [getattr(err, "message", None) or str(err)]
        said += told
        if not drained:
            said.append(f"{spool.pending(where)} handoff(s) of Claude Code project {project} still wait in {where}")
    return said


def waiting(event: dict[str, Any]) -> bool:
    """Whether handoffs wait in the event's spool (then even a SessionStart writes)."""
    from optmem import spool

    where = spool_of(event)
    return where is not None and spool.pending(where) > 0


def _drain_now(vault: Vault, event: dict[str, Any]) -> list[str]:
    """`drain` at a session's start: what could not be stored still waits, and is said."""
    from optmem import spool

    if not waiting(event):
        return []
    try:
        drained, told = drain(vault, event)
    except Exception as err:  # noqa: BLE001 - the vault cannot take them now: they wait, said
        if not spool.transient(err):
            raise
        drained, told = False, [getattr(err, "message", None) or str(err)]
    if not drained:
        told.append(f"{spool.pending(spool_of(event) or Path())} handoff(s) still wait in {spool_of(event)}")
    return told


def _store(vault: Vault, entry: dict[str, Any], *, said_at: str | None = None) -> dict[str, Any]:
    """Write one handoff (a spooled one `said_at` when it was said) — see `_write_handoff`."""
    from optmem import handoff, log

    name, project = str(entry["event"]), str(entry["project"])
    session = entry.get("session") if isinstance(entry.get("session"), str) else None
    why = str(entry.get("why") or "")
    done, blocked, nxt = ([str(i) for i in entry.get(k) or []] for k in ("done", "blocked", "next"))
    earlier = _session_handoffs(vault, project, session) if session and vault.exists() else []
    count = entry.get("judged_count")
    said = handoff.session_note(  # (each request and the judgement checked alone: a flagged one held by itself)
        [str(r) for r in entry.get("requests") or []],
        str(entry.get("judged") or ""),
        count if isinstance(count, int) else None,
        lambda asked, judged: _note(name, why, asked, judged),
    )
    # (as `write_kept` writes them: each secret as its placeholder, a line flagged otherwise held)
    kept_done, kept_blocked, kept_next = (
        [i for i in handoff.scrub(items)[0] if not scan_find(i)] for items in (done, blocked, nxt)
    )
    note = said.note if not scan_find(said.note) else said.bare
    if earlier and _same(earlier[0][1], kept_done, kept_blocked, kept_next, note):
        return {"event": name, "project": project, "handoff": earlier[0][0], "status": "unchanged"}
    h, held, warnings = handoff.write_kept(
        vault,
        project,
        done=done,
        blocked=blocked,
        next=nxt,
        note=said.note,
        bare_note=said.bare,  # (when the requests together trip the scanner: held, out of the note)
        left_out=said.left_out,
        scrubbed=said.scrubbed,
        source="claude-code",
        session=session,
        said_at=said_at,
        origin="agent",  # what the assistant said it did: its claims, not checked facts
    )
    out: dict[str, Any] = {"event": name, "project": project, "handoff": h.id if h else None}
    if held:
        out["held"] = held
    if warnings:
        out["warnings"] = warnings
    if h is None:
        out["reason"] = "held" if held else "refused"
        return out
    for old, _ in earlier:
        log.forget(vault, old, reason=f"updated by {h.id} (same Claude Code session)", source="claude-code")
    return out | {"status": "updated" if earlier else "written", "replaced": [old for old, _ in earlier]}


def scan_find(text: str) -> str | None:
    from optmem.safety import scan

    return scan.find(text)


def claude_code_event(vault: Vault, event: dict[str, Any], *, budget: int = 4000) -> dict[str, Any]:
    """Handle one Claude Code hook event; returns what was done (and the context to print:
    None when the vault has nothing for the project, so the session gets no empty block)."""
    from optmem import context

    _check_event(event)
    name = event.get("hook_event_name")
    cwd = Path(event.get("cwd") or os.getcwd())
    try:
        project = repo_project(repo_root(cwd), vault.settings.projects, vault=vault)
    except (UsageError, OSError, subprocess.SubprocessError):
        project = project_name(cwd.name, vault.settings.projects)
    if name == "SessionStart":
        told = _drain_now(vault, event)  # (handoffs an earlier session could not store: before the context)
        if not vault.exists():
            return {"event": name, "project": project, "context": None} | ({"warnings": told} if told else {})
        ctx = context.build(vault, project=project, budget=budget)
        said = any(s["items"] or s["omitted"] for s in ctx.sections)
        return {
            "event": name,
            "project": project,
            "context": ctx.text if said else None,
            "warnings": told + ctx.warnings,
        }
    if name in ("PreCompact", "SessionEnd"):
        return _write_handoff(vault, project, str(name), event)
    return {"event": name, "project": project, "ignored": True}


EVENT_FIELDS = ("hook_event_name", "session_id", "transcript_path", "cwd", "trigger", "reason", "source")


def _check_event(event: dict[str, Any]) -> None:
    """Every field of a hook event that is read is a string (or absent), as Claude Code sends it;
    else a usage error naming each field that is not and what it is — before anything is done."""
    wrong = {k: event[k] for k in EVENT_FIELDS if event.get(k) is not None and not isinstance(event[k], str)}
    if wrong:
        said = ", ".join(f"`{k}` is a {_json_type(v)} ({json.dumps(v)[:40]})" for k, v in wrong.items())
        raise UsageError(
            f"the hook event's {said}: each must be a string, as Claude Code sends it; nothing was done",
            fields=sorted(wrong),
        )


def read_settings(path: Path, *, make_folder: bool = False) -> dict[str, Any]:
    """A Claude Code settings file as a JSON object (empty when there is none), checked to have
    the shape the hooks are added to; anything else is a usage error naming the file and the key,
    raised before anything is created or written. Its folder must exist unless `make_folder`
    (the project's own `.claude/`): a mistyped path never turns into new folders."""
    from optmem import fsio

    if not make_folder and not path.parent.is_dir():
        raise UsageError(
            f"{path}: the folder {path.parent} does not exist; check the path, or create "
            "the folder first; nothing was created",
            file=str(path),
        )
    by_hand = "fix it, or add the snippet of `optmem hooks claude-code --print` by hand"
    raw = fsio.read_text(path)
    try:
        current = json.loads(raw) if raw and raw.strip() else {}
    except ValueError as exc:
        raise UsageError(f"{path} is not JSON ({exc}); {by_hand}", file=str(path)) from exc
    if not isinstance(current, dict):
        raise UsageError(f"{path} is not a JSON object; {by_hand}", file=str(path))

    def wrong(key: str, want: str, got: Any) -> UsageError:
        return UsageError(
            f"{path}: `{key}` is a JSON {_json_type(got)}, Claude Code expects {want}; nothing was changed — {by_hand}",
            file=str(path),
            key=key,
        )

    hooks = current.get("hooks", {})
    if not isinstance(hooks, dict):
        raise wrong("hooks", "an object of events", hooks)
    for event, entries in hooks.items():
        if not isinstance(entries, list):
            raise wrong(f"hooks.{event}", "a list of matchers", entries)
        for i, entry in enumerate(entries):
            if isinstance(entry, dict) and not isinstance(entry.get("hooks", []), list):
                raise wrong(f"hooks.{event}[{i}].hooks", "a list of hooks", entry["hooks"])
    return current


def _json_type(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


def install_settings(vault: Vault, path: Path, *, make_folder: bool = False) -> list[str]:
    """Add the hooks to a Claude Code settings file, keeping everything in it; returns the events
    it added (none when they were there). A hook an older optmem wrote for these events (by this
    machine's paths) is replaced, so each event runs optmem once. A file of another shape, or in
    a folder that does not exist (`read_settings`), is not touched."""
    from optmem import fsio

    current = read_settings(path, make_folder=make_folder)
    hooks = current.setdefault("hooks", {})
    added = []
    changed = False
    for event, entries in claude_code_settings(vault, project_of(path))["hooks"].items():
        have = hooks.setdefault(event, [])
        ours = entries[0]["hooks"][0]["command"]
        for entry in have:
            if isinstance(entry, dict) and isinstance(entry.get("hooks"), list):
                kept = [h for h in entry["hooks"] if not (isinstance(h, dict) and _older_hook(h.get("command"), ours))]
                changed |= len(kept) != len(entry["hooks"])
                entry["hooks"] = kept
        have[:] = [e for e in have if not (isinstance(e, dict) and e.get("hooks") == [])]
        commands = {
            h.get("command") for e in have if isinstance(e, dict) for h in e.get("hooks", []) if isinstance(h, dict)
        }
        if ours not in commands:
            have.extend(entries)
            added.append(event)
    if added or changed:
        fsio.atomic_write(path, json.dumps(current, ensure_ascii=False, indent=2) + "\n", mode=0o644)
    return added


def _older_hook(command: Any, ours: str) -> bool:
    """A hook command an optmem wrote for Claude Code before (another form of ours)."""
    return (
        isinstance(command, str)
        and command != ours
        and command.rstrip().endswith(" hook claude-code")
        and ("optmem" in command)
    )


def hook_vault(root: Path, cwd: Path) -> Path:
    """The vault a hook event is for, given the vault its command names (`root`, made absolute
    from the hook's working folder `cwd`). The command names the project's vault relative to
    `$CLAUDE_PROJECT_DIR`, else to the folder Claude Code runs the hook in — a subfolder of the
    repository when the session started there without that variable. A vault named relative to
    `cwd` that is not there is looked for in each folder above, up to the repository's top (the
    first one found serves); none there: it may be made only at the top (a project's first
    session), never in a subfolder — a stray vault would hold the handoff no session reads.
    Raises VaultMissing, saying where it looked."""
    from optmem.errors import VaultMissing

    if root.is_dir():
        return root
    here = Path(os.path.abspath(cwd))
    if not root.is_relative_to(here) or root == here:
        return root  # (a vault named by its own path: made at the first write, as ever)
    rel = root.relative_to(here)
    try:
        top: Path | None = Path(os.path.abspath(repo_root(here)))
    except (UsageError, OSError, subprocess.SubprocessError):
        top = None
    if top is None or here == top or not here.is_relative_to(top):
        return root
    for folder in here.parents:
        if (folder / rel).is_dir():
            return folder / rel
        if folder == top:
            break
    raise VaultMissing(
        f"no vault {rel.as_posix()} in {here} or any folder above it up to the repository's top {top}: the hook "
        f"ran in a subfolder (Claude Code started there without CLAUDE_PROJECT_DIR), and a vault made here would "
        f"hold what no other session reads — nothing was written. Start Claude Code in {top}, or create the "
        f"project's vault there first (`optmem --vault {top / rel} init`)",
        vault=str(root),
    )


def project_of(settings: Path) -> Path | None:
    """The project folder a settings file belongs to (`<project>/.claude/settings*.json`); None
    for the user's own `~/.claude/settings.json`, which every project reads."""
    folder = Path(os.path.abspath(settings)).parent
    if folder.name != ".claude" or os.path.realpath(folder) == os.path.realpath(Path.home() / ".claude"):
        return None
    return folder.parent


def hook_command(vault: Vault, project: Path | None) -> tuple[str, list[str]]:
    """The command the hooks run, as it works on every clone of a project and every machine of a
    team (the settings file is shared through git): `optmem` from PATH, the vault named by
    `$CLAUDE_PROJECT_DIR` (Claude Code sets it to the project's folder when it runs a hook; the
    current folder, where Claude Code runs hooks, when it does not) when it lies in the project,
    else by `$HOME` when it lies there, else by its path — this machine's, which the notes say.
    (The command and the notes.)"""
    import shutil

    root = Path(os.path.realpath(vault.root))
    notes: list[str] = []
    where = None
    for var, base in (("${CLAUDE_PROJECT_DIR:-.}", project), ("$HOME", Path.home())):
        if base is not None and root.is_relative_to(real := Path(os.path.realpath(base))):
            rel = root.relative_to(real).as_posix()
            where = f'"{var}"' + ("" if rel == "." else f"/{shlex.quote(rel)}")
            break
    if where is None:
        where = shlex.quote(str(vault.root))
        notes.append(
            f"the vault {vault.root} is neither in the project nor in the home folder, so the hooks name it by "
            "this machine's path: on another machine the vault must be at the same path (or each person "
            "wires their own hooks into .claude/settings.local.json, which git does not share)"
        )
    if shutil.which("optmem") is None:
        notes.append(
            "`optmem` is not on this machine's PATH: the hooks run `optmem` from PATH (on every machine), so "
            "install it where Claude Code finds it (`pipx install optmem`, or put the venv's bin folder on PATH)"
        )
    return f"optmem --vault {where} hook claude-code", notes


def claude_code_settings(vault: Vault, project: Path | None = None) -> dict[str, Any]:
    """The `hooks` block for Claude Code's settings.json (`hook_command`: what works on every clone)."""
    cmd, _ = hook_command(vault, project)
    entry = [{"hooks": [{"type": "command", "command": cmd, "timeout": 30}]}]
    return {"hooks": {"SessionStart": entry, "PreCompact": entry, "SessionEnd": entry}}
