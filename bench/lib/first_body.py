#!/usr/bin/env python3
"""When a stream's server sends a new listener its response head and its first body bytes.

  first_body.py URL   prints: head SECONDS body SECONDS (from the connect, 3 s at most)

Icecast answers the head at once but sends the burst only when its source thread next runs:
no player can start before the first body byte, so the radio benchmark prints it beside the
players' start times."""
import socket
import sys
import time
import urllib.parse

url = urllib.parse.urlparse(sys.argv[1])
start = time.monotonic()
connection = socket.create_connection((url.hostname, url.port or 80), timeout=3)
connection.sendall(f"GET {url.path or '/'} HTTP/1.0\r\nHost: {url.hostname}\r\nIcy-MetaData: 1\r\n\r\n".encode())
received = b""
head = None
while True:
    data = connection.recv(65536)
    if not data:
        break
    received += data
    now = time.monotonic() - start
    end = received.find(b"\r\n\r\n")
    if end >= 0 and head is None:
        head = now
    if end >= 0 and len(received) > end + 4:
        print(f"head {head:.3f} body {now:.3f}")
        break
    if now > 3:
        print(f"head {head if head is not None else -1:.3f} body -1")
        break
