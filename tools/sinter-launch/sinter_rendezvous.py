"""The rendezvous of sinter-launch's elastic jobs (--nnodes=MIN:MAX).

torchrun's dynamic rendezvous, reduced to what one job needs: the launchers
(one a node) meet in rounds at --master-addr:--master-port. The launcher
that can listen there serves the rendezvous (as torchrun's c10d backend
hosts its store on the endpoint's machine); every launcher, that one too,
joins as a client. A round closes when MAX nodes have joined, or when at
least MIN have and --last-call-seconds have passed since the MIN-th joined;
its nodes are numbered in the order they joined. Each round then runs the
training job once, on those nodes, with keys of its own
(TORCHELASTIC_RESTART_COUNT = the round). A launcher whose ranks fail, or
that sees a node waiting to join the next round, stops its ranks and joins
that round: so a node that dies leaves the job at the next round and a node
that arrives enters it, and the training binary resumes from its latest
checkpoint at the new world size.

Written here because the launcher is one Python program with no
dependencies: torch's own rendezvous comes with torch.

The protocol: one JSON request a connection, one JSON answer.
  {"op": "join", "node": ID, "addr": A, "port": P, "nproc": N}
      -> {"round": R} (the round this node is in), or {"error": ...}
  {"op": "result", "round": R, "node": ID}
      -> {"closed": false} | {"closed": true, "nodes": [ID...], "addrs":
         [...], "ports": [...], "nproc": N}
  {"op": "waiting", "round": R} -> {"waiting": nodes in a round after R}
  {"op": "done", "node": ID} -> {} (this node's job ended well)
A node that stops asking for the result of a round it joined (its launcher
died) is dropped from it before it closes.
"""

import json
import socket
import threading
import time

# A node that has joined a round that is still open asks for its result at
# least this often; one not heard from for STALE_SECONDS is dropped.
POLL_SECONDS = 0.2
STALE_SECONDS = 5.0
# How long a launcher waits for the rendezvous to answer one request.
REQUEST_SECONDS = 10.0


class RendezvousError(Exception):
    pass


class Server:
    """Serves the rounds on a socket it already listens on."""

    def __init__(self, sock, minNodes, maxNodes, lastCall, nproc):
        self.sock = sock
        self.min, self.max, self.lastCall = minNodes, maxNodes, lastCall
        self.nproc = nproc  # the serving node's -n: every node's
        self.lock = threading.Lock()
        self.round = 0  # the open round
        self.members = []  # the open round's nodes: dicts in join order
        self.enough = None  # when the open round reached min nodes
        self.closed = {}  # round -> its answer
        self.done = set()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(conn,),
                             daemon=True).start()

    def answer(self, conn):
        with conn:
            try:
                conn.settimeout(REQUEST_SECONDS)
                request = json.loads(readLine(conn))
                reply = self.handle(request)
            except (OSError, ValueError, KeyError, TypeError) as e:
                reply = {"error": f"bad request: {e}"}
            try:
                conn.sendall(json.dumps(reply).encode() + b"\n")
            except OSError:
                pass

    def handle(self, request):
        with self.lock:
            self.expire()
            op = request["op"]
            if op == "join":
                return self.join(request)
            if op == "result":
                return self.result(request["round"], request["node"])
            if op == "waiting":
                r = request["round"]
                return {"waiting": len(self.members) if self.round > r else 0}
            if op == "done":
                self.done.add(request["node"])
                return {}
            return {"error": f"unknown request '{op}'"}

    def join(self, request):
        if request["nproc"] != self.nproc:
            return {"error": f"this node runs {request['nproc']} rank(s), "
                    f"the job's nodes run {self.nproc} each (give every "
                    f"node the same -n)"}
        for m in self.members:
            if m["node"] == request["node"]:
                m["seen"] = time.monotonic()
                return {"round": self.round}
        self.members.append(dict(node=request["node"], addr=request["addr"],
                                 port=request["port"],
                                 nproc=request["nproc"],
                                 seen=time.monotonic()))
        joined = self.round
        self.settle()  # may close the round
        return {"round": joined}

    def result(self, r, node):
        if r in self.closed:
            return self.closed[r]
        for m in self.members:
            if m["node"] == node:
                m["seen"] = time.monotonic()
        return {"closed": False}

    def expire(self):
        """Drops the open round's silent nodes; closes it when it is due."""
        now = time.monotonic()
        kept = [m for m in self.members if now - m["seen"] < STALE_SECONDS]
        if len(kept) != len(self.members):
            self.members = kept
            self.settle()
        if (self.enough is not None and
                (len(self.members) >= self.max or
                 now - self.enough >= self.lastCall)):
            self.close()

    def settle(self):
        if len(self.members) < self.min:
            self.enough = None
        elif self.enough is None:
            self.enough = time.monotonic()
        if len(self.members) >= self.max:
            self.close()

    def close(self):
        self.closed[self.round] = {
            "closed": True,
            "nodes": [m["node"] for m in self.members],
            "addrs": [m["addr"] for m in self.members],
            "ports": [m["port"] for m in self.members],
            "nproc": self.members[0]["nproc"]}
        self.round += 1
        self.members, self.enough = [], None

    def finished(self, nodes):
        with self.lock:
            return all(n in self.done for n in nodes)


def readLine(conn):
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data.decode()


class Client:
    """One launcher's side of the rendezvous."""

    def __init__(self, addr, port, node):
        self.addr, self.port, self.node = addr, port, node

    def ask(self, request):
        try:
            with socket.create_connection((self.addr, self.port),
                                          timeout=REQUEST_SECONDS) as s:
                s.sendall(json.dumps(request).encode() + b"\n")
                reply = json.loads(readLine(s))
        except (OSError, ValueError) as e:
            raise RendezvousError(
                f"the rendezvous at {self.addr}:{self.port} does not answer "
                f"({e}); the launcher that served it has stopped")
        if "error" in reply:
            raise RendezvousError(reply["error"])
        return reply

    def join(self, addr, port, nproc, timeout, stopped):
        """Joins the next round and waits until it closes; returns (round,
        its answer). `stopped()` true ends the wait (a signal): None."""
        deadline = time.monotonic() + timeout
        request = dict(op="join", node=self.node, addr=addr, port=port,
                       nproc=nproc)
        r = None
        while time.monotonic() < deadline:
            if stopped():
                return None
            if r is None:
                r = self.ask(request)["round"]
            reply = self.ask(dict(op="result", round=r, node=self.node))
            if reply["closed"]:
                if self.node in reply["nodes"]:
                    return r, reply
                r = None  # dropped as silent (a pause): join the next one
            time.sleep(POLL_SECONDS)
        raise RendezvousError(
            f"no round of enough nodes within {timeout:g} s at "
            f"{self.addr}:{self.port}")

    def waiting(self, r):
        return self.ask(dict(op="waiting", round=r))["waiting"]

    def done(self):
        self.ask(dict(op="done", node=self.node))


def listen(addr, port):
    """A socket listening on addr:port, or None when another launcher
    serves there already (or the address is not this host's)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((addr, port))
        s.listen(64)
        return s
    except OSError:
        s.close()
        return None
