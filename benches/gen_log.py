#!/usr/bin/env python3
"""Writes a delta log of N one-entry batches (raw transport), for the TUI benchmark.

    benches/gen_log.py N OUT.deltalog
"""
import struct
import sys


def lstr(s):
    b = s.encode()
    return struct.pack("<I", len(b)) + b


def frame(magic, payload):
    return magic + struct.pack("<II", 1, len(payload)) + payload + struct.pack("<I", sum(payload) & 0xFFFFFFFF)


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    xsd = "http://www.w3.org/2001/XMLSchema#string"
    with open(out, "wb") as f:
        f.write(b"DLOG" + struct.pack("<I", 1))
        for i in range(n):
            entry = (b"\x00" + b"\x00" + lstr(f"http://bench.example/s{i}") + lstr("http://bench.example/p")
                     + b"\x02" + lstr(f"value {i}") + lstr(xsd) + b"\x00" + b"\x00")
            body = struct.pack("<QQI", i + 1, 1 + i // 100_000, 1) + frame(b"DLE1", entry)
            f.write(frame(b"DLB1", body))


if __name__ == "__main__":
    main()
