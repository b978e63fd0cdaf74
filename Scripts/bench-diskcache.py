#!/usr/bin/env python3
"""python diskcache's side of `Scripts/bench diskcache`, measured in-process like ours.

  bench-diskcache.py bench DIR KEYS [1k,1m]  set and get ops/s with 1 KiB and 1 MiB values ("set_1k OPS" lines)
  bench-diskcache.py fill DIR COUNT      COUNT entries of 1 KiB under keys key-0, key-1, ...
  bench-diskcache.py startup DIR         seconds to open the cache, read its volume and get key-0
"""
import os
import random
import shutil
import sys
import time

import diskcache

# No size limit, so neither side evicts during the run (DiskCache runs with byteLimit 0).
NO_LIMIT = 2 ** 62


def pattern(size):
    return bytes(((i * 2654435761) >> 13) & 0xFF for i in range(size))


def bench(root, keys, only=("1k", "1m")):
    for label, size in (("1k", 1024), ("1m", 1 << 20)):
        if label not in only:
            continue
        directory = os.path.join(root, "bench-" + label)
        cache = diskcache.Cache(directory, size_limit=NO_LIMIT)
        value = pattern(size)
        start = time.perf_counter()
        for i in range(keys):
            cache.set("key-%d" % i, value)
        set_seconds = time.perf_counter() - start
        os.sync()  # the writes reach the disk before the gets are timed (as in darkdisk-cache-tool)
        order = list(range(keys))
        random.shuffle(order)
        found = 0
        start = time.perf_counter()
        for i in order:
            data = cache.get("key-%d" % i)
            if data is not None and len(data) == size:
                found += 1
        get_seconds = time.perf_counter() - start
        if found != keys:
            sys.exit("bench-diskcache: get found %d of %d values" % (found, keys))
        print("set_%s %d" % (label, keys / set_seconds))
        print("get_%s %d" % (label, keys / get_seconds))
        cache.close()
        shutil.rmtree(directory)


def fill(directory, count):
    cache = diskcache.Cache(directory, size_limit=NO_LIMIT)
    value = b"\x5a" * 1024
    for batch in range(0, count, 1000):
        with cache.transact():
            for i in range(batch, min(count, batch + 1000)):
                cache.set("key-%d" % i, value)
    print("filled %d" % len(cache))
    cache.close()


def startup(directory):
    start = time.perf_counter()
    cache = diskcache.Cache(directory, size_limit=NO_LIMIT)
    volume = cache.volume()
    value = cache.get("key-0")
    elapsed = time.perf_counter() - start
    if value is None or volume == 0:
        sys.exit("bench-diskcache: key-0 is missing")
    print("%.4f" % elapsed)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "bench" and len(sys.argv) in (4, 5):
        bench(sys.argv[2], int(sys.argv[3]), *([sys.argv[4].split(",")] if len(sys.argv) == 5 else []))
    elif mode == "fill" and len(sys.argv) == 4:
        fill(sys.argv[2], int(sys.argv[3]))
    elif mode == "startup" and len(sys.argv) == 3:
        startup(sys.argv[2])
    else:
        sys.exit(__doc__)
