// SORT and SORT_RO over lists, sets and sorted sets: BY weights (keys or hash fields named by
// a pattern), LIMIT, GET patterns, ASC/DESC, ALPHA and STORE into a list.
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/commands/list_ops.hpp"
#include "engine/keyspace/hash_value.hpp"
#include "engine/keyspace/list_value.hpp"
#include "engine/keyspace/set_value.hpp"
#include "engine/keyspace/string_value.hpp"
#include "engine/keyspace/zset_value.hpp"
#include "engine/util/strconv.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {
namespace {

// --- The read interface: what SORT needs from the value it sorts ------------------------
//
// Every type SORT accepts answers three questions: how many elements, all of them in the
// value's own order, and (lists and sorted sets, whose order means something) a run of
// `count` elements from position `start`, walking from the far end when `desc`.

/// True for the types SORT accepts.
bool sortable(ObjType type) {
  return type == ObjType::list || type == ObjType::set || type == ObjType::zset;
}

size_t element_count(const Entry* e) {
  switch (e->type()) {
    case ObjType::list:
      return static_cast<const ListValue*>(e->object())->size();
    case ObjType::set:
      return SetRef(e)->size();
    default:
      return ZSetRef(e)->size();
  }
}

/// Appends every element of `e` in the value's own order (sorted sets: ascending scores).
void load_all(const Entry* e, std::vector<std::string>& out) {
  switch (e->type()) {
    case ObjType::list:
      static_cast<const ListValue*>(e->object())->for_each([&](const LpValue& v) {
        out.push_back(v.to_string());
      });
      return;
    case ObjType::set:
      SetRef(e)->for_each([&](const SetMember& m) { out.push_back(m.to_string()); });
      return;
    default:
      ZSetRef(e)->for_each([&](std::string_view member, double) { out.emplace_back(member); });
      return;
  }
}

/// Appends `count` elements of a list or sorted set from position `start`, counted from the
/// tail (or highest score) and walking toward the head when `desc`.
void load_range(const Entry* e, size_t start, size_t count, bool desc,
                std::vector<std::string>& out) {
  if (count == 0) {
    return;
  }
  if (e->type() == ObjType::list) {
    const auto* list = static_cast<const ListValue*>(e->object());
    auto index = static_cast<int64_t>(desc ? list->size() - start - 1 : start);
    for (ListValue::Reader r(*list, index, !desc); r.valid() && out.size() < count; r.advance()) {
      out.push_back(r.value().to_string());
    }
    return;
  }
  ZSetRef(e)->range_by_rank(start, start + count - 1, desc,
                            [&](std::string_view member, double) { out.emplace_back(member); });
}

/// Valkey sorts a sorted set through its skiplist form, converting a listpack for good
/// (even for SORT_RO); the memory count and OBJECT ENCODING follow.
void prepare_source(CmdContext& ctx, Entry* e) {
  if (e->type() != ObjType::zset) {
    return;
  }
  ZSetRef z(e, ctx.db().value_seed(e->key()));
  auto before = static_cast<int64_t>(z.bytes());
  z->convert_to_skiplist();
  z.sync();
  ctx.engine().memory().add(static_cast<int64_t>(z.bytes()) - before);
}

/// The value of `field` in the hash at `e`, nullopt when absent (or its TTL passed).
std::optional<std::string> hash_field(const Entry* e, std::string_view field, int64_t now_ms) {
  HashField f;
  HashBuf buf;
  if (!HashRef(e)->find(field, f, buf) ||
      (f.expire_ms != k_hash_no_expire && f.expire_ms <= now_ms)) {
    return std::nullopt;
  }
  return std::string(f.value);
}

/// A list holding `elements` in order, in the encoding a fresh list of them gets.
ListValue* make_list(CmdContext& ctx, const std::vector<std::string>& elements) {
  auto* list = new ListValue();
  for (const std::string& v : elements) {
    list->push(ListSide::tail, v);
  }
  list->convert_auto(list_limits(ctx.engine()));
  return list;
}

// --- Patterns -----------------------------------------------------------------------------

/// The value a BY or GET pattern names for element `subst` (Valkey's lookupKeyByPattern):
/// "#" is the element itself; otherwise the first '*' is replaced by the element, and a
/// "->field" suffix after it reads a hash field instead of a string key. nullopt when the
/// pattern has no '*', the key is missing or holds the wrong type.
std::optional<std::string> lookup_by_pattern(CmdContext& ctx, std::string_view pattern,
                                             std::string_view subst) {
  std::string_view c = c_string(pattern);
  if (c == "#") {
    return std::string(subst);
  }
  size_t star = c.find('*');
  if (star == std::string_view::npos) {
    return std::nullopt;
  }
  size_t arrow = c.find("->", star + 1);
  std::string_view field;
  bool deref = arrow != std::string_view::npos && arrow + 2 < c.size();
  if (deref) {
    field = pattern.substr(arrow + 2);
  }
  std::string key(pattern.substr(0, star));
  key += subst;
  key += pattern.substr(star + 1, (deref ? arrow : pattern.size()) - (star + 1));
  Entry* e = ctx.db().lookup_read(key, !ctx.session().has(k_session_no_touch));
  if (e == nullptr) {
    return std::nullopt;
  }
  if (deref) {
    if (e->type() != ObjType::hash) {
      return std::nullopt;
    }
    return hash_field(e, field, ctx.now_ms());
  }
  if (e->type() != ObjType::string) {
    return std::nullopt;
  }
  IntBuffer buf;
  return std::string(string_of(e, buf));
}

// --- Sorting ------------------------------------------------------------------------------

struct SortOptions {
  bool desc = false;
  bool alpha = false;
  bool dontsort = false;  // BY with a pattern without '*': keep the value's own order
  int64_t limit_start = 0;
  int64_t limit_count = -1;
  std::optional<std::string_view> by;
  std::optional<std::string_view> store;
  std::vector<std::string_view> gets;
};

struct SortItem {
  std::string value;
  double score = 0;
  std::optional<std::string> weight;  // ALPHA with BY: the text to compare
};

/// Byte-wise comparison with the shorter string first on a tie (compareStringObjects).
int compare_binary(std::string_view a, std::string_view b) {
  int c = std::memcmp(a.data(), b.data(), std::min(a.size(), b.size()));
  if (c != 0) {
    return c < 0 ? -1 : 1;
  }
  return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

/// strcoll() in the C locale, which Valkey uses for ALPHA without STORE: byte order up to
/// the first NUL.
int compare_collate(std::string_view a, std::string_view b) {
  return compare_binary(c_string(a), c_string(b));
}

/// strtod() as Valkey reads weights: the whole text (up to a NUL), no overflow, not NaN.
bool parse_weight(const std::string& text, double& out) {
  errno = 0;
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return *end == '\0' && errno != ERANGE && !std::isnan(out);
}

/// Parses SORT's options from argument 2; false after replying an error.
bool parse_options(CmdContext& ctx, bool readonly, SortOptions& o) {
  for (size_t j = 2; j < ctx.argc(); ++j) {
    std::string_view opt = c_string(ctx.arg(j));
    size_t left = ctx.argc() - j - 1;
    if (iequals(opt, "asc")) {
      o.desc = false;
    } else if (iequals(opt, "desc")) {
      o.desc = true;
    } else if (iequals(opt, "alpha")) {
      o.alpha = true;
    } else if (iequals(opt, "limit") && left >= 2) {
      if (!parse_i64(ctx.arg(j + 1), o.limit_start) || !parse_i64(ctx.arg(j + 2), o.limit_count)) {
        ctx.reply().error(errors::k_not_integer);
        return false;
      }
      j += 2;
    } else if (!readonly && iequals(opt, "store") && left >= 1) {
      o.store = ctx.arg(++j);
    } else if (iequals(opt, "by") && left >= 1) {
      o.by = ctx.arg(++j);
      // A constant pattern names the same weight for every element: nothing to sort.
      if (c_string(*o.by).find('*') == std::string_view::npos) {
        o.dontsort = true;
      }
    } else if (iequals(opt, "get") && left >= 1) {
      o.gets.push_back(ctx.arg(++j));
    } else {
      ctx.reply().error(errors::k_syntax);
      return false;
    }
  }
  return true;
}

void sort_generic(CmdContext& ctx, bool readonly) {
  SortOptions o;
  if (!parse_options(ctx, readonly, o)) {
    return;
  }
  Entry* e = ctx.db().lookup_read(ctx.arg(1), !ctx.session().has(k_session_no_touch));
  if (e != nullptr && !sortable(e->type())) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  ObjType type = e != nullptr ? e->type() : ObjType::list;  // a missing key: an empty list
  // A set has no order of its own: a stored result, or one a script sees, is sorted so
  // that it is the same on replicas and in the AOF.
  if (o.dontsort && type == ObjType::set && (o.store || ctx.session().has(k_session_script))) {
    o.dontsort = false;
    o.alpha = true;
    o.by.reset();
  }
  if (e != nullptr) {
    prepare_source(ctx, e);
  }

  auto vectorlen = static_cast<int64_t>(e != nullptr ? element_count(e) : 0);
  int64_t start = std::min(std::max<int64_t>(o.limit_start, 0), vectorlen);
  int64_t limit_count = std::min(std::max<int64_t>(o.limit_count, -1), vectorlen);
  int64_t end = limit_count < 0 ? vectorlen - 1 : start + limit_count - 1;
  if (start >= vectorlen) {
    start = vectorlen - 1;
    end = vectorlen - 2;
  }
  if (end >= vectorlen) {
    end = vectorlen - 1;
  }

  // Ordered values kept in their order load just the requested run.
  std::vector<std::string> elements;
  bool ordered = type == ObjType::list || type == ObjType::zset;
  if (e != nullptr && ordered && o.dontsort) {
    if (start != 0 || end != vectorlen - 1) {
      vectorlen = end - start + 1;
    }
    if (end >= start) {
      load_range(e, static_cast<size_t>(start), static_cast<size_t>(vectorlen), o.desc, elements);
      end -= start;
      start = 0;
    }
  } else if (e != nullptr) {
    elements.reserve(static_cast<size_t>(vectorlen));
    load_all(e, elements);
  }

  std::vector<SortItem> items(elements.size());
  for (size_t j = 0; j < elements.size(); ++j) {
    items[j].value = std::move(elements[j]);
  }
  bool conversion_error = false;
  if (!o.dontsort) {
    for (SortItem& item : items) {
      std::optional<std::string> weight;
      if (o.by) {
        weight = lookup_by_pattern(ctx, *o.by, item.value);
        if (!weight) {
          continue;
        }
      }
      if (o.alpha) {
        if (o.by) {
          item.weight = std::move(weight);
        }
      } else if (!parse_weight(o.by ? *weight : item.value, item.score)) {
        conversion_error = true;
      }
    }
    bool by_pattern = o.by.has_value();
    bool binary = o.store.has_value();
    auto compare = [&](const SortItem& a, const SortItem& b) {
      int c = 0;
      if (!o.alpha) {
        if (a.score != b.score) {
          c = a.score > b.score ? 1 : -1;
        } else {
          // Equal weights fall back to the elements so the order is deterministic.
          c = compare_binary(a.value, b.value);
        }
      } else if (by_pattern) {
        if (!a.weight || !b.weight) {
          c = a.weight.has_value() == b.weight.has_value() ? 0 : (!a.weight ? -1 : 1);
        } else {
          c = binary ? compare_binary(*a.weight, *b.weight) : compare_collate(*a.weight, *b.weight);
        }
      } else {
        c = binary ? compare_binary(a.value, b.value) : compare_collate(a.value, b.value);
      }
      return (o.desc ? -c : c) < 0;
    };
    std::stable_sort(items.begin(), items.end(), compare);
  }

  size_t per_element = o.gets.empty() ? 1 : o.gets.size();
  size_t selected = end >= start ? static_cast<size_t>(end - start + 1) : 0;
  size_t outputlen = per_element * selected;
  if (conversion_error) {
    ctx.reply().error(errors::k_sort_not_double);
    return;
  }
  ReplyBuilder& rb = ctx.reply();
  if (!o.store) {
    rb.array(outputlen);
    for (int64_t j = start; j <= end; ++j) {
      const std::string& value = items[static_cast<size_t>(j)].value;
      if (o.gets.empty()) {
        rb.bulk(value);
      }
      for (std::string_view pattern : o.gets) {
        std::optional<std::string> got = lookup_by_pattern(ctx, pattern, value);
        if (got) {
          rb.bulk(*got);
        } else {
          rb.null();
        }
      }
    }
    return;
  }

  std::vector<std::string> out;
  out.reserve(outputlen);
  for (int64_t j = start; j <= end; ++j) {
    std::string& value = items[static_cast<size_t>(j)].value;
    if (o.gets.empty()) {
      out.push_back(std::move(value));
      continue;
    }
    for (std::string_view pattern : o.gets) {
      out.push_back(lookup_by_pattern(ctx, pattern, value).value_or(std::string()));
    }
  }
  std::string_view dst = *o.store;
  int db = ctx.session().db;
  if (!out.empty()) {
    ListValue* list = make_list(ctx, out);
    Entry::ValueSpec spec;
    spec.kind = Entry::Kind::object;
    spec.object = list;
    spec.type = ObjType::list;
    spec.encoding = list->encoding();
    ctx.db().set(dst, spec);
    ctx.engine().signal_modified_key(db, dst);
    ctx.engine().notify_keyspace_event(k_notify_list, "sortstore", dst, db);
    ctx.engine().signal_key_as_ready(db, dst);  // a client may wait in BLPOP on dst
  } else if (ctx.db().remove(dst)) {
    ctx.engine().signal_modified_key(db, dst);
    ctx.engine().notify_keyspace_event(k_notify_generic, "del", dst, db);
  }
  rb.integer(static_cast<int64_t>(outputlen));
}

void cmd_sort(CmdContext& ctx) {
  sort_generic(ctx, false);
}
void cmd_sort_ro(CmdContext& ctx) {
  sort_generic(ctx, true);
}

constexpr CommandSpec k_sort_commands[] = {
    {"sort", -2, k_cmd_write | k_cmd_denyoom | k_cmd_movablekeys, 1, 1, 1, cmd_sort,
     "@write @set @sortedset @list @slow @dangerous"},
    {"sort_ro", -2, k_cmd_readonly | k_cmd_movablekeys, 1, 1, 1, cmd_sort_ro,
     "@read @set @sortedset @list @slow @dangerous"},
};

}  // namespace

void register_sort_family(CommandRegistry& registry) {
  registry.add(k_sort_commands);
}

}  // namespace keyshift::engine
