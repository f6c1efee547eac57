// Set commands: SADD and friends, the algebra (SINTER/SUNION/SDIFF and their STORE forms,
// SINTERCARD), random access (SRANDMEMBER, SPOP) and SSCAN.
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/keyspace/set_value.hpp"
#include "engine/util/glob.hpp"
#include "engine/util/strconv.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace keyshift::engine {
namespace {

// SPOP rebuilds the set from the survivors once it pops more than this many times their
// number; SRANDMEMBER copies the whole set once the set is less than this many times the
// count (Valkey's SPOP_MOVE_STRATEGY_MUL and SRANDMEMBER_SUB_STRATEGY_MUL).
constexpr uint64_t k_spop_rebuild_factor = 5;
constexpr uint64_t k_srandmember_copy_factor = 3;

// --- Small helpers ----------------------------------------------------------------------

SetLimits limits_of(CmdContext& ctx) {
  return SetLimits::from(ctx.engine().config());
}

/// Read access to the set in `e` (nothing read converts a set, so no seed is needed).
SetRef set_of(const Entry* e) {
  return SetRef(e);
}

/// False when the session asked for CLIENT NO-TOUCH.
bool may_touch(CmdContext& ctx) {
  return !ctx.session().has(k_session_no_touch);
}

/// The entry for `key` for a read (counts hits and misses).
Entry* lookup_read(CmdContext& ctx, std::string_view key) {
  return ctx.db().lookup_read(key, may_touch(ctx));
}

/// The entry for `key` for a write.
Entry* lookup_write(CmdContext& ctx, std::string_view key) {
  return ctx.db().lookup(key, may_touch(ctx));
}

/// True (after replying WRONGTYPE) when `e` exists and is not a set.
bool wrong_type(CmdContext& ctx, const Entry* e) {
  if (e != nullptr && e->type() != ObjType::set) {
    ctx.reply().error(errors::k_wrong_type);
    return true;
  }
  return false;
}

/// Runs `fn(SetValue&)` on the set stored in `e`, then adds the change of its size to the
/// engine's memory count and records its (possibly new) encoding for OBJECT ENCODING.
template <typename Fn>
auto edit_set(CmdContext& ctx, Entry* e, Fn&& fn) {
  SetRef s(e, ctx.db().value_seed(e->key()));
  auto before = static_cast<int64_t>(s.bytes());
  auto result = fn(*s);
  s.sync();
  ctx.engine().memory().add(static_cast<int64_t>(s.bytes()) - before);
  return result;
}

Entry::ValueSpec set_spec(SetValue* s) {
  return value_spec(s, ObjType::set);
}

/// Stores `s` (owned) as a new key that must not exist.
void add_set(CmdContext& ctx, std::string_view key, SetValue* s) {
  ctx.db().add(key, set_spec(s));
}

/// Stores `s` (owned) under `key`, replacing any value and its TTL (Valkey's setKey).
void replace_key(CmdContext& ctx, std::string_view key, SetValue* s) {
  ctx.db().set(key, set_spec(s));
  ctx.engine().signal_modified_key(ctx.session().db, key);
}

void notify(CmdContext& ctx, uint32_t type, std::string_view event, std::string_view key) {
  ctx.engine().notify_keyspace_event(type, event, key, ctx.session().db);
}

/// Deletes `key` because its set became empty (the caller already signalled the change).
void delete_emptied(CmdContext& ctx, std::string_view key) {
  ctx.db().remove(key);
  notify(ctx, k_notify_generic, "del", key);
}

/// Deletes `key` as a STORE of an empty result does; signals when something was deleted.
void delete_destination(CmdContext& ctx, std::string_view key) {
  if (ctx.db().remove(key)) {
    ctx.engine().signal_modified_key(ctx.session().db, key);
    notify(ctx, k_notify_generic, "del", key);
  }
}

void reply_member(ReplyBuilder& rb, const SetMember& m) {
  char buf[24];
  rb.bulk(m.view(buf));
}

/// The empty collection a command replies for a missing key: a RESP3 set or an array.
void reply_empty_set(CmdContext& ctx) {
  ctx.reply().set(0);
}

/// Parses a count as Valkey's getPositiveLongFromObjectOrReply: any failure (not an
/// integer, negative) replies `error`.
bool parse_non_negative(CmdContext& ctx, std::string_view arg, std::string_view error,
                        int64_t& out) {
  if (!parse_i64(arg, out) || out < 0) {
    ctx.reply().error(error);
    return false;
  }
  return true;
}

/// Picks `count` distinct positions out of `n` (count <= n) with equal probability, calling
/// `fn(size_t)` in ascending order (selection sampling, as Valkey's lpNextRandom walk).
template <typename Fn>
void sample_in_order(size_t n, size_t count, std::mt19937_64& rng, Fn&& fn) {
  for (size_t i = 0; i < n && count > 0; ++i) {
    if (rng() % (n - i) < count) {
      fn(i);
      --count;
    }
  }
}

// --- Membership -------------------------------------------------------------------------

void cmd_sadd(CmdContext& ctx) {
  std::string_view key = ctx.arg(1);
  auto members = ctx.args().subspan(2);
  SetLimits limits = limits_of(ctx);
  Entry* e = lookup_write(ctx, key);
  if (wrong_type(ctx, e)) {
    return;
  }
  int64_t added = 0;
  if (e == nullptr) {
    SetValue* s = SetValue::create(members[0], members.size(), limits, ctx.engine().rng()());
    for (std::string_view m : members) {
      added += s->add(m, limits) ? 1 : 0;
    }
    // A set written whole in one command keeps no growth headroom (the intset grew by
    // doubling; Valkey sizes it exactly).
    s->shrink_to_fit();
    add_set(ctx, key, s);
  } else {
    added = edit_set(ctx, e, [&](SetValue& s) {
      s.maybe_convert(members.size(), limits);
      int64_t n = 0;
      for (std::string_view m : members) {
        n += s.add(m, limits) ? 1 : 0;
      }
      return n;
    });
  }
  if (added > 0) {
    ctx.engine().signal_modified_key(ctx.session().db, key, static_cast<uint64_t>(added));
    notify(ctx, k_notify_set, "sadd", key);
  }
  ctx.reply().integer(added);
}

void cmd_srem(CmdContext& ctx) {
  std::string_view key = ctx.arg(1);
  Entry* e = lookup_write(ctx, key);
  if (e == nullptr) {
    ctx.reply().integer(0);
    return;
  }
  if (wrong_type(ctx, e)) {
    return;
  }
  int64_t removed = edit_set(ctx, e, [&](SetValue& s) {
    int64_t n = 0;
    for (std::string_view m : ctx.args().subspan(2)) {
      if (s.remove(m)) {
        ++n;
        if (s.empty()) {
          break;
        }
      }
    }
    return n;
  });
  if (removed > 0) {
    bool emptied = set_of(e)->empty();
    if (emptied) {
      ctx.db().remove(key);
    }
    ctx.engine().signal_modified_key(ctx.session().db, key, static_cast<uint64_t>(removed));
    notify(ctx, k_notify_set, "srem", key);
    if (emptied) {
      notify(ctx, k_notify_generic, "del", key);
    }
  }
  ctx.reply().integer(removed);
}

void cmd_smove(CmdContext& ctx) {
  std::string_view src_key = ctx.arg(1);
  std::string_view dst_key = ctx.arg(2);
  std::string_view member = ctx.arg(3);
  Entry* src = lookup_write(ctx, src_key);
  Entry* dst = lookup_write(ctx, dst_key);
  if (src == nullptr) {
    ctx.reply().integer(0);
    return;
  }
  if (wrong_type(ctx, src) || wrong_type(ctx, dst)) {
    return;
  }
  if (src == dst) {
    ctx.reply().integer(set_of(src)->contains(member) ? 1 : 0);
    return;
  }
  if (!edit_set(ctx, src, [&](SetValue& s) { return s.remove(member); })) {
    ctx.reply().integer(0);
    return;
  }
  notify(ctx, k_notify_set, "srem", src_key);
  if (set_of(src)->empty()) {
    delete_emptied(ctx, src_key);
  }
  SetLimits limits = limits_of(ctx);
  bool added = false;
  if (dst == nullptr) {
    SetValue* s = SetValue::create(member, 1, limits, ctx.engine().rng()());
    added = s->add(member, limits);
    add_set(ctx, dst_key, s);
  } else {
    added = edit_set(ctx, dst, [&](SetValue& s) { return s.add(member, limits); });
  }
  ctx.engine().signal_modified_key(ctx.session().db, src_key);
  if (added) {
    ctx.engine().signal_modified_key(ctx.session().db, dst_key);
    notify(ctx, k_notify_set, "sadd", dst_key);
  }
  ctx.reply().integer(1);
}

void cmd_sismember(CmdContext& ctx) {
  Entry* e = lookup_read(ctx, ctx.arg(1));
  if (wrong_type(ctx, e)) {
    return;
  }
  ctx.reply().integer(e != nullptr && set_of(e)->contains(ctx.arg(2)) ? 1 : 0);
}

void cmd_smismember(CmdContext& ctx) {
  Entry* e = lookup_read(ctx, ctx.arg(1));
  if (wrong_type(ctx, e)) {
    return;
  }
  ctx.reply().array(ctx.argc() - 2);
  for (size_t i = 2; i < ctx.argc(); ++i) {
    ctx.reply().integer(e != nullptr && set_of(e)->contains(ctx.arg(i)) ? 1 : 0);
  }
}

void cmd_scard(CmdContext& ctx) {
  Entry* e = lookup_read(ctx, ctx.arg(1));
  if (wrong_type(ctx, e)) {
    return;
  }
  ctx.reply().integer(e != nullptr ? static_cast<int64_t>(set_of(e)->size()) : 0);
}

// --- Intersection -----------------------------------------------------------------------

/// Looks up every key of an algebra command; nullopt after replying WRONGTYPE. Missing keys
/// are nullptr (empty sets).
std::optional<std::vector<SetValue*>> lookup_sets(CmdContext& ctx,
                                                  std::span<const std::string_view> keys,
                                                  std::deque<SetRef>& refs) {
  std::vector<SetValue*> sets;
  sets.reserve(keys.size());
  for (std::string_view k : keys) {
    Entry* e = lookup_read(ctx, k);
    if (wrong_type(ctx, e)) {
      return std::nullopt;
    }
    sets.push_back(e != nullptr ? &*refs.emplace_back(static_cast<const Entry*>(e)) : nullptr);
  }
  return sets;
}

/// SINTER, SMEMBERS, SINTERSTORE (with `dst`) and SINTERCARD (`cardinality_only`, stopping
/// at `limit` when it is not 0).
void sinter_generic(CmdContext& ctx, std::span<const std::string_view> keys,
                    std::optional<std::string_view> dst, bool cardinality_only, uint64_t limit) {
  std::deque<SetRef> refs;  // the sets' holders while `found` points at them
  auto found = lookup_sets(ctx, keys, refs);
  if (!found) {
    return;
  }
  std::vector<SetValue*>& sets = *found;
  if (std::find(sets.begin(), sets.end(), nullptr) != sets.end()) {
    // Intersecting with an empty set is empty.
    if (dst) {
      delete_destination(ctx, *dst);
      ctx.reply().integer(0);
    } else if (cardinality_only) {
      ctx.reply().integer(0);
    } else {
      reply_empty_set(ctx);
    }
    return;
  }
  // Walk the smallest set and probe the others.
  std::stable_sort(sets.begin(), sets.end(),
                   [](const SetValue* a, const SetValue* b) { return a->size() < b->size(); });
  SetValue* first = sets[0];
  auto in_all = [&](const SetMember& m) {
    for (size_t j = 1; j < sets.size(); ++j) {
      if (sets[j] != first && !sets[j]->contains(m)) {
        return false;
      }
    }
    return true;
  };

  if (cardinality_only) {
    uint64_t n = 0;
    bool done = false;
    first->for_each([&](const SetMember& m) {
      if (done || !in_all(m)) {
        return;
      }
      ++n;
      done = limit != 0 && n >= limit;
    });
    ctx.reply().integer(static_cast<int64_t>(n));
    return;
  }

  if (!dst) {
    std::vector<SetMember> out;
    first->for_each([&](const SetMember& m) {
      if (in_all(m)) {
        out.push_back(m);
      }
    });
    ctx.reply().set(out.size());
    for (const SetMember& m : out) {
      reply_member(ctx.reply(), m);
    }
    return;
  }

  // The result starts as an intset when the smallest set is one, else as a listpack, and
  // settles on the best encoding once complete.
  SetLimits limits = limits_of(ctx);
  ObjEncoding first_encoding = first->encoding();
  auto* result = new SetValue(
      first_encoding == ObjEncoding::intset ? ObjEncoding::intset : ObjEncoding::listpack,
      ctx.engine().rng()());
  bool only_integers = true;
  first->for_each([&](const SetMember& m) {
    if (!in_all(m)) {
      return;
    }
    SetMember add = m;
    if (!m.is_int() && only_integers) {
      int64_t v = 0;
      if (first_encoding == ObjEncoding::hashtable && parse_i64(m.str(), v)) {
        if (result->encoding() != ObjEncoding::hashtable) {
          add = SetMember::of_int(v);
        }
      } else {
        only_integers = false;
      }
    }
    result->add(add, limits);
  });
  if (result->empty()) {
    delete result;
    ctx.reply().integer(0);
    delete_destination(ctx, *dst);
    return;
  }
  if (only_integers) {
    result->maybe_convert_to_intset(limits);
  }
  result->shrink_to_fit();
  auto n = static_cast<int64_t>(result->size());
  replace_key(ctx, *dst, result);
  ctx.reply().integer(n);
  notify(ctx, k_notify_set, "sinterstore", *dst);
}

void cmd_sinter(CmdContext& ctx) {
  sinter_generic(ctx, ctx.args().subspan(1), {}, false, 0);
}

void cmd_sinterstore(CmdContext& ctx) {
  sinter_generic(ctx, ctx.args().subspan(2), ctx.arg(1), false, 0);
}

void cmd_sintercard(CmdContext& ctx) {
  int64_t numkeys = 0;
  if (!parse_i64(ctx.arg(1), numkeys) || numkeys < 1) {
    ctx.reply().error(errors::k_sintercard_numkeys);
    return;
  }
  if (static_cast<uint64_t>(numkeys) > ctx.argc() - 2) {
    ctx.reply().error(errors::k_numkeys_exceeds_args);
    return;
  }
  int64_t limit = 0;
  for (size_t i = 2 + static_cast<size_t>(numkeys); i < ctx.argc(); ++i) {
    bool more = i + 1 < ctx.argc();
    if (iequals(c_string(ctx.arg(i)), "limit") && more) {
      ++i;
      if (!parse_non_negative(ctx, ctx.arg(i), errors::k_sintercard_limit_negative, limit)) {
        return;
      }
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  sinter_generic(ctx, ctx.args().subspan(2, static_cast<size_t>(numkeys)), {}, true,
                 static_cast<uint64_t>(limit));
}

// --- Union and difference ---------------------------------------------------------------

enum class SetOp : uint8_t { union_, diff };

/// Computes SUNION/SDIFF of `sets` into a new set (the caller owns it). `for_store` makes the
/// result start as an intset whatever the inputs, as the STORE forms do.
SetValue* union_diff(CmdContext& ctx, std::vector<SetValue*>& sets, SetOp op, bool for_store) {
  SetLimits limits = limits_of(ctx);
  bool same_set = false;
  bool all_intsets = true;
  for (size_t j = 0; j < sets.size(); ++j) {
    if (sets[j] == nullptr) {
      continue;
    }
    all_intsets = all_intsets && sets[j]->encoding() == ObjEncoding::intset;
    same_set = same_set || (j > 0 && sets[j] == sets[0]);
  }
  // Without STORE a result with strings in it is built as a hashtable directly, which is
  // cheaper to probe than an intset that converts on the way.
  auto* result =
      new SetValue(for_store || all_intsets ? ObjEncoding::intset : ObjEncoding::hashtable,
                   ctx.engine().rng()());
  if (op == SetOp::union_) {
    for (SetValue* s : sets) {
      if (s != nullptr) {
        s->for_each([&](const SetMember& m) { result->add(m, limits); });
      }
    }
    return result;
  }
  if (sets[0] == nullptr || same_set) {
    return result;
  }
  // Probing the first set's members against the others costs |first| per set; adding the
  // first and removing the others' members costs the sizes of all sets. Pick the cheaper,
  // favouring probing (it stops early on common members).
  uint64_t probe_work = 0;
  uint64_t remove_work = 0;
  for (SetValue* s : sets) {
    if (s != nullptr) {
      probe_work += sets[0]->size();
      remove_work += s->size();
    }
  }
  probe_work /= 2;
  if (probe_work <= remove_work) {
    // Probe the largest sets first: they are the likeliest to hold a member.
    std::stable_sort(sets.begin() + 1, sets.end(), [](const SetValue* a, const SetValue* b) {
      return (a != nullptr ? a->size() : 0) > (b != nullptr ? b->size() : 0);
    });
    sets[0]->for_each([&](const SetMember& m) {
      for (size_t j = 1; j < sets.size(); ++j) {
        if (sets[j] != nullptr && sets[j]->contains(m)) {
          return;
        }
      }
      result->add(m, limits);
    });
    return result;
  }
  sets[0]->for_each([&](const SetMember& m) { result->add(m, limits); });
  for (size_t j = 1; j < sets.size() && !result->empty(); ++j) {
    if (sets[j] != nullptr) {
      sets[j]->for_each([&](const SetMember& m) { result->remove(m); });
    }
  }
  return result;
}

void sunion_diff_generic(CmdContext& ctx, std::span<const std::string_view> keys,
                         std::optional<std::string_view> dst, SetOp op) {
  std::deque<SetRef> refs;  // the sets' holders while `sets` points at them
  auto sets = lookup_sets(ctx, keys, refs);
  if (!sets) {
    return;
  }
  SetValue* result = union_diff(ctx, *sets, op, dst.has_value());
  if (!dst) {
    ctx.reply().set(result->size());
    result->for_each([&](const SetMember& m) { reply_member(ctx.reply(), m); });
    delete result;
    return;
  }
  if (result->empty()) {
    delete result;
    ctx.reply().integer(0);
    delete_destination(ctx, *dst);
    return;
  }
  auto n = static_cast<int64_t>(result->size());
  replace_key(ctx, *dst, result);
  ctx.reply().integer(n);
  notify(ctx, k_notify_set, op == SetOp::union_ ? "sunionstore" : "sdiffstore", *dst);
}

void cmd_sunion(CmdContext& ctx) {
  sunion_diff_generic(ctx, ctx.args().subspan(1), {}, SetOp::union_);
}
void cmd_sunionstore(CmdContext& ctx) {
  sunion_diff_generic(ctx, ctx.args().subspan(2), ctx.arg(1), SetOp::union_);
}
void cmd_sdiff(CmdContext& ctx) {
  sunion_diff_generic(ctx, ctx.args().subspan(1), {}, SetOp::diff);
}
void cmd_sdiffstore(CmdContext& ctx) {
  sunion_diff_generic(ctx, ctx.args().subspan(2), ctx.arg(1), SetOp::diff);
}

void cmd_smembers(CmdContext& ctx) {
  Entry* e = lookup_read(ctx, ctx.arg(1));
  if (wrong_type(ctx, e)) {
    return;
  }
  if (e == nullptr) {
    reply_empty_set(ctx);
    return;
  }
  SetRef s = set_of(e);
  ctx.reply().set(s->size());
  s->for_each([&](const SetMember& m) { reply_member(ctx.reply(), m); });
}

// --- Random access ----------------------------------------------------------------------

void srandmember_with_count(CmdContext& ctx) {
  int64_t l = 0;
  if (!parse_i64(ctx.arg(2), l)) {
    ctx.reply().error(errors::k_not_integer);
    return;
  }
  if (l == INT64_MIN) {
    ctx.reply().error(errors::k_srandmember_count_range);
    return;
  }
  bool unique = l >= 0;
  uint64_t count = unique ? static_cast<uint64_t>(l) : static_cast<uint64_t>(-l);
  Entry* e = lookup_read(ctx, ctx.arg(1));
  if (e == nullptr) {
    ctx.reply().array(0);
    return;
  }
  if (wrong_type(ctx, e)) {
    return;
  }
  if (count == 0) {
    ctx.reply().array(0);
    return;
  }
  SetRef s = set_of(e);
  std::mt19937_64& rng = ctx.engine().rng();
  ReplyBuilder& rb = ctx.reply();
  uint64_t size = s->size();

  // Repetitions allowed: independent draws, in random order.
  if (!unique || count == 1) {
    rb.array(count);
    while (count-- > 0) {
      reply_member(rb, s->random(rng));
    }
    return;
  }
  // The whole set.
  if (count >= size) {
    rb.array(size);
    s->for_each([&](const SetMember& m) { reply_member(rb, m); });
    return;
  }
  // A listpack is sampled in one ordered pass.
  if (s->encoding() == ObjEncoding::listpack) {
    rb.array(count);
    sample_in_order(size, count, rng, [&](size_t i) { reply_member(rb, s->listpack_at(i)); });
    return;
  }
  std::vector<std::string> picked;
  if (count * k_srandmember_copy_factor > size) {
    // Close to the whole set: copy it and drop random members until `count` remain.
    picked.reserve(size);
    s->for_each([&](const SetMember& m) { picked.push_back(m.to_string()); });
    while (picked.size() > count) {
      size_t i = rng() % picked.size();
      std::swap(picked[i], picked.back());
      picked.pop_back();
    }
  } else {
    // Much smaller than the set: draw until `count` distinct members were seen.
    std::unordered_set<std::string> seen;
    while (picked.size() < count) {
      std::string m = s->random(rng).to_string();
      if (seen.insert(m).second) {
        picked.push_back(std::move(m));
      }
    }
  }
  rb.array(picked.size());
  for (const std::string& m : picked) {
    rb.bulk(m);
  }
}

void cmd_srandmember(CmdContext& ctx) {
  if (ctx.argc() == 3) {
    srandmember_with_count(ctx);
    return;
  }
  if (ctx.argc() > 3) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  Entry* e = lookup_read(ctx, ctx.arg(1));
  if (e == nullptr) {
    ctx.reply().null();
    return;
  }
  if (wrong_type(ctx, e)) {
    return;
  }
  reply_member(ctx.reply(), set_of(e)->random(ctx.engine().rng()));
}

void spop_with_count(CmdContext& ctx) {
  int64_t requested = 0;
  if (!parse_non_negative(ctx, ctx.arg(2), errors::k_must_be_positive, requested)) {
    return;
  }
  auto count = static_cast<uint64_t>(requested);
  std::string_view key = ctx.arg(1);
  Entry* e = lookup_write(ctx, key);
  if (e == nullptr) {
    reply_empty_set(ctx);
    return;
  }
  if (wrong_type(ctx, e)) {
    return;
  }
  if (count == 0) {
    reply_empty_set(ctx);
    return;
  }
  SetRef s(e, ctx.db().value_seed(e->key()));
  uint64_t size = s->size();
  notify(ctx, k_notify_set, "spop", key);

  // Everything goes: reply as SUNION of the key would, then delete it.
  if (count >= size) {
    std::vector<SetValue*> one{&*s};
    SetValue* all = union_diff(ctx, one, SetOp::union_, false);
    ctx.reply().set(all->size());
    all->for_each([&](const SetMember& m) { reply_member(ctx.reply(), m); });
    delete all;
    delete_emptied(ctx, key);
    ctx.engine().signal_modified_key(ctx.session().db, key, size);
    return;
  }

  std::mt19937_64& rng = ctx.engine().rng();
  ReplyBuilder& rb = ctx.reply();
  uint64_t remaining = size - count;
  rb.set(count);
  if (remaining * k_spop_rebuild_factor > count) {
    // Few members go: pop them one by one (a listpack in one ordered pass).
    edit_set(ctx, e, [&](SetValue& set) {
      if (set.encoding() == ObjEncoding::listpack) {
        std::vector<std::string> popped;
        popped.reserve(count);
        sample_in_order(size, count, rng,
                        [&](size_t i) { popped.push_back(set.listpack_at(i).to_string()); });
        for (const std::string& m : popped) {
          rb.bulk(m);
          set.remove(std::string_view(m));
        }
      } else {
        for (uint64_t i = 0; i < count; ++i) {
          rb.bulk(set.pop_random(rng));
        }
      }
      return true;
    });
  } else {
    // Most members go: move the survivors into a new set and reply with what is left.
    auto before = static_cast<int64_t>(s.bytes());
    SetLimits limits = limits_of(ctx);
    SetValue* survivors = nullptr;
    if (s->encoding() == ObjEncoding::listpack) {
      survivors = new SetValue(ObjEncoding::listpack, rng());
      std::vector<std::string> kept;
      kept.reserve(remaining);
      sample_in_order(size, remaining, rng,
                      [&](size_t i) { kept.push_back(s->listpack_at(i).to_string()); });
      for (const std::string& m : kept) {
        survivors->add(std::string_view(m), limits);
        s->remove(std::string_view(m));
      }
    } else {
      for (uint64_t i = 0; i < remaining; ++i) {
        SetMember m = s->random(rng);
        if (survivors == nullptr) {
          survivors = new SetValue(m.is_int() ? ObjEncoding::intset : ObjEncoding::listpack, rng());
        }
        survivors->add(m, limits);
        s->remove(m);
      }
    }
    s->for_each([&](const SetMember& m) { reply_member(rb, m); });
    // The survivors replace the old value in the entry's slot (both are 8-byte slots).
    s.sync();
    if (e->kind() == Entry::Kind::blob) {
      MemoryCounter::raw_deallocate(e->blob());
    } else {
      delete static_cast<SetValue*>(e->object());
    }
    Entry::ValueSpec spec = set_spec(survivors);
    bool blob = spec.kind == Entry::Kind::blob;
    auto after =
        static_cast<int64_t>(blob ? MemoryCounter::usable_size(spec.blob) : spec.object->bytes());
    ctx.engine().memory().add(after - before);
    e->switch_slot(spec.kind, blob ? static_cast<void*>(spec.blob) : spec.object, spec.encoding);
  }
  ctx.engine().signal_modified_key(ctx.session().db, key, count);
}

void cmd_spop(CmdContext& ctx) {
  if (ctx.argc() == 3) {
    spop_with_count(ctx);
    return;
  }
  if (ctx.argc() > 3) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  std::string_view key = ctx.arg(1);
  Entry* e = lookup_write(ctx, key);
  if (e == nullptr) {
    ctx.reply().null();
    return;
  }
  if (wrong_type(ctx, e)) {
    return;
  }
  std::string member =
      edit_set(ctx, e, [&](SetValue& s) { return s.pop_random(ctx.engine().rng()); });
  notify(ctx, k_notify_set, "spop", key);
  ctx.reply().bulk(member);
  if (set_of(e)->empty()) {
    delete_emptied(ctx, key);
  }
  ctx.engine().signal_modified_key(ctx.session().db, key);
}

// --- SSCAN ------------------------------------------------------------------------------

void cmd_sscan(CmdContext& ctx) {
  uint64_t cursor = 0;
  if (!parse_scan_cursor(ctx.arg(2), cursor)) {
    ctx.reply().error(errors::k_cursor_invalid);
    return;
  }
  Entry* e = lookup_read(ctx, ctx.arg(1));
  if (e == nullptr) {
    ctx.reply().array(2);
    ctx.reply().bulk("0");
    ctx.reply().array(0);
    return;
  }
  if (wrong_type(ctx, e)) {
    return;
  }
  int64_t count = 10;
  std::optional<std::string_view> pattern;
  for (size_t i = 3; i < ctx.argc();) {
    std::string_view opt = c_string(ctx.arg(i));
    bool has_value = ctx.argc() - i >= 2;
    if (iequals(opt, "count") && has_value) {
      if (!parse_i64(ctx.arg(i + 1), count)) {
        ctx.reply().error(errors::k_not_integer);
        return;
      }
      if (count < 1) {
        ctx.reply().error(errors::k_syntax);
        return;
      }
      i += 2;
    } else if (iequals(opt, "match") && has_value) {
      std::string_view p = ctx.arg(i + 1);
      pattern = p == "*" ? std::nullopt : std::optional<std::string_view>(p);
      i += 2;
    } else if (iequals(opt, "novalues")) {
      ctx.reply().error(errors::k_novalues_hscan_only);
      return;
    } else if (iequals(opt, "noscores")) {
      ctx.reply().error(errors::k_noscores_zscan_only);
      return;
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  SetRef s = set_of(e);
  std::vector<std::string_view> found;
  int64_t sampled = 0;
  auto visit = [&](std::string_view m) {
    ++sampled;
    if (!pattern || glob_match(*pattern, m)) {
      found.push_back(m);
    }
  };
  std::vector<std::string> texts;  // integer members printed for the reply
  if (s->encoding() != ObjEncoding::hashtable) {
    s->for_each([&](const SetMember& m) {
      char buf[24];
      std::string_view v = m.view(buf);
      if (!pattern || glob_match(*pattern, v)) {
        texts.emplace_back(v);
      }
    });
    cursor = 0;
  } else {
    int64_t budget = count > INT64_MAX / 10 ? INT64_MAX : count * 10;
    do {
      cursor = s->scan(cursor, visit);
    } while (cursor != 0 && budget-- != 0 && sampled < count);
  }
  ReplyBuilder& rb = ctx.reply();
  rb.array(2);
  rb.bulk(i64_to_string(static_cast<int64_t>(cursor)));
  rb.array(found.size() + texts.size());
  for (std::string_view m : found) {
    rb.bulk(m);
  }
  for (const std::string& m : texts) {
    rb.bulk(m);
  }
}

constexpr CommandSpec k_set_commands[] = {
    {"sadd", -3, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_sadd, "@write @set @fast"},
    {"srem", -3, k_cmd_write | k_cmd_fast, 1, 1, 1, cmd_srem, "@write @set @fast"},
    {"smove", 4, k_cmd_write | k_cmd_fast, 1, 2, 1, cmd_smove, "@write @set @fast"},
    {"sismember", 3, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_sismember, "@read @set @fast"},
    {"smismember", -3, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_smismember, "@read @set @fast"},
    {"scard", 2, k_cmd_readonly | k_cmd_fast, 1, 1, 1, cmd_scard, "@read @set @fast"},
    {"spop", -2, k_cmd_write | k_cmd_fast, 1, 1, 1, cmd_spop, "@write @set @fast"},
    {"srandmember", -2, k_cmd_readonly, 1, 1, 1, cmd_srandmember, "@read @set @slow"},
    {"sinter", -2, k_cmd_readonly, 1, -1, 1, cmd_sinter, "@read @set @slow"},
    {"sintercard", -3, k_cmd_readonly | k_cmd_movablekeys, 0, 0, 0, cmd_sintercard,
     "@read @set @slow"},
    {"sinterstore", -3, k_cmd_write | k_cmd_denyoom, 1, -1, 1, cmd_sinterstore,
     "@write @set @slow"},
    {"sunion", -2, k_cmd_readonly, 1, -1, 1, cmd_sunion, "@read @set @slow"},
    {"sunionstore", -3, k_cmd_write | k_cmd_denyoom, 1, -1, 1, cmd_sunionstore,
     "@write @set @slow"},
    {"sdiff", -2, k_cmd_readonly, 1, -1, 1, cmd_sdiff, "@read @set @slow"},
    {"sdiffstore", -3, k_cmd_write | k_cmd_denyoom, 1, -1, 1, cmd_sdiffstore, "@write @set @slow"},
    {"smembers", 2, k_cmd_readonly, 1, 1, 1, cmd_smembers, "@read @set @slow"},
    {"sscan", -3, k_cmd_readonly, 1, 1, 1, cmd_sscan, "@read @set @slow"},
};

}  // namespace

void register_set_family(CommandRegistry& registry) {
  registry.add(k_set_commands);
}

}  // namespace keyshift::engine
