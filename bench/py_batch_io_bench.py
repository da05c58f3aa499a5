"""py_batch_io_bench.py - the copying batches from Python, the shape an
inference engine's connector uses: Client.batch_get_into and
Client.batch_put_from of 128 values of 4 KiB into / from preallocated
bytearrays, on a fresh local cluster (`fluxon up`, stopped at the end).

    PYTHONPATH=build/python /usr/bin/python3 bench/py_batch_io_bench.py

Prints keys/s per call as the median of 7 rounds with the range (min..max).
Each round runs 1024 keys, 128 per call; the gets find the owner's cache
warm (one warm-up pass first). The build directory is $FX_BUILD_DIR, else
where `fluxon` was imported from (<build>/python/..).
"""
import os
import statistics
import time

import fluxon
from py_cluster import local_cluster

KEYS, BATCH, VALUE, ROUNDS = 1024, 128, 4096, 7


def rate(fn, chunks):
    t0 = time.perf_counter()
    for keys, bufs in chunks:
        fn(keys, bufs)
    return KEYS / (time.perf_counter() - t0)


def main():
    with local_cluster("256MB") as sock:
        c = fluxon.Client(sock)
        keys = ["pyb-%d" % i for i in range(KEYS)]
        src = [bytearray(os.urandom(VALUE)) for _ in range(BATCH)]
        dst = [bytearray(VALUE) for _ in range(BATCH)]
        puts = [(keys[i:i + BATCH], src) for i in range(0, KEYS, BATCH)]
        gets = [(keys[i:i + BATCH], dst) for i in range(0, KEYS, BATCH)]

        def put(k, b):
            r = c.batch_put_from(k, b)
            if any(r):
                raise RuntimeError("batch_put_from: %r" % r)

        def get(k, b):
            r = c.batch_get_into(k, b)
            if any(n != VALUE for n in r):
                raise RuntimeError("batch_get_into: %r" % r)

        rates = {"batch_put_from": [], "batch_get_into": []}
        rate(put, puts)
        rate(get, gets)  # warm the owner's cache
        for _ in range(ROUNDS):
            rates["batch_put_from"].append(rate(put, puts))
            rate(get, gets)  # the puts replaced every value: re-warm
            rates["batch_get_into"].append(rate(get, gets))
        print("py_batch_io_bench: %d keys of %d bytes, %d per call, median of %d rounds"
              % (KEYS, VALUE, BATCH, ROUNDS))
        for name in ("batch_get_into", "batch_put_from"):
            r = rates[name]
            print("  %-15s %10.0f keys/s  (%.0f..%.0f)" % (name, statistics.median(r), min(r),
                                                        max(r)))
        c.close()


if __name__ == "__main__":
    main()
