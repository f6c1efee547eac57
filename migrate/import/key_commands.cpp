#include "migrate/import/key_commands.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>

namespace keyshift::migrate {
namespace {

std::string id_text(const engine::RdbStreamId& id) {
  return std::to_string(id.ms) + "-" + std::to_string(id.seq);
}

/// A score as ZADD reads it back exactly (the shortest text that round-trips).
std::string score_text(double score) {
  return fmt::format("{}", score);
}

}  // namespace

std::string temporary_key(std::string_view key) {
  constexpr std::string_view k_suffix = ":keyshift-import-tmp";
  size_t open = key.find('{');
  if (open != std::string_view::npos) {
    size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      // The hash tag decides the slot and stays the first one.
      return std::string(key) + std::string(k_suffix);
    }
  }
  if (key.find('}') == std::string_view::npos && !key.empty()) {
    // No tag: the whole key decides the slot, so it becomes the tag.
    return "{" + std::string(key) + "}" + std::string(k_suffix);
  }
  return std::string("keyshift-import-tmp:") + std::string(key);
}

KeyCommands::KeyCommands(RestoreTarget& target, KeyCommandOptions options)
    : m_target(target), m_options(options) {}

engine::Expected<bool, std::string> KeyCommands::part(std::vector<std::string>& args) {
  m_views.assign(args.begin(), args.end());
  ++m_commands;
  return m_target.send_part(m_db, m_key, m_views);
}

engine::Expected<bool, std::string> KeyCommands::begin(uint64_t db, std::string_view key,
                                                       engine::RdbKind kind) {
  m_db = db;
  m_key = key;
  m_kind = kind;
  m_string.clear();
  m_chunk.clear();
  m_chunk_bytes = 0;
  m_chunk_elements = 0;
  m_elements = 0;
  m_chunks = 0;
  m_field_ttls.clear();
  m_deleted.clear();
  m_pending.clear();
  if (kind == engine::RdbKind::string) {
    return true;
  }
  m_temp = temporary_key(key);
  // A run killed in the middle of this key left part of it here: start it over.
  std::vector<std::string> del{"DEL", m_temp};
  return part(del);
}

engine::Expected<bool, std::string> KeyCommands::flush_chunk() {
  if (m_chunk.size() <= 2) {
    return true;
  }
  if (auto ok = part(m_chunk); !ok) {
    return ok;
  }
  ++m_chunks;
  m_chunk.clear();
  m_chunk_bytes = 0;
  m_chunk_elements = 0;
  for (auto& [field, when] : m_field_ttls) {
    std::vector<std::string> args{"HPEXPIREAT", m_temp, std::to_string(when),
                                  "FIELDS",     "1",    std::move(field)};
    if (auto ok = part(args); !ok) {
      return ok;
    }
  }
  m_field_ttls.clear();
  return true;
}

void KeyCommands::expect_pending(const engine::RdbStream& stream) {
  for (const engine::RdbStreamGroup& g : stream.groups) {
    for (const engine::RdbStreamNack& n : g.pending) {
      m_pending.insert({n.id.ms, n.id.seq});
    }
  }
}

engine::Expected<bool, std::string> KeyCommands::add(engine::RdbValue& batch) {
  // Appends one element's arguments, sending the chunk once it is full.
  auto element = [this](std::string_view command, auto&&... args) {
    if (m_chunk.empty()) {
      m_chunk.emplace_back(command);
      m_chunk.push_back(m_temp);
    }
    (m_chunk_bytes += ... += args.size());
    (m_chunk.emplace_back(std::forward<decltype(args)>(args)), ...);
    ++m_chunk_elements;
    ++m_elements;
    if (m_chunk_bytes >= m_options.chunk_bytes || m_chunk_elements >= m_options.chunk_elements) {
      return flush_chunk();
    }
    return engine::Expected<bool, std::string>(true);
  };
  switch (m_kind) {
    case engine::RdbKind::string:
      m_string += batch.str;
      return true;
    case engine::RdbKind::list:
    case engine::RdbKind::set:
      for (std::string& item : batch.items) {
        if (auto ok = element(m_kind == engine::RdbKind::list ? "RPUSH" : "SADD", std::move(item));
            !ok) {
          return ok;
        }
      }
      return true;
    case engine::RdbKind::zset:
      for (auto& [member, score] : batch.zset) {
        if (auto ok = element("ZADD", score_text(score), std::move(member)); !ok) {
          return ok;
        }
      }
      return true;
    case engine::RdbKind::hash:
      for (engine::RdbHashField& f : batch.hash) {
        if (f.expire_ms >= 0 && m_options.field_ttls) {
          m_field_ttls.emplace_back(f.field, f.expire_ms);
        }
        if (auto ok = element("HSET", std::move(f.field), std::move(f.value)); !ok) {
          return ok;
        }
      }
      return true;
    case engine::RdbKind::stream:
      for (engine::RdbStreamEntry& e : batch.stream.entries) {
        if (e.deleted && m_pending.count({e.id.ms, e.id.seq}) == 0) {
          continue;
        }
        std::vector<std::string> args{"XADD", m_temp, id_text(e.id)};
        for (auto& [field, value] : e.fields) {
          args.push_back(std::move(field));
          args.push_back(std::move(value));
        }
        if (auto ok = part(args); !ok) {
          return ok;
        }
        if (e.deleted) {
          // Added so that pending entries referring to it can be claimed, then deleted.
          m_deleted.push_back(id_text(e.id));
        }
        ++m_elements;
        ++m_chunks;
      }
      return true;
    default:
      return engine::Unexpected{"key " + m_key + ": a " +
                                std::string(engine::rdb_kind_name(m_kind)) +
                                " value cannot be written as commands"};
  }
}

engine::Expected<bool, std::string> KeyCommands::stream_tail(const engine::RdbStream& s) {
  bool exists = m_elements > 0;
  if (!exists && (s.last_id.ms != 0 || s.last_id.seq != 0)) {
    // An empty stream with history: one entry added and trimmed away, as Valkey rewrites it.
    std::vector<std::string> args{"XADD", m_temp, "MAXLEN", "0", id_text(s.last_id), "x", "y"};
    if (auto ok = part(args); !ok) {
      return ok;
    }
    exists = true;
  }
  if (!exists && s.groups.empty()) {
    return engine::Unexpected{"key " + m_key +
                              ": an empty stream without groups or last ID cannot be written "
                              "as commands"};
  }
  for (const engine::RdbStreamGroup& g : s.groups) {
    std::vector<std::string> create{"XGROUP", "CREATE", m_temp, g.name, id_text(g.last_delivered)};
    if (g.entries_read >= 0) {
      create.insert(create.end(), {"ENTRIESREAD", std::to_string(g.entries_read)});
    }
    if (!exists) {
      create.emplace_back("MKSTREAM");
      exists = true;
    }
    if (auto ok = part(create); !ok) {
      return ok;
    }
    std::map<std::pair<uint64_t, uint64_t>, const engine::RdbStreamNack*> nacks;
    for (const engine::RdbStreamNack& n : g.pending) {
      nacks[{n.id.ms, n.id.seq}] = &n;
    }
    for (const engine::RdbStreamConsumer& c : g.consumers) {
      std::vector<std::string> consumer{"XGROUP", "CREATECONSUMER", m_temp, g.name, c.name};
      if (auto ok = part(consumer); !ok) {
        return ok;
      }
      for (const engine::RdbStreamId& id : c.pending) {
        auto it = nacks.find({id.ms, id.seq});
        int64_t time = it != nacks.end() ? it->second->delivery_time_ms : 0;
        uint64_t count = it != nacks.end() ? it->second->delivery_count : 1;
        std::vector<std::string> claim{"XCLAIM",     m_temp,
                                       g.name,       c.name,
                                       "0",          id_text(id),
                                       "TIME",       std::to_string(time),
                                       "RETRYCOUNT", std::to_string(count),
                                       "FORCE",      "JUSTID"};
        if (auto ok = part(claim); !ok) {
          return ok;
        }
      }
    }
  }
  for (size_t at = 0; at < m_deleted.size(); at += 1000) {
    std::vector<std::string> del{"XDEL", m_temp};
    for (size_t i = at; i < std::min(m_deleted.size(), at + 1000); ++i) {
      del.push_back(std::move(m_deleted[i]));
    }
    if (auto ok = part(del); !ok) {
      return ok;
    }
  }
  m_deleted.clear();
  // Last, once every entry is in and the deleted ones are out again.
  std::vector<std::string> setid{"XSETID",
                                 m_temp,
                                 id_text(s.last_id),
                                 "ENTRIESADDED",
                                 std::to_string(s.entries_added),
                                 "MAXDELETEDID",
                                 id_text(s.max_deleted_id)};
  return part(setid);
}

engine::Expected<bool, std::string> KeyCommands::string_value(PendingKey& pending,
                                                              int64_t expire_ms) {
  m_views.assign({"SET", m_key, m_string});
  std::string when;
  if (expire_ms >= 0) {
    when = std::to_string(expire_ms);
    m_views.insert(m_views.end(), {"PXAT", when});
  }
  if (!m_options.replace) {
    m_views.push_back("NX");
  }
  ++m_commands;
  return m_target.send_last(std::move(pending), m_views);
}

engine::Expected<bool, std::string> KeyCommands::finish(PendingKey pending, int64_t expire_ms,
                                                        const engine::RdbStream* stream) {
  if (m_kind == engine::RdbKind::string) {
    return string_value(pending, expire_ms);
  }
  if (auto ok = flush_chunk(); !ok) {
    return ok;
  }
  if (m_kind == engine::RdbKind::stream) {
    static const engine::RdbStream k_none;
    if (auto ok = stream_tail(stream != nullptr ? *stream : k_none); !ok) {
      return ok;
    }
  }
  if (expire_ms >= 0) {
    std::vector<std::string> args{"PEXPIREAT", m_temp, std::to_string(expire_ms)};
    if (auto ok = part(args); !ok) {
      return ok;
    }
  }
  m_chunked_keys += m_chunks > 1 ? 1 : 0;
  ++m_commands;
  if (m_options.replace) {
    std::string_view rename[] = {"RENAME", m_temp, m_key};
    return m_target.send_last(std::move(pending), rename);
  }
  ++m_commands;
  std::string_view rename[] = {"RENAMENX", m_temp, m_key};
  std::string_view cleanup[] = {"DEL", m_temp};
  return m_target.send_last(std::move(pending), rename, cleanup);
}

}  // namespace keyshift::migrate
