#!/usr/bin/env python3
"""Listens on a datagram socket as systemd's NOTIFY_SOCKET does and appends each message it receives to a
file, one line per message ("<monotonic seconds> <message with newlines as |>"). Usage:
notify-listen.py SOCKET LOG. Runs until killed; the socket is made before 'listening' is printed."""
import os, socket, sys, time

path, log = sys.argv[1], sys.argv[2]
if os.path.exists(path):
    os.unlink(path)
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(path)
print("listening", flush=True)
while True:
    data = sock.recv(4096).decode("utf-8", "replace")
    with open(log, "a") as f:
        f.write("%.3f %s\n" % (time.monotonic(), data.replace("\n", "|")))
