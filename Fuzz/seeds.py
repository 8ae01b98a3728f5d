#!/usr/bin/env python3
"""Builds the fuzz seed corpora from Samples/ and ../shared/corpus (never copied into the repository).

Usage: Fuzz/seeds.py OUTDIR [SHARED]
Writes OUTDIR/<target>/<name> for every target of Fuzz/Harness/FuzzHarness.swift, in the input layout
that target expects (see FuzzHarness.chunks: [selector][length, 2 bytes big-endian][bytes]...).
"""
import gzip
import hashlib
import os
import struct
import sys

MAX = 64 * 1024


def read_frames(path):
    """(link type, frame bytes) of a pcap or pcapng file, gzip or not; [] when unreadable."""
    try:
        with open(path, 'rb') as f:
            data = f.read()
        if data[:2] == b'\x1f\x8b':
            data = gzip.decompress(data)
    except Exception:
        return []
    out = []
    magic = data[:4]
    if magic in (b'\xd4\xc3\xb2\xa1', b'\x4d\x3c\xb2\xa1', b'\xa1\xb2\xc3\xd4', b'\xa1\xb2\x3c\x4d'):
        e = '<' if magic[0] in (0xd4, 0x4d) else '>'
        link = struct.unpack(e + 'I', data[20:24])[0] & 0xFFFF
        p = 24
        while p + 16 <= len(data):
            incl = struct.unpack(e + 'I', data[p + 8:p + 12])[0]
            out.append((link, data[p + 16:p + 16 + incl]))
            p += 16 + incl
    elif magic == b'\x0a\x0d\x0d\x0a':
        p, e, links = 0, '<', []
        while p + 12 <= len(data):
            btype = struct.unpack(e + 'I', data[p:p + 4])[0]
            if btype == 0x0A0D0D0A:
                e = '<' if data[p + 8:p + 12] == b'\x4d\x3c\x2b\x1a' else '>'
                links = []
            blen = struct.unpack(e + 'I', data[p + 4:p + 8])[0]
            if blen < 12:
                break
            body = data[p + 8:p + blen - 4]
            if btype == 1:
                links.append(struct.unpack(e + 'H', body[:2])[0])
            elif btype == 6 and len(body) >= 20:
                iface, _, _, cap = struct.unpack(e + 'IIII', body[:16])
                if iface < len(links):
                    out.append((links[iface], body[20:20 + cap]))
            elif btype == 3 and links:
                out.append((links[0], body[4:]))
            p += blen
    return out


def transport(link, frame):
    """('udp'|'tcp', sport, dport, payload) or None, for Ethernet, null/loop, raw, Linux SLL."""
    if link == 1:
        p, et = 14, frame[12:14]
        while et == b'\x81\x00':
            et, p = frame[p + 2:p + 4], p + 4
        ip = frame[p:] if et in (b'\x08\x00', b'\x86\xdd') else None
    elif link in (0, 108):
        ip = frame[4:]
    elif link in (101, 12, 228, 229):
        ip = frame
    elif link == 113:
        ip = frame[16:]
    elif link == 276:
        ip = frame[20:]
    else:
        return None
    if not ip:
        return None
    v = ip[0] >> 4
    if v == 4:
        hl = (ip[0] & 15) * 4
        proto, rest = ip[9], ip[hl:]
    elif v == 6:
        proto, rest = ip[6], ip[40:]
    else:
        return None
    if proto == 17 and len(rest) >= 8:
        sp, dp = struct.unpack('>HH', rest[:4])
        return ('udp', sp, dp, rest[8:])
    if proto == 6 and len(rest) >= 20:
        sp, dp = struct.unpack('>HH', rest[:4])
        off = (rest[12] >> 4) * 4
        return ('tcp', sp, dp, rest[off:])
    return None


def chunk(sel, b):
    b = b[:0xFFFF]
    return bytes([sel & 0xFF]) + struct.pack('>H', len(b)) + b


def main():
    out = sys.argv[1]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    shared = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(root), 'shared')
    seeds = {t: [] for t in ['capture-file', 'packets', 'mdns', 'plist', 'invitation', 'session', 'logs', 'patterns']}
    captures = []
    for d in [os.path.join(root, 'Samples'), os.path.join(shared, 'corpus')]:
        if os.path.isdir(d):
            for n in sorted(os.listdir(d)):
                if n.endswith(('.pcap', '.pcapng', '.gz', '.cap')):
                    captures.append(os.path.join(d, n))
    links = {1: 0, 0: 1, 108: 2, 101: 3, 113: 4, 276: 5, 258: 6, 105: 7, 127: 8, 9: 9, 229: 10}
    for path in captures:
        with open(path, 'rb') as f:
            raw = f.read()
        if len(raw) <= MAX:
            seeds['capture-file'].append(b'\x00' + raw)
        frames = read_frames(path)
        if not frames:
            continue
        # A small capture file (first frames) raw and to be gzipped by the harness.
        head = raw[:MAX]
        seeds['capture-file'].append(b'\x01' + head)
        pk = b''.join(chunk(links.get(l, 0), fr) for l, fr in frames[:40])
        seeds['packets'].append(pk[:MAX])
        tcp_streams, session = {}, b''
        for l, fr in frames:
            t = transport(l, fr)
            if not t:
                continue
            proto, sp, dp, pl = t
            if proto == 'udp' and 5353 in (sp, dp) and pl:
                seeds['mdns'].append(pl)
            elif proto == 'udp' and pl:
                session += chunk(0 if sp < dp else 1, pl)
            elif proto == 'tcp' and pl:
                key = tuple(sorted([sp, dp]))
                tcp_streams.setdefault(key, b'')
                tcp_streams[key] += chunk(0 if sp > dp else 1, pl)
        if session:
            seeds['session'].append(session[:MAX])
        for s in list(tcp_streams.values())[:8]:
            seeds['invitation'].append(s[:MAX])
            seeds['session'].append(bytes([2]) + s[1:MAX])
    vectors = os.path.join(shared, 'corpus', 'mpc-vectors')
    if os.path.isdir(vectors):
        for n in sorted(os.listdir(vectors)):
            if not n.endswith('.hex'):
                continue
            frames = []
            for line in open(os.path.join(vectors, n)):
                line = line.split('#')[0].strip()
                h = ''.join(c for c in line.split(':')[-1] if c in '0123456789abcdefABCDEF')
                if len(h) >= 8 and len(h) % 2 == 0:
                    frames.append(bytes.fromhex(h))
            for fr in frames:
                if n.startswith('invitation'):
                    seeds['invitation'].append(chunk(0, fr))
                    seeds['plist'].append(fr[16:])
                else:
                    seeds['session'].append(chunk(0, fr))
    for p in seeds['invitation'][:]:
        # Binary plists inside the stream: from each 'bplist' to the end of its chunk.
        i = p.find(b'bplist00')
        if i >= 0:
            seeds['plist'].append(p[i:i + MAX])
    logroot = os.path.join(root, 'Samples', 'logs')
    logs = []
    for dp, _, files in os.walk(logroot):
        for n in sorted(files):
            with open(os.path.join(dp, n), 'rb') as f:
                logs.append(f.read()[:MAX])
    seedsdir = os.path.join(shared, 'seeds')
    if os.path.isdir(seedsdir):
        for n in sorted(os.listdir(seedsdir)):
            with open(os.path.join(seedsdir, n), 'rb') as f:
                logs.append(f.read()[:MAX])
    seeds['logs'] += logs
    yml = (b"patterns:\n  - id: lobby-timeout\n    regex: 'Lobby timeout for (?<displayName>.+)$'\n"
           b"    kind: app.timeout\n    attrs: { phase: app }\n  - id: gone\n    regex: '(?<peer>\\w+) left'\n"
           b"    kind: user.gone\n")
    for l in logs[:6]:
        seeds['patterns'].append(yml + b'\x00' + l[:8192])
    seeds['patterns'].append(yml + b'\x00Lobby timeout for Bob\nAlice left\n')
    for t, items in seeds.items():
        d = os.path.join(out, t)
        os.makedirs(d, exist_ok=True)
        for b in items:
            if b:
                with open(os.path.join(d, hashlib.sha1(b).hexdigest()), 'wb') as f:
                    f.write(b)
        print(f"{t}: {len(set(items))} seeds", file=sys.stderr)


if __name__ == '__main__':
    main()
