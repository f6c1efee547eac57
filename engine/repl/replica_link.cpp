#include "engine/repl/replica_link.hpp"

#include "engine/engine.hpp"
#include "engine/persistence/aof.hpp"
#include "engine/persistence/rdb_load.hpp"
#include "engine/persistence/rdb_reader.hpp"
#include "engine/repl/primary.hpp"
#include "engine/repl/replication_state.hpp"
#include "engine/server/config_table.hpp"
#include "engine/server/log.hpp"
#include "engine/server/server.hpp"
#include "engine/session.hpp"
#include "engine/util/strconv.hpp"

#include <chrono>
#include <utility>

namespace keyshift::engine {

namespace {

/// Reads per readiness event before the loop serves its clients again.
constexpr int k_reads_per_event = 64;
/// How long to wait between dials (Valkey's replicationCron runs once a second).
constexpr int64_t k_redial_ms = 1000;

std::string setting(const Engine& engine, std::string_view name) {
  const DirectiveSpec* spec = find_directive(name);
  return spec != nullptr ? directive_value(*spec, engine.config()) : std::string();
}

}  // namespace

/// What the dialing thread hands back: the client after its PSYNC, or why there is none.
struct ReplicaLink::Dial {
  std::optional<ReplicaClient> client;
  PsyncResult psync;
  std::string error;
};

/// Applies the primary's stream to the engine on the loop's thread: the payload's keys as
/// they are decoded (after the old dataset is flushed), then each command through
/// Engine::execute as the primary's session, whose replies are dropped.
class ReplicaLink::Applier final : public ReplStreamHandler, public RdbVisitor {
 public:
  Applier(Engine& engine, Session& session) : m_engine(engine), m_session(session) {}

  bool on_payload_begin(std::optional<uint64_t> size) override {
    m_total = size ? static_cast<int64_t>(*size) : -1;
    m_read = 0;
    m_engine.primary().on_full_sync_begin();
    m_engine.replication().on_sync_progress(m_total, 0);
    for (int i = 0; i < m_engine.db_count(); ++i) {
      m_engine.signal_flushed_db(i);
      m_engine.db(i).flush();
    }
    RdbReadOptions read;
    read.skip_modules = true;
    m_reader = std::make_unique<RdbStreamReader>(*this, read);
    return true;
  }
  bool on_payload(std::string_view bytes) override {
    m_read += bytes.size();
    m_engine.replication().on_sync_progress(m_total, m_read);
    auto fed = m_reader->feed(bytes);
    if (!fed) {
      return fail("the full sync's RDB: " + fed.error().message + " (at byte " +
                  std::to_string(fed.error().offset) + ")");
    }
    return m_error.empty();
  }
  bool on_payload_end() override {
    auto summary = m_reader->finish();
    m_reader.reset();
    if (!summary) {
      return fail("the full sync's RDB: " + summary.error().message + " (at byte " +
                  std::to_string(summary.error().offset) + ")");
    }
    m_engine.replication().on_loaded();
    m_session.db = m_stream_db;
    m_engine.primary().on_synced(false);
    return m_error.empty();
  }

  void on_aux(std::string_view name, std::string_view value) override {
    // The database the stream after the payload starts in (a chained primary's snapshot).
    int64_t db = 0;
    if (name == "repl-stream-db" && parse_i64(value, db) && db >= 0 && db < m_engine.db_count()) {
      m_stream_db = static_cast<int>(db);
    }
  }
  void on_stream_bytes(std::string_view raw) override { m_engine.primary().proxy(raw); }

  void on_function(std::string_view code) override {
    std::string_view argv[] = {"FUNCTION", "LOAD", "REPLACE", code};
    m_engine.execute(m_session, argv);
    m_session.out.clear();
  }
  bool on_key(RdbKey& k) override {
    if (k.db >= static_cast<uint64_t>(m_engine.db_count())) {
      return fail("the full sync's RDB: database " + std::to_string(k.db) + " is out of range");
    }
    // As Valkey's replica, keys already expired are loaded too: the primary's DEL follows.
    auto spec = build_engine_value(m_engine, std::move(k.value), m_engine.clock().now_ms());
    if (!spec) {
      ++m_skipped;  // a module value or a hash whose fields all expired
      return true;
    }
    Db& db = m_engine.db(static_cast<int>(k.db));
    if (db.exists(k.key)) {
      db.remove(k.key);
    }
    db.add(k.key, *spec, k.expire_ms);
    return true;
  }

  bool on_command(std::span<const std::string_view> argv, uint64_t offset) override {
    if (argv.empty()) {
      return true;
    }
    m_engine.execute(m_session, argv);
    m_session.out.clear();
    m_engine.replication().on_applied(offset);
    return true;
  }

  bool fail(std::string message) {
    if (m_error.empty()) {
      m_error = std::move(message);
    }
    return false;
  }
  const std::string& error() const { return m_error; }
  uint64_t skipped() const { return m_skipped; }

 private:
  Engine& m_engine;
  Session& m_session;
  std::unique_ptr<RdbStreamReader> m_reader;
  int64_t m_total = 0;
  uint64_t m_read = 0;
  uint64_t m_skipped = 0;
  int m_stream_db = 0;
  std::string m_error;
};

ReplicaLink::ReplicaLink(Engine& engine, Logger& log) : m_engine(engine), m_log(log) {}

ReplicaLink::~ReplicaLink() {
  if (m_session != nullptr) {
    m_engine.close_session(*m_session);
  }
  // A dial in flight finishes (bounded by its timeouts) before the engine goes away.
  if (m_dial) {
    m_dial->wait();
  }
}

int ReplicaLink::fd() const {
  return m_client ? m_client->fd() : -1;
}

void ReplicaLink::drop(const std::string& why) {
  if (m_client) {
    m_log.warning("Connection with primary lost: " + why);
  }
  m_client.reset();
  m_applier.reset();
  m_marks.clear();
  m_fsynced = 0;
  if (m_session != nullptr) {
    // A continuation goes on in the database the stream last selected: the primary
    // sends no SELECT until it changes (Valkey keeps the primary's client cached).
    m_db = m_session->db;
    m_engine.close_session(*m_session);
    m_session = nullptr;
  }
  m_engine.replication().on_link_lost(m_engine.clock().now_ms());
  m_next_dial_ms = m_engine.clock().now_ms() + k_redial_ms;
}

void ReplicaLink::tick() {
  ReplicationState& repl = m_engine.replication();
  if (repl.generation() != m_generation) {
    // REPLICAOF changed the primary (or NO ONE ended replication): the old link goes.
    bool had = m_client.has_value();
    m_generation = repl.generation();
    m_client.reset();
    m_applier.reset();
    if (m_session != nullptr) {
      m_engine.close_session(*m_session);
      m_session = nullptr;
    }
    if (had) {
      m_log.notice("Replication link closed: the primary changed");
    }
    m_next_dial_ms = 0;
  }
  if (m_session != nullptr && m_session->has(k_session_close_asap)) {
    drop("closed by CLIENT KILL");  // CLIENT KILL TYPE master
  }
  if (m_dial && m_dial->wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    adopt_dial();
  }
  if (!repl.is_replica()) {
    return;
  }
  if (!m_client && !m_dial && m_engine.clock().now_ms() >= m_next_dial_ms) {
    start_dial();
  }
  if (m_client) {
    read_stream();
  }
}

void ReplicaLink::on_readable() {
  if (m_client) {
    read_stream();
  }
}

void ReplicaLink::start_dial() {
  ReplicationState& repl = m_engine.replication();
  RespEndpoint endpoint;
  endpoint.host = repl.primary_host();
  endpoint.port = repl.primary_port();
  endpoint.tls = tls_replication_client_options(m_engine.config());
  endpoint.password = setting(m_engine, "primaryauth");
  if (!endpoint.password.empty()) {
    endpoint.user = setting(m_engine, "primaryuser");
  }
  ReplicaOptions options;
  options.listening_port = m_engine.identity().tcp_port;
  int64_t timeout_s = 60;
  if (std::string t = setting(m_engine, "repl-timeout"); !t.empty()) {
    timeout_s = std::max<int64_t>(1, std::atoll(t.c_str()));
  }
  options.timeout = std::chrono::seconds(timeout_s);
  // PSYNC continues the history we hold when there is one (after a dropped link, or the
  // data this server had as a primary), as Valkey's cached primary does.
  std::string replid = repl.has_history() ? repl.replid() : std::string();
  uint64_t offset = repl.offset();
  repl.on_connecting();
  m_log.notice("Connecting to PRIMARY " + endpoint.host + ":" + std::to_string(endpoint.port));
  m_dial_generation = repl.generation();
  const Clock& clock = m_engine.clock();
  // The thread gets copies only: it touches nothing the loop uses.
  m_dial = std::async(std::launch::async, [endpoint, options, replid, offset, &clock] {
    auto dial = std::make_unique<Dial>();
    auto client = ReplicaClient::connect(endpoint, clock, options);
    if (!client) {
      dial->error = client.error().message;
      return dial;
    }
    auto psync = client->psync(replid, offset);
    if (!psync) {
      dial->error = psync.error().message;
      return dial;
    }
    dial->psync = *psync;
    dial->client = std::move(*client);
    return dial;
  });
}

void ReplicaLink::adopt_dial() {
  std::unique_ptr<Dial> dial = m_dial->get();
  m_dial.reset();
  ReplicationState& repl = m_engine.replication();
  if (m_dial_generation != repl.generation() || !repl.is_replica()) {
    return;  // dialed for a primary we no longer follow
  }
  if (!dial->client) {
    m_log.warning("Error condition on socket for SYNC: " + dial->error);
    repl.on_link_lost(m_engine.clock().now_ms());
    m_next_dial_ms = m_engine.clock().now_ms() + k_redial_ms;
    return;
  }
  const PsyncResult& p = dial->psync;
  if (p.full) {
    m_log.notice("Full resync from primary: " + p.replid + ":" + std::to_string(p.offset));
  } else {
    m_log.notice("Successful partial resynchronization with primary.");
  }
  bool new_history = !p.full && p.replid != repl.replid();
  repl.on_psync(p.full, p.replid, p.offset);
  repl.on_io(m_engine.clock().now_ms());
  m_client = std::move(dial->client);
  m_session = &m_engine.open_session(nullptr);
  m_session->set(k_session_primary);
  m_session->authenticated = true;
  m_session->db = p.full ? 0 : m_db;
  m_session->addr = repl.primary_host() + ":" + std::to_string(repl.primary_port());
  m_applier = std::make_unique<Applier>(m_engine, *m_session);
  if (!p.full) {
    m_engine.primary().on_synced(new_history);
  }
  read_stream();
}

std::optional<uint64_t> ReplicaLink::fsynced_offset() {
  if (!m_engine.aof().on()) {
    m_marks.clear();
    return std::nullopt;
  }
  uint64_t synced = m_engine.aof().fsynced_offset();
  if (synced >= m_engine.propagation_offset()) {
    // Everything written is on disk: PINGs and GETACKs, which write nothing, count too.
    m_marks.clear();
    m_fsynced = m_client->stream().offset();
  }
  while (!m_marks.empty() && m_marks.front().first <= synced) {
    m_fsynced = std::max(m_fsynced, m_marks.front().second);
    m_marks.pop_front();
  }
  return m_fsynced;
}

void ReplicaLink::read_stream() {
  ReplicationState& repl = m_engine.replication();
  for (int i = 0; i < k_reads_per_event && m_client; ++i) {
    m_client->set_fsynced_offset(fsynced_offset());
    uint64_t before = m_client->bytes_received();
    auto polled = m_client->poll(*m_applier, std::chrono::milliseconds(0));
    if (m_client->bytes_received() != before) {
      repl.on_io(m_engine.clock().now_ms());
    }
    // Everything handed over is applied at once, REPLCONF GETACK (answered by the client,
    // never seen here) included in the offset.
    if (m_client->stream().phase() == ReplStreamParser::Phase::commands) {
      repl.on_applied(m_client->stream().offset());
      if (m_engine.aof().on() &&
          (m_marks.empty() || m_marks.back().second != m_client->stream().offset())) {
        m_marks.emplace_back(m_engine.propagation_offset(), m_client->stream().offset());
      }
    }
    repl.on_read(m_client->stream().offset());
    if (!m_applier->error().empty()) {
      drop(m_applier->error());
      return;
    }
    if (!polled) {
      drop(polled.error().message);
      return;
    }
    if (m_session->has(k_session_close_asap)) {
      drop("closed by CLIENT KILL");
      return;
    }
    if (!*polled) {
      return;
    }
  }
}

}  // namespace keyshift::engine
