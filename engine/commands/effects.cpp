// The effects of a write as Valkey 8.0.1 propagates them (src/t_string.c setGenericCommand,
// getexCommand, incrbyfloatCommand; expire.c expireGenericCommand; t_set.c spopCommand;
// t_list.c / t_zset.c blocking and MPOP pops; t_hash.c hincrbyfloatCommand; cluster.c
// restoreCommand; t_stream.c xaddCommand), derived after the command from its arguments,
// its reply and the key's state, so the command families stay free of propagation code.
#include "engine/commands/effects.hpp"

#include "engine/engine.hpp"
#include "engine/resp/resp_value.hpp"
#include "engine/server/config_table.hpp"
#include "engine/util/strconv.hpp"
#include "engine/util/strings.hpp"

#include <string>

namespace keyshift::engine {
namespace {

using Argv = std::vector<std::string>;

Argv copy(std::span<const std::string_view> argv) {
  return Argv(argv.begin(), argv.end());
}

// Deletion of a key whose new TTL is already past: UNLINK when lazyfree-lazy-expire is on.
std::string deletion_name(const Engine& engine) {
  const DirectiveSpec* spec = find_directive("lazyfree-lazy-expire");
  return spec != nullptr && directive_value(*spec, engine.config()) == "no" ? "DEL" : "UNLINK";
}

RespValue decode(std::string_view reply) {
  RespValue v;
  size_t used = 0;
  if (parse_resp(reply, v, used) != RespParse::ok) {
    return RespValue{};
  }
  return v;
}

bool is_array(const RespValue& v) {
  return v.type == RespValue::Type::array || v.type == RespValue::Type::set ||
         v.type == RespValue::Type::push;
}

// The key's absolute TTL after the command, or -1 (no TTL), or -2 (no key).
int64_t ttl_after(Engine& engine, int db, std::string_view key) {
  Entry* e = engine.find_entry_raw(db, key);
  if (e == nullptr) {
    return -2;
  }
  return e->has_expire() ? e->expire_ms() : -1;
}

void emit(std::vector<PropagatedCommand>& out, int db, Argv argv) {
  out.push_back(PropagatedCommand{db, std::move(argv)});
}

// A key-TTL write ends in one of three states: a TTL (written as `with_ttl` builds it),
// no key (the TTL was past: deleted), or unchanged in shape (propagated as sent).
template <typename WithTtl>
void ttl_effect(Engine& engine, int db, std::span<const std::string_view> argv,
                std::vector<PropagatedCommand>& out, WithTtl with_ttl) {
  int64_t ttl = ttl_after(engine, db, argv[1]);
  if (ttl == -2) {
    emit(out, db, {deletion_name(engine), std::string(argv[1])});
  } else if (ttl >= 0) {
    emit(out, db, with_ttl(ttl));
  } else {
    emit(out, db, copy(argv));
  }
}

bool has_option(std::span<const std::string_view> argv, size_t from,
                std::initializer_list<std::string_view> names) {
  for (size_t i = from; i < argv.size(); ++i) {
    for (std::string_view n : names) {
      if (iequals(argv[i], n)) {
        return true;
      }
    }
  }
  return false;
}

void pop_effect(int db, std::string_view name, const RespValue& reply, bool with_count,
                std::vector<PropagatedCommand>& out) {
  // [key, value] (BLPOP), [key, member, score] (BZPOPMIN), [key, [elements]] (MPOP).
  if (!is_array(reply) || reply.elements.empty()) {
    return;
  }
  Argv argv{std::string(name), reply.elements[0].str};
  if (with_count && reply.elements.size() >= 2) {
    argv.push_back(std::to_string(reply.elements[1].elements.size()));
  }
  emit(out, db, std::move(argv));
}

}  // namespace

void command_effects(Engine& engine, int db, std::span<const std::string_view> argv,
                     std::string_view reply, std::vector<PropagatedCommand>& out) {
  std::string name = to_lower(argv[0]);
  if (name == "expire" || name == "pexpire" || name == "expireat" || name == "pexpireat") {
    ttl_effect(engine, db, argv, out, [&](int64_t ttl) {
      Argv a = copy(argv);
      a[0] = "PEXPIREAT";
      a[2] = std::to_string(ttl);
      return a;
    });
    return;
  }
  if (name == "setex" || name == "psetex") {
    ttl_effect(engine, db, argv, out, [&](int64_t ttl) {
      return Argv{"SET", std::string(argv[1]), std::string(argv[3]), "PXAT", std::to_string(ttl)};
    });
    return;
  }
  if (name == "set") {
    if (has_option(argv, 3, {"ex", "px", "exat"})) {
      ttl_effect(engine, db, argv, out, [&](int64_t ttl) {
        return Argv{"SET", std::string(argv[1]), std::string(argv[2]), "PXAT", std::to_string(ttl)};
      });
      return;
    }
    Argv a;
    for (size_t i = 0; i < argv.size(); ++i) {
      if (i < 3 || !iequals(argv[i], "get")) {
        a.emplace_back(argv[i]);
      }
    }
    emit(out, db, std::move(a));
    return;
  }
  if (name == "getex") {
    if (has_option(argv, 2, {"persist"})) {
      emit(out, db, {"PERSIST", std::string(argv[1])});
      return;
    }
    ttl_effect(engine, db, argv, out, [&](int64_t ttl) {
      return Argv{"PEXPIREAT", std::string(argv[1]), std::to_string(ttl)};
    });
    return;
  }
  if (name == "incrbyfloat") {
    RespValue v = decode(reply);
    emit(out, db, {"SET", std::string(argv[1]), v.str, "KEEPTTL"});
    return;
  }
  if (name == "hincrbyfloat") {
    RespValue v = decode(reply);
    emit(out, db, {"HSET", std::string(argv[1]), std::string(argv[2]), v.str});
    return;
  }
  if (name == "spop") {
    RespValue v = decode(reply);
    Argv a{"SREM", std::string(argv[1])};
    if (v.type == RespValue::Type::bulk) {
      a.push_back(v.str);
    } else if (is_array(v)) {
      for (const RespValue& m : v.elements) {
        a.push_back(m.str);
      }
    }
    if (a.size() > 2) {
      emit(out, db, std::move(a));
    }
    return;
  }
  if (name == "restore") {
    if (argv[2] != "0" && !has_option(argv, 4, {"absttl"})) {
      ttl_effect(engine, db, argv, out, [&](int64_t ttl) {
        Argv a = copy(argv);
        a[2] = std::to_string(ttl);
        a.emplace_back("ABSTTL");
        return a;
      });
      return;
    }
    emit(out, db, copy(argv));
    return;
  }
  if (name == "blpop" || name == "brpop") {
    pop_effect(db, name == "blpop" ? "LPOP" : "RPOP", decode(reply), false, out);
    return;
  }
  if (name == "bzpopmin" || name == "bzpopmax") {
    pop_effect(db, name == "bzpopmin" ? "ZPOPMIN" : "ZPOPMAX", decode(reply), false, out);
    return;
  }
  if (name == "brpoplpush") {
    emit(out, db, {"RPOPLPUSH", std::string(argv[1]), std::string(argv[2])});
    return;
  }
  if (name == "blmove") {
    emit(out, db,
         {"LMOVE", std::string(argv[1]), std::string(argv[2]), std::string(argv[3]),
          std::string(argv[4])});
    return;
  }
  if (name == "lmpop" || name == "blmpop" || name == "zmpop" || name == "bzmpop") {
    bool list = name == "lmpop" || name == "blmpop";
    bool left = has_option(argv, 2, {list ? "left" : "min"});
    std::string_view pop = list ? (left ? "LPOP" : "RPOP") : (left ? "ZPOPMIN" : "ZPOPMAX");
    pop_effect(db, pop, decode(reply), true, out);
    return;
  }
  if (name == "xadd") {
    // XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] id|* field value...
    size_t i = 2;
    while (i < argv.size()) {
      if (iequals(argv[i], "nomkstream")) {
        ++i;
      } else if (iequals(argv[i], "maxlen") || iequals(argv[i], "minid")) {
        ++i;
        if (i < argv.size() && (argv[i] == "=" || argv[i] == "~")) {
          ++i;
        }
        ++i;
      } else if (iequals(argv[i], "limit")) {
        i += 2;
      } else {
        break;
      }
    }
    Argv a = copy(argv);
    RespValue v = decode(reply);
    if (i < a.size() && a[i].find('*') != std::string::npos && v.type == RespValue::Type::bulk) {
      a[i] = v.str;
    }
    emit(out, db, std::move(a));
    return;
  }
  if (name == "migrate") {
    // MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH ...] [KEYS k...]: the keys
    // that left this server are deleted here (replaying the MIGRATE would reconnect).
    Argv del{"DEL"};
    std::vector<std::string_view> keys;
    if (!argv[3].empty()) {
      keys.push_back(argv[3]);
    } else {
      for (size_t i = 6; i < argv.size(); ++i) {
        if (iequals(argv[i], "keys")) {
          keys.assign(argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
          break;
        }
      }
    }
    for (std::string_view k : keys) {
      if (engine.find_entry_raw(db, k) == nullptr) {
        del.emplace_back(k);
      }
    }
    if (del.size() > 1) {
      emit(out, db, std::move(del));
    }
    return;
  }
  if (name == "hexpire" || name == "hpexpire" || name == "hexpireat") {
    // HEXPIRE key t [NX|XX|GT|LT] FIELDS n f...: one absolute time for every field.
    int64_t t = 0;
    if (!parse_i64(argv[2], t)) {
      emit(out, db, copy(argv));
      return;
    }
    int64_t at = name == "hexpire"    ? engine.keyspace().now_ms() + t * 1000
                 : name == "hpexpire" ? engine.keyspace().now_ms() + t
                                      : t * 1000;
    Argv a = copy(argv);
    a[0] = "HPEXPIREAT";
    a[2] = std::to_string(at);
    emit(out, db, std::move(a));
    return;
  }
  emit(out, db, copy(argv));
}

}  // namespace keyshift::engine
