"""Independent checks for crates/loadrig/tests/it/plot.rs.

python3 plot_check.py hlog LOG.hlog REPORT.json
    Reads the interval log with PyPI's hdrhistogram (hdrh.log's
    HistogramLogReader, not loadrig) and checks it holds one interval per
    measured lap of the report, with the same counts, and that its total
    equals the report's operations. Prints "N intervals, M values".
python3 plot_check.py png SHOT.png
    Decodes an 8-bit RGB/RGBA PNG with zlib (no image library) and prints
    "W x H, N non-white pixels".
Exits 1 on a difference, 2 when the package is missing.
"""

import json
import struct
import sys
import zlib


def hlog(path, report_path):
    try:
        from hdrh.histogram import HdrHistogram
        from hdrh.log import HistogramLogReader
    except ImportError:
        print("PyPI package hdrhistogram missing: pip install hdrhistogram (scripts/test does)")
        sys.exit(2)
    report = json.load(open(report_path))
    laps = [l for l in report["laps"] if not l["warmup"]]
    reader = HistogramLogReader(path, HdrHistogram(1, 3600 * 10**9, 3))
    counts = []
    while True:
        h = reader.get_next_interval_histogram()
        if h is None:
            break
        counts.append(h.get_total_count())
    want = [HdrHistogram.decode(l["latency_hdr"]).get_total_count() for l in laps]
    if counts != want:
        print(f"interval counts {counts}, the report's laps {want}")
        sys.exit(1)
    if sum(counts) != report["measured"]["ops"]:
        print(f"{sum(counts)} values in the log, {report['measured']['ops']} operations in the report")
        sys.exit(1)
    print(f"{len(counts)} intervals, {sum(counts)} values")


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        print("not a PNG")
        sys.exit(1)
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    if depth != 8 or ctype not in (2, 6):
        print(f"PNG colour type {ctype} depth {depth}: only 8-bit RGB/RGBA read here")
        sys.exit(1)
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    nonwhite = 0
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                line[i] = (line[i] + paeth(a, b, c)) & 255
        for x in range(w):
            r, g, bl = line[x * bpp:x * bpp + 3]
            if r < 240 or g < 240 or bl < 240:
                nonwhite += 1
        prev = line
    print(f"{w} x {h}, {nonwhite} non-white pixels")


if sys.argv[1] == "hlog":
    hlog(sys.argv[2], sys.argv[3])
elif sys.argv[1] == "png":
    png(sys.argv[2])
else:
    print("usage: plot_check.py hlog LOG REPORT | png FILE")
    sys.exit(2)
