#include "migrate/rdb_inspect.hpp"

#include "compat/kb/knowledge_base.hpp"
#include "compat/report/json_text.hpp"
#include "engine/persistence/rdb_format.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <ctime>
#include <queue>
#include <unordered_map>
#include <utility>

namespace keyshift::migrate {
namespace {

namespace rdb = engine::rdb;

constexpr int64_t k_hour_ms = 3600LL * 1000;
constexpr int64_t k_day_ms = 24 * k_hour_ms;

// Facts, per server: Redis 7.0 writes RDB 10 (types up to 19); Redis 7.2 and Valkey 7.2/8.0
// write RDB 11 (adds SET_LISTPACK and STREAM_LISTPACKS_3); Redis 7.4 writes RDB 12 (adds the
// hash-field-TTL types 22-25 and SLOT_INFO). Each refuses a newer version outright
// ("Can't handle RDB format version"), as the corpus' load results confirm.
// Valkey 9 reads REDIS files up to 11 and its own VALKEY080, and refuses Redis' 12-79 as
// foreign (rdbIsVersionAccepted); its field-TTL hashes are its own type (HASH_2). Valkey 9.2
// writes VALKEY081, which adds the Path Hash (type 23); 9.0 refuses 81 as a future version.
/// The knowledge base's facts of each target, in RdbTarget's order.
std::span<const compat::kb::KbRdbFacts> target_facts() {
  auto facts = compat::kb::rdb_facts();
  static_assert(static_cast<size_t>(RdbTarget::valkey_9_2) == 12,
                "RdbTarget lists the knowledge base's RDB lines");
  return facts;
}

/// True for Valkey 9 and later, whose RDB numbering is its own.
bool valkey_numbering(const RdbTargetLimits& t) {
  return t.max_rdb_version >= rdb::k_valkey_first_version;
}

/// Orders the biggest-keys heap so that its top is the key to evict first.
struct SmallerKey {
  bool operator()(const RdbBigKey& a, const RdbBigKey& b) const {
    if (a.value_bytes != b.value_bytes) {
      return a.value_bytes > b.value_bytes;
    }
    return a.offset < b.offset;
  }
};

/// The "name=" of a library's "#!lua name=x ..." first line.
std::string library_name(std::string_view code) {
  std::string_view first = code.substr(0, code.find('\n'));
  size_t at = first.find("name=");
  if (first.rfind("#!", 0) != 0 || at == std::string_view::npos) {
    return {};
  }
  std::string_view rest = first.substr(at + 5);
  return std::string(rest.substr(0, rest.find_first_of(" \t\r")));
}

/// Whether Lua code calls the `server` global that only Valkey defines; a heuristic on the
/// text (a word boundary before "server."), enough to warn before Redis refuses the file.
bool uses_valkey_api(std::string_view code) {
  for (size_t at = code.find("server."); at != std::string_view::npos;
       at = code.find("server.", at + 1)) {
    if (at == 0) {
      return true;
    }
    char before = code[at - 1];
    bool ident = (before >= 'a' && before <= 'z') || (before >= 'A' && before <= 'Z') ||
                 (before >= '0' && before <= '9') || before == '_' || before == '.';
    if (!ident) {
      return true;
    }
  }
  return false;
}

class InspectVisitor : public engine::RdbVisitor {
 public:
  InspectVisitor(RdbReport& report, const RdbInspectOptions& options)
      : m_report(report), m_options(options) {}

  void on_aux(std::string_view name, std::string_view value) override {
    m_report.aux.emplace_back(name, value);
    if (name == "ctime") {
      int64_t seconds = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
      if (ec == std::errc() && end == value.data() + value.size()) {
        m_report.ctime = seconds;
      }
    }
  }

  void on_slot_info(uint64_t, uint64_t, uint64_t) override { ++m_report.slot_info_records; }
  void on_slot_import(std::string_view, uint64_t) override { ++m_report.slot_import_records; }

  void on_function(std::string_view code) override {
    m_report.libraries.push_back({library_name(code), uses_valkey_api(code)});
  }

  void on_module_aux(std::string_view name) override { m_report.module_aux.emplace_back(name); }

  bool on_key(engine::RdbKey& key) override {
    RdbReport& r = m_report;
    ++r.total_keys;
    RdbDbStats& db = r.dbs[key.db];
    ++db.keys;
    db.value_bytes += key.value_bytes;
    if (key.expire_ms >= 0) {
      ++db.expires;
    }
    add(r.types[key.value.rdb_type], key.value_bytes);
    add(r.kinds[key.value.kind], key.value_bytes);
    if (key.value.kind == engine::RdbKind::module) {
      ++r.module_keys[key.value.module_name];
    }
    if ((key.value.rdb_type >= static_cast<uint8_t>(rdb::Type::hash_metadata_pre_ga) &&
         key.value.rdb_type <= static_cast<uint8_t>(rdb::Type::hash_listpack_ex)) ||
        key.value.rdb_type == static_cast<uint8_t>(rdb::Type::valkey_hash_2)) {
      ++r.field_ttl_hashes;
    }
    for (const auto& field : key.value.hash) {
      if (field.expire_ms >= 0) {
        ++r.fields_with_ttl;
      }
    }
    count_ttl(key.expire_ms);
    count_prefix(key.key, key.value_bytes);
    keep_if_big(key);
    report_progress(key.offset);
    return true;
  }

  /// Moves the heap and the prefix table into the report, sorted.
  void finish() {
    RdbReport& r = m_report;
    while (!m_biggest.empty()) {
      r.biggest.push_back(m_biggest.top());
      m_biggest.pop();
    }
    std::reverse(r.biggest.begin(), r.biggest.end());
    r.distinct_prefixes = m_prefixes.size();
    std::vector<RdbPrefix> all;
    all.reserve(m_prefixes.size());
    for (auto& [prefix, count] : m_prefixes) {
      all.push_back({prefix, count});
    }
    size_t n = std::min(all.size(), m_options.top_prefixes);
    std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n), all.end(),
                      [](const RdbPrefix& a, const RdbPrefix& b) {
                        if (a.count.keys != b.count.keys) {
                          return a.count.keys > b.count.keys;
                        }
                        if (a.count.value_bytes != b.count.value_bytes) {
                          return a.count.value_bytes > b.count.value_bytes;
                        }
                        return a.prefix < b.prefix;
                      });
    all.resize(n);
    r.prefixes = std::move(all);
  }

 private:
  static void add(RdbCount& c, uint64_t bytes) {
    ++c.keys;
    c.value_bytes += bytes;
  }

  void count_ttl(int64_t expire_ms) {
    RdbTtlBuckets& t = m_report.ttl;
    if (expire_ms < 0) {
      ++t.no_ttl;
      return;
    }
    int64_t left = expire_ms - m_options.now_ms;
    if (left <= 0) {
      ++t.expired;
    } else if (left < k_hour_ms) {
      ++t.under_1h;
    } else if (left < k_day_ms) {
      ++t.under_1d;
    } else if (left < 30 * k_day_ms) {
      ++t.under_30d;
    } else {
      ++t.longer;
    }
  }

  // Keys without the delimiter are counted apart: as prefixes of their own they would make
  // the table as large as the keyspace.
  void count_prefix(const std::string& key, uint64_t bytes) {
    size_t at = m_options.delimiter.empty() ? std::string::npos : key.find(m_options.delimiter);
    if (at == std::string::npos) {
      add(m_report.without_delimiter, bytes);
      return;
    }
    add(m_prefixes[key.substr(0, at)], bytes);
  }

  void keep_if_big(engine::RdbKey& key) {
    if (m_options.top_keys == 0) {
      return;
    }
    RdbBigKey candidate{std::string(), key.db, key.value.rdb_type, key.value_bytes, key.offset};
    if (m_biggest.size() >= m_options.top_keys) {
      if (!SmallerKey()(candidate, m_biggest.top())) {
        return;
      }
      m_biggest.pop();
    }
    candidate.key = key.key;
    m_biggest.push(std::move(candidate));
  }

  void report_progress(uint64_t offset) {
    if (!m_options.progress || m_report.size_bytes == 0) {
      return;
    }
    uint64_t percent = offset * 100 / m_report.size_bytes;
    if (percent != m_last_percent) {
      m_last_percent = percent;
      m_options.progress(offset, m_report.size_bytes);
    }
  }

  RdbReport& m_report;
  const RdbInspectOptions& m_options;
  std::priority_queue<RdbBigKey, std::vector<RdbBigKey>, SmallerKey> m_biggest;
  std::unordered_map<std::string, RdbCount> m_prefixes;
  uint64_t m_last_percent = 0;
};

/// The logical type an object type byte decodes to.
engine::RdbKind kind_of_type(uint8_t type) {
  switch (static_cast<rdb::Type>(type)) {
    case rdb::Type::string:
      return engine::RdbKind::string;
    case rdb::Type::list:
    case rdb::Type::list_ziplist:
    case rdb::Type::list_quicklist:
    case rdb::Type::list_quicklist_2:
      return engine::RdbKind::list;
    case rdb::Type::set:
    case rdb::Type::set_intset:
    case rdb::Type::set_listpack:
      return engine::RdbKind::set;
    case rdb::Type::zset:
    case rdb::Type::zset_2:
    case rdb::Type::zset_ziplist:
    case rdb::Type::zset_listpack:
      return engine::RdbKind::zset;
    case rdb::Type::stream_listpacks:
    case rdb::Type::stream_listpacks_2:
    case rdb::Type::stream_listpacks_3:
      return engine::RdbKind::stream;
    case rdb::Type::module_pre_ga:
    case rdb::Type::module_2:
      return engine::RdbKind::module;
    case rdb::Type::valkey_path_hash:
      return engine::RdbKind::path_hash;
    default:
      return engine::RdbKind::hash;
  }
}

/// A key as text for a terminal: control bytes (and any byte of text that is not UTF-8) as
/// \xHH, quoted when that or a blank makes it ambiguous, cut after `max` bytes.
std::string printable(std::string_view bytes, size_t max = 60) {
  const bool utf8 = compat::is_valid_utf8(bytes);
  std::string out;
  bool quote = bytes.empty();
  size_t i = 0;
  for (; i < bytes.size(); ++i) {
    const char ch = bytes[i];
    const auto c = static_cast<uint8_t>(ch);
    // Stop on a character boundary so the cut never splits a UTF-8 sequence.
    if (out.size() >= max && (!utf8 || (c & 0xc0) != 0x80)) {
      break;
    }
    if (ch == '"' || ch == '\\') {
      out.push_back('\\');
      out.push_back(ch);
      quote = true;
    } else if (c < 0x20 || c == 0x7f || (c >= 0x80 && !utf8)) {
      out += fmt::format("\\x{:02x}", c);
      quote = true;
    } else {
      quote = quote || ch == ' ';
      out.push_back(ch);
    }
  }
  if (quote) {
    out = "\"" + out + "\"";
  }
  if (i < bytes.size()) {
    out += fmt::format("... ({} bytes)", bytes.size());
  }
  return out;
}

std::string utc_time(int64_t seconds) {
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) {
    return "?";
  }
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// The type byte as the file stores it: Valkey's own types are renumbered in memory (122,
/// 123) so that they never mix with Redis' 22 and 23, but users see the file's byte.
uint8_t stored_type(uint8_t type) {
  if (type == static_cast<uint8_t>(rdb::Type::valkey_hash_2)) {
    return rdb::k_valkey_hash_2_on_disk;
  }
  if (type == static_cast<uint8_t>(rdb::Type::valkey_path_hash)) {
    return rdb::k_valkey_path_hash_on_disk;
  }
  return type;
}

std::string type_label(uint8_t type) {
  std::string_view name = rdb::type_name(type);
  return name == "UNKNOWN" ? fmt::format("TYPE_{}", type) : std::string(name);
}

/// Appends `"name": ` after a comma when the object already has members.
class JsonObject {
 public:
  explicit JsonObject(std::string& out) : m_out(out) { m_out.push_back('{'); }
  std::string& field(std::string_view name) {
    if (!m_first) {
      m_out += ", ";
    }
    m_first = false;
    compat::append_json_string(m_out, name);
    m_out += ": ";
    return m_out;
  }
  void number(std::string_view name, uint64_t v) { field(name) += std::to_string(v); }
  void signed_number(std::string_view name, int64_t v) { field(name) += std::to_string(v); }
  void text(std::string_view name, std::string_view v) {
    compat::append_json_string(field(name), v);
  }
  void bytes(std::string_view name, std::string_view v) {
    compat::append_json_bytes(field(name), v);
  }
  void boolean(std::string_view name, bool v) { field(name) += v ? "true" : "false"; }
  void null(std::string_view name) { field(name) += "null"; }
  void close() { m_out.push_back('}'); }

 private:
  std::string& m_out;
  bool m_first = true;
};

void append_count(std::string& out, const RdbCount& c) {
  JsonObject o(out);
  o.number("keys", c.keys);
  o.number("value_bytes", c.value_bytes);
  o.close();
}

void append_strings(std::string& out, const std::vector<std::string>& items) {
  out.push_back('[');
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) {
      out += ", ";
    }
    compat::append_json_bytes(out, items[i]);
  }
  out.push_back(']');
}

template <typename Items, typename Fn>
void append_array(std::string& out, const Items& items, Fn each) {
  out.push_back('[');
  bool first = true;
  for (const auto& item : items) {
    if (!first) {
      out += ", ";
    }
    first = false;
    each(item);
  }
  out.push_back(']');
}

}  // namespace

std::optional<RdbTarget> parse_rdb_target(std::string_view name) {
  const compat::kb::KbRdbFacts* f = compat::kb::find_rdb_facts(name);
  if (f == nullptr) {
    return std::nullopt;
  }
  return static_cast<RdbTarget>(f - target_facts().data());
}

std::vector<std::string_view> rdb_target_names() {
  std::vector<std::string_view> out;
  for (const compat::kb::KbRdbFacts& f : target_facts()) {
    out.push_back(f.line);
  }
  return out;
}

RdbTargetLimits rdb_target_limits(RdbTarget target) {
  const compat::kb::KbRdbFacts& f = target_facts()[static_cast<size_t>(target)];
  return {f.line, f.max_read, f.max_type, f.field_ttls, f.slot_info, f.valkey_api};
}

engine::Expected<RdbReport, engine::RdbError> inspect_rdb(std::string_view file,
                                                          const RdbInspectOptions& options) {
  RdbReport report;
  report.size_bytes = file.size();
  report.delimiter = options.delimiter;
  report.now_ms = options.now_ms;
  InspectVisitor visitor(report, options);
  engine::RdbReadOptions read_options;
  // Module values are self-describing: skipping them still checks their structure, and the
  // verdict decides what their presence means.
  read_options.skip_modules = true;
  read_options.materialize = false;  // counts and sizes only: validate without copying
  auto summary = engine::read_rdb(file, visitor, read_options);
  if (!summary) {
    return engine::Unexpected{std::move(summary).error()};
  }
  report.summary = *summary;
  visitor.finish();
  if (options.target) {
    report.target = judge_target(report, *options.target, options.skip_modules);
  }
  return report;
}

RdbTargetReport judge_target(const RdbReport& report, RdbTarget target, bool skip_modules) {
  RdbTargetReport out;
  out.target = target;
  const RdbTargetLimits limits = rdb_target_limits(target);
  const int version = report.summary.version;
  const bool to_valkey_9 = valkey_numbering(limits);
  if (to_valkey_9 && !report.summary.valkey_magic && version > 11) {
    out.changes.push_back(fmt::format(
        "RDB version {} -> {} ({} refuses Redis' versions 12-79 as foreign; use --rdb-version "
        "{} or 11)",
        version, limits.max_rdb_version, limits.name, limits.max_rdb_version));
  } else if (version > limits.max_rdb_version) {
    out.changes.push_back(fmt::format("RDB version {} -> {} ({} reads RDB <= {})", version,
                                      limits.max_rdb_version, limits.name, limits.max_rdb_version));
  } else if (report.summary.valkey_magic && !to_valkey_9) {
    out.changes.push_back(fmt::format("RDB version {} (Valkey 9) -> {} ({} reads RDB <= {})",
                                      version, limits.max_rdb_version, limits.name,
                                      limits.max_rdb_version));
  }
  uint64_t newer_hashes = 0;
  for (const auto& [type, count] : report.types) {
    if (type == static_cast<uint8_t>(rdb::Type::valkey_path_hash)) {
      if (limits.max_rdb_version < rdb::k_valkey_path_hash_version) {
        out.blockers.push_back(fmt::format(
            "{} Path Hash keys (Valkey 9.2's type 23): {} has no such type (leave them out "
            "with rdb convert --exclude)",
            count.keys, limits.name));
      }
      continue;
    }
    if (type == static_cast<uint8_t>(rdb::Type::valkey_hash_2)) {
      if (to_valkey_9) {
        continue;
      }
      if (limits.field_ttls) {
        out.changes.push_back(fmt::format(
            "{} HASH_2 keys (Valkey 9's hashes with field TTLs) rewritten as Redis 7.4's "
            "field-TTL hashes (--rdb-version 12)",
            count.keys));
        continue;
      }
      newer_hashes += count.keys;
      continue;
    }
    if (to_valkey_9 && type >= static_cast<uint8_t>(rdb::Type::hash_metadata_pre_ga) &&
        type <= static_cast<uint8_t>(rdb::Type::hash_listpack_ex)) {
      out.changes.push_back(
          fmt::format("{} {} keys (type {}, Redis 7.4's field TTLs) rewritten as Valkey 9's HASH_2 "
                      "(--rdb-version {})",
                      count.keys, type_label(type), type, limits.max_rdb_version));
      continue;
    }
    if (type <= limits.max_object_type || type == static_cast<uint8_t>(rdb::Type::module_2) ||
        type == static_cast<uint8_t>(rdb::Type::module_pre_ga)) {
      continue;
    }
    if (type >= static_cast<uint8_t>(rdb::Type::hash_metadata_pre_ga)) {
      newer_hashes += count.keys;
      continue;
    }
    std::string what;
    switch (static_cast<rdb::Type>(type)) {
      case rdb::Type::set_listpack:
        what = "rewritten as intset or plain sets";
        break;
      case rdb::Type::stream_listpacks_3:
        what = "rewritten as STREAM_LISTPACKS_2 (consumers' active times are dropped)";
        break;
      default:
        what = "rewritten in an older encoding";
    }
    out.changes.push_back(
        fmt::format("{} {} keys (type {}) {}", count.keys, type_label(type), type, what));
  }
  if (newer_hashes > 0 && !limits.field_ttls) {
    out.changes.push_back(fmt::format(
        "{} hashes with field TTLs (types 22-25 or HASH_2, {} fields with TTLs): {} has no "
        "hash-field "
        "expiration; choose what happens to the field TTLs with --field-ttl",
        newer_hashes, report.fields_with_ttl, limits.name));
  }
  if (report.slot_import_records > 0 && !to_valkey_9) {
    out.changes.push_back(
        fmt::format("{} SLOT_IMPORT records (Valkey 9 slot migrations in progress) dropped",
                    report.slot_import_records));
  }
  if (report.slot_info_records > 0 && !limits.slot_info) {
    out.changes.push_back(fmt::format("{} SLOT_INFO records dropped (only Redis 7.4 reads them)",
                                      report.slot_info_records));
  }
  if (!limits.valkey) {
    for (const auto& lib : report.libraries) {
      if (lib.uses_valkey_api) {
        out.blockers.push_back(fmt::format(
            "function library '{}' calls the Valkey-only server.* Lua API, which {} refuses to "
            "load; rewrite it with redis.*",
            lib.name, limits.name));
      }
    }
  }
  for (const auto& [name, keys] : report.module_keys) {
    if (skip_modules) {
      out.changes.push_back(
          fmt::format("{} keys of module '{}' dropped (--skip-modules)", keys, name));
    } else {
      out.blockers.push_back(fmt::format(
          "{} keys of module '{}': {} has no such module type (--skip-modules drops them)", keys,
          name, limits.name));
    }
  }
  for (const auto& name : report.module_aux) {
    if (skip_modules) {
      out.changes.push_back(fmt::format("aux data of module '{}' dropped (--skip-modules)", name));
    } else {
      out.blockers.push_back(
          fmt::format("aux data of module '{}' needs that module in {} (--skip-modules drops it)",
                      name, limits.name));
    }
  }
  if (report.ttl.expired > 0) {
    out.notes.push_back(
        fmt::format("{} keys had already expired; a server drops them when it loads the file",
                    report.ttl.expired));
  }
  out.verdict = !out.blockers.empty()  ? RdbVerdict::cannot_move
                : !out.changes.empty() ? RdbVerdict::needs_conversion
                                       : RdbVerdict::loads_as_is;
  return out;
}

std::string rdb_creator(const RdbReport& report) {
  for (std::string_view name : {"valkey-ver", "redis-ver"}) {
    for (const auto& [aux, value] : report.aux) {
      if (aux == name) {
        return fmt::format("{} {}", aux, value);
      }
    }
  }
  return {};
}

std::string_view checksum_status(const engine::RdbSummary& summary) {
  if (!summary.has_checksum) {
    return "absent";
  }
  if (summary.checksum == 0) {
    return "disabled";
  }
  return summary.checksum_verified ? "verified" : "not verified";
}

std::string_view kind_name(engine::RdbKind kind) {
  return engine::rdb_kind_name(kind);
}

std::string_view verdict_name(RdbVerdict verdict) {
  switch (verdict) {
    case RdbVerdict::loads_as_is:
      return "loads as is";
    case RdbVerdict::needs_conversion:
      return "needs conversion";
    case RdbVerdict::cannot_move:
      return "cannot move";
  }
  return "unknown";
}

std::string render_rdb_text(const RdbReport& r, std::string_view file, RdbReportDetail detail) {
  std::string out;
  auto line = [&out](std::string_view label, const std::string& value) {
    out += fmt::format("{:<13}{}\n", label, value);
  };
  line("file", fmt::format("{} ({} bytes)", file, r.size_bytes));
  line("rdb version", std::to_string(r.summary.version));
  std::string creator = rdb_creator(r);
  line("creator", creator.empty() ? "unknown (no redis-ver/valkey-ver aux field)" : creator);
  line("ctime", r.ctime ? fmt::format("{} ({})", *r.ctime, utc_time(*r.ctime)) : "absent");
  std::string_view status = checksum_status(r.summary);
  line("checksum", status == "verified"   ? fmt::format("verified ({:016x})", r.summary.checksum)
                   : status == "disabled" ? std::string("disabled (0)")
                   : status == "absent"   ? std::string("absent (version < 5)")
                                          : std::string(status));
  if (r.summary.end_offset < r.size_bytes) {
    line("trailing", fmt::format("{} bytes after the end of the RDB data",
                                 r.size_bytes - r.summary.end_offset));
  }
  line("keys", std::to_string(r.total_keys));
  out += "\ndatabases\n";
  out += fmt::format("  {:>4} {:>12} {:>12} {:>14}\n", "db", "keys", "expires", "value bytes");
  for (const auto& [db, s] : r.dbs) {
    out += fmt::format("  {:>4} {:>12} {:>12} {:>14}\n", db, s.keys, s.expires, s.value_bytes);
  }
  out += "\ntypes\n";
  out += fmt::format("  {:<24} {:<8} {:>12} {:>14}\n", "rdb type", "type", "keys", "value bytes");
  for (const auto& [type, c] : r.types) {
    out += fmt::format("  {:<24} {:<8} {:>12} {:>14}\n",
                       fmt::format("{} ({})", type_label(type), stored_type(type)),
                       kind_name(kind_of_type(type)), c.keys, c.value_bytes);
  }
  if (detail == RdbReportDetail::check) {
    out += "\nstatus       OK\n";
    return out;
  }
  out += "\nlogical types\n";
  for (const auto& [kind, c] : r.kinds) {
    out +=
        fmt::format("  {:<8} {:>12} keys {:>14} bytes\n", kind_name(kind), c.keys, c.value_bytes);
  }
  out += fmt::format("\nbiggest keys (top {})\n", r.biggest.size());
  for (const auto& k : r.biggest) {
    out += fmt::format("  {:>14} bytes  db {:<3} {:<20} {}\n", k.value_bytes, k.db,
                       type_label(k.rdb_type), printable(k.key));
  }
  out += fmt::format("\nkey prefixes (before '{}'; {} distinct, top {})\n", printable(r.delimiter),
                     r.distinct_prefixes, r.prefixes.size());
  for (const auto& p : r.prefixes) {
    out += fmt::format("  {:<30} {:>12} keys {:>14} bytes\n", printable(p.prefix), p.count.keys,
                       p.count.value_bytes);
  }
  out += fmt::format("  {:<30} {:>12} keys {:>14} bytes\n", "(no delimiter)",
                     r.without_delimiter.keys, r.without_delimiter.value_bytes);
  out += fmt::format("\nttl (relative to {})\n", utc_time(r.now_ms / 1000));
  out +=
      fmt::format("  no ttl {}, expired {}, < 1h {}, < 1d {}, < 30d {}, longer {}\n", r.ttl.no_ttl,
                  r.ttl.expired, r.ttl.under_1h, r.ttl.under_1d, r.ttl.under_30d, r.ttl.longer);
  std::vector<std::string> names;
  for (const auto& lib : r.libraries) {
    names.push_back(lib.name.empty() ? std::string("(unnamed)") : printable(lib.name));
  }
  out += fmt::format("\nfunctions    {} libraries{}{}\n", r.libraries.size(),
                     names.empty() ? "" : ": ", fmt::format("{}", fmt::join(names, ", ")));
  names.clear();
  for (const auto& [name, keys] : r.module_keys) {
    names.push_back(fmt::format("{} ({} keys)", printable(name), keys));
  }
  for (const auto& name : r.module_aux) {
    names.push_back(fmt::format("{} (aux data)", printable(name)));
  }
  out += fmt::format("modules      {}\n",
                     names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")));
  out += fmt::format("field ttls   {} hashes (types 22-25, HASH_2), {} fields with TTLs\n",
                     r.field_ttl_hashes, r.fields_with_ttl);
  if (r.slot_info_records > 0) {
    out += fmt::format("slot info    {} records\n", r.slot_info_records);
  }
  if (r.target) {
    const RdbTargetReport& t = *r.target;
    out +=
        fmt::format("\ntarget {}: {}\n", rdb_target_limits(t.target).name, verdict_name(t.verdict));
    for (const auto& s : t.blockers) {
      out += fmt::format("  cannot: {}\n", s);
    }
    for (const auto& s : t.changes) {
      out += fmt::format("  change: {}\n", s);
    }
    for (const auto& s : t.notes) {
      out += fmt::format("  note:   {}\n", s);
    }
  }
  return out;
}

std::string render_rdb_json(const RdbReport& r, std::string_view file, RdbReportDetail detail) {
  std::string out;
  JsonObject o(out);
  o.boolean("ok", true);
  o.bytes("file", file);
  o.number("size_bytes", r.size_bytes);
  o.signed_number("rdb_version", r.summary.version);
  std::string creator = rdb_creator(r);
  if (creator.empty()) {
    o.null("creator");
  } else {
    o.bytes("creator", creator);
  }
  if (r.ctime) {
    o.signed_number("ctime", *r.ctime);
  } else {
    o.null("ctime");
  }
  {
    JsonObject aux(o.field("aux"));
    for (const auto& [name, value] : r.aux) {
      aux.bytes(name, value);
    }
    aux.close();
  }
  {
    JsonObject c(o.field("checksum"));
    c.text("status", checksum_status(r.summary));
    if (r.summary.has_checksum) {
      c.text("value", fmt::format("{:016x}", r.summary.checksum));
    } else {
      c.null("value");
    }
    c.close();
  }
  o.number("end_offset", r.summary.end_offset);
  o.number("trailing_bytes", r.size_bytes - std::min(r.size_bytes, r.summary.end_offset));
  o.number("total_keys", r.total_keys);
  append_array(o.field("dbs"), r.dbs, [&out](const auto& item) {
    JsonObject d(out);
    d.number("db", item.first);
    d.number("keys", item.second.keys);
    d.number("expires", item.second.expires);
    d.number("value_bytes", item.second.value_bytes);
    d.close();
  });
  append_array(o.field("types"), r.types, [&out](const auto& item) {
    JsonObject t(out);
    t.number("rdb_type", stored_type(item.first));
    t.text("name", type_label(item.first));
    t.text("logical_type", kind_name(kind_of_type(item.first)));
    t.number("keys", item.second.keys);
    t.number("value_bytes", item.second.value_bytes);
    t.close();
  });
  {
    JsonObject k(o.field("logical_types"));
    for (const auto& [kind, c] : r.kinds) {
      append_count(k.field(kind_name(kind)), c);
    }
    k.close();
  }
  {
    JsonObject f(o.field("functions"));
    f.number("count", r.libraries.size());
    append_array(f.field("libraries"), r.libraries, [&out](const RdbLibrary& lib) {
      JsonObject l(out);
      l.bytes("name", lib.name);
      l.boolean("uses_valkey_api", lib.uses_valkey_api);
      l.close();
    });
    f.close();
  }
  append_array(o.field("modules"), r.module_keys, [&out](const auto& item) {
    JsonObject m(out);
    m.bytes("name", item.first);
    m.number("keys", item.second);
    m.close();
  });
  append_strings(o.field("module_aux"), r.module_aux);
  o.number("slot_info_records", r.slot_info_records);
  if (detail == RdbReportDetail::inspect) {
    append_array(o.field("biggest_keys"), r.biggest, [&out](const RdbBigKey& k) {
      JsonObject b(out);
      b.bytes("key", k.key);
      b.number("db", k.db);
      b.number("rdb_type", stored_type(k.rdb_type));
      b.text("type", type_label(k.rdb_type));
      b.number("value_bytes", k.value_bytes);
      b.number("offset", k.offset);
      b.close();
    });
    {
      JsonObject p(o.field("prefixes"));
      p.bytes("delimiter", r.delimiter);
      p.number("distinct", r.distinct_prefixes);
      append_count(p.field("without_delimiter"), r.without_delimiter);
      append_array(p.field("top"), r.prefixes, [&out](const RdbPrefix& item) {
        JsonObject e(out);
        e.bytes("prefix", item.prefix);
        e.number("keys", item.count.keys);
        e.number("value_bytes", item.count.value_bytes);
        e.close();
      });
      p.close();
    }
    {
      JsonObject t(o.field("ttl"));
      t.signed_number("now_ms", r.now_ms);
      t.number("no_ttl", r.ttl.no_ttl);
      t.number("expired", r.ttl.expired);
      t.number("under_1h", r.ttl.under_1h);
      t.number("under_1d", r.ttl.under_1d);
      t.number("under_30d", r.ttl.under_30d);
      t.number("longer", r.ttl.longer);
      t.close();
    }
    {
      JsonObject h(o.field("field_ttl"));
      h.number("hashes", r.field_ttl_hashes);
      h.number("fields_with_ttl", r.fields_with_ttl);
      h.close();
    }
    if (r.target) {
      const RdbTargetReport& t = *r.target;
      JsonObject j(o.field("target"));
      j.text("name", rdb_target_limits(t.target).name);
      j.number("max_rdb_version",
               static_cast<uint64_t>(rdb_target_limits(t.target).max_rdb_version));
      j.text("verdict", verdict_name(t.verdict));
      append_strings(j.field("changes"), t.changes);
      append_strings(j.field("blockers"), t.blockers);
      append_strings(j.field("notes"), t.notes);
      j.close();
    } else {
      o.null("target");
    }
  }
  o.close();
  out.push_back('\n');
  return out;
}

std::string render_rdb_error_json(std::string_view file, std::optional<uint64_t> offset,
                                  std::string_view message) {
  std::string out;
  JsonObject o(out);
  o.boolean("ok", false);
  o.bytes("file", file);
  JsonObject e(o.field("error"));
  if (offset) {
    e.number("offset", *offset);
  } else {
    e.null("offset");
  }
  e.bytes("message", message);
  e.close();
  o.close();
  out.push_back('\n');
  return out;
}

}  // namespace keyshift::migrate
