"""auth_raw_client.py - speaks the control handshake (src/net/handshake.h) and
a Register frame by hand, as an attacker or a confused operator would.

usage: auth_raw_client.py CASE HOST PORT SECRET_FILE
CASE:
  frame-first     send a Register without the handshake: prints the status
                  of the answer (-13 AuthenticationFailed expected)
  wrong-key       handshake with a key that is not the cluster's: prints
                  "refused" when the master turns the proof down
  other-name      handshake proving "alice", then Register as "mallory":
                  prints the Register status (-13 expected)
  same-name       handshake proving "alice", Register as "alice": prints the
                  status (0 expected)
  stall           send the first 4 bytes of a HELLO and no more: prints the
                  seconds until the master hung up and the bytes it sent
                  ("connected" goes to stderr once the bytes are sent)
  claims          register as "claimer" without an SSD tier, then send a
                  Heartbeat claiming 1 TiB of SSD; prints "sent" and stays
                  registered for 4 s (the master must keep capacity 0)
Exit 0 when the exchange ran (whatever it printed), 1 on a protocol surprise.
"""
import hashlib
import hmac
import os
import socket
import struct
import sys
import time


def key_of(path, flip=False):
    data = open(path, "rb").read().rstrip(b" \t\r\n")
    key = hashlib.sha256(data).digest()
    return bytes([key[0] ^ 1]) + key[1:] if flip else key


def proof(key, label, transcript):
    return hmac.new(key, label + b"\0" + transcript, hashlib.sha256).digest()


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return buf
        buf += chunk
    return buf


def handshake(s, key, identity):
    """Returns True when the master accepted our proof."""
    nc = os.urandom(32)
    ident = identity.encode()
    s.sendall(b"FXH1" + bytes([ord("O"), len(ident), 0, 0]) + nc + ident)
    ch = recv_exact(s, 72)
    if len(ch) != 72 or ch[:4] != b"FXH2":
        print("no challenge: %r" % ch[:8])
        sys.exit(1)
    ns = ch[8:40]
    t = b"fluxon-auth-v1\0" + bytes([ord("O"), len(ident)]) + ident + nc + ns
    s.sendall(b"FXH3" + b"\0" * 4 + proof(key, b"client", t))
    res = recv_exact(s, 8)
    if len(res) == 8 and res[:4] == b"FXH4":
        return res[4] == 0
    return False


def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field_str(num, s):
    b = s.encode()
    return bytes([(num << 3) | 2]) + varint(len(b)) + b


def register(s, name):
    body = (field_str(1, "fluxon") + field_str(2, name) + bytes([3 << 3]) + varint(64 << 20)
            + field_str(5, "127.0.0.1:1"))
    s.sendall(struct.pack("<IHHQ", len(body), 1, 0, 7) + body)
    hdr = recv_exact(s, 16)
    if len(hdr) != 16:
        return None
    n, typ, flags, req = struct.unpack("<IHHQ", hdr)
    body = recv_exact(s, n)
    status = 0
    if body[:1] == b"\x08":  # field 1 (status), varint, int32 sign-extended
        v, shift, i = 0, 0, 1
        while True:
            b = body[i]
            v |= (b & 0x7F) << shift
            shift += 7
            i += 1
            if not b & 0x80:
                break
        status = v - (1 << 64) if v >= 1 << 63 else v
    return status


def heartbeat_claiming_ssd(s):
    body = bytes([4 << 3]) + varint(1 << 40) + bytes([5 << 3]) + varint(1 << 30)
    s.sendall(struct.pack("<IHHQ", len(body), 2, 0, 8) + body)
    hdr = recv_exact(s, 16)
    n = struct.unpack("<IHHQ", hdr)[0] if len(hdr) == 16 else 0
    recv_exact(s, n)


def main():
    case, host, port, secret = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    s = socket.create_connection((host, port), timeout=10)
    if case == "frame-first":
        print(register(s, "nosecret"))
    elif case == "wrong-key":
        print("accepted" if handshake(s, key_of(secret, flip=True), "alice") else "refused")
    elif case == "other-name":
        if not handshake(s, key_of(secret), "alice"):
            print("handshake refused")
            sys.exit(1)
        print(register(s, "mallory"))
    elif case == "same-name":
        if not handshake(s, key_of(secret), "alice"):
            print("handshake refused")
            sys.exit(1)
        print(register(s, "alice"))
    elif case == "stall":
        s.settimeout(15)
        t0 = time.monotonic()
        s.sendall(b"FXH1")
        print("connected", file=sys.stderr, flush=True)
        got = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
        print("%.1f %d" % (time.monotonic() - t0, len(got)))
    elif case == "claims":
        if not handshake(s, key_of(secret), "claimer") or register(s, "claimer") != 0:
            print("not registered")
            sys.exit(1)
        heartbeat_claiming_ssd(s)
        print("sent", flush=True)
        time.sleep(4)
    else:
        sys.exit(2)
    s.close()


main()
