#include "migrate/import/checkpoint.hpp"

#include "compat/report/json_text.hpp"
#include "compat/report/json_value.hpp"
#include "engine/util/atomic_file.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace keyshift::migrate {
namespace {

using compat::JsonValue;

engine::Expected<const JsonValue*, std::string> member(const JsonValue& obj, std::string_view name,
                                                       JsonValue::Type type) {
  const JsonValue* v = obj.find(name);
  if (v == nullptr || v->type != type) {
    return engine::Unexpected{"checkpoint: member \"" + std::string(name) +
                              "\" is missing or of the "
                              "wrong type"};
  }
  return v;
}

engine::Expected<uint64_t, std::string> whole_number(const JsonValue& obj, std::string_view name) {
  auto v = member(obj, name, JsonValue::Type::number);
  if (!v) {
    return engine::Unexpected{v.error()};
  }
  double n = (*v)->number;
  if (n < 0 || n > 9.007199254740992e15 || std::floor(n) != n) {
    return engine::Unexpected{"checkpoint: \"" + std::string(name) + "\" is not a whole number"};
  }
  return static_cast<uint64_t>(n);
}

}  // namespace

std::string render_checkpoint(const ImportCheckpoint& c) {
  std::string j = "{\"format\":\"";
  j += k_checkpoint_format;
  j += "\",\"version\":" + std::to_string(k_checkpoint_version) + ",\"source\":";
  compat::append_json_bytes(j, c.source);
  j += ",\"target\":";
  compat::append_json_bytes(j, c.target);
  j += ",\"kind\":";
  compat::append_json_string(j, c.kind);
  j += ",\"source_size\":" + std::to_string(c.source_size);
  j += ",\"source_mtime_us\":" + std::to_string(c.source_mtime_us);
  j += ",\"offset\":" + std::to_string(c.offset);
  j += ",\"scans\":[";
  for (size_t i = 0; i < c.scans.size(); ++i) {
    j += (i == 0 ? "" : ",");
    j += "{\"db\":" + std::to_string(c.scans[i].db);
    if (!c.scans[i].node.empty()) {
      j += ",\"node\":";
      compat::append_json_string(j, c.scans[i].node);
    }
    j += ",\"cursor\":";
    compat::append_json_string(j, c.scans[i].cursor);
    j += std::string(",\"done\":") + (c.scans[i].done ? "true" : "false") + "}";
  }
  j += "]";
  if (c.kind == "sync") {
    j += ",\"replid\":";
    compat::append_json_string(j, c.replid);
    j += ",\"replid2\":";
    compat::append_json_string(j, c.replid2);
    j += ",\"repl_offset\":" + std::to_string(c.repl_offset);
    j += std::string(",\"synced\":") + (c.synced ? "true" : "false");
    if (!c.streams.empty()) {
      j += ",\"streams\":[";
      for (size_t i = 0; i < c.streams.size(); ++i) {
        const SyncPosition& p = c.streams[i];
        j += (i == 0 ? "{\"node\":" : ",{\"node\":");
        compat::append_json_string(j, p.node);
        j += ",\"address\":";
        compat::append_json_string(j, p.address);
        j += ",\"replid\":";
        compat::append_json_string(j, p.replid);
        j += ",\"replid2\":";
        compat::append_json_string(j, p.replid2);
        j += ",\"repl_offset\":" + std::to_string(p.repl_offset);
        j += std::string(",\"synced\":") + (p.synced ? "true" : "false");
        j += ",\"keys_written\":" + std::to_string(p.keys_written) + "}";
      }
      j += "]";
    }
  }
  j += ",\"keys_written\":" + std::to_string(c.keys_written);
  j += std::string(",\"complete\":") + (c.complete ? "true" : "false") + "}\n";
  return j;
}

engine::Expected<ImportCheckpoint, std::string> parse_checkpoint(std::string_view text) {
  JsonValue doc;
  try {
    doc = compat::parse_json(text);
  } catch (const compat::JsonError& e) {
    return engine::Unexpected{"checkpoint: " + std::string(e.what()) + " at byte " +
                              std::to_string(e.offset)};
  }
  if (doc.type != JsonValue::Type::object) {
    return engine::Unexpected{std::string("checkpoint: not a JSON object")};
  }
  auto format = member(doc, "format", JsonValue::Type::string);
  if (!format || (*format)->string != k_checkpoint_format) {
    return engine::Unexpected{std::string("checkpoint: not a keyshift import checkpoint")};
  }
  auto version = whole_number(doc, "version");
  if (!version) {
    return engine::Unexpected{version.error()};
  }
  if (*version != static_cast<uint64_t>(k_checkpoint_version)) {
    return engine::Unexpected{"checkpoint: version " + std::to_string(*version) +
                              " is not one this keyshift reads (" +
                              std::to_string(k_checkpoint_version) + ")"};
  }
  ImportCheckpoint c;
  for (auto [name, out] : {std::pair<std::string_view, std::string*>{"source", &c.source},
                           {"target", &c.target},
                           {"kind", &c.kind}}) {
    auto v = member(doc, name, JsonValue::Type::string);
    if (!v) {
      return engine::Unexpected{v.error()};
    }
    *out = (*v)->string;
  }
  if (c.kind != "file" && c.kind != "scan" && c.kind != "sync" && c.kind != "jsonl" &&
      c.kind != "aof") {
    return engine::Unexpected{"checkpoint: unknown kind \"" + c.kind + "\""};
  }
  auto size = whole_number(doc, "source_size");
  auto mtime = whole_number(doc, "source_mtime_us");
  auto offset = whole_number(doc, "offset");
  auto keys = whole_number(doc, "keys_written");
  for (const auto* n : {&size, &mtime, &offset, &keys}) {
    if (!*n) {
      return engine::Unexpected{n->error()};
    }
  }
  c.source_size = *size;
  c.source_mtime_us = static_cast<int64_t>(*mtime);
  c.offset = *offset;
  c.keys_written = *keys;
  auto complete = member(doc, "complete", JsonValue::Type::boolean);
  if (!complete) {
    return engine::Unexpected{complete.error()};
  }
  c.complete = (*complete)->boolean;
  if (c.kind == "sync") {
    auto replid = member(doc, "replid", JsonValue::Type::string);
    auto replid2 = member(doc, "replid2", JsonValue::Type::string);
    auto repl_offset = whole_number(doc, "repl_offset");
    auto synced = member(doc, "synced", JsonValue::Type::boolean);
    if (!replid || !replid2 || !repl_offset || !synced) {
      return engine::Unexpected{std::string(
          "checkpoint: a sync checkpoint lacks replid, replid2, repl_offset or synced")};
    }
    c.replid = (*replid)->string;
    c.replid2 = (*replid2)->string;
    c.repl_offset = *repl_offset;
    c.synced = (*synced)->boolean;
    if (const JsonValue* streams = doc.find("streams"); streams != nullptr) {
      if (streams->type != JsonValue::Type::array) {
        return engine::Unexpected{std::string("checkpoint: \"streams\" is not an array")};
      }
      for (const JsonValue& s : streams->array) {
        SyncPosition p;
        auto node = member(s, "node", JsonValue::Type::string);
        auto address = member(s, "address", JsonValue::Type::string);
        auto id = member(s, "replid", JsonValue::Type::string);
        auto id2 = member(s, "replid2", JsonValue::Type::string);
        auto at = whole_number(s, "repl_offset");
        auto done = member(s, "synced", JsonValue::Type::boolean);
        auto written = whole_number(s, "keys_written");
        if (!node || !address || !id || !id2 || !at || !done || !written) {
          return engine::Unexpected{
              std::string("checkpoint: a stream position lacks node, address, replid, replid2, "
                          "repl_offset, synced or keys_written")};
        }
        p.node = (*node)->string;
        p.address = (*address)->string;
        p.replid = (*id)->string;
        p.replid2 = (*id2)->string;
        p.repl_offset = *at;
        p.synced = (*done)->boolean;
        p.keys_written = *written;
        c.streams.push_back(std::move(p));
      }
    }
  }
  auto scans = member(doc, "scans", JsonValue::Type::array);
  if (!scans) {
    return engine::Unexpected{scans.error()};
  }
  for (const JsonValue& s : (*scans)->array) {
    ScanPosition pos;
    auto db = whole_number(s, "db");
    auto cursor = member(s, "cursor", JsonValue::Type::string);
    auto done = member(s, "done", JsonValue::Type::boolean);
    if (!db || !cursor || !done) {
      return engine::Unexpected{
          std::string("checkpoint: a scan position lacks db, cursor or done")};
    }
    pos.db = *db;
    pos.cursor = (*cursor)->string;
    pos.done = (*done)->boolean;
    if (const JsonValue* node = s.find("node"); node != nullptr) {
      if (node->type != JsonValue::Type::string) {
        return engine::Unexpected{
            std::string("checkpoint: a scan position's node is not a string")};
      }
      pos.node = node->string;
    }
    c.scans.push_back(std::move(pos));
  }
  return c;
}

engine::Expected<std::optional<ImportCheckpoint>, std::string> load_checkpoint(
    const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) {
      return std::optional<ImportCheckpoint>();
    }
    return engine::Unexpected{path + ": " + std::strerror(errno)};
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto parsed = parse_checkpoint(text.str());
  if (!parsed) {
    return engine::Unexpected{path + ": " + parsed.error()};
  }
  return std::optional<ImportCheckpoint>(std::move(*parsed));
}

std::optional<std::string> save_checkpoint(const std::string& path,
                                           const ImportCheckpoint& checkpoint) {
  if (auto err = engine::write_file_atomically(path, render_checkpoint(checkpoint), 0600)) {
    return err->message();
  }
  return std::nullopt;
}

}  // namespace keyshift::migrate
