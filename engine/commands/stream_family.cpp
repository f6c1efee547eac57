// Stream commands: XADD, XLEN, XRANGE/XREVRANGE, XDEL, XTRIM, XSETID, XINFO, XGROUP,
// XREAD/XREADGROUP (blocking too), XACK, XPENDING, XCLAIM and XAUTOCLAIM, replying and
// failing as Valkey 8's t_stream.c does.
#include "engine/blocking.hpp"
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/keyspace/stream_value.hpp"
#include "engine/persistence/snapshots.hpp"
#include "engine/session.hpp"
#include "engine/util/status.hpp"
#include "engine/util/strconv.hpp"

#include <climits>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {

namespace {

namespace err {
constexpr std::string_view k_invalid_id =
    "ERR Invalid stream ID specified as stream command argument";
constexpr std::string_view k_xadd_zero = "ERR The ID specified in XADD must be greater than 0-0";
constexpr std::string_view k_xadd_exhausted =
    "ERR The stream has exhausted the last possible ID, unable to add more items";
constexpr std::string_view k_xadd_small =
    "ERR The ID specified in XADD is equal or smaller than the target stream top item";
constexpr std::string_view k_too_large = "ERR Elements are too large to be stored";
constexpr std::string_view k_maxlen_minid =
    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
constexpr std::string_view k_maxlen_negative = "ERR The MAXLEN argument must be >= 0.";
constexpr std::string_view k_limit_negative = "ERR The LIMIT argument must be >= 0.";
constexpr std::string_view k_limit_no_strategy =
    "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy";
constexpr std::string_view k_xtrim_no_strategy =
    "ERR syntax error, XTRIM must be called with a trimming strategy";
constexpr std::string_view k_limit_no_approx =
    "ERR syntax error, LIMIT cannot be used without the special ~ option";
constexpr std::string_view k_invalid_start = "ERR invalid start ID for the interval";
constexpr std::string_view k_invalid_end = "ERR invalid end ID for the interval";
constexpr std::string_view k_entriesread = "ERR value for ENTRIESREAD must be positive or -1";
constexpr std::string_view k_xgroup_no_key =
    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to "
    "use the MKSTREAM option to create an empty stream automatically.";
constexpr std::string_view k_busygroup = "BUSYGROUP Consumer Group name already exists";
constexpr std::string_view k_entries_added_negative = "ERR entries_added must be positive";
constexpr std::string_view k_setid_below_max_deleted_arg =
    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id";
constexpr std::string_view k_setid_below_max_deleted =
    "ERR The ID specified in XSETID is smaller than current max_deleted_entry_id";
constexpr std::string_view k_setid_below_top =
    "ERR The ID specified in XSETID is smaller than the target stream top item";
constexpr std::string_view k_setid_entries_added =
    "ERR The entries_added specified in XSETID is smaller than the target stream length";
constexpr std::string_view k_group_only_xreadgroup =
    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.";
constexpr std::string_view k_noack_only_xreadgroup =
    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.";
constexpr std::string_view k_missing_group = "ERR Missing GROUP option for XREADGROUP";
constexpr std::string_view k_dollar_in_group =
    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of "
    "this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID "
    "would just return an empty result set.";
constexpr std::string_view k_plus_in_group =
    "ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history of "
    "this consumer by specifying a proper ID, or use the > ID to get new messages. The + ID "
    "would just return an empty result set.";
constexpr std::string_view k_gt_outside_group =
    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> "
    "<consumer> option.";
constexpr std::string_view k_last_zero = "ERR the stream last element ID is 0-0";
constexpr std::string_view k_xclaim_min_idle = "ERR Invalid min-idle-time argument for XCLAIM";
constexpr std::string_view k_xclaim_idle = "ERR Invalid IDLE option argument for XCLAIM";
constexpr std::string_view k_xclaim_time = "ERR Invalid TIME option argument for XCLAIM";
constexpr std::string_view k_xclaim_retry = "ERR Invalid RETRYCOUNT option argument for XCLAIM";
constexpr std::string_view k_xautoclaim_min_idle =
    "ERR Invalid min-idle-time argument for XAUTOCLAIM";
constexpr std::string_view k_count_positive = "ERR COUNT must be > 0";
constexpr std::string_view k_timeout_not_integer = "ERR timeout is not an integer or out of range";
}  // namespace err

// --- Arguments ----------------------------------------------------------------------------

/// Valkey's string2ull: a strict integer, else whatever strtoull takes whole.
bool valkey_string2ull(const std::string& s, uint64_t& out) {
  int64_t ll = 0;
  if (parse_i64(s, ll)) {
    if (ll < 0) {
      return false;
    }
    out = static_cast<uint64_t>(ll);
    return true;
  }
  errno = 0;
  char* end = nullptr;
  out = std::strtoull(s.c_str(), &end, 10);
  return errno != EINVAL && errno != ERANGE && !s.empty() && *end == '\0';
}

/// Valkey's streamGenericParseIDOrReply without the reply. `seq_given` (when not null)
/// accepts "<ms>-*" and tells whether the sequence was given.
bool parse_stream_id(std::string_view arg, StreamId& id, uint64_t missing_seq, bool strict,
                     bool* seq_given) {
  if (arg.size() > 127) {
    return false;
  }
  // As a C string: an embedded NUL ends it.
  std::string buf(arg.substr(0, arg.find('\0')));
  if (strict && (buf == "-" || buf == "+")) {
    return false;
  }
  if (seq_given != nullptr) {
    *seq_given = true;
  }
  if (buf == "-") {
    id = {};
    return true;
  }
  if (buf == "+") {
    id = StreamId::max();
    return true;
  }
  size_t dash = buf.find('-');
  uint64_t ms = 0;
  uint64_t seq = missing_seq;
  if (!valkey_string2ull(buf.substr(0, dash), ms)) {
    return false;
  }
  if (dash != std::string::npos) {
    std::string tail = buf.substr(dash + 1);
    if (seq_given != nullptr && tail == "*") {
      seq = 0;
      *seq_given = false;
    } else if (!valkey_string2ull(tail, seq)) {
      return false;
    }
  }
  id = {ms, seq};
  return true;
}

bool parse_id_or_reply(CmdContext& ctx, std::string_view arg, StreamId& id, uint64_t missing_seq,
                       bool strict, bool* seq_given = nullptr) {
  if (!parse_stream_id(arg, id, missing_seq, strict, seq_given)) {
    ctx.reply().error(err::k_invalid_id);
    return false;
  }
  return true;
}

/// A range bound: "(" makes it exclusive (then strict), as streamParseIntervalIDOrReply.
bool parse_interval_or_reply(CmdContext& ctx, std::string_view arg, StreamId& id, bool& exclusive,
                             uint64_t missing_seq) {
  exclusive = arg.size() > 1 && arg[0] == '(';
  if (exclusive) {
    return parse_id_or_reply(ctx, arg.substr(1), id, missing_seq, true);
  }
  return parse_id_or_reply(ctx, arg, id, missing_seq, false);
}

/// getLongLongFromObjectOrReply.
bool parse_ll_or_reply(CmdContext& ctx, std::string_view arg, int64_t& out,
                       std::string_view error = errors::k_not_integer) {
  if (!parse_i64(arg, out)) {
    ctx.reply().error(error);
    return false;
  }
  return true;
}

void reply_id(ReplyBuilder& rb, StreamId id) {
  rb.bulk(id.text());
}

void reply_entry(ReplyBuilder& rb, const StreamEntryView& e) {
  rb.array(2);
  reply_id(rb, e.id);
  rb.array(e.fields.size() * 2);
  char buf[24];
  for (const auto& [f, v] : e.fields) {
    rb.bulk(f.view(buf));
    rb.bulk(v.view(buf));
  }
}

std::string subcommand_error(const CmdContext& ctx) {
  return "ERR unknown subcommand or wrong number of arguments for '" +
         std::string(ctx.arg(1).substr(0, 128)) + "'. Try " + to_upper(ctx.arg(0)) + " HELP.";
}

// --- Keyspace access ----------------------------------------------------------------------

StreamValue* stream_of(Entry* e) {
  return static_cast<StreamValue*>(e->object());
}

/// Keeps the engine's memory count in step with changes to one stored stream.
class StreamEdit {
 public:
  StreamEdit(Engine& engine, StreamValue* s)
      : m_engine(engine), m_stream(s), m_before(s->bytes()) {}
  ~StreamEdit() {
    m_engine.memory().add(static_cast<int64_t>(m_stream->bytes()) - static_cast<int64_t>(m_before));
  }
  StreamEdit(const StreamEdit&) = delete;
  StreamEdit& operator=(const StreamEdit&) = delete;
  StreamValue* operator->() { return m_stream; }
  StreamValue& operator*() { return *m_stream; }

 private:
  Engine& m_engine;
  StreamValue* m_stream;
  size_t m_before;
};

/// The stream at `key` for reading: nullptr with `wrong` false when missing.
StreamValue* lookup_stream(Entry* e, bool& wrong) {
  wrong = e != nullptr && e->type() != ObjType::stream;
  return e == nullptr || wrong ? nullptr : stream_of(e);
}

StreamValue* create_stream(Db& db, std::string_view key) {
  auto* s = new StreamValue();
  Entry::ValueSpec spec;
  spec.kind = Entry::Kind::object;
  spec.object = s;
  spec.type = ObjType::stream;
  spec.encoding = ObjEncoding::stream;
  db.add(key, spec);
  return s;
}

StreamLimits stream_limits(const Engine& engine) {
  return {engine.config().stream_node_max_bytes, engine.config().stream_node_max_entries};
}

void notify(CmdContext& ctx, std::string_view event, std::string_view key) {
  ctx.engine().notify_keyspace_event(k_notify_stream, event, key, ctx.db().id());
}

/// Adds `n` to the changes since the last save for a write Valkey counts in server.dirty
/// without signalling a modified key (consumer-group state: XACK, XCLAIM, XGROUP SETID...),
/// so WATCH does not see it either.
void count_changes(CmdContext& ctx, uint64_t n) {
  ctx.engine().snapshots().note_changes(n);
}

// --- XADD / XTRIM -------------------------------------------------------------------------

struct AddTrimArgs {
  StreamId id;
  bool id_given = false;
  bool seq_given = false;
  bool no_mkstream = false;
  StreamTrim trim;
};

/// streamParseAddOrTrimArgsOrReply: the index of the ID argument (XADD), or -1 after an
/// error reply.
int parse_add_trim(CmdContext& ctx, AddTrimArgs& a, bool xadd) {
  size_t argc = ctx.argc();
  size_t i = 2;
  bool limit_given = false;
  for (; i < argc; ++i) {
    size_t more = argc - 1 - i;
    std::string_view opt = ctx.arg(i);
    if (xadd && opt == "*") {
      break;
    }
    if (iequals(opt, "maxlen") && more != 0) {
      if (a.trim.strategy != StreamTrim::Strategy::none) {
        ctx.reply().error(err::k_maxlen_minid);
        return -1;
      }
      a.trim.approx = false;
      std::string_view next = ctx.arg(i + 1);
      if (more >= 2 && next == "~") {
        a.trim.approx = true;
        ++i;
      } else if (more >= 2 && next == "=") {
        ++i;
      }
      int64_t maxlen = 0;
      if (!parse_ll_or_reply(ctx, ctx.arg(i + 1), maxlen)) {
        return -1;
      }
      if (maxlen < 0) {
        ctx.reply().error(err::k_maxlen_negative);
        return -1;
      }
      a.trim.maxlen = static_cast<uint64_t>(maxlen);
      ++i;
      a.trim.strategy = StreamTrim::Strategy::maxlen;
    } else if (iequals(opt, "minid") && more != 0) {
      if (a.trim.strategy != StreamTrim::Strategy::none) {
        ctx.reply().error(err::k_maxlen_minid);
        return -1;
      }
      a.trim.approx = false;
      std::string_view next = ctx.arg(i + 1);
      if (more >= 2 && next == "~") {
        a.trim.approx = true;
        ++i;
      } else if (more >= 2 && next == "=") {
        ++i;
      }
      if (!parse_id_or_reply(ctx, ctx.arg(i + 1), a.trim.minid, 0, true)) {
        return -1;
      }
      ++i;
      a.trim.strategy = StreamTrim::Strategy::minid;
    } else if (iequals(opt, "limit") && more != 0) {
      if (!parse_ll_or_reply(ctx, ctx.arg(i + 1), a.trim.limit)) {
        return -1;
      }
      if (a.trim.limit < 0) {
        ctx.reply().error(err::k_limit_negative);
        return -1;
      }
      limit_given = true;
      ++i;
    } else if (xadd && iequals(opt, "nomkstream")) {
      a.no_mkstream = true;
    } else if (xadd) {
      if (!parse_id_or_reply(ctx, opt, a.id, 0, true, &a.seq_given)) {
        return -1;
      }
      a.id_given = true;
      break;
    } else {
      ctx.reply().error(errors::k_syntax);
      return -1;
    }
  }
  if (a.trim.limit != 0 && a.trim.strategy == StreamTrim::Strategy::none) {
    ctx.reply().error(err::k_limit_no_strategy);
    return -1;
  }
  if (!xadd && a.trim.strategy == StreamTrim::Strategy::none) {
    ctx.reply().error(err::k_xtrim_no_strategy);
    return -1;
  }
  if (limit_given) {
    if (!a.trim.approx) {
      ctx.reply().error(err::k_limit_no_approx);
      return -1;
    }
  } else if (a.trim.approx) {
    // Bounds the work of one trim to about 100 nodes.
    int64_t entries = static_cast<int64_t>(
        std::min<uint64_t>(ctx.engine().config().stream_node_max_entries, INT64_MAX / 100));
    a.trim.limit = 100 * entries;
    if (a.trim.limit <= 0) {
      a.trim.limit = 10000;
    }
    if (a.trim.limit > 1000000) {
      a.trim.limit = 1000000;
    }
  } else {
    a.trim.limit = 0;
  }
  return static_cast<int>(i);
}

enum class AddError : uint8_t { none, id_too_small, too_large };

/// The ID XADD gives the new entry (streamAppendItem's choice), or an error.
AddError next_add_id(const StreamValue& s, const AddTrimArgs& a, int64_t now_ms, StreamId& id) {
  StreamId last = s.last_id();
  if (!a.id_given) {
    auto now = static_cast<uint64_t>(now_ms);
    if (now > last.ms) {
      id = {now, 0};
    } else {
      id = last;
      id.incr();
    }
  } else if (!a.seq_given) {
    if (last.ms == a.id.ms) {
      if (last.seq == UINT64_MAX) {
        return AddError::id_too_small;
      }
      id = {last.ms, last.seq + 1};
    } else {
      id = a.id;
    }
  } else {
    id = a.id;
  }
  return id <= last ? AddError::id_too_small : AddError::none;
}

void cmd_xadd(CmdContext& ctx) {
  AddTrimArgs a;
  int idpos = parse_add_trim(ctx, a, true);
  if (idpos < 0) {
    return;
  }
  size_t field_pos = static_cast<size_t>(idpos) + 1;
  if (ctx.argc() < field_pos + 2 || (ctx.argc() - field_pos) % 2 == 1) {
    ctx.reply_arity_error();
    return;
  }
  if (a.id_given && a.seq_given && a.id.is_zero()) {
    ctx.reply().error(err::k_xadd_zero);
    return;
  }
  Db& db = ctx.db();
  std::string_view key = ctx.arg(1);
  Entry* e = db.lookup(key);
  if (e != nullptr && e->type() != ObjType::stream) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  StreamValue* s = nullptr;
  if (e == nullptr) {
    if (a.no_mkstream) {
      ctx.reply().null();
      return;
    }
    s = create_stream(db, key);
  } else {
    s = stream_of(e);
  }
  if (s->last_id() == StreamId::max()) {
    ctx.reply().error(err::k_xadd_exhausted);
    return;
  }
  StreamId id;
  if (next_add_id(*s, a, ctx.now_ms(), id) != AddError::none) {
    ctx.reply().error(err::k_xadd_small);
    return;
  }
  std::span<const std::string_view> fv = ctx.args().subspan(field_pos);
  uint64_t total = 0;
  for (std::string_view x : fv) {
    total += x.size();
  }
  if (total > StreamValue::k_max_entry_bytes) {
    ctx.reply().error(err::k_too_large);
    return;
  }
  {
    StreamEdit edit(ctx.engine(), s);
    edit->append(id, fv, stream_limits(ctx.engine()));
  }
  reply_id(ctx.reply(), id);
  notify(ctx, "xadd", key);
  if (a.trim.strategy != StreamTrim::Strategy::none) {
    int64_t trimmed = 0;
    {
      StreamEdit edit(ctx.engine(), s);
      trimmed = edit->trim(a.trim);
    }
    if (trimmed != 0) {
      notify(ctx, "xtrim", key);
    }
  }
  // One change for the entry; entries trimmed by MAXLEN/MINID are not counted (xaddCommand).
  ctx.engine().signal_modified_key(db.id(), key);
  ctx.engine().signal_key_as_ready(db.id(), key);
}

void cmd_xtrim(CmdContext& ctx) {
  AddTrimArgs a;
  if (parse_add_trim(ctx, a, false) < 0) {
    return;
  }
  Db& db = ctx.db();
  std::string_view key = ctx.arg(1);
  bool wrong = false;
  StreamValue* s = lookup_stream(db.lookup(key), wrong);
  if (wrong) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  if (s == nullptr) {
    ctx.reply().integer(0);
    return;
  }
  int64_t deleted = 0;
  {
    StreamEdit edit(ctx.engine(), s);
    deleted = edit->trim(a.trim);
  }
  if (deleted != 0) {
    notify(ctx, "xtrim", key);
    // One change per trimmed entry, as Valkey's xtrimCommand counts.
    ctx.engine().signal_modified_key(db.id(), key, static_cast<uint64_t>(deleted));
  }
  ctx.reply().integer(deleted);
}

// --- XLEN / XRANGE / XDEL / XSETID ----------------------------------------------------------

void cmd_xlen(CmdContext& ctx) {
  bool wrong = false;
  StreamValue* s = lookup_stream(ctx.db().lookup_read(ctx.arg(1)), wrong);
  if (wrong) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  ctx.reply().integer(s == nullptr ? 0 : static_cast<int64_t>(s->length()));
}

/// Replies with up to `count` (0: all) entries of [start, end]; returns how many.
size_t reply_range(ReplyBuilder& rb, const StreamValue& s, StreamId start, StreamId end,
                   size_t count, bool rev) {
  size_t mark = rb.begin_array();
  size_t n = 0;
  s.range(start, end, rev, [&](const StreamEntryView& e) {
    reply_entry(rb, e);
    ++n;
    return count == 0 || n < count;
  });
  rb.end_array(mark, n);
  return n;
}

void xrange_generic(CmdContext& ctx, bool rev) {
  std::string_view start_arg = rev ? ctx.arg(3) : ctx.arg(2);
  std::string_view end_arg = rev ? ctx.arg(2) : ctx.arg(3);
  StreamId start;
  StreamId end;
  bool start_ex = false;
  bool end_ex = false;
  if (!parse_interval_or_reply(ctx, start_arg, start, start_ex, 0)) {
    return;
  }
  if (start_ex && !start.incr()) {
    ctx.reply().error(err::k_invalid_start);
    return;
  }
  if (!parse_interval_or_reply(ctx, end_arg, end, end_ex, UINT64_MAX)) {
    return;
  }
  if (end_ex && !end.decr()) {
    ctx.reply().error(err::k_invalid_end);
    return;
  }
  int64_t count = -1;
  for (size_t j = 4; j < ctx.argc(); ++j) {
    size_t additional = ctx.argc() - j - 1;
    if (iequals(ctx.arg(j), "COUNT") && additional >= 1) {
      if (!parse_ll_or_reply(ctx, ctx.arg(j + 1), count)) {
        return;
      }
      count = std::max<int64_t>(count, 0);
      ++j;
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  bool wrong = false;
  StreamValue* s = lookup_stream(ctx.db().lookup_read(ctx.arg(1)), wrong);
  if (wrong) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  if (s == nullptr) {
    ctx.reply().array(0);
    return;
  }
  if (count == 0) {
    ctx.reply().null_array();
    return;
  }
  reply_range(ctx.reply(), *s, start, end, count == -1 ? 0 : static_cast<size_t>(count), rev);
}

void cmd_xrange(CmdContext& ctx) {
  xrange_generic(ctx, false);
}

void cmd_xrevrange(CmdContext& ctx) {
  xrange_generic(ctx, true);
}

void cmd_xdel(CmdContext& ctx) {
  Db& db = ctx.db();
  std::string_view key = ctx.arg(1);
  bool wrong = false;
  StreamValue* s = lookup_stream(db.lookup(key), wrong);
  if (wrong) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  if (s == nullptr) {
    ctx.reply().integer(0);
    return;
  }
  std::vector<StreamId> ids(ctx.argc() - 2);
  for (size_t j = 2; j < ctx.argc(); ++j) {
    if (!parse_id_or_reply(ctx, ctx.arg(j), ids[j - 2], 0, true)) {
      return;
    }
  }
  int64_t deleted = 0;
  bool first_entry = false;
  {
    StreamEdit edit(ctx.engine(), s);
    for (StreamId id : ids) {
      if (!edit->remove(id)) {
        continue;
      }
      first_entry = first_entry || id == edit->first_id();
      if (id > edit->max_deleted_id()) {
        edit->set_max_deleted_id(id);
      }
      ++deleted;
    }
    if (deleted != 0) {
      if (edit->length() == 0) {
        edit->set_first_id({});
      } else if (first_entry) {
        StreamId f;
        edit->edge_id(true, f);
        edit->set_first_id(f);
      }
    }
  }
  if (deleted != 0) {
    ctx.engine().signal_modified_key(db.id(), key, static_cast<uint64_t>(deleted));
    notify(ctx, "xdel", key);
  }
  ctx.reply().integer(deleted);
}

void cmd_xsetid(CmdContext& ctx) {
  StreamId id;
  StreamId max_xdel;
  int64_t entries_added = -1;
  if (!parse_id_or_reply(ctx, ctx.arg(2), id, 0, true)) {
    return;
  }
  for (size_t i = 3; i < ctx.argc();) {
    size_t more = ctx.argc() - 1 - i;
    std::string_view opt = ctx.arg(i);
    if (iequals(opt, "ENTRIESADDED") && more != 0) {
      if (!parse_ll_or_reply(ctx, ctx.arg(i + 1), entries_added)) {
        return;
      }
      if (entries_added < 0) {
        ctx.reply().error(err::k_entries_added_negative);
        return;
      }
      i += 2;
    } else if (iequals(opt, "MAXDELETEDID") && more != 0) {
      if (!parse_id_or_reply(ctx, ctx.arg(i + 1), max_xdel, 0, true)) {
        return;
      }
      if (id < max_xdel) {
        ctx.reply().error(err::k_setid_below_max_deleted_arg);
        return;
      }
      i += 2;
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  Db& db = ctx.db();
  std::string_view key = ctx.arg(1);
  Entry* e = db.lookup(key);
  if (e == nullptr) {
    ctx.reply().error(errors::k_no_such_key);
    return;
  }
  if (e->type() != ObjType::stream) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  StreamValue* s = stream_of(e);
  if (id < s->max_deleted_id()) {
    ctx.reply().error(err::k_setid_below_max_deleted);
    return;
  }
  if (s->length() > 0) {
    StreamId maxid;
    s->edge_id(false, maxid);
    if (id < maxid) {
      ctx.reply().error(err::k_setid_below_top);
      return;
    }
    if (entries_added != -1 && s->length() > static_cast<uint64_t>(entries_added)) {
      ctx.reply().error(err::k_setid_entries_added);
      return;
    }
  }
  s->set_last_id(id);
  if (entries_added != -1) {
    s->set_entries_added(static_cast<uint64_t>(entries_added));
  }
  if (!max_xdel.is_zero()) {
    s->set_max_deleted_id(max_xdel);
  }
  ctx.reply().ok();
  count_changes(ctx, 1);
  notify(ctx, "xsetid", key);
  // Valkey's xsetidCommand signals no modified key.
}

// --- Consumer groups ----------------------------------------------------------------------

/// streamReplyWithCGLag.
void reply_lag(ReplyBuilder& rb, const StreamValue& s, const StreamGroup& g) {
  if (s.entries_added() == 0) {
    rb.integer(0);
    return;
  }
  auto added = static_cast<int64_t>(s.entries_added());
  if (g.entries_read != -1 && !s.range_has_tombstones(g.last_id, StreamId::max())) {
    rb.integer(added - g.entries_read);
    return;
  }
  int64_t read = s.estimate_distance(g.last_id);
  if (read != -1) {
    rb.integer(added - read);
  } else {
    rb.null();
  }
}

/// streamCreateConsumer with notification ("xgroup-createconsumer") and one change.
StreamConsumer* create_consumer(CmdContext& ctx, StreamValue& s, StreamGroup& g,
                                std::string_view name, std::string_view key) {
  StreamConsumer* c = nullptr;
  {
    StreamEdit edit(ctx.engine(), &s);
    c = edit->create_consumer(g, name, ctx.now_ms());
  }
  if (c != nullptr) {
    count_changes(ctx, 1);  // streamCreateConsumer with SCC_DEFAULT, wherever it is called
    notify(ctx, "xgroup-createconsumer", key);
  }
  return c;
}

StreamConsumer* find_consumer(StreamGroup& g, std::string_view name) {
  auto it = g.consumers.find(std::string(name));
  return it == g.consumers.end() ? nullptr : it->second.get();
}

void cmd_xgroup_help(CmdContext& ctx) {
  reply_help(ctx, {
                      "CREATE <key> <groupname> <id|$> [option]",
                      "    Create a new consumer group. Options are:",
                      "    * MKSTREAM",
                      "      Create the empty stream if it does not exist.",
                      "    * ENTRIESREAD entries_read",
                      "      Set the group's entries_read counter (internal use).",
                      "CREATECONSUMER <key> <groupname> <consumer>",
                      "    Create a new consumer in the specified group.",
                      "DELCONSUMER <key> <groupname> <consumer>",
                      "    Remove the specified consumer.",
                      "DESTROY <key> <groupname>",
                      "    Remove the specified group.",
                      "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
                      "    Set the current group ID and entries_read counter.",
                  });
}

/// XGROUP CREATE/SETID/DESTROY/CREATECONSUMER/DELCONSUMER (xgroupCommand).
void cmd_xgroup(CmdContext& ctx) {
  std::string_view opt = ctx.arg(1);
  bool create = iequals(opt, "CREATE");
  bool setid = iequals(opt, "SETID");
  bool mkstream = false;
  int64_t entries_read = -1;
  for (size_t i = 5; i < ctx.argc();) {
    if (create && iequals(ctx.arg(i), "MKSTREAM")) {
      mkstream = true;
      ++i;
    } else if ((create || setid) && iequals(ctx.arg(i), "ENTRIESREAD") && i + 1 < ctx.argc()) {
      if (!parse_ll_or_reply(ctx, ctx.arg(i + 1), entries_read)) {
        return;
      }
      if (entries_read < 0 && entries_read != -1) {
        ctx.reply().error(err::k_entriesread);
        return;
      }
      i += 2;
    } else {
      ctx.reply().error(subcommand_error(ctx));
      return;
    }
  }
  Db& db = ctx.db();
  std::string_view key = ctx.arg(2);
  std::string_view group_name = ctx.arg(3);
  Entry* e = db.lookup(key);
  StreamValue* s = nullptr;
  if (e != nullptr) {
    if (e->type() != ObjType::stream) {
      ctx.reply().error(errors::k_wrong_type);
      return;
    }
    s = stream_of(e);
  }
  StreamGroup* g = nullptr;
  if (!mkstream) {
    if (s == nullptr) {
      ctx.reply().error(err::k_xgroup_no_key);
      return;
    }
    g = s->group(group_name);
    if (g == nullptr && (setid || iequals(opt, "CREATECONSUMER") || iequals(opt, "DELCONSUMER"))) {
      ctx.reply().error("NOGROUP No such consumer group '" + std::string(group_name) +
                        "' for key name '" + std::string(key) + "'");
      return;
    }
  }
  size_t argc = ctx.argc();
  if (create && argc >= 5 && argc <= 8) {
    StreamId id;
    if (ctx.arg(4) == "$") {
      id = s != nullptr ? s->last_id() : StreamId{};
    } else if (!parse_id_or_reply(ctx, ctx.arg(4), id, 0, true)) {
      return;
    }
    if (s == nullptr) {
      s = create_stream(db, key);
      // MKSTREAM signals the new key but counts no change: the group's creation does.
      ctx.engine().signal_modified_key(db.id(), key, 0);
    }
    StreamGroup* created = nullptr;
    {
      StreamEdit edit(ctx.engine(), s);
      created = edit->create_group(group_name, id, entries_read);
    }
    if (created == nullptr) {
      ctx.reply().error(err::k_busygroup);
      return;
    }
    ctx.reply().ok();
    count_changes(ctx, 1);
    notify(ctx, "xgroup-create", key);
  } else if (setid && (argc == 5 || argc == 7)) {
    StreamId id;
    if (ctx.arg(4) == "$") {
      id = s->last_id();
    } else if (!parse_id_or_reply(ctx, ctx.arg(4), id, 0, false)) {
      return;
    }
    g->last_id = id;
    g->entries_read = entries_read;
    ctx.reply().ok();
    count_changes(ctx, 1);
    notify(ctx, "xgroup-setid", key);
  } else if (iequals(opt, "DESTROY") && argc == 4) {
    if (g == nullptr) {
      ctx.reply().integer(0);
      return;
    }
    {
      StreamEdit edit(ctx.engine(), s);
      edit->destroy_group(group_name);
    }
    ctx.reply().integer(1);
    count_changes(ctx, 1);
    notify(ctx, "xgroup-destroy", key);
    // Consumers blocked on the group get -NOGROUP.
    ctx.engine().signal_key_as_ready(db.id(), key);
  } else if (iequals(opt, "CREATECONSUMER") && argc == 5) {
    StreamConsumer* c = create_consumer(ctx, *s, *g, ctx.arg(4), key);
    ctx.reply().integer(c != nullptr ? 1 : 0);
  } else if (iequals(opt, "DELCONSUMER") && argc == 5) {
    int64_t pending = 0;
    StreamConsumer* c = find_consumer(*g, ctx.arg(4));
    if (c != nullptr) {
      StreamEdit edit(ctx.engine(), s);
      pending = static_cast<int64_t>(edit->delete_consumer(*g, c));
    }
    if (c != nullptr) {
      count_changes(ctx, 1);
      notify(ctx, "xgroup-delconsumer", key);
    }
    ctx.reply().integer(pending);
  } else {
    ctx.reply().error(subcommand_error(ctx));
  }
}

void cmd_xack(CmdContext& ctx) {
  bool wrong = false;
  StreamValue* s = lookup_stream(ctx.db().lookup_read(ctx.arg(1)), wrong);
  if (wrong) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  StreamGroup* g = s != nullptr ? s->group(ctx.arg(2)) : nullptr;
  if (g == nullptr) {
    ctx.reply().integer(0);
    return;
  }
  std::vector<StreamId> ids(ctx.argc() - 3);
  for (size_t j = 3; j < ctx.argc(); ++j) {
    if (!parse_id_or_reply(ctx, ctx.arg(j), ids[j - 3], 0, true)) {
      return;
    }
  }
  int64_t acked = 0;
  {
    StreamEdit edit(ctx.engine(), s);
    for (StreamId id : ids) {
      acked += edit->remove_pending(*g, id) ? 1 : 0;
    }
  }
  count_changes(ctx, static_cast<uint64_t>(acked));  // one per acknowledged entry
  ctx.reply().integer(acked);
}

std::string nogroup_error(std::string_view key, std::string_view group) {
  return "NOGROUP No such key '" + std::string(key) + "' or consumer group '" + std::string(group) +
         "'";
}

/// The stream at argument 1 and its group named by argument 2, as XPENDING/XCLAIM/XAUTOCLAIM
/// look them up; replies WRONGTYPE or NOGROUP and returns nullptr when either is missing.
StreamGroup* group_or_reply(CmdContext& ctx, StreamValue*& s) {
  bool wrong = false;
  s = lookup_stream(ctx.db().lookup_read(ctx.arg(1)), wrong);
  if (wrong) {
    ctx.reply().error(errors::k_wrong_type);
    return nullptr;
  }
  StreamGroup* g = s != nullptr ? s->group(ctx.arg(2)) : nullptr;
  if (g == nullptr) {
    ctx.reply().error(nogroup_error(ctx.arg(1), ctx.arg(2)));
  }
  return g;
}

void cmd_xpending(CmdContext& ctx) {
  size_t argc = ctx.argc();
  bool justinfo = argc == 3;
  if (argc != 3 && (argc < 6 || argc > 9)) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  StreamId start;
  StreamId end;
  int64_t count = 0;
  int64_t minidle = 0;
  std::optional<std::string_view> consumer_name;
  if (argc >= 6) {
    size_t startidx = 3;
    if (iequals(ctx.arg(3), "IDLE")) {
      if (!parse_ll_or_reply(ctx, ctx.arg(4), minidle)) {
        return;
      }
      if (argc < 8) {
        ctx.reply().error(errors::k_syntax);
        return;
      }
      startidx += 2;
    }
    if (!parse_ll_or_reply(ctx, ctx.arg(startidx + 2), count)) {
      return;
    }
    count = std::max<int64_t>(count, 0);
    bool start_ex = false;
    bool end_ex = false;
    if (!parse_interval_or_reply(ctx, ctx.arg(startidx), start, start_ex, 0)) {
      return;
    }
    if (start_ex && !start.incr()) {
      ctx.reply().error(err::k_invalid_start);
      return;
    }
    if (!parse_interval_or_reply(ctx, ctx.arg(startidx + 1), end, end_ex, UINT64_MAX)) {
      return;
    }
    if (end_ex && !end.decr()) {
      ctx.reply().error(err::k_invalid_end);
      return;
    }
    if (startidx + 3 < argc) {
      consumer_name = ctx.arg(startidx + 3);
    }
  }
  StreamValue* s = nullptr;
  StreamGroup* g = group_or_reply(ctx, s);
  if (g == nullptr) {
    return;
  }
  ReplyBuilder& rb = ctx.reply();
  if (justinfo) {
    rb.array(4);
    rb.integer(static_cast<int64_t>(g->pel.size()));
    if (g->pel.empty()) {
      rb.null();
      rb.null();
      rb.null_array();
      return;
    }
    reply_id(rb, g->pel.begin()->first);
    reply_id(rb, g->pel.rbegin()->first);
    size_t mark = rb.begin_array();
    size_t n = 0;
    for (const auto& [name, c] : g->consumers) {
      if (c->pel.empty()) {
        continue;
      }
      rb.array(2);
      rb.bulk(name);
      rb.bulk(std::to_string(c->pel.size()));
      ++n;
    }
    rb.end_array(mark, n);
    return;
  }
  const StreamConsumer* consumer = nullptr;
  if (consumer_name) {
    consumer = find_consumer(*g, *consumer_name);
    if (consumer == nullptr) {
      rb.array(0);
      return;
    }
  }
  int64_t now = ctx.now_ms();
  size_t mark = rb.begin_array();
  size_t n = 0;
  auto emit = [&](StreamId id, const StreamNack& nack) {
    if (minidle != 0 && now - nack.delivery_time_ms < minidle) {
      return;
    }
    ++n;
    --count;
    rb.array(4);
    reply_id(rb, id);
    rb.bulk(nack.consumer->name);
    rb.integer(std::max<int64_t>(now - nack.delivery_time_ms, 0));
    rb.integer(static_cast<int64_t>(nack.delivery_count));
  };
  if (consumer != nullptr) {
    for (auto it = consumer->pel.lower_bound(start);
         count != 0 && it != consumer->pel.end() && it->first <= end; ++it) {
      emit(it->first, *it->second);
    }
  } else {
    for (auto it = g->pel.lower_bound(start); count != 0 && it != g->pel.end() && it->first <= end;
         ++it) {
      emit(it->first, it->second);
    }
  }
  rb.end_array(mark, n);
}

/// Writes one entry by ID as streamReplyWithRange(..., RAWENTRIES) does; false if absent.
bool reply_entry_by_id(ReplyBuilder& rb, const StreamValue& s, StreamId id) {
  bool found = false;
  s.range(id, id, false, [&](const StreamEntryView& e) {
    reply_entry(rb, e);
    found = true;
    return false;
  });
  return found;
}

void cmd_xclaim(CmdContext& ctx) {
  std::string_view key = ctx.arg(1);
  StreamValue* s = nullptr;
  StreamGroup* g = group_or_reply(ctx, s);
  if (g == nullptr) {
    return;
  }
  int64_t minidle = 0;
  if (!parse_ll_or_reply(ctx, ctx.arg(4), minidle, err::k_xclaim_min_idle)) {
    return;
  }
  minidle = std::max<int64_t>(minidle, 0);
  std::vector<StreamId> ids;
  size_t j = 5;
  for (; j < ctx.argc(); ++j) {
    StreamId id;
    if (!parse_stream_id(ctx.arg(j), id, 0, true, nullptr)) {
      break;
    }
    ids.push_back(id);
  }
  int64_t now = ctx.now_ms();
  int64_t retrycount = -1;
  int64_t deliverytime = -1;
  bool force = false;
  bool justid = false;
  StreamId last_id;
  for (; j < ctx.argc(); ++j) {
    size_t more = ctx.argc() - 1 - j;
    std::string_view opt = ctx.arg(j);
    if (iequals(opt, "FORCE")) {
      force = true;
    } else if (iequals(opt, "JUSTID")) {
      justid = true;
    } else if (iequals(opt, "IDLE") && more != 0) {
      ++j;
      if (!parse_ll_or_reply(ctx, ctx.arg(j), deliverytime, err::k_xclaim_idle)) {
        return;
      }
      deliverytime = now - deliverytime;
    } else if (iequals(opt, "TIME") && more != 0) {
      ++j;
      if (!parse_ll_or_reply(ctx, ctx.arg(j), deliverytime, err::k_xclaim_time)) {
        return;
      }
    } else if (iequals(opt, "RETRYCOUNT") && more != 0) {
      ++j;
      if (!parse_ll_or_reply(ctx, ctx.arg(j), retrycount, err::k_xclaim_retry)) {
        return;
      }
    } else if (iequals(opt, "LASTID") && more != 0) {
      ++j;
      if (!parse_id_or_reply(ctx, ctx.arg(j), last_id, 0, true)) {
        return;
      }
    } else {
      ctx.reply().error("ERR Unrecognized XCLAIM option '" + std::string(opt) + "'");
      return;
    }
  }
  // LASTID that moves the group counts one change, unless a claimed or cleared entry
  // (which carries it along in Valkey's propagation) is counted instead.
  bool last_id_moved = false;
  if (last_id > g->last_id) {
    g->last_id = last_id;
    last_id_moved = true;
  }
  if (deliverytime != -1) {
    if (deliverytime < 0 || deliverytime > now) {
      deliverytime = now;
    }
  } else {
    deliverytime = now;
  }
  StreamConsumer* consumer = find_consumer(*g, ctx.arg(3));
  if (consumer == nullptr) {
    consumer = create_consumer(ctx, *s, *g, ctx.arg(3), key);
  }
  consumer->seen_time_ms = now;
  ReplyBuilder& rb = ctx.reply();
  size_t mark = rb.begin_array();
  size_t n = 0;
  uint64_t changes = 0;  // one per claimed entry and per entry cleared from the PEL
  StreamEdit edit(ctx.engine(), s);
  for (StreamId id : ids) {
    auto it = g->pel.find(id);
    StreamNack* nack = it == g->pel.end() ? nullptr : &it->second;
    if (!edit->contains(id)) {
      if (nack != nullptr) {
        edit->remove_pending(*g, id);
        ++changes;
      }
      continue;
    }
    if (force && nack == nullptr) {
      nack = edit->add_pending(*g, id, nullptr, now, 1);
      // Valkey's streamCreateNACK starts the count at 1 before the claim below counts.
    }
    if (nack == nullptr) {
      continue;
    }
    if (nack->consumer != nullptr && minidle != 0 && now - nack->delivery_time_ms < minidle) {
      continue;
    }
    nack->delivery_time_ms = deliverytime;
    if (retrycount >= 0) {
      nack->delivery_count = static_cast<uint64_t>(retrycount);
    } else if (!justid) {
      ++nack->delivery_count;
    }
    if (nack->consumer != consumer) {
      edit->transfer_pending(*g, id, *nack, consumer);
    }
    if (justid) {
      reply_id(rb, id);
    } else {
      reply_entry_by_id(rb, *s, id);
    }
    ++n;
    ++changes;
    consumer->active_time_ms = now;
  }
  rb.end_array(mark, n);
  count_changes(ctx, changes != 0 ? changes : (last_id_moved ? 1 : 0));
}

void cmd_xautoclaim(CmdContext& ctx) {
  int64_t minidle = 0;
  if (!parse_ll_or_reply(ctx, ctx.arg(4), minidle, err::k_xautoclaim_min_idle)) {
    return;
  }
  minidle = std::max<int64_t>(minidle, 0);
  StreamId start;
  bool start_ex = false;
  if (!parse_interval_or_reply(ctx, ctx.arg(5), start, start_ex, 0)) {
    return;
  }
  if (start_ex && !start.incr()) {
    ctx.reply().error(err::k_invalid_start);
    return;
  }
  int64_t count = 100;
  bool justid = false;
  constexpr int64_t k_attempts_factor = 10;
  for (size_t j = 6; j < ctx.argc(); ++j) {
    size_t more = ctx.argc() - 1 - j;
    if (iequals(ctx.arg(j), "COUNT") && more != 0) {
      int64_t max_count = LONG_MAX / 16;  // LONG_MAX / max(sizeof(streamID), attempts factor)
      if (!parse_i64(ctx.arg(j + 1), count) || count < 1 || count > max_count) {
        ctx.reply().error(err::k_count_positive);
        return;
      }
      ++j;
    } else if (iequals(ctx.arg(j), "JUSTID")) {
      justid = true;
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  std::string_view key = ctx.arg(1);
  StreamValue* s = nullptr;
  StreamGroup* g = group_or_reply(ctx, s);
  if (g == nullptr) {
    return;
  }
  StreamConsumer* consumer = find_consumer(*g, ctx.arg(3));
  if (consumer == nullptr) {
    consumer = create_consumer(ctx, *s, *g, ctx.arg(3), key);
  }
  int64_t now = ctx.now_ms();
  consumer->seen_time_ms = now;
  int64_t attempts = count * k_attempts_factor;
  ReplyBuilder& rb = ctx.reply();
  std::vector<StreamId> deleted;
  std::string claimed;  // the entries, written after the cursor
  ReplyBuilder body(claimed, rb.resp());
  size_t n = 0;
  StreamEdit edit(ctx.engine(), s);
  auto it = g->pel.lower_bound(start);
  while (attempts-- != 0 && count != 0 && it != g->pel.end()) {
    StreamId id = it->first;
    StreamNack& nack = it->second;
    if (!edit->contains(id)) {
      ++it;
      edit->remove_pending(*g, id);
      deleted.push_back(id);
      --count;
      continue;  // counted with the deleted IDs below
    }
    if (minidle != 0 && now - nack.delivery_time_ms < minidle) {
      ++it;
      continue;
    }
    nack.delivery_time_ms = now;
    if (!justid) {
      ++nack.delivery_count;
    }
    if (nack.consumer != consumer) {
      edit->transfer_pending(*g, id, nack, consumer);
    }
    if (justid) {
      reply_id(body, id);
    } else {
      reply_entry_by_id(body, *s, id);
    }
    ++n;
    --count;
    consumer->active_time_ms = now;
    ++it;
  }
  // One change per claimed entry and per entry cleared from the PEL (xautoclaimCommand).
  count_changes(ctx, n + deleted.size());
  StreamId end_id = it == g->pel.end() ? StreamId{} : it->first;
  rb.array(3);
  reply_id(rb, end_id);
  rb.array(n);
  rb.raw(claimed);
  rb.array(deleted.size());
  for (StreamId id : deleted) {
    reply_id(rb, id);
  }
}

// --- XINFO --------------------------------------------------------------------------------

/// Nodes of Valkey's rax holding the node keys (XINFO STREAM radix-tree-nodes): a compressed
/// trie of 16-byte keys where a run of single-child bytes is one node, a branch is one node,
/// and every key ends in a node of its own.
int64_t rax_nodes(const std::vector<std::string>& keys, size_t lo, size_t hi, size_t depth) {
  if (depth == 16) {
    return 1;
  }
  // Longest common run from `depth` over keys[lo, hi) (sorted, so compare the ends).
  size_t common = depth;
  while (common < 16 && keys[lo][common] == keys[hi - 1][common]) {
    ++common;
  }
  if (common > depth) {
    return 1 + rax_nodes(keys, lo, hi, common);
  }
  int64_t total = 1;
  size_t i = lo;
  while (i < hi) {
    size_t j = i + 1;
    while (j < hi && keys[j][depth] == keys[i][depth]) {
      ++j;
    }
    total += rax_nodes(keys, i, j, depth + 1);
    i = j;
  }
  return total;
}

int64_t radix_tree_nodes(const StreamValue& s) {
  if (s.nodes().empty()) {
    return 1;  // an empty rax is its root
  }
  std::vector<std::string> keys;
  keys.reserve(s.nodes().size());
  for (const auto& [master, lp] : s.nodes()) {
    keys.push_back(master.encode());
  }
  return rax_nodes(keys, 0, keys.size(), 0);
}

void xinfo_stream(CmdContext& ctx, StreamValue& s) {
  bool full = true;
  int64_t count = 10;
  size_t optc = ctx.argc() - 3;
  if (optc == 0) {
    full = false;
  } else {
    if ((optc != 1 && optc != 3) || !iequals(ctx.arg(3), "full")) {
      ctx.reply().error(subcommand_error(ctx));
      return;
    }
    if (optc == 3) {
      if (!iequals(ctx.arg(4), "count")) {
        ctx.reply().error(subcommand_error(ctx));
        return;
      }
      if (!parse_ll_or_reply(ctx, ctx.arg(5), count)) {
        return;
      }
      if (count < 0) {
        count = 10;
      }
    }
  }
  ReplyBuilder& rb = ctx.reply();
  rb.map(full ? 9 : 10);
  rb.bulk("length");
  rb.integer(static_cast<int64_t>(s.length()));
  rb.bulk("radix-tree-keys");
  rb.integer(static_cast<int64_t>(s.nodes().size()));
  rb.bulk("radix-tree-nodes");
  rb.integer(radix_tree_nodes(s));
  rb.bulk("last-generated-id");
  reply_id(rb, s.last_id());
  rb.bulk("max-deleted-entry-id");
  reply_id(rb, s.max_deleted_id());
  rb.bulk("entries-added");
  rb.integer(static_cast<int64_t>(s.entries_added()));
  rb.bulk("recorded-first-entry-id");
  reply_id(rb, s.first_id());
  if (!full) {
    rb.bulk("groups");
    rb.integer(static_cast<int64_t>(s.groups().size()));
    for (bool rev : {false, true}) {
      rb.bulk(rev ? "last-entry" : "first-entry");
      bool emitted = false;
      s.range({}, StreamId::max(), rev, [&](const StreamEntryView& e) {
        reply_entry(rb, e);
        emitted = true;
        return false;
      });
      if (!emitted) {
        rb.null();
      }
    }
    return;
  }
  auto limit = static_cast<size_t>(count);
  rb.bulk("entries");
  reply_range(rb, s, {}, StreamId::max(), limit, false);
  rb.bulk("groups");
  rb.array(s.groups().size());
  for (const auto& [name, g] : s.groups()) {
    rb.map(7);
    rb.bulk("name");
    rb.bulk(name);
    rb.bulk("last-delivered-id");
    reply_id(rb, g.last_id);
    rb.bulk("entries-read");
    if (g.entries_read != -1) {
      rb.integer(g.entries_read);
    } else {
      rb.null();
    }
    rb.bulk("lag");
    reply_lag(rb, s, g);
    rb.bulk("pel-count");
    rb.integer(static_cast<int64_t>(g.pel.size()));
    rb.bulk("pending");
    size_t mark = rb.begin_array();
    size_t n = 0;
    for (const auto& [id, nack] : g.pel) {
      if (limit != 0 && n >= limit) {
        break;
      }
      rb.array(4);
      reply_id(rb, id);
      rb.bulk(nack.consumer != nullptr ? std::string_view(nack.consumer->name) : "");
      rb.integer(nack.delivery_time_ms);
      rb.integer(static_cast<int64_t>(nack.delivery_count));
      ++n;
    }
    rb.end_array(mark, n);
    rb.bulk("consumers");
    rb.array(g.consumers.size());
    for (const auto& [cname, c] : g.consumers) {
      rb.map(5);
      rb.bulk("name");
      rb.bulk(cname);
      rb.bulk("seen-time");
      rb.integer(c->seen_time_ms);
      rb.bulk("active-time");
      rb.integer(c->active_time_ms);
      rb.bulk("pel-count");
      rb.integer(static_cast<int64_t>(c->pel.size()));
      rb.bulk("pending");
      size_t cmark = rb.begin_array();
      size_t cn = 0;
      for (const auto& [id, nack] : c->pel) {
        if (limit != 0 && cn >= limit) {
          break;
        }
        rb.array(3);
        reply_id(rb, id);
        rb.integer(nack->delivery_time_ms);
        rb.integer(static_cast<int64_t>(nack->delivery_count));
        ++cn;
      }
      rb.end_array(cmark, cn);
    }
  }
}

void cmd_xinfo_help(CmdContext& ctx) {
  reply_help(ctx, {
                      "CONSUMERS <key> <groupname>",
                      "    Show consumers of <groupname>.",
                      "GROUPS <key>",
                      "    Show the stream consumer groups.",
                      "STREAM <key> [FULL [COUNT <count>]",
                      "    Show information about the stream.",
                  });
}

void cmd_xinfo(CmdContext& ctx) {
  std::string_view opt = ctx.arg(1);
  std::string_view key = ctx.arg(2);
  Entry* e = ctx.db().lookup_read(key);
  if (e == nullptr) {
    ctx.reply().error(errors::k_no_such_key);
    return;
  }
  if (e->type() != ObjType::stream) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  StreamValue& s = *stream_of(e);
  ReplyBuilder& rb = ctx.reply();
  if (iequals(opt, "CONSUMERS") && ctx.argc() == 4) {
    StreamGroup* g = s.group(ctx.arg(3));
    if (g == nullptr) {
      rb.error("NOGROUP No such consumer group '" + std::string(ctx.arg(3)) + "' for key name '" +
               std::string(key) + "'");
      return;
    }
    int64_t now = ctx.now_ms();
    rb.array(g->consumers.size());
    for (const auto& [name, c] : g->consumers) {
      int64_t inactive = c->active_time_ms != -1 ? now - c->active_time_ms : -1;
      int64_t idle = std::max<int64_t>(now - c->seen_time_ms, 0);
      rb.map(4);
      rb.bulk("name");
      rb.bulk(name);
      rb.bulk("pending");
      rb.integer(static_cast<int64_t>(c->pel.size()));
      rb.bulk("idle");
      rb.integer(idle);
      rb.bulk("inactive");
      rb.integer(inactive);
    }
  } else if (iequals(opt, "GROUPS") && ctx.argc() == 3) {
    rb.array(s.groups().size());
    for (const auto& [name, g] : s.groups()) {
      rb.map(6);
      rb.bulk("name");
      rb.bulk(name);
      rb.bulk("consumers");
      rb.integer(static_cast<int64_t>(g.consumers.size()));
      rb.bulk("pending");
      rb.integer(static_cast<int64_t>(g.pel.size()));
      rb.bulk("last-delivered-id");
      reply_id(rb, g.last_id);
      rb.bulk("entries-read");
      if (g.entries_read != -1) {
        rb.integer(g.entries_read);
      } else {
        rb.null();
      }
      rb.bulk("lag");
      reply_lag(rb, s, g);
    }
  } else if (iequals(opt, "STREAM")) {
    xinfo_stream(ctx, s);
  } else {
    rb.error(subcommand_error(ctx));
  }
}

// --- XREAD / XREADGROUP -------------------------------------------------------------------

/// The last live entry's ID (streamLastValidID): 0-0 when none.
StreamId last_valid_id(const StreamValue& s) {
  StreamId id;
  s.edge_id(false, id);
  return id;
}

/// Serves a group read of entries after `start` (streamReplyWithRange with a group):
/// advances the group's last ID and read counter, and records pending entries.
void reply_group_range(CmdContext& ctx, StreamValue& s, StreamId start, size_t count,
                       StreamGroup& g, StreamConsumer& c, bool noack) {
  ReplyBuilder& rb = ctx.reply();
  int64_t now = ctx.now_ms();
  // Collect first: recording pending entries must not run inside the node walk.
  std::vector<StreamId> ids;
  size_t mark = rb.begin_array();
  s.range(start, StreamId::max(), false, [&](const StreamEntryView& e) {
    reply_entry(rb, e);
    ids.push_back(e.id);
    return count == 0 || ids.size() < count;
  });
  rb.end_array(mark, ids.size());
  StreamEdit edit(ctx.engine(), &s);
  for (StreamId id : ids) {
    if (id > g.last_id) {
      if (g.entries_read != -1 && !s.range_has_tombstones(id, StreamId::max())) {
        ++g.entries_read;
      } else if (s.entries_added() != 0) {
        g.entries_read = s.estimate_distance(id);
      }
      g.last_id = id;
    }
    if (noack) {
      continue;
    }
    auto it = g.pel.find(id);
    if (it == g.pel.end()) {
      edit->add_pending(g, id, &c, now, 1);
    } else {
      edit->transfer_pending(g, id, it->second, &c);
      it->second.delivery_time_ms = now;
      it->second.delivery_count = 1;
    }
    c.active_time_ms = now;
  }
}

/// XREADGROUP with an ID other than ">": the consumer's own pending entries from `start`.
void reply_consumer_history(CmdContext& ctx, const StreamValue& s, StreamId start, size_t count,
                            StreamConsumer& c) {
  ReplyBuilder& rb = ctx.reply();
  int64_t now = ctx.now_ms();
  size_t mark = rb.begin_array();
  size_t n = 0;
  for (auto it = c.pel.lower_bound(start); it != c.pel.end() && (count == 0 || n < count); ++it) {
    if (!reply_entry_by_id(rb, s, it->first)) {
      rb.array(2);
      reply_id(rb, it->first);
      rb.null_array();
    } else {
      it->second->delivery_time_ms = now;
      ++it->second->delivery_count;
    }
    ++n;
  }
  rb.end_array(mark, n);
}

/// getTimeoutFromObjectOrReply in milliseconds.
bool parse_ms_timeout(CmdContext& ctx, std::string_view arg, int64_t& deadline) {
  int64_t t = 0;
  if (!parse_i64(arg, t)) {
    ctx.reply().error(err::k_timeout_not_integer);
    return false;
  }
  if (t < 0) {
    ctx.reply().error(errors::k_timeout_negative);
    return false;
  }
  if (t > 0) {
    int64_t now = ctx.now_ms();
    if (t > INT64_MAX - now) {
      ctx.reply().error(errors::k_timeout_out_of_range);
      return false;
    }
    t += now;
  }
  deadline = t;
  return true;
}

void cmd_xread(CmdContext& ctx) {
  bool xreadgroup = ctx.arg(0).size() == 10;
  bool block = false;
  int64_t deadline = 0;
  int64_t count = 0;
  size_t streams_arg = 0;
  size_t streams_count = 0;
  bool noack = false;
  std::optional<std::string_view> group_name;
  std::string_view consumer_name;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    size_t more = ctx.argc() - i - 1;
    std::string_view o = ctx.arg(i);
    if (iequals(o, "BLOCK") && more != 0) {
      ++i;
      if (!parse_ms_timeout(ctx, ctx.arg(i), deadline)) {
        return;
      }
      block = true;
    } else if (iequals(o, "COUNT") && more != 0) {
      ++i;
      if (!parse_ll_or_reply(ctx, ctx.arg(i), count)) {
        return;
      }
      count = std::max<int64_t>(count, 0);
    } else if (iequals(o, "STREAMS") && more != 0) {
      streams_arg = i + 1;
      streams_count = ctx.argc() - streams_arg;
      if (streams_count % 2 != 0) {
        ctx.reply().error(std::string("ERR Unbalanced '") + (xreadgroup ? "xreadgroup" : "xread") +
                          "' list of streams: for each stream key an ID or '" +
                          (xreadgroup ? ">" : "$") + "' must be specified.");
        return;
      }
      streams_count /= 2;
      break;
    } else if (iequals(o, "GROUP") && more >= 2) {
      if (!xreadgroup) {
        ctx.reply().error(err::k_group_only_xreadgroup);
        return;
      }
      group_name = ctx.arg(i + 1);
      consumer_name = ctx.arg(i + 2);
      i += 2;
    } else if (iequals(o, "NOACK")) {
      if (!xreadgroup) {
        ctx.reply().error(err::k_noack_only_xreadgroup);
        return;
      }
      noack = true;
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  if (streams_arg == 0) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  if (xreadgroup && !group_name) {
    ctx.reply().error(err::k_missing_group);
    return;
  }
  Db& db = ctx.db();
  std::vector<StreamId> ids(streams_count);
  std::vector<StreamGroup*> groups(streams_count, nullptr);
  std::vector<bool> dollar(streams_count, false);
  for (size_t k = 0; k < streams_count; ++k) {
    std::string_view key = ctx.arg(streams_arg + k);
    std::string_view arg = ctx.arg(streams_arg + streams_count + k);
    bool wrong = false;
    StreamValue* s = lookup_stream(db.lookup_read(key), wrong);
    if (wrong) {
      ctx.reply().error(errors::k_wrong_type);
      return;
    }
    if (group_name) {
      groups[k] = s != nullptr ? s->group(*group_name) : nullptr;
      if (groups[k] == nullptr) {
        ctx.reply().error("NOGROUP No such key '" + std::string(key) + "' or consumer group '" +
                          std::string(*group_name) + "' in XREADGROUP with GROUP option");
        return;
      }
    }
    if (arg == "$") {
      if (xreadgroup) {
        ctx.reply().error(err::k_dollar_in_group);
        return;
      }
      ids[k] = s != nullptr ? s->last_id() : StreamId{};
      dollar[k] = true;
    } else if (arg == "+") {
      if (xreadgroup) {
        ctx.reply().error(err::k_plus_in_group);
        return;
      }
      if (s != nullptr) {
        ids[k] = s->last_id();
        if (!ids[k].decr()) {
          ctx.reply().error(err::k_last_zero);
          return;
        }
      } else {
        ids[k] = {};
      }
    } else if (arg == ">") {
      if (!xreadgroup) {
        ctx.reply().error(err::k_gt_outside_group);
        return;
      }
      ids[k] = StreamId::max();
    } else if (!parse_id_or_reply(ctx, arg, ids[k], 0, true)) {
      return;
    }
  }
  ReplyBuilder& rb = ctx.reply();
  size_t mark = 0;
  size_t served = 0;
  for (size_t k = 0; k < streams_count; ++k) {
    std::string_view key = ctx.arg(streams_arg + k);
    Entry* e = db.lookup_read(key);
    if (e == nullptr || e->type() != ObjType::stream) {
      continue;
    }
    StreamValue* s = stream_of(e);
    StreamId gt = ids[k];
    bool serve = false;
    bool history = false;
    StreamConsumer* consumer = nullptr;
    if (group_name) {
      if (gt != StreamId::max()) {
        serve = true;
        history = true;
      } else if (s->length() != 0 && last_valid_id(*s) > groups[k]->last_id) {
        serve = true;
        gt = groups[k]->last_id;
      }
      consumer = find_consumer(*groups[k], consumer_name);
      if (consumer == nullptr) {
        consumer = create_consumer(ctx, *s, *groups[k], consumer_name, key);
      }
      consumer->seen_time_ms = ctx.now_ms();
    } else if (s->length() != 0 && last_valid_id(*s) > gt) {
      serve = true;
    }
    if (!serve) {
      continue;
    }
    if (served++ == 0) {
      mark = rb.begin_array();
    }
    StreamId start = gt;
    start.incr();
    if (rb.resp() == 2) {
      rb.array(2);
    }
    rb.bulk(key);
    auto limit = static_cast<size_t>(count);
    if (group_name) {
      count_changes(ctx, 1);  // one per stream a group read serves, whatever it delivers
    }
    if (!group_name) {
      reply_range(rb, *s, start, StreamId::max(), limit, false);
    } else if (history) {
      reply_consumer_history(ctx, *s, start, limit, *consumer);
    } else {
      reply_group_range(ctx, *s, start, limit, *groups[k], *consumer, noack);
    }
  }
  if (served != 0) {
    if (rb.resp() == 2) {
      rb.end_array(mark, served);
    } else {
      rb.end_map(mark, served);
    }
    return;
  }
  if (block) {
    if (!may_block(ctx)) {
      rb.null_array();
      return;
    }
    // "$" becomes the last ID now, so that running the command again when data arrives
    // serves what came after this moment.
    std::vector<std::string> argv(ctx.args().begin(), ctx.args().end());
    for (size_t k = 0; k < streams_count; ++k) {
      if (dollar[k]) {
        argv[streams_arg + streams_count + k] = ids[k].text();
      }
    }
    std::vector<std::string_view> views(argv.begin(), argv.end());
    ctx.engine().blocking().block(ctx.session(), ctx.command(), views,
                                  ctx.args().subspan(streams_arg, streams_count), BlockType::stream,
                                  deadline, xreadgroup);
    return;
  }
  rb.null_array();
}

constexpr uint32_t k_write_fast = k_cmd_write | k_cmd_fast;

constexpr CommandSpec k_stream_commands[] = {
    {"xadd", -5, k_write_fast | k_cmd_denyoom, 1, 1, 1, cmd_xadd, "@write @stream @fast"},
    {"xlen", 2, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_xlen, "@read @stream @fast"},
    {"xrange", -4, k_cmd_readonly, 1, 1, 1, cmd_xrange, "@read @stream @slow"},
    {"xrevrange", -4, k_cmd_readonly, 1, 1, 1, cmd_xrevrange, "@read @stream @slow"},
    {"xdel", -3, k_write_fast, 1, 1, 1, cmd_xdel, "@write @stream @fast"},
    {"xtrim", -4, k_cmd_write, 1, 1, 1, cmd_xtrim, "@write @stream @slow"},
    {"xsetid", -3, k_write_fast | k_cmd_denyoom, 1, 1, 1, cmd_xsetid, "@write @stream @fast"},
    {"xack", -4, k_write_fast, 1, 1, 1, cmd_xack, "@write @stream @fast"},
    {"xpending", -3, k_cmd_readonly, 1, 1, 1, cmd_xpending, "@read @stream @slow"},
    {"xclaim", -6, k_write_fast, 1, 1, 1, cmd_xclaim, "@write @stream @fast"},
    {"xautoclaim", -6, k_write_fast, 1, 1, 1, cmd_xautoclaim, "@write @stream @fast"},
    {"xread", -4, k_cmd_blocking | k_cmd_readonly | k_cmd_movablekeys, 0, 0, 0, cmd_xread,
     "@read @stream @slow @blocking"},
    {"xreadgroup", -7, k_cmd_blocking | k_cmd_write | k_cmd_movablekeys, 0, 0, 0, cmd_xread,
     "@write @stream @slow @blocking"},
    {"xgroup", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"xgroup|create", -5, k_cmd_write | k_cmd_denyoom, 2, 2, 1, cmd_xgroup, "@write @stream @slow"},
    {"xgroup|createconsumer", 5, k_cmd_write | k_cmd_denyoom, 2, 2, 1, cmd_xgroup,
     "@write @stream @slow"},
    {"xgroup|delconsumer", 5, k_cmd_write, 2, 2, 1, cmd_xgroup, "@write @stream @slow"},
    {"xgroup|destroy", 4, k_cmd_write, 2, 2, 1, cmd_xgroup, "@write @stream @slow"},
    {"xgroup|help", 2, k_cmd_loading | k_cmd_stale, 0, 0, 0, cmd_xgroup_help, "@stream @slow"},
    {"xgroup|setid", -5, k_cmd_write, 2, 2, 1, cmd_xgroup, "@write @stream @slow"},
    {"xinfo", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"xinfo|consumers", 4, k_cmd_readonly, 2, 2, 1, cmd_xinfo, "@read @stream @slow"},
    {"xinfo|groups", 3, k_cmd_readonly, 2, 2, 1, cmd_xinfo, "@read @stream @slow"},
    {"xinfo|help", 2, k_cmd_loading | k_cmd_stale, 0, 0, 0, cmd_xinfo_help, "@stream @slow"},
    {"xinfo|stream", -3, k_cmd_readonly, 2, 2, 1, cmd_xinfo, "@read @stream @slow"},
};

}  // namespace

void register_stream_family(CommandRegistry& registry) {
  registry.add(k_stream_commands);
}

}  // namespace keyshift::engine
