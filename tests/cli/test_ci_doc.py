#!/usr/bin/env python3
"""docs/ci.md stays true: every YAML snippet (GitHub Actions, GitLab CI)
parses, every mplan command in the snippets and shell blocks uses options
that the command's --help lists (or mplan plan's planning flags), and every
script the page names exists.

usage: test_ci_doc.py MPLAN SOURCE_DIR
"""
import re
import subprocess
import sys

import yaml

mplan, src = sys.argv[1], sys.argv[2]
text = open(f"{src}/docs/ci.md", encoding="utf-8").read()
failures = []


def strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)


def helptext(cmd, cache={}):
    if cmd not in cache:
        cache[cmd] = subprocess.run([mplan, cmd, "--help"], capture_output=True,
                                    text=True).stdout
    return cache[cmd]


def check_command(line):
    m = re.search(r"\bmplan(?:/build/mplan)? (check|diff|plan|report|explain|validate)\b(.*)",
                  line)
    if not m:
        return 0
    cmd, rest = m.group(1), m.group(2)
    known = helptext(cmd) + helptext("plan")
    for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", rest):
        if not re.search(re.escape(flag) + r"\b", known):
            failures.append(f"'mplan {cmd}' has no option {flag}: {line.strip()}")
    return 1


blocks = re.findall(r"```(\w*)\n(.*?)```", text, re.S)
yaml_blocks = commands = 0
for lang, body in blocks:
    if lang == "yaml":
        yaml_blocks += 1
        try:
            doc = yaml.safe_load(body)
        except yaml.YAMLError as e:
            failures.append(f"a YAML block does not parse: {e}")
            continue
        for s in strings(doc):
            for line in s.replace("\\\n", " ").split("\n"):
                commands += check_command(line)
    elif lang in ("sh", ""):
        for line in body.replace("\\\n", " ").split("\n"):
            commands += check_command(line)
for script in sorted(set(re.findall(r"\./scripts/[\w.]+\.sh", text))):
    try:
        open(f"{src}/{script}").close()
    except OSError:
        failures.append(f"{script} does not exist")
if yaml_blocks < 3 or commands < 6:
    failures.append(f"found only {yaml_blocks} YAML blocks and {commands} commands")
for f in failures:
    print("FAIL:", f)
print(f"docs/ci.md: {yaml_blocks} YAML blocks, {commands} mplan commands, "
      f"{len(failures)} problems")
sys.exit(1 if failures else 0)
