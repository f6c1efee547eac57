#include "migrate/rdb_convert.hpp"

#include "compat/dump/jsonl_reader.hpp"
#include "compat/report/json_text.hpp"
#include "engine/engine.hpp"
#include "engine/persistence/rdb_format.hpp"
#include "engine/persistence/rdb_load.hpp"
#include "engine/persistence/rdb_writer.hpp"
#include "engine/util/clock.hpp"
#include "engine/util/split_args.hpp"
#include "migrate/rdb_dump.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <utility>

namespace keyshift::migrate {
namespace {

using engine::RdbKey;
using engine::RdbKind;

/// The first RDB version that stores hash field TTLs (types 24/25).
constexpr int k_field_ttl_version = 12;
/// Keys named per change in text output before "and N more".
constexpr size_t k_listed_keys = 20;
/// Valkey's default `databases`: the engine gets at least this many.
constexpr int k_default_databases = 16;

void note(RdbChange& change, const RdbKey& k) {
  ++change.count;
  change.keys.push_back({k.db, k.key});
}

class ConvertVisitor : public engine::RdbVisitor {
 public:
  ConvertVisitor(engine::Engine& engine, const RdbConvertOptions& options, RdbConvertReport& report)
      : m_engine(engine), m_options(options), m_rules(options.rules), m_report(report) {
    m_rules.target_field_ttls = options.rdb_version >= k_field_ttl_version;
  }

  void on_function(std::string_view code) override {
    ++m_report.functions_kept;
    m_functions.emplace_back(code);
  }
  /// The function libraries read, in file order.
  const std::vector<std::string>& functions() const { return m_functions; }

  /// The input's size, for progress.
  void set_size(uint64_t size) { m_size = size; }

  bool on_key(RdbKey& k) override {
    if (m_options.progress) {
      m_options.progress(k.offset, m_size);
    }
    ++m_report.keys_read;
    KeyEffects effects;
    switch (apply_key_rules(m_rules, k, m_options.now_ms, effects)) {
      case KeyVerdict::keep:
        break;
      case KeyVerdict::filtered:
        note(m_report.filtered, k);
        return true;
      case KeyVerdict::expired:
        note(m_report.expired, k);
        return true;
      case KeyVerdict::module_dropped:
        note(m_report.modules_dropped, k);
        return true;
      case KeyVerdict::blocked_module:
        note(m_report.blocked_modules, k);
        return true;
      case KeyVerdict::blocked_field_ttl:
        note(m_report.blocked_field_ttls, k);
        return true;
      case KeyVerdict::blocked_path_hash:
        note(m_report.blocked_path_hashes, k);
        return true;
      case KeyVerdict::emptied:
        note(m_report.fields_dropped, k);
        m_report.fields_removed += effects.fields_dropped;
        note(m_report.hashes_emptied, k);
        return true;
    }
    if (effects.field_ttls_dropped > 0) {
      note(m_report.field_ttls_dropped, k);
      m_report.fields_ttl_dropped += effects.field_ttls_dropped;
    }
    if (effects.fields_dropped > 0) {
      note(m_report.fields_dropped, k);
      m_report.fields_removed += effects.fields_dropped;
    }
    if (effects.renamed) {
      note(m_report.renamed, k);
    }
    uint64_t db = effects.target_db;
    if (db >= static_cast<uint64_t>(m_engine.db_count())) {
      return fail(k, "database " + std::to_string(db) + " is beyond the " +
                         std::to_string(m_engine.db_count()) +
                         " databases a server has by default; map it with --db-map");
    }
    if (blocked()) {
      return true;  // keep reading only to name every blocking key
    }
    engine::Db& target = m_engine.db(static_cast<int>(db));
    if (target.exists(k.key)) {
      return fail(k, "the key is already in database " + std::to_string(db) +
                         (effects.renamed ? " (a renamed key met one of the same name)"
                                          : " (two databases mapped onto one?)"));
    }
    if (effects.moved) {
      note(m_report.moved, k);
    }
    bool is_hash = k.value.kind == RdbKind::hash;
    auto spec = engine::build_engine_value(m_engine, std::move(k.value), m_options.now_ms);
    if (!spec) {
      if (is_hash && spec.error().rfind("empty", 0) != 0) {
        note(m_report.expired, k);  // every field's TTL had passed
        return true;
      }
      if (spec.error().rfind("empty", 0) == 0) {
        return true;  // an empty collection, which servers skip too
      }
      return fail(k, spec.error());
    }
    target.add(k.key, *spec, k.expire_ms);
    ++m_report.keys_written;
    return true;
  }

  bool blocked() const {
    return m_report.blocked_field_ttls.count + m_report.blocked_modules.count +
               m_report.blocked_path_hashes.count >
           0;
  }

  const std::optional<engine::RdbError>& error() const { return m_error; }

 private:
  bool fail(const RdbKey& k, std::string message) {
    m_error = engine::RdbError{k.offset, "key " + engine::quote_repr(k.key) + " (db " +
                                             std::to_string(k.db) + "): " + std::move(message)};
    return false;
  }

  engine::Engine& m_engine;
  const RdbConvertOptions& m_options;
  KeyRules m_rules;
  RdbConvertReport& m_report;
  uint64_t m_size = 0;
  std::optional<engine::RdbError> m_error;
  std::vector<std::string> m_functions;
};

std::string list_keys(const RdbChange& change, size_t limit) {
  std::string out;
  size_t shown = std::min(limit, change.keys.size());
  for (size_t i = 0; i < shown; ++i) {
    out += (i == 0 ? "" : ", ") + std::string("db") + std::to_string(change.keys[i].db) + " " +
           engine::quote_repr(change.keys[i].key);
  }
  if (change.count > shown) {
    out += " and " + std::to_string(change.count - shown) + " more";
  }
  return out;
}

std::string blocking_message(const RdbConvertReport& r, int version) {
  std::string out;
  auto add = [&out](const std::string& text) { out += (out.empty() ? "" : "; ") + text; };
  if (r.blocked_field_ttls.count > 0) {
    add(std::to_string(r.blocked_field_ttls.count) + " hash(es) have field TTLs, which RDB " +
        std::to_string(version) + " cannot store (use --field-ttl drop-ttl or drop-field, or " +
        "--rdb-version 12): " + list_keys(r.blocked_field_ttls, k_listed_keys));
  }
  if (r.blocked_modules.count > 0) {
    add(std::to_string(r.blocked_modules.count) +
        " module key(s), which no target reads without the module (drop them with "
        "--skip-modules): " +
        list_keys(r.blocked_modules, k_listed_keys));
  }
  if (r.blocked_path_hashes.count > 0) {
    add(std::to_string(r.blocked_path_hashes.count) +
        " Path Hash key(s) (Valkey 9.2's type 23), which keyshift cannot rewrite (leave them "
        "out with --exclude): " +
        list_keys(r.blocked_path_hashes, k_listed_keys));
  }
  return out;
}

void append_change_json(std::string& out, std::string_view name, const RdbChange& change) {
  out += "\"";
  out += name;
  out += "\":{\"count\":" + std::to_string(change.count) + ",\"keys\":[";
  for (size_t i = 0; i < change.keys.size(); ++i) {
    out += (i == 0 ? "{\"db\":" : ",{\"db\":") + std::to_string(change.keys[i].db) + ",\"key\":";
    compat::append_json_bytes(out, change.keys[i].key);
    out.push_back('}');
  }
  out += "]}";
}

}  // namespace

namespace {

/// Builds the engine, lets `read` feed `visitor` every key, and saves what was kept.
RdbConvertReport convert_keys(const std::string& out_path, const RdbConvertOptions& options,
                              const std::function<bool(ConvertVisitor&, RdbConvertReport&)>& read) {
  RdbConvertReport report;
  report.output_version = options.rdb_version;
  if ((options.rdb_version < 10 || options.rdb_version > 12) &&
      (options.rdb_version < engine::rdb::k_valkey_first_version ||
       options.rdb_version > engine::rdb::k_valkey_max_version)) {
    report.error = "RDB version " + std::to_string(options.rdb_version) +
                   " cannot be written (10, 11, 12, 80 or 81)";
    return report;
  }
  engine::EngineConfig config;
  int databases = k_default_databases;
  for (const auto& [from, to] : options.rules.db_map) {
    databases = std::max<int>(databases, static_cast<int>(std::min<uint64_t>(to, 1 << 20)) + 1);
  }
  config.databases = databases;
  engine::ManualClock clock(options.now_ms);
  auto engine = std::make_unique<engine::Engine>(config, clock);

  ConvertVisitor visitor(*engine, options, report);
  if (!read(visitor, report)) {
    return report;
  }
  if (visitor.error()) {
    report.error = visitor.error()->message;
    report.error_offset = visitor.error()->offset;
    return report;
  }
  if (visitor.blocked()) {
    report.error = "cannot convert: " + blocking_message(report, options.rdb_version);
    return report;
  }
  engine::RdbWriteOptions write;
  write.version = options.rdb_version;
  write.functions = visitor.functions();
  auto stats = engine::save_rdb(*engine, out_path, write);
  if (!stats) {
    report.error = "cannot write " + out_path + ": " + stats.error();
    return report;
  }
  report.bytes_written = stats->bytes;
  report.ok = true;
  return report;
}

}  // namespace

RdbConvertReport convert_rdb(std::string_view input, const std::string& out_path,
                             const RdbConvertOptions& options) {
  return convert_keys(out_path, options, [&](ConvertVisitor& visitor, RdbConvertReport& report) {
    visitor.set_size(input.size());
    engine::RdbReadOptions read;
    read.skip_modules = true;  // module keys are judged by the visitor, never decoded
    auto summary = engine::read_rdb(input, visitor, read);
    if (!summary) {
      report.error = summary.error().message;
      report.error_offset = summary.error().offset;
      return false;
    }
    report.input_version = summary->version;
    return true;
  });
}

RdbConvertReport convert_dump_lines(std::string_view text, const std::string& out_path,
                                    const RdbConvertOptions& options) {
  return convert_keys(out_path, options, [&](ConvertVisitor& visitor, RdbConvertReport& report) {
    visitor.set_size(text.size());
    auto read = compat::read_dump_lines(
        text, [&](engine::RdbKey& k) -> engine::Expected<bool, std::string> {
          if (visitor.on_key(k)) {
            return true;
          }
          return engine::Unexpected{visitor.error() ? visitor.error()->message
                                                    : std::string("stopped")};
        });
    if (!read) {
      report.error = read.error();
      return false;
    }
    return true;
  });
}

std::string render_convert_text(const RdbConvertReport& r, std::string_view in,
                                std::string_view out, bool verbose) {
  std::string text;
  if (!r.ok) {
    return text;  // the CLI prints r.error
  }
  text += "converted " + std::string(in) + " (RDB " + std::to_string(r.input_version) + ") to " +
          std::string(out) + " (RDB " + std::to_string(r.output_version) +
          "): " + std::to_string(r.keys_read) + " keys read, " + std::to_string(r.keys_written) +
          " written, " + std::to_string(r.bytes_written) + " bytes\n";
  auto line = [&](const RdbChange& c, const std::string& what) {
    if (c.count == 0) {
      return;
    }
    text += "  " + what + "\n";
    if (verbose) {
      for (const RdbKeyRef& k : c.keys) {
        text += "    db" + std::to_string(k.db) + " " + engine::quote_repr(k.key) + "\n";
      }
    }
  };
  line(r.expired, std::to_string(r.expired.count) + " expired key(s) dropped");
  line(r.filtered, std::to_string(r.filtered.count) + " key(s) left out by --match/--exclude");
  line(r.modules_dropped, std::to_string(r.modules_dropped.count) + " module key(s) dropped");
  line(r.field_ttls_dropped, std::to_string(r.fields_ttl_dropped) + " field TTL(s) removed in " +
                                 std::to_string(r.field_ttls_dropped.count) + " hash(es)");
  line(r.fields_dropped, std::to_string(r.fields_removed) + " field(s) with a TTL removed from " +
                             std::to_string(r.fields_dropped.count) + " hash(es)");
  line(r.hashes_emptied,
       std::to_string(r.hashes_emptied.count) + " hash(es) dropped: no field was left");
  line(r.moved, std::to_string(r.moved.count) + " key(s) moved to another database");
  line(r.renamed, std::to_string(r.renamed.count) + " key(s) renamed by --rename-prefix");
  if (r.functions_kept > 0) {
    text += "  " + std::to_string(r.functions_kept) + " function librar(ies) carried over\n";
  }
  return text;
}

std::string render_convert_json(const RdbConvertReport& r, std::string_view in,
                                std::string_view out) {
  std::string j = "{\"ok\":";
  j += r.ok ? "true" : "false";
  j += ",\"input\":";
  compat::append_json_bytes(j, in);
  j += ",\"output\":";
  compat::append_json_bytes(j, out);
  j += ",\"error\":";
  if (r.ok) {
    j += "null";
  } else {
    compat::append_json_bytes(j, r.error);
  }
  j += ",\"error_offset\":";
  j += r.error_offset ? std::to_string(*r.error_offset) : "null";
  j += ",\"input_version\":" + std::to_string(r.input_version);
  j += ",\"output_version\":" + std::to_string(r.output_version);
  j += ",\"keys_read\":" + std::to_string(r.keys_read);
  j += ",\"keys_written\":" + std::to_string(r.keys_written);
  j += ",\"bytes_written\":" + std::to_string(r.bytes_written);
  j += ",\"fields_ttl_dropped\":" + std::to_string(r.fields_ttl_dropped);
  j += ",\"fields_removed\":" + std::to_string(r.fields_removed);
  j += ",\"functions_kept\":" + std::to_string(r.functions_kept);
  j += ",\"changes\":{";
  append_change_json(j, "expired", r.expired);
  j += ",";
  append_change_json(j, "filtered", r.filtered);
  j += ",";
  append_change_json(j, "modules_dropped", r.modules_dropped);
  j += ",";
  append_change_json(j, "field_ttls_dropped", r.field_ttls_dropped);
  j += ",";
  append_change_json(j, "fields_dropped", r.fields_dropped);
  j += ",";
  append_change_json(j, "hashes_emptied", r.hashes_emptied);
  j += ",";
  append_change_json(j, "moved", r.moved);
  j += ",";
  append_change_json(j, "renamed", r.renamed);
  j += "},\"blocked\":{";
  append_change_json(j, "field_ttls", r.blocked_field_ttls);
  j += ",";
  append_change_json(j, "modules", r.blocked_modules);
  j += ",";
  append_change_json(j, "path_hashes", r.blocked_path_hashes);
  j += "}}\n";
  return j;
}

}  // namespace keyshift::migrate
