#include "migrate/import/import_common.hpp"

#include "engine/persistence/rdb_format.hpp"
#include "engine/persistence/rdb_load.hpp"
#include "engine/persistence/rdb_writer.hpp"
#include "engine/resp/cluster_map.hpp"
#include "engine/util/split_args.hpp"
#include "migrate/import/command_stream.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

namespace keyshift::migrate::import_detail {
namespace {

/// Acknowledged keys between checkpoint saves (and at most a second apart).
constexpr uint64_t k_checkpoint_every_keys = 20'000;
constexpr auto k_checkpoint_every = std::chrono::seconds(1);

}  // namespace

engine::Expected<RdbFile, std::string> open_rdb_file(const std::string& path) {
  auto map = engine::MappedFile::open(path, engine::MappedFile::Access::streaming);
  if (!map) {
    return engine::Unexpected{map.error().message()};
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return engine::Unexpected{path + ": " + std::strerror(errno)};
  }
  RdbFile file{std::move(*map),
               static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000 + st.st_mtim.tv_nsec / 1000};
  std::string_view head = file.map.data().substr(0, 9);
  int version = 0;
  auto parse = [&](std::string_view digits) {
    auto r = std::from_chars(digits.data(), digits.data() + digits.size(), version);
    return r.ec == std::errc() && r.ptr == digits.data() + digits.size();
  };
  if (head.size() == 9 && head.starts_with("REDIS") && parse(head.substr(5))) {
    file.version = version;
  } else if (head.size() == 9 && head.starts_with("VALKEY") && parse(head.substr(6))) {
    file.version = version;
    file.valkey_numbered = true;
  } else {
    return engine::Unexpected{path + ": not an RDB file (no REDIS or VALKEY magic at byte 0)"};
  }
  return file;
}

bool is_server_source(std::string_view source) {
  return source.find("://") != std::string_view::npos || source.starts_with("unix:");
}

std::string key_ref(uint64_t db, std::string_view key) {
  return "db" + std::to_string(db) + " " + engine::quote_repr(key);
}

bool count_verdict(KeyVerdict verdict, const engine::RdbKey& k, ImportReport& report) {
  ImportCounts& c = report.counts;
  switch (verdict) {
    case KeyVerdict::keep:
      return false;
    case KeyVerdict::filtered:
      ++c.filtered;
      return false;
    case KeyVerdict::expired:
      ++c.expired;
      return false;
    case KeyVerdict::module_dropped:
      ++c.modules_dropped;
      return false;
    case KeyVerdict::emptied:
      ++c.hashes_emptied;
      return false;
    case KeyVerdict::blocked_module:
      report.blocked_reason =
          "module keys cannot be moved without the module (drop them with --skip-modules)";
      break;
    case KeyVerdict::blocked_field_ttl:
      report.blocked_reason =
          "hashes with field TTLs, which the target cannot store (use --field-ttl drop-ttl or "
          "drop-field)";
      break;
    case KeyVerdict::blocked_path_hash:
      report.blocked_reason = "Valkey 9.2 Path Hashes, which keyshift cannot rewrite";
      break;
  }
  if (report.blocked.size() < k_listed_keys) {
    report.blocked.push_back(key_ref(k.db, k.key));
  }
  return true;
}

void count_write(const PendingKey& key, WriteOutcome outcome, ImportCounts& c) {
  if (outcome == WriteOutcome::written) {
    ++c.written;
    ++c.written_by_type[std::string(kind_name(static_cast<engine::RdbKind>(key.kind)))];
  } else if (outcome == WriteOutcome::expired_in_flight) {
    ++c.expired_in_flight;
  } else {
    ++c.conflicts_skipped;
  }
}

Screen screen_key(const KeyRules& rules, engine::RdbKey& k, int64_t now_ms, ImportReport& report,
                  KeyEffects& effects) {
  KeyVerdict verdict = apply_key_rules(rules, k, now_ms, effects);
  if (verdict != KeyVerdict::keep) {
    return count_verdict(verdict, k, report) ? Screen::block : Screen::drop;
  }
  count_effects(effects, report.counts);
  return Screen::keep;
}

std::string blocked_error(const ImportReport& report) {
  return "cannot import: " + report.blocked_reason + ": " + report.blocked.back();
}

void count_effects(const KeyEffects& effects, ImportCounts& c) {
  c.renamed += effects.renamed ? 1 : 0;
  c.moved += effects.moved ? 1 : 0;
  c.field_ttls_dropped += effects.field_ttls_dropped;
  c.fields_dropped += effects.fields_dropped;
}

int redis_numbered_max(const RdbTargetLimits& limits) {
  return limits.max_rdb_version >= engine::rdb::k_valkey_first_version ? 11
                                                                       : limits.max_rdb_version;
}

Reencoder::Reencoder(int64_t now_ms) : m_clock(now_ms) {
  engine::EngineConfig config;
  config.databases = 1;
  m_engine = std::make_unique<engine::Engine>(config, m_clock);
}

engine::Expected<std::string, std::string> Reencoder::payload(engine::RdbValue&& value,
                                                              int version) {
  auto spec = engine::build_engine_value(*m_engine, std::move(value), m_clock.now_ms());
  if (!spec) {
    return engine::Unexpected{spec.error()};
  }
  engine::Db& db = m_engine->db(0);
  engine::Entry* e = db.add("k", *spec);
  engine::RdbWriteOptions options;
  options.version = version;
  auto out = engine::dump_payload(*e, options);
  db.remove("k");
  return out;
}

LiveKeyWriter::LiveKeyWriter(RestoreTarget& target, int source_version, bool source_valkey_numbered,
                             bool replace, int64_t now_ms, ImportReport& report)
    : m_target(target),
      m_limits(rdb_target_limits(target.server().rdb)),
      m_source_version(source_version),
      m_passthrough(!source_valkey_numbered && source_version <= redis_numbered_max(m_limits)),
      m_replace(replace),
      m_report(report),
      m_reencoder(now_ms) {}

bool LiveKeyWriter::passes_through(uint8_t type) const {
  return m_passthrough && type <= m_limits.max_object_type;
}

engine::Expected<bool, std::string> LiveKeyWriter::write(engine::RdbKey& k,
                                                         std::string_view value_bytes,
                                                         PendingKey pending) {
  std::string payload;
  if (k.deferred) {
    payload = engine::dump_payload_of_encoded(
        k.value.rdb_type, value_bytes, std::min(m_source_version, redis_numbered_max(m_limits)));
  } else {
    auto rebuilt = m_reencoder.payload(std::move(k.value), m_limits.max_rdb_version);
    if (!rebuilt) {
      if (rebuilt.error().rfind("empty", 0) == 0) {
        ++m_report.counts.expired;  // every field's TTL had passed, or nothing was left
        return false;
      }
      return engine::Unexpected{"key " + key_ref(k.db, k.key) + ": " + rebuilt.error()};
    }
    payload = std::move(*rebuilt);
    ++m_report.counts.reencoded;
  }
  pending.kind = static_cast<uint8_t>(k.value.kind);
  return m_target.restore(std::move(pending), k.expire_ms, payload, m_replace, k.idle_s, k.freq);
}

engine::Expected<bool, std::string> EngineKeyWriter::write(uint64_t db, engine::RdbKey& k,
                                                           bool replace) {
  if (db >= static_cast<uint64_t>(m_engine.db_count())) {
    return engine::Unexpected{"key " + key_ref(k.db, k.key) + ": database " + std::to_string(db) +
                              " is beyond the target's " + std::to_string(m_engine.db_count())};
  }
  engine::Db& target = m_engine.db(static_cast<int>(db));
  if (target.exists(k.key)) {
    if (!replace) {
      return engine::Unexpected{"key " + key_ref(k.db, k.key) +
                                " was read twice or two databases map onto one"};
    }
    target.remove(k.key);
    --m_report.counts.written;  // the key counts once, as its last read
  }
  auto kind = k.value.kind;
  auto spec = engine::build_engine_value(m_engine, std::move(k.value), m_now_ms);
  if (!spec) {
    if (spec.error().rfind("empty", 0) == 0) {
      ++m_report.counts.expired;
      return false;
    }
    return engine::Unexpected{"key " + key_ref(k.db, k.key) + ": " + spec.error()};
  }
  target.add(k.key, *spec, k.expire_ms);
  ++m_report.counts.written;
  ++m_report.counts.written_by_type[std::string(kind_name(kind))];
  return true;
}

CheckpointKeeper::CheckpointKeeper(std::string path, ImportCheckpoint state)
    : m_path(std::move(path)),
      m_state(std::move(state)),
      m_saved_at(std::chrono::steady_clock::now()) {}

std::optional<std::string> CheckpointKeeper::maybe_save(bool force) {
  if (!enabled()) {
    return std::nullopt;
  }
  auto now = std::chrono::steady_clock::now();
  if (!force && m_state.keys_written - m_saved_keys < k_checkpoint_every_keys &&
      now - m_saved_at < k_checkpoint_every) {
    return std::nullopt;
  }
  m_saved_at = now;
  m_saved_keys = m_state.keys_written;
  return save_checkpoint(m_path, m_state);
}

std::unique_ptr<RestoreTarget> open_live_target(const ImportOptions& options, KeyRules& rules,
                                                ImportReport& report) {
  bool cluster = options.cluster;
  if (!cluster) {
    auto probe = engine::RespConnection::connect(*options.to);
    if (!probe) {
      report.error = probe.error();
      return nullptr;
    }
    auto enabled = engine::is_cluster_node(*probe);
    if (!enabled) {
      report.error = enabled.error();
      return nullptr;
    }
    cluster = *enabled;
  }
  std::unique_ptr<RestoreTarget> target;
  if (cluster) {
    auto opened = ClusterTarget::open(*options.to, options.window);
    if (!opened) {
      report.error = opened.error();
      return nullptr;
    }
    target = std::move(*opened);
    report.cluster.target = true;
  } else {
    LoadingWait loading{std::chrono::seconds(options.loading_wait_s), options.notice};
    auto opened = LiveTarget::open(*options.to, options.window, loading);
    if (!opened) {
      report.error = opened.error();
      return nullptr;
    }
    target = std::make_unique<LiveTarget>(std::move(*opened));
  }
  RdbTargetLimits limits = rdb_target_limits(target->server().rdb);
  report.target = target->describe();
  report.target_server = target->server().name + " " + target->server().version;
  report.target_rdb_version = limits.max_rdb_version;
  rules.target_field_ttls = limits.field_ttls;
  report.method = options.method == ImportMethod::commands ? "commands" : "restore";
  report.big_key_bytes = options.big_key_bytes;
  if (report.big_key_bytes == 0) {
    report.big_key_bytes = k_default_big_key_bytes;
    // A payload must stay well under what the target takes in one argument.
    auto limit = target->config_value("proto-max-bulk-len");
    if (!limit) {
      report.error = limit.error();
      return nullptr;
    }
    uint64_t bulk = 0;
    if (*limit && std::from_chars((*limit)->data(), (*limit)->data() + (*limit)->size(), bulk).ec ==
                      std::errc()) {
      report.big_key_bytes = std::min(report.big_key_bytes, bulk / 2);
    }
  }
  return target;
}

bool check_target_dbs(const RestoreTarget& target, const std::map<uint64_t, uint64_t>& dbs,
                      ImportReport& report) {
  std::optional<uint64_t> only = target.only_db();
  if (!only) {
    return true;
  }
  for (const auto& [db, keys] : dbs) {
    if (db != *only && keys > 0) {
      report.blocked_reason = "a cluster has only database " + std::to_string(*only) + ", and " +
                              std::to_string(keys) + " key(s) would go to database " +
                              std::to_string(db) + " (map it with --db-map " + std::to_string(db) +
                              ":" + std::to_string(*only) + ")";
      report.error = "cannot import: " + report.blocked_reason;
      return false;
    }
  }
  return true;
}

void note_cluster_stats(const RestoreTarget& target, ImportReport& report) {
  const ClusterWriteStats* stats = target.cluster_stats();
  if (stats == nullptr) {
    return;
  }
  ImportClusterCounts& c = report.cluster;
  c.target = true;
  c.target_nodes = stats->keys_per_node;
  c.moved = stats->moved;
  c.ask = stats->ask;
  c.retries = stats->retries;
  c.refreshes = stats->refreshes;
}

bool take_checkpoint(const ImportOptions& options, CheckpointKeeper& keeper, ImportReport& report) {
  auto resume = resume_point(options, keeper.state());
  if (!resume) {
    report.error = resume.error();
    return false;
  }
  if (!*resume) {
    return true;
  }
  if ((*resume)->complete) {
    report.already_complete = true;
    report.ok = true;
    report.counts.written = (*resume)->keys_written;
    return false;
  }
  keeper.state() = **resume;
  report.resumed = true;
  return true;
}

bool materialize(engine::RdbKey& key, const engine::CheckedDumpPayload& payload,
                 std::string& error) {
  if (!key.deferred) {
    return true;
  }
  auto value = engine::decode_dump_value(payload.type, payload.version, payload.body);
  if (!value) {
    error = "key " + key_ref(key.db, key.key) + ": " + value.error().message;
    return false;
  }
  key.value = std::move(*value);
  key.deferred = false;
  return true;
}

engine::Expected<std::optional<ImportCheckpoint>, std::string> resume_point(
    const ImportOptions& options, const ImportCheckpoint& expected) {
  if (options.checkpoint.empty()) {
    return std::optional<ImportCheckpoint>();
  }
  auto loaded = load_checkpoint(options.checkpoint);
  if (!loaded || !*loaded) {
    return loaded;
  }
  const ImportCheckpoint& c = **loaded;
  if (c.kind != expected.kind || c.source != expected.source ||
      c.source_size != expected.source_size || c.source_mtime_us != expected.source_mtime_us ||
      c.target != expected.target) {
    return engine::Unexpected{options.checkpoint + ": the checkpoint is of another import (" +
                              c.source + " to " + c.target +
                              "); remove it to start over, or give another --checkpoint"};
  }
  return loaded;
}

std::map<uint64_t, uint64_t> keyspace_key_counts(std::string_view info) {
  std::map<uint64_t, uint64_t> dbs;
  std::string text = "\n" + std::string(info);
  size_t at = 0;
  while ((at = text.find("\ndb", at)) != std::string::npos) {
    at += 3;
    uint64_t db = 0;
    auto r = std::from_chars(text.data() + at, text.data() + text.size(), db);
    if (r.ec == std::errc() && r.ptr < text.data() + text.size() && *r.ptr == ':') {
      uint64_t keys = 0;
      std::string_view rest(r.ptr, static_cast<size_t>(text.data() + text.size() - r.ptr));
      if (rest.starts_with(":keys=")) {
        std::from_chars(rest.data() + 6, rest.data() + rest.size(), keys);
      }
      dbs[db] = keys;
    }
  }
  return dbs;
}

std::vector<uint64_t> keyspace_dbs(std::string_view info) {
  std::vector<uint64_t> dbs;
  for (const auto& [db, keys] : keyspace_key_counts(info)) {
    dbs.push_back(db);
  }
  return dbs;
}

bool could_be_ours(const KeyRules& rules, std::string_view name) {
  for (const PrefixRule& rule : rules.rename) {
    if (name.starts_with(rule.to) &&
        key_selected(rules, rule.from + std::string(name.substr(rule.to.size())))) {
      return true;
    }
  }
  return key_selected(rules, name);
}

bool destination_db(const KeyRules& rules, uint64_t db) {
  for (const auto& [from, to] : rules.db_map) {
    if (to == db) {
      return true;
    }
  }
  return rules.unmapped_db ? *rules.unmapped_db == db : true;
}

namespace {

/// SCANs database `db` of `conn` in pages of keys the import could have written.
engine::Expected<bool, std::string> scan_db(
    engine::RespConnection& conn, const engine::RespEndpoint& at, const KeyRules& rules,
    uint64_t db,
    const std::function<engine::Expected<bool, std::string>(engine::RespConnection&, uint64_t,
                                                            std::vector<std::string>&)>& fn) {
  std::string cursor = "0";
  do {
    auto r = conn.call({"SCAN", cursor, "COUNT", "1000"});
    if (!r || r->is_error() || r->elements.size() != 2) {
      return engine::Unexpected{"SCAN failed on " + at.describe()};
    }
    cursor = r->elements[0].str;
    std::vector<std::string> keys;
    for (auto& k : r->elements[1].elements) {
      if (could_be_ours(rules, k.str)) {
        keys.push_back(std::move(k.str));
      }
    }
    if (!keys.empty()) {
      if (auto ok = fn(conn, db, keys); !ok) {
        return ok;
      }
    }
  } while (cursor != "0");
  return true;
}

}  // namespace

engine::Expected<bool, std::string> scan_target(
    const engine::RespEndpoint& to, const KeyRules& rules,
    const std::function<engine::Expected<bool, std::string>(engine::RespConnection&, uint64_t,
                                                            std::vector<std::string>&)>& fn) {
  engine::RespEndpoint plain = to;
  plain.db = 0;
  auto conn = engine::RespConnection::connect(plain);
  if (!conn) {
    return engine::Unexpected{conn.error()};
  }
  if (auto cluster = engine::is_cluster_node(*conn); cluster && *cluster) {
    // A cluster: each primary lists its own keys, all in database 0.
    if (!destination_db(rules, 0)) {
      return true;
    }
    auto map = engine::read_cluster_map(*conn);
    if (!map) {
      return engine::Unexpected{map.error()};
    }
    for (const engine::ClusterNode& node : map->primaries()) {
      engine::RespEndpoint at = engine::node_endpoint(plain, node);
      auto node_conn = engine::RespConnection::connect(at);
      if (!node_conn) {
        return engine::Unexpected{node_conn.error()};
      }
      if (auto ok = scan_db(*node_conn, at, rules, 0, fn); !ok) {
        return ok;
      }
    }
    return true;
  }
  auto info = conn->call({"INFO", "keyspace"});
  if (!info) {
    return engine::Unexpected{info.error()};
  }
  for (uint64_t db : keyspace_dbs(info->str)) {
    if (!destination_db(rules, db)) {
      continue;
    }
    auto sel = conn->call({"SELECT", std::to_string(db)});
    if (!sel || sel->is_error()) {
      return engine::Unexpected{"SELECT " + std::to_string(db) + " failed on " + to.describe()};
    }
    if (auto ok = scan_db(*conn, to, rules, db, fn); !ok) {
      return ok;
    }
  }
  return true;
}

bool refuse_target_conflicts(const engine::RespEndpoint& to, const KeyRules& rules,
                             ImportReport& report) {
  uint64_t found = 0;
  auto scanned =
      scan_target(to, rules,
                  [&](engine::RespConnection&, uint64_t db,
                      std::vector<std::string>& keys) -> engine::Expected<bool, std::string> {
                    for (const std::string& k : keys) {
                      if (LiveStreamWriter::is_marker(k)) {
                        continue;
                      }
                      ++found;
                      if (report.blocked.size() < k_listed_keys) {
                        report.blocked.push_back(key_ref(db, k));
                      }
                    }
                    return true;
                  });
  if (!scanned) {
    report.error = scanned.error();
    return false;
  }
  if (found > 0) {
    report.counts.conflicts_found = found;
    report.blocked_reason = std::to_string(found) +
                            " key(s) the import could write already exist in the target "
                            "(use --conflict skip or replace to go on)";
    report.error = "cannot import: " + report.blocked_reason;
    return false;
  }
  return true;
}

}  // namespace keyshift::migrate::import_detail
