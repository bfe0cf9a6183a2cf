"""The workload of `scripts/bench hlo`: one large HLO module as torch_xla writes them.

gen_big_hlo.py SOURCE.hlo OUT.hlo MEGABYTES

Takes SOURCE (a module in XLA's text form, e.g. the corpus's BERT training step) and repeats its ENTRY
computation's body until the file reaches MEGABYTES: every copy after the first renames the instructions it
defines (`%add.5` -> `%add.5.c3`), shares the entry's parameters and drops its ROOT marker, so the module stays
valid for XLA's parser and opprobe's (every copy is dead code but the last; a parser reads all of it). The called
computations are kept once. `, api_version=API_VERSION_UNSPECIFIED` (old dumps' custom calls; the default, which
XLA's parser no longer accepts) is dropped, so that XLA's parser reads the module too. Prints the module's size
and instruction count.
"""

import os
import re
import sys

NAME = re.compile(r"%([A-Za-z0-9_.\-]+)")
DEFINED = re.compile(r"^\s*(?:ROOT\s+)?%([A-Za-z0-9_.\-]+)\s*=")


def main():
    source, out, megabytes = sys.argv[1], sys.argv[2], float(sys.argv[3])
    text = open(source, encoding="utf-8").read().replace(", api_version=API_VERSION_UNSPECIFIED", "")
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("ENTRY "))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("}"))
    head, entry_line, body, tail = lines[:start], lines[start], lines[start + 1:end], lines[end:]
    params = [l for l in body if " parameter(" in l]
    rest = [l for l in body if " parameter(" not in l]
    defined = {m.group(1) for l in rest for m in [DEFINED.match(l)] if m}

    def copy(k, last):
        suffix = f".c{k}"
        for l in rest:
            if k:
                l = NAME.sub(lambda m: "%" + m.group(1) + suffix if m.group(1) in defined else m.group(0), l)
            if not last:
                l = l.replace("ROOT ", "", 1) if l.lstrip().startswith("ROOT ") else l
            yield l

    fixed = sum(len(l) + 1 for l in head + [entry_line] + params + tail)
    per_copy = sum(len(l) + 1 for l in copy(1, False))
    copies = max(1, round((megabytes * 1e6 - fixed) / per_copy))
    instructions = len(params) + copies * len(rest)
    with open(out, "w", encoding="utf-8") as f:
        for l in head + [entry_line] + params:
            f.write(l + "\n")
        for k in range(copies):
            for l in copy(k, k == copies - 1):
                f.write(l + "\n")
        for l in tail:
            f.write(l + "\n")
    size = os.path.getsize(out)
    print(f"{out}: {size / 1e6:.1f} MB, {copies} copies of the entry body, {instructions} entry instructions")


if __name__ == "__main__":
    main()
