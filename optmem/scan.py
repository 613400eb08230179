"""The content scanner: invisible characters, prompt-injection phrasing and secrets.

Every write to hot memory or the log is scanned; `show` and `context` re-scan and print
`[BLOCKED: rule]` instead of a flagged entry (the file keeps the raw text so it can be removed).
"""

from __future__ import annotations

import re

from optmem.errors import UnsafeContent

_I = re.IGNORECASE | re.DOTALL
RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("invisible_character",
     re.compile("[\u200b-\u200d\u2060-\u2064\ufeff\u202a-\u202e\u2066-\u2069]")),
    ("ignore_previous_instructions",
     re.compile(r"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?"
                r"(?:previous|prior|above|earlier|preceding)\s+(?:instructions?|prompts?|rules|directions)", _I)),
    ("role_override", re.compile(r"\byou\s+are\s+now\b", _I)),
    ("reveal_system_prompt",
     re.compile(r"\b(?:reveal|print|show|output|repeat|leak|dump)\s+(?:me\s+)?(?:the\s+|your\s+)?"
                r"(?:full\s+)?system\s+prompt", _I)),
    ("system_prompt_override", re.compile(r"\bsystem\s+prompt\s+override\b", _I)),
    ("conceal_from_user", re.compile(r"\b(?:do\s+not|don't|never)\s+tell\s+the\s+user\b", _I)),
    ("hidden_html_comment", re.compile(r"<!--.*?-->", re.DOTALL)),
    ("ignore_previous_instructions_zh",
     re.compile(r"(?:忽略|无视|忘记|忘掉)(?:掉)?(?:之前|以上|上面|前面|先前|此前|所有)(?:的)?(?:所有)?(?:的)?"
                r"(?:指令|指示|提示|规则|要求)")),
    ("role_override_zh", re.compile(r"你现在是")),
    ("reveal_system_prompt_zh",
     re.compile(r"(?:显示|输出|泄露|打印|透露|告诉我)(?:你的|出)?(?:系统提示|系统指令|system\s*prompt)", re.I)),
    ("conceal_from_user_zh", re.compile(r"(?:不要|别|不许)(?:告诉|让)用户")),
    ("private_key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("api_secret_key", re.compile(r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_-]{20,}")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("password_assignment",
     re.compile(r"\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)"
                r"\s*[:=]\s*[\"'][^\"'\s]{4,}[\"']", _I)),
)


def find(text: str) -> str | None:
    """The name of the first rule that fires on `text`, or None."""
    for name, pattern in RULES:
        if pattern.search(text):
            return name
    return None


def check(text: str, *, allow_unsafe: bool = False) -> None:
    """Refuse `text` with `unsafe_content` naming the rule, unless `allow_unsafe`."""
    if allow_unsafe:
        return
    rule = find(text)
    if rule:
        raise UnsafeContent(
            f"refused: the text trips the security rule {rule!r}; remove that part, "
            "or pass --allow-unsafe if it is really meant to be stored",
            rule=rule,
        )


def display(text: str) -> str:
    """`text`, or `[BLOCKED: rule]` when the scanner flags it (for prompt-bound output)."""
    rule = find(text)
    return f"[BLOCKED: {rule}]" if rule else text
