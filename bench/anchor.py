"""The anchor: a bare Python script over a prebuilt SQLite FTS5 bigram index of the same records.

    python bench/anchor.py build LOG.jsonl INDEX.db
    python bench/anchor.py query INDEX.db "QUERY"

No optmem code is imported: this is what "just FTS5" costs on this machine, in this run.
"""

import json
import re
import sqlite3
import sys
import unicodedata

CJK = re.compile(r"([\u3400-\u9fff]+)|([^\W_]+)")


def bigrams(text):
    out = []
    for cjk, word in CJK.findall(unicodedata.normalize("NFKC", text).casefold()):
        if word:
            out.append(word)
        else:
            out.extend(cjk)
            out.extend(cjk[i : i + 2] for i in range(len(cjk) - 1))
    return " ".join(out)


def query_terms(text):
    out = []
    for cjk, word in CJK.findall(unicodedata.normalize("NFKC", text).casefold()):
        if word:
            out.append(word)
        elif len(cjk) == 1:
            out.append(cjk)
        else:
            out.extend(cjk[i : i + 2] for i in range(len(cjk) - 1))
    return " OR ".join(f'"{t}"' for t in dict.fromkeys(out))


def build(log, db):
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("CREATE VIRTUAL TABLE docs USING fts5(body, text UNINDEXED, id UNINDEXED)")
    rows = []
    with open(log, "rb") as fh:
        for line in fh:
            rec = json.loads(line)
            rows.append((bigrams(rec.get("text", "")), rec.get("text", ""), rec.get("id")))
            if len(rows) >= 5000:
                conn.executemany("INSERT INTO docs VALUES (?, ?, ?)", rows)
                rows = []
    conn.executemany("INSERT INTO docs VALUES (?, ?, ?)", rows)
    conn.commit()
    conn.close()


def query(db, q):
    conn = sqlite3.connect(db)
    for _, text, rid in conn.execute(
        "SELECT rowid, text, id FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT 10", (query_terms(q),)
    ):
        print(rid, text)


def scan(log):
    """Look at every record once: read and parse each line (the floor of any pass over a log)."""
    n = 0
    with open(log, "rb") as fh:
        for line in fh:
            n += bool(json.loads(line).get("id"))
    print(n)


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "scan":
        scan(sys.argv[2])
    else:
        query(sys.argv[2], sys.argv[3])
