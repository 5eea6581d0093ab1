#!/usr/bin/env python3
"""An endless Icecast-like internet radio station on 127.0.0.1 for the bench scripts.

   bench/lib/icy_station.py FILE.mp3 [--bitrate 128] [--metaint 16000] [--title-every 5]
                            [--burst 0] [--port 0] [--port-file PATH]

Plays FILE (a CBR MP3 with no tags: its end joins its start on a frame) in a loop as a live
source: the live point advances with wall time at BITRATE from the station's start, and audio
byte k of the endless stream is FILE[k % len(FILE)]. Every path serves that stream: a new
connection starts BURST bytes behind the live point, then gets the stream in real time, with
no Content-Length. A client that sends `Icy-MetaData: 1` gets `icy-metaint: METAINT` and a
metadata block after every METAINT audio bytes: `StreamTitle='Artist N - Title N';` where
N = 1 + (audio byte / (TITLE_EVERY seconds of audio)) when the title changed since the last
block that connection got, else an empty block (a zero length byte), as Icecast sends them.

Prints the port to PORT_FILE (or stdout) once it listens, and to stderr one line per
connection opened or closed and per title sent:
  <seconds since start> conn <n> open path=<target> ua=<User-Agent> meta=<0|1> start=<audio byte>
  <seconds> conn <n> title <title>
  <seconds> conn <n> closed audio=<audio bytes sent>
Runs until killed.
"""
import argparse
import os
import socket
import sys
import threading
import time

LARGEST_PIECE = 16_384


def main():
    parser = argparse.ArgumentParser(description="An endless ICY station on 127.0.0.1.")
    parser.add_argument("mp3")
    parser.add_argument("--bitrate", type=int, default=128, help="kbit/s (default 128)")
    parser.add_argument("--metaint", type=int, default=16_000, help="audio bytes between blocks")
    parser.add_argument("--title-every", type=float, default=5.0, help="seconds of audio per title")
    parser.add_argument("--burst", type=int, default=0, help="bytes behind the live point a client starts")
    parser.add_argument("--name", default="Spool Bench FM")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file")
    args = parser.parse_args()
    with open(args.mp3, "rb") as file:
        audio = file.read()
    if not audio or args.metaint <= 0 or args.bitrate <= 0:
        sys.exit("a station needs audio, a positive bitrate and a positive metaint")
    Station(audio, args).serve()


class Station:
    def __init__(self, audio, args):
        self.audio = audio
        self.args = args
        self.rate = args.bitrate * 125  # bytes per second
        self.bytes_per_title = max(1, int(self.rate * args.title_every))
        self.started = time.monotonic()
        self.count_lock = threading.Lock()
        self.connections = 0

    def live_point(self, now=None):
        return int(((now if now is not None else time.monotonic()) - self.started) * self.rate)

    def when_live_reaches(self, byte):
        return self.started + byte / self.rate

    def title(self, byte):
        number = 1 + byte // self.bytes_per_title
        return f"Artist {number} - Title {number}".encode()

    def audio_bytes(self, offset, count):
        start = offset % len(self.audio)
        piece = self.audio[start:start + count]
        while len(piece) < count:
            piece += self.audio[:count - len(piece)]
        return piece

    def log(self, text):
        print(f"{time.monotonic() - self.started:.1f} {text}", file=sys.stderr, flush=True)

    def serve(self):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.args.port))
        listener.listen(64)
        port = listener.getsockname()[1]
        if self.args.port_file:
            with open(self.args.port_file + ".tmp", "w") as file:
                file.write(f"{port}\n")
            os.replace(self.args.port_file + ".tmp", self.args.port_file)
        else:
            print(port, flush=True)
        while True:
            client, _ = listener.accept()
            with self.count_lock:
                self.connections += 1
                number = self.connections
            threading.Thread(target=self.connection, args=(client, number), daemon=True).start()

    def connection(self, client, number):
        sent = 0
        try:
            request = read_request(client)
            if request is None:
                return
            method, target, headers = request
            try:
                wants_metadata = int(headers.get("icy-metadata", "0").strip() or "0") > 0
            except ValueError:
                wants_metadata = False
            position = max(0, self.live_point() - self.args.burst)
            metaint = self.args.metaint if wants_metadata else None
            self.log(f"conn {number} open path={target} ua={headers.get('user-agent', '')!r} meta={int(wants_metadata)} "
                     f"start={position}")
            client.sendall(self.head(metaint))
            if method == "HEAD":
                return
            smallest = max(1, min(LARGEST_PIECE, self.rate // 50))  # 20 ms of audio
            until_block = metaint or 0
            last_title = None
            while True:
                available = self.live_point() - position
                if available < smallest:
                    time.sleep(max(0.0, self.when_live_reaches(position + smallest) - time.monotonic()))
                    continue
                piece = min(available, LARGEST_PIECE)
                if metaint:
                    piece = min(piece, until_block)
                data = self.audio_bytes(position, piece)
                title = None
                if metaint and piece == until_block:
                    # The block due after these bytes: the title in force at the next audio byte.
                    current = self.title(position + piece)
                    if current != last_title:
                        title = current
                    data += metadata_block(title)
                client.sendall(data)
                position += piece
                sent += piece
                if metaint:
                    until_block -= piece
                    if until_block == 0:
                        until_block = metaint
                if title is not None:
                    last_title = title
                    self.log(f"conn {number} title {title.decode()}")
        except OSError:
            pass
        finally:
            client.close()
            self.log(f"conn {number} closed audio={sent}")

    def head(self, metaint):
        lines = [
            "HTTP/1.0 200 OK",
            "Content-Type: audio/mpeg",
            f"icy-name: {self.args.name}",
            "icy-genre: Bench",
            "icy-url: http://127.0.0.1/",
            f"icy-br: {self.args.bitrate}",
            "icy-pub: 0",
            "icy-description: A looping tone for bench/live-stream.sh",
        ]
        if metaint:
            lines.append(f"icy-metaint: {metaint}")
        lines += ["Cache-Control: no-cache, no-store", "Server: spool-bench-icy-station", "Connection: close"]
        return ("\r\n".join(lines) + "\r\n\r\n").encode()


def metadata_block(title):
    """A block: the length byte L, then StreamTitle='title'; padded with NULs to L x 16 bytes;
    a title of None gives the empty block (L = 0)."""
    if title is None:
        return b"\x00"
    content = (b"StreamTitle='" + title + b"';")[:255 * 16]
    length = (len(content) + 15) // 16
    return bytes([length]) + content + b"\x00" * (length * 16 - len(content))


def read_request(client):
    """(method, target, headers by lower-cased name), or None when the client goes before its head ends."""
    client.settimeout(10)
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        data = client.recv(4096)
        if not data or len(buffer) > 65_536:
            return None
        buffer += data
    client.settimeout(None)
    head = buffer.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    request_line = head[0].split(" ")
    method, target = request_line[0], (request_line[1] if len(request_line) > 1 else "/")
    headers = {}
    for line in head[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return method, target, headers


if __name__ == "__main__":
    main()
