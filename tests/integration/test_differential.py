#!/usr/bin/python3
"""Differential test: every script in tests/integration/scripts/*.txt is sent, one command
per line, to Debian's redis-server 7.0 and to `keyshift serve`, and the raw RESP replies
are compared byte for byte.

Script syntax: one command per line with redis-cli quoting ("..." with \\n \\xHH escapes,
'...'); blank lines and lines starting with '#' are ignored. Trailing tags change how one
reply is compared:
  #ttl         an integer reply is compared as "> 0" / its exact value when <= 0
               (TTL-stable: scripts use big TTLs, so only the sign class is meaningful)
  #unordered   an array/set reply is compared as a multiset (KEYS order is hash order)
  #shape       only the reply's type is compared (e.g. a random member)
  #mask:F,G    map (or RESP2 field/value array) entries F and G, at any depth, are not
               compared (values that legitimately differ between two servers, e.g. a
               connection id)
  #needs:TYPE  the line uses a data type keyshift may not have yet (list, hash, set, zset);
               it is skipped, and counted, while keyshift answers "unknown command" for it
Each script runs on a fresh connection after FLUSHALL, on both servers.

Where Valkey 8 (keyshift's oracle) legitimately differs from Redis 7.0, ALLOWED below
turns the Redis 7.0 reply into the Valkey 8 one, with a comment naming the difference and
where to see it in Valkey 8.0.1's source; everything else must be identical.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_differential.py
     [SCRIPT-NAME...]
"""

import decimal
import glob
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (BigNum, ConnectionClosed, Double, Err, Map, Null, Push,  # noqa: E402
                     RespConn, Set, Simple, Verbatim, encode_command, eq, ok, render,
                     run_tests, split_args, test)

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = sorted(glob.glob(os.path.join(HERE, "scripts", "*.txt")))

# A command each optional data type needs; keyshift "has" the type once it is known.
PROBES = {
    "list": ["RPUSH", "__ks_probe__", "x"],
    "hash": ["HSET", "__ks_probe__", "f", "v"],
    "set": ["SADD", "__ks_probe__", "x"],
    "zset": ["ZADD", "__ks_probe__", "1", "x"],
}

TAG_RE = re.compile(r"^#(ttl|unordered|shape|mask:[\w,-]+|needs:[a-z]+)$")


# --------------------------------------------------------------------------------------
# Legitimate Valkey 8.0 vs Redis 7.0 differences. Each entry: a regex on the script line
# (upper-cased command name first), a function from the Redis 7.0 raw reply to the reply
# Valkey 8 gives, and why.
# --------------------------------------------------------------------------------------

def _hello_identity(raw):
    # HELLO's server and version fields name the product: Valkey 8.0.1 answers
    # server=valkey version=8.0.1 (src/networking.c helloCommand: SERVER_NAME and
    # VALKEY_VERSION unless extended-redis-compatibility is on, which defaults to no);
    # Redis 7.0 says redis / 7.0.x.
    raw = re.sub(rb"\$6\r\nserver\r\n\$5\r\nredis\r\n", b"$6\r\nserver\r\n$6\r\nvalkey\r\n",
                 raw)
    return re.sub(rb"\$7\r\nversion\r\n\$\d+\r\n7\.0\.\d+\r\n",
                  b"$7\r\nversion\r\n$5\r\n8.0.1\r\n", raw)


def _small_list_encoding(raw):
    # Small lists are listpacks since Redis 7.2, so in Valkey 8 (src/t_list.c:
    # createListListpackObject for new lists, converted to quicklist only past
    # list-max-listpack-size); Redis 7.0 always answers quicklist.
    return raw.replace(b"$9\r\nquicklist\r\n", b"$8\r\nlistpack\r\n")


def _lpos_rank_min(raw):
    # LPOS RANK takes -LONG_MAX..LONG_MAX in Valkey 8 (src/t_list.c lposCommand:
    # getRangeLongFromObjectOrReply(c, ..., -LONG_MAX, LONG_MAX, &rank, NULL)), so LLONG_MIN
    # can no longer be negated into an overflow; Redis 7.0 accepted it.
    return (b"-ERR value is out of range, value must between -9223372036854775807 and "
            b"9223372036854775807\r\n") if raw.startswith(b":") else raw


def _valkey_double_text(text):
    """Valkey 8's d2string of the double Redis 7.0 printed as "%.17g" (`text`), or None
    when `text` is not such a number (a member name, say)."""
    try:
        v = float(text)
    except ValueError:
        return None
    if v != v or v in (float("inf"), float("-inf")) or ("%.17g" % v).encode() != text:
        return None
    if v == 0:
        return b"-0" if str(v).startswith("-") else b"0"
    if v == int(v) and abs(v) <= 2.0 ** 62:
        return str(int(v)).encode()
    # fpconv_dtoa (deps/fpconv/fpconv_dtoa.c emit_digits) over the shortest round-trip digits
    sign, digit_tuple, k = decimal.Decimal(repr(v)).as_tuple()
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    k += len(digits) - len(digits.rstrip("0"))
    digits = digits.rstrip("0")
    n = len(digits)
    e = abs(k + n - 1)
    if k >= 0 and e < n + 7:
        out = digits + "0" * k
    elif k < 0 and (k > -7 or e < 4):
        off = n + k
        out = "0." + "0" * -off + digits if off <= 0 else digits[:off] + "." + digits[off:]
    else:
        out = digits[0] + ("." + digits[1:] if n > 1 else "") + "e" + \
            ("-" if k + n - 1 < 0 else "+") + str(e)
    return (("-" if sign else "") + out).encode()


def _grisu_scores(raw):
    # Scores in replies: Valkey 8 prints doubles with d2string, i.e. fpconv_dtoa's shortest
    # round-trip text (src/networking.c addReplyDouble, src/util.c d2string), Redis 7.0 with
    # "%.17g": 0.1 is "0.1" in Valkey 8, "0.10000000000000001" in Redis 7.0. Applies to
    # bulk strings (RESP2) and doubles (RESP3) that are exactly some double's "%.17g" text.
    def bulk(m):
        new = _valkey_double_text(m.group(2))
        return m.group(0) if new is None else b"$%d\r\n%s\r\n" % (len(new), new)

    def dbl(m):
        new = _valkey_double_text(m.group(1))
        return m.group(0) if new is None else b"," + new + b"\r\n"

    raw = re.sub(rb"\$(\d+)\r\n([-+.0-9e]+)\r\n", bulk, raw)
    return re.sub(rb"(?m)^,([-+.0-9e]+)\r\n", dbl, raw)


def _new_option(reply):
    # An option or argument form added after Redis 7.0 (in Redis 7.2 or Valkey 8.0), which
    # Valkey 8 has and Redis 7.0 rejects (syntax error or arity error): the entry writes out
    # the Valkey 8 reply.
    return lambda raw: reply if raw.startswith(b"-ERR ") else raw


def _negative_scan_cursor(raw):
    # A negative cursor is "invalid cursor" in Valkey 8 (src/db.c parseScanCursorOrReply:
    # string2ull, src/util.c, returns 0 for ll < 0); Redis 7.0 parsed it with strtoull,
    # which wraps -1 around to 2^64-1.
    return b"-ERR invalid cursor\r\n" if raw.startswith(b"*") else raw


def _no_multi(raw):
    # MULTI and WATCH carry the no-multi flag in Valkey 8, so inside MULTI they are refused
    # by processCommand (src/server.c: "Command not allowed inside a transaction" through
    # rejectCommandFormat, which also flags the transaction); Redis 7.0 refused them in
    # multiCommand/watchCommand with their own texts and left the transaction intact.
    return re.sub(rb"^-ERR (MULTI calls can not be nested|WATCH inside MULTI is not allowed)"
                  rb"\r\n$", b"-ERR Command not allowed inside a transaction\r\n", raw)


def _doomed_exec(raw):
    # The EXEC after such a refusal: Valkey 8 flagged the transaction, so EXEC aborts.
    return (b"-EXECABORT Transaction discarded because of previous errors.\r\n"
            if raw.startswith(b"*") else raw)


def _small_set_encoding(raw):
    # Small sets of strings (or of integers plus a string) are listpacks since Redis 7.2, so
    # in Valkey 8 (src/t_set.c setTypeCreate and setTypeMaybeConvert: listpack while within
    # set-max-listpack-entries/-value); Redis 7.0 has intset or hashtable only.
    return raw.replace(b"$9\r\nhashtable\r\n", b"$8\r\nlistpack\r\n")


def _help_last_line(raw):
    # addReplyHelp ends every HELP reply with "    Print this help." in Valkey 8
    # (src/networking.c addReplyHelp); Redis 7.0 wrote "    Prints this help.".
    return raw.replace(b"+    Prints this help.\r\n", b"+    Print this help.\r\n")


def _xinfo_consumers_inactive(raw):
    # XINFO CONSUMERS reports each consumer's "inactive" time after "idle" since Redis 7.2,
    # so in Valkey 8 (src/t_stream.c xinfoCommand, CONSUMERS: addReplyMapLen(c, 4) with
    # "inactive"); Redis 7.0 has three fields. The value is a time (masked by the line's
    # #mask tag), so a placeholder is inserted.
    raw = re.sub(rb"\*6\r\n(\$4\r\nname\r\n)", rb"*8\r\n\1", raw)
    return re.sub(rb"(\$4\r\nidle\r\n:-?\d+\r\n)", rb"\1$8\r\ninactive\r\n:0\r\n", raw)


def _xsetid_below_max_deleted(raw):
    # XSETID refuses a last ID below the stream's max-deleted-entry-id in Valkey 8
    # (src/t_stream.c xsetidCommand: "smaller than current max_deleted_entry_id");
    # Redis 7.0.15 accepted it.
    return (b"-ERR The ID specified in XSETID is smaller than current max_deleted_entry_id\r\n"
            if raw == b"+OK\r\n" else raw)


def _lset_low_32_bits(raw):
    # LSET keeps only the low 32 bits of its index in Valkey 8 (src/t_list.c lsetCommand
    # passes its long index to listTypeReplaceAtIndex(robj *o, int index, ...)), so these
    # huge indexes land inside the 3-element list "wrap"; Redis 7.0 passed the long through
    # to quicklistReplaceAtIndex and answered "index out of range".
    return b"+OK\r\n" if raw == b"-ERR index out of range\r\n" else raw


def _timeout_overflow(raw):
    # A millisecond timeout that overflows when added to the current time is refused in
    # Valkey 8 (src/timeout.c getTimeoutFromObjectOrReply: "timeout is out of range");
    # Redis 7.0 added it anyway, and WAIT 0 then answered 0 at once.
    return b"-ERR timeout is out of range\r\n" if raw.startswith(b":") else raw


# WAITAOF is new in Redis 7.2 (Valkey 8 src/replication.c waitaofCommand); these are the
# replies of a Valkey 8 primary with no replicas and appendonly no: numlocal must be 0 or 1
# (getRangeLongFromObjectOrReply) and 1 needs an AOF, numreplicas must not be negative
# (getPositiveLongFromObjectOrReply), then the timeout is checked as WAIT's. With nothing to
# wait for it answers [local fsync done, replicas acked] = [0, 0]; when it has to wait for a
# replica it blocks until the timeout and answers the same.
_WAITAOF_REPLIES = {
    "WAITAOF 0 0 0": b"*2\r\n:0\r\n:0\r\n",
    "WAITAOF 0 0 1000": b"*2\r\n:0\r\n:0\r\n",
    "WAITAOF 0 1 1": b"*2\r\n:0\r\n:0\r\n",
    "WAITAOF 1 0 0": b"-ERR WAITAOF cannot be used when numlocal is set but appendonly is "
                     b"disabled.\r\n",
    "WAITAOF 1 1 0": b"-ERR WAITAOF cannot be used when numlocal is set but appendonly is "
                     b"disabled.\r\n",
    "WAITAOF 2 0 0": b"-ERR value is out of range, value must between 0 and 1\r\n",
    "WAITAOF -1 0 0": b"-ERR value is out of range, value must between 0 and 1\r\n",
    "WAITAOF x 0 0": b"-ERR value is not an integer or out of range\r\n",
    "WAITAOF 0 -1 0": b"-ERR value is out of range, must be positive\r\n",
    "WAITAOF 0 x 0": b"-ERR value is not an integer or out of range\r\n",
    "WAITAOF 0 0 -1": b"-ERR timeout is negative\r\n",
    "WAITAOF 0 0 x": b"-ERR timeout is not an integer or out of range\r\n",
    "WAITAOF 0 0 9223372036854775807": b"-ERR timeout is out of range\r\n",
    "WAITAOF 0 0": b"-ERR wrong number of arguments for 'waitaof' command\r\n",
}


def _waitaof(line):
    return _new_option(_WAITAOF_REPLIES[line])


ALLOWED = [
    (re.compile(r"^LSET wrap (-9223372036854775808|9223372036854775807|4294967296|4294967297) v$"),
     _lset_low_32_bits, "LSET keeps the low 32 bits of its index in Valkey 8"),
    (re.compile(r"^WAIT 0 9223372036854775807$"), _timeout_overflow,
     "a timeout overflowing now + timeout is refused in Valkey 8"),
] + [
    (re.compile("^" + re.escape(line) + "$"), _waitaof(line),
     "WAITAOF (Redis 7.2+, Valkey 8) on a primary without replicas or AOF")
    for line in _WAITAOF_REPLIES
] + [
    (re.compile(r"^HELLO\b", re.I), _hello_identity,
     "HELLO reports server=valkey, version=8.0.1 (Valkey 8) instead of redis/7.0.x"),
    (re.compile(r"^OBJECT\s+ENCODING\s+l\b", re.I), _small_list_encoding,
     "a 3-element list is a listpack in Valkey 8, a quicklist in Redis 7.0"),
    (re.compile(r"^OBJECT\s+ENCODING\s+lp\w*\b", re.I), _small_list_encoding,
     "lists named lp* fit list-max-listpack-size (8 KB), so listpacks in Valkey 8 and quicklists "
     "in Redis 7.0"),
    (re.compile(r"^LPOS\b.*\bRANK\s+-9223372036854775808\b", re.I), _lpos_rank_min,
     "LPOS RANK rejects LLONG_MIN in Valkey 8 (range -LONG_MAX..LONG_MAX)"),
    (re.compile(r"^(Z(M?SCORE|INCRBY|ADD|(REV)?RANGE\w*|POPM(IN|AX)|MPOP|UNION|INTER|DIFF|"
                r"RANDMEMBER|(REV)?RANK)|BZ\w+)\b", re.I), _grisu_scores,
     "scores are printed as shortest round-trip text (Valkey 8), not \"%.17g\" (Redis 7.0)"),
    # A listpack sorted set stores non-integral scores as d2string text (Valkey 8
    # src/t_zset.c zzlInsertAt) and ZSCAN returns that text as stored (src/db.c
    # scanGenericCommand, lpGet), so the listpack zset "solo" scans as "0.1" in Valkey 8.
    (re.compile(r"^ZSCAN\s+solo\b", re.I), _grisu_scores,
     "a listpack sorted set's ZSCAN scores are the stored shortest text in Valkey 8"),
    (re.compile(r"^[HSZ]SCAN\s+\S+\s+-", re.I), _negative_scan_cursor,
     "a negative HSCAN/SSCAN/ZSCAN cursor is invalid in Valkey 8"),
    (re.compile(r"^HSCAN r 0 NOVALUES$"),
     _new_option(b"*2\r\n$1\r\n0\r\n*3\r\n$2\r\nf1\r\n$2\r\nf2\r\n$2\r\nf3\r\n"),
     "HSCAN NOVALUES is new in Valkey 8.0 (src/db.c scanGenericCommand \"novalues\")"),
    (re.compile(r"^SSCAN\b.*\bNOVALUES\b", re.I),
     _new_option(b"-ERR NOVALUES option can only be used in HSCAN\r\n"),
     "NOVALUES on another type than a hash is its own error in Valkey 8 (src/db.c "
     "scanGenericCommand)"),
    # ZRANK/ZREVRANK take an optional WITHSCORE since Redis 7.2 (Valkey 8 src/t_zset.c
    # zrankGenericCommand: arity -3, a 4th argument other than WITHSCORE is a syntax error,
    # a missing member is a null array); Redis 7.0's arity is exactly 3.
    (re.compile(r"^ZRANK z a x$"), _new_option(b"-ERR syntax error\r\n"),
     "ZRANK's 4th argument is parsed (syntax error) in Valkey 8"),
    (re.compile(r"^ZRANK z2 b WITHSCORE$"), _new_option(b"*2\r\n:1\r\n$1\r\n2\r\n"),
     "ZRANK WITHSCORE (Valkey 8)"),
    (re.compile(r"^ZREVRANK z2 b WITHSCORE$"), _new_option(b"*2\r\n:1\r\n$1\r\n2\r\n"),
     "ZREVRANK WITHSCORE (Valkey 8)"),
    (re.compile(r"^ZRANK z2 nobody WITHSCORE$"), _new_option(b"*-1\r\n"),
     "ZRANK WITHSCORE of a missing member is a null array (Valkey 8, RESP2)"),
    (re.compile(r"^ZRANK z2 c WITHSCORE$"), _new_option(b"*2\r\n:2\r\n,3\r\n"),
     "ZRANK WITHSCORE under RESP3: the score is a double (Valkey 8 addReplyDouble)"),
    (re.compile(r"^ZRANK z2 nobody3 WITHSCORE$"), _new_option(b"_\r\n"),
     "ZRANK WITHSCORE of a missing member is a null under RESP3 (Valkey 8)"),
    (re.compile(r"^(MULTI|WATCH)\b", re.I), _no_multi,
     "MULTI/WATCH inside MULTI are refused as no-multi commands in Valkey 8"),
    # Only the EXEC written in lower case in transactions.txt follows a refused WATCH.
    (re.compile(r"^exec$"), _doomed_exec,
     "a WATCH refused inside MULTI dooms the transaction in Valkey 8"),
    (re.compile(r"^OBJECT\s+ENCODING\s+sp\w*$", re.I), _small_set_encoding,
     "sets named sp* are small, so listpacks in Valkey 8 where Redis 7.0 has a hashtable"),
    (re.compile(r"^(X(GROUP|INFO)|MODULE) HELP$", re.I), _help_last_line,
     "HELP replies end with \"Print this help.\" in Valkey 8"),
    # Valkey 8's READONLY/READWRITE set a connection flag and answer OK on any server
    # (src/cluster.c readonlyCommand); Redis 7.0 refused them without cluster support.
    (re.compile(r"^(READONLY|READWRITE)$"), lambda raw: b"+OK\r\n",
     "READONLY/READWRITE answer OK on a standalone Valkey 8"),
    (re.compile(r"^XINFO CONSUMERS\b", re.I), _xinfo_consumers_inactive,
     "XINFO CONSUMERS has an \"inactive\" field in Valkey 8"),
    (re.compile(r"^XSETID st 2$"), _xsetid_below_max_deleted,
     "XSETID below max-deleted-entry-id is refused in Valkey 8"),
]


# --------------------------------------------------------------------------------------
# Scripts.
# --------------------------------------------------------------------------------------

class Line:
    def __init__(self, script, number, text, args, tags):
        self.script = script
        self.number = number
        self.text = text
        self.args = args
        self.tags = tags

    def where(self):
        return "%s:%d" % (os.path.basename(self.script), self.number)

    def needs(self):
        return [t.split(":", 1)[1] for t in self.tags if t.startswith("needs:")]

    def masked(self):
        out = set()
        for t in self.tags:
            if t.startswith("mask:"):
                out.update(f.encode() for f in t[5:].split(","))
        return out


def parse_script(path):
    lines = []
    with open(path, "rb") as f:
        for number, raw in enumerate(f.read().decode("utf-8").splitlines(), 1):
            text = raw.strip()
            if not text or text.startswith("#"):
                continue
            words = split_args(text)
            if words is None:
                raise ValueError("%s:%d: unbalanced quotes" % (path, number))
            tags = []
            while words and TAG_RE.match(words[-1].decode("latin-1")):
                tags.insert(0, words.pop().decode("latin-1")[1:])
            if not words:
                raise ValueError("%s:%d: tags without a command" % (path, number))
            for w in words:
                if w.startswith(b"#") and not TAG_RE.match(w.decode("latin-1")):
                    if re.match(rb"^#[a-z]+(:[a-z,]+)?$", w):
                        raise ValueError("%s:%d: unknown tag %r" % (path, number, w))
            lines.append(Line(path, number, text, words, tags))
    return lines


# --------------------------------------------------------------------------------------
# Comparison.
# --------------------------------------------------------------------------------------

def canon(v):
    """A hashable, type-preserving form of a decoded reply."""
    for cls in (Err, Simple, Double, BigNum, Verbatim):
        if isinstance(v, cls):
            return (cls.__name__, bytes(v))
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int):
        return ("int", v)
    if isinstance(v, bytes):
        return ("bulk", v)
    if isinstance(v, Map):
        return ("map", tuple((canon(k), canon(x)) for k, x in v))
    for cls in (Set, Push):
        if isinstance(v, cls):
            return (cls.__name__, tuple(canon(x) for x in v))
    if isinstance(v, list):
        return ("array", tuple(canon(x) for x in v))
    if isinstance(v, Null):
        return ("null",)
    if v is None:
        return ("nil",)
    return ("?", repr(v))


def shape(v):
    c = canon(v)
    return c[0]


def normalise(line, value):
    """The comparable form of a reply under the line's tags."""
    c = canon(value)
    if "ttl" in line.tags and c[0] == "int":
        return ("int", "positive") if c[1] > 0 else c
    if "unordered" in line.tags and c[0] in ("array", "Set"):
        return (c[0], tuple(sorted(c[1], key=repr)))
    if "shape" in line.tags:
        return (shape(value),)
    masked = line.masked()
    if masked:
        return mask(c, masked)
    return c


def mask(c, masked):
    """`c` with the values of map (or RESP2 field/value array) entries named in `masked`
    replaced, at any depth (XINFO replies nest a map per consumer)."""
    if c[0] == "map":
        return ("map", tuple((k, ("masked",) if k[1] in masked else mask(x, masked))
                             for k, x in c[1]))
    if c[0] == "array":
        items = [mask(x, masked) for x in c[1]]
        for i in range(0, len(items) - 1, 2):
            if items[i][0] == "bulk" and items[i][1] in masked:
                items[i + 1] = ("masked",)
        return ("array", tuple(items))
    return c


def compare(line, ref, ks):
    """(equal?, how). `ref` and `ks` are (raw, value) pairs; how starts with "allowed" when
    an ALLOWED entry was needed for equality."""
    if ref[0] == ks[0]:
        return True, "identical"
    ref_raw = ref[0]
    allowed = []
    for pattern, fix, why in ALLOWED:
        if pattern.search(line.text):
            fixed = fix(ref_raw)
            if fixed != ref_raw:
                allowed.append(why)
                ref_raw = fixed
    prefix = "allowed (%s)" % "; ".join(allowed) if allowed else ""
    if allowed and ref_raw == ks[0]:
        return True, prefix
    if any(t in line.tags for t in ("ttl", "unordered", "shape")) or line.masked():
        ref_value = RespConn.decode(ref_raw) if ref_raw != ref[0] else ref[1]
        if normalise(line, ref_value) == normalise(line, ks[1]):
            return True, (prefix + " " if prefix else "") + "equal under " + ",".join(line.tags)
    return False, "differs"


# --------------------------------------------------------------------------------------
# Runner.
# --------------------------------------------------------------------------------------

class Pair:
    """The reference and keyshift, started once for all scripts. With
    KEYSHIFT_IT_DIFF_SELF=1 the second server is another redis-server 7.0: a script
    author's check that a script is deterministic (it must then report no mismatch)."""

    def __init__(self, h):
        self.h = h
        self.ref = h.redis_server()
        self.ks = self._start_second()
        self.available = {}

    def _start_second(self):
        if os.environ.get("KEYSHIFT_IT_DIFF_SELF") == "1":
            return self.h.redis_server(name="redis-server-2")
        return self.h.keyshift("--enable-debug-command", "yes", name="keyshift-diff")

    def restart_keyshift(self):
        self.ks.stop()
        self.h.forget(self.ks)
        self.ks = self._start_second()
        self.available = {}

    def has(self, kind):
        if kind not in self.available:
            with self.ks.conn() as c:
                raw, _ = c.command(*PROBES[kind])
                c.command("DEL", "__ks_probe__")
            self.available[kind] = not raw.startswith(b"-ERR unknown command")
        return self.available[kind]


STATS = {"compared": 0, "skipped": 0, "allowed": 0, "mismatches": 0}


def run_script(h, path):
    if not hasattr(h, "pair"):
        h.pair = Pair(h)
    pair = h.pair
    lines = parse_script(path)
    mismatches = []
    skipped = []
    allowed = []
    compared = 0
    rc = pair.ref.conn()
    kc = pair.ks.conn()
    try:
        for c in (rc, kc):
            raw, _ = c.command("FLUSHALL")
            if raw != b"+OK\r\n":
                raise AssertionError("FLUSHALL before %s: %r" % (path, raw))
        for line in lines:
            missing = [n for n in line.needs() if not pair.has(n)]
            if missing:
                skipped.append("%s (needs %s)" % (line.where(), ",".join(missing)))
                continue
            payload = encode_command(line.args)
            rc.send(payload)
            ref = rc.read_reply()
            try:
                kc.send(payload)
                ks = kc.read_reply()
            except (ConnectionClosed, TimeoutError, BrokenPipeError, ConnectionResetError) as e:
                alive = pair.ks.alive()
                mismatches.append("%s  %s\n    redis-server: %s\n    keyshift:     %s"
                                  % (line.where(), line.text, render(ref[1]),
                                     "%s (%s)" % (e, "server alive" if alive else
                                                  "SERVER DIED, log tail:\n" +
                                                  pair.ks.log()[-1500:])))
                if not alive:
                    pair.restart_keyshift()
                break
            compared += 1
            same, how = compare(line, ref, ks)
            if how.startswith("allowed"):
                allowed.append("%s %s" % (line.where(), how))
            if not same:
                mismatches.append("%s  %s\n    redis-server: %r\n    keyshift:     %r"
                                  % (line.where(), line.text, ref[0], ks[0]))
    finally:
        rc.close()
        kc.close()
    STATS["compared"] += compared
    STATS["skipped"] += len(skipped)
    STATS["mismatches"] += len(mismatches)
    STATS["allowed"] += len(allowed)
    name = os.path.basename(path)
    for a in allowed:
        print("  " + a)
    print("  %s: %d commands compared, %d mismatches, %d allowed, %d skipped%s"
          % (name, compared, len(mismatches), len(allowed), len(skipped),
             (" (" + "; ".join(skipped[:3]) + ("; ..." if len(skipped) > 3 else "") + ")")
             if skipped else ""))
    ok(compared > 0 or skipped, "%s has no commands" % name)
    if mismatches:
        raise AssertionError("%d of %d replies differ in %s:\n%s"
                             % (len(mismatches), compared, name, "\n".join(mismatches)))
    eq(len(mismatches), 0, "mismatches in %s" % name)


def _make_test(path):
    def fn(h):
        run_script(h, path)
    fn.__name__ = "script_" + os.path.splitext(os.path.basename(path))[0]
    return fn


@test
def scripts_are_present_and_parse(h):
    ok(len(SCRIPTS) >= 10, "expected the script set under %s/scripts" % HERE)
    for path in SCRIPTS:
        ok(len(parse_script(path)) > 0, "%s is empty" % path)


for _path in SCRIPTS:
    test(_make_test(_path))


@test
def summary(h):
    print("  total: %(compared)d commands compared, %(mismatches)d mismatches, "
          "%(allowed)d allowed differences, %(skipped)d lines skipped (#needs)" % STATS)
    ok(STATS["compared"] > 0 or not SCRIPTS, "nothing was compared")


if __name__ == "__main__":
    run_tests()
