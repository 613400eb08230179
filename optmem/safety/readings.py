"""The readings of a text the rules run on, so that obfuscation does not hide a rule:

1. **As written**, and in NFKC (`wide`: full-width `ＡＫＩＡ…` reads as ASCII) — the written rules.
2. **Folded** (`fold`), for the phrase rules: NFKD with diacritics dropped (full-width, mathematical and circled
   letters become ASCII), invisible characters removed, Cyrillic/Greek/small-capital look-alikes mapped to Latin, case
   folded, the traditional Chinese characters the rules use mapped to simplified, separators between Chinese
   characters dropped; then with digits inside words read as letters (`1gn0re`), as ROT13 and backwards. A scan reads
   the folded text in ROT13 and backwards only where a rule's words are there.
3. **Letter-spaced words collapsed** (`collapsed`: `i.g.n.o.r.e`, `i g n o r e`).
4. **Spoken** (`spoken`): NFKC and case-folded with every script's own letters kept, for the table of languages.
5. **Decoded** (`decoded`): base64, base32 and hex runs (16+ characters) and escapes (`&#105;`, `\\u0069`, `%69`),
   bounded in size. Patterns are compiled by `re` on first use (its cache keeps them)."""

import re
import unicodedata
from collections.abc import Callable

from optmem.safety.chars import CONTROL, DIACRITICS, INVISIBLE, INVISIBLE_CHAR, fold_table

MAX_DECODED = 256 * 1024  # characters of encoded runs decoded per text

# Our own rule names appear in our own output ([BLOCKED: rule], error messages), which agents
# may quote into memory; with underscores as word gaps three of them would trip their own rule.
_OWN_NAMES = r"\b(?:ignore_previous_instructions|reveal_system_prompt|system_prompt_override)(?:_zh)?\b"
_UNSEEN = f"[{INVISIBLE}{DIACRITICS}]+"  # removed when folding
_SEPARATOR = r"[ \n.\-_*|/~+]{1,3}"  # dropped between two Chinese characters
_SPACED = r"(?<![a-z0-9])[a-z](?P<s>[^\w]{1,3}|_{1,3})[a-z](?:(?P=s)[a-z])+(?![a-z0-9])"  # i.g.n.o.r.e
_BASE64 = r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}={0,2}(?:[ \t]*\r?\n[ \t]*[A-Za-z0-9+/_-]{4,}={0,2})*"
_HEX = r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){8,}(?![0-9A-Fa-f])"
_BASE32 = r"(?<![A-Z2-7])(?:[A-Z2-7]{8}){2,}[A-Z2-7]{0,7}=*(?![A-Za-z0-9])"
_ESCAPE = r"&#(?:[xX][0-9a-fA-F]{1,6}|\d{1,7});?|\\u\{?[0-9a-fA-F]{4,6}\}?|\\x[0-9a-fA-F]{2}|%[0-9a-fA-F]{2}"
_LEET_WORD = r"(?<![a-z0-9@$])(?=[a-z0-9@$]*[a-z])(?=[a-z0-9@$]*[013457@$])[a-z0-9@$]{3,}"  # 1gn0re
_LEET = str.maketrans("013457@$", "oieastas")
ROT13 = str.maketrans("abcdefghijklmnopqrstuvwxyz", "nopqrstuvwxyzabcdefghijklm")  # (folded text: lower case)


def case_blind(lowered: str) -> str:
    """What a case-blind pattern takes for i and s besides I and S (`re`'s extra case pairs)."""
    return lowered.replace("\u0131", "i").replace("\u017f", "s")


def forms(text: str) -> tuple[str, str]:
    """`text` in NFKD and in NFKC (NFKD composed: a tenth of the cost of normalising anew)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return decomposed, unicodedata.normalize("NFC", decomposed)


def fold(text: str, decomposed: str | None = None) -> str:
    """`text` as the phrase rules read it: look-alikes, width, case, invisibles, the Chinese rules' traditional forms
    normalised away; spaces collapsed, line breaks kept (role markers start lines), no blanks. `decomposed`: NFKD."""
    if text.isascii():
        folded = text.lower()
    else:
        decomposed = decomposed or unicodedata.normalize("NFKD", text)
        folded = re.sub(_UNSEEN, "", decomposed).translate(fold_table()).casefold()
    folded = re.sub(r"(?<=[a-z])-[ \n]{1,2}(?=[a-z])", "", re.sub(_OWN_NAMES, " ", folded))  # instruc- tions
    folded = "\n".join(line for line in (" ".join(x.split()) for x in folded.splitlines()) if line)
    if folded.isascii():
        return folded  # (no Chinese in it)
    # Chinese is written without spaces: a separator between two Chinese characters is obfuscation
    return re.sub(
        _SEPARATOR, lambda m: "" if _han(m.string, m.start() - 1) and _han(m.string, m.end()) else m[0], folded
    )


def _han(text: str, i: int) -> bool:
    return 0 <= i < len(text) and ("\u3400" <= text[i] <= "\u9fff" or "\uf900" <= text[i] <= "\ufaff")


def leet(folded: str) -> str:
    """The folded text with digits and signs inside words read as letters (`1gn0re`)."""
    return re.sub(_LEET_WORD, lambda m: m[0].translate(_LEET), folded)


CIPHERS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("rot13_", lambda folded: folded.translate(ROT13)),
    ("reversed_", lambda folded: folded[::-1]),
)


def collapsed(folded: str) -> tuple[str, list[tuple[int, int]]]:
    """The folded text with letter-spaced runs joined, and where those runs now are."""
    pieces: list[str] = []
    spans: list[tuple[int, int]] = []
    last = size = 0
    for m in re.finditer(_SPACED, folded):
        joined = m[0].replace(m["s"], "")
        size += m.start() - last + len(joined)
        spans.append((size - len(joined), size))
        pieces += [folded[last : m.start()], joined]
        last = m.end()
    pieces.append(folded[last:])
    return "".join(pieces), spans


def spoken(text: str, wide: str) -> str:
    """`text` as the languages table reads it: NFKC (`wide`), case-folded, invisibles out, spaces collapsed."""
    return " ".join(INVISIBLE_CHAR.sub("", wide).casefold().replace("\\n", " ").split())  # (and JSON's \\n)


def decoded(text: str) -> list[tuple[str, str]]:
    """(encoding, decoded text) for each base64, hex, base32 or Morse run (over lines, or without its last line: a
    field's name on the next line joins a run), for escaped text, and for quoted strings joined, bounded."""
    out: list[tuple[str, str]] = []
    budget = MAX_DECODED
    for encoding, pattern in (("base64", _BASE64), ("hex", _HEX), ("base32", _BASE32)):
        for m in re.finditer(pattern, text):
            budget -= len(run := "".join(lines := m[0].split()))
            if budget < 0:
                return out
            if plain := _decode(encoding, run) or (len(lines) > 1 and _decode(encoding, "".join(lines[:-1]))):
                out.append((encoding, plain))
    if len(re.findall(_ESCAPE, text)) >= 3:
        out.append(("escaped", re.sub(_ESCAPE, _unescape, text)))
    if len(pieces := re.findall(r"(?<!\w)'([^'\n]{1,300})'(?!\w)|\"([^\"\n]{1,300})\"", text[:MAX_DECODED])) >= 2:
        out.append(("joined", "".join(a or b for a, b in pieces)))  # strings an agent is told to join
    for m in re.finditer(r"(?<![\w.-])[.-]{1,7}(?:(?: | ?/ ?)[.-]{1,7}){7,}(?![\w.-])", text[:MAX_DECODED]):
        out.append(("morse", " ".join("".join(_MORSE.get(c, "?") for c in w.split()) for w in m[0].split("/"))))
    return out


def _decode(encoding: str, run: str) -> str | None:
    """The text a base64, hex or base32 `run` encodes; of bytes that are no text, a private key's BEGIN line (its DER
    body follows); else None."""
    import binascii

    try:
        if encoding == "hex":
            raw = binascii.unhexlify(run)
        elif encoding == "base32":
            import base64  # (with struct: only where a base32 run stands)

            raw = base64.b32decode(run.rstrip("=") + "=" * (-len(run.rstrip("=")) % 8))
        else:
            run = run.rstrip("=").replace("-", "+").replace("_", "/")
            run = run[: len(run) - 1] if len(run) % 4 == 1 else run
            raw = binascii.a2b_base64(run + "=" * (-len(run) % 4), strict_mode=True)
        plain = raw.decode("utf-8")
    except UnicodeDecodeError:
        plain = ""  # (bytes, not text)
    except ValueError:  # (binascii.Error)
        return None
    if len(plain) >= 4 and len(re.findall(CONTROL, plain)) * 10 <= len(plain):  # text, not bytes
        return plain
    key = re.match(rb"\s*-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----", raw)  # (its DER body follows)
    return key[0].decode() if key else None


_CODES = ".- -... -.-. -.. . ..-. --. .... .. .--- -.- .-.. -- -. --- .--. --.- .-. ... - ..- ...- .-- -..- -.-- --.. "
_CODES += "----- .---- ..--- ...-- ....- ..... -.... --... ---.. ----."  # then digits ("/" between words)
_MORSE = dict(zip(_CODES.split(), "abcdefghijklmnopqrstuvwxyz0123456789"))


def _unescape(m: re.Match[str]) -> str:
    s = m[0]
    decimal = s.startswith("&#") and s[2] not in "xX"
    try:
        cp = int(s.strip("&#;\\uxX{}%"), 10 if decimal else 16)
    except ValueError:
        return s
    # control characters from printf formats (%15d) are not what an attacker hides
    return chr(cp) if 0x20 <= cp < 0x110000 and not 0x7F <= cp < 0xA0 else s
