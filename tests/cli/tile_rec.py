"""Checks a plan/1 document and the SQLite history of one run against
each other: the tile record, the ops of each patch, the step each runs
at. usage: tile_rec.py PLAN.json DB OUTCOME"""
import json
import sqlite3
import sys

plan, db, want = sys.argv[1], sys.argv[2], sys.argv[3]
d = json.load(open(plan))
t = d["passes"]["tile"]
con = sqlite3.connect(db)
con.row_factory = sqlite3.Row
row = con.execute("SELECT * FROM tile WHERE run_id = "
                  "(SELECT max(id) FROM run)").fetchone()
bad = []
if t["outcome"] != want:
    bad.append("outcome %s, wanted %s" % (t["outcome"], want))
for k in ("outcome", "cuts", "candidates", "lower_bound_before", "cut",
          "bands", "columns", "lower_bound_with", "lower_bound_without",
          "ranked", "picked", "built", "lower_bound_picked_file",
          "lower_bound_first_file"):
    if row[k] != t.get(k):
        bad.append("%s: %r in SQLite, %r in JSON" % (k, row[k], t.get(k)))
xs = [r[0] for r in con.execute(
    "SELECT tensor FROM tile_export WHERE run_id = "
    "(SELECT max(id) FROM run) ORDER BY seq")]
if xs != t.get("exports", []):
    bad.append("exports %r in SQLite, %r in JSON" % (xs, t.get("exports")))
steps = {e["step"]: e for e in d["execution"] if "patch" in e}
ops = con.execute("SELECT * FROM tile_op WHERE run_id = "
                  "(SELECT max(id) FROM run)").fetchall()
if len(ops) != len(steps):
    bad.append("%d tile_op rows, %d steps with a patch" % (len(ops), len(steps)))
for o in ops:
    e = steps.get(o["step"])
    p = e["patch"] if e else {}
    if not e or e["op"] != o["op"] or p["role"] != o["role"] or \
            p["of"] != o["origin"] or p.get("band") != o["band"] or \
            p.get("column") != o["col"]:
        bad.append("step %d: %s in SQLite, %s in JSON" % (o["step"], dict(o), e))
        break
if want == "kept":
    names = {e["op"] for e in d["execution"]}
    # every patch has its copies; the joins write bands and then the cut
    cells = {(e["patch"]["band"], e["patch"]["column"]) for e in steps.values()
             if e["patch"]["role"] == "copy"}
    if len(cells) != t["bands"] * t["columns"]:
        bad.append("%d patches with copies, %d x %d chosen" %
                   (len(cells), t["bands"], t["columns"]))
    joins = [e for e in steps.values() if e["patch"]["role"] == "join"]
    # the joins of each tensor: the last writes it; no other tensor is
    # joined
    for x in [t["cut"]] + t["exports"]:
        mine = [e for e in joins if e["patch"]["of"] == x]
        last = max(mine, key=lambda e: e["step"]) if mine else None
        if not last or x not in last["outputs"]:
            bad.append("the last join of %s does not write it" % x)
    other = {e["patch"]["of"] for e in joins} - {t["cut"]} - set(t["exports"])
    if other:
        bad.append("joins of %s, neither the cut nor an export" % sorted(other))
    for e in steps.values():
        if e["patch"]["role"] == "copy" and e["type"] == "Concat":
            continue
        if e["patch"]["role"] == "copy" and e["op"] in names and \
                not e["op"].startswith(e["patch"]["of"] + ".t"):
            bad.append("copy %s of %s" % (e["op"], e["patch"]["of"]))
            break
    if t["extra_macs_pct"] <= 0 or t["extra_macs_pct"] > 25:
        bad.append("extra MACs %.2f%%" % t["extra_macs_pct"])
elif steps:
    bad.append("%d steps with a patch, outcome %s" % (len(steps), want))
print("; ".join(bad))
