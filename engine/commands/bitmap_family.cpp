// Bitmap commands over strings: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP.
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/keyspace/string_value.hpp"
#include "engine/util/strconv.hpp"

#include <bit>
#include <string>

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
  Db& db = ctx.db();
  Entry* e = db.lookup(ctx.arg(1));
  std::string s;
  if (e != nullptr) {
    if (e->type() != ObjType::string) {
      ctx.reply().error(errors::k_wrong_type);
      return;
    }
    IntBuffer buf;
    s.assign(string_of(e, buf));
  }
  size_t byte = static_cast<size_t>(offset >> 3);
  // As Valkey: only a new key, a longer string or a flipped bit is a change (dirty, WATCH,
  // the setbit event).
  bool grown = e == nullptr || s.size() <= byte;
  if (s.size() <= byte) {
    s.resize(byte + 1, '\0');
  }
  int shift = 7 - static_cast<int>(offset & 7);
  auto c = static_cast<unsigned char>(s[byte]);
  int old = (c >> shift) & 1;
  int want = bit_arg[0] - '0';
  if (grown || old != want) {
    c = static_cast<unsigned char>((c & ~(1u << shift)) | (want << shift));
    s[byte] = static_cast<char>(c);
    db.set(ctx.arg(1), make_raw_string_spec(s), -1, true);
    ctx.engine().signal_modified_key(ctx.session().db, ctx.arg(1));
    ctx.engine().notify_keyspace_event(k_notify_string, "setbit", ctx.arg(1), ctx.session().db);
  }
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

constexpr CommandSpec k_bitmap_commands[] = {
    {"setbit", 4, k_cmd_write | k_cmd_denyoom, 1, 1, 1, cmd_setbit, "@write @bitmap @slow"},
    {"getbit", 3, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_getbit, "@read @bitmap @fast"},
    {"bitcount", -2, k_cmd_readonly, 1, 1, 1, cmd_bitcount, "@read @bitmap @slow"},
    {"bitpos", -3, k_cmd_readonly, 1, 1, 1, cmd_bitpos, "@read @bitmap @slow"},
    {"bitop", -4, k_cmd_write | k_cmd_denyoom, 2, -1, 1, cmd_bitop, "@write @bitmap @slow"},
};

}  // namespace

void register_bitmap_family(CommandRegistry& registry) {
  registry.add(k_bitmap_commands);
}

}  // namespace keyshift::engine
