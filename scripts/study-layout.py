#!/usr/bin/env python3
"""study-layout.py — the code-layout half of scripts/study-latency.sh.

Reads a pingpong binary's symbol table (nm), its disassembly (objdump) and
two callgrind profiles of the same run at two round counts (R1 < R2;
callgrind --dump-instr=yes --dump-line=no --compress-pos=no
--compress-strings=no --demangle=no), and works out per round trip:

  analyze   the hot functions (those executing >= 1 instruction per round
            trip, by the difference method), their addresses and 8 KB
            direct-mapped I-cache sets (address / 32 mod 256), how many
            share a set, the static size of the path's code, and the unused
            fraction of fetched instruction bytes (thesis Table 11) -> JSON
  order     a linker symbol-ordering file placing the hot functions of one
            or more analyses contiguously in execution order (CLO: a DFS of
            the per-round call graph, callees in call-site order)
  bad-order an ordering file placing the same hot functions so that each
            starts in the same 8 KB cache set, with cold functions of the
            binary as filler between them (BAD)
  report    prints an analysis' hot-function table (the layout check)
  calls-to  instructions per round trip inside calls to named functions
  link      re-runs the link of a pingpong build (the command rustc printed
            with --print link-args, objects kept by -C save-temps) into
            another output, with an LLD --symbol-ordering-file

Only code of the pingpong binary itself is analysed (libc's memset/malloc
are outside the layout the linker controls).
"""
import argparse
import bisect
import json
import os
import shlex
import subprocess
import sys
from collections import defaultdict

LINE = 32  # DEC 3000/600 I-cache line
SETS = 256  # 8 KB direct-mapped / 32-byte lines
ALIGN = 16  # rustc/LLVM's function alignment on x86-64


def text_symbols(binary):
    """Function symbols of BINARY: sorted [(addr, size, name)], sized and in .text."""
    out = subprocess.run(["nm", "-S", "--defined-only", binary], check=True,
                         capture_output=True, text=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split(maxsplit=3)
        if len(parts) != 4 or parts[2] not in "tTwW":
            continue
        addr, size = int(parts[0], 16), int(parts[1], 16)
        if size:
            syms.append((addr, size, parts[3]))
    syms.sort()
    return syms


def text_section(binary):
    """(address, size) of BINARY's .text section."""
    out = subprocess.run(["readelf", "-SW", binary], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.replace("[ ", "[").split()
        if len(f) > 5 and f[1] == ".text":
            return int(f[3], 16), int(f[5], 16)
    raise SystemExit(f"study-layout: no .text section in {binary}")


class SymbolMap:
    def __init__(self, syms):
        self.syms = syms
        self.starts = [s[0] for s in syms]

    def find(self, addr):
        i = bisect.bisect_right(self.starts, addr) - 1
        if i >= 0 and addr < self.syms[i][0] + self.syms[i][1]:
            return self.syms[i]
        return None


def read_callgrind(path, binary):
    """Exclusive Ir per instruction address of BINARY, and call edges
    {(site_addr, target_addr): count} within BINARY, from a callgrind file."""
    instr = defaultdict(int)
    calls = defaultdict(int)
    inclusive = defaultdict(int)
    ob = cob = None
    pending = None  # target address of a `calls=` line, its cost line next
    with open(path) as f:
        for line in f:
            c = line[0]
            if c == "0":
                if pending is not None:
                    # The cost line of a call: its site and inclusive cost.
                    if ob == binary and cob == binary:
                        site, cost = line.split()[:2]
                        site = int(site, 16)
                        calls[(site, pending[0])] += pending[1]
                        inclusive[(site, pending[0])] += int(cost)
                    pending = None
                    cob = None
                    continue
                if ob == binary:
                    a, n = line.split()[:2]
                    instr[int(a, 16)] += int(n)
            elif line.startswith("ob="):
                ob = line[3:].strip()
            elif line.startswith("cob="):
                cob = line[4:].strip()
            elif line.startswith("cfn="):
                if cob is None:
                    cob = ob
            elif line.startswith("calls="):
                n, target = line[6:].split()[:2]
                if cob is None:
                    cob = ob
                pending = (int(target, 16), int(n))
    return instr, calls, inclusive


def instruction_lengths(binary, ranges):
    """{addr: length} of the instructions inside RANGES [(start, end)], by objdump."""
    lengths = {}
    for start, end in merge_ranges(ranges):
        out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--start-address={start:#x}",
                              f"--stop-address={end:#x}", binary],
                             check=True, capture_output=True, text=True).stdout
        addrs = []
        for line in out.splitlines():
            head = line.split(":", 1)
            if len(head) == 2 and head[1].startswith("\t"):
                try:
                    addrs.append(int(head[0].strip(), 16))
                except ValueError:
                    pass
        addrs.append(end)
        for a, b in zip(addrs, addrs[1:]):
            lengths[a] = b - a
    return lengths


def merge_ranges(ranges, slack=4096):
    """Merges nearby ranges so that objdump runs a few times, not once per function."""
    out = []
    for s, e in sorted(ranges):
        if out and s <= out[-1][1] + slack:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def analyze(args):
    binary = args.binary
    r1, r2 = args.r1, args.r2
    syms = SymbolMap(text_symbols(binary))
    ob = os.path.realpath(binary)
    i1, c1, _ = read_callgrind(args.cg1, ob)
    i2, c2, _ = read_callgrind(args.cg2, ob)
    span = r2 - r1
    per_rt = {a: (i2.get(a, 0) - i1.get(a, 0)) / span for a in set(i1) | set(i2)}
    per_rt = {a: v for a, v in per_rt.items() if v > 0}

    # Hot functions: >= 1 instruction per round trip.
    fn_ir = defaultdict(float)
    for a, v in per_rt.items():
        s = syms.find(a)
        if s:
            fn_ir[s] += v
    hot = {s: v for s, v in fn_ir.items() if v >= 1.0}

    # Per-round call edges between hot functions (site function -> target).
    edges = []
    for (site, target), n2 in c2.items():
        n = (n2 - c1.get((site, target), 0)) / span
        if n < 0.5:
            continue
        src, dst = syms.find(site), syms.find(target)
        if src in hot and dst in hot:
            edges.append({"from": src[2], "from_addr": src[0], "to": dst[2], "to_addr": dst[0],
                          "site": site, "per_rt": round(n, 3)})

    # Unused fetch: the 32-byte lines holding instructions executed on
    # (nearly) every round trip, and the share of their bytes that no such
    # instruction covers.
    lengths = instruction_lengths(binary, [(s[0], s[0] + s[1]) for s in hot])
    executed = defaultdict(set)
    missing_len = 0
    for a, v in per_rt.items():
        if v < 0.5:
            continue
        n = lengths.get(a)
        if n is None:
            missing_len += 1
            continue
        for b in range(a, a + n):
            executed[b // LINE].add(b % LINE)
    used = sum(len(v) for v in executed.values())
    lines = len(executed)
    unused_pct = 100.0 * (1 - used / (lines * LINE)) if lines else 0.0

    # The layout check: sets of the hot functions' first lines, and how
    # many 8 KB sets more than one hot function's lines map to.
    functions = []
    start_sets = defaultdict(list)
    set_users = defaultdict(set)
    for s in sorted(hot, key=lambda s: s[0]):
        addr, size, name = s
        first = (addr // LINE) % SETS
        start_sets[first].append(name)
        for ln in range(addr // LINE, (addr + size - 1) // LINE + 1):
            set_users[ln % SETS].add(addr)
        functions.append({"name": name, "addr": addr, "size": size, "set": first,
                          "instr_per_rt": round(hot[s], 1)})
    shared_start = sum(len(v) for v in start_sets.values() if len(v) > 1)
    crowded_sets = sum(1 for v in set_users.values() if len(v) > 1)
    hot_bytes = sum(s[1] for s in hot)
    lo = min((s[0] for s in hot), default=0)
    hi = max((s[0] + s[1] for s in hot), default=0)
    doc = {
        "binary": binary,
        "r1": r1, "r2": r2,
        "instr_per_rt_in_binary": round(sum(per_rt.values()), 1),
        "hot_functions": len(hot),
        "hot_bytes": hot_bytes,
        "executed_bytes_per_rt": used,
        "hot_span_bytes": hi - lo,
        "fetched_lines": lines,
        "unused_fetch_pct": round(unused_pct, 2),
        "instructions_without_length": missing_len,
        "functions_sharing_start_set": shared_start,
        "sets_with_several_hot_functions": crowded_sets,
        "functions": functions,
        "edges": edges,
    }
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    if args.print:
        report_doc(doc, args.print_top)


def report_doc(doc, top):
    print(f"{doc['binary']}: {doc['hot_functions']} hot functions, {doc['hot_bytes']} bytes, "
          f"spanning {doc['hot_span_bytes']} bytes of text; {doc['fetched_lines']} lines fetched per "
          f"round trip, {doc['unused_fetch_pct']:.1f}% of their bytes unused; "
          f"{doc['functions_sharing_start_set']} hot functions share a start set with another, "
          f"{doc['sets_with_several_hot_functions']} of 256 sets hold lines of several hot functions")
    fns = sorted(doc["functions"], key=lambda f: -f["instr_per_rt"])[:top]
    if fns:
        print(f"  {'address':>10} {'size':>6} {'set':>4} {'instr/RT':>9}  function")
        for f in sorted(fns, key=lambda f: f["addr"]):
            print(f"  {f['addr']:#10x} {f['size']:>6} {f['set']:>4} {f['instr_per_rt']:>9.1f}  "
                  f"{demangle(f['name'])[:110]}")


_demangled = {}


def demangle(name):
    if name not in _demangled:
        try:
            _demangled[name] = subprocess.run(["c++filt", name], capture_output=True, text=True,
                                              check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            _demangled[name] = name
    return _demangled[name]


def report(args):
    with open(args.analysis) as f:
        report_doc(json.load(f), args.top)


def execution_order(doc):
    """Hot functions of an analysis in execution order: a depth-first walk
    of the per-round call graph from its roots (hot functions no hot
    function calls), callees in the order of their call sites."""
    names = {f["name"]: f for f in doc["functions"]}
    children = defaultdict(list)
    called = set()
    for e in doc["edges"]:
        children[e["from"]].append((e["site"], e["to"]))
        if e["to"] != e["from"]:
            called.add(e["to"])
    roots = sorted((n for n in names if n not in called), key=lambda n: -names[n]["instr_per_rt"])
    order, seen = [], set()

    def visit(n):
        stack = [n]
        while stack:
            m = stack.pop()
            if m in seen:
                continue
            seen.add(m)
            order.append(m)
            # Pushed in reverse so that the first call site is visited first.
            for _, c in sorted(children[m], reverse=True):
                if c not in seen:
                    stack.append(c)

    for r in roots:
        visit(r)
    # Hot functions only reachable through cycles.
    for n in sorted(names, key=lambda n: -names[n]["instr_per_rt"]):
        visit(n)
    return order


def order_cmd(args):
    out, seen = [], set()
    for path in args.analyses:
        with open(path) as f:
            doc = json.load(f)
        for n in execution_order(doc):
            if n not in seen:
                seen.add(n)
                out.append(n)
    with open(args.out, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"study-layout: {len(out)} hot functions in execution order -> {args.out}", file=sys.stderr)


def bad_order(args):
    """Each hot function (in execution order) preceded by cold filler so that
    it starts at the same offset modulo 8 KB as the first: all of them then
    compete for the same I-cache sets."""
    syms = text_symbols(args.binary)
    text_start, _ = text_section(args.binary)
    by_name = defaultdict(list)
    by_addr = defaultdict(list)
    for s in syms:
        by_name[s[2]].append(s)
        by_addr[s[0]].append(s)
    hot = []
    for path in args.analyses:
        with open(path) as f:
            doc = json.load(f)
        for n in execution_order(doc):
            if n not in hot:
                hot.append(n)
    hot_set = set(hot)

    def footprint(name):
        return sum((s[1] + ALIGN - 1) // ALIGN * ALIGN for s in by_name[name])

    # Filler: Rust functions with one symbol of that name and no alias at
    # their address (ordering a name moves every section it names).
    filler = sorted((footprint(s[2]), s[2]) for s in syms
                    if s[2] not in hot_set and len(by_name[s[2]]) == 1 and len(by_addr[s[0]]) == 1
                    and (s[2].startswith("_ZN") or s[2].startswith("_R")))
    sizes = [f[0] for f in filler]
    used = [False] * len(filler)
    period = SETS * LINE
    cursor = text_start
    target = text_start % period
    out, unfilled, placed = [], 0, 0
    for name in hot:
        gap = (target - cursor) % period
        while gap > 0:
            i = bisect.bisect_right(sizes, gap) - 1
            while i >= 0 and used[i]:
                i -= 1
            if i < 0:
                break
            used[i] = True
            out.append(filler[i][1])
            cursor += filler[i][0]
            gap -= filler[i][0]
        unfilled += gap
        if gap == 0:
            placed += 1
        out.append(name)
        cursor += footprint(name)
    with open(args.out, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"study-layout: BAD order: {placed}/{len(hot)} hot functions aligned to offset "
          f"{target:#x} mod 8 KB, {unfilled} bytes of gap left unfilled, "
          f"{len(out) - len(hot)} filler functions -> {args.out}", file=sys.stderr)


def link(args):
    """Re-runs rustc's linker command (a shell line: VAR="..." assignments,
    then the quoted command) with another output and an ordering file."""
    with open(args.link_args) as f:
        line = next((ln for ln in f if '"cc"' in ln or "-fuse-ld" in ln), None)
    if line is None:
        raise SystemExit(f"study-layout: no linker command in {args.link_args}")
    words = shlex.split(line)
    env = dict(os.environ)
    while words and "=" in words[0] and not words[0].startswith("-"):
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    try:
        i = words.index("-o")
    except ValueError:
        raise SystemExit(f"study-layout: no -o in the linker command of {args.link_args}")
    words[i + 1] = args.out
    missing = [w for w in words if w.endswith(".o") and not os.path.exists(w)]
    if missing:
        raise SystemExit(f"study-layout: objects of the link are gone: {missing[0]} (rebuild)")
    if args.order:
        words += [f"-Wl,--symbol-ordering-file={os.path.abspath(args.order)}",
                  "-Wl,--no-warn-symbol-ordering"]
    r = subprocess.run(words, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr)
        raise SystemExit(f"study-layout: linking {args.out} failed")


def calls_to(args):
    """Instructions per round trip spent in calls (inclusive) to functions
    whose name contains one of PATTERNS, from callers outside that set."""
    binary = os.path.realpath(args.binary)
    syms = SymbolMap(text_symbols(args.binary))
    _, c1, x1 = read_callgrind(args.cg1, binary)
    _, c2, x2 = read_callgrind(args.cg2, binary)

    def matches(s):
        return s is not None and any(p in s[2] for p in args.patterns)

    total = calls = 0.0
    for key, cost in x2.items():
        site, target = key
        if matches(syms.find(target)) and not matches(syms.find(site)):
            total += cost - x1.get(key, 0)
            calls += c2[key] - c1.get(key, 0)
    span = args.r2 - args.r1
    print(json.dumps({"instr_per_rt": round(total / span, 1), "calls_per_rt": round(calls / span, 2)}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("analyze")
    a.add_argument("binary")
    a.add_argument("cg1")
    a.add_argument("cg2")
    a.add_argument("r1", type=int)
    a.add_argument("r2", type=int)
    a.add_argument("--out", required=True)
    a.add_argument("--print", action="store_true")
    a.add_argument("--print-top", type=int, default=0)
    a.set_defaults(fn=analyze)
    o = sub.add_parser("order")
    o.add_argument("analyses", nargs="+")
    o.add_argument("--out", required=True)
    o.set_defaults(fn=order_cmd)
    b = sub.add_parser("bad-order")
    b.add_argument("binary")
    b.add_argument("analyses", nargs="+")
    b.add_argument("--out", required=True)
    b.set_defaults(fn=bad_order)
    c = sub.add_parser("calls-to")
    c.add_argument("binary")
    c.add_argument("cg1")
    c.add_argument("cg2")
    c.add_argument("r1", type=int)
    c.add_argument("r2", type=int)
    c.add_argument("patterns", nargs="+")
    c.set_defaults(fn=calls_to)
    k = sub.add_parser("link")
    k.add_argument("link_args")
    k.add_argument("out")
    k.add_argument("--order")
    k.set_defaults(fn=link)
    r = sub.add_parser("report")
    r.add_argument("analysis")
    r.add_argument("--top", type=int, default=40)
    r.set_defaults(fn=report)
    args = p.parse_args()
    if getattr(args, "r2", 1) <= getattr(args, "r1", 0):
        raise SystemExit("study-layout: r2 must be larger than r1")
    args.fn(args)


if __name__ == "__main__":
    main()
