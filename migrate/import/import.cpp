#include "migrate/import/import.hpp"

#include "compat/report/json_text.hpp"
#include "compat/verify/side.hpp"
#include "compat/verify/verify.hpp"
#include "engine/persistence/aof_reader.hpp"
#include "engine/resp/cluster_map.hpp"
#include "migrate/import/import_common.hpp"

#include <fmt/core.h>

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <filesystem>

namespace keyshift::migrate {

namespace {

/// `text` with everything but RFC 3986's unreserved characters percent-encoded.
std::string percent_encode(std::string_view text) {
  std::string out;
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(ch);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

/// A URL parse_redis_url reads back as `ep` (credentials, database, protocol included).
std::string endpoint_url(const engine::RespEndpoint& ep) {
  std::string auth;
  if (!ep.password.empty()) {
    auth = percent_encode(ep.user) + ":" + percent_encode(ep.password) + "@";
  }
  // verify reads a database in a URL as "only this one": name it only when one was given.
  std::string query = ep.db != 0 ? "?db=" + std::to_string(ep.db) : std::string();
  if (!ep.unix_path.empty()) {
    return "unix://" + auth + ep.unix_path + query;
  }
  std::string host = ep.host.find(':') != std::string::npos ? "[" + ep.host + "]" : ep.host;
  return (ep.tls.enabled ? "rediss://" : "redis://") + auth + host + ":" + std::to_string(ep.port) +
         query;
}

/// Runs verify data between the import's source and what it wrote.
void verify_import(const ImportOptions& options, ImportReport& report) {
  ImportVerify& v = report.verify;
  const KeyRules& r = options.rules;
  if (!r.match.empty() || !r.exclude.empty() || !r.types.empty() || !r.db_map.empty() ||
      !r.rename.empty() || r.unmapped_db || r.field_ttl != FieldTtlPolicy::fail ||
      report.counts.conflicts_skipped > 0) {
    v.skipped =
        "the rules changed what was written (filters, renames, databases, field TTLs or "
        "skipped conflicts): run keyshift verify data with matching options";
    return;
  }
  auto source = compat::open_verify_side(options.source, options.tls);
  if (!source) {
    v.error = source.error();
    return;
  }
  auto target = compat::open_verify_side(options.to ? endpoint_url(*options.to) : report.target,
                                         options.to ? options.to->tls : engine::TlsClientOptions{});
  if (!target) {
    v.error = target.error();
    return;
  }
  compat::VerifyOptions vo;
  auto result = compat::verify_data(**source, **target, vo);
  if (!result) {
    v.error = result.error();
    return;
  }
  v.ran = true;
  v.equal = result->equal();
  v.keys_compared = result->keys_compared;
  v.differences = result->differences.size();
  v.changed = result->changed.size();
  v.text = compat::render_verify_text(*result, 20);
}

}  // namespace

ImportReport run_import(const ImportOptions& options) {
  auto started = std::chrono::steady_clock::now();
  ImportReport report;
  report.source = options.source;
  if (import_detail::is_server_source(options.source)) {
    // A URL may carry a password: reports and checkpoints name the server only.
    auto endpoint = engine::parse_redis_url(options.source, options.tls);
    report.source = endpoint ? endpoint->describe() : std::string("(a bad server URL)");
  }
  if (!options.to && !options.dry_run) {
    std::error_code ec;
    if (!std::filesystem::is_directory(options.dir, ec)) {
      report.error = "--dir " + options.dir + ": not a directory (the data file goes there)";
      return report;
    }
    if (::access(options.dir.c_str(), W_OK) != 0) {
      report.error = "--dir " + options.dir + ": not writable";
      return report;
    }
  }
  report.dry_run = options.dry_run;
  report.checkpoint = options.checkpoint;
  bool scan = options.mode == SourceMode::scan;
  if (import_detail::is_server_source(options.source) && !scan && options.dry_run) {
    // A replication import has nothing to show before it writes: a dry run counts by scanning.
    scan = true;
    report.warnings.push_back("a dry run reads a server source by scanning (--mode scan)");
  }
  if (import_detail::is_server_source(options.source) && scan) {
    report.source_kind = "scan";
    import_detail::import_scan(options, options.rules, report);
  } else if (import_detail::is_server_source(options.source)) {
    report.source_kind = "sync";
    import_detail::import_sync(options, options.rules, report);
  } else if (engine::looks_like_aof(options.source)) {
    import_detail::import_aof(options, options.rules, report);
  } else if (import_detail::is_jsonl_file(options.source)) {
    report.source_kind = "jsonl";
    import_detail::import_jsonl(options, report);
  } else {
    report.source_kind = "rdb";
    auto file = import_detail::open_rdb_file(options.source);
    if (!file) {
      report.error = file.error();
    } else if (options.to) {
      import_detail::import_file_to_live(options, options.rules, *file, report);
    } else {
      import_detail::import_file_to_embedded(options, options.rules, *file, report);
    }
  }
  if (report.ok && options.verify && !options.dry_run) {
    verify_import(options, report);
    if (!report.verify.error.empty() || (report.verify.ran && !report.verify.equal)) {
      report.ok = false;
      report.error = !report.verify.error.empty()
                         ? "the import finished, but verify could not run: " + report.verify.error
                         : "the import finished, but verify found " +
                               std::to_string(report.verify.differences) +
                               " difference(s) between source and target";
    }
  }
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

std::string render_import_text(const ImportReport& r) {
  std::string out;
  const ImportCounts& c = r.counts;
  if (!r.ok) {
    out += "keyshift: " + r.error;
    if (r.error_offset) {
      out += fmt::format(" (at byte {})", *r.error_offset);
    }
    out += "\n";
    for (const std::string& key : r.blocked) {
      out += "  " + key + "\n";
    }
    if (r.verify.ran && !r.verify.equal) {
      out += r.verify.text;
    }
    if (c.written > 0 && !r.checkpoint.empty() && !r.verify.ran) {
      out += fmt::format(
          "  {} key(s) were written and acknowledged; run the same command again "
          "to go on from {}\n",
          c.written, r.checkpoint);
    }
    return out;
  }
  if (r.already_complete) {
    return fmt::format(
        "{}: this import is already complete ({} keys); remove {} to run it "
        "again\n",
        r.checkpoint, c.written, r.checkpoint);
  }
  out += fmt::format("{} {} ({}) to {} ({}, RDB {}): {} keys read, {} {} in {:.2f} s\n",
                     r.dry_run ? "would import" : "imported", r.source, r.source_kind, r.target,
                     r.target_server, r.target_rdb_version, c.read, c.written,
                     r.dry_run ? "to write" : "written", r.seconds);
  if (!c.written_by_type.empty()) {
    std::string types;
    for (const auto& [type, n] : c.written_by_type) {
      types += fmt::format("{}{} {}", types.empty() ? "" : ", ", n, type);
    }
    out += "  by type: " + types + "\n";
  }
  auto line = [&out](uint64_t n, std::string_view what) {
    if (n > 0) {
      out += fmt::format("  {} {}\n", n, what);
    }
  };
  line(c.expired, "key(s) already expired at the source, not written");
  line(c.filtered, "key(s) left out by --match/--exclude/--type");
  line(c.modules_dropped, "module key(s) dropped (--skip-modules)");
  line(c.renamed, "key(s) renamed by --rename-prefix");
  line(c.moved, "key(s) moved to another database (--db-map)");
  line(c.field_ttls_dropped, "field TTL(s) removed (--field-ttl drop-ttl)");
  line(c.fields_dropped, "field(s) with a TTL removed (--field-ttl drop-field)");
  line(c.hashes_emptied, "hash(es) left empty by --field-ttl drop-field, not written");
  line(c.conflicts_skipped, "key(s) already in the target, left as they were (--conflict skip)");
  line(c.vanished, "key(s) deleted or expired at the source while the scan ran");
  line(c.reencoded, "value(s) re-encoded for the target's RDB version");
  if (c.as_commands > 0) {
    out += fmt::format("  {} key(s) sent as commands ({} commands), {} of them in chunks\n",
                       c.as_commands, c.commands, c.chunked);
  }
  line(c.expired_in_flight, "key(s) whose TTL passed while they were written (not lost)");
  line(c.resumed_past, "key(s) already written by the interrupted run (resumed)");
  auto nodes = [&out](std::string_view side, const auto& list) {
    if (list.empty()) {
      return;
    }
    std::string text;
    for (const auto& [node, keys] : list) {
      text += fmt::format("{}{} {}", text.empty() ? "" : ", ", node, keys);
    }
    out += fmt::format("  cluster {}: {} primaries, keys per node: {}\n", side, list.size(), text);
  };
  nodes("source", r.cluster.source_nodes);
  if (r.cluster.slots_reread > 0) {
    out += fmt::format("  {} slot(s) changed owner during the scan and were read again there\n",
                       r.cluster.slots_reread);
  }
  nodes("target", r.cluster.target_nodes);
  if (r.cluster.target) {
    out += fmt::format(
        "  redirects followed: {} MOVED, {} ASK; {} TRYAGAIN/CLUSTERDOWN retries; slot map read "
        "again {} time(s)\n",
        r.cluster.moved, r.cluster.ask, r.cluster.retries, r.cluster.refreshes);
  }
  if (r.source_kind == "sync") {
    out += fmt::format(
        "  replication: {} sync from {} to offset {}; {} command(s) applied "
        "({} MULTI/EXEC kept atomic), {} left out by the rules\n",
        r.sync, r.replid, r.repl_offset, r.commands_applied, r.transactions, r.commands_filtered);
    if (r.lag_bytes >= 0) {
      out += fmt::format("  lag when stopped: {} byte(s), {:.1f} s\n", r.lag_bytes,
                         r.lag_seconds < 0 ? 0.0 : r.lag_seconds);
    }
    for (const ImportSyncStream& s : r.cluster.source_streams) {
      out += fmt::format("    primary {}: {} sync from {} to offset {}, lag {} byte(s)\n", s.node,
                         s.sync, s.replid, s.repl_offset, s.lag_bytes < 0 ? 0 : s.lag_bytes);
    }
  } else if (r.source_kind == "scan" && r.follow_events > 0) {
    out += fmt::format(
        "  followed: {} keyspace event(s), {} key(s) read again, {} deleted, in {} round(s)\n",
        r.follow_events, c.followed, c.follow_deleted, r.follow_rounds);
  } else if (r.source_kind == "aof" || r.source_kind == "resp") {
    out += fmt::format(
        "  commands: {} applied ({} MULTI/EXEC kept atomic), {} left out by the rules\n",
        r.commands_applied, r.transactions, r.commands_filtered);
  }
  for (const std::string& w : r.warnings) {
    out += "  warning: " + w + "\n";
  }
  if (r.verify.ran) {
    out += fmt::format("  verified: {} keys compared, source and target equal\n",
                       r.verify.keys_compared);
  } else if (!r.verify.skipped.empty()) {
    out += "  verify skipped: " + r.verify.skipped + "\n";
  }
  return out;
}

std::string render_import_json(const ImportReport& r) {
  const ImportCounts& c = r.counts;
  std::string j = "{\"ok\":";
  j += r.ok ? "true" : "false";
  j += ",\"dry_run\":";
  j += r.dry_run ? "true" : "false";
  j += ",\"source\":";
  compat::append_json_bytes(j, r.source);
  j += ",\"source_kind\":";
  compat::append_json_string(j, r.source_kind);
  j += ",\"target\":";
  compat::append_json_bytes(j, r.target);
  j += ",\"target_server\":";
  compat::append_json_bytes(j, r.target_server);
  j += ",\"target_rdb_version\":" + std::to_string(r.target_rdb_version);
  j += ",\"method\":";
  if (r.method.empty()) {
    j += "null";
  } else {
    compat::append_json_string(j, r.method);
  }
  j += ",\"big_key_bytes\":" + std::to_string(r.big_key_bytes);
  j += ",\"keys\":{";
  auto num = [&j](std::string_view name, uint64_t n, bool first = false) {
    j += fmt::format("{}\"{}\":{}", first ? "" : ",", name, n);
  };
  num("read", c.read, true);
  num("written", c.written);
  num("expired", c.expired);
  num("filtered", c.filtered);
  num("modules_dropped", c.modules_dropped);
  num("renamed", c.renamed);
  num("moved", c.moved);
  num("field_ttls_dropped", c.field_ttls_dropped);
  num("fields_dropped", c.fields_dropped);
  num("hashes_emptied", c.hashes_emptied);
  num("conflicts_skipped", c.conflicts_skipped);
  num("reencoded", c.reencoded);
  num("vanished", c.vanished);
  num("conflicts_found", c.conflicts_found);
  num("resumed_past", c.resumed_past);
  num("as_commands", c.as_commands);
  num("chunked", c.chunked);
  num("commands", c.commands);
  num("expired_in_flight", c.expired_in_flight);
  j += ",\"by_type\":{";
  bool first = true;
  for (const auto& [type, n] : c.written_by_type) {
    num(type, n, first);
    first = false;
  }
  j += "}},\"blocked\":{\"reason\":";
  compat::append_json_bytes(j, r.blocked_reason);
  j += ",\"keys\":[";
  for (size_t i = 0; i < r.blocked.size(); ++i) {
    j += i == 0 ? "" : ",";
    compat::append_json_bytes(j, r.blocked[i]);
  }
  j += "]},\"warnings\":[";
  for (size_t i = 0; i < r.warnings.size(); ++i) {
    j += i == 0 ? "" : ",";
    compat::append_json_string(j, r.warnings[i]);
  }
  j += "],\"bytes\":" + std::to_string(r.bytes_sent);
  j += fmt::format(",\"seconds\":{:.3f}", r.seconds);
  j += ",\"checkpoint\":";
  compat::append_json_bytes(j, r.checkpoint);
  j += ",\"resumed\":";
  j += r.resumed ? "true" : "false";
  j += ",\"already_complete\":";
  j += r.already_complete ? "true" : "false";
  j += ",\"cluster\":";
  if (r.cluster.target || r.cluster.source) {
    auto nodes = [&j](const auto& list) {
      j += "[";
      bool first_node = true;
      for (const auto& [node, keys] : list) {
        j += first_node ? "{\"node\":" : ",{\"node\":";
        first_node = false;
        compat::append_json_string(j, node);
        j += ",\"keys\":" + std::to_string(keys) + "}";
      }
      j += "]";
    };
    j += fmt::format("{{\"target\":{},\"source\":{},\"target_nodes\":", r.cluster.target,
                     r.cluster.source);
    nodes(r.cluster.target_nodes);
    j += ",\"source_nodes\":";
    nodes(r.cluster.source_nodes);
    j += fmt::format(
        ",\"redirects\":{{\"moved\":{},\"ask\":{}}},\"retries\":{},\"map_refreshes\":{},"
        "\"slots_reread\":{}}}",
        r.cluster.moved, r.cluster.ask, r.cluster.retries, r.cluster.refreshes,
        r.cluster.slots_reread);
  } else {
    j += "null";
  }
  if (r.source_kind == "sync") {
    j += ",\"replication\":{\"sync\":";
    compat::append_json_string(j, r.sync);
    j += ",\"replid\":";
    compat::append_json_string(j, r.replid);
    j += fmt::format(
        ",\"offset\":{},\"lag_bytes\":{},\"lag_seconds\":{:.3f},\"commands_applied\":{},"
        "\"commands_filtered\":{},\"transactions\":{},\"streams\":[",
        r.repl_offset, r.lag_bytes, r.lag_seconds, r.commands_applied, r.commands_filtered,
        r.transactions);
    for (size_t i = 0; i < r.cluster.source_streams.size(); ++i) {
      const ImportSyncStream& s = r.cluster.source_streams[i];
      j += i == 0 ? "{\"node\":" : ",{\"node\":";
      compat::append_json_string(j, s.node);
      j += ",\"sync\":";
      compat::append_json_string(j, s.sync);
      j += ",\"replid\":";
      compat::append_json_string(j, s.replid);
      j += fmt::format(",\"offset\":{},\"lag_bytes\":{},\"lag_seconds\":{:.3f}}}", s.repl_offset,
                       s.lag_bytes, s.lag_seconds);
    }
    j += "]}";
  } else if (r.source_kind == "scan") {
    j += fmt::format(
        ",\"follow\":{{\"events\":{},\"keys_read_again\":{},\"deleted\":{},\"rounds\":{}}}",
        r.follow_events, c.followed, c.follow_deleted, r.follow_rounds);
  } else if (r.source_kind == "aof" || r.source_kind == "resp") {
    j += fmt::format(",\"commands\":{{\"applied\":{},\"filtered\":{},\"transactions\":{}}}",
                     r.commands_applied, r.commands_filtered, r.transactions);
  }
  j += ",\"verify\":";
  if (r.verify.ran || !r.verify.error.empty() || !r.verify.skipped.empty()) {
    j += fmt::format(
        "{{\"ran\":{},\"equal\":{},\"keys_compared\":{},\"differences\":{},"
        "\"changed\":{},\"error\":",
        r.verify.ran, r.verify.equal, r.verify.keys_compared, r.verify.differences,
        r.verify.changed);
    if (r.verify.error.empty()) {
      j += "null";
    } else {
      compat::append_json_bytes(j, r.verify.error);
    }
    j += ",\"skipped\":";
    if (r.verify.skipped.empty()) {
      j += "null";
    } else {
      compat::append_json_string(j, r.verify.skipped);
    }
    j += "}";
  } else {
    j += "null";
  }
  j += ",\"error\":";
  if (r.ok) {
    j += "null";
  } else {
    compat::append_json_bytes(j, r.error);
  }
  j += ",\"error_offset\":";
  j += r.error_offset ? std::to_string(*r.error_offset) : "null";
  j += "}\n";
  return j;
}

}  // namespace keyshift::migrate
