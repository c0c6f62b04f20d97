#!/usr/bin/python3
"""A fixture OAuth token server for the token-refresh tests.

    scripts/token-server.py --lifetime SECONDS --margin SECONDS

It rotates refresh tokens as strict OAuth providers do: a refresh with the current refresh
token rN answers a new pair, aN+1 and rN+1, expiring LIFETIME seconds later, and spends rN;
a spent refresh token is rejected (the user would have to log in again). The first refresh
token is r0, whose access token a0 has expired already.

Listens on 127.0.0.1, a port of its own, and prints "port N" first. One request a
connection, one line each way (Python's standard library only, as Debian's python3 has it):

    refresh R  ->  "ok ACCESS REFRESH EXPIRES_AT" (EXPIRES_AT in Unix seconds) or "rejected"

Standard input drives it, one command a line; it prints what happens on standard output:

    hold     the next refresh is held before it is looked at (it spends nothing); prints
             "held R" when it arrives. The holder may be killed meanwhile.
    release  answers the held refresh
    stats    prints "stats refreshes=N rejected=N early=N issued=a1,a2,..."
             early: refreshes made while the current access token was still good for more
             than MARGIN seconds (a caller that refreshed a token another one refreshed)

It exits when its standard input ends.
"""

import argparse
import socketserver
import sys
import threading
import time

lock = threading.Lock()
state = {"generation": 0, "expires_at": 0.0, "spent": set(), "refreshes": 0, "rejected": 0, "early": 0,
         "issued": [], "hold": False}
released = threading.Event()


def say(line):
    with lock:
        print(line, flush=True)


def refresh(token, lifetime, margin):
    with lock:
        current = "r%d" % state["generation"]
        if token != current:
            state["rejected"] += 1
            return "rejected", "rejected %s" % token
        now = time.time()
        if state["expires_at"] - margin > now:
            state["early"] += 1
        state["spent"].add(token)
        state["generation"] += 1
        state["refreshes"] += 1
        state["expires_at"] = now + lifetime
        generation = state["generation"]
        state["issued"].append("a%d" % generation)
        return ("ok a%d r%d %.3f" % (generation, generation, state["expires_at"]),
                "refreshed %s -> r%d" % (token, generation))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lifetime", type=float, required=True)
    parser.add_argument("--margin", type=float, required=True)
    options = parser.parse_args()

    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            words = self.rfile.readline().decode().split()
            if len(words) != 2 or words[0] != "refresh":
                self.wfile.write(b"bad request\n")
                return
            with lock:
                hold, state["hold"] = state["hold"], False
            if hold:
                say("held %s" % words[1])
                released.wait()
            answer, event = refresh(words[1], options.lifetime, options.margin)
            say(event)
            self.wfile.write((answer + "\n").encode())

    socketserver.ThreadingTCPServer.daemon_threads = True
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    say("port %d" % server.server_address[1])
    for line in sys.stdin:
        command = line.strip()
        if command == "hold":
            with lock:
                state["hold"] = True
            released.clear()
        elif command == "release":
            released.set()
        elif command == "stats":
            with lock:
                print("stats refreshes=%d rejected=%d early=%d issued=%s" % (
                    state["refreshes"], state["rejected"], state["early"], ",".join(state["issued"])), flush=True)
    server.shutdown()


if __name__ == "__main__":
    main()
