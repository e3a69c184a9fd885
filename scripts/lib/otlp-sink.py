#!/usr/bin/env python3
"""An OTLP/HTTP collector that takes trace exports and drops them, for measuring what exporting
costs the host (scripts/cpu-per-start.sh): it answers every POST /v1/traces with 200 and an
empty ExportTraceServiceResponse (an empty protobuf message is zero bytes), counting requests
and bytes, which it prints when stopped.

    python3 scripts/lib/otlp-sink.py PORT
"""
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

received = {"requests": 0, "bytes": 0}


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length)
        if self.path != "/v1/traces":
            self.send_response(404)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        received["requests"] += 1
        received["bytes"] += len(body)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink)

    def stop(*_):
        print(f"otlp-sink: {received['requests']} exports, {received['bytes']} bytes", file=sys.stderr)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_forever()


if __name__ == "__main__":
    main()
