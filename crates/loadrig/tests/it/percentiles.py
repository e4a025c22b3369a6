"""Check a loadrig report's percentiles against an independent decoder.

Run by crates/loadrig/tests/it/percentiles.rs: python3 percentiles.py REPORT.
Each stored histogram (HdrHistogram's compressed V2 form, base64: the
"HISTF..." blobs) is decoded as it lies by PyPI's `hdrhistogram` package,
not by loadrig, and every stored percentile is
recomputed from the decoded counts with the rank rule of HdrHistogram's
Java reference (docs/reference/report.md, "Percentiles"). Where that rank is a whole
number, the package's own get_value_at_percentile must agree too (it rounds
the rank to the nearest, Java rounds up; they differ only between ranks).
Prints one line per histogram checked; exits 1 on the first difference,
2 if the package is missing.
"""

import json
import math
import sys

try:
    from hdrh.histogram import HdrHistogram
except ImportError:
    print("PyPI package hdrhistogram missing: pip install hdrhistogram (scripts/test does)")
    sys.exit(2)



def decode(b64):
    if not b64.startswith("HISTF"):
        print(f"not HdrHistogram's compressed V2 form (base64 'HISTF...'): {b64[:12]}...")
        sys.exit(1)
    return HdrHistogram.decode(b64)


def java_rank_value(h, p):
    requested = min(max(math.nextafter(p, -math.inf), 0.0), 100.0)
    rank = max(1, math.ceil(requested * h.total_count / 100.0))
    total = 0
    for i in range(h.counts_len):
        total += h.get_count_at_index(i)
        if total >= rank:
            v = h.get_value_from_index(i)
            return h.get_lowest_equivalent_value(v) if p == 0.0 else h.get_highest_equivalent_value(v)
    return 0


FIELDS = [(50.0, "p50_us"), (90.0, "p90_us"), (99.0, "p99_us"), (99.9, "p99_9_us"), (100.0, "max_us")]


def check(name, summary):
    h = decode(summary["hdr"])
    if h.total_count != summary["count"]:
        print(f"{name}: decoded {h.total_count} values, report says {summary['count']}")
        return False
    for p, field in FIELDS:
        want = java_rank_value(h, p)
        got = round(summary[field] * 1000)
        if got != want:
            print(f"{name} {field}: report {got} ns, reference rank rule {want} ns")
            return False
        if (p * h.total_count) % 100 == 0:
            own = h.get_value_at_percentile(p)
            if own != want:
                print(f"{name} {field}: hdrhistogram package {own} ns, rank rule {want} ns")
                return False
    print(f"{name}: {h.total_count} values, " + ", ".join(f"{f} {summary[f]}" for _, f in FIELDS))
    return True


def main():
    report = json.load(open(sys.argv[1]))
    checked = 0
    for kind in report["measured"]["kinds"]:
        for measure in ("latency", "service", "send_lag"):
            s = kind.get(measure)
            if s and s["count"] > 0:
                if not check(f"{kind['name']}.{measure}", s):
                    sys.exit(1)
                checked += 1
    if checked == 0:
        print("no histogram with values in the report")
        sys.exit(1)


main()
