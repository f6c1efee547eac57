#include "engine/persistence/rdb_format.hpp"
#include "engine/persistence/rdb_load.hpp"
#include "engine/persistence/rdb_writer.hpp"
#include "engine/resp/cluster_map.hpp"
#include "engine/resp/pipelined_connection.hpp"
#include "engine/resp/resp_value.hpp"
#include "engine/util/split_args.hpp"
#include "migrate/import/import_common.hpp"
#include "migrate/import/key_commands.hpp"
#include "migrate/import/keyspace_follow.hpp"
#include "migrate/import/live_target.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <functional>
#include <set>

// Scan sources: a live server read by SCAN, then DUMP + PEXPIRETIME per key, pipelined, for
// servers that refuse SYNC (managed services). Not a snapshot: the report says so.
namespace keyshift::migrate::import_detail {
namespace {

constexpr std::string_view k_follow_note =
    "--follow: keys the source changed while the scan ran were read again after it, as its "
    "keyspace notifications named them; writes after the import stopped are not in the "
    "target";
constexpr std::string_view k_scan_warning =
    "a scan of a live server is not a snapshot: keys written while it ran may be missing or "
    "older in the target; stop the writers first, or compare afterwards with keyshift verify "
    "data";

/// The value of a decoded reply, or an error naming the source.
engine::Expected<engine::RespValue, std::string> decode(const engine::ReplyView& reply,
                                                        const std::string& source) {
  engine::RespValue value;
  size_t used = 0;
  if (engine::parse_resp(reply.bytes, value, used) != engine::RespParse::ok) {
    return engine::Unexpected{source + ": a reply keyshift cannot decode"};
  }
  return value;
}

/// One key read from the source.
struct ScannedKey {
  std::string key;
  std::string payload;  // empty: gone before DUMP read it
  int64_t expire_ms = -1;
  bool moved_away = false;  // a cluster node answered MOVED/ASK: the slot left it meanwhile
  std::string redirect;     // that answer
};

/// The source connection and its reads.
class ScanReader {
 public:
  static engine::Expected<ScanReader, std::string> open(const engine::RespEndpoint& endpoint,
                                                        uint32_t batch,
                                                        const LoadingWait& loading = {}) {
    auto link = engine::PipelinedConnection::connect(endpoint, 2 * batch + 4);
    if (!link) {
      return engine::Unexpected{link.error()};
    }
    if (auto loaded = wait_until_loaded(*link, loading); !loaded) {
      return engine::Unexpected{loaded.error()};
    }
    ScanReader reader(std::move(*link));
    return reader;
  }

  std::string describe() const { return m_link.endpoint().describe(); }

  /// Runs one command and decodes its reply.
  engine::Expected<engine::RespValue, std::string> call(
      std::initializer_list<std::string_view> args) {
    m_link.send(args);
    auto reply = m_link.wait_reply();
    if (!reply) {
      return engine::Unexpected{reply.error()};
    }
    if (reply->is_error) {
      return engine::Unexpected{describe() + ": " + std::string(*args.begin()) +
                                " failed: " + std::string(reply->error_text)};
    }
    return decode(*reply, describe());
  }

  /// SCAN from `cursor`; the next cursor and the keys.
  engine::Expected<std::pair<std::string, std::vector<std::string>>, std::string> scan(
      const std::string& cursor, uint32_t count) {
    std::string n = std::to_string(count);
    auto reply = call({"SCAN", cursor, "COUNT", n});
    if (!reply) {
      return engine::Unexpected{reply.error()};
    }
    if (reply->elements.size() != 2) {
      return engine::Unexpected{describe() + ": SCAN answered with an unexpected shape"};
    }
    std::vector<std::string> keys;
    keys.reserve(reply->elements[1].elements.size());
    for (auto& k : reply->elements[1].elements) {
      keys.push_back(std::move(k.str));
    }
    return std::make_pair(std::move(reply->elements[0].str), std::move(keys));
  }

  /// DUMP and the absolute TTL of every key, pipelined.
  engine::Expected<std::vector<ScannedKey>, std::string> dump(std::vector<std::string>& keys,
                                                              int64_t now_ms, bool pexpiretime) {
    for (const std::string& k : keys) {
      m_link.send({"DUMP", k});
      m_link.send({pexpiretime ? "PEXPIRETIME" : "PTTL", k});
    }
    std::vector<ScannedKey> out;
    out.reserve(keys.size());
    for (std::string& k : keys) {
      ScannedKey s;
      s.key = std::move(k);
      for (int i = 0; i < 2; ++i) {
        auto reply = m_link.wait_reply();
        if (!reply) {
          return engine::Unexpected{reply.error()};
        }
        if (reply->is_error && engine::parse_redirect(reply->error_text)) {
          s.moved_away = true;
          s.redirect = std::string(reply->error_text);
          s.payload.clear();
          continue;
        }
        if (reply->is_error) {
          return engine::Unexpected{describe() + ": " + (i == 0 ? "DUMP" : "PEXPIRETIME") + " of " +
                                    engine::quote_repr(s.key) +
                                    " failed: " + std::string(reply->error_text)};
        }
        auto value = decode(*reply, describe());
        if (!value) {
          return engine::Unexpected{value.error()};
        }
        if (s.moved_away) {
          continue;
        }
        if (i == 0) {
          s.payload = std::move(value->str);
        } else if (value->integer == -2) {
          s.payload.clear();  // gone between the two reads
        } else if (value->integer >= 0) {
          s.expire_ms = pexpiretime ? value->integer : now_ms + value->integer;
        }
      }
      out.push_back(std::move(s));
    }
    return out;
  }

 private:
  explicit ScanReader(engine::PipelinedConnection link) : m_link(std::move(link)) {}
  engine::PipelinedConnection m_link;
};

/// Where scanned keys go: a live server or the embedded engine.
class ScanSink {
 public:
  virtual ~ScanSink() = default;
  /// Writes one kept key (its payload checked); false with `error` set to stop.
  virtual bool write(uint64_t db, engine::RdbKey& key, const engine::CheckedDumpPayload& payload,
                     std::string_view raw, std::string& error) = 0;
  /// Waits until every write is acknowledged.
  virtual bool settle(std::string& error) = 0;
  /// True when the target stores hash field TTLs.
  virtual bool field_ttls() const = 0;
  /// Deletes `key` of database `db` (--follow: the source deleted it or it expired).
  virtual bool remove(uint64_t db, const std::string& key, std::string& error) = 0;
  /// Writes that follow replace what the target holds (--follow's second reads).
  virtual void set_replace(bool replace) = 0;
};

class LiveSink : public ScanSink {
 public:
  LiveSink(RestoreTarget& target, bool replace, ImportReport& report, int64_t now_ms)
      : m_target(target),
        m_limits(rdb_target_limits(target.server().rdb)),
        m_replace(replace),
        m_report(report),
        m_reencoder(now_ms) {}

  bool write(uint64_t db, engine::RdbKey& key, const engine::CheckedDumpPayload& payload,
             std::string_view raw, std::string& error) override {
    if (m_report.method == "commands" ||
        (key.value.kind != engine::RdbKind::string && raw.size() > m_report.big_key_bytes)) {
      return write_commands(db, key, payload, error);
    }
    std::string rebuilt;
    std::string_view send = raw;
    bool takes_it = payload.version <= redis_numbered_max(m_limits) &&
                    payload.type <= m_limits.max_object_type && key.deferred;
    if (!takes_it) {
      if (!materialize(key, payload, error)) {
        return false;
      }
      auto encoded = m_reencoder.payload(std::move(key.value), m_limits.max_rdb_version);
      if (!encoded) {
        error = "key " + key_ref(key.db, key.key) + ": " + encoded.error();
        return false;
      }
      rebuilt = std::move(*encoded);
      send = rebuilt;
      ++m_report.counts.reencoded;
    }
    PendingKey pending;
    pending.db = db;
    pending.key = key.key;
    pending.kind = static_cast<uint8_t>(key.value.kind);
    auto sent = m_target.restore(std::move(pending), key.expire_ms, send, m_replace, -1, -1);
    if (!sent) {
      error = sent.error();
      return false;
    }
    return true;
  }

  bool settle(std::string& error) override {
    auto drained = m_target.drain();
    if (!drained) {
      error = drained.error();
      return false;
    }
    return true;
  }

  bool field_ttls() const override { return m_limits.field_ttls; }
  void set_replace(bool replace) override { m_replace = replace; }
  bool remove(uint64_t db, const std::string& key, std::string& error) override {
    std::string_view del[] = {"DEL", key};
    auto sent = m_target.send_part(db, key, del);
    if (!sent) {
      error = sent.error();
      return false;
    }
    return true;
  }

 private:
  /// A key as commands (--method commands, or a payload past --big-key-bytes): the DUMP
  /// payload is in memory already, so its value is decoded whole and sent in chunks.
  bool write_commands(uint64_t db, engine::RdbKey& key, const engine::CheckedDumpPayload& payload,
                      std::string& error) {
    if (!materialize(key, payload, error)) {
      return false;
    }
    KeyCommandOptions o;
    o.replace = m_replace;
    o.field_ttls = m_limits.field_ttls;
    KeyCommands w(m_target, o);
    PendingKey pending;
    pending.db = db;
    pending.key = key.key;
    pending.kind = static_cast<uint8_t>(key.value.kind);
    engine::Expected<bool, std::string> ok = w.begin(db, key.key, key.value.kind);
    if (ok) {
      ok = w.add(key.value);
    }
    if (ok) {
      ok = w.finish(std::move(pending), key.expire_ms, &key.value.stream);
    }
    ++m_report.counts.as_commands;
    m_report.counts.commands += w.commands();
    m_report.counts.chunked += w.chunked_keys();
    if (!ok) {
      error = ok.error();
      return false;
    }
    return true;
  }

 private:
  RestoreTarget& m_target;
  RdbTargetLimits m_limits;
  bool m_replace;
  ImportReport& m_report;
  Reencoder m_reencoder;
};

class EmbeddedSink : public ScanSink {
 public:
  EmbeddedSink(engine::Engine& engine, const RdbTargetLimits& limits, ImportReport& report,
               int64_t now_ms)
      : m_engine(engine),
        m_writer(engine, report, now_ms),
        m_limits(limits),
        m_read_twice_ok(report.cluster.source) {}

  bool write(uint64_t db, engine::RdbKey& key, const engine::CheckedDumpPayload& payload,
             std::string_view, std::string& error) override {
    if (!materialize(key, payload, error)) {
      return false;
    }
    auto added = m_writer.write(db, key, m_replace || (m_read_twice_ok && db == key.db));
    if (!added) {
      error = added.error();
      return false;
    }
    return true;
  }

  bool settle(std::string&) override { return true; }
  bool field_ttls() const override { return m_limits.field_ttls; }
  bool remove(uint64_t db, const std::string& key, std::string&) override {
    m_engine.db(static_cast<int>(db)).remove(key);
    return true;
  }
  void set_replace(bool replace) override { m_replace = replace; }

 private:
  engine::Engine& m_engine;
  EngineKeyWriter m_writer;
  bool m_replace = false;
  RdbTargetLimits m_limits;
  // A cluster source may list a key twice (its slot moved between two scanned nodes):
  // the later read wins.
  bool m_read_twice_ok;
};

/// True for payload types that are hashes with field TTLs.
bool has_field_ttls(int object_type) {
  using engine::rdb::Type;
  return object_type == static_cast<int>(Type::hash_metadata) ||
         object_type == static_cast<int>(Type::hash_listpack_ex) ||
         object_type == static_cast<int>(Type::hash_metadata_pre_ga) ||
         object_type == static_cast<int>(Type::hash_listpack_ex_pre_ga) ||
         object_type == static_cast<int>(Type::valkey_hash_2);
}

/// One scan of the source: a server, or one primary of a cluster.
struct ScanSession {
  ScanReader reader;
  std::string node;  // a cluster primary's "host:port"; empty for a single server
  std::vector<uint64_t> dbs;
  uint64_t keys_read = 0;
  uint64_t moved_away = 0;        // keys whose slot left the node and could not be read elsewhere
  engine::RespEndpoint endpoint;  // the node's (credentials for the nodes redirects name)
};

/// Reads a key whose slot moved away from the node scanned, from the node the redirect
/// names (after ASKING for ASK). A key read twice this way (once here, once by that node's
/// own scan) is written twice: cluster sources write with REPLACE for that reason.
void reread_moved(ScanSession& session, ScannedKey& s, bool pexpiretime, int64_t now_ms) {
  auto redirect = engine::parse_redirect(s.redirect);
  if (!redirect) {
    return;
  }
  engine::ClusterNode node{"", redirect->host.empty() ? session.endpoint.host : redirect->host,
                           redirect->port};
  auto there = engine::RespConnection::connect(engine::node_endpoint(session.endpoint, node));
  if (!there) {
    return;
  }
  std::vector<std::vector<std::string>> commands;
  if (redirect->ask) {
    commands.push_back({"ASKING"});
  }
  commands.push_back({"DUMP", s.key});
  if (redirect->ask) {
    commands.push_back({"ASKING"});
  }
  commands.push_back({pexpiretime ? "PEXPIRETIME" : "PTTL", s.key});
  auto replies = there->pipeline(commands);
  if (!replies) {
    return;
  }
  const engine::RespValue& dump = (*replies)[redirect->ask ? 1 : 0];
  const engine::RespValue& ttl = replies->back();
  if (dump.is_error() || ttl.is_error()) {
    return;
  }
  s.moved_away = false;
  if (dump.type != engine::RespValue::Type::bulk || ttl.integer == -2) {
    return;  // gone: counted as vanished
  }
  s.payload = dump.str;
  if (ttl.integer >= 0) {
    s.expire_ms = pexpiretime ? ttl.integer : now_ms + ttl.integer;
  }
}

/// Judges and writes keys read from `session` (database `db`); false with report.error set
/// to stop.
bool take_keys(ScanSession& session, uint64_t db, std::vector<ScannedKey>& keys, ScanSink& sink,
               const ImportOptions& options, const KeyRules& rules, bool pexpiretime,
               ImportReport& report) {
  std::string error;
  for (ScannedKey& s : keys) {
    ++report.counts.read;
    ++session.keys_read;
    if (s.moved_away) {
      reread_moved(session, s, pexpiretime, options.now_ms);
    }
    if (s.payload.empty()) {
      ++report.counts.vanished;
      session.moved_away += s.moved_away ? 1 : 0;
      continue;
    }
    auto checked = engine::check_dump_payload(s.payload);
    if (!checked) {
      report.error =
          "key " + key_ref(db, s.key) + ": the source's DUMP payload: " + checked.error();
      return false;
    }
    int type = engine::rdb::object_type_for_version(checked->type, checked->version);
    if (type < 0) {
      report.error = "key " + key_ref(db, s.key) + ": type " + std::to_string(checked->type) +
                     " of RDB " + std::to_string(checked->version) + " is unknown";
      return false;
    }
    engine::RdbKey key;
    key.db = db;
    key.key = std::move(s.key);
    key.expire_ms = s.expire_ms;
    key.value.kind = engine::kind_of_object_type(static_cast<uint8_t>(type));
    key.value.rdb_type = static_cast<uint8_t>(type);
    key.deferred = true;
    if (has_field_ttls(type) && !rules.target_field_ttls) {
      auto value = engine::decode_dump_value(checked->type, checked->version, checked->body);
      if (!value) {
        report.error = "key " + key_ref(db, key.key) + ": " + value.error().message;
        return false;
      }
      key.value = std::move(*value);
      key.deferred = false;
    }
    KeyEffects effects;
    Screen screen = screen_key(rules, key, options.now_ms, report, effects);
    if (screen == Screen::block) {
      report.error = blocked_error(report);
      return false;
    }
    if (screen == Screen::drop) {
      continue;
    }
    if (options.dry_run) {
      ++report.counts.written;
      continue;
    }
    if (!sink.write(effects.target_db, key, *checked, s.payload, error)) {
      report.error = error;
      return false;
    }
  }
  return true;
}

/// Reads every database of `session` into `sink`, from `checkpoint`'s positions.
bool scan_into(ScanSession& session, ScanSink& sink, const ImportOptions& options,
               const KeyRules& rules, bool pexpiretime, CheckpointKeeper& keeper,
               ImportReport& report) {
  std::string error;
  ScanReader& reader = session.reader;
  const std::string& node = session.node;
  auto here = [&node](uint64_t db) {
    return [db, &node](const ScanPosition& p) { return p.db == db && p.node == node; };
  };
  for (uint64_t db : session.dbs) {
    auto& scans = keeper.state().scans;
    auto pos = std::find_if(scans.begin(), scans.end(), here(db));
    if (pos == scans.end()) {
      scans.push_back(ScanPosition{db, "0", false, node});
      pos = scans.end() - 1;
    }
    if (pos->done) {
      continue;
    }
    std::string number = std::to_string(db);
    if (auto selected = reader.call({"SELECT", number}); !selected) {
      report.error = selected.error();
      return false;
    }
    std::string cursor = pos->cursor;
    do {
      auto batch = reader.scan(cursor, options.scan_count);
      if (!batch) {
        report.error = batch.error();
        return false;
      }
      auto keys = reader.dump(batch->second, options.now_ms, pexpiretime);
      if (!keys) {
        report.error = keys.error();
        return false;
      }
      if (!take_keys(session, db, *keys, sink, options, rules, pexpiretime, report)) {
        return false;
      }
      if (!sink.settle(error)) {
        report.error = error;
        return false;
      }
      cursor = batch->first;
      pos = std::find_if(scans.begin(), scans.end(), here(db));
      pos->cursor = cursor;
      pos->done = cursor == "0";
      keeper.state().keys_written = report.counts.written;
      if (auto err = keeper.maybe_save(pos->done)) {
        report.error = "cannot save the checkpoint: " + *err;
        return false;
      }
      if (options.progress) {
        options.progress({"write", report.counts.read, 0, report.counts.written});
      }
    } while (cursor != "0");
  }
  return true;
}

/// Opens the source's scans: the server itself, or, when it is a cluster node, one scan per
/// primary (from CLUSTER SHARDS, SLOTS or NODES), each of database 0.
bool open_sessions(const ImportOptions& options, std::vector<ScanSession>& sessions,
                   bool& pexpiretime, std::map<uint64_t, uint64_t>& dbs,
                   std::optional<engine::ClusterMap>& start_map, ImportReport& report) {
  auto endpoint = engine::parse_redis_url(options.source, options.tls);
  if (!endpoint) {
    report.error = endpoint.error();
    return false;
  }
  auto probe = engine::RespConnection::connect(*endpoint);
  if (!probe) {
    report.error = probe.error();
    return false;
  }
  auto info = probe->call({"INFO", "server"});
  if (!info) {
    report.error = info.error();
    return false;
  }
  // PEXPIRETIME (Redis 7.0, every Valkey) reads the absolute TTL: nothing drifts in flight.
  pexpiretime = !info->is_error() && identify_server(info->str).has_value();
  auto cluster = engine::is_cluster_node(*probe);
  if (!cluster) {
    report.error = cluster.error();
    return false;
  }
  std::vector<engine::RespEndpoint> nodes;
  std::vector<std::string> labels;
  if (*cluster) {
    auto map = engine::read_cluster_map(*probe);
    if (!map) {
      report.error = map.error();
      return false;
    }
    for (const engine::ClusterNode& n : map->primaries()) {
      nodes.push_back(engine::node_endpoint(*endpoint, n));
      labels.push_back(n.address());
    }
    report.cluster.source = true;
    start_map = std::move(*map);
  } else {
    nodes.push_back(*endpoint);
    labels.emplace_back();
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto reader =
        ScanReader::open(nodes[i], options.scan_count,
                         LoadingWait{std::chrono::seconds(options.loading_wait_s), options.notice});
    if (!reader) {
      report.error = reader.error();
      return false;
    }
    auto keyspace = reader->call({"INFO", "keyspace"});
    if (!keyspace) {
      report.error = keyspace.error();
      return false;
    }
    std::map<uint64_t, uint64_t> here = keyspace_key_counts(keyspace->str);
    ScanSession session{std::move(*reader), labels[i], {}, 0, 0, nodes[i]};
    for (const auto& [db, keys] : here) {
      session.dbs.push_back(db);
      dbs[db] += keys;
    }
    sessions.push_back(std::move(session));
  }
  return true;
}

/// Before the first write: every key the scan would write, asked of the target. --type needs
/// the value: the check asks about every name the other rules keep.
bool check_scan_conflicts(std::vector<ScanSession>& sessions, RestoreTarget& target,
                          const ImportOptions& options, const KeyRules& rules,
                          ImportReport& report) {
  KeyRules by_name = rules;
  by_name.types.clear();
  for (ScanSession& session : sessions) {
    for (uint64_t db : session.dbs) {
      std::string number = std::to_string(db);
      if (auto selected = session.reader.call({"SELECT", number}); !selected) {
        report.error = selected.error();
        return false;
      }
      std::map<uint64_t, std::vector<std::string>> wanted;
      std::string cursor = "0";
      do {
        auto batch = session.reader.scan(cursor, options.scan_count);
        if (!batch) {
          report.error = batch.error();
          return false;
        }
        for (std::string& k : batch->second) {
          engine::RdbKey key;
          key.db = db;
          key.key = std::move(k);
          key.deferred = true;
          KeyEffects effects;
          if (apply_key_rules(by_name, key, options.now_ms, effects) == KeyVerdict::keep) {
            wanted[effects.target_db].push_back(std::move(key.key));
          }
        }
        cursor = batch->first;
      } while (cursor != "0");
      for (auto& [to_db, keys] : wanted) {
        auto found = target.existing(to_db, keys);
        if (!found) {
          report.error = found.error();
          return false;
        }
        for (const std::string& k : *found) {
          if (report.blocked.size() < k_listed_keys) {
            report.blocked.push_back(key_ref(to_db, k));
          }
        }
        report.counts.conflicts_found += found->size();
      }
    }
  }
  if (report.counts.conflicts_found > 0) {
    report.blocked_reason = std::to_string(report.counts.conflicts_found) +
                            " key(s) already exist in the target (use --conflict skip or "
                            "replace to go on)";
    report.error = "cannot import: " + report.blocked_reason;
    return false;
  }
  return true;
}

/// The owner's address of every slot of `map` ("" when unserved).
std::vector<std::string> slot_owners(const engine::ClusterMap& map) {
  std::vector<std::string> owners(engine::k_cluster_slots);
  for (uint32_t slot = 0; slot < engine::k_cluster_slots; ++slot) {
    int o = map.owner(static_cast<uint16_t>(slot));
    if (o >= 0) {
      owners[slot] = map.primaries()[static_cast<size_t>(o)].address();
    }
  }
  return owners;
}

/// A cluster source whose slots moved while it was scanned (resharding): the keys of every
/// slot that changed owner are read again from the new owner (CLUSTER GETKEYSINSLOT), since
/// keys moved onto a node after its scan passed them were seen by no scan. Keys read twice
/// are written twice (REPLACE). A migration still under way at the end is reported.
bool reread_moved_slots(const ImportOptions& options, const engine::ClusterMap& start_map,
                        std::vector<ScanSession>& sessions, ScanSink& sink, const KeyRules& rules,
                        bool pexpiretime, ImportReport& report) {
  auto endpoint = engine::parse_redis_url(options.source, options.tls);
  if (!endpoint) {
    report.error = endpoint.error();
    return false;
  }
  auto probe = engine::RespConnection::connect(*endpoint);
  if (!probe) {
    report.error = probe.error();
    return false;
  }
  auto now_map = engine::read_cluster_map(*probe);
  if (!now_map) {
    report.error = now_map.error();
    return false;
  }
  std::vector<std::string> before = slot_owners(start_map);
  std::vector<std::string> after = slot_owners(*now_map);
  std::string error;
  for (uint32_t slot = 0; slot < engine::k_cluster_slots; ++slot) {
    if (after[slot].empty() || after[slot] == before[slot]) {
      continue;
    }
    auto session = std::find_if(sessions.begin(), sessions.end(),
                                [&](const ScanSession& x) { return x.node == after[slot]; });
    if (session == sessions.end()) {
      int o = now_map->owner(static_cast<uint16_t>(slot));
      engine::RespEndpoint ep =
          engine::node_endpoint(*endpoint, now_map->primaries()[static_cast<size_t>(o)]);
      auto reader = ScanReader::open(ep, options.scan_count);
      if (!reader) {
        report.error = reader.error();
        return false;
      }
      sessions.push_back(ScanSession{std::move(*reader), after[slot], {0}, 0, 0, ep});
      session = sessions.end() - 1;
    }
    std::string number = std::to_string(slot);
    if (auto selected = session->reader.call({"SELECT", "0"}); !selected) {
      report.error = selected.error();
      return false;
    }
    auto count = session->reader.call({"CLUSTER", "COUNTKEYSINSLOT", number});
    if (!count) {
      report.error = count.error();
      return false;
    }
    ++report.cluster.slots_reread;
    if (count->integer <= 0) {
      continue;
    }
    std::string n = std::to_string(count->integer);
    auto listed = session->reader.call({"CLUSTER", "GETKEYSINSLOT", number, n});
    if (!listed) {
      report.error = listed.error();
      return false;
    }
    std::vector<std::string> names;
    for (engine::RespValue& k : listed->elements) {
      names.push_back(std::move(k.str));
    }
    for (size_t at = 0; at < names.size(); at += options.scan_count) {
      std::vector<std::string> chunk(
          std::make_move_iterator(names.begin() + static_cast<std::ptrdiff_t>(at)),
          std::make_move_iterator(names.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                      names.size(), at + options.scan_count))));
      auto keys = session->reader.dump(chunk, options.now_ms, pexpiretime);
      if (!keys) {
        report.error = keys.error();
        return false;
      }
      if (!take_keys(*session, 0, *keys, sink, options, rules, pexpiretime, report)) {
        return false;
      }
      if (!sink.settle(error)) {
        report.error = error;
        return false;
      }
    }
  }
  auto nodes = probe->call({"CLUSTER", "NODES"});
  if (nodes && !nodes->is_error() &&
      (nodes->str.find("->-") != std::string::npos ||
       nodes->str.find("-<-") != std::string::npos)) {
    report.warnings.emplace_back(
        "a slot migration was under way when the scan ended: keys it moved may be missing in "
        "the target; run the import again with --conflict replace once it is done, or compare "
        "with keyshift verify data");
  }
  return true;
}

/// Every session into `sink`; the per-node counts and the keys that left a node mid-scan
/// go into the report.
bool scan_sessions(std::vector<ScanSession>& sessions, ScanSink& sink, const ImportOptions& options,
                   const KeyRules& rules, bool pexpiretime, CheckpointKeeper& keeper,
                   const std::optional<engine::ClusterMap>& start_map, ImportReport& report) {
  bool ok = true;
  for (ScanSession& session : sessions) {
    if (!scan_into(session, sink, options, rules, pexpiretime, keeper, report)) {
      ok = false;
      break;
    }
  }
  if (ok && start_map) {
    ok = reread_moved_slots(options, *start_map, sessions, sink, rules, pexpiretime, report);
  }
  uint64_t moved_away = 0;
  for (ScanSession& session : sessions) {
    moved_away += session.moved_away;
    if (report.cluster.source) {
      report.cluster.source_nodes.emplace_back(session.node, session.keys_read);
    }
  }
  if (moved_away > 0) {
    report.warnings.push_back(std::to_string(moved_away) +
                              " key(s) were in slots that moved to another node while the scan "
                              "ran and could not be read there (counted as vanished): compare "
                              "with keyshift verify data");
  }
  return ok;
}

/// The name and database a source key has in the target under `rules`, or nothing when the
/// rules leave it out (the name-only rules: a deleted key has no type to judge).
std::optional<std::pair<uint64_t, std::string>> target_key(const KeyRules& rules, uint64_t db,
                                                           const std::string& key) {
  if (!key_selected(rules, key)) {
    return std::nullopt;
  }
  std::string name = key;
  for (const PrefixRule& rule : rules.rename) {
    if (auto renamed = apply_prefix_rule(rule, db, key)) {
      name = std::move(*renamed);
      break;
    }
  }
  return std::make_pair(target_db_of(rules, db), std::move(name));
}

/// Reads again every key `changed` names: present ones are written over the target's
/// copy, gone ones (deleted, expired) are deleted there.
bool refresh_keys(ScanSession& session, ChangedKeys& changed, ScanSink& sink,
                  const ImportOptions& options, const KeyRules& rules, bool pexpiretime,
                  ImportReport& report) {
  std::string error;
  for (auto& [db, names] : changed) {
    if (std::find(session.dbs.begin(), session.dbs.end(), db) == session.dbs.end()) {
      session.dbs.push_back(db);  // a database that was empty when the scan began
    }
    if (auto selected = session.reader.call({"SELECT", std::to_string(db)}); !selected) {
      report.error = selected.error();
      return false;
    }
    std::vector<std::string> batch;
    auto flush = [&]() -> bool {
      auto keys = session.reader.dump(batch, options.now_ms, pexpiretime);
      batch.clear();
      if (!keys) {
        report.error = keys.error();
        return false;
      }
      std::vector<ScannedKey> present;
      for (ScannedKey& k : *keys) {
        if (!k.payload.empty()) {
          present.push_back(std::move(k));
          continue;
        }
        auto there = target_key(rules, db, k.key);
        if (!there || options.dry_run) {
          continue;
        }
        if (!sink.remove(there->first, there->second, error)) {
          report.error = error;
          return false;
        }
        ++report.counts.follow_deleted;
      }
      uint64_t read_before = report.counts.read;
      uint64_t session_before = session.keys_read;
      if (!take_keys(session, db, present, sink, options, rules, pexpiretime, report)) {
        return false;
      }
      report.counts.followed += report.counts.read - read_before;
      report.counts.read = read_before;
      session.keys_read = session_before;
      if (!sink.settle(error)) {
        report.error = error;
        return false;
      }
      return true;
    };
    for (const std::string& name : names) {
      batch.push_back(name);
      if (batch.size() >= options.scan_count && !flush()) {
        return false;
      }
    }
    if (!batch.empty() && !flush()) {
      return false;
    }
  }
  return true;
}

/// --follow after the scan: the keys changed meanwhile are read again, round after round,
/// until a round finds none (--until caught-up) or until the stop the options name.
bool follow_changes(ScanSession& session, KeyspaceFollower& follower, ScanSink& sink,
                    const ImportOptions& options, const KeyRules& rules, bool pexpiretime,
                    ImportReport& report) {
  using namespace std::chrono_literals;
  sink.set_replace(true);
  constexpr int k_max_quiet_rounds = 50;
  int rounds = 0;
  auto stop_asked = [&]() {
    if (options.stop_requested && options.stop_requested()) {
      return true;
    }
    return options.until == UntilKind::stop_file && !options.until_path.empty() &&
           ::access(options.until_path.c_str(), F_OK) == 0;
  };
  for (;;) {
    bool stopping = stop_asked();
    auto got = follower.collect_until_quiet(stopping ? 300ms : 200ms, 2s);
    if (!got) {
      report.error = got.error();
      return false;
    }
    ChangedKeys changed = follower.take();
    if (!changed.empty()) {
      ++rounds;
      if (!refresh_keys(session, changed, sink, options, rules, pexpiretime, report)) {
        return false;
      }
      if (options.progress) {
        options.progress({"follow", report.counts.followed, 0, report.counts.written});
      }
    }
    if (stopping) {
      break;
    }
    if (options.until == UntilKind::caught_up) {
      if (changed.empty()) {
        break;
      }
      if (rounds >= k_max_quiet_rounds) {
        report.warnings.push_back(
            "--follow: the source kept changing keys for " + std::to_string(rounds) +
            " rounds; the import stopped following with changes possibly in flight (use "
            "--until sigterm or a stop file, and stop the writers before the cut-over)");
        break;
      }
    }
  }
  report.follow_rounds = static_cast<uint64_t>(rounds);
  report.follow_events = follower.events();
  return true;
}

}  // namespace

/// The source's function libraries, each as its code (FUNCTION LIST WITHCODE: one array of
/// name/value pairs per library); none from a server that has no functions (before 7.0). A
/// scan reads keys only, so these are moved apart.
engine::Expected<std::vector<std::string>, std::string> source_functions(
    const engine::RespEndpoint& endpoint) {
  auto link = engine::RespConnection::connect(endpoint);
  if (!link) {
    return engine::Unexpected{link.error()};
  }
  auto list = link->call({"FUNCTION", "LIST", "WITHCODE"});
  if (!list) {
    return engine::Unexpected{list.error()};
  }
  std::vector<std::string> code;
  if (list->is_error()) {
    return code;
  }
  for (const engine::RespValue& library : list->elements) {
    for (size_t i = 0; i + 1 < library.elements.size(); i += 2) {
      if (library.elements[i].str == "library_code") {
        code.push_back(library.elements[i + 1].str);
      }
    }
  }
  return code;
}

/// Loads each of the source's function libraries through `load`; false with report.error
/// set when one cannot be read or loaded.
bool move_functions(
    const engine::RespEndpoint& source, ImportReport& report,
    const std::function<engine::Expected<bool, std::string>(std::string_view)>& load) {
  auto libraries = source_functions(source);
  if (!libraries) {
    report.error = "the source's function libraries: " + libraries.error();
    return false;
  }
  for (const std::string& code : *libraries) {
    if (auto ok = load(code); !ok) {
      report.error = ok.error();
      return false;
    }
  }
  return true;
}

void import_scan(const ImportOptions& options, KeyRules rules, ImportReport& report) {
  report.warnings.emplace_back(k_scan_warning);
  std::vector<ScanSession> sessions;
  bool pexpiretime = false;
  std::map<uint64_t, uint64_t> source_dbs;
  std::optional<engine::ClusterMap> start_map;
  if (!open_sessions(options, sessions, pexpiretime, source_dbs, start_map, report)) {
    return;
  }
  // Subscribed before the first SCAN, so every change the scan might miss is seen.
  std::optional<KeyspaceFollower> follower;
  if (options.follow) {
    if (sessions.size() != 1 || report.cluster.source) {
      report.error = "--follow is not supported with a cluster source yet";
      return;
    }
    auto endpoint = engine::parse_redis_url(options.source, options.tls);
    if (!endpoint) {
      report.error = endpoint.error();
      return;
    }
    auto started = KeyspaceFollower::start(*endpoint);
    if (!started) {
      report.error = started.error();
      return;
    }
    follower.emplace(std::move(*started));
    report.warnings.clear();
    report.warnings.emplace_back(k_follow_note);
    if (!follower->enabled().empty()) {
      report.warnings.push_back("--follow set notify-keyspace-events to \"" + follower->enabled() +
                                "\" on the source for the import; it is restored at the end");
    }
  }
  struct Restore {
    std::optional<KeyspaceFollower>& f;
    ~Restore() {
      if (f) {
        f->restore();
      }
    }
  } restore_events{follower};

  ImportCheckpoint start;
  start.kind = "scan";
  start.source = report.source;

  if (options.to) {
    auto target = open_live_target(options, rules, report);
    if (!target) {
      return;
    }
    std::map<uint64_t, uint64_t> target_dbs;
    for (const auto& [db, keys] : source_dbs) {
      target_dbs[target_db_of(rules, db)] += keys;
    }
    if (!check_target_dbs(*target, target_dbs, report)) {
      return;
    }
    start.target = report.target;
    if (follower && target->cluster_stats() != nullptr) {
      report.error =
          "--follow is not supported with a cluster target yet (a deleted key "
          "cannot be removed there)";
      return;
    }
    CheckpointKeeper keeper(options.dry_run ? std::string() : options.checkpoint, start);
    if (!take_checkpoint(options, keeper, report)) {
      return;
    }
    const bool resuming = report.resumed;
    if (options.conflict == ConflictPolicy::fail && !resuming &&
        !check_scan_conflicts(sessions, *target, options, rules, report)) {
      return;
    }
    if (auto err = keeper.maybe_save(true)) {
      report.error = "cannot save the checkpoint: " + *err;
      return;
    }
    target->skip_conflicts(options.conflict == ConflictPolicy::skip);
    target->on_ack([&report](const PendingKey& key, WriteOutcome outcome) {
      count_write(key, outcome, report.counts);
    });
    // A cluster source may list a key twice (its slot moved from one node to another while
    // both were scanned): the later read wins. The conflict check passed, so REPLACE can only
    // overwrite what this import wrote.
    bool replace = options.conflict == ConflictPolicy::replace || resuming ||
                   (report.cluster.source && options.conflict == ConflictPolicy::fail);
    LiveSink sink(*target, replace, report, options.now_ms);
    bool done =
        scan_sessions(sessions, sink, options, rules, pexpiretime, keeper, start_map, report);
    if (done && follower) {
      done = follow_changes(sessions.front(), *follower, sink, options, rules, pexpiretime, report);
    }
    if (done && !options.dry_run) {
      done = move_functions(sessions.front().endpoint, report, [&](std::string_view code) {
        if (target->cluster_stats() != nullptr) {
          report.warnings.push_back(
              "a function library of the source was not loaded into the cluster: load it on "
              "every primary with FUNCTION LOAD");
          return engine::Expected<bool, std::string>{true};
        }
        std::string_view argv[] = {"FUNCTION", "LOAD", "REPLACE", code};
        auto sent = target->send_part(0, "FUNCTION LOAD", argv);
        return sent ? target->drain() : sent;
      });
    }
    report.bytes_sent = target->bytes_sent();
    note_cluster_stats(*target, report);
    if (!done) {
      return;
    }
    keeper.state().complete = !options.dry_run;
    if (auto err = keeper.maybe_save(true)) {
      report.error = "cannot save the checkpoint: " + *err;
      return;
    }
    report.ok = true;
    return;
  }

  // The embedded engine: everything is built in memory, then saved in one atomic write, so
  // an interrupted run leaves no file and simply starts over.
  RdbTargetLimits limits = rdb_target_limits(options.target);
  rules.target_field_ttls = limits.field_ttls;
  std::filesystem::path out = std::filesystem::path(options.dir) / options.dbfilename;
  report.target = out.string();
  report.target_server = std::string(limits.name);
  report.target_rdb_version = limits.max_rdb_version;
  engine::EngineConfig config;
  int databases = 16;
  for (const auto& [db, keys] : source_dbs) {
    databases = std::max<int>(databases, static_cast<int>(std::min<uint64_t>(db, 1 << 20)) + 1);
  }
  for (const auto& [from, to] : rules.db_map) {
    databases = std::max<int>(databases, static_cast<int>(std::min<uint64_t>(to, 1 << 20)) + 1);
  }
  config.databases = databases;
  engine::ManualClock clock(options.now_ms);
  auto engine = std::make_unique<engine::Engine>(config, clock);
  EmbeddedSink sink(*engine, limits, report, options.now_ms);
  CheckpointKeeper no_checkpoint("", start);
  if (!scan_sessions(sessions, sink, options, rules, pexpiretime, no_checkpoint, start_map,
                     report)) {
    return;
  }
  if (follower &&
      !follow_changes(sessions.front(), *follower, sink, options, rules, pexpiretime, report)) {
    return;
  }
  if (!options.dry_run &&
      !move_functions(sessions.front().endpoint, report,
                      [&](std::string_view code) -> engine::Expected<bool, std::string> {
                        engine::RespValue r = engine->run({"FUNCTION", "LOAD", "REPLACE", code});
                        if (r.is_error()) {
                          return engine::Unexpected{
                              "the embedded engine refused a function library: " + r.str};
                        }
                        return true;
                      })) {
    return;
  }
  if (!options.dry_run) {
    engine::RdbWriteOptions write;
    write.version = limits.max_rdb_version;
    auto stats = engine::save_rdb(*engine, out.string(), write);
    if (!stats) {
      report.error = "cannot write " + out.string() + ": " + stats.error();
      return;
    }
    report.bytes_sent = stats->bytes;
  }
  report.ok = true;
}

}  // namespace keyshift::migrate::import_detail
