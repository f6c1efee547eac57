#include "compat/dump/jsonl_reader.hpp"

#include "compat/report/json_value.hpp"
#include "engine/engine.hpp"
#include "engine/persistence/rdb_load.hpp"
#include "engine/util/strconv.hpp"
#include "engine/util/strings.hpp"

#include <fmt/core.h>

#include <cmath>
#include <utility>

namespace keyshift::compat {
namespace {

using engine::Expected;
using engine::RdbKind;
using engine::RdbStreamId;
using engine::Unexpected;

/// A malformed line: thrown inside this file only, turned into an error text at its edge.
struct BadLine {
  std::string why;
};

[[noreturn]] void bad(std::string why) {
  throw BadLine{std::move(why)};
}

const JsonValue& member(const JsonValue& object, std::string_view name) {
  const JsonValue* v = object.find(name);
  if (v == nullptr) {
    bad(fmt::format("no \"{}\"", name));
  }
  return *v;
}

const std::vector<JsonValue>& array_of(const JsonValue& v, std::string_view what) {
  if (v.type != JsonValue::Type::array) {
    bad(fmt::format("{} is not an array", what));
  }
  return v.array;
}

/// A JSON string, or {"hex": "..."} for bytes that are not UTF-8 (append_json_bytes).
std::string bytes_of(const JsonValue& v, std::string_view what) {
  if (v.type == JsonValue::Type::string) {
    return v.string;
  }
  const JsonValue* hex = v.type == JsonValue::Type::object ? v.find("hex") : nullptr;
  if (hex == nullptr || hex->type != JsonValue::Type::string || hex->string.size() % 2 != 0) {
    bad(fmt::format("{} is neither a string nor {{\"hex\": ...}}", what));
  }
  std::string out;
  out.reserve(hex->string.size() / 2);
  for (size_t i = 0; i < hex->string.size(); i += 2) {
    int high = engine::hex_digit_value(hex->string[i]);
    int low = engine::hex_digit_value(hex->string[i + 1]);
    if (high < 0 || low < 0) {
      bad(fmt::format("{} has a bad hex digit", what));
    }
    out.push_back(static_cast<char>(high * 16 + low));
  }
  return out;
}

/// A whole number that a double holds exactly.
int64_t integer_of(const JsonValue& v, std::string_view what) {
  if (v.type != JsonValue::Type::number || std::trunc(v.number) != v.number ||
      std::fabs(v.number) > 9007199254740992.0) {
    bad(fmt::format("{} is not an integer", what));
  }
  return static_cast<int64_t>(v.number);
}

int64_t optional_integer(const JsonValue& v, std::string_view what) {
  return v.type == JsonValue::Type::null ? -1 : integer_of(v, what);
}

RdbStreamId stream_id_of(const JsonValue& v, std::string_view what) {
  if (v.type != JsonValue::Type::string) {
    bad(fmt::format("{} is not an ID string", what));
  }
  size_t dash = v.string.find('-');
  RdbStreamId id;
  if (dash == std::string::npos ||
      !engine::parse_u64(std::string_view(v.string).substr(0, dash), id.ms) ||
      !engine::parse_u64(std::string_view(v.string).substr(dash + 1), id.seq)) {
    bad(fmt::format("{} \"{}\" is not MS-SEQ", what, v.string));
  }
  return id;
}

void read_stream(const JsonValue& v, engine::RdbStream& s) {
  if (v.type != JsonValue::Type::object) {
    bad("a stream value is not an object");
  }
  s.length = static_cast<uint64_t>(integer_of(member(v, "length"), "length"));
  s.last_id = stream_id_of(member(v, "last_id"), "last_id");
  s.first_id = stream_id_of(member(v, "first_id"), "first_id");
  s.max_deleted_id = stream_id_of(member(v, "max_deleted_id"), "max_deleted_id");
  s.entries_added = static_cast<uint64_t>(integer_of(member(v, "entries_added"), "entries_added"));
  s.has_v2_metadata = true;
  for (const JsonValue& e : array_of(member(v, "entries"), "entries")) {
    const auto& pair = array_of(e, "an entry");
    if (pair.size() != 2) {
      bad("an entry is not [id, [field, value, ...]]");
    }
    engine::RdbStreamEntry entry;
    entry.id = stream_id_of(pair[0], "an entry ID");
    const auto& fields = array_of(pair[1], "an entry's fields");
    if (fields.size() % 2 != 0) {
      bad("an entry has a field without a value");
    }
    for (size_t i = 0; i < fields.size(); i += 2) {
      entry.fields.emplace_back(bytes_of(fields[i], "a field"), bytes_of(fields[i + 1], "a value"));
    }
    s.entries.push_back(std::move(entry));
  }
  for (const JsonValue& g : array_of(member(v, "groups"), "groups")) {
    engine::RdbStreamGroup group;
    group.name = bytes_of(member(g, "name"), "a group name");
    group.last_delivered = stream_id_of(member(g, "last_delivered_id"), "last_delivered_id");
    group.entries_read = optional_integer(member(g, "entries_read"), "entries_read");
    for (const JsonValue& p : array_of(member(g, "pending"), "pending")) {
      const auto& nack = array_of(p, "a pending entry");
      if (nack.size() != 3) {
        bad("a pending entry is not [id, delivery_time_ms, delivery_count]");
      }
      engine::RdbStreamNack n;
      n.id = stream_id_of(nack[0], "a pending ID");
      n.delivery_time_ms = integer_of(nack[1], "delivery_time_ms");
      n.delivery_count = static_cast<uint64_t>(integer_of(nack[2], "delivery_count"));
      group.pending.push_back(n);
    }
    for (const JsonValue& c : array_of(member(g, "consumers"), "consumers")) {
      engine::RdbStreamConsumer consumer;
      consumer.name = bytes_of(member(c, "name"), "a consumer name");
      consumer.seen_time_ms = integer_of(member(c, "seen_time_ms"), "seen_time_ms");
      consumer.active_time_ms = optional_integer(member(c, "active_time_ms"), "active_time_ms");
      for (const JsonValue& id : array_of(member(c, "pending"), "a consumer's pending")) {
        consumer.pending.push_back(stream_id_of(id, "a consumer's pending ID"));
      }
      group.consumers.push_back(std::move(consumer));
    }
    s.groups.push_back(std::move(group));
  }
}

engine::RdbKey key_of(const JsonValue& line) {
  if (line.type != JsonValue::Type::object) {
    bad("the line is not a JSON object");
  }
  engine::RdbKey k;
  int64_t db = integer_of(member(line, "db"), "db");
  if (db < 0) {
    bad("db is negative");
  }
  k.db = static_cast<uint64_t>(db);
  k.key = bytes_of(member(line, "key"), "key");
  k.expire_ms = optional_integer(member(line, "expire_ms"), "expire_ms");
  const JsonValue& type = member(line, "type");
  const JsonValue& value = member(line, "value");
  engine::RdbValue& v = k.value;
  // Both arms must be views: `cond ? std::string : ""` makes a temporary string.
  std::string_view name =
      type.type == JsonValue::Type::string ? std::string_view(type.string) : std::string_view();
  if (name == "string") {
    v.kind = RdbKind::string;
    v.str = bytes_of(value, "value");
  } else if (name == "list" || name == "set") {
    v.kind = name == "list" ? RdbKind::list : RdbKind::set;
    for (const JsonValue& item : array_of(value, "value")) {
      v.items.push_back(bytes_of(item, "an element"));
    }
  } else if (name == "zset") {
    v.kind = RdbKind::zset;
    for (const JsonValue& item : array_of(value, "value")) {
      const auto& pair = array_of(item, "a member");
      double score = 0;
      if (pair.size() != 2 || pair[1].type != JsonValue::Type::string ||
          !engine::parse_double(pair[1].string, score)) {
        bad("a sorted-set member is not [member, \"score\"]");
      }
      v.zset.emplace_back(bytes_of(pair[0], "a member"), score);
    }
  } else if (name == "hash") {
    v.kind = RdbKind::hash;
    for (const JsonValue& item : array_of(value, "value")) {
      const auto& pair = array_of(item, "a field");
      if (pair.size() != 2) {
        bad("a hash field is not [field, value]");
      }
      v.hash.push_back({bytes_of(pair[0], "a field"), bytes_of(pair[1], "a value"), -1});
    }
    if (const JsonValue* ttls = line.find("field_ttls")) {
      for (const JsonValue& item : array_of(*ttls, "field_ttls")) {
        const auto& pair = array_of(item, "a field TTL");
        if (pair.size() != 2) {
          bad("a field TTL is not [field, expire_ms]");
        }
        std::string field = bytes_of(pair[0], "a field");
        int64_t at = integer_of(pair[1], "a field's expire_ms");
        bool found = false;
        for (engine::RdbHashField& f : v.hash) {
          if (f.field == field) {
            f.expire_ms = at;
            found = true;
          }
        }
        if (!found) {
          bad("field_ttls names a field the hash does not have");
        }
      }
    }
  } else if (name == "stream") {
    v.kind = RdbKind::stream;
    read_stream(value, v.stream);
  } else if (name == "module" || name == "pathhash") {
    bad(fmt::format("a {} key has no value keyshift can load", name));
  } else {
    bad("type is not one of string, list, set, zset, hash, stream");
  }
  return k;
}

}  // namespace

Expected<engine::RdbKey, std::string> parse_dump_line(std::string_view line) {
  try {
    return key_of(parse_json(line));
  } catch (const JsonError& e) {
    return Unexpected{fmt::format("byte {} of the line: {}", e.offset, e.what())};
  } catch (const BadLine& e) {
    return Unexpected{e.why};
  }
}

Expected<uint64_t, std::string> read_dump_lines(
    std::string_view text,
    const std::function<Expected<bool, std::string>(engine::RdbKey&)>& on_key) {
  uint64_t keys = 0;
  uint64_t number = 0;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    std::string_view line = text.substr(at, end - at);
    ++number;
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
      auto key = parse_dump_line(line);
      if (!key) {
        return Unexpected{fmt::format("line {}: {}", number, key.error())};
      }
      key->offset = at;
      auto taken = on_key(*key);
      if (!taken) {
        return Unexpected{fmt::format("line {}: {}", number, taken.error())};
      }
      ++keys;
    }
    at = end + 1;
  }
  return keys;
}

Expected<uint64_t, std::string> load_jsonl(engine::Engine& engine, std::string_view text) {
  uint64_t loaded = 0;
  auto read = read_dump_lines(text, [&](engine::RdbKey& k) -> Expected<bool, std::string> {
    if (k.db >= static_cast<uint64_t>(engine.db_count())) {
      return Unexpected{fmt::format("db {} is beyond the {} databases", k.db, engine.db_count())};
    }
    int64_t now = engine.clock().now_ms();
    if (k.expire_ms >= 0 && k.expire_ms <= now) {
      return true;  // already expired: a server's load drops it too
    }
    engine::Db& db = engine.db(static_cast<int>(k.db));
    if (db.lookup(k.key, false) != nullptr) {
      return Unexpected{std::string("the key is given twice")};
    }
    // The spec of a string views the value's bytes, so `k` stays alive until add().
    auto spec = engine::build_engine_value(engine, std::move(k.value), now);
    if (!spec) {
      return Unexpected{spec.error()};
    }
    db.add(k.key, *spec, k.expire_ms);
    ++loaded;
    return true;
  });
  if (!read) {
    return Unexpected{read.error()};
  }
  return loaded;
}

}  // namespace keyshift::compat
