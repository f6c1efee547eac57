// Bitmap commands over strings: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO.
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/commands/string_edit.hpp"
#include "engine/keyspace/string_value.hpp"
#include "engine/util/strconv.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace keyshift::engine {
namespace {

constexpr std::string_view k_bad_offset = "ERR bit offset is not an integer or out of range";
constexpr std::string_view k_bad_bit = "ERR bit is not an integer or out of range";
constexpr std::string_view k_bitpos_bit = "ERR The bit argument must be 1 or 0.";
constexpr std::string_view k_bitop_not = "ERR BITOP NOT must be called with a single source key.";

/// Parses a bit offset as Valkey does: a non-negative integer whose byte fits in
/// proto-max-bulk-len.
bool parse_offset(CmdContext& ctx, std::string_view arg, uint64_t& out) {
  int64_t v = 0;
  if (!parse_i64(arg, v) || v < 0 ||
      static_cast<uint64_t>(v >> 3) >= ctx.engine().config().proto_max_bulk_len) {
    ctx.reply().error(k_bad_offset);
    return false;
  }
  out = static_cast<uint64_t>(v);
  return true;
}

/// The string at `key` for reading: nullopt-like empty with `found` false when missing.
bool read_string(CmdContext& ctx, std::string_view key, std::string& out, bool& found) {
  Entry* e = ctx.db().lookup_read(key);
  found = e != nullptr;
  if (e == nullptr) {
    return true;
  }
  if (e->type() != ObjType::string) {
    ctx.reply().error(errors::k_wrong_type);
    return false;
  }
  IntBuffer buf;
  out.assign(string_of(e, buf));
  return true;
}

/// Runs `fn(std::string&)` on the string at `key` zero-padded to hold bit `max_bit` (Valkey's
/// lookupStringForBitCommand): a new key's string is built and stored, an existing one is
/// edited where it lives (string_edit). `grown` says whether the key is new or got longer;
/// false with the reply written when the key holds another type.
template <typename Fn>
bool edit_bits(CmdContext& ctx, std::string_view key, uint64_t max_bit, bool& grown, Fn&& fn) {
  Db& db = ctx.db();
  size_t need = static_cast<size_t>(max_bit >> 3) + 1;
  Entry* e = db.lookup(key);
  if (e == nullptr) {
    grown = true;
    std::string s(need, '\0');
    fn(s);
    db.set(key, make_raw_string_spec(std::move(s)), -1, true);
    return true;
  }
  if (e->type() != ObjType::string) {
    ctx.reply().error(errors::k_wrong_type);
    return false;
  }
  edit_string(db, e, key, ctx.engine().memory(), [&](std::string& s) {
    grown = s.size() < need;
    if (grown) {
      s.resize(need, '\0');
    }
    fn(s);
  });
  return true;
}

void cmd_setbit(CmdContext& ctx) {
  uint64_t offset = 0;
  if (!parse_offset(ctx, ctx.arg(2), offset)) {
    return;
  }
  std::string_view bit_arg = ctx.arg(3);
  if (bit_arg != "0" && bit_arg != "1") {
    ctx.reply().error(k_bad_bit);
    return;
  }
  std::string_view key = ctx.arg(1);
  Entry* e = ctx.db().lookup(key);
  if (e != nullptr && e->type() != ObjType::string) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  size_t byte = static_cast<size_t>(offset >> 3);
  // As Valkey: only a new key, a longer string or a flipped bit is a change (dirty, WATCH,
  // the setbit event); an unchanged key is left as it is.
  int shift = 7 - static_cast<int>(offset & 7);
  int want = bit_arg[0] - '0';
  int old = 0;
  if (e != nullptr) {
    IntBuffer buf;
    std::string_view cur = string_of(e, buf);
    old = byte < cur.size() ? (static_cast<unsigned char>(cur[byte]) >> shift) & 1 : 0;
    if (byte < cur.size() && old == want) {
      ctx.reply().integer(old);
      return;
    }
  }
  bool grown = false;
  edit_bits(ctx, key, offset, grown, [&](std::string& s) {
    auto c = static_cast<unsigned char>(s[byte]);
    s[byte] = static_cast<char>((c & ~(1u << shift)) | (static_cast<unsigned>(want) << shift));
  });
  ctx.engine().signal_modified_key(ctx.session().db, key);
  ctx.engine().notify_keyspace_event(k_notify_string, "setbit", key, ctx.session().db);
  ctx.reply().integer(old);
}

void cmd_getbit(CmdContext& ctx) {
  uint64_t offset = 0;
  if (!parse_offset(ctx, ctx.arg(2), offset)) {
    return;
  }
  std::string s;
  bool found = false;
  if (!read_string(ctx, ctx.arg(1), s, found)) {
    return;
  }
  size_t byte = static_cast<size_t>(offset >> 3);
  if (byte >= s.size()) {
    ctx.reply().integer(0);
    return;
  }
  int shift = 7 - static_cast<int>(offset & 7);
  ctx.reply().integer((static_cast<unsigned char>(s[byte]) >> shift) & 1);
}

/// Resolves a [start, end] range (bytes or bits) over a string of `len` bytes into an
/// inclusive bit range; false when it is empty.
bool resolve_range(int64_t start, int64_t end, bool is_bit, int64_t len, int64_t& first_bit,
                   int64_t& last_bit) {
  int64_t total = is_bit ? len * 8 : len;
  if (start < 0) {
    start += total;
  }
  if (end < 0) {
    end += total;
  }
  if (start < 0) {
    start = 0;
  }
  if (end < 0) {
    end = 0;
  }
  if (end >= total) {
    end = total - 1;
  }
  if (start > end) {
    return false;
  }
  first_bit = is_bit ? start : start * 8;
  last_bit = is_bit ? end : end * 8 + 7;
  return true;
}

bool bit_at(std::string_view s, int64_t bit) {
  return ((static_cast<unsigned char>(s[static_cast<size_t>(bit >> 3)]) >> (7 - (bit & 7))) & 1) !=
         0;
}

/// Parses optional "start end [BYTE|BIT]" from position `pos`; `have_start`/`have_end` say
/// which were given.
bool parse_range_args(CmdContext& ctx, size_t pos, int64_t& start, int64_t& end, bool& is_bit,
                      bool& have_start, bool& have_end) {
  size_t n = ctx.argc() - pos;
  have_start = n >= 1;
  have_end = n >= 2;
  is_bit = false;
  if (n > 3) {
    ctx.reply().error(errors::k_syntax);
    return false;
  }
  if (have_start && !parse_i64(ctx.arg(pos), start)) {
    ctx.reply().error(errors::k_not_integer);
    return false;
  }
  if (n == 3) {
    if (iequals(ctx.arg(pos + 2), "BIT")) {
      is_bit = true;
    } else if (!iequals(ctx.arg(pos + 2), "BYTE")) {
      ctx.reply().error(errors::k_syntax);
      return false;
    }
  }
  if (have_end && !parse_i64(ctx.arg(pos + 1), end)) {
    ctx.reply().error(errors::k_not_integer);
    return false;
  }
  return true;
}

void cmd_bitcount(CmdContext& ctx) {
  int64_t start = 0;
  int64_t end = -1;
  bool is_bit = false;
  bool have_start = false;
  bool have_end = false;
  if (!parse_range_args(ctx, 2, start, end, is_bit, have_start, have_end)) {
    return;
  }
  std::string s;
  bool found = false;
  if (!read_string(ctx, ctx.arg(1), s, found)) {
    return;
  }
  int64_t len = static_cast<int64_t>(s.size());
  if (!have_end) {
    end = (is_bit ? len * 8 : len) - 1;
  }
  if (!found || (start < 0 && end < 0 && start > end)) {
    ctx.reply().integer(0);
    return;
  }
  int64_t first = 0;
  int64_t last = 0;
  if (!resolve_range(start, end, is_bit, len, first, last)) {
    ctx.reply().integer(0);
    return;
  }
  int64_t count = 0;
  int64_t bit = first;
  while (bit <= last && (bit & 7) != 0) {
    count += bit_at(s, bit++) ? 1 : 0;
  }
  while (bit + 7 <= last) {
    count += std::popcount(static_cast<unsigned char>(s[static_cast<size_t>(bit >> 3)]));
    bit += 8;
  }
  while (bit <= last) {
    count += bit_at(s, bit++) ? 1 : 0;
  }
  ctx.reply().integer(count);
}

void cmd_bitpos(CmdContext& ctx) {
  int64_t want = 0;
  if (!parse_i64(ctx.arg(2), want)) {
    ctx.reply().error(errors::k_not_integer);
    return;
  }
  if (want != 0 && want != 1) {
    ctx.reply().error(k_bitpos_bit);
    return;
  }
  int64_t start = 0;
  int64_t end = -1;
  bool is_bit = false;
  bool have_start = false;
  bool have_end = false;
  if (!parse_range_args(ctx, 3, start, end, is_bit, have_start, have_end)) {
    return;
  }
  std::string s;
  bool found = false;
  if (!read_string(ctx, ctx.arg(1), s, found)) {
    return;
  }
  if (!found) {
    ctx.reply().integer(want == 1 ? -1 : 0);
    return;
  }
  int64_t len = static_cast<int64_t>(s.size());
  if (!have_end) {
    end = (is_bit ? len * 8 : len) - 1;
  }
  int64_t first = 0;
  int64_t last = 0;
  if (!resolve_range(start, end, is_bit, len, first, last)) {
    ctx.reply().integer(-1);
    return;
  }
  for (int64_t bit = first; bit <= last; ++bit) {
    if ((bit & 7) == 0 && bit + 7 <= last) {
      auto byte = static_cast<unsigned char>(s[static_cast<size_t>(bit >> 3)]);
      if ((want == 1 && byte == 0) || (want == 0 && byte == 0xFF)) {
        bit += 7;
        continue;
      }
    }
    if (bit_at(s, bit) == (want == 1)) {
      ctx.reply().integer(bit);
      return;
    }
  }
  // Looking for a clear bit with no explicit end: the string is taken as padded with zeros.
  ctx.reply().integer(want == 0 && !have_end ? last + 1 : -1);
}

void cmd_bitop(CmdContext& ctx) {
  std::string_view op = ctx.arg(1);
  enum class Op { and_, or_, xor_, not_ } kind;
  if (iequals(op, "AND")) {
    kind = Op::and_;
  } else if (iequals(op, "OR")) {
    kind = Op::or_;
  } else if (iequals(op, "XOR")) {
    kind = Op::xor_;
  } else if (iequals(op, "NOT")) {
    kind = Op::not_;
  } else {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  if (kind == Op::not_ && ctx.argc() != 4) {
    ctx.reply().error(k_bitop_not);
    return;
  }
  std::vector<std::string> sources;
  size_t max_len = 0;
  for (size_t i = 3; i < ctx.argc(); ++i) {
    Entry* e = ctx.db().lookup(ctx.arg(i));
    if (e == nullptr) {
      sources.emplace_back();
      continue;
    }
    if (e->type() != ObjType::string) {
      ctx.reply().error(errors::k_wrong_type);
      return;
    }
    IntBuffer buf;
    sources.emplace_back(string_of(e, buf));
    max_len = std::max(max_len, sources.back().size());
  }
  std::string result(max_len, '\0');
  for (size_t j = 0; j < max_len; ++j) {
    auto byte_of = [&](size_t k) {
      return j < sources[k].size() ? static_cast<unsigned char>(sources[k][j]) : 0;
    };
    unsigned char r = byte_of(0);
    if (kind == Op::not_) {
      r = static_cast<unsigned char>(~r);
    }
    for (size_t k = 1; k < sources.size(); ++k) {
      unsigned char b = byte_of(k);
      r = kind == Op::and_ ? (r & b) : kind == Op::or_ ? (r | b) : (r ^ b);
    }
    result[j] = static_cast<char>(r);
  }
  std::string_view dest = ctx.arg(2);
  int db_id = ctx.session().db;
  if (result.empty()) {
    if (ctx.db().remove(dest)) {
      ctx.engine().signal_modified_key(db_id, dest);
      ctx.engine().notify_keyspace_event(k_notify_generic, "del", dest, db_id);
    }
  } else {
    ctx.db().set(dest, make_raw_string_spec(result));
    ctx.engine().signal_modified_key(db_id, dest);
    ctx.engine().notify_keyspace_event(k_notify_string, "set", dest, db_id);
  }
  ctx.reply().integer(static_cast<int64_t>(max_len));
}

// --- BITFIELD / BITFIELD_RO ---

constexpr std::string_view k_bad_bitfield_type =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but "
    "i64 is.";
constexpr std::string_view k_bad_overflow = "ERR Invalid OVERFLOW type specified";
constexpr std::string_view k_bitfield_ro_get = "ERR BITFIELD_RO only supports the GET subcommand";

enum class Overflow : uint8_t { wrap, sat, fail };
enum class FieldOp : uint8_t { get, set, incrby };

/// One parsed subcommand; every one is checked before any runs, as Valkey does.
struct BitfieldOp {
  uint64_t offset = 0;
  int64_t value = 0;  ///< SET's value or INCRBY's increment
  FieldOp op = FieldOp::get;
  Overflow overflow = Overflow::wrap;
  int bits = 0;
  bool is_signed = false;
};

/// `bits` bits at bit `offset` of `s` as an unsigned number, most significant first; bits past
/// the end read as zero.
uint64_t get_field(std::string_view s, uint64_t offset, int bits) {
  uint64_t v = 0;
  for (int j = 0; j < bits; ++j, ++offset) {
    uint64_t byte = offset >> 3;
    unsigned bit = 0;
    if (byte < s.size()) {
      bit = (static_cast<unsigned char>(s[static_cast<size_t>(byte)]) >> (7 - (offset & 7))) & 1u;
    }
    v = (v << 1) | bit;
  }
  return v;
}

/// The field read as two's complement of `bits` bits.
int64_t get_signed_field(std::string_view s, uint64_t offset, int bits) {
  uint64_t v = get_field(s, offset, bits);
  if (bits < 64 && (v & (uint64_t{1} << (bits - 1))) != 0) {
    v |= ~uint64_t{0} << bits;
  }
  return static_cast<int64_t>(v);
}

/// Writes the low `bits` bits of `v` at bit `offset` of `s` (already long enough).
void set_field(std::string& s, uint64_t offset, int bits, uint64_t v) {
  for (int j = 0; j < bits; ++j, ++offset) {
    unsigned bit = (v >> (bits - 1 - j)) & 1u;
    auto& c = reinterpret_cast<unsigned char&>(s[static_cast<size_t>(offset >> 3)]);
    unsigned shift = 7 - static_cast<unsigned>(offset & 7);
    c = static_cast<unsigned char>((c & ~(1u << shift)) | (bit << shift));
  }
}

/// Whether `value + incr` leaves an unsigned field of `bits` bits: 1 above, -1 below, 0 not;
/// `limit` gets what WRAP or SAT store instead. The comparisons are Valkey's, including
/// reading a SET value as unsigned (a negative one is above every field).
int unsigned_overflow(uint64_t value, int64_t incr, int bits, Overflow how, uint64_t& limit) {
  uint64_t max = (uint64_t{1} << bits) - 1;  // bits <= 63
  auto wrapped = [&] { return (value + static_cast<uint64_t>(incr)) & max; };
  if (value > max || (incr > 0 && incr > static_cast<int64_t>(max - value))) {
    limit = how == Overflow::sat ? max : wrapped();
    return 1;
  }
  if (incr < 0 && incr < -static_cast<int64_t>(value)) {
    limit = how == Overflow::sat ? 0 : wrapped();
    return -1;
  }
  return 0;
}

/// The signed counterpart: the headroom is computed with wrap-around as Valkey's C does,
/// so the same out-of-range SET values count as above or below.
int signed_overflow(int64_t value, int64_t incr, int bits, Overflow how, int64_t& limit) {
  int64_t max = bits == 64 ? INT64_MAX : static_cast<int64_t>((uint64_t{1} << (bits - 1)) - 1);
  int64_t min = -max - 1;
  auto sub = [](int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  };
  int64_t max_incr = sub(max, value);
  int64_t min_incr = sub(min, value);
  auto wrapped = [&] {
    uint64_t c = static_cast<uint64_t>(value) + static_cast<uint64_t>(incr);
    if (bits < 64) {
      uint64_t mask = ~uint64_t{0} << bits;
      c = (c & (uint64_t{1} << (bits - 1))) != 0 ? (c | mask) : (c & ~mask);
    }
    return static_cast<int64_t>(c);
  };
  if (value > max || (bits != 64 && incr > max_incr) ||
      (value >= 0 && incr > 0 && incr > max_incr)) {
    limit = how == Overflow::sat ? max : wrapped();
    return 1;
  }
  if (value < min || (bits != 64 && incr < min_incr) ||
      (value < 0 && incr < 0 && incr < min_incr)) {
    limit = how == Overflow::sat ? min : wrapped();
    return -1;
  }
  return 0;
}

/// Reads "i1".."i64" or "u1".."u63" (the sign letter is lower case only, as in Valkey).
bool parse_field_type(CmdContext& ctx, std::string_view arg, int& bits, bool& is_signed) {
  // Valkey reads the width with strlen: whatever follows a NUL byte is not looked at.
  std::string_view width = arg.substr(0, arg.find('\0'));
  int64_t n = 0;
  if (width.empty() || (width[0] != 'i' && width[0] != 'u') || !parse_i64(width.substr(1), n) ||
      n < 1 || n > (width[0] == 'i' ? 64 : 63)) {
    ctx.reply().error(k_bad_bitfield_type);
    return false;
  }
  is_signed = width[0] == 'i';
  bits = static_cast<int>(n);
  return true;
}

/// Reads a field offset: a bit number, or "#N" for the N-th field of this width.
bool parse_field_offset(CmdContext& ctx, std::string_view arg, int bits, uint64_t& out) {
  bool by_field = !arg.empty() && arg[0] == '#';
  int64_t v = 0;
  if (!parse_i64(by_field ? arg.substr(1) : arg, v)) {
    ctx.reply().error(k_bad_offset);
    return false;
  }
  if (by_field) {
    // Valkey multiplies in long long; the product wraps as it does there.
    v = static_cast<int64_t>(static_cast<uint64_t>(v) * static_cast<uint64_t>(bits));
  }
  if (v < 0 || static_cast<uint64_t>(v >> 3) >= ctx.engine().config().proto_max_bulk_len) {
    ctx.reply().error(k_bad_offset);
    return false;
  }
  out = static_cast<uint64_t>(v);
  return true;
}

/// Parses every subcommand from argument 2 on; false once an error reply is written.
bool parse_bitfield_ops(CmdContext& ctx, std::vector<BitfieldOp>& ops, bool& readonly,
                        uint64_t& highest_write_bit) {
  Overflow overflow = Overflow::wrap;
  for (size_t j = 2; j < ctx.argc(); ++j) {
    size_t remaining = ctx.argc() - j - 1;
    std::string_view sub = ctx.arg(j);
    BitfieldOp op;
    if (iequals(sub, "get") && remaining >= 2) {
      op.op = FieldOp::get;
    } else if (iequals(sub, "set") && remaining >= 3) {
      op.op = FieldOp::set;
    } else if (iequals(sub, "incrby") && remaining >= 3) {
      op.op = FieldOp::incrby;
    } else if (iequals(sub, "overflow") && remaining >= 1) {
      std::string_view how = ctx.arg(++j);
      if (iequals(how, "wrap")) {
        overflow = Overflow::wrap;
      } else if (iequals(how, "sat")) {
        overflow = Overflow::sat;
      } else if (iequals(how, "fail")) {
        overflow = Overflow::fail;
      } else {
        ctx.reply().error(k_bad_overflow);
        return false;
      }
      continue;
    } else {
      ctx.reply().error(errors::k_syntax);
      return false;
    }
    if (!parse_field_type(ctx, ctx.arg(j + 1), op.bits, op.is_signed) ||
        !parse_field_offset(ctx, ctx.arg(j + 2), op.bits, op.offset)) {
      return false;
    }
    if (op.op != FieldOp::get) {
      readonly = false;
      highest_write_bit =
          std::max(highest_write_bit, op.offset + static_cast<uint64_t>(op.bits) - 1);
      if (!parse_i64(ctx.arg(j + 3), op.value)) {
        ctx.reply().error(errors::k_not_integer);
        return false;
      }
    }
    op.overflow = overflow;
    ops.push_back(op);
    j += op.op == FieldOp::get ? 2 : 3;
  }
  return true;
}

/// Runs a SET or INCRBY on `s`, writing its reply; true when it wrote the field.
bool run_write_op(CmdContext& ctx, const BitfieldOp& op, std::string& s, bool& changed) {
  if (op.is_signed) {
    int64_t old = get_signed_field(s, op.offset, op.bits);
    int64_t limit = 0;
    int64_t next = 0;
    int over = 0;
    if (op.op == FieldOp::incrby) {
      over = signed_overflow(old, op.value, op.bits, op.overflow, limit);
      next =
          over != 0
              ? limit
              : static_cast<int64_t>(static_cast<uint64_t>(old) + static_cast<uint64_t>(op.value));
    } else {
      over = signed_overflow(op.value, 0, op.bits, op.overflow, limit);
      next = over != 0 ? limit : op.value;
    }
    if (over != 0 && op.overflow == Overflow::fail) {
      ctx.reply().null();
      return false;
    }
    ctx.reply().integer(op.op == FieldOp::incrby ? next : old);
    set_field(s, op.offset, op.bits, static_cast<uint64_t>(next));
    changed = old != next;
    return true;
  }
  uint64_t old = get_field(s, op.offset, op.bits);
  uint64_t limit = 0;
  uint64_t next = 0;
  int over = 0;
  if (op.op == FieldOp::incrby) {
    over = unsigned_overflow(old, op.value, op.bits, op.overflow, limit);
    next = over != 0 ? limit : old + static_cast<uint64_t>(op.value);
  } else {
    over = unsigned_overflow(static_cast<uint64_t>(op.value), 0, op.bits, op.overflow, limit);
    next = over != 0 ? limit : static_cast<uint64_t>(op.value);
  }
  if (over != 0 && op.overflow == Overflow::fail) {
    ctx.reply().null();
    return false;
  }
  ctx.reply().integer(static_cast<int64_t>(op.op == FieldOp::incrby ? next : old));
  set_field(s, op.offset, op.bits, next);
  changed = old != next;
  return true;
}

/// A GET's reply: the field read from `s`.
void reply_field(CmdContext& ctx, std::string_view s, const BitfieldOp& op) {
  ctx.reply().integer(op.is_signed ? get_signed_field(s, op.offset, op.bits)
                                   : static_cast<int64_t>(get_field(s, op.offset, op.bits)));
}

void bitfield(CmdContext& ctx, bool ro_command) {
  std::vector<BitfieldOp> ops;
  bool readonly = true;
  uint64_t highest_write_bit = 0;
  if (!parse_bitfield_ops(ctx, ops, readonly, highest_write_bit)) {
    return;
  }
  std::string_view key = ctx.arg(1);
  std::string s;
  if (readonly) {
    bool found = false;
    if (!read_string(ctx, key, s, found)) {
      return;
    }
    ctx.reply().array(ops.size());
    for (const BitfieldOp& op : ops) {
      reply_field(ctx, s, op);
    }
    return;
  }
  if (ro_command) {
    ctx.reply().error(k_bitfield_ro_get);
    return;
  }
  // As Valkey: the string is created or zero-padded up to the farthest bit written before
  // any operation runs, and stays so even when every write fails under OVERFLOW FAIL.
  uint64_t changes = 0;
  bool grown = false;
  bool typed = edit_bits(ctx, key, highest_write_bit, grown, [&](std::string& bits) {
    ctx.reply().array(ops.size());
    for (const BitfieldOp& op : ops) {
      if (op.op == FieldOp::get) {
        reply_field(ctx, bits, op);
        continue;
      }
      bool changed = false;
      if (run_write_op(ctx, op, bits, changed) && (grown || changed)) {
        ++changes;
      }
    }
  });
  if (!typed) {
    return;
  }
  if (changes > 0) {
    ctx.engine().signal_modified_key(ctx.session().db, key, changes);
    ctx.engine().notify_keyspace_event(k_notify_string, "setbit", key, ctx.session().db);
  }
}

void cmd_bitfield(CmdContext& ctx) {
  bitfield(ctx, false);
}

void cmd_bitfield_ro(CmdContext& ctx) {
  bitfield(ctx, true);
}

constexpr CommandSpec k_bitmap_commands[] = {
    {"setbit", 4, k_cmd_write | k_cmd_denyoom, 1, 1, 1, cmd_setbit, "@write @bitmap @slow"},
    {"getbit", 3, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_getbit, "@read @bitmap @fast"},
    {"bitcount", -2, k_cmd_readonly, 1, 1, 1, cmd_bitcount, "@read @bitmap @slow"},
    {"bitpos", -3, k_cmd_readonly, 1, 1, 1, cmd_bitpos, "@read @bitmap @slow"},
    {"bitop", -4, k_cmd_write | k_cmd_denyoom, 2, -1, 1, cmd_bitop, "@write @bitmap @slow"},
    {"bitfield", -2, k_cmd_write | k_cmd_denyoom, 1, 1, 1, cmd_bitfield, "@write @bitmap @slow"},
    {"bitfield_ro", -2, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_bitfield_ro,
     "@read @bitmap @fast"},
};

}  // namespace

void register_bitmap_family(CommandRegistry& registry) {
  registry.add(k_bitmap_commands);
}

}  // namespace keyshift::engine
