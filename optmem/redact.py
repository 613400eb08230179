"""Secrets out of a text, the rest kept: each secret the scanner finds read as its `[BLOCKED: rule]`
placeholder, the fewest words that clear it (`redact_secrets`). One mechanism for every writer
that keeps a text around its secret: Hermes' turns, the agent hosts' handoffs (`handoff.write_kept`)."""

from __future__ import annotations

import re
from collections.abc import Callable

REDACT_WORDS = 400  # words of a flagged line searched for the secret before the whole line is redacted
REDACT_SPAN = 4  # the most words one secret is taken to span ("password = hunter2")
_PLACEHOLDER = r"\[BLOCKED: [a-z0-9_]+\]"
# a key's armour: its first line, and what ends it (a PEM block's END line, a PuTTY file's MAC line)
_ARMOUR = {
    r"-----BEGIN[A-Z0-9 ]{0,40}-----": r"-----END[A-Z0-9 ]{0,40}-----",
    r"PuTTY-User-Key-File-\d+": r"Private-MAC:[ \t]*\S*",
}
_BASE64_LINE = re.compile(r"[ \t]*[A-Za-z0-9+/]{4,}={0,2}[ \t]*")  # (one line of a base64 body, wrapped)
# what else stands in a key's body: an armour header (an encrypted PEM's, a PGP block's, a PuTTY
# file's), and a PGP block's checksum line
_ARMOUR_HEADER = re.compile(
    r"[ \t]*(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset|Encryption|Public-Lines|Private-Lines"
    r"|Key-Derivation|Argon2-[A-Za-z]+|Private-Hash)[ \t]*:.*"
)
_CHECKSUM = re.compile(r"[ \t]*=[A-Za-z0-9+/]{4}[ \t]*")
# a short line of letters alone, as a word is written ("Thanks", "ok", "Done"): after a key's
# body it is the next words, not the body's last line — a last line of base64 reads so by chance
# about once in a thousand keys, and then only a few of the key's characters are left
_WORD = re.compile(r"[ \t]*[A-Z]?[a-z]{1,11}[ \t]*")


def _body_line(line: str, width: int) -> bool:
    """Whether `line` is one more line of a key's base64 body whose lines are `width` wide (0: no
    line read yet) — not a word that follows a body's last, shorter line."""
    if not _BASE64_LINE.fullmatch(line):
        return bool(_CHECKSUM.fullmatch(line))
    return not ((not width or len(line.strip()) < width) and _WORD.fullmatch(line))


def _body_end(text: str, at: int) -> int:
    """Where a key's armour that has no END line ends, its first line ending at `at`: after the rest
    of that line, its headers and a blank line before its body, and its base64 lines — the first
    line that is none of these (words, a blank line after the body) is no part of it, and is kept."""
    end = text.find("\n", at)
    if end < 0:
        return len(text)
    width, header = 0, False
    while end < len(text):
        nxt = text.find("\n", end + 1)
        line = text[end + 1 : nxt if nxt >= 0 else len(text)]
        if _ARMOUR_HEADER.fullmatch(line) and not width:
            header = True
        elif not line.strip() and (header or not width):  # (after the headers, or the first line: PGP's)
            header = False
        elif _body_line(line, width):
            width, header = width or len(line.strip()), False
        else:
            return end
        end = nxt if nxt >= 0 else len(text)
    return end


def redact_secrets(text: str) -> tuple[str, list[str]]:
    """`text` with each secret the scanner finds read as its `[BLOCKED: rule]` placeholder, and the
    rules (in order of first use) — the smallest part that clears it. A secret that spans lines is
    redacted whole: a key's armour the scanner flags from its first line to its END (or Private-MAC)
    line, else to the end of its body (a key cut short: `_body_end` — what follows it is kept); a
    run of base64 lines (a key's body wrapped at its width, without its BEGIN line, a word after its
    shorter last line left out) as one, with an END line that follows it. Then, line by line,
    the fewest words that trip the rule alone (a key, a token, `password = "…"`), else the line, else
    all of `text` (a secret split over lines). A placeholder is never read again as words of a secret.
    What flags no secret rule (an injection: held, as written) is left as it is."""
    from optmem.safety import scan

    def secret(part: str) -> str | None:
        return scan.secret(part)  # (a secret beside an injection too: the injection is held, the secret never)

    def words_out(line: str) -> tuple[str, list[str]] | None:
        """`line` with the fewest words that hold a secret redacted, until it holds none, or None."""
        found: list[str] = []
        while secret(line):
            words = [(m.span(), bool(m[1])) for m in re.finditer(rf"({_PLACEHOLDER})|\S+", line)]
            if len(words) > REDACT_WORDS:
                return None
            hit = next(
                (
                    (words[i][0][0], words[i + n - 1][0][1], r)
                    for n in range(1, REDACT_SPAN + 1)
                    for i in range(len(words) - n + 1)
                    if not any(placeholder for _, placeholder in words[i : i + n])
                    and (r := secret(line[words[i][0][0] : words[i + n - 1][0][1]]))
                ),
                None,
            )
            if hit is None or line[hit[0] : hit[1]] == line.strip():
                return None
            line, found = f"{line[: hit[0]]}[BLOCKED: {hit[2]}]{line[hit[1] :]}", [*found, hit[2]]
        return line, found

    if not secret(text):
        return text, []
    text, rules = _armour_out(text, secret)
    lines = _runs_out(text.split("\n"), secret, rules)
    for i, line in enumerate(lines):
        if rule := secret(line):
            cleared = words_out(line)
            lines[i], found = cleared if cleared else (f"[BLOCKED: {rule}]", [rule])
            lines[i] = _companions(lines[i], found[0])
            rules += found
    said = "\n".join(lines)
    if rule := secret(said):  # (what no line holds alone)
        return f"[BLOCKED: {rule}]", [rule]
    return said, list(dict.fromkeys(rules))


# a key-like string: a token's alphabet, lower and upper case mixed, 20 characters or more with a
# digit among them, or 30 or more without a dot (an AWS secret key, a session token, an API
# secret) — not a word, a dotted name (stripe.error.AuthenticationError), a UUID or a hash in hex
_TOKEN = re.compile(r"(?<![\w/+=.-])[\w/+=.-]{20,}(?![\w/+=.-])")


def _keylike(token: str) -> bool:
    mixed = bool(re.search("[a-z]", token)) and bool(re.search("[A-Z]", token))
    return mixed and (bool(re.search(r"\d", token)) or (len(token) >= 30 and "." not in token))


def _companions(line: str, rule: str) -> str:
    """`line`, in which a secret was just read as its placeholder, with each key-like string beside
    it read as one too: the secret half of a pair whose other half tripped the rule (an AWS secret
    key after its access key id, a session token) that the scanner does not flag alone once the
    half it knows is out — on a line that held a secret, a key-like string is taken for one."""
    return _TOKEN.sub(lambda m: f"[BLOCKED: {rule}]" if _keylike(m.group()) else m.group(), line)


def _armour_out(text: str, secret: Callable[[str], str | None]) -> tuple[str, list[str]]:
    """`text` with each key's armour that `secret` flags read as its placeholder — from its first
    line to what ends it, else to the end of `text` — and the rules."""
    rules: list[str] = []
    for begin, end in _ARMOUR.items():
        at = 0
        while m := re.compile(begin).search(text, at):
            close = re.compile(end).search(text, m.end())
            stop = close.end() if close else _body_end(text, m.end())
            if rule := secret(text[m.start() : stop]):
                text, rules = f"{text[: m.start()]}[BLOCKED: {rule}]{text[stop:]}", [*rules, rule]
            at = m.start() + 1
    return text, rules


def _runs_out(lines: list[str], secret: Callable[[str], str | None], rules: list[str]) -> list[str]:
    """`lines` with each run of base64 lines that holds a secret (one of its lines, or all of them
    joined: a key's body wrapped at its width) read as one placeholder, an END line after it too."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        j, width = i + 1, len(lines[i].strip())
        while j < len(lines) and _BASE64_LINE.fullmatch(lines[i]) and _BASE64_LINE.fullmatch(lines[j]):
            j += 1
            if len(lines[j - 1].strip()) != width:  # (a shorter line ends the body; a longer one is no part of it,
                j -= not _body_line(lines[j - 1], width) or len(lines[j - 1].strip()) > width  # nor a word)
                break
        run = [x.strip() for x in lines[i:j]]
        rule = len(run) > 1 and (next(filter(None, map(secret, run)), None) or secret("".join(run)))
        if not rule:
            out.append(lines[i])
            i += 1
            continue
        j += j < len(lines) and bool(re.fullmatch(r"\s*-----END[A-Z0-9 ]{0,40}-----\s*", lines[j]))
        out.append(f"[BLOCKED: {rule}]")
        rules.append(rule)
        i = j
    return out


_SAID = re.compile(r"[^\W_]+")  # a word (a run of letters or digits; each CJK character is one below)
_HAN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def secrets_out(text: str) -> tuple[str | None, list[str]]:
    """`text` with each secret in it read as its placeholder (`redact_secrets`) and the rules — or
    None for the text when what is left beside the placeholders is not worth keeping: fewer than
    two words ("token: ghp_…" says nothing once the token is out; "Set up the deploy; the token is
    ghp_…" still says what was asked). A text without a secret comes back as it is."""
    said, rules = redact_secrets(text)
    if not rules:
        return text, []
    rest = re.sub(_PLACEHOLDER, " ", said)
    words = len(_SAID.findall(_HAN.sub(" ", rest))) + len(_HAN.findall(rest))
    return (said if words >= 2 else None), rules
