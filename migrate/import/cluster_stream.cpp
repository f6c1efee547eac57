#include "migrate/import/cluster_stream.hpp"

#include "engine/commands/command_keys.hpp"
#include "engine/resp/connection.hpp"
#include "engine/util/cluster_slot.hpp"
#include "engine/util/strings.hpp"

#include <algorithm>
#include <charconv>

namespace keyshift::migrate {
namespace {

/// Commands buffered before the slots' transactions go out: bounds memory and the lag the
/// target sees, while keeping a slot's commands together.
constexpr size_t k_flush_commands = 1000;

/// Commands whose keys are independent: over several slots they go as one per slot.
enum class Split : uint8_t { none, keys, key_value_pairs };

Split split_kind(std::string_view name) {
  if (name == "del" || name == "unlink" || name == "touch") {
    return Split::keys;
  }
  if (name == "mset") {
    return Split::key_value_pairs;
  }
  return Split::none;
}

std::vector<std::string> owned(std::span<const std::string_view> argv) {
  return std::vector<std::string>(argv.begin(), argv.end());
}

PendingKey stream_pending(std::string what, uint64_t position) {
  PendingKey pending;
  pending.key = std::move(what);
  pending.position = position;
  pending.kind = LiveStreamWriter::k_command_kind;
  pending.command = true;
  return pending;
}

}  // namespace

ClusterStreamWriter::ClusterStreamWriter(ClusterTarget& target,
                                         const engine::CommandRegistry& registry,
                                         std::string marker_id, std::string marker_key)
    : m_target(target),
      m_registry(registry),
      m_marker_id(std::move(marker_id)),
      m_marker_key(std::move(marker_key)),
      m_tags(engine::k_cluster_slots),
      m_applied(engine::k_cluster_slots, 0),
      m_marked(engine::k_cluster_slots, false) {
  // The shortest base-36 tags, first come first kept, until every slot has one (about
  // 170,000 tries: a few milliseconds).
  size_t missing = engine::k_cluster_slots;
  char buf[16];
  for (uint64_t n = 0; missing > 0; ++n) {
    auto r = std::to_chars(buf, buf + sizeof buf, n, 36);
    std::string_view tag(buf, static_cast<size_t>(r.ptr - buf));
    uint16_t slot = engine::key_hash_slot(tag);
    if (m_tags[slot].empty()) {
      m_tags[slot] = std::string(tag);
      --missing;
    }
  }
}

std::string ClusterStreamWriter::marker_of(uint16_t slot) const {
  return m_marker_key + ":{" + m_tags[slot] + "}";
}

bool ClusterStreamWriter::already_applied(uint16_t slot, uint64_t offset) const {
  return offset > 0 && offset <= m_applied[slot];
}

engine::Expected<std::vector<ClusterStreamWriter::Routed>, std::string> ClusterStreamWriter::route(
    std::span<const std::string_view> argv, uint64_t offset) {
  std::vector<Routed> out;
  std::string name = engine::to_lower(argv[0]);
  if (name == "publish") {
    // A cluster carries a message published on any node to every node: send it once.
    if (argv.size() >= 2) {
      out.push_back(Routed{engine::key_hash_slot(argv[1]), owned(argv)});
    }
    return out;
  }
  engine::CommandKeys keys = engine::command_key_positions(m_registry, argv);
  if (!keys.known || !keys.found) {
    return engine::Unexpected{"cannot route " + describe_command(argv) + " (offset " +
                              std::to_string(offset) +
                              ") in a cluster: its keys cannot be found from the command table"};
  }
  if (keys.positions.empty()) {
    return out;
  }
  uint16_t first = engine::key_hash_slot(argv[keys.positions[0]]);
  bool one_slot = std::all_of(keys.positions.begin(), keys.positions.end(),
                              [&](size_t p) { return engine::key_hash_slot(argv[p]) == first; });
  if (one_slot) {
    out.push_back(Routed{first, owned(argv)});
    return out;
  }
  Split split = split_kind(name);
  if (split == Split::none) {
    return engine::Unexpected{
        "the source ran " + describe_command(argv) + " (offset " + std::to_string(offset) +
        ") over keys of several slots, which a cluster cannot run (CROSSSLOT): import into a "
        "single server, or use --mode scan, which copies values instead of commands"};
  }
  ++m_counts.commands_split;
  for (size_t p : keys.positions) {
    uint16_t slot = engine::key_hash_slot(argv[p]);
    auto it = std::find_if(out.begin(), out.end(), [&](const Routed& r) { return r.slot == slot; });
    if (it == out.end()) {
      out.push_back(Routed{slot, {std::string(argv[0])}});
      it = out.end() - 1;
    }
    it->argv.emplace_back(argv[p]);
    if (split == Split::key_value_pairs && p + 1 < argv.size()) {
      it->argv.emplace_back(argv[p + 1]);
    }
  }
  return out;
}

void ClusterStreamWriter::add(uint16_t slot, std::vector<std::vector<std::string>> commands,
                              uint64_t offset) {
  auto [it, fresh] = m_open.try_emplace(slot);
  if (fresh) {
    m_open_order.push_back(slot);
  }
  m_buffered += commands.size();
  for (std::vector<std::string>& c : commands) {
    it->second.commands.push_back(std::move(c));
  }
  it->second.offset = std::max(it->second.offset, offset);
}

engine::Expected<bool, std::string> ClusterStreamWriter::keyless(
    std::span<const std::string_view> argv, uint64_t offset) {
  // Everything before it goes first; then every primary runs it.
  if (auto ok = flush(); !ok) {
    return ok;
  }
  std::vector<std::string_view> args(argv.begin(), argv.end());
  if (args.size() >= 3 && engine::iequals(args[0], "FUNCTION") &&
      engine::iequals(args[1], "LOAD") && !engine::iequals(args[2], "REPLACE")) {
    // The source loaded a library it did not have, and the target mirrors the source: with
    // REPLACE the same command also holds when a rerun applies it a second time.
    args.insert(args.begin() + 2, "REPLACE");
  }
  ++m_counts.broadcast;
  return m_target.command_everywhere(stream_pending(describe_command(argv), offset), args);
}

engine::Expected<bool, std::string> ClusterStreamWriter::command(
    uint64_t db, std::span<const std::string_view> argv, uint64_t offset) {
  if (argv.empty()) {
    return true;
  }
  if (db != 0) {
    return engine::Unexpected{"a cluster has only database 0, and the source's " +
                              describe_command(argv) + " goes to database " + std::to_string(db) +
                              " (map it with --db-map " + std::to_string(db) + ":0)"};
  }
  if (m_in_transaction) {
    m_transaction.push_back(owned(argv));
    return true;
  }
  auto routed = route(argv, offset);
  if (!routed) {
    return engine::Unexpected{routed.error()};
  }
  m_last_offset = std::max(m_last_offset, offset);
  if (routed->empty()) {
    return keyless(argv, offset);
  }
  for (Routed& r : *routed) {
    if (already_applied(r.slot, offset)) {
      ++m_counts.skipped_applied;
      continue;
    }
    std::vector<std::vector<std::string>> one;
    one.push_back(std::move(r.argv));
    add(r.slot, std::move(one), offset);
  }
  if (m_buffered >= k_flush_commands) {
    return flush();
  }
  return true;
}

engine::Expected<bool, std::string> ClusterStreamWriter::begin_transaction() {
  m_in_transaction = true;
  m_transaction.clear();
  return true;
}

engine::Expected<bool, std::string> ClusterStreamWriter::end_transaction(uint64_t offset) {
  m_in_transaction = false;
  m_last_offset = std::max(m_last_offset, offset);
  // Each slot's share stays one transaction (inside that slot's MULTI); a keyless command
  // in the middle ends the shares gathered so far.
  std::vector<std::pair<uint16_t, std::vector<std::vector<std::string>>>> shares;
  size_t slots_touched = 0;
  auto emit_shares = [&] {
    for (auto& [slot, commands] : shares) {
      if (already_applied(slot, offset)) {
        m_counts.skipped_applied += commands.size();
        continue;
      }
      add(slot, std::move(commands), offset);
    }
    slots_touched += shares.size();
    shares.clear();
  };
  std::vector<std::vector<std::string>> queued = std::move(m_transaction);
  m_transaction.clear();
  for (std::vector<std::string>& c : queued) {
    std::vector<std::string_view> views(c.begin(), c.end());
    auto routed = route(views, offset);
    if (!routed) {
      return engine::Unexpected{routed.error()};
    }
    if (routed->empty()) {
      emit_shares();
      if (auto ok = keyless(views, 0); !ok) {
        return ok;
      }
      continue;
    }
    for (Routed& r : *routed) {
      auto it = std::find_if(shares.begin(), shares.end(),
                             [&](const auto& share) { return share.first == r.slot; });
      if (it == shares.end()) {
        shares.emplace_back(r.slot, std::vector<std::vector<std::string>>{});
        it = shares.end() - 1;
      }
      it->second.push_back(std::move(r.argv));
    }
  }
  emit_shares();
  if (slots_touched > 1) {
    ++m_counts.transactions_split;
  }
  if (m_buffered >= k_flush_commands) {
    return flush();
  }
  return true;
}

engine::Expected<bool, std::string> ClusterStreamWriter::flush() {
  if (m_open_order.empty()) {
    return true;
  }
  // Acknowledgements come back in send order: the last transaction carries the offset every
  // command before it reaches; the others carry none.
  for (size_t i = 0; i < m_open_order.size(); ++i) {
    uint16_t slot = m_open_order[i];
    Batch& batch = m_open[slot];
    std::vector<std::vector<std::string>> commands = std::move(batch.commands);
    size_t n = commands.size();
    commands.push_back({"SET", marker_of(slot), m_marker_id + " " + std::to_string(batch.offset)});
    m_marked[slot] = true;
    bool last = i + 1 == m_open_order.size();
    auto sent = m_target.transaction(
        stream_pending(std::to_string(n) + " command(s)", last ? m_last_offset : 0), slot,
        std::move(commands));
    if (!sent) {
      return sent;
    }
  }
  m_open.clear();
  m_open_order.clear();
  m_buffered = 0;
  return true;
}

engine::Expected<bool, std::string> ClusterStreamWriter::clear_marker() {
  if (auto ok = flush(); !ok) {
    return ok;
  }
  for (uint32_t s = 0; s < engine::k_cluster_slots; ++s) {
    if (!m_marked[s]) {
      continue;
    }
    auto slot = static_cast<uint16_t>(s);
    std::vector<std::vector<std::string>> del{{"DEL", marker_of(slot)}};
    if (auto ok = m_target.transaction(stream_pending("DEL (the import's offset marker)", 0), slot,
                                       std::move(del));
        !ok) {
      return ok;
    }
    m_marked[s] = false;
  }
  return m_target.drain();
}

engine::Expected<bool, std::string> ClusterStreamWriter::load_markers(const std::string& replid) {
  std::string pattern = m_marker_key + ":{*";
  for (const engine::RespEndpoint& at : m_target.primary_endpoints()) {
    auto conn = engine::RespConnection::connect(at);
    if (!conn) {
      return engine::Unexpected{conn.error()};
    }
    std::string cursor = "0";
    do {
      auto page = conn->call({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
      if (!page || page->is_error() || page->elements.size() != 2) {
        return engine::Unexpected{"SCAN for the import's markers failed on " + at.describe()};
      }
      cursor = page->elements[0].str;
      for (const engine::RespValue& key : page->elements[1].elements) {
        uint16_t slot = engine::key_hash_slot(key.str);
        if (key.str != marker_of(slot)) {
          continue;
        }
        m_marked[slot] = true;
        auto value = conn->call({"GET", key.str});
        if (!value || value->type != engine::RespValue::Type::bulk) {
          continue;
        }
        size_t sp = value->str.rfind(' ');
        uint64_t offset = 0;
        if (sp == std::string::npos || value->str.compare(0, sp, replid) != 0 ||
            sp != replid.size()) {
          continue;  // an earlier stream's: removed at the clean stop
        }
        const char* digits = value->str.data() + sp + 1;
        auto r = std::from_chars(digits, value->str.data() + value->str.size(), offset);
        if (r.ec == std::errc()) {
          m_applied[slot] = std::max(m_applied[slot], offset);
        }
      }
    } while (cursor != "0");
  }
  return true;
}

}  // namespace keyshift::migrate
