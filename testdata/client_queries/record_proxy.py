#!/usr/bin/env python3
"""Tiny PostgreSQL wire proxy: forwards 127.0.0.1:LISTEN -> 127.0.0.1:5432 and
logs every frontend Query / Parse / Bind message as JSON lines."""
import socket, struct, sys, threading, json
LISTEN = int(sys.argv[1]); LOG = sys.argv[2]
lock = threading.Lock()
def log(obj):
    with lock, open(LOG, "a") as f:
        f.write(json.dumps(obj) + "\n")
def recvn(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c: raise EOFError
        b += c
    return b
def pump_back(src, dst):
    try:
        while True:
            d = src.recv(65536)
            if not d: break
            dst.sendall(d)
    except Exception: pass
    finally:
        try: dst.shutdown(socket.SHUT_WR)
        except Exception: pass
def handle(c, cid):
    s = socket.create_connection(("127.0.0.1", 5432))
    try:
        while True:  # startup phase
            ln = struct.unpack("!I", recvn(c, 4))[0]
            body = recvn(c, ln - 4)
            code = struct.unpack("!I", body[:4])[0]
            if code in (80877103, 80877104):  # SSL / GSS request
                c.sendall(b"N"); continue
            parts = body[4:].split(b"\0")
            log({"c": cid, "t": "startup", "params": [p.decode() for p in parts if p]})
            s.sendall(struct.pack("!I", ln) + body)
            break
        threading.Thread(target=pump_back, args=(s, c), daemon=True).start()
        stmts = {}
        while True:
            t = recvn(c, 1); ln = struct.unpack("!I", recvn(c, 4))[0]
            body = recvn(c, ln - 4)
            if t == b"Q":
                log({"c": cid, "t": "Q", "sql": body[:-1].decode()})
            elif t == b"P":
                name, rest = body.split(b"\0", 1)
                q, rest = rest.split(b"\0", 1)
                n = struct.unpack("!H", rest[:2])[0]
                oids = list(struct.unpack("!%dI" % n, rest[2:2+4*n]))
                stmts[name] = q.decode()
                log({"c": cid, "t": "P", "name": name.decode(), "sql": q.decode(), "oids": oids})
            elif t == b"B":
                portal, rest = body.split(b"\0", 1)
                sname, rest = rest.split(b"\0", 1)
                nf = struct.unpack("!H", rest[:2])[0]; rest = rest[2:]
                fmts = list(struct.unpack("!%dH" % nf, rest[:2*nf])); rest = rest[2*nf:]
                npar = struct.unpack("!H", rest[:2])[0]; rest = rest[2:]
                vals = []
                for i in range(npar):
                    l = struct.unpack("!i", rest[:4])[0]; rest = rest[4:]
                    if l < 0: vals.append(None)
                    else:
                        v = rest[:l]; rest = rest[l:]
                        f = fmts[i] if nf > 1 else (fmts[0] if nf == 1 else 0)
                        vals.append(v.decode() if f == 0 else "0x" + v.hex())
                log({"c": cid, "t": "B", "stmt": sname.decode(), "sql": stmts.get(sname), "params": vals})
            s.sendall(t + struct.pack("!I", ln) + body)
            if t == b"X": break
    except EOFError: pass
    except Exception as e: log({"c": cid, "t": "error", "e": repr(e)})
    finally:
        try: s.shutdown(socket.SHUT_WR)
        except Exception: pass
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", LISTEN)); ls.listen(16); cid = 0
while True:
    c, _ = ls.accept(); cid += 1
    threading.Thread(target=handle, args=(c, cid), daemon=True).start()
