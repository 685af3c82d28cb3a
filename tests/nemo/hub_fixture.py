#!/usr/bin/env python3
"""A stand-in for the Hugging Face Hub on loopback, for `steno model pull`'s tests (tests/nemo/pull_test.cc).

Serves one repository with the Hub's URL layout:
  GET /api/models/<repo>/revision/<rev>[?blobs=true]   {"id", "sha", "siblings": [{"rfilename", "lfs"?}]}
  GET /<repo>/resolve/<rev>/<file>                     the file's bytes; "Range: bytes=N-" answered with 206
Every request is logged as a JSON line (method, path, range, authorization) to --log, so a test can check what was
asked. --cut-after N: the first download of a file sends N bytes of it and closes the connection. --lie-sha256:
the metadata states a wrong SHA-256; --lie-size N: a size of N bytes. --metadata-body FILE: FILE's bytes are the
metadata answer (malformed metadata). --extra FILE: another sibling (e.g. a second .nemo). The chosen port is written
to --port-file once the server listens.
"""
import argparse
import hashlib
import http.server
import json
import os
import threading
import urllib.parse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--revision", default="main")
    ap.add_argument("--file", required=True, help="the .nemo served")
    ap.add_argument("--name", help="its name in the repository (default: its file name)")
    ap.add_argument("--extra", action="append", default=[], help="other sibling names (served as empty files)")
    ap.add_argument("--log", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--cut-after", type=int, default=-1)
    ap.add_argument("--lie-sha256", action="store_true")
    ap.add_argument("--no-lfs", action="store_true", help="metadata without lfs (no SHA-256 to check)")
    ap.add_argument("--lie-size", type=int, default=-1)
    ap.add_argument("--metadata-body")
    args = ap.parse_args()

    data = open(args.file, "rb").read()
    name = args.name or os.path.basename(args.file)
    sha = hashlib.sha256(data).hexdigest()
    if args.lie_sha256:
        sha = hashlib.sha256(b"not the file").hexdigest()
    files = {name: data}
    for extra in args.extra:
        files[extra] = b""
    lock = threading.Lock()
    state = {"cut": args.cut_after >= 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def record(self):
            with lock, open(args.log, "a") as f:
                f.write(json.dumps({"method": self.command, "path": self.path,
                                    "range": self.headers.get("Range"),
                                    "authorization": self.headers.get("Authorization")}) + "\n")

        def reply(self, code, body, ctype="application/json", extra=()):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in extra:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            self.record()
            url = urllib.parse.urlsplit(self.path)
            path = urllib.parse.unquote(url.path)
            api = f"/api/models/{args.repo}/revision/{args.revision}"
            if path == api:
                blobs = "blobs=true" in url.query
                siblings = []
                for n, d in files.items():
                    s = {"rfilename": n}
                    if blobs and not args.no_lfs and n == name:
                        size = args.lie_size if args.lie_size >= 0 else len(d)
                        s["lfs"] = {"sha256": sha, "size": size, "pointerSize": 134}
                    siblings.append(s)
                body = json.dumps({"id": args.repo, "sha": "0" * 40, "siblings": siblings}).encode()
                if args.metadata_body:
                    body = open(args.metadata_body, "rb").read()
                return self.reply(200, body)
            prefix = f"/{args.repo}/resolve/{args.revision}/"
            if path.startswith(prefix) and path[len(prefix):] in files:
                d = files[path[len(prefix):]]
                start = 0
                rng = self.headers.get("Range")
                if rng and rng.startswith("bytes=") and rng.endswith("-"):
                    start = int(rng[6:-1])
                    if start >= len(d):
                        return self.reply(416, b"", extra=[("Content-Range", f"bytes */{len(d)}")])
                part = d[start:]
                self.send_response(206 if start else 200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(part)))
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(d) - 1}/{len(d)}")
                self.end_headers()
                with lock:
                    cut, state["cut"] = state["cut"], False
                if cut:
                    self.wfile.write(part[:args.cut_after])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(part)
                return
            self.reply(404, json.dumps({"error": "Repository Not Found"}).encode())

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
