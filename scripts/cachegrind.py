"""The event totals of a valgrind cachegrind or callgrind output file, for
the scripts that count instructions and simulated cache misses per round
trip or message (instr.sh, study-latency-report.py, study-ldlp.py).

    import cachegrind
    t = cachegrind.totals("cachegrind.out.123", "instr.sh")
    t["instr"], t["i1"], t["d1"], t["ll"], t["dacc"]
"""


def totals(path, who):
    """Instructions (`instr`), I1 misses (`i1`), D1 misses, reads and
    writes (`d1`), last-level misses (`ll`) and data accesses (`dacc`) of
    the file's `events:` and `summary:` lines; `who` names the calling
    script in the error when the file has none."""
    events = summary = None
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("summary:"):
                summary = [int(x) for x in line.split()[1:]]
    if events is None or summary is None:
        raise SystemExit(f"{who}: {path}: no events/summary line")
    t = dict(zip(events, summary))
    figures = {
        "instr": ("Ir",),
        "i1": ("I1mr",),
        "d1": ("D1mr", "D1mw"),
        "ll": ("ILmr", "DLmr", "DLmw"),
        "dacc": ("Dr", "Dw"),
    }
    # A figure whose events the run did not count (no --cache-sim) is left
    # out, so using it fails loudly rather than reading as zero.
    return {k: sum(t[e] for e in ev) for k, ev in figures.items() if all(e in t for e in ev)}
