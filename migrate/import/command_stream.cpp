#include "migrate/import/command_stream.hpp"

#include "engine/commands/command_keys.hpp"
#include "engine/resp/connection.hpp"
#include "engine/resp/resp_value.hpp"
#include "engine/util/split_args.hpp"
#include "engine/util/strings.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <utility>

namespace keyshift::migrate {
std::string describe_command(std::span<const std::string_view> argv) {
  std::string out = engine::to_upper(argv[0]);
  for (size_t i = 1; i < argv.size() && i < 4; ++i) {
    out += " " + engine::quote_repr(argv[i].substr(0, 64));
  }
  if (argv.size() > 4) {
    out += " ...";
  }
  return out;
}

namespace {

std::optional<uint64_t> parse_db(std::string_view text) {
  uint64_t n = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), n);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) {
    return std::nullopt;
  }
  return n;
}

/// Commands that set or clear hash field TTLs (Redis 7.4+, Valkey 9).
bool is_field_ttl_command(std::string_view name) {
  for (std::string_view c : {"hexpire", "hpexpire", "hexpireat", "hpexpireat", "hpersist", "hsetex",
                             "hgetex", "hgetdel"}) {
    if (engine::iequals(name, c)) {
      return true;
    }
  }
  return false;
}

/// What a field-TTL command of the source becomes for a target without field TTLs.
struct FieldTtlTranslation {
  bool skip = false;              ///< nothing to apply: it only moved TTLs the target drops
  std::vector<std::string> argv;  ///< the command to apply instead (HSET or HDEL)
  std::string why;                ///< set when it cannot be followed
};

/// The index of the FIELDS keyword and the field count after it, checked against the
/// arguments there are (`per_field` of them a field: 1 for names, 2 for name-value pairs).
std::optional<std::pair<size_t, size_t>> fields_block(std::span<const std::string_view> argv,
                                                      size_t per_field) {
  for (size_t i = 2; i + 1 < argv.size(); ++i) {
    if (!engine::iequals(argv[i], "fields")) {
      continue;
    }
    size_t n = 0;
    auto [end, ec] =
        std::from_chars(argv[i + 1].data(), argv[i + 1].data() + argv[i + 1].size(), n);
    if (ec != std::errc() || end != argv[i + 1].data() + argv[i + 1].size() || n == 0 ||
        argv.size() != i + 2 + n * per_field) {
      return std::nullopt;
    }
    return std::make_pair(i, n);
  }
  return std::nullopt;
}

/// The source propagates a field TTL as HPEXPIREAT naming only the fields it changed
/// (Redis 7.4's hexpireGenericCommand drops the others), and field deletions as HDEL, so:
/// under drop-ttl a TTL command has nothing left to do and HSETEX is the HSET of its
/// values; under drop-field a field that takes a TTL is one the target does not keep, so
/// it becomes an HDEL. What would need a dropped value back (HPERSIST, HSETEX KEEPTTL or
/// without a TTL under drop-field) cannot be followed.
FieldTtlTranslation translate_field_ttl(std::string_view name,
                                        std::span<const std::string_view> argv,
                                        FieldTtlPolicy policy) {
  FieldTtlTranslation t;
  const bool drop_field = policy == FieldTtlPolicy::drop_field;
  auto hdel = [&](size_t first, size_t count, size_t step) {
    t.argv = {"HDEL", std::string(argv[1])};
    for (size_t i = 0; i < count; ++i) {
      t.argv.emplace_back(argv[first + i * step]);
    }
  };
  if (name == "hexpire" || name == "hpexpire" || name == "hexpireat" || name == "hpexpireat") {
    if (!drop_field) {
      t.skip = true;
      return t;
    }
    auto block = fields_block(argv, 1);
    if (!block) {
      t.why = "its FIELDS list does not read";
      return t;
    }
    hdel(block->first + 2, block->second, 1);
    return t;
  }
  if (name == "hpersist") {
    if (!drop_field) {
      t.skip = true;
      return t;
    }
    t.why = "it makes fields permanent whose values --field-ttl drop-field left out of the target";
    return t;
  }
  if (name == "hgetdel") {
    auto block = fields_block(argv, 1);
    if (!block) {
      t.why = "its FIELDS list does not read";
      return t;
    }
    hdel(block->first + 2, block->second, 1);
    return t;
  }
  if (name == "hsetex") {
    auto block = fields_block(argv, 2);
    if (!block) {
      t.why = "its FIELDS list does not read";
      return t;
    }
    bool timed = false;
    bool keep_ttl = false;
    for (size_t i = 2; i < block->first; ++i) {
      std::string_view a = argv[i];
      if (engine::iequals(a, "ex") || engine::iequals(a, "px") || engine::iequals(a, "exat") ||
          engine::iequals(a, "pxat")) {
        timed = true;
        ++i;
      } else if (engine::iequals(a, "keepttl")) {
        keep_ttl = true;
      } else if (!engine::iequals(a, "fnx") && !engine::iequals(a, "fxx")) {
        t.why = "its option " + std::string(a) + " is unknown";
        return t;
      }
    }
    if (drop_field && timed) {
      hdel(block->first + 2, block->second, 2);
      return t;
    }
    if (drop_field) {
      t.why = std::string(keep_ttl ? "KEEPTTL keeps" : "without a TTL it may keep") +
              " TTLs of fields --field-ttl drop-field left out of the target";
      return t;
    }
    t.argv = {"HSET", std::string(argv[1])};
    for (size_t i = block->first + 2; i < argv.size(); ++i) {
      t.argv.emplace_back(argv[i]);
    }
    return t;
  }
  t.why = "the target cannot store hash field TTLs";
  return t;
}

}  // namespace

CommandStreamApplier::CommandStreamApplier(const KeyRules& rules,
                                           const engine::CommandRegistry& registry,
                                           StreamWriter& writer)
    : m_rules(rules), m_registry(registry), m_writer(writer) {}

std::optional<std::string> CommandStreamApplier::unsupported_rules(const KeyRules& rules) {
  if (!rules.types.empty()) {
    return "--type cannot be applied to a command stream (a command does not name its key's "
           "type); import without it, or use --mode scan";
  }
  return std::nullopt;
}

bool CommandStreamApplier::keyspace_rules() const {
  return !m_rules.match.empty() || !m_rules.exclude.empty() || !m_rules.rename.empty();
}

uint64_t CommandStreamApplier::target_db(uint64_t source_db) const {
  if (auto it = m_rules.db_map.find(source_db); it != m_rules.db_map.end()) {
    return it->second;
  }
  return m_rules.unmapped_db.value_or(source_db);
}

engine::Expected<bool, std::string> CommandStreamApplier::emit(uint64_t db,
                                                               std::vector<std::string> argv,
                                                               uint64_t offset) {
  if (m_in_multi) {
    m_queued.push_back(Queued{db, std::move(argv)});
    return true;
  }
  m_views.assign(argv.begin(), argv.end());
  ++m_counts.applied;
  return m_writer.command(db, m_views, offset);
}

engine::Expected<bool, std::string> CommandStreamApplier::apply(
    std::span<const std::string_view> argv, uint64_t offset) {
  if (argv.empty()) {
    return true;
  }
  std::string name = engine::to_lower(argv[0]);
  auto refuse = [&](const std::string& why) -> engine::Expected<bool, std::string> {
    return engine::Unexpected{"cannot apply " + describe_command(argv) + " (source db " +
                              std::to_string(m_db) + "): " + why};
  };
  if (name == "select") {
    auto db = argv.size() == 2 ? parse_db(argv[1]) : std::nullopt;
    if (!db) {
      return refuse("not a database number");
    }
    m_db = *db;
    return true;
  }
  if (name == "ping" || name == "replconf") {
    ++m_counts.skipped;
    return true;
  }
  if (name == "multi") {
    m_in_multi = true;
    m_queued.clear();
    return true;
  }
  if (name == "exec") {
    if (!m_in_multi) {
      return refuse("EXEC without MULTI");
    }
    m_in_multi = false;
    std::vector<Queued> queued = std::move(m_queued);
    m_queued.clear();
    if (queued.empty()) {
      return true;  // every command in it was left out
    }
    if (auto ok = m_writer.begin_transaction(); !ok) {
      return ok;
    }
    for (Queued& q : queued) {
      m_views.assign(q.argv.begin(), q.argv.end());
      ++m_counts.applied;
      if (auto ok = m_writer.command(q.db, m_views, 0); !ok) {
        return ok;
      }
    }
    ++m_counts.transactions;
    return m_writer.end_transaction(offset);
  }
  std::vector<std::string> out(argv.begin(), argv.end());
  const uint64_t db = target_db(m_db);
  if (name == "flushall") {
    if (keyspace_rules() || !m_rules.db_map.empty() || m_rules.unmapped_db) {
      return refuse(
          "FLUSHALL would also remove target keys the rules (--match, --exclude, "
          "--rename-prefix, --db-map) keep out of this import");
    }
    return emit(db, std::move(out), offset);
  }
  if (name == "flushdb") {
    if (keyspace_rules()) {
      return refuse(
          "FLUSHDB would also remove target keys --match/--exclude/--rename-prefix "
          "keep out of this import");
    }
    return emit(db, std::move(out), offset);
  }
  if (name == "swapdb") {
    auto a = argv.size() == 3 ? parse_db(argv[1]) : std::nullopt;
    auto b = argv.size() == 3 ? parse_db(argv[2]) : std::nullopt;
    if (!a || !b) {
      return refuse("not two database numbers");
    }
    if (keyspace_rules()) {
      return refuse("SWAPDB moves keys the rules leave out too");
    }
    out[1] = std::to_string(target_db(*a));
    out[2] = std::to_string(target_db(*b));
    return emit(db, std::move(out), offset);
  }
  if (name == "function" || name == "script") {
    return emit(db, std::move(out), offset);  // libraries: no keys
  }
  if (name.starts_with("eval") || name.starts_with("fcall")) {
    if (keyspace_rules()) {
      return refuse(
          "a script may touch keys it does not name, which --match/--exclude/"
          "--rename-prefix cannot follow");
    }
  }
  if (is_field_ttl_command(name) && !m_rules.target_field_ttls) {
    if (m_rules.field_ttl == FieldTtlPolicy::fail) {
      return refuse(
          "the target cannot store hash field TTLs (--field-ttl drop-ttl or drop-field says "
          "what becomes of them)");
    }
    FieldTtlTranslation t = translate_field_ttl(name, argv, m_rules.field_ttl);
    if (!t.why.empty()) {
      return refuse(t.why);
    }
    if (t.skip) {
      ++m_counts.skipped;
      return true;
    }
    std::vector<std::string_view> translated(t.argv.begin(), t.argv.end());
    return apply(translated, offset);
  }
  engine::CommandKeys keys = engine::command_key_positions(m_registry, argv);
  if (!keys.known) {
    return refuse("keyshift does not know this command, so cannot find its keys");
  }
  if (!keys.found) {
    return refuse("its keys cannot be found from the command table");
  }
  size_t selected = 0;
  for (size_t pos : keys.positions) {
    selected += key_selected(m_rules, argv[pos]) ? 1 : 0;
  }
  if (!keys.positions.empty() && selected == 0) {
    ++m_counts.filtered;
    return true;
  }
  if (selected != keys.positions.size()) {
    return refuse("it touches keys that --match/--exclude keep and keys they leave out");
  }
  bool renamed = false;
  for (size_t pos : keys.positions) {
    for (const PrefixRule& rule : m_rules.rename) {
      if (auto to = apply_prefix_rule(rule, m_db, argv[pos])) {
        out[pos] = std::move(*to);
        renamed = true;
        break;
      }
    }
  }
  if (name == "move" && out.size() == 3) {
    auto to = parse_db(out[2]);
    if (!to) {
      return refuse("not a database number");
    }
    out[2] = std::to_string(target_db(*to));
  } else if (name == "copy") {
    for (size_t i = 3; i + 1 < out.size(); ++i) {
      if (engine::iequals(out[i], "db")) {
        auto to = parse_db(out[i + 1]);
        if (!to) {
          return refuse("not a database number");
        }
        out[i + 1] = std::to_string(target_db(*to));
      }
    }
  }
  m_counts.renamed += renamed ? 1 : 0;
  return emit(db, std::move(out), offset);
}

namespace {

// Commands per batch at most: bounds what the target queues for one EXEC.
constexpr uint64_t k_batch_commands = 5000;

PendingKey command_pending(std::string name, uint64_t db, uint64_t position) {
  PendingKey pending;
  pending.db = db;
  pending.key = std::move(name);
  pending.position = position;
  pending.kind = LiveStreamWriter::k_command_kind;
  return pending;
}

}  // namespace

engine::Expected<bool, std::string> LiveStreamWriter::open_batch() {
  if (m_in_batch) {
    return true;
  }
  std::string_view multi[] = {"MULTI"};
  m_in_batch = true;
  m_batch_commands = 0;
  return m_target.command(command_pending("MULTI", 0, 0), multi, std::nullopt);
}

engine::Expected<bool, std::string> LiveStreamWriter::command(
    uint64_t db, std::span<const std::string_view> argv, uint64_t offset) {
  if (auto ok = open_batch(); !ok) {
    return ok;
  }
  if (auto ok = m_target.command(command_pending(describe_command(argv), db, 0), argv, db); !ok) {
    return ok;
  }
  if (offset > 0) {
    m_batch_offset = offset;
  }
  if (++m_batch_commands >= k_batch_commands && offset > 0) {
    return flush();
  }
  return true;
}

engine::Expected<bool, std::string> LiveStreamWriter::begin_transaction() {
  return open_batch();  // the batch is the transaction: a source MULTI lands whole in one
}

engine::Expected<bool, std::string> LiveStreamWriter::end_transaction(uint64_t offset) {
  m_batch_offset = offset;
  if (m_batch_commands >= k_batch_commands) {
    return flush();
  }
  return true;
}

engine::Expected<bool, std::string> LiveStreamWriter::flush() {
  if (!m_in_batch) {
    return true;
  }
  std::string value = m_marker_id + " " + std::to_string(m_batch_offset);
  std::string_view set[] = {"SET", m_marker_key, value};
  if (auto ok = m_target.command(command_pending("SET (the import's offset marker)", 0, 0), set,
                                 uint64_t{0});
      !ok) {
    return ok;
  }
  m_in_batch = false;
  std::string_view exec[] = {"EXEC"};
  return m_target.command(command_pending("EXEC", 0, m_batch_offset), exec, std::nullopt);
}

engine::Expected<bool, std::string> LiveStreamWriter::clear_marker() {
  if (auto ok = flush(); !ok) {
    return ok;
  }
  std::string_view del[] = {"DEL", m_marker_key};
  return m_target.command(command_pending("DEL (the import's offset marker)", 0, 0), del,
                          uint64_t{0});
}

bool LiveStreamWriter::is_marker(std::string_view key) {
  return key.starts_with(k_marker_key) &&
         (key.size() == k_marker_key.size() || key[k_marker_key.size()] == ':');
}

std::optional<std::pair<std::string, uint64_t>> LiveStreamWriter::read_marker(
    const engine::RespEndpoint& endpoint, std::string_view key) {
  engine::RespEndpoint at = endpoint;
  at.db = 0;
  auto conn = engine::RespConnection::connect(at);
  if (!conn) {
    return std::nullopt;
  }
  auto value = conn->call({"GET", std::string(key)});
  if (!value || value->type != engine::RespValue::Type::bulk) {
    return std::nullopt;
  }
  size_t sp = value->str.rfind(' ');
  if (sp == std::string::npos) {
    return std::nullopt;
  }
  uint64_t offset = 0;
  std::string_view digits = std::string_view(value->str).substr(sp + 1);
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), offset);
  if (r.ec != std::errc()) {
    return std::nullopt;
  }
  return std::make_pair(value->str.substr(0, sp), offset);
}

EngineStreamWriter::EngineStreamWriter(engine::Engine& engine)
    : m_engine(engine), m_session(engine.open_session(nullptr)) {
  m_session.authenticated = true;
}

EngineStreamWriter::~EngineStreamWriter() {
  m_engine.close_session(m_session);
}

engine::Expected<bool, std::string> EngineStreamWriter::run(
    std::span<const std::string_view> argv) {
  m_engine.execute(m_session, argv);
  std::string_view reply(m_session.out.data(), m_session.out.size());
  if (!reply.empty() && reply[0] == '-') {
    size_t eol = reply.find("\r\n");
    std::string error(reply.substr(1, eol == std::string_view::npos ? reply.size() : eol - 1));
    m_session.out.clear();
    return engine::Unexpected{"the embedded engine refused " + describe_command(argv) + ": " +
                              error};
  }
  m_session.out.clear();
  return true;
}

engine::Expected<bool, std::string> EngineStreamWriter::command(
    uint64_t db, std::span<const std::string_view> argv, uint64_t) {
  if (m_db != db) {
    std::string number = std::to_string(db);
    std::string_view select[] = {"SELECT", number};
    if (auto ok = run(select); !ok) {
      return ok;
    }
    m_db = db;
  }
  return run(argv);
}

engine::Expected<bool, std::string> EngineStreamWriter::begin_transaction() {
  std::string_view multi[] = {"MULTI"};
  return run(multi);
}

engine::Expected<bool, std::string> EngineStreamWriter::end_transaction(uint64_t) {
  std::string_view exec[] = {"EXEC"};
  return run(exec);
}

}  // namespace keyshift::migrate
