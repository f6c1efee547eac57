#include "migrate/rdb_dump.hpp"

#include "compat/report/json_text.hpp"
#include "engine/resp/request_writer.hpp"
#include "engine/util/double_format.hpp"
#include "engine/util/glob.hpp"
#include "engine/util/split_args.hpp"
#include "migrate/rdb_inspect.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace keyshift::migrate {
namespace {

using engine::RdbKey;
using engine::RdbKind;
using engine::RdbStream;
using engine::RdbStreamId;
using engine::RdbValue;

/// Output is handed to the sink once this much has gathered, so a huge file never sits in
/// memory as text.
constexpr size_t k_flush_bytes = 1 << 16;

void append_id_json(std::string& out, const RdbStreamId& id) {
  out.push_back('"');
  out += stream_id_text(id);
  out.push_back('"');
}

void append_stream_json(std::string& out, const RdbStream& s) {
  out += "{\"length\":" + std::to_string(s.length);
  out += ",\"last_id\":";
  append_id_json(out, s.last_id);
  out += ",\"first_id\":";
  append_id_json(out, s.first_id);
  out += ",\"max_deleted_id\":";
  append_id_json(out, s.max_deleted_id);
  out += ",\"entries_added\":" + std::to_string(s.entries_added);
  out += ",\"entries\":[";
  for (size_t i = 0; i < s.entries.size(); ++i) {
    out += i == 0 ? "[" : ",[";
    append_id_json(out, s.entries[i].id);
    out += ",[";
    bool first = true;
    for (const auto& [field, value] : s.entries[i].fields) {
      out += first ? "" : ",";
      first = false;
      compat::append_json_bytes(out, field);
      out.push_back(',');
      compat::append_json_bytes(out, value);
    }
    out += "]]";
  }
  out += "],\"groups\":[";
  for (size_t g = 0; g < s.groups.size(); ++g) {
    const engine::RdbStreamGroup& group = s.groups[g];
    out += g == 0 ? "{\"name\":" : ",{\"name\":";
    compat::append_json_bytes(out, group.name);
    out += ",\"last_delivered_id\":";
    append_id_json(out, group.last_delivered);
    out += ",\"entries_read\":";
    out += group.entries_read < 0 ? "null" : std::to_string(group.entries_read);
    out += ",\"pending\":[";
    for (size_t p = 0; p < group.pending.size(); ++p) {
      out += p == 0 ? "[" : ",[";
      append_id_json(out, group.pending[p].id);
      out += "," + std::to_string(group.pending[p].delivery_time_ms) + "," +
             std::to_string(group.pending[p].delivery_count) + "]";
    }
    out += "],\"consumers\":[";
    for (size_t c = 0; c < group.consumers.size(); ++c) {
      const engine::RdbStreamConsumer& consumer = group.consumers[c];
      out += c == 0 ? "{\"name\":" : ",{\"name\":";
      compat::append_json_bytes(out, consumer.name);
      out += ",\"seen_time_ms\":" + std::to_string(consumer.seen_time_ms);
      out += ",\"active_time_ms\":";
      out += consumer.active_time_ms < 0 ? "null" : std::to_string(consumer.active_time_ms);
      out += ",\"pending\":[";
      for (size_t p = 0; p < consumer.pending.size(); ++p) {
        out += p == 0 ? "" : ",";
        append_id_json(out, consumer.pending[p]);
      }
      out += "]}";
    }
    out += "]}";
  }
  out += "]}";
}

void append_key_json(std::string& out, const RdbKey& k) {
  const RdbValue& v = k.value;
  out += "{\"db\":" + std::to_string(k.db) + ",\"key\":";
  compat::append_json_bytes(out, k.key);
  out += ",\"type\":\"";
  out += kind_name(v.kind);
  out += "\",\"expire_ms\":";
  out += k.expire_ms < 0 ? "null" : std::to_string(k.expire_ms);
  out += ",\"value\":";
  switch (v.kind) {
    case RdbKind::string:
      compat::append_json_bytes(out, v.str);
      break;
    case RdbKind::list:
    case RdbKind::set:
      out.push_back('[');
      for (size_t i = 0; i < v.items.size(); ++i) {
        out += i == 0 ? "" : ",";
        compat::append_json_bytes(out, v.items[i]);
      }
      out.push_back(']');
      break;
    case RdbKind::zset:
      out.push_back('[');
      for (size_t i = 0; i < v.zset.size(); ++i) {
        out += i == 0 ? "[" : ",[";
        compat::append_json_bytes(out, v.zset[i].first);
        out += ",\"" + engine::double_reply_text(v.zset[i].second) + "\"]";
      }
      out.push_back(']');
      break;
    case RdbKind::hash: {
      out.push_back('[');
      bool any_ttl = false;
      for (size_t i = 0; i < v.hash.size(); ++i) {
        out += i == 0 ? "[" : ",[";
        compat::append_json_bytes(out, v.hash[i].field);
        out.push_back(',');
        compat::append_json_bytes(out, v.hash[i].value);
        out.push_back(']');
        any_ttl = any_ttl || v.hash[i].expire_ms >= 0;
      }
      out.push_back(']');
      if (any_ttl) {
        // An array of pairs rather than an object: a field need not be valid UTF-8, and
        // JSON object names can only be strings.
        out += ",\"field_ttls\":[";
        bool first = true;
        for (const engine::RdbHashField& f : v.hash) {
          if (f.expire_ms < 0) {
            continue;
          }
          out += first ? "[" : ",[";
          first = false;
          compat::append_json_bytes(out, f.field);
          out += "," + std::to_string(f.expire_ms) + "]";
        }
        out.push_back(']');
      }
      break;
    }
    case RdbKind::stream:
      append_stream_json(out, v.stream);
      break;
    case RdbKind::module:
      out += "null,\"module\":";
      compat::append_json_string(out, v.module_name);
      break;
    case RdbKind::path_hash:
      // [[path, [[field, value], ...]], ...] in the file's order, binary-safe like a hash.
      out.push_back('[');
      for (size_t i = 0; i < v.paths.size(); ++i) {
        out += i == 0 ? "[" : ",[";
        compat::append_json_bytes(out, v.paths[i].path);
        out += ",[";
        for (size_t j = 0; j < v.paths[i].fields.size(); ++j) {
          out += j == 0 ? "[" : ",[";
          compat::append_json_bytes(out, v.paths[i].fields[j].first);
          out.push_back(',');
          compat::append_json_bytes(out, v.paths[i].fields[j].second);
          out.push_back(']');
        }
        out += "]]";
      }
      out.push_back(']');
      break;
  }
  out += "}\n";
}

/// Emits `head... items...` commands of at most `batch` items each.
void append_batched(std::string& out, std::vector<std::string_view> head,
                    const std::vector<std::string_view>& items, size_t per_item, size_t batch) {
  size_t step = std::max<size_t>(1, batch) * per_item;
  for (size_t i = 0; i < items.size(); i += step) {
    std::vector<std::string_view> args = head;
    size_t end = std::min(items.size(), i + step);
    args.insert(args.end(), items.begin() + static_cast<std::ptrdiff_t>(i),
                items.begin() + static_cast<std::ptrdiff_t>(end));
    engine::append_request(out, args);
  }
}

class DumpVisitor : public engine::RdbVisitor {
 public:
  DumpVisitor(const RdbDumpOptions& options, const RdbDumpSink& sink, RdbDumpStats& stats)
      : m_options(options), m_sink(sink), m_stats(stats) {}

  /// The file's size, for progress.
  void set_size(uint64_t size) { m_size = size; }

  bool on_key(RdbKey& k) override {
    if (m_options.progress) {
      m_options.progress(k.offset, m_size);
    }
    if ((m_options.db && k.db != *m_options.db) ||
        (!m_options.match.empty() && !engine::glob_match(m_options.match, k.key))) {
      ++m_stats.keys_filtered;
      return true;
    }
    if (k.value.kind == RdbKind::module) {
      ++m_stats.module_keys;
    }
    if (k.value.kind == RdbKind::path_hash) {
      ++m_stats.path_hash_keys;
    }
    switch (m_options.format) {
      case RdbDumpFormat::json:
        append_key_json(m_out, k);
        break;
      case RdbDumpFormat::keys:
        m_out += std::to_string(k.db) + " " + std::string(kind_name(k.value.kind)) + " " +
                 std::to_string(k.expire_ms) + " " + engine::quote_repr(k.key) + "\n";
        break;
      case RdbDumpFormat::resp:
        if (k.value.kind == RdbKind::module || k.value.kind == RdbKind::path_hash) {
          return true;  // counted above; the CLI says so
        }
        append_key_resp(k);
        break;
    }
    ++m_stats.keys_written;
    if (m_out.size() >= k_flush_bytes) {
      flush();
    }
    return true;
  }

  void flush() {
    if (!m_out.empty()) {
      m_sink(m_out);
      m_out.clear();
    }
  }

 private:
  void append_key_resp(const RdbKey& k) {
    if (!m_db || *m_db != k.db) {
      // The first key selects too: a --pipe connection may not start in db 0 (redis-cli -n).
      std::string db = std::to_string(k.db);
      engine::append_request(m_out, {"SELECT", db});
      m_db = k.db;
    }
    const RdbValue& v = k.value;
    std::string expire = std::to_string(k.expire_ms);
    switch (v.kind) {
      case RdbKind::string:
        if (k.expire_ms >= 0) {
          engine::append_request(m_out, {"SET", k.key, v.str, "PXAT", expire});
        } else {
          engine::append_request(m_out, {"SET", k.key, v.str});
        }
        return;  // the TTL went with SET
      case RdbKind::list:
      case RdbKind::set: {
        std::vector<std::string_view> items(v.items.begin(), v.items.end());
        append_batched(m_out, {v.kind == RdbKind::list ? "RPUSH" : "SADD", k.key}, items, 1,
                       m_options.batch);
        break;
      }
      case RdbKind::zset: {
        // %.17g round-trips every double; the reply format would not on Redis 7.0.
        std::vector<std::string> scores;
        scores.reserve(v.zset.size());
        for (const auto& [member, score] : v.zset) {
          scores.push_back(engine::double_17g_text(score));
        }
        std::vector<std::string_view> items;
        for (size_t i = 0; i < v.zset.size(); ++i) {
          items.emplace_back(scores[i]);
          items.emplace_back(v.zset[i].first);
        }
        append_batched(m_out, {"ZADD", k.key}, items, 2, m_options.batch);
        break;
      }
      case RdbKind::hash:
        append_hash_resp(k);
        break;
      case RdbKind::stream:
        append_stream_resp(k.key, v.stream);
        break;
      case RdbKind::module:
      case RdbKind::path_hash:
        return;
    }
    if (k.expire_ms >= 0) {
      engine::append_request(m_out, {"PEXPIREAT", k.key, expire});
    }
  }

  void append_hash_resp(const RdbKey& k) {
    std::vector<std::string_view> items;
    std::map<int64_t, std::vector<std::string_view>> by_expire;
    for (const engine::RdbHashField& f : k.value.hash) {
      items.emplace_back(f.field);
      items.emplace_back(f.value);
      if (f.expire_ms >= 0) {
        by_expire[f.expire_ms].emplace_back(f.field);
      }
    }
    append_batched(m_out, {"HSET", k.key}, items, 2, m_options.batch);
    for (const auto& [expire_ms, fields] : by_expire) {
      std::string at = std::to_string(expire_ms);
      for (size_t i = 0; i < fields.size(); i += m_options.batch) {
        size_t end = std::min(fields.size(), i + std::max<size_t>(1, m_options.batch));
        std::string count = std::to_string(end - i);
        std::vector<std::string_view> args{"HPEXPIREAT", k.key, at, "FIELDS", count};
        args.insert(args.end(), fields.begin() + static_cast<std::ptrdiff_t>(i),
                    fields.begin() + static_cast<std::ptrdiff_t>(end));
        engine::append_request(m_out, args);
      }
    }
  }

  void append_stream_resp(std::string_view key, const RdbStream& s) {
    std::set<std::pair<uint64_t, uint64_t>> live;
    for (const engine::RdbStreamEntry& e : s.entries) {
      std::string id = stream_id_text(e.id);
      std::vector<std::string_view> args{"XADD", key, id};
      for (const auto& [field, value] : e.fields) {
        args.emplace_back(field);
        args.emplace_back(value);
      }
      engine::append_request(m_out, args);
      live.emplace(e.id.ms, e.id.seq);
    }
    if (s.entries.empty()) {
      // XSETID needs the key: an entry trimmed straight away leaves an empty stream.
      RdbStreamId first = s.last_id;
      if (first.ms == 0 && first.seq == 0) {
        first.seq = 1;
      }
      std::string id = stream_id_text(first);
      engine::append_request(m_out, {"XADD", key, "MAXLEN", "0", id, "x", "x"});
    }
    std::string last = stream_id_text(s.last_id);
    std::string added = std::to_string(s.entries_added);
    std::string max_deleted = stream_id_text(s.max_deleted_id);
    engine::append_request(
        m_out, {"XSETID", key, last, "ENTRIESADDED", added, "MAXDELETEDID", max_deleted});
    for (const engine::RdbStreamGroup& g : s.groups) {
      std::string delivered = stream_id_text(g.last_delivered);
      if (g.entries_read >= 0) {
        std::string read = std::to_string(g.entries_read);
        engine::append_request(m_out,
                               {"XGROUP", "CREATE", key, g.name, delivered, "ENTRIESREAD", read});
      } else {
        engine::append_request(m_out, {"XGROUP", "CREATE", key, g.name, delivered});
      }
      std::map<std::pair<uint64_t, uint64_t>, const engine::RdbStreamNack*> nacks;
      for (const engine::RdbStreamNack& n : g.pending) {
        nacks[{n.id.ms, n.id.seq}] = &n;
      }
      for (const engine::RdbStreamConsumer& c : g.consumers) {
        engine::append_request(m_out, {"XGROUP", "CREATECONSUMER", key, g.name, c.name});
        for (const RdbStreamId& id : c.pending) {
          auto it = nacks.find({id.ms, id.seq});
          if (it == nacks.end() || live.count({id.ms, id.seq}) == 0) {
            ++m_stats.lost_pending;  // XCLAIM only claims entries still in the stream
            continue;
          }
          std::string pid = stream_id_text(id);
          std::string time = std::to_string(it->second->delivery_time_ms);
          std::string count = std::to_string(it->second->delivery_count);
          engine::append_request(m_out, {"XCLAIM", key, g.name, c.name, "0", pid, "TIME", time,
                                         "RETRYCOUNT", count, "FORCE", "JUSTID"});
        }
      }
    }
  }

  const RdbDumpOptions& m_options;
  const RdbDumpSink& m_sink;
  RdbDumpStats& m_stats;
  uint64_t m_size = 0;
  std::string m_out;
  std::optional<uint64_t> m_db;
};

}  // namespace

std::string stream_id_text(const RdbStreamId& id) {
  return std::to_string(id.ms) + "-" + std::to_string(id.seq);
}

engine::Expected<RdbDumpStats, engine::RdbError> dump_rdb(std::string_view file,
                                                          const RdbDumpOptions& options,
                                                          const RdbDumpSink& sink) {
  RdbDumpStats stats;
  DumpVisitor visitor(options, sink, stats);
  visitor.set_size(file.size());
  engine::RdbReadOptions read;
  read.skip_modules = true;  // module values are opaque: listed, never decoded
  auto summary = engine::read_rdb(file, visitor, read);
  if (!summary) {
    visitor.flush();  // what came before the damage is still worth having
    return engine::Unexpected{summary.error()};
  }
  visitor.flush();
  stats.summary = *summary;
  return stats;
}

}  // namespace keyshift::migrate
