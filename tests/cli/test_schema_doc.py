#!/usr/bin/env python3
"""docs/report-schema.md shows example queries with their output; this
test keeps that output real. It builds the documented database (four runs
of MobileNetV2: the default strategy, the linear baseline, every pass
with the memory-aware order, and every pass with the tile pass and the
what-if rows), runs every
```sql block through the sqlite3 shell (-header -column) and compares the
result with the ```text block that follows it, line by line (trailing
blanks ignored).

usage: test_schema_doc.py MPLAN SOURCE_DIR [--update]
--update rewrites the ```text blocks with the current output (after a
deliberate change to the schema or the planner)."""
import os
import re
import subprocess
import sys
import tempfile

BLOCK = re.compile(r"```sql\n(.*?)```\n\n```text\n(.*?)```", re.S)


def build(mplan, db):
    for extra in ([], ["--strategy", "linear"],
                  ["--passes", "all", "--order", "memory"],
                  ["--passes", "all,tile", "--what-if"]):
        subprocess.run([mplan, "report", "models/mobilenet_v2.json",
                        "--sqlite", db] + extra, check=True,
                       stdout=subprocess.DEVNULL)


def query(db, sql):
    out = subprocess.run(["sqlite3", "-header", "-column", db, sql],
                         check=True, capture_output=True, text=True).stdout
    return "".join(line.rstrip() + "\n" for line in out.splitlines())


def main():
    mplan, src = sys.argv[1], sys.argv[2]
    update = "--update" in sys.argv[3:]
    os.chdir(src)
    path = os.path.join("docs", "report-schema.md")
    doc = open(path).read()
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "history.db")
        build(mplan, db)
        failed = 0
        blocks = list(BLOCK.finditer(doc))

        def fix(m):
            return "```sql\n" + m.group(1) + "```\n\n```text\n" + \
                query(db, m.group(1)) + "```"
        if update:
            open(path, "w").write(BLOCK.sub(fix, doc))
            print(f"updated {len(blocks)} query outputs in {path}")
            return 0
        for m in blocks:
            got = query(db, m.group(1))
            want = "".join(l.rstrip() + "\n" for l in m.group(2).splitlines())
            if got != want:
                failed += 1
                print(f"FAIL: {path}: the output of\n{m.group(1)}is now\n{got}"
                      f"not\n{want}(run {sys.argv[0]} MPLAN SRC --update "
                      "after a deliberate change)")
        if len(blocks) < 6:
            failed += 1
            print(f"FAIL: only {len(blocks)} documented queries found")
        print(f"schema doc: {len(blocks) - failed} passed, {failed} failed")
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
