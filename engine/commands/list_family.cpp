// List commands: pushes and pops at both ends, ranges, positions, LINSERT/LSET/LREM/LTRIM,
// LMOVE/RPOPLPUSH and LMPOP. The blocking variants live with the blocking machinery and
// reuse list_pop / list_move from list_ops.hpp.
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/commands/list_ops.hpp"
#include "engine/keyspace/list_value.hpp"
#include "engine/util/status.hpp"
#include "engine/util/strconv.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {

// --- Shared operations (list_ops.hpp) ---------------------------------------------------

ListLimits list_limits(const Engine& engine) {
  return {engine.config().list_max_listpack_size, engine.config().list_compress_depth};
}

bool parse_list_side(std::string_view arg, ListSide& side) {
  if (iequals(arg, "left")) {
    side = ListSide::head;
    return true;
  }
  if (iequals(arg, "right")) {
    side = ListSide::tail;
    return true;
  }
  return false;
}

namespace {

ListValue* list_of(Entry* e) {
  return static_cast<ListValue*>(e->object());
}

/// Keeps the engine's memory count and the entry's encoding in step with one change to a
/// stored list: measure, change, then finish() (or let the destructor do it) before the
/// key is removed or other keys change.
class ListEdit {
 public:
  ListEdit(Engine& engine, Entry* e)
      : m_engine(engine), m_entry(e), m_list(list_of(e)), m_before(m_list->bytes()) {}
  ~ListEdit() { finish(); }
  ListEdit(const ListEdit&) = delete;
  ListEdit& operator=(const ListEdit&) = delete;

  ListValue* operator->() { return m_list; }
  ListValue& operator*() { return *m_list; }
  void finish() {
    if (m_entry == nullptr) {
      return;
    }
    m_engine.memory().add(static_cast<int64_t>(m_list->bytes()) - static_cast<int64_t>(m_before));
    m_entry->set_encoding(m_list->encoding());
    m_entry = nullptr;
  }

 private:
  Engine& m_engine;
  Entry* m_entry;
  ListValue* m_list;
  size_t m_before;
};

/// Stores a new list under `key` (which must be absent); the Db counts its bytes.
void add_list(Db& db, std::string_view key, ListValue* list) {
  Entry::ValueSpec spec;
  spec.kind = Entry::Kind::object;
  spec.object = list;
  spec.type = ObjType::list;
  spec.encoding = list->encoding();
  db.add(key, spec);
}

const char* pop_event(ListSide side) {
  return side == ListSide::head ? "lpop" : "rpop";
}

const char* push_event(ListSide side) {
  return side == ListSide::head ? "lpush" : "rpush";
}

/// Valkey's listElementsRemoved: the pop event, then deletion of an emptied key (with
/// "del") or a chance to shrink back to a listpack, then the modified-key signal.
void elements_removed(Engine& engine, Db& db, std::string_view key, ListSide side, size_t count) {
  engine.notify_keyspace_event(k_notify_list, pop_event(side), key, db.id());
  Entry* e = db.lookup(key, false);
  if (e != nullptr && list_of(e)->empty()) {
    db.remove(key);
    engine.notify_keyspace_event(k_notify_generic, "del", key, db.id());
  } else if (e != nullptr) {
    ListEdit edit(engine, e);
    edit->after_shrink(list_limits(engine));
  }
  engine.signal_modified_key(db.id(), key, count);
}

}  // namespace

Result<std::vector<std::string>> list_pop(Engine& engine, Db& db, std::string_view key,
                                          ListSide side, size_t count) {
  Entry* e = db.lookup(key);
  if (e == nullptr) {
    return OpStatus::key_not_found;
  }
  if (e->type() != ObjType::list) {
    return OpStatus::wrong_type;
  }
  std::vector<std::string> out;
  size_t n = 0;
  {
    ListEdit edit(engine, e);
    n = std::min(count, edit->size());
    out.reserve(n);
    bool head = side == ListSide::head;
    ListValue::Reader r(*edit, head ? 0 : -1, head);
    for (size_t i = 0; i < n && r.valid(); ++i, r.advance()) {
      out.push_back(r.value().to_string());
    }
    auto k = static_cast<int64_t>(n);
    edit->del_range(head ? 0 : -k, k);
  }
  elements_removed(engine, db, key, side, n);
  return out;
}

Result<std::optional<std::string>> list_move(Engine& engine, Db& db, std::string_view src,
                                             std::string_view dst, ListSide from, ListSide to) {
  Entry* se = db.lookup(src);
  if (se == nullptr) {
    return std::optional<std::string>();
  }
  if (se->type() != ObjType::list) {
    return OpStatus::wrong_type;
  }
  if (list_of(se)->empty()) {
    return std::optional<std::string>();
  }
  Entry* de = db.lookup(dst);
  if (de != nullptr && de->type() != ObjType::list) {
    return OpStatus::wrong_type;
  }
  std::string value;
  {
    ListEdit edit(engine, se);
    edit->pop(from, value);
  }
  ListLimits limits = list_limits(engine);
  if (de == nullptr) {
    auto* list = new ListValue();
    list->prepare_growth(limits, value.size(), 1);
    list->push(to, value);
    add_list(db, dst, list);
  } else {
    ListEdit edit(engine, de);
    edit->prepare_growth(limits, value.size(), 1);
    edit->push(to, value);
  }
  // LMOVE counts one change for both keys, as Valkey's lmoveGenericCommand.
  engine.signal_modified_key(db.id(), dst, 0);
  engine.notify_keyspace_event(k_notify_list, push_event(to), dst, db.id());
  engine.signal_key_as_ready(db.id(), dst);
  elements_removed(engine, db, src, from, 1);
  return std::optional<std::string>(std::move(value));
}

namespace {

// --- Argument parsing -------------------------------------------------------------------

/// An integer argument as Valkey's getRangeLongFromObjectOrReply: a non-integer or a value
/// outside [min, max] replies `error` when given, else the generic texts.
bool parse_long(CmdContext& ctx, std::string_view arg, int64_t min, int64_t max,
                std::string_view error, int64_t& out) {
  if (!parse_i64(arg, out)) {
    ctx.reply().error(error.empty() ? errors::k_not_integer : error);
    return false;
  }
  if (out < min || out > max) {
    ctx.reply().error(error.empty() ? errors::k_list_long_range : error);
    return false;
  }
  return true;
}

bool reply_status(CmdContext& ctx, OpStatus s) {
  switch (s) {
    case OpStatus::ok:
      return false;
    case OpStatus::wrong_type:
      ctx.reply().error(errors::k_wrong_type);
      break;
    default:
      ctx.reply().error(errors::k_syntax);
      break;
  }
  return true;
}

void reply_value(ReplyBuilder& rb, const LpValue& v) {
  char buf[24];
  rb.bulk(v.view(buf));
}

/// Total argument bytes of args[from, argc): what a push may add to a listpack.
size_t args_bytes(CmdContext& ctx, size_t from) {
  size_t n = 0;
  for (size_t i = from; i < ctx.argc(); ++i) {
    n += ctx.arg(i).size();
  }
  return n;
}

// --- Handlers ---------------------------------------------------------------------------

void push_generic(CmdContext& ctx, ListSide side, bool only_existing) {
  Db& db = ctx.db();
  std::string_view key = ctx.arg(1);
  Entry* e = db.lookup(key);
  if (e != nullptr && e->type() != ObjType::list) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  ListLimits limits = list_limits(ctx.engine());
  size_t added_bytes = args_bytes(ctx, 2);
  size_t added = ctx.argc() - 2;
  size_t len = 0;
  if (e == nullptr) {
    if (only_existing) {
      ctx.reply().integer(0);
      return;
    }
    auto* list = new ListValue();
    list->prepare_growth(limits, added_bytes, added);
    for (size_t i = 2; i < ctx.argc(); ++i) {
      list->push(side, ctx.arg(i));
    }
    len = list->size();
    add_list(db, key, list);
  } else {
    ListEdit edit(ctx.engine(), e);
    edit->prepare_growth(limits, added_bytes, added);
    for (size_t i = 2; i < ctx.argc(); ++i) {
      edit->push(side, ctx.arg(i));
    }
    len = edit->size();
  }
  ctx.reply().integer(static_cast<int64_t>(len));
  ctx.engine().signal_modified_key(db.id(), key, ctx.argc() - 2);
  ctx.engine().notify_keyspace_event(k_notify_list, push_event(side), key, db.id());
  ctx.engine().signal_key_as_ready(db.id(), key);
}

void cmd_lpush(CmdContext& ctx) {
  push_generic(ctx, ListSide::head, false);
}
void cmd_rpush(CmdContext& ctx) {
  push_generic(ctx, ListSide::tail, false);
}
void cmd_lpushx(CmdContext& ctx) {
  push_generic(ctx, ListSide::head, true);
}
void cmd_rpushx(CmdContext& ctx) {
  push_generic(ctx, ListSide::tail, true);
}

void pop_generic(CmdContext& ctx, ListSide side) {
  if (ctx.argc() > 3) {
    ctx.reply_arity_error();
    return;
  }
  bool has_count = ctx.argc() == 3;
  int64_t count = 0;
  if (has_count && !parse_long(ctx, ctx.arg(2), 0, INT64_MAX, errors::k_must_be_positive, count)) {
    return;
  }
  Db& db = ctx.db();
  Entry* e = db.lookup(ctx.arg(1));
  if (e == nullptr) {
    if (has_count) {
      ctx.reply().null_array();
    } else {
      ctx.reply().null();
    }
    return;
  }
  if (e->type() != ObjType::list) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  if (has_count && count == 0) {
    ctx.reply().array(0);
    return;
  }
  auto r = list_pop(ctx.engine(), db, ctx.arg(1), side,
                    has_count ? static_cast<size_t>(count) : size_t{1});
  if (reply_status(ctx, r.status())) {
    return;
  }
  if (!has_count) {
    ctx.reply().bulk(r->front());
    return;
  }
  ctx.reply().array(r->size());
  for (const auto& v : *r) {
    ctx.reply().bulk(v);
  }
}

void cmd_lpop(CmdContext& ctx) {
  pop_generic(ctx, ListSide::head);
}
void cmd_rpop(CmdContext& ctx) {
  pop_generic(ctx, ListSide::tail);
}

void cmd_llen(CmdContext& ctx) {
  Entry* e = ctx.db().lookup_read(ctx.arg(1));
  if (e == nullptr) {
    ctx.reply().integer(0);
    return;
  }
  if (e->type() != ObjType::list) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  ctx.reply().integer(static_cast<int64_t>(list_of(e)->size()));
}

void cmd_lrange(CmdContext& ctx) {
  int64_t start = 0;
  int64_t end = 0;
  if (!parse_long(ctx, ctx.arg(2), INT64_MIN, INT64_MAX, {}, start) ||
      !parse_long(ctx, ctx.arg(3), INT64_MIN, INT64_MAX, {}, end)) {
    return;
  }
  Entry* e = ctx.db().lookup_read(ctx.arg(1));
  if (e == nullptr) {
    ctx.reply().array(0);
    return;
  }
  if (e->type() != ObjType::list) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  const ListValue& list = *list_of(e);
  auto len = static_cast<int64_t>(list.size());
  if (start < 0) {
    start += len;
  }
  if (end < 0) {
    end += len;
  }
  if (start < 0) {
    start = 0;
  }
  if (start > end || start >= len) {
    ctx.reply().array(0);
    return;
  }
  if (end >= len) {
    end = len - 1;
  }
  auto n = static_cast<size_t>(end - start + 1);
  ReplyBuilder& rb = ctx.reply();
  rb.array(n);
  ListValue::Reader r(list, start, true);
  for (size_t i = 0; i < n && r.valid(); ++i, r.advance()) {
    reply_value(rb, r.value());
  }
}

void cmd_lindex(CmdContext& ctx) {
  Entry* e = ctx.db().lookup_read(ctx.arg(1));
  if (e == nullptr) {
    ctx.reply().null();
    return;
  }
  if (e->type() != ObjType::list) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  int64_t index = 0;
  if (!parse_long(ctx, ctx.arg(2), INT64_MIN, INT64_MAX, {}, index)) {
    return;
  }
  ListValue::Reader r(*list_of(e), index, true);
  if (!r.valid()) {
    ctx.reply().null();
    return;
  }
  reply_value(ctx.reply(), r.value());
}

void cmd_lset(CmdContext& ctx) {
  Db& db = ctx.db();
  std::string_view key = ctx.arg(1);
  Entry* e = db.lookup(key);
  if (e == nullptr) {
    ctx.reply().error(errors::k_no_such_key);
    return;
  }
  if (e->type() != ObjType::list) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  int64_t index = 0;
  if (!parse_long(ctx, ctx.arg(2), INT64_MIN, INT64_MAX, {}, index)) {
    return;
  }
  // Valkey 8.0.1 quirk, kept for identical replies: lsetCommand parses a long but passes it to
  // listTypeReplaceAtIndex(robj *, int index, robj *) (src/t_list.c), so only the low 32 bits
  // count: -9223372036854775808 becomes 0, 9223372036854775807 becomes -1 and 4294967296
  // becomes 0, each a valid index on any non-empty list. C++20 defines this narrowing as
  // modular, as gcc does for Valkey.
  index = static_cast<int32_t>(index);
  std::string_view value = ctx.arg(3);
  ListLimits limits = list_limits(ctx.engine());
  bool replaced = false;
  {
    ListEdit edit(ctx.engine(), e);
    // As Valkey: room is made before knowing whether the index exists.
    edit->prepare_growth(limits, value.size(), 1);
    replaced = edit->set(index, value);
    if (replaced) {
      edit->after_shrink(limits);
    }
  }
  if (!replaced) {
    ctx.reply().error(errors::k_out_of_range);
    return;
  }
  ctx.reply().ok();
  ctx.engine().signal_modified_key(db.id(), key);
  ctx.engine().notify_keyspace_event(k_notify_list, "lset", key, db.id());
}

void cmd_linsert(CmdContext& ctx) {
  bool after = false;
  if (iequals(ctx.arg(2), "after")) {
    after = true;
  } else if (!iequals(ctx.arg(2), "before")) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  Db& db = ctx.db();
  std::string_view key = ctx.arg(1);
  Entry* e = db.lookup(key);
  if (e == nullptr) {
    ctx.reply().integer(0);
    return;
  }
  if (e->type() != ObjType::list) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  bool inserted = false;
  size_t len = 0;
  {
    ListEdit edit(ctx.engine(), e);
    edit->prepare_growth(list_limits(ctx.engine()), ctx.arg(4).size(), 1);
    inserted = edit->insert(ctx.arg(3), ctx.arg(4), after);
    len = edit->size();
  }
  if (!inserted) {
    ctx.reply().integer(-1);
    return;
  }
  ctx.engine().signal_modified_key(db.id(), key);
  ctx.engine().notify_keyspace_event(k_notify_list, "linsert", key, db.id());
  ctx.reply().integer(static_cast<int64_t>(len));
}

/// Removes `key` when its list emptied (with "del"), else lets it shrink to a listpack.
void delete_if_empty_or_shrink(CmdContext& ctx, Db& db, std::string_view key, Entry* e) {
  if (list_of(e)->empty()) {
    db.remove(key);
    ctx.engine().notify_keyspace_event(k_notify_generic, "del", key, db.id());
    return;
  }
  ListEdit edit(ctx.engine(), e);
  edit->after_shrink(list_limits(ctx.engine()));
}

void cmd_lrem(CmdContext& ctx) {
  int64_t count = 0;
  if (!parse_long(ctx, ctx.arg(2), -INT64_MAX, INT64_MAX, {}, count)) {
    return;
  }
  Db& db = ctx.db();
  std::string_view key = ctx.arg(1);
  Entry* e = db.lookup(key);
  if (e == nullptr) {
    ctx.reply().integer(0);
    return;
  }
  if (e->type() != ObjType::list) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  size_t removed = 0;
  {
    ListEdit edit(ctx.engine(), e);
    removed = edit->remove(ctx.arg(3), count);
  }
  if (removed != 0) {
    ctx.engine().notify_keyspace_event(k_notify_list, "lrem", key, db.id());
    delete_if_empty_or_shrink(ctx, db, key, e);
    ctx.engine().signal_modified_key(db.id(), key, removed);
  }
  ctx.reply().integer(static_cast<int64_t>(removed));
}

void cmd_ltrim(CmdContext& ctx) {
  int64_t start = 0;
  int64_t end = 0;
  if (!parse_long(ctx, ctx.arg(2), INT64_MIN, INT64_MAX, {}, start) ||
      !parse_long(ctx, ctx.arg(3), INT64_MIN, INT64_MAX, {}, end)) {
    return;
  }
  Db& db = ctx.db();
  std::string_view key = ctx.arg(1);
  Entry* e = db.lookup(key);
  if (e == nullptr) {
    ctx.reply().ok();
    return;
  }
  if (e->type() != ObjType::list) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  int64_t ltrim = 0;
  int64_t rtrim = 0;
  {
    ListEdit edit(ctx.engine(), e);
    auto len = static_cast<int64_t>(edit->size());
    if (start < 0) {
      start += len;
    }
    if (end < 0) {
      end += len;
    }
    if (start < 0) {
      start = 0;
    }
    if (start > end || start >= len) {
      ltrim = len;
    } else {
      if (end >= len) {
        end = len - 1;
      }
      ltrim = start;
      rtrim = len - end - 1;
    }
    edit->del_range(0, ltrim);
    edit->del_range(-rtrim, rtrim);
  }
  ctx.engine().notify_keyspace_event(k_notify_list, "ltrim", key, db.id());
  delete_if_empty_or_shrink(ctx, db, key, e);
  ctx.engine().signal_modified_key(db.id(), key, static_cast<uint64_t>(ltrim + rtrim));
  ctx.reply().ok();
}

void cmd_lpos(CmdContext& ctx) {
  int64_t rank = 1;
  int64_t count = -1;  // -1: no COUNT option
  int64_t maxlen = 0;
  for (size_t j = 3; j < ctx.argc(); ++j) {
    std::string_view opt = ctx.arg(j);
    bool more = j + 1 < ctx.argc();
    if (iequals(opt, "rank") && more) {
      if (!parse_long(ctx, ctx.arg(++j), -INT64_MAX, INT64_MAX, {}, rank)) {
        return;
      }
      if (rank == 0) {
        ctx.reply().error(errors::k_lpos_rank_zero);
        return;
      }
    } else if (iequals(opt, "count") && more) {
      if (!parse_long(ctx, ctx.arg(++j), 0, INT64_MAX, errors::k_lpos_count_negative, count)) {
        return;
      }
    } else if (iequals(opt, "maxlen") && more) {
      if (!parse_long(ctx, ctx.arg(++j), 0, INT64_MAX, errors::k_lpos_maxlen_negative, maxlen)) {
        return;
      }
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  bool forward = rank > 0;
  if (rank < 0) {
    rank = -rank;
  }
  Entry* e = ctx.db().lookup_read(ctx.arg(1));
  if (e == nullptr) {
    if (count != -1) {
      ctx.reply().array(0);
    } else {
      ctx.reply().null();
    }
    return;
  }
  if (e->type() != ObjType::list) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  const ListValue& list = *list_of(e);
  auto len = static_cast<int64_t>(list.size());
  std::string_view element = ctx.arg(2);
  std::vector<int64_t> found;
  int64_t matches = 0;
  int64_t index = 0;
  for (ListValue::Reader r(list, forward ? 0 : -1, forward);
       r.valid() && (maxlen == 0 || index < maxlen); r.advance(), ++index) {
    if (!r.value().equals(element)) {
      continue;
    }
    ++matches;
    if (matches < rank) {
      continue;
    }
    found.push_back(forward ? index : len - index - 1);
    if (count == -1 || (count != 0 && matches - rank + 1 >= count)) {
      break;
    }
  }
  if (count != -1) {
    ctx.reply().array(found.size());
    for (int64_t i : found) {
      ctx.reply().integer(i);
    }
    return;
  }
  if (found.empty()) {
    ctx.reply().null();
  } else {
    ctx.reply().integer(found.front());
  }
}

void move_generic(CmdContext& ctx, ListSide from, ListSide to) {
  auto r = list_move(ctx.engine(), ctx.db(), ctx.arg(1), ctx.arg(2), from, to);
  if (reply_status(ctx, r.status())) {
    return;
  }
  if (!*r) {
    ctx.reply().null();
    return;
  }
  ctx.reply().bulk(**r);
}

void cmd_lmove(CmdContext& ctx) {
  ListSide from = ListSide::head;
  ListSide to = ListSide::head;
  if (!parse_list_side(ctx.arg(3), from) || !parse_list_side(ctx.arg(4), to)) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  move_generic(ctx, from, to);
}

void cmd_rpoplpush(CmdContext& ctx) {
  move_generic(ctx, ListSide::tail, ListSide::head);
}

void cmd_lmpop(CmdContext& ctx) {
  int64_t numkeys = 0;
  if (!parse_long(ctx, ctx.arg(1), 1, INT64_MAX, errors::k_lmpop_numkeys, numkeys)) {
    return;
  }
  // The side follows the keys; too few arguments for them is a syntax error.
  if (numkeys > static_cast<int64_t>(ctx.argc()) - 3) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  size_t side_idx = 2 + static_cast<size_t>(numkeys);
  ListSide side = ListSide::head;
  if (!parse_list_side(ctx.arg(side_idx), side)) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  int64_t count = -1;
  for (size_t j = side_idx + 1; j < ctx.argc(); ++j) {
    bool more = j + 1 < ctx.argc();
    if (count == -1 && iequals(ctx.arg(j), "count") && more) {
      if (!parse_long(ctx, ctx.arg(++j), 1, INT64_MAX, errors::k_lmpop_count, count)) {
        return;
      }
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  if (count == -1) {
    count = 1;
  }
  Db& db = ctx.db();
  for (size_t i = 2; i < side_idx; ++i) {
    std::string_view key = ctx.arg(i);
    Entry* e = db.lookup(key);
    if (e == nullptr) {
      continue;
    }
    if (e->type() != ObjType::list) {
      ctx.reply().error(errors::k_wrong_type);
      return;
    }
    if (list_of(e)->empty()) {
      continue;
    }
    auto r = list_pop(ctx.engine(), db, key, side, static_cast<size_t>(count));
    if (reply_status(ctx, r.status())) {
      return;
    }
    ReplyBuilder& rb = ctx.reply();
    rb.array(2);
    rb.bulk(key);
    rb.array(r->size());
    for (const auto& v : *r) {
      rb.bulk(v);
    }
    return;
  }
  ctx.reply().null_array();
}

constexpr CommandSpec k_list_commands[] = {
    {"lpush", -3, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_lpush,
     "@write @list @fast"},
    {"rpush", -3, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_rpush,
     "@write @list @fast"},
    {"lpushx", -3, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_lpushx,
     "@write @list @fast"},
    {"rpushx", -3, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_rpushx,
     "@write @list @fast"},
    {"lpop", -2, k_cmd_write | k_cmd_fast, 1, 1, 1, cmd_lpop, "@write @list @fast"},
    {"rpop", -2, k_cmd_write | k_cmd_fast, 1, 1, 1, cmd_rpop, "@write @list @fast"},
    {"llen", 2, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_llen, "@read @list @fast"},
    {"lrange", 4, k_cmd_readonly, 1, 1, 1, cmd_lrange, "@read @list @slow"},
    {"lindex", 3, k_cmd_readonly, 1, 1, 1, cmd_lindex, "@read @list @slow"},
    {"lset", 4, k_cmd_write | k_cmd_denyoom, 1, 1, 1, cmd_lset, "@write @list @slow"},
    {"linsert", 5, k_cmd_write | k_cmd_denyoom, 1, 1, 1, cmd_linsert, "@write @list @slow"},
    {"lrem", 4, k_cmd_write, 1, 1, 1, cmd_lrem, "@write @list @slow"},
    {"ltrim", 4, k_cmd_write, 1, 1, 1, cmd_ltrim, "@write @list @slow"},
    {"lpos", -3, k_cmd_readonly, 1, 1, 1, cmd_lpos, "@read @list @slow"},
    {"lmove", 5, k_cmd_write | k_cmd_denyoom, 1, 2, 1, cmd_lmove, "@write @list @slow"},
    {"rpoplpush", 3, k_cmd_write | k_cmd_denyoom, 1, 2, 1, cmd_rpoplpush, "@write @list @slow"},
    {"lmpop", -4, k_cmd_write | k_cmd_movablekeys, 0, 0, 0, cmd_lmpop, "@write @list @slow"},
};

}  // namespace

void register_list_family(CommandRegistry& registry) {
  registry.add(k_list_commands);
}

}  // namespace keyshift::engine
