#!/usr/bin/env python3
"""A model-based random test of a drive file, in the spirit of xfstests' fsx: random writes, truncations,
reads, fsyncs and reopenings at random offsets and sizes, each done on a file in the drive and on the same
file in a model folder (tmpfs), and every read compared. Hypothesis's stateful testing picks the operations
and shrinks a failure to a short sequence.

Usage: drive-fsx.py DRIVE_FOLDER MODEL_FOLDER [OPERATIONS]
Writes go through one handle and reads through another, so a read checks that every handle sees written
bytes at once; a reopen closes both (the drive commits) and reads back what was committed.
"""
import os
import sys

from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

DRIVE, MODEL = sys.argv[1], sys.argv[2]
OPERATIONS = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
STEPS = 100
MAX_SIZE = 600_000  # past several 64 KiB staging chunks and many 4 KiB store chunks

offsets = st.one_of(st.integers(0, MAX_SIZE), st.sampled_from([0, 4095, 4096, 65535, 65536, 65537, 131072]))
sizes = st.one_of(st.integers(1, 70_000), st.integers(1, 10))
counter = [0]


class DriveFile(RuleBasedStateMachine):
    @initialize()
    def create(self):
        counter[0] += 1
        self.name = "fsx-%d" % counter[0]
        self.paths = [os.path.join(DRIVE, self.name), os.path.join(MODEL, self.name)]
        self.open(os.O_CREAT | os.O_TRUNC)

    def open(self, flags=0):
        self.writers = [os.open(p, os.O_RDWR | flags, 0o644) for p in self.paths]
        self.readers = [os.open(p, os.O_RDONLY) for p in self.paths]

    def close(self):
        for fd in self.writers + self.readers:
            os.close(fd)

    def teardown(self):
        self.close()
        for path in self.paths:
            os.unlink(path)

    @rule(offset=offsets, size=sizes, seed=st.integers(0, 255))
    def write(self, offset, size, seed):
        data = bytes((seed + i * 7) % 256 for i in range(size))
        for fd in self.writers:
            assert os.pwrite(fd, data, offset) == size

    @rule(size=st.one_of(st.integers(0, MAX_SIZE), st.sampled_from([0, 1, 4096, 65536, 65537])))
    def truncate(self, size):
        for fd in self.writers:
            os.ftruncate(fd, size)

    @rule(size=sizes)
    def append(self, size):
        for fd in self.writers:
            end = os.fstat(fd).st_size
            os.pwrite(fd, b"A" * size, end)

    @rule(offset=offsets, size=st.integers(0, 200_000))
    def read(self, offset, size):
        drive, model = (os.pread(fd, size, offset) for fd in self.readers)
        assert drive == model, "read of %d at %d: %d bytes, expected %d (first difference at %s)" % (
            size, offset, len(drive), len(model),
            next((i for i, (a, b) in enumerate(zip(drive, model)) if a != b), "the end"))

    @rule()
    def fsync(self):
        os.fsync(self.writers[0])

    @precondition(lambda self: True)
    @rule()
    def reopen(self):
        self.close()
        self.open()

    @invariant()
    def same_size(self):
        if hasattr(self, "writers"):
            sizes = [os.fstat(fd).st_size for fd in self.writers]
            assert sizes[0] == sizes[1], "size %d, expected %d" % tuple(sizes)


DriveFile.TestCase.settings = settings(
    max_examples=max(1, OPERATIONS // STEPS), stateful_step_count=STEPS, deadline=None, derandomize=True,
    suppress_health_check=list(HealthCheck), database=None)

if __name__ == "__main__":
    import unittest
    suite = unittest.TestLoader().loadTestsFromTestCase(DriveFile.TestCase)
    result = unittest.TextTestRunner(verbosity=1).run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)
