"""Writes v1.json: test vectors for keys, request and webhook signatures, and sealing.

An implementation independent of the TypeScript code (Python's hmac/hashlib and the
`cryptography` package's ChaCha20-Poly1305 with HChaCha20 written out), so the vectors
check the packages instead of repeating them. Run: python3 make_vectors.py
"""
import base64, hashlib, hmac, json, struct
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

LABELS = {
    "publish": "service-realtime publish v1",
    "webhook": "service-realtime webhook v1",
    "channels": "service-realtime channels v1",
    "calls": "service-realtime calls v1",
    "streamGrant": "service-stream grant v1",
}

def key(secret, label):
    return hmac.new(secret.encode(), label.encode(), hashlib.sha256).digest()

def sign(k, ts, method, path, body):
    msg = "\n".join([ts, method, path, hashlib.sha256(body.encode()).hexdigest()])
    return msg, hmac.new(k, msg.encode(), hashlib.sha256).hexdigest()

def rotl(v, c): return ((v << c) & 0xffffffff) | (v >> (32 - c))

def hchacha20(k, n16):
    s = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574] + list(struct.unpack("<8I", k)) + list(struct.unpack("<4I", n16))
    def qr(a, b, c, d):
        s[a] = (s[a] + s[b]) & 0xffffffff; s[d] = rotl(s[d] ^ s[a], 16)
        s[c] = (s[c] + s[d]) & 0xffffffff; s[b] = rotl(s[b] ^ s[c], 12)
        s[a] = (s[a] + s[b]) & 0xffffffff; s[d] = rotl(s[d] ^ s[a], 8)
        s[c] = (s[c] + s[d]) & 0xffffffff; s[b] = rotl(s[b] ^ s[c], 7)
    for _ in range(10):
        qr(0, 4, 8, 12); qr(1, 5, 9, 13); qr(2, 6, 10, 14); qr(3, 7, 11, 15)
        qr(0, 5, 10, 15); qr(1, 6, 11, 12); qr(2, 7, 8, 13); qr(3, 4, 9, 14)
    return struct.pack("<8I", *(s[0:4] + s[12:16]))

def xchacha_seal(k, nonce, plaintext, aad):
    sub = hchacha20(k, nonce[:16])
    return ChaCha20Poly1305(sub).encrypt(b"\0\0\0\0" + nonce[16:], plaintext, aad)

def b64url(b): return base64.urlsafe_b64encode(b).decode().rstrip("=")

secrets = ["s3cret", "", "päßwörd ✓ with spaces", "x" * 100]
out = {"keys": [], "requests": [], "webhooks": [], "seal": [], "open_null": []}
for sec in secrets:
    out["keys"].append({"secret": sec, **{name: key(sec, label).hex() for name, label in LABELS.items()}})

requests = [
    ("1700000000", "POST", "/service/realtime/emit", '{"rooms":["lobby"],"event":"hello","data":{"text":"hi"}}'),
    ("1700000000", "POST", "/service/realtime/emit/batch", '{"events":[{"users":["u1"],"event":"e","data":null}]}'),
    ("1700000123", "POST", "/service/realtime/users/alice%20b%2Fc/ask", '{"event":"ping","data":1,"timeout":2000}'),
    ("1700000123", "GET", "/service/realtime/online?ids=a,b%2Cc,%C3%A9", ""),
    ("42", "POST", "/service/realtime/webhooks/test", ""),
]
for sec in secrets[:3]:
    pk = key(sec, LABELS["publish"])
    for ts, method, path, body in requests:
        msg, sig = sign(pk, ts, method, path, body)
        out["requests"].append({"secret": sec, "timestamp": ts, "method": method, "path": path, "body": body,
                                "body_sha256": hashlib.sha256(body.encode()).hexdigest(), "message": msg, "signature": sig})
for sec in secrets[:2]:
    wk = key(sec, LABELS["webhook"])
    for path, body in [("/hooks/realtime?x=1", '{"events":[{"id":"w1","at":1700000000000,"type":"webhook.test"}]}'), ("/", '{"events":[]}')]:
        msg, sig = sign(wk, "1700000000", "POST", path, body)
        out["webhooks"].append({"secret": sec, "timestamp": "1700000000", "path": path, "body": body, "message": msg, "signature": sig})

local = bytes(range(32))
for label, plain in [("room:lobby", '{"text":"hi"}'), ("user:alice", '"x"'), ("room:a:1.b", ""), ("user:é ✓", "null")]:
    k = hmac.new(local, ("service-realtime key v1|" + label).encode(), hashlib.sha256).digest()
    nonce = hashlib.sha256(label.encode()).digest()[:24]
    ct = xchacha_seal(k, nonce, plain.encode(), label.encode())
    out["seal"].append({"local_key": local.hex(), "label": label, "key": k.hex(), "nonce": nonce.hex(),
                        "plaintext": plain, "sealed": label + ":1." + b64url(nonce + ct)})
good = out["seal"][0]["sealed"]
label0, payload0 = good.rsplit(":1.", 1)
flipped = payload0[:-1] + ("A" if payload0[-1] != "A" else "B")
out["open_null"] = [
    {"why": "changed on the way", "value": label0 + ":1." + flipped},
    {"why": "empty label", "value": ":1." + payload0},
    {"why": "label swapped", "value": "room:other:1." + payload0},
    {"why": "no marker", "value": "room:lobby" + payload0},
    {"why": "not base64url", "value": label0 + ":1." + payload0[:-2] + "=="},
    {"why": "too short", "value": label0 + ":1.AAAA"},
    {"why": "empty", "value": ""},
]
out["local_key_other_app"] = bytes(range(1, 33)).hex()
json.dump(out, open("v1.json", "w"), indent=2, ensure_ascii=False)
print("wrote v1.json")
