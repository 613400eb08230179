"""Measure the content scanner: payloads caught per kind, false positives on ordinary notes.

    python scripts/scan_corpus.py              # figures
    python scripts/scan_corpus.py --misses     # also list every miss and false positive
    python scripts/scan_corpus.py --catalogs   # also scan this machine's Chinese gettext catalogs
    python scripts/scan_corpus.py --origin tool    # every text as a tool's output (the origin rules too)

The sets are the ones tests/test_scan.py asserts on (tests/data/): the adversarial payload
corpus, the class corpus (scan_generalise/: attacks and secrets by class, and ordinary developer
notes beside them), five blind corpora (blind_safety*/: attacks and notes written by someone who
never saw the scanner), agent-style memory notes written blind (agent_notes/), 1,000 generated ordinary notes (Chinese and English) and every text of
sample_vault/.
--catalogs adds real text that no one wrote for this test: every message (English msgid and
Chinese msgstr) of /usr/share/locale/zh_*/LC_MESSAGES/*.mo, as many as the machine has.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "data"))
sys.path.insert(0, str(ROOT))

import corpus  # noqa: E402

from optmem.safety import scan  # noqa: E402


def catalog_messages() -> list[str]:
    """Every distinct message of the machine's Chinese gettext catalogs, English and Chinese."""
    import gettext
    import struct

    texts: set[str] = set()
    for path in sorted(Path("/usr/share/locale").glob("zh_*/LC_MESSAGES/*.mo")):
        try:
            with path.open("rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog  # type: ignore[attr-defined]
        except (OSError, UnicodeDecodeError, struct.error):
            continue  # a catalog this gettext cannot read
        for msgid, msgstr in catalog.items():
            for text in (msgid[0] if isinstance(msgid, tuple) else msgid, msgstr):
                if isinstance(text, str) and len(text.strip()) > 3:
                    texts.add(text.strip())
    return sorted(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="list misses and false positives")
    parser.add_argument("--catalogs", action="store_true", help="also scan the zh_* gettext catalogs")
    parser.add_argument("--origin", choices=("tool",), help="scan every text as a tool's output would be")
    args = parser.parse_args()
    tool = args.origin == "tool"

    def find(text: str) -> str | None:
        return scan.find(text, tool=tool)

    rows = corpus.payloads()
    for kind in ("injection", "secret"):
        mine = [r for r in rows if r["kind"] == kind]
        missed = [r for r in mine if find(r["text"]) is None]
        print(f"{kind + ' payloads caught':<32} {len(mine) - len(missed):>5} / {len(mine)}")
        held = [r for r in mine if r["note"].startswith("own: held-out")]
        held_missed = [r for r in missed if r["note"].startswith("own: held-out")]
        print(f"{'  of which held-out probes':<32} {len(held) - len(held_missed):>5} / {len(held)}")
        if args.misses:
            for r in missed:
                print(f"    miss: {r['note']}: {r['text']!r}")
    by_class = Counter(r["class"] for r in corpus.generalise_payloads())
    caught = Counter(r["class"] for r in corpus.generalise_payloads() if find(r["text"]))
    for kind in ("injection", "secret"):
        mine = [r for r in corpus.generalise_payloads() if r["kind"] == kind]
        hit = sum(1 for r in mine if find(r["text"]))
        print(f"{'class corpus ' + kind:<32} {hit:>5} / {len(mine)}")
    print(f"{'  by class':<32} {', '.join(f'{c} {caught[c]}/{n}' for c, n in sorted(by_class.items()))}")
    if args.misses:
        for r in corpus.generalise_payloads():
            if not find(r["text"]):
                print(f"    miss: {r['class']}: {r['text']!r}")
    for name, label in (
        ("blind_safety", "blind"),
        ("blind_safety2", "blind 2"),
        ("blind_safety3", "blind 3"),
        ("blind_safety4", "blind 4"),
        ("blind_safety5", "blind 5"),
        ("blind_safety6", "blind 6"),
        ("blind_safety7", "blind 7"),
        ("blind_safety8", "blind 8"),
        ("blind_safety9", "blind 9"),
        ("blind_safety10", "blind 10"),
        ("blind_safety11", "blind 11"),
        ("blind_safety12", "blind 12"),
        ("blind_safety13", "blind 13"),
        ("blind_safety14", "blind 14"),
        ("blind_safety15", "blind 15"),
        ("blind_safety16", "blind 16"),
        ("blind_safety17", "blind 17"),
    ):
        blind = corpus.blind_attacks(name)
        for kind in ("injection", "secret"):
            mine = [r for r in blind if r["kind"] == kind]
            missed = [r for r in mine if find(r["text"]) is None]
            print(f"{label + ' corpus ' + kind:<32} {len(mine) - len(missed):>5} / {len(mine)}")
            if args.misses:
                for r in missed:
                    print(f"    miss: {r['id']} {r['lang']}: {r['text']!r}")
        notes = corpus.blind_notes(name)
        for kind in ("injection", "secret"):
            hits = [(rule, n) for n in notes if (rule := find(str(n["text"]))) and scan.kind_of(rule) == kind]
            print(f"{label + ' notes flagged as ' + kind:<32} {len(hits):>5} / {len(notes)}")
            if args.misses:
                for rule, n in hits:
                    print(f"    false positive ({rule}): {n['id']}: {n['text']!r}")
    agent = corpus.agent_notes()
    hits = [(rule, n) for n in agent if (rule := find(str(n["text"])))]
    print(f"{'agent-style notes flagged':<32} {len(hits):>5} / {len(agent)}")
    if args.misses:
        for rule, n in hits:
            print(f"    false positive ({rule}): {n['id']}: {n['text']!r}")
    sets = [
        ("ordinary notes", corpus.ordinary_notes()),
        ("developer notes", corpus.developer_notes()),
        ("sample vault texts", corpus.sample_vault_texts()),
    ]
    if args.catalogs:
        sets.append(("gettext catalog messages", catalog_messages()))
    for label, texts in sets:
        flagged = [(t, find(t)) for t in texts]
        flagged = [(t, rule) for t, rule in flagged if rule]
        print(f"{label + ' false positives':<32} {len(flagged):>5} / {len(texts)}")
        if label.startswith("gettext"):
            rules = Counter(rule for _, rule in flagged)
            print(f"{'  by rule':<32} {', '.join(f'{r} {n}' for r, n in rules.most_common())}")
        if args.misses:
            for t, rule in flagged:
                print(f"    false positive ({rule}): {t!r}")

    texts = [r["text"] for r in rows] + corpus.ordinary_notes()
    start = time.perf_counter()
    for t in texts:
        scan.find(t)
    per = (time.perf_counter() - start) / len(texts) * 1e6
    print(f"{'scan.find, mean per text':<32} {per:>8.1f} µs ({len(texts)} texts)")


if __name__ == "__main__":
    main()
