// String commands: GET/SET and friends, counters, ranges.
#include "engine/commands/context.hpp"
#include "engine/commands/expire_args.hpp"
#include "engine/commands/families.hpp"
#include "engine/commands/string_edit.hpp"
#include "engine/keyspace/string_value.hpp"
#include "engine/util/status.hpp"
#include "engine/util/strconv.hpp"

#include <cmath>
#include <cstring>
#include <optional>

namespace keyshift::engine {
namespace {

// --- Operations -------------------------------------------------------------------------

/// The string at `key` (copied), nullopt when missing; wrong_type for other types.
Result<std::optional<std::string>> op_get(Db& db, std::string_view key) {
  Entry* e = db.lookup_read(key);
  if (e == nullptr) {
    return std::optional<std::string>();
  }
  if (e->type() != ObjType::string) {
    return OpStatus::wrong_type;
  }
  IntBuffer buf;
  return std::optional<std::string>(std::string(string_of(e, buf)));
}

Result<int64_t> op_incr_by(Db& db, std::string_view key, int64_t delta) {
  Entry* e = db.lookup(key);
  int64_t current = 0;
  if (e != nullptr) {
    if (e->type() != ObjType::string) {
      return OpStatus::wrong_type;
    }
    if (e->kind() == Entry::Kind::integer) {
      current = e->integer();
    } else {
      IntBuffer buf;
      std::string_view s = string_of(e, buf);
      if (s.size() > 20 || !parse_i64(s, current)) {
        return OpStatus::not_an_integer;
      }
    }
  }
  if ((delta < 0 && current < 0 && delta < INT64_MIN - current) ||
      (delta > 0 && current > 0 && delta > INT64_MAX - current)) {
    return OpStatus::overflow;
  }
  int64_t result = current + delta;
  if (e != nullptr && e->kind() == Entry::Kind::integer) {
    e->set_integer(result);
  } else {
    db.set(key, make_int_spec(result), -1, true);
  }
  return result;
}

struct SetParams {
  bool nx = false;
  bool xx = false;
  bool get = false;
  bool keep_ttl = false;
  int64_t expire_ms = -1;        // absolute
  bool already_expired = false;  // expire_ms is not after the command's time
};

// `expired`: the absolute expire time had already passed, so an existing key was deleted
// instead (Valkey's checkAlreadyExpired).
enum class SetOutcome : uint8_t { done, skipped, expired };

struct SetResult {
  SetOutcome outcome = SetOutcome::done;
  bool deleted = false;  // SetOutcome::expired removed an existing key
  std::optional<std::string> old_value;
};

Result<SetResult> op_set(Db& db, std::string_view key, std::string_view value, const SetParams& p) {
  SetResult r;
  Entry* e = db.lookup(key, false);
  if (p.get && e != nullptr) {
    if (e->type() != ObjType::string) {
      return OpStatus::wrong_type;
    }
    IntBuffer buf;
    r.old_value = std::string(string_of(e, buf));
  }
  if ((p.nx && e != nullptr) || (p.xx && e == nullptr)) {
    r.outcome = SetOutcome::skipped;
    return r;
  }
  if (p.already_expired) {
    r.outcome = SetOutcome::expired;
    r.deleted = e != nullptr && db.remove(key);
    return r;
  }
  db.set(key, make_string_spec(value), p.expire_ms, p.keep_ttl);
  return r;
}

// --- Handlers ---------------------------------------------------------------------------

/// Tells WATCH and keyspace notifications that the command changed `key` (event `event`).
void signal_write(CmdContext& ctx, std::string_view key, std::string_view event,
                  uint32_t type = k_notify_string) {
  int db = ctx.session().db;
  ctx.engine().signal_modified_key(db, key);
  ctx.engine().notify_keyspace_event(type, event, key, db);
}

/// The signals of a SET-like write: "set", plus "expire" when it gave the key a TTL, or
/// "del" when an already passed expire time removed the key instead.
void signal_set(CmdContext& ctx, std::string_view key, const SetParams& p, const SetResult& r) {
  if (r.outcome == SetOutcome::expired) {
    if (r.deleted) {
      signal_write(ctx, key, "del", k_notify_generic);
    }
    return;
  }
  if (r.outcome != SetOutcome::done) {
    return;
  }
  signal_write(ctx, key, "set");
  if (p.expire_ms >= 0) {
    ctx.engine().notify_keyspace_event(k_notify_generic, "expire", key, ctx.session().db);
  }
}

bool reply_status(CmdContext& ctx, OpStatus s) {
  switch (s) {
    case OpStatus::ok:
      return false;
    case OpStatus::wrong_type:
      ctx.reply().error(errors::k_wrong_type);
      break;
    case OpStatus::not_an_integer:
      ctx.reply().error(errors::k_not_integer);
      break;
    case OpStatus::not_a_float:
      ctx.reply().error(errors::k_not_float);
      break;
    case OpStatus::overflow:
      ctx.reply().error(errors::k_overflow);
      break;
    case OpStatus::out_of_range:
      ctx.reply().error(errors::k_offset_out_of_range);
      break;
    default:
      ctx.reply().error(errors::k_syntax);
      break;
  }
  return true;
}

void cmd_get(CmdContext& ctx) {
  Entry* e = ctx.db().lookup_read(ctx.arg(1));
  if (e == nullptr) {
    ctx.reply().null();
    return;
  }
  if (e->type() != ObjType::string) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  IntBuffer buf;
  ctx.reply().bulk(string_of(e, buf));
}

// Parses SET/GETEX style options from position `pos`; `allowed` limits them per command.
enum SetOption : uint32_t {
  k_opt_nx = 1,
  k_opt_xx = 2,
  k_opt_get = 4,
  k_opt_keepttl = 8,
  k_opt_ex = 16,
  k_opt_px = 32,
  k_opt_exat = 64,
  k_opt_pxat = 128,
  k_opt_persist = 256,
};

// The expire option a SET/GETEX named last (the last one wins); its number is only parsed
// when the command gets that far, as Valkey's getExpireMillisecondsOrReply does.
struct ExpireArg {
  uint32_t opt = 0;
  std::string_view text;
};

bool parse_set_options(CmdContext& ctx, size_t pos, uint32_t allowed, SetParams& p, bool& persist,
                       ExpireArg& expire) {
  uint32_t seen = 0;
  constexpr uint32_t k_expire_opts = k_opt_ex | k_opt_px | k_opt_exat | k_opt_pxat;
  for (size_t i = pos; i < ctx.argc(); ++i) {
    std::string_view a = ctx.arg(i);
    bool has_next = i + 1 < ctx.argc();
    uint32_t opt = 0;
    if (iequals(a, "NX")) {
      opt = k_opt_nx;
    } else if (iequals(a, "XX")) {
      opt = k_opt_xx;
    } else if (iequals(a, "GET")) {
      opt = k_opt_get;
    } else if (iequals(a, "KEEPTTL")) {
      opt = k_opt_keepttl;
    } else if (iequals(a, "PERSIST")) {
      opt = k_opt_persist;
    } else if (iequals(a, "EX") && has_next) {
      opt = k_opt_ex;
    } else if (iequals(a, "PX") && has_next) {
      opt = k_opt_px;
    } else if (iequals(a, "EXAT") && has_next) {
      opt = k_opt_exat;
    } else if (iequals(a, "PXAT") && has_next) {
      opt = k_opt_pxat;
    }
    if (opt == 0 || (opt & allowed) == 0) {
      ctx.reply().error(errors::k_syntax);
      return false;
    }
    // Repeating an option is allowed (the last value wins); only different ones clash.
    uint32_t others = seen & ~opt;
    bool conflict =
        (opt == k_opt_nx && (seen & k_opt_xx)) || (opt == k_opt_xx && (seen & k_opt_nx)) ||
        (opt == k_opt_keepttl && (seen & (k_expire_opts | k_opt_persist))) ||
        (opt == k_opt_persist && (seen & (k_expire_opts | k_opt_keepttl))) ||
        ((opt & k_expire_opts) && (others & (k_expire_opts | k_opt_keepttl | k_opt_persist)) != 0);
    if (conflict) {
      ctx.reply().error(errors::k_syntax);
      return false;
    }
    seen |= opt;
    if (opt & k_expire_opts) {
      expire.opt = opt;
      expire.text = ctx.arg(i + 1);
      ++i;
    }
  }
  p.nx = (seen & k_opt_nx) != 0;
  p.xx = (seen & k_opt_xx) != 0;
  p.get = (seen & k_opt_get) != 0;
  p.keep_ttl = (seen & k_opt_keepttl) != 0;
  persist = (seen & k_opt_persist) != 0;
  return true;
}

// Turns the expire option into p.expire_ms, replying with Valkey's error when it is not a
// number or not a valid time. Without an expire option it leaves p alone.
bool resolve_expire(CmdContext& ctx, const ExpireArg& expire, SetParams& p) {
  if (expire.opt == 0) {
    return true;
  }
  int64_t v = 0;
  if (!parse_i64(expire.text, v)) {
    ctx.reply().error(errors::k_not_integer);
    return false;
  }
  bool seconds = expire.opt == k_opt_ex || expire.opt == k_opt_exat;
  bool absolute = expire.opt == k_opt_exat || expire.opt == k_opt_pxat;
  if (!to_absolute_ms(v, seconds ? TtlUnit::seconds : TtlUnit::milliseconds, absolute, ctx.now_ms(),
                      p.expire_ms)) {
    ctx.reply().error(invalid_expire_error(ctx.command().full_name));
    return false;
  }
  return true;
}

void reply_set(CmdContext& ctx, const Result<SetResult>& r, bool get) {
  if (reply_status(ctx, r.status())) {
    return;
  }
  if (get) {
    if (r->old_value) {
      ctx.reply().bulk(*r->old_value);
    } else {
      ctx.reply().null();
    }
  } else if (r->outcome == SetOutcome::skipped) {
    ctx.reply().null();
  } else {  // done, or expired on arrival (Valkey answers OK)
    ctx.reply().ok();
  }
}

void cmd_set(CmdContext& ctx) {
  SetParams p;
  bool persist = false;
  ExpireArg expire;
  if (!parse_set_options(ctx, 3,
                         k_opt_nx | k_opt_xx | k_opt_get | k_opt_keepttl | k_opt_ex | k_opt_px |
                             k_opt_exat | k_opt_pxat,
                         p, persist, expire) ||
      !resolve_expire(ctx, expire, p)) {
    return;
  }
  p.already_expired = p.expire_ms >= 0 && p.expire_ms <= ctx.now_ms();
  auto r = op_set(ctx.db(), ctx.arg(1), ctx.arg(2), p);
  if (r) {
    signal_set(ctx, ctx.arg(1), p, *r);
  }
  reply_set(ctx, r, p.get);
}

void cmd_setnx(CmdContext& ctx) {
  SetParams p;
  p.nx = true;
  auto r = op_set(ctx.db(), ctx.arg(1), ctx.arg(2), p);
  signal_set(ctx, ctx.arg(1), p, *r);
  ctx.reply().integer(r->outcome == SetOutcome::done ? 1 : 0);
}

void setex_generic(CmdContext& ctx, TtlUnit unit) {
  int64_t v = 0;
  if (!parse_i64(ctx.arg(2), v)) {
    ctx.reply().error(errors::k_not_integer);
    return;
  }
  SetParams p;
  if (!to_absolute_ms(v, unit, false, ctx.now_ms(), p.expire_ms)) {
    ctx.reply().error(invalid_expire_error(ctx.command().full_name));
    return;
  }
  auto r = op_set(ctx.db(), ctx.arg(1), ctx.arg(3), p);
  signal_set(ctx, ctx.arg(1), p, *r);
  ctx.reply().ok();
}

void cmd_setex(CmdContext& ctx) {
  setex_generic(ctx, TtlUnit::seconds);
}
void cmd_psetex(CmdContext& ctx) {
  setex_generic(ctx, TtlUnit::milliseconds);
}

void cmd_getset(CmdContext& ctx) {
  SetParams p;
  p.get = true;
  auto r = op_set(ctx.db(), ctx.arg(1), ctx.arg(2), p);
  if (r) {
    signal_set(ctx, ctx.arg(1), p, *r);
  }
  reply_set(ctx, r, true);
}

void cmd_getdel(CmdContext& ctx) {
  auto r = op_get(ctx.db(), ctx.arg(1));
  if (reply_status(ctx, r.status())) {
    return;
  }
  if (!*r) {
    ctx.reply().null();
    return;
  }
  ctx.db().remove(ctx.arg(1));
  signal_write(ctx, ctx.arg(1), "del", k_notify_generic);
  ctx.reply().bulk(**r);
}

void cmd_getex(CmdContext& ctx) {
  SetParams p;
  bool persist = false;
  ExpireArg expire;
  if (!parse_set_options(ctx, 2, k_opt_ex | k_opt_px | k_opt_exat | k_opt_pxat | k_opt_persist, p,
                         persist, expire)) {
    return;
  }
  // Valkey's getexCommand: syntax first, then the lookup and type check, and only then the
  // expire value, so a missing key answers nil whatever the number.
  Db& db = ctx.db();
  Entry* e = db.lookup_read(ctx.arg(1));
  if (e == nullptr) {
    ctx.reply().null();
    return;
  }
  if (e->type() != ObjType::string) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  if (!resolve_expire(ctx, expire, p)) {
    return;
  }
  IntBuffer buf;
  std::string value(string_of(e, buf));
  if (p.expire_ms >= 0) {
    if (p.expire_ms <= ctx.now_ms()) {
      db.remove(ctx.arg(1));
      signal_write(ctx, ctx.arg(1), "del", k_notify_generic);
    } else {
      db.set_expire(e, p.expire_ms);
      signal_write(ctx, ctx.arg(1), "expire", k_notify_generic);
    }
  } else if (persist && e->has_expire()) {
    db.persist(e);
    signal_write(ctx, ctx.arg(1), "persist", k_notify_generic);
  }
  ctx.reply().bulk(value);
}

void cmd_mget(CmdContext& ctx) {
  ctx.reply().array(ctx.argc() - 1);
  for (size_t i = 1; i < ctx.argc(); ++i) {
    Entry* e = ctx.db().lookup_read(ctx.arg(i));
    if (e == nullptr || e->type() != ObjType::string) {
      ctx.reply().null();
      continue;
    }
    IntBuffer buf;
    ctx.reply().bulk(string_of(e, buf));
  }
}

void cmd_mset(CmdContext& ctx) {
  if (ctx.argc() % 2 == 0) {
    ctx.reply_arity_error();
    return;
  }
  for (size_t i = 1; i + 1 < ctx.argc(); i += 2) {
    ctx.db().set(ctx.arg(i), make_string_spec(ctx.arg(i + 1)));
    signal_write(ctx, ctx.arg(i), "set");
  }
  ctx.reply().ok();
}

void cmd_msetnx(CmdContext& ctx) {
  if (ctx.argc() % 2 == 0) {
    ctx.reply_arity_error();
    return;
  }
  for (size_t i = 1; i + 1 < ctx.argc(); i += 2) {
    if (ctx.db().exists(ctx.arg(i))) {
      ctx.reply().integer(0);
      return;
    }
  }
  for (size_t i = 1; i + 1 < ctx.argc(); i += 2) {
    ctx.db().set(ctx.arg(i), make_string_spec(ctx.arg(i + 1)));
    signal_write(ctx, ctx.arg(i), "set");
  }
  ctx.reply().integer(1);
}

bool check_string_length(CmdContext& ctx, uint64_t size) {
  if (size > ctx.engine().config().proto_max_bulk_len) {
    ctx.reply().error(errors::k_string_too_long);
    return false;
  }
  return true;
}

void cmd_append(CmdContext& ctx) {
  Db& db = ctx.db();
  std::string_view key = ctx.arg(1);
  std::string_view add = ctx.arg(2);
  Entry* e = db.lookup(key);
  if (e == nullptr) {
    db.set(key, make_raw_string_spec(add));
    signal_write(ctx, key, "append");
    ctx.reply().integer(static_cast<int64_t>(add.size()));
    return;
  }
  if (e->type() != ObjType::string) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  IntBuffer buf;
  size_t len = string_of(e, buf).size();
  if (!check_string_length(ctx, len + add.size())) {
    return;
  }
  size_t new_len = 0;
  edit_string(db, e, key, ctx.engine().memory(), [&](std::string& s) {
    s.append(add);
    new_len = s.size();
  });
  signal_write(ctx, key, "append");
  ctx.reply().integer(static_cast<int64_t>(new_len));
}

void cmd_strlen(CmdContext& ctx) {
  Entry* e = ctx.db().lookup_read(ctx.arg(1));
  if (e == nullptr) {
    ctx.reply().integer(0);
    return;
  }
  if (e->type() != ObjType::string) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  IntBuffer buf;
  ctx.reply().integer(static_cast<int64_t>(string_of(e, buf).size()));
}

void incr_generic(CmdContext& ctx, int64_t delta) {
  auto r = op_incr_by(ctx.db(), ctx.arg(1), delta);
  if (reply_status(ctx, r.status())) {
    return;
  }
  signal_write(ctx, ctx.arg(1), "incrby");
  ctx.reply().integer(*r);
}

void cmd_incr(CmdContext& ctx) {
  incr_generic(ctx, 1);
}
void cmd_decr(CmdContext& ctx) {
  incr_generic(ctx, -1);
}

void cmd_incrby(CmdContext& ctx) {
  int64_t d = 0;
  if (!parse_i64(ctx.arg(2), d)) {
    ctx.reply().error(errors::k_not_integer);
    return;
  }
  incr_generic(ctx, d);
}

void cmd_decrby(CmdContext& ctx) {
  int64_t d = 0;
  if (!parse_i64(ctx.arg(2), d)) {
    ctx.reply().error(errors::k_not_integer);
    return;
  }
  if (d == INT64_MIN) {
    ctx.reply().error("ERR decrement would overflow");
    return;
  }
  incr_generic(ctx, -d);
}

void cmd_incrbyfloat(CmdContext& ctx) {
  Db& db = ctx.db();
  Entry* e = db.lookup(ctx.arg(1));
  long double current = 0;
  if (e != nullptr) {
    if (e->type() != ObjType::string) {
      ctx.reply().error(errors::k_wrong_type);
      return;
    }
    IntBuffer buf;
    if (!parse_long_double(string_of(e, buf), current)) {
      ctx.reply().error(errors::k_not_float);
      return;
    }
  }
  long double incr = 0;
  if (!parse_long_double(ctx.arg(2), incr)) {
    ctx.reply().error(errors::k_not_float);
    return;
  }
  long double result = current + incr;
  std::string text;
  if (std::isnan(result) || std::isinf(result) || !format_long_double_human(result, text)) {
    ctx.reply().error(errors::k_incr_float_nan);
    return;
  }
  // Valkey stores the result as a string object, never int-encoded.
  Entry::ValueSpec spec = make_raw_string_spec(text);
  spec.encoding = text.size() <= k_embstr_max ? ObjEncoding::embstr : ObjEncoding::raw;
  db.set(ctx.arg(1), spec, -1, true);
  signal_write(ctx, ctx.arg(1), "incrbyfloat");
  ctx.reply().bulk(text);
}

void cmd_getrange(CmdContext& ctx) {
  int64_t start = 0;
  int64_t end = 0;
  if (!parse_i64(ctx.arg(2), start) || !parse_i64(ctx.arg(3), end)) {
    ctx.reply().error(errors::k_not_integer);
    return;
  }
  Entry* e = ctx.db().lookup_read(ctx.arg(1));
  if (e == nullptr) {
    ctx.reply().bulk("");
    return;
  }
  if (e->type() != ObjType::string) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  IntBuffer buf;
  std::string_view s = string_of(e, buf);
  int64_t len = static_cast<int64_t>(s.size());
  if (start < 0 && end < 0 && start > end) {
    ctx.reply().bulk("");
    return;
  }
  if (start < 0) {
    start += len;
  }
  if (end < 0) {
    end += len;
  }
  if (start < 0) {
    start = 0;
  }
  if (end < 0) {
    end = 0;
  }
  if (end >= len) {
    end = len - 1;
  }
  if (len == 0 || start > end) {
    ctx.reply().bulk("");
    return;
  }
  ctx.reply().bulk(s.substr(static_cast<size_t>(start), static_cast<size_t>(end - start + 1)));
}

void cmd_setrange(CmdContext& ctx) {
  int64_t offset = 0;
  if (!parse_i64(ctx.arg(2), offset)) {
    ctx.reply().error(errors::k_not_integer);
    return;
  }
  if (offset < 0) {
    ctx.reply().error(errors::k_offset_out_of_range);
    return;
  }
  std::string_view value = ctx.arg(3);
  Db& db = ctx.db();
  Entry* e = db.lookup(ctx.arg(1));
  if (e == nullptr) {
    if (value.empty()) {
      ctx.reply().integer(0);
      return;
    }
    if (!check_string_length(ctx, static_cast<uint64_t>(offset) + value.size())) {
      return;
    }
    std::string s(static_cast<size_t>(offset), '\0');
    s.append(value);
    db.set(ctx.arg(1), make_raw_string_spec(s));
    signal_write(ctx, ctx.arg(1), "setrange");
    ctx.reply().integer(static_cast<int64_t>(s.size()));
    return;
  }
  if (e->type() != ObjType::string) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  IntBuffer buf;
  size_t len = string_of(e, buf).size();
  if (value.empty()) {
    ctx.reply().integer(static_cast<int64_t>(len));
    return;
  }
  if (!check_string_length(ctx, static_cast<uint64_t>(offset) + value.size())) {
    return;
  }
  size_t new_len = 0;
  edit_string(db, e, ctx.arg(1), ctx.engine().memory(), [&](std::string& s) {
    size_t need = static_cast<size_t>(offset) + value.size();
    if (s.size() < need) {
      s.resize(need, '\0');
    }
    std::memcpy(s.data() + offset, value.data(), value.size());
    new_len = s.size();
  });
  signal_write(ctx, ctx.arg(1), "setrange");
  ctx.reply().integer(static_cast<int64_t>(new_len));
}

void cmd_lcs(CmdContext& ctx) {
  Db& db = ctx.db();
  Entry* ea = db.lookup_read(ctx.arg(1));
  Entry* eb = db.lookup_read(ctx.arg(2));
  if ((ea != nullptr && ea->type() != ObjType::string) ||
      (eb != nullptr && eb->type() != ObjType::string)) {
    ctx.reply().error(errors::k_lcs_not_strings);
    return;
  }
  IntBuffer abuf;
  IntBuffer bbuf;
  std::string_view a = ea != nullptr ? string_of(ea, abuf) : std::string_view();
  std::string_view b = eb != nullptr ? string_of(eb, bbuf) : std::string_view();
  bool want_len = false;
  bool want_idx = false;
  bool with_match_len = false;
  int64_t min_match_len = 0;
  for (size_t i = 3; i < ctx.argc(); ++i) {
    std::string_view opt = ctx.arg(i);
    if (iequals(opt, "IDX")) {
      want_idx = true;
    } else if (iequals(opt, "LEN")) {
      want_len = true;
    } else if (iequals(opt, "WITHMATCHLEN")) {
      with_match_len = true;
    } else if (iequals(opt, "MINMATCHLEN") && i + 1 < ctx.argc()) {
      if (!parse_i64(ctx.arg(i + 1), min_match_len)) {
        ctx.reply().error(errors::k_not_integer);
        return;
      }
      min_match_len = min_match_len < 0 ? 0 : min_match_len;
      ++i;
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  if (want_len && want_idx) {
    ctx.reply().error(errors::k_lcs_len_and_idx);
    return;
  }
  if (a.size() >= UINT32_MAX - 1 || b.size() >= UINT32_MAX - 1) {
    ctx.reply().error(errors::k_lcs_too_long);
    return;
  }
  // Dynamic programming over prefixes: cell (i, j) holds the LCS length of a[0..i) and
  // b[0..j), laid out row by row with blen + 1 columns.
  const uint64_t alen = a.size();
  const uint64_t blen = b.size();
  const uint64_t cells = (alen + 1) * (blen + 1);
  std::unique_ptr<uint32_t[]> table;
  if (cells <= UINT64_MAX / sizeof(uint32_t)) {
    if (cells * sizeof(uint32_t) > ctx.engine().config().proto_max_bulk_len) {
      ctx.reply().error(errors::k_lcs_over_bulk_len);
      return;
    }
    table.reset(new (std::nothrow) uint32_t[cells]);
  }
  if (!table) {
    ctx.reply().error(errors::k_lcs_alloc_failed);
    return;
  }
  auto at = [&](uint64_t i, uint64_t j) -> uint32_t& { return table[j + i * (blen + 1)]; };
  for (uint64_t i = 0; i <= alen; ++i) {
    for (uint64_t j = 0; j <= blen; ++j) {
      if (i == 0 || j == 0) {
        at(i, j) = 0;
      } else if (a[i - 1] == b[j - 1]) {
        at(i, j) = at(i - 1, j - 1) + 1;
      } else {
        uint32_t up = at(i - 1, j);
        uint32_t left = at(i, j - 1);
        at(i, j) = up > left ? up : left;
      }
    }
  }
  const uint32_t total = at(alen, blen);
  if (want_len) {
    ctx.reply().integer(total);
    return;
  }
  // Walk back from the bottom-right cell, collecting the common bytes from the end and,
  // for IDX, the maximal runs matched in both strings (reported last run first).
  ReplyBuilder& rb = ctx.reply();
  std::string common(total, '\0');
  size_t ranges_mark = 0;
  size_t ranges = 0;
  if (want_idx) {
    rb.map(2);
    rb.bulk("matches");
    ranges_mark = rb.begin_array();
  }
  const uint64_t unset = alen;  // a run start of alen means "no run open"
  uint64_t a_start = unset;
  uint64_t a_end = 0;
  uint64_t b_start = 0;
  uint64_t b_end = 0;
  uint64_t fill = total;
  uint64_t i = alen;
  uint64_t j = blen;
  while (i > 0 && j > 0) {
    bool close_run = false;
    if (a[i - 1] == b[j - 1]) {
      common[fill - 1] = a[i - 1];
      if (a_start == unset) {
        a_start = a_end = i - 1;
        b_start = b_end = j - 1;
      } else if (a_start == i && b_start == j) {
        --a_start;
        --b_start;
      } else {
        close_run = true;
      }
      if (a_start == 0 || b_start == 0) {
        close_run = true;
      }
      --fill;
      --i;
      --j;
    } else {
      if (at(i - 1, j) > at(i, j - 1)) {
        --i;
      } else {
        --j;
      }
      close_run = a_start != unset;
    }
    if (close_run) {
      uint64_t run = a_end - a_start + 1;
      if (want_idx && (min_match_len == 0 || run >= static_cast<uint64_t>(min_match_len))) {
        rb.array(with_match_len ? 3 : 2);
        rb.array(2);
        rb.integer(static_cast<int64_t>(a_start));
        rb.integer(static_cast<int64_t>(a_end));
        rb.array(2);
        rb.integer(static_cast<int64_t>(b_start));
        rb.integer(static_cast<int64_t>(b_end));
        if (with_match_len) {
          rb.integer(static_cast<int64_t>(run));
        }
        ++ranges;
      }
      a_start = unset;
    }
  }
  if (want_idx) {
    rb.end_array(ranges_mark, ranges);
    rb.bulk("len");
    rb.integer(total);
    return;
  }
  rb.bulk(common);
}

constexpr CommandSpec k_string_commands[] = {
    {"get", 2, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_get, "@read @string @fast"},
    {"set", -3, k_cmd_write | k_cmd_denyoom, 1, 1, 1, cmd_set, "@write @string @slow"},
    {"setnx", 3, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_setnx,
     "@write @string @fast"},
    {"setex", 4, k_cmd_write | k_cmd_denyoom, 1, 1, 1, cmd_setex, "@write @string @slow"},
    {"psetex", 4, k_cmd_write | k_cmd_denyoom, 1, 1, 1, cmd_psetex, "@write @string @slow"},
    {"getset", 3, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_getset,
     "@write @string @fast"},
    {"getdel", 2, k_cmd_write | k_cmd_fast, 1, 1, 1, cmd_getdel, "@write @string @fast"},
    {"getex", -2, k_cmd_write | k_cmd_fast, 1, 1, 1, cmd_getex, "@write @string @fast"},
    {"mget", -2, k_cmd_readonly | k_cmd_fast, 1, -1, 1, cmd_mget, "@read @string @fast"},
    {"mset", -3, k_cmd_write | k_cmd_denyoom, 1, -1, 2, cmd_mset, "@write @string @slow"},
    {"msetnx", -3, k_cmd_write | k_cmd_denyoom, 1, -1, 2, cmd_msetnx, "@write @string @slow"},
    {"append", 3, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_append,
     "@write @string @fast"},
    {"strlen", 2, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_strlen, "@read @string @fast"},
    {"incr", 2, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_incr,
     "@write @string @fast"},
    {"decr", 2, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_decr,
     "@write @string @fast"},
    {"incrby", 3, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_incrby,
     "@write @string @fast"},
    {"decrby", 3, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_decrby,
     "@write @string @fast"},
    {"incrbyfloat", 3, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_incrbyfloat,
     "@write @string @fast"},
    {"getrange", 4, k_cmd_readonly, 1, 1, 1, cmd_getrange, "@read @string @slow"},
    {"substr", 4, k_cmd_readonly, 1, 1, 1, cmd_getrange, "@read @string @slow"},
    {"setrange", 4, k_cmd_write | k_cmd_denyoom, 1, 1, 1, cmd_setrange, "@write @string @slow"},
    {"lcs", -3, k_cmd_readonly, 1, 2, 1, cmd_lcs, "@read @string @slow"},
};

}  // namespace

void register_string_family(CommandRegistry& registry) {
  registry.add(k_string_commands);
}

}  // namespace keyshift::engine
