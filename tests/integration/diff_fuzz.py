"""The request generator and reply comparison of the stateful differential fuzzer
(test_differential.py): seeded sequences of memcached text and meta requests over a small key
space, valid, invalid and borderline, meant to be sent to one memcached directly and to mcring in
front of another memcached started the same way, whose replies must be byte-identical.

What it generates (every choice from one seeded random.Random, so a seed replays a run):
  - every text command (set add replace append prepend cas get gets gat gats delete incr decr
    touch verbosity flush_all quit mn) and meta command (mg ms md ma me mn) with their flags:
    noreply, q, k, O (opaque, up to and past its 32-byte limit), b (base64 keys, decoding to
    keys of the same key space), N, I, T, M (every mode letter and invalid ones), E, C, F, J, D,
    R, s, v, f, c, t, h, l, u, x, duplicates and unknown flags;
  - borderline input: bare CR or LF inside lines, NUL and other control bytes, tabs, keys of
    250 and 251 bytes, values at and past the item size limit (-I 1m: 1 MiB minus the item
    header, and 1 MiB itself), data blocks shorter or longer than announced, lines up to 2048
    bytes, 64-bit numbers at and past the edges, huge multi-gets (up to 100 keys, several of
    them ~1 MB values), values that hold protocol text (which runs as commands when the line
    before it is rejected without its data block);
  - batches of 1 to 30 pipelined requests, a third of them single requests.

Each request is self-contained for memcached's framing: whatever memcached decides about it, the
next request starts on a line of its own (a data block shorter than announced is followed by
exactly the missing bytes, one longer than announced ends with a line end), so a batch ends with
the sentinel's reply (md on a key never stored, with the batch number as opaque) or with the
connection closed (quit).

Left out, with the reason:
  - `stats` and `version`: answered by mcring for the pool by design (test_stats_views.py).
  - lines over 2048 bytes without a newline, except get/gets lines: memcached accepts them when
    they arrive in one read and closes the connection silently otherwise, mcring decides the
    same whatever the split (it closes without a reply); README "Differences
    from memcached". So no line is longer than 2048 bytes, and a data block that could be read
    as a line (after a rejected command line) has a newline within every 2048 bytes.
  - gat/gats lines over 2048 bytes: memcached accepts them only in one read (same section).
  - get/gets/gat/gats with a key over 250 bytes: memcached 1.6.18 answers CLIENT_ERROR and
    drops the replies it has not yet written of the requests before it (conn_release_items),
    which depends on how its reads split the pipeline; mcring answers every earlier request.
    (mg/ms/md/ma with such a key are generated: memcached answers them in order.)
  - data blocks over 4000 bytes after a line memcached rejects without swallowing the block:
    memcached reads the block as lines, and how many ERROR lines it answers depends on its
    reads. Big values ride on well-formed lines (which swallow them even when refused).
  - non-canonical base64 keys: memcached skips stray characters, mcring refuses them (documented
    in request_parser.cc); the generator's b keys are canonical, or invalid for both.
  - anything after `quit` in its batch: closing a socket with unread input resets it, and the
    client may lose replies already sent, on either side.
  - mg R<N> with N equal to an item's TTL: whether it wins (W) depends on the clock.
  - incr, decr and ma on a stored value of 2^63 or more: memcached 1.6.18 checks the value
    with safe_strtoull(), whose strchr(str, '-') for numbers that look negative as int64 runs
    past the value's "\r\n" into the slab chunk's unused bytes, so it refuses the value as
    non-numeric when a freed item left a '-' there (measured: set and delete items of 23 to 32
    '-' bytes, then `set k 0 0 19` 9223372036854775808 and `incr k 1` is refused, on every
    key). Whether it does depends on each server's memory history, not on the requests.
    Stored numbers stay short (15 digits), incr deltas under 2^33.
  - incr, decr or ma on a value made only of whitespace (a value "\r\n"): strtoull skips it
    and reads on past the value into the slab chunk, so memcached answers from leftover bytes
    (measured: the same `ma` on the same item, non-numeric on one server, HD on the other).
    No generated value is whitespace only.
  - incr, decr or ma whose result is shorter than the stored value (a decr, or a value with
    leading zeros, spaces or a trailing CRLF): memcached rewrites the value in place, padded
    with spaces, only if no reply it has not yet written holds the item (refcount 2), else it
    stores a new item of the exact length; which one depends on how its reads split the
    pipeline, and mcring's backend receives it split differently. So decr is by 0 (or a delta
    both refuse), and numeric values have no padding; the 64-bit edges are in incr's refused
    deltas, J, flags, exptimes, CAS and lengths.
  - the binary protocol (a first byte 0x80): mcring closes such clients by design.
  - exptimes between 1 and 999 seconds and flush_all delays under 1000 s: they could expire
    during the run, at a different second on the two servers.
  - what the wall clock decides: a meta reply's t<N> (remaining TTL) and me's exp= may differ
    by a few seconds between the two servers (CLOCK_SLACK, 5): their clocks tick apart, an
    absolute exptime is converted with each process's start time, and memcached's clock is a
    1 s timer that lags on a loaded machine (seen: 3 s between the two); l<N> and me's la= (seconds since the last
    access) may differ by more, since memcached refreshes an item's access time at most once a
    minute. Replies are compared byte for byte, and only these numbers may differ
    (same_replies); the final state compares TTLs with the same slack.
"""

import base64
import random
import re

# memcached -I 1m: the largest value for a 4-byte key with flags 0 (the item header, key and
# suffix take the rest of the 1 MiB); measured on memcached 1.6.18 (-m 1024).
ITEM_MAX = 1024 * 1024
BIG_VALUE_MAX = ITEM_MAX - 63
MAX_LINE = 2048
SENTINEL_KEY = b"__sentinel"

KEYS = [b"k%d" % i for i in range(8)] + [b"n%d" % i for i in range(5)]
BIG_KEYS = [b"big%d" % i for i in range(3)]
ODD_KEYS = [b"x" * 250, b"\xc3\xa9t\xc3\xa9", b"a:b:c", b"t\tab", b"c\x01d", b"\x7f\xff"]
TOO_LONG_KEY = b"y" * 251
# Every key whose final state is compared (the sentinel is never stored).
STATE_KEYS = KEYS + BIG_KEYS + ODD_KEYS

EDGE_U64 = [b"0", b"1", b"2", b"42", b"4294967295", b"4294967296", b"9223372036854775807",
            b"9223372036854775808", b"18446744073709551614", b"18446744073709551615",
            b"18446744073709551616", b"99999999999999999999", b"-1", b"-0", b"+5", b"007",
            b"abc", b"5a", b"0x10", b""]
# Stored numbers have at most 15 digits (incr deltas under 2^33, J too) so that no incr,
# decr or ma ever meets a stored value of 2^63 or more: see the module doc.
NUMERIC_VALUES = [b"0", b"1", b"9", b"10", b"99", b"100", b"461168601842738",
                  b"4294967295", b"18446744073709551616", b"99999999999999999999", b"-5",
                  b"1x", b""]
# decr only by 0 (or refused deltas): see the module doc on results shorter than the value.
DECR_DELTAS = [b"0", b"-0", b"000", b"18446744073709551616", b"99999999999999999999", b"-1",
               b"abc", b"5a", b"0x10", b""]
# Deltas that cannot take a value under 2^62 to 2^63 in a run (or are refused by both).
INCR_DELTAS = [b"0", b"1", b"2", b"42", b"4294967295", b"4294967296", b"18446744073709551616",
               b"99999999999999999999", b"-1", b"-0", b"+5", b"007", b"abc", b"5a", b"0x10", b""]
INITIAL_VALUES = [b"0", b"1", b"42", b"461168601842738", b"18446744073709551616", b"-1",
                  b"abc", b""]
EXPTIMES = [b"0", b"0", b"0", b"-1", b"1000", b"100000", b"2592000", b"2592001", b"2000000000",
            b"4294967295", b"2147483648", b"-2147483649", b"abc", b"10x"]
FLAGS = [b"0", b"0", b"1", b"7", b"4294967295", b"4294967296", b"18446744073709551615", b"-1",
         b"abc", b"+3"]
TTL_FLAGS = [b"0", b"-1", b"1000", b"100000", b"2592001", b"x", b""]
# mg R<N> wins (W) when the item's remaining TTL is under N: never an item TTL (1000, 100000...)
# itself, which would race the clock.
RECACHE_FLAGS = [b"-1", b"500", b"50000", b"5000000", b"x", b""]
PROTOCOL_TEXT = [b"VALUE k0 0 1\r\nx\r\nEND", b"get k1", b"gets k1 k2", b"delete k2",
                 b"mn\r\nMN", b"incr n0 1", b"STORED", b"ERROR", b"EN", b"HD c5",
                 b"VA 2 t-1\r\nhi", b"mg k3 v", b"ma n1", b"md k4 q", b"touch k5 0",
                 b"CLIENT_ERROR bad data chunk", b"END\r\n", b"noreply"]


def b64(key):
    return base64.b64encode(key)


class Generator:
    """Requests as bytes, drawn from one seeded RNG. observe() feeds it the reference server's
    replies, from which it takes CAS values to send back (memcached's CAS values depend only on
    the requests, so the run stays reproducible)."""

    def __init__(self, seed, big=True):
        self.r = random.Random(seed)
        self.big = big
        self.cas_seen = [1, 2, 3]
        self.big_in_batch = 0
        self.huge_in_batch = False
        self.batches = 0

    # -- observation ----------------------------------------------------------------------------

    _CAS_RE = re.compile(rb"(?:^VALUE \S+ \d+ \d+ (\d+)| c(\d+))", re.M)

    def observe(self, reply):
        for m in self._CAS_RE.finditer(reply[:200000]):
            v = int(m.group(1) or m.group(2))
            self.cas_seen.append(v)
        del self.cas_seen[:-32]

    # -- pieces ---------------------------------------------------------------------------------

    def pick(self, seq):
        return self.r.choice(seq)

    def chance(self, p):
        return self.r.random() < p

    def key(self, allow_long=True):
        p = self.r.random()
        if p < 0.70:
            return self.pick(KEYS)
        if p < 0.80:
            return self.pick(BIG_KEYS)
        if p < 0.97 or not allow_long:
            return self.pick(ODD_KEYS)
        return TOO_LONG_KEY

    def cas(self):
        if self.chance(0.8):
            return b"%d" % self.pick(self.cas_seen)
        return self.pick([b"0", b"1", b"18446744073709551615", b"18446744073709551616", b"x"])

    def small_value(self):
        p = self.r.random()
        if p < 0.25:
            return self.pick(NUMERIC_VALUES)
        if p < 0.40:
            return b"\r\n".join(self.r.sample(PROTOCOL_TEXT, self.r.randint(1, 3)))
        if p < 0.50:
            v = bytes(self.r.randrange(256) for _ in range(self.r.randint(0, 40)))
            return v if v.strip() or not v else v + b"x"  # never whitespace only (module doc)
        n = self.pick([0, 1, 2, 5, 10, 100, 1000, 2000])
        return bytes(self.pick(b"abcdefghij") for _ in range(n))

    def big_value(self, key):
        """A value around the item size limit (or a few hundred KiB), with a newline every
        1000 bytes so that it can be read as lines if its command line is rejected."""
        limit = ITEM_MAX - 59 - len(key)
        n = self.pick([limit - 1, limit, limit, limit + 1, ITEM_MAX, ITEM_MAX + 1,
                       self.r.randint(100000, 600000), self.r.randint(900000, limit)])
        self.big_in_batch += 1
        chunk = (b"%c" % self.pick(b"ABCDEFGH")) * 998 + b"\r\n"
        return (chunk * (n // 1000 + 1))[:n]

    def value(self, key, allow_big=True):
        if allow_big and self.big and self.big_in_batch < 4 and len(key) <= 250 and self.chance(
                0.35 if key in BIG_KEYS else 0.01):
            return self.big_value(key)
        return self.small_value()

    def data_length(self, v):
        """The announced length and what to send after value + CRLF (see the module doc)."""
        p = self.r.random()
        if p < 0.95 or len(v) > 4000:
            return b"%d" % len(v), b""
        if p < 0.975:
            k = self.r.randint(1, 3)  # announced longer: the missing bytes follow
            return b"%d" % (len(v) + k), (b"\n" if k == 1 else b"z" * (k - 2) + b"\r\n")
        return b"%d" % max(0, len(v) - self.r.randint(1, 2)), b""

    def noreply(self):
        return b" noreply" if self.chance(0.15) else b""

    def mangle(self, line, upto=None):
        """Borderline bytes inside a command line (before its terminator) now and then. A line
        with a data block is changed only in its first `upto` bytes (command and key): a CR,
        tab or space inside its length could make memcached wait for another length."""
        p = self.r.random()
        if p > 0.06:
            return line
        body = line[:-2]
        pos = self.r.randint(0, len(body) if upto is None else upto)
        ins = self.pick([b"\r", b"\r", b"\n", b"\x00", b"\x01", b"\t", b"  ", b"\x7f", b"\xff"]
                        [:None if upto is None else 6])  # no space inside a data line's key
        return body[:pos] + ins + body[pos:] + self.pick([b"\r\n", b"\r\n", b"\n", b"\r\r\n"])

    # -- commands -------------------------------------------------------------------------------

    def storage(self):
        cmd = self.pick([b"set", b"set", b"add", b"replace", b"append", b"prepend", b"cas"])
        k = self.key()
        v = self.value(k)
        cas = b" " + self.cas() if cmd == b"cas" else b""
        if len(v) > 4000:
            # A well-formed line, so that memcached swallows the block even when it refuses it:
            # a big block read as lines gets a count of ERROR lines that depends on its reads.
            return b"%s %s %s %s %d%s%s\r\n%s\r\n" % (
                cmd, k, self.pick(FLAGS[:5]), self.pick(EXPTIMES[:9]), len(v), cas,
                self.noreply(), v)
        length, extra = self.data_length(v)
        if self.chance(0.03):
            length = self.pick([b"-1", b"abc", b"2147483647", b"4294967296", b"1e3"])
        line = b"%s %s %s %s %s%s%s\r\n" % (cmd, k, self.pick(FLAGS), self.pick(EXPTIMES), length,
                                           cas, self.noreply())
        if self.chance(0.02):
            line = line[:-2] + self.pick([b" junk", b" noreply noreply", b" 0"]) + b"\r\n"
        return self.mangle(line, len(cmd) + 1 + len(k)) + v + b"\r\n" + extra

    def retrieval(self):
        cmd = self.pick([b"get", b"get", b"gets", b"gat", b"gats"])
        if self.chance(0.04) and self.big and not self.huge_in_batch:
            self.huge_in_batch = True
            n = self.r.randint(40, 100)  # a huge multi-get
            keys = [self.key(allow_long=False) for _ in range(n)]
            keys += [self.pick(BIG_KEYS) for _ in range(self.r.randint(2, 6))]
            self.r.shuffle(keys)
        else:
            keys = [self.key(allow_long=False) for _ in range(self.r.randint(1, 6))]
        if cmd in (b"gat", b"gats"):
            line = b"%s %s %s\r\n" % (cmd, self.pick([b"0", b"100000", b"-1", b"abc"]),
                                      b" ".join(keys))
        else:
            line = b"%s %s\r\n" % (cmd, b" ".join(keys))
        if len(line) > MAX_LINE and cmd in (b"gat", b"gats"):
            line = line[:MAX_LINE - 2].rsplit(b" ", 1)[0] + b"\r\n"
        if any(len(k) >= 250 for k in keys):
            return line  # a byte inserted in a 250-byte key makes it too long (excluded above)
        return self.mangle(line)

    def keyed(self):
        k = self.key()
        c = self.r.randint(0, 5)
        if c == 0:
            tail = self.pick([b"", b"", b" 0", b" 0 noreply", b" 5", b" noreply", b" 0 0"])
            line = b"delete %s%s\r\n" % (k, tail)
        elif c in (1, 2, 3):
            cmd = b"incr" if c != 2 else b"decr"
            if self.chance(0.5):
                k = self.pick([b"n0", b"n1", b"n2", b"n3", b"n4"])
            delta = self.pick(DECR_DELTAS if cmd == b"decr" else INCR_DELTAS)
            line = b"%s %s %s%s\r\n" % (cmd, k, delta, self.noreply())
        elif c == 4:
            line = b"touch %s %s%s\r\n" % (k, self.pick(EXPTIMES), self.noreply())
        else:
            # A numeric value to count on.
            k = self.pick([b"n0", b"n1", b"n2", b"n3", b"n4"])
            v = self.pick(NUMERIC_VALUES)
            return b"set %s 0 0 %d%s\r\n%s\r\n" % (k, len(v), self.noreply(), v)
        return self.mangle(line)

    def meta_key(self, flags):
        """A key for a meta command, base64 (with the b flag) a fifth of the time."""
        k = self.key()
        if self.chance(0.2) and len(k) <= 180:
            flags.append(b"b")
            if self.chance(0.1):
                return self.pick([b"!!!!", b"a", b"YQ", b"YQ=", b"===="])  # invalid for both
            return b64(k)
        return k

    def meta_line(self, cmd, k, flags):
        line = b"%s %s%s\r\n" % (cmd, k, b"".join(b" " + f for f in flags))
        # A base64 key is not mangled: memcached skips stray bytes in it (excluded above).
        return line if b"b" in flags else self.mangle(line)

    def opaque(self):
        return b"O" + self.pick([b"1", b"77", b"x", b"", b"9" * 31, b"9" * 32, b"9" * 33])

    def flagset(self, choices, n_max):
        flags = self.r.sample(choices, min(len(choices), self.r.randint(0, n_max)))
        if self.chance(0.03):
            flags.append(self.pick(flags or [b"v"]))  # a duplicate
        if self.chance(0.03):
            flags.append(self.pick([b"Z", b"E5", b"S3", b"\x80", b"x", b"P", b"L", b"!"]))
        return flags

    def mg(self):
        flags = []
        k = self.meta_key(flags)
        choices = [b"v", b"v", b"f", b"c", b"k", b"s", b"t", b"h", b"l", b"u", b"q",
                   self.opaque(), b"N" + self.pick(TTL_FLAGS), b"R" + self.pick(RECACHE_FLAGS),
                   b"T" + self.pick(TTL_FLAGS), b"E" + self.cas()]
        flags += self.flagset(choices, 5)
        self.r.shuffle(flags)
        return self.meta_line(b"mg", k, flags)

    def ms(self):
        flags = []
        k = self.meta_key(flags)
        key_bytes = k
        if b"b" in flags:
            try:
                key_bytes = base64.b64decode(k, validate=True)
            except Exception:
                pass
        v = self.value(key_bytes, allow_big=len(k) <= 250)
        length, extra = self.data_length(v)
        if self.chance(0.03) and len(v) <= 4000:
            length = self.pick([b"-1", b"abc", b"2147483647", b""])
        mode = b"M" + self.pick([b"E", b"A", b"P", b"R", b"S", b"S", b"e", b"a", b"p", b"r", b"s",
                                 b"X", b"", b"SS", b"I"])
        choices = [b"c", b"k", b"q", b"I", self.opaque(), b"T" + self.pick(TTL_FLAGS),
                   b"F" + self.pick(FLAGS), b"C" + self.cas(), mode, mode,
                   b"N" + self.pick(TTL_FLAGS), b"E" + self.cas(), b"s", b"v", b"f"]
        flags += self.flagset(choices, 5)
        self.r.shuffle(flags)
        line = b"ms %s %s%s\r\n" % (k, length, b"".join(b" " + f for f in flags))
        if len(v) > 4000:
            return line + v + b"\r\n"
        if b"b" in flags:
            return line + v + b"\r\n" + extra
        return self.mangle(line, 3 + len(k)) + v + b"\r\n" + extra

    def md(self):
        flags = []
        k = self.meta_key(flags)
        choices = [b"q", b"k", self.opaque(), b"C" + self.cas(), b"I", b"T" + self.pick(TTL_FLAGS),
                   b"x", b"E" + self.cas()]
        flags += self.flagset(choices, 3)
        self.r.shuffle(flags)
        return self.meta_line(b"md", k, flags)

    def ma(self):
        flags = []
        if self.chance(0.6):
            k = self.pick([b"n0", b"n1", b"n2", b"n3", b"n4"])
            if self.chance(0.2):
                flags.append(b"b")
                k = b64(k)
        else:
            k = self.meta_key(flags)
        decr = self.chance(0.4)
        mode = b"M" + (self.pick([b"D", b"-", b"d"]) if decr else
                       self.pick([b"I", b"+", b"i", b"x", b"", b"II"]))
        deltas = DECR_DELTAS if decr else INCR_DELTAS
        choices = [b"q", b"k", self.opaque(), b"N" + self.pick(TTL_FLAGS),
                   b"J" + self.pick(INITIAL_VALUES), b"D" + self.pick(deltas),
                   b"D" + self.pick(deltas),
                   b"T" + self.pick(TTL_FLAGS), mode, mode, b"v", b"t", b"c", b"C" + self.cas(),
                   b"E" + self.cas()]
        flags += self.flagset(choices, 5)
        self.r.shuffle(flags)
        return self.meta_line(b"ma", k, flags)

    def me(self):
        flags = []
        k = self.meta_key(flags)
        return self.meta_line(b"me", k, flags)

    def meta(self):
        return self.pick([self.mg, self.mg, self.ms, self.ms, self.md, self.ma, self.ma,
                          self.me])()

    def invalid(self):
        return self.pick([
            b"bogus\r\n", b"get\r\n", b"gets\r\n", b"set k0 0 0\r\n", b"set k0 a b c\r\nxx\r\n",
            b"incr\r\n", b"incr k0\r\n", b"delete\r\n", b"touch k0\r\n", b"mg\r\n", b"ms k0\r\n",
            b"md\r\n", b"ma\r\n", b"me\r\n", b"\r\n", b"\n", b"\r\r\n", b" \r\n", b"verbosity\r\n",
            b"flush_all bogus\r\n", b"flush_all 0 0 0\r\n", b"gat abc k0\r\n", b"gat 0\r\n",
            b"gat\r\n", b"ms k0 2 b\r\nzz\r\n", b"mg YQ b v\r\n", b"MG k0 v\r\n", b"GET k0\r\n",
            b"mg " + TOO_LONG_KEY + b" v\r\n", b"\x00get k0\r\n", b"g\r\n", b"mn extra\r\n",
            b"set k0 0 0 1 2 3 4\r\nx\r\n", b"ms k0 S2 T0\r\nhi\r\n",
            b"mg k0 " + b" ".join([b"v"] * 25) + b"\r\n",
            b"ms k0 2 " + b" ".join(b"O%d" % i for i in range(20)) + b"\r\nhi\r\n",
            b"get " + b" ".join(b"k%d" % (i % 8) for i in range(300)) + b"\r\n",
            b"set k0 0 0 5\r\nab\r\nc\r\n", b"cas k0 0 0 1\r\nx\r\n",
            b"md k0 " + b"q " * 30 + b"\r\n", b"x" * 2046 + b"\r\n", b"mn " + b"a" * 2043 + b"\r\n",
        ])

    def misc(self):
        if self.chance(0.1):  # rare: it empties the key space
            return self.pick([b"flush_all\r\n", b"flush_all 0\r\n", b"flush_all noreply\r\n",
                              b"flush_all 0 noreply\r\n", b"flush_all -1\r\n",
                              b"flush_all 100000\r\n"])
        return self.pick([
            b"verbosity 1\r\n", b"verbosity 1 noreply\r\n", b"verbosity abc\r\n",
            b"verbosity 1 2 3\r\n", b"verbosity\r\n", b"mn\r\n", b"mn\r\n",
            b"quit\r\n" if self.chance(0.3) else b"mn\r\n",
        ])

    def command(self):
        p = self.r.random()
        if p < 0.26:
            return self.storage()
        if p < 0.44:
            return self.retrieval()
        if p < 0.60:
            return self.keyed()
        if p < 0.90:
            return self.meta()
        if p < 0.975:
            return self.invalid()
        return self.misc()

    def batch(self):
        """(requests, sentinel, its reply): 1 to 30 requests, then the end-of-batch marker."""
        self.batches += 1
        self.big_in_batch = 0
        self.huge_in_batch = False
        n = 1 if self.chance(0.33) else self.r.randint(2, 30)
        reqs = [self.command() for _ in range(n)]
        if b"quit\r\n" in reqs:  # nothing after it: a close with unread input resets the socket
            reqs = reqs[:reqs.index(b"quit\r\n") + 1]
        sentinel = b"md %s O%d\r\n" % (SENTINEL_KEY, self.batches)
        return reqs, sentinel, b"NF O%d\r\n" % self.batches


# -- comparison -------------------------------------------------------------------------------

# Seconds two memcached clocks may disagree by (see the module doc).
CLOCK_SLACK = 5
# Reply numbers the clock decides: meta t<N> / l<N> tokens and me's exp= / la=.
_CLOCK_RE = re.compile(rb"(?<= )(t|l|exp=|la=)(-?\d+)(?= |$)")


def _clock_split(reply):
    """The reply with clock numbers taken out, and those numbers, for lines that are meta
    replies (VA/HD/EN/ME...) only."""
    out = []
    nums = []
    for line in reply.split(b"\r\n"):
        if line[:3] in (b"VA ", b"HD ", b"ME ") or line[:2] in (b"HD",):
            def take(m):
                nums.append((m.group(1), int(m.group(2))))
                return m.group(1) + b"#"
            line = _CLOCK_RE.sub(take, line)
        out.append(line)
    return b"\r\n".join(out), nums


def same_replies(a, b):
    """Byte-identical, or identical except clock numbers: TTLs (t, exp=) that differ by at most
    CLOCK_SLACK seconds, and last-access ages (l, la=), which memcached updates at most once a minute."""
    if a == b:
        return True
    ra, na = _clock_split(a)
    rb, nb = _clock_split(b)
    return ra == rb and len(na) == len(nb) and all(
        kind in (b"l", b"la=") or abs(x - y) <= CLOCK_SLACK for (kind, x), (_, y) in zip(na, nb))


def first_difference(a, b):
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


# -- final state ------------------------------------------------------------------------------

def state_request(keys):
    """One mg per key: value, flags, CAS, TTL (the keys hold no space, CR, LF or NUL)."""
    return b"".join(b"mg %s v f c t\r\n" % k for k in keys) + STATE_END_REQUEST


# The state request's end marker (a value may end with "MN\r\n"; none holds "NF O").
STATE_END_REQUEST = b"md %s Ostate\r\n" % SENTINEL_KEY
STATE_END = b"NF Ostate\r\n"


_VA_RE = re.compile(rb"VA (\d+)((?: \S+)*)\r\n")


def parse_state(reply, keys):
    """{key: None | (value, flags, has_cas, ttl)} from state_request's reply."""
    out = {}
    pos = 0
    for k in keys:
        if reply.startswith(b"EN\r\n", pos):
            out[k] = None
            pos += 4
            continue
        m = _VA_RE.match(reply, pos)
        if not m:
            raise AssertionError("state of %r: unexpected reply %r" % (k, reply[pos:pos + 100]))
        n = int(m.group(1))
        tokens = dict((t[:1], t[1:]) for t in m.group(2).split())
        start = m.end()
        value = reply[start:start + n]
        pos = start + n + 2
        out[k] = (value, int(tokens[b"f"]), int(tokens[b"c"]) != 0, int(tokens[b"t"]))
    assert reply[pos:] == STATE_END, "state reply tail: %r" % reply[pos:pos + 100]
    return out


def state_differences(ref, prx):
    """Readable differences between two parse_state results (TTL with one second of slack)."""
    diffs = []
    for k in ref:
        a, b = ref[k], prx.get(k)
        if a is None or b is None:
            if a != b:
                diffs.append("%r: memcached %s, mcring %s" % (
                    k, "missing" if a is None else "present (%d bytes)" % len(a[0]),
                    "missing" if b is None else "present (%d bytes)" % len(b[0])))
            continue
        if a[0] != b[0]:
            diffs.append("%r: value %r vs %r" % (k, a[0][:80], b[0][:80]))
        if a[1] != b[1]:
            diffs.append("%r: flags %d vs %d" % (k, a[1], b[1]))
        if a[2] != b[2]:
            diffs.append("%r: cas present %s vs %s" % (k, a[2], b[2]))
        if abs(a[3] - b[3]) > CLOCK_SLACK and not (a[3] == -1 or b[3] == -1) or (a[3] == -1) != (b[3] == -1):
            diffs.append("%r: ttl %d vs %d" % (k, a[3], b[3]))
    return diffs
