#include "compat/verify/verify.hpp"

#include "compat/report/json_text.hpp"
#include "compat/verify/fingerprint.hpp"
#include "compat/verify/value_reader.hpp"
#include "engine/engine.hpp"
#include "engine/keyspace/entry_compare.hpp"
#include "engine/keyspace/object.hpp"
#include "engine/util/glob.hpp"
#include "engine/util/hash.hpp"
#include "engine/util/split_args.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <optional>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

namespace keyshift::compat {
namespace {

using engine::Expected;
using engine::RespValue;
using engine::Unexpected;

constexpr uint64_t k_sample_seed = 0x73616d706c65ull;
constexpr uint64_t k_seen_seed = 0x7365656e6b6579ull;
/// Batches a SCAN pass keeps in flight: the newest at TYPE/PTTL, older ones at their DUMP,
/// digest or value reads; more pages wait while big values are still being read.
constexpr size_t k_flight_window = 4;

/// The result of comparing one key.
struct Outcome {
  KeyState source;
  KeyState target;
  std::vector<DiffReason> reasons;
  std::string detail;
};

/// Adds the reasons two sides' TYPE and PTTL give (absent on one side, another type, TTLs
/// apart by more than `tolerance_ms`); true when both hold the key with the same type, so
/// the values are to be compared.
bool judge_states(Outcome& o, int64_t tolerance_ms) {
  bool s_none = o.source.type == "none";
  bool t_none = o.target.type == "none";
  if (s_none || t_none) {
    if (!s_none) {
      o.reasons.push_back(DiffReason::missing_on_target);
    } else if (!t_none) {
      o.reasons.push_back(DiffReason::missing_on_source);
    }
    return false;
  }
  if (o.source.type != o.target.type) {
    o.reasons.push_back(DiffReason::type);
    return false;
  }
  bool s_ttl = o.source.pttl >= 0;
  bool t_ttl = o.target.pttl >= 0;
  if (s_ttl != t_ttl || (s_ttl && std::llabs(o.source.pttl - o.target.pttl) > tolerance_ms)) {
    o.reasons.push_back(DiffReason::ttl);
  }
  return true;
}

/// A key's TYPE and PTTL as an in-process dataset holds it (`e` null: absent).
KeyState state_of(const engine::Entry* e, int64_t now_ms) {
  if (e == nullptr) {
    return {};
  }
  return {engine::type_name(e->type()),
          e->has_expire() ? std::max<int64_t>(0, e->expire_ms() - now_ms) : -1};
}

/// Values up to this size (MEMORY USAGE) are compared by their DUMP payloads: big ones are
/// never fetched in one reply.
constexpr int64_t k_dump_max = 64 * 1024;
/// A DUMP payload ends with the RDB version (2 bytes) and a CRC64 (8 bytes).
constexpr size_t k_dump_footer = 10;

/// Two DUMP replies hold the same serialized value; the footer is left out, so servers
/// writing other RDB versions still agree on values they encode alike.
bool same_payload(const RespValue& a, const RespValue& b) {
  if (a.type != RespValue::Type::bulk || b.type != RespValue::Type::bulk ||
      a.str.size() < k_dump_footer || a.str.size() != b.str.size()) {
    return false;
  }
  return std::string_view(a.str).substr(0, a.str.size() - k_dump_footer) ==
         std::string_view(b.str).substr(0, b.str.size() - k_dump_footer);
}

std::string type_text(const RespValue& v) {
  return v.type == RespValue::Type::simple || v.type == RespValue::Type::bulk ? v.str : "?";
}

class Verifier {
 public:
  Verifier(VerifySide& source, VerifySide& target, const VerifyOptions& options)
      : m_source(source), m_target(target), m_options(options) {}

  Expected<VerifyReport, std::string> run();

 private:
  /// SELECT `db` on both sides unless there already.
  Expected<bool, std::string> use_db(int db);
  /// Both sides' readers of one value.
  struct ReaderPair {
    size_t index;
    ValueReader source;
    ValueReader target;
  };
  /// One batch of keys on its way through the phases of a comparison. Several batches are
  /// in flight at once and each exchange moves every one of them on by a phase, so a batch
  /// never waits for a round trip of its own.
  struct Batch {
    enum class Stage : uint8_t { phase1, sizes, phase2, read, done };
    std::vector<std::string> keys;
    std::vector<Outcome> out;
    bool with_sizes = false;  // phase 1 asked MEMORY USAGE
    std::vector<size_t> by_dump;
    std::vector<size_t> by_digest;
    std::vector<size_t> by_size;  // sorted sets whose ZCARD decides between DUMP and reads
    std::vector<size_t> to_read;
    Stage stage = Stage::phase1;
    std::vector<ReaderPair> readers;
    // Where the batch's commands sit in the exchange under way, and whose they are.
    bool sent = false;
    size_t s_at = 0;
    size_t t_at = 0;
    std::vector<size_t> s_owner;
    std::vector<size_t> t_owner;
  };
  /// Phase 1: TYPE, PTTL (and MEMORY USAGE when the batch was made for DUMP) of every key.
  static void append_phase1(CommandBatch& out, const Batch& b);
  /// Reads phase 1's replies, starting at `s_at`/`t_at`, into outcomes and the keys whose
  /// values phase 2 compares by DUMP or digest, or that must be read.
  Expected<bool, std::string> parse_phase1(Batch& b, const std::vector<RespValue>& s, size_t s_at,
                                           const std::vector<RespValue>& t, size_t t_at);
  /// Phase 2: DUMP payloads of small values and server digests of the others.
  void append_phase2(CommandBatch& out, const Batch& b) const;
  static size_t phase2_size(const Batch& b);
  /// Reads phase 2's replies (from `s_at`/`t_at`); mismatches are to be read.
  void parse_phase2(Batch& b, const std::vector<RespValue>& s, size_t s_at,
                    const std::vector<RespValue>& t, size_t t_at);
  /// Phase 3 begins: a pair of chunked readers for every value left to read (module types,
  /// which cannot be read, differ at once); done when there is none.
  void start_reads(Batch& b);
  /// Appends the commands of `b`'s current phase to both sides' batches.
  void append_stage(Batch& b, CommandBatch& s, CommandBatch& t);
  /// Takes the replies to `b`'s current phase and moves it on to the next.
  Expected<bool, std::string> absorb_stage(Batch& b, const std::vector<RespValue>& s,
                                           const std::vector<RespValue>& t);
  /// One exchange for every batch in `flight`, with `extra` (a SCAN page) last on the
  /// source's or, with `extra_on_target`, the target's batch; returns the reply to it.
  Expected<std::optional<RespValue>, std::string> advance(std::deque<Batch>& flight,
                                                          const std::vector<std::string>* extra,
                                                          bool extra_on_target);
  /// All phases for `keys` of the current database (later rounds).
  Expected<std::vector<Outcome>, std::string> compare(const std::vector<std::string>& keys);
  /// Sends one batch to each side, then reads both replies.
  Expected<std::pair<std::vector<RespValue>, std::vector<RespValue>>, std::string> exchange(
      const CommandBatch& to_source, const CommandBatch& to_target);
  /// Adds field_ttl to `o` when the hash fields' expiry times differ beyond the tolerance.
  void compare_field_ttls(const std::vector<std::pair<uint64_t, int64_t>>& s,
                          const std::vector<std::pair<uint64_t, int64_t>>& t, Outcome& o) const;
  /// Round 1 of a database when both sides hold their datasets in this process: every key
  /// looked up in the other engine and compared by type, TTL and value (field TTLs too),
  /// with no command sent.
  Expected<bool, std::string> dataset_pass(int db, DbSummary& summary);
  /// One pass over a side's keys with SCAN; `reverse` scans the target and compares only
  /// keys the forward pass did not list.
  Expected<bool, std::string> scan_pass(int db, bool reverse, DbSummary& summary);
  std::vector<std::string> scan_command(const std::string& cursor) const;
  bool sampled(std::string_view key) const;
  void note(int db, const std::string& key, Outcome&& outcome, DbSummary& summary, bool reverse);
  /// After the forward pass: false when the target's DBSIZE equals the keys found on it,
  /// so the target holds no key the source lacks and its SCAN can be skipped.
  Expected<bool, std::string> target_may_have_more(int db);
  void tell_progress();
  bool digest_usable(const std::string& type) const;

  VerifySide& m_source;
  VerifySide& m_target;
  const VerifyOptions& m_options;
  VerifyReport m_report;
  int m_db_source = -1;
  int m_db_target = -1;
  bool m_dump = false;
  bool m_digest = false;
  bool m_zset_digest = false;
  bool m_field_ttls = false;  // either side has field TTLs
  bool m_source_field_ttls = false;
  bool m_target_field_ttls = false;
  std::vector<uint64_t> m_seen;     // the forward pass's keys of the current database, hashed
  std::vector<uint64_t> m_present;  // those of them the target has, hashed
  std::vector<KeyDifference> m_pending;
  VerifyProgress m_progress;
};

bool Verifier::sampled(std::string_view key) const {
  if (m_options.sample_percent >= 100) {
    return true;
  }
  uint64_t slot = engine::hash_bytes(key, k_sample_seed) % 10000;
  return static_cast<double>(slot) < m_options.sample_percent * 100;
}

bool Verifier::digest_usable(const std::string& type) const {
  // A server digest may leave field TTLs out: hashes are read where they can have them.
  return m_digest && (type != "zset" || m_zset_digest) && (type != "hash" || !m_field_ttls);
}

std::vector<std::string> Verifier::scan_command(const std::string& cursor) const {
  std::vector<std::string> cmd{"SCAN", cursor, "COUNT", std::to_string(m_options.scan_count)};
  if (!m_options.match.empty()) {
    cmd.emplace_back("MATCH");
    cmd.push_back(m_options.match);
  }
  return cmd;
}

Expected<bool, std::string> Verifier::use_db(int db) {
  for (auto [side, current] : {std::pair{&m_source, &m_db_source}, {&m_target, &m_db_target}}) {
    // A URL naming a database pins that side to it (source /0 against target /3).
    int wanted = side->url_db().value_or(db);
    if (*current == wanted) {
      continue;
    }
    auto reply = side->run({{"SELECT", std::to_string(wanted)}});
    if (!reply) {
      return Unexpected{reply.error()};
    }
    if ((*reply)[0].is_error()) {
      return Unexpected{
          fmt::format("{}: SELECT {}: {}", side->describe(), wanted, (*reply)[0].str)};
    }
    *current = wanted;
  }
  return true;
}

void Verifier::append_phase1(CommandBatch& out, const Batch& b) {
  // The batch's own flag, not m_dump: its replies are parsed by it, even if another batch
  // found MEMORY USAGE refused meanwhile.
  for (const std::string& key : b.keys) {
    out.push_back({"TYPE", key});
    out.push_back({"PTTL", key});
    if (b.with_sizes) {
      out.push_back({"MEMORY", "USAGE", key, "SAMPLES", "1"});
    }
  }
}

Expected<bool, std::string> Verifier::parse_phase1(Batch& b, const std::vector<RespValue>& s,
                                                   size_t s_at, const std::vector<RespValue>& t,
                                                   size_t t_at) {
  size_t step = b.with_sizes ? 3 : 2;
  b.out.assign(b.keys.size(), Outcome{});
  bool sizes_failed = false;
  for (size_t i = 0; i < b.keys.size(); ++i) {
    Outcome& o = b.out[i];
    bool small = b.with_sizes;
    for (auto [replies, at, state] :
         {std::tuple{&s, s_at, &o.source}, std::tuple{&t, t_at, &o.target}}) {
      const RespValue& type = (*replies)[at + step * i];
      const RespValue& ttl = (*replies)[at + step * i + 1];
      if (type.is_error() || ttl.is_error()) {
        return Unexpected{fmt::format(
            "{}: TYPE/PTTL {}: {}", replies == &s ? m_source.describe() : m_target.describe(),
            engine::quote_repr(b.keys[i]), type.is_error() ? type.str : ttl.str)};
      }
      state->type = type_text(type);
      state->pttl = ttl.integer;
      if (b.with_sizes) {
        const RespValue& size = (*replies)[at + step * i + 2];
        sizes_failed = sizes_failed || size.is_error();
        small = small && size.type == RespValue::Type::integer && size.integer <= k_dump_max;
      }
    }
    if (!judge_states(o, m_options.ttl_tolerance_ms)) {
      continue;
    }
    // Strings are read: GETRANGE costs a server less than DUMP's LZF and checksum.
    if (small && o.source.type != "string") {
      b.by_dump.push_back(i);
    } else if (digest_usable(o.source.type)) {
      b.by_digest.push_back(i);
    } else if (!b.with_sizes && o.source.type == "zset") {
      // ZRANGE WITHSCORES prints every score with %.17g, which cost Redis 7.0 twice what
      // ZCARD and DUMP do (measured): a sorted set of up to one chunk goes by its payload.
      b.by_size.push_back(i);
    } else {
      b.to_read.push_back(i);
    }
  }
  if (sizes_failed) {
    m_dump = false;  // MEMORY USAGE is not allowed here: no DUMP from now on
  }
  return true;
}

void Verifier::append_phase2(CommandBatch& out, const Batch& b) const {
  for (size_t i : b.by_dump) {
    out.push_back({"DUMP", b.keys[i]});
  }
  if (!b.by_digest.empty()) {
    std::vector<std::string> cmd{"DEBUG", "DIGEST-VALUE"};
    for (size_t i : b.by_digest) {
      cmd.push_back(b.keys[i]);
    }
    out.push_back(std::move(cmd));
  }
}

size_t Verifier::phase2_size(const Batch& b) {
  return b.by_dump.size() + (b.by_digest.empty() ? 0 : 1);
}

void Verifier::parse_phase2(Batch& b, const std::vector<RespValue>& sv, size_t s_at,
                            const std::vector<RespValue>& tv, size_t t_at) {
  for (size_t j = 0; j < b.by_dump.size(); ++j) {
    if (same_payload(sv[s_at + j], tv[t_at + j])) {
      ++m_report.values_by_dump;
    } else {
      // Another encoding or RDB version may serialize the same value differently.
      b.to_read.push_back(b.by_dump[j]);
    }
  }
  if (!b.by_digest.empty()) {
    const RespValue& sd = sv[s_at + b.by_dump.size()];
    const RespValue& td = tv[t_at + b.by_dump.size()];
    bool usable = sd.type == RespValue::Type::array && td.type == RespValue::Type::array &&
                  sd.elements.size() == b.by_digest.size() &&
                  td.elements.size() == b.by_digest.size();
    if (!usable) {
      m_digest = false;  // DEBUG was refused meanwhile (CONFIG SET): read from now on
    }
    for (size_t j = 0; j < b.by_digest.size(); ++j) {
      if (usable && sd.elements[j].str == td.elements[j].str) {
        ++m_report.values_by_digest;
      } else {
        // A TTL on one side only changes the digest too: the values decide.
        b.to_read.push_back(b.by_digest[j]);
      }
    }
  }
}

void Verifier::start_reads(Batch& b) {
  std::sort(b.to_read.begin(), b.to_read.end());
  b.readers.reserve(b.to_read.size());
  for (size_t i : b.to_read) {
    Outcome& o = b.out[i];
    ValueKind kind;
    if (!value_kind_from_type(o.source.type, kind)) {
      // A module type: only a server digest could have compared it.
      o.reasons.push_back(DiffReason::value);
      o.detail = "values of type " + o.source.type + " cannot be read here";
      continue;
    }
    b.readers.push_back({i, ValueReader(b.keys[i], kind, m_options.chunk, m_source_field_ttls),
                         ValueReader(b.keys[i], kind, m_options.chunk, m_target_field_ttls)});
  }
  m_report.values_read += b.readers.size();
  b.stage = b.readers.empty() ? Batch::Stage::done : Batch::Stage::read;
}

void Verifier::append_stage(Batch& b, CommandBatch& s, CommandBatch& t) {
  b.s_at = s.size();
  b.t_at = t.size();
  b.sent = b.stage != Batch::Stage::done;
  switch (b.stage) {
    case Batch::Stage::phase1:
      append_phase1(s, b);
      append_phase1(t, b);
      break;
    case Batch::Stage::sizes:
      for (size_t i : b.by_size) {
        s.push_back({"ZCARD", b.keys[i]});
        t.push_back({"ZCARD", b.keys[i]});
      }
      break;
    case Batch::Stage::phase2:
      append_phase2(s, b);
      append_phase2(t, b);
      break;
    case Batch::Stage::read:
      b.s_owner.clear();
      b.t_owner.clear();
      for (size_t r = 0; r < b.readers.size(); ++r) {
        ReaderPair& p = b.readers[r];
        if (!p.source.done()) {
          s.push_back(p.source.next_command());
          b.s_owner.push_back(r);
        }
        if (!p.target.done()) {
          t.push_back(p.target.next_command());
          b.t_owner.push_back(r);
        }
      }
      m_report.read_commands += b.s_owner.size() + b.t_owner.size();
      break;
    case Batch::Stage::done:
      break;
  }
}

Expected<bool, std::string> Verifier::absorb_stage(Batch& b, const std::vector<RespValue>& s,
                                                   const std::vector<RespValue>& t) {
  if (!b.sent) {
    return true;
  }
  b.sent = false;
  switch (b.stage) {
    case Batch::Stage::phase1: {
      auto parsed = parse_phase1(b, s, b.s_at, t, b.t_at);
      if (!parsed) {
        return parsed;
      }
      if (!b.by_size.empty()) {
        b.stage = Batch::Stage::sizes;
      } else if (phase2_size(b) > 0) {
        b.stage = Batch::Stage::phase2;
      } else {
        start_reads(b);
      }
      break;
    }
    case Batch::Stage::sizes:
      for (size_t j = 0; j < b.by_size.size(); ++j) {
        const RespValue& sn = s[b.s_at + j];
        const RespValue& tn = t[b.t_at + j];
        auto fits = [&](const RespValue& n) {
          return n.type == RespValue::Type::integer &&
                 static_cast<uint64_t>(n.integer) <= m_options.chunk;
        };
        (fits(sn) && fits(tn) ? b.by_dump : b.to_read).push_back(b.by_size[j]);
      }
      if (phase2_size(b) > 0) {
        b.stage = Batch::Stage::phase2;
      } else {
        start_reads(b);
      }
      break;
    case Batch::Stage::phase2:
      parse_phase2(b, s, b.s_at, t, b.t_at);
      start_reads(b);
      break;
    case Batch::Stage::read: {
      for (size_t i = 0; i < b.s_owner.size(); ++i) {
        b.readers[b.s_owner[i]].source.feed(s[b.s_at + i]);
      }
      for (size_t i = 0; i < b.t_owner.size(); ++i) {
        b.readers[b.t_owner[i]].target.feed(t[b.t_at + i]);
      }
      if (!b.s_owner.empty() || !b.t_owner.empty()) {
        bool all_done = std::all_of(b.readers.begin(), b.readers.end(), [](const ReaderPair& p) {
          return p.source.done() && p.target.done();
        });
        if (!all_done) {
          break;
        }
      }
      for (ReaderPair& p : b.readers) {
        Outcome& o = b.out[p.index];
        if (p.source.failed() || p.target.failed()) {
          o.reasons.push_back(DiffReason::value);
          o.detail = "reading the value failed: " +
                     (p.source.failed() ? p.source.failure() : p.target.failure());
        } else if (p.source.fingerprint() != p.target.fingerprint()) {
          o.reasons.push_back(DiffReason::value);
        } else if (m_field_ttls) {
          compare_field_ttls(p.source.field_expiries(), p.target.field_expiries(), o);
        }
      }
      b.readers.clear();
      b.stage = Batch::Stage::done;
      break;
    }
    case Batch::Stage::done:
      break;
  }
  return true;
}

Expected<std::optional<RespValue>, std::string> Verifier::advance(
    std::deque<Batch>& flight, const std::vector<std::string>* extra, bool extra_on_target) {
  CommandBatch s;
  CommandBatch t;
  for (Batch& b : flight) {
    append_stage(b, s, t);
  }
  if (extra != nullptr) {
    (extra_on_target ? t : s).push_back(*extra);
  }
  auto replies = exchange(s, t);
  if (!replies) {
    return Unexpected{replies.error()};
  }
  auto& [sr, tr] = *replies;
  std::optional<RespValue> extra_reply;
  if (extra != nullptr) {
    auto& from = extra_on_target ? tr : sr;
    extra_reply = std::move(from.back());
    from.pop_back();
  }
  for (Batch& b : flight) {
    auto absorbed = absorb_stage(b, sr, tr);
    if (!absorbed) {
      return Unexpected{absorbed.error()};
    }
  }
  return extra_reply;
}

Expected<std::vector<Outcome>, std::string> Verifier::compare(
    const std::vector<std::string>& keys) {
  std::deque<Batch> flight(1);
  flight.front().keys = keys;
  flight.front().with_sizes = m_dump;
  while (flight.front().stage != Batch::Stage::done) {
    auto moved = advance(flight, nullptr, false);
    if (!moved) {
      return Unexpected{moved.error()};
    }
  }
  return std::move(flight.front().out);
}

Expected<std::pair<std::vector<RespValue>, std::vector<RespValue>>, std::string> Verifier::exchange(
    const CommandBatch& to_source, const CommandBatch& to_target) {
  // Both sides work at once: send both batches, then read both. The target first: an
  // in-process source runs its batch inside submit(), while a server target is at work.
  auto sent = m_target.submit(to_target);
  if (!sent) {
    return Unexpected{sent.error()};
  }
  sent = m_source.submit(to_source);
  if (!sent) {
    return Unexpected{sent.error()};
  }
  auto s = m_source.collect();
  if (!s) {
    return Unexpected{s.error()};
  }
  auto t = m_target.collect();
  if (!t) {
    return Unexpected{t.error()};
  }
  return std::pair{std::move(*s), std::move(*t)};
}

void Verifier::compare_field_ttls(const std::vector<std::pair<uint64_t, int64_t>>& s,
                                  const std::vector<std::pair<uint64_t, int64_t>>& t,
                                  Outcome& o) const {
  // Both lists are sorted by field: walk them together.
  size_t differ = 0;
  size_t i = 0;
  size_t j = 0;
  while (i < s.size() || j < t.size()) {
    if (j == t.size() || (i < s.size() && s[i].first < t[j].first)) {
      ++differ;
      ++i;
    } else if (i == s.size() || t[j].first < s[i].first) {
      ++differ;
      ++j;
    } else {
      differ += std::llabs(s[i].second - t[j].second) > m_options.ttl_tolerance_ms ? 1 : 0;
      ++i;
      ++j;
    }
  }
  if (differ > 0) {
    o.reasons.push_back(DiffReason::field_ttl);
    o.detail = fmt::format("{} field TTL(s) differ (fields with a TTL: source {}, target {}{})",
                           differ, s.size(), t.size(),
                           !m_target_field_ttls   ? ", which has no field TTLs"
                           : !m_source_field_ttls ? "; the source has no field TTLs"
                                                  : "");
  }
}

Expected<bool, std::string> Verifier::target_may_have_more(int db) {
  if (m_options.sample_percent < 100 || !m_options.match.empty()) {
    return true;  // the target's size says nothing about a subset of its keys
  }
  std::sort(m_present.begin(), m_present.end());
  m_present.erase(std::unique(m_present.begin(), m_present.end()), m_present.end());
  auto ready = use_db(db);
  if (!ready) {
    return ready;
  }
  auto size = m_target.run({{"DBSIZE"}});
  if (!size) {
    return Unexpected{size.error()};
  }
  // Every key the target holds was found from the source's side: no SCAN of the target
  // can find another one.
  const RespValue& n = (*size)[0];
  return n.type != RespValue::Type::integer || static_cast<uint64_t>(n.integer) != m_present.size();
}

void Verifier::note(int db, const std::string& key, Outcome&& o, DbSummary& summary, bool reverse) {
  if (!reverse && o.target.type != "none") {
    m_present.push_back(engine::hash_bytes(key, k_seen_seed));
  }
  ++summary.keys;
  ++m_report.keys_compared;
  ++m_progress.keys_done;
  const std::string& type = o.source.type != "none" ? o.source.type : o.target.type;
  if (type != "none") {
    ++summary.types[type];
  }
  if (!o.reasons.empty()) {
    m_pending.push_back({db, key, std::move(o.reasons), std::move(o.source), std::move(o.target),
                         std::move(o.detail)});
  }
}

void Verifier::tell_progress() {
  if (m_options.progress) {
    m_options.progress(m_progress);
  }
}

Expected<bool, std::string> Verifier::scan_pass(int db, bool reverse, DbSummary& summary) {
  auto ready = use_db(db);
  if (!ready) {
    return ready;
  }
  VerifySide& scanned = reverse ? m_target : m_source;
  // Every exchange carries the next SCAN page and the next phase of each batch in flight
  // (TYPE/PTTL of the newest, DUMP/digests or value chunks of the older ones), so both
  // servers get one large pipeline per round trip. A batch whose big values take many
  // chunks holds the window; new pages wait while it is full.
  std::deque<Batch> flight;
  std::string cursor = "0";
  bool more = true;
  while (more || !flight.empty()) {
    bool ask = more && flight.size() < k_flight_window;
    std::vector<std::string> scan = scan_command(cursor);
    auto moved = advance(flight, ask ? &scan : nullptr, reverse);
    if (!moved) {
      return Unexpected{moved.error()};
    }
    while (!flight.empty() && flight.front().stage == Batch::Stage::done) {
      Batch& done = flight.front();
      for (size_t i = 0; i < done.keys.size(); ++i) {
        note(db, done.keys[i], std::move(done.out[i]), summary, reverse);
      }
      tell_progress();
      flight.pop_front();
    }
    if (!ask) {
      continue;
    }
    RespValue& page = **moved;
    if (page.type != RespValue::Type::array || page.elements.size() != 2 ||
        page.elements[1].type != RespValue::Type::array) {
      return Unexpected{fmt::format("{}: SCAN: {}", scanned.describe(),
                                    page.is_error() ? page.str : "a reply that is not a page")};
    }
    cursor = page.elements[0].str;
    more = cursor != "0";
    Batch next;
    next.with_sizes = m_dump;
    for (RespValue& k : page.elements[1].elements) {
      if (!sampled(k.str)) {
        continue;
      }
      uint64_t h = engine::hash_bytes(k.str, k_seen_seed);
      if (reverse) {
        if (std::binary_search(m_seen.begin(), m_seen.end(), h)) {
          continue;  // the forward pass compared it
        }
      } else {
        m_seen.push_back(h);
      }
      next.keys.push_back(std::move(k.str));
    }
    if (!next.keys.empty()) {
      flight.push_back(std::move(next));
    }
  }
  if (!reverse) {
    std::sort(m_seen.begin(), m_seen.end());
    m_seen.erase(std::unique(m_seen.begin(), m_seen.end()), m_seen.end());
  }
  return true;
}

Expected<bool, std::string> Verifier::dataset_pass(int db, DbSummary& summary) {
  engine::Engine& a = *m_source.dataset();
  engine::Engine& b = *m_target.dataset();
  int a_id = m_source.url_db().value_or(db);
  int b_id = m_target.url_db().value_or(db);
  engine::Db* da = a_id < a.db_count() ? &a.db(a_id) : nullptr;
  engine::Db* db_b = b_id < b.db_count() ? &b.db(b_id) : nullptr;
  int64_t now_a = a.clock().now_ms();
  int64_t now_b = b.clock().now_ms();
  auto wanted = [&](std::string_view key) {
    return (m_options.match.empty() || engine::glob_match(m_options.match, key)) && sampled(key);
  };
  auto live = [](engine::Db* d, std::string_view key) -> engine::Entry* {
    return d != nullptr ? d->lookup(key, false) : nullptr;
  };
  uint64_t since_progress = 0;
  auto one = [&](const engine::Entry* s, const engine::Entry* t, bool reverse) {
    Outcome o;
    o.source = state_of(s, now_a);
    o.target = state_of(t, now_b);
    if (judge_states(o, m_options.ttl_tolerance_ms)) {
      ++m_report.values_in_process;
      switch (engine::compare_values(s, t, m_options.ttl_tolerance_ms)) {
        case engine::ValueMatch::equal:
          break;
        case engine::ValueMatch::value:
          o.reasons.push_back(DiffReason::value);
          break;
        case engine::ValueMatch::field_ttl:
          o.reasons.push_back(DiffReason::field_ttl);
          break;
      }
    }
    note(db, std::string(s != nullptr ? s->key() : t->key()), std::move(o), summary, reverse);
    if (++since_progress == 4096) {
      since_progress = 0;
      tell_progress();
    }
  };
  if (da != nullptr) {
    da->for_each([&](const engine::Entry* s) {
      if (da->is_expired(s) || !wanted(s->key())) {
        return;
      }
      one(s, live(db_b, s->key()), false);
    });
  }
  if (db_b != nullptr) {
    // The target's keys the source lacks; its own lookups may expire source keys, never the
    // target's table being walked.
    db_b->for_each([&](const engine::Entry* t) {
      if (db_b->is_expired(t) || !wanted(t->key()) || live(da, t->key()) != nullptr) {
        return;
      }
      one(nullptr, t, true);
    });
  }
  tell_progress();
  summary.reverse_scanned = true;
  return true;
}

Expected<VerifyReport, std::string> Verifier::run() {
  auto clock = m_options.clock ? m_options.clock : [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  double start = clock();
  m_report.source = m_source.describe();
  m_report.target = m_target.describe();
  m_report.options = m_options;
  m_report.options.pause = nullptr;
  m_report.options.clock = nullptr;
  m_report.options.progress = nullptr;
  auto s_facts = probe_side(m_source);
  if (!s_facts) {
    return Unexpected{s_facts.error()};
  }
  auto t_facts = probe_side(m_target);
  if (!t_facts) {
    return Unexpected{t_facts.error()};
  }
  m_report.source_facts = *s_facts;
  m_report.target_facts = *t_facts;
  m_dump = m_options.dump;
  m_digest = m_options.server_digest && s_facts->digest_value && t_facts->digest_value;
  m_zset_digest = s_facts->score_format == t_facts->score_format;
  m_source_field_ttls = s_facts->field_ttls;
  m_target_field_ttls = t_facts->field_ttls;
  m_field_ttls = m_source_field_ttls || m_target_field_ttls;
  m_report.server_digest = m_digest;
  m_report.field_ttls = m_field_ttls;

  std::set<int> dbs;
  std::optional<int> pinned = m_source.url_db() ? m_source.url_db() : m_target.url_db();
  if (pinned) {
    // Databases are numbered as the source's; a pinned side compares only its own.
    dbs.insert(*pinned);
  } else {
    for (const auto* facts : {&*s_facts, &*t_facts}) {
      for (const auto& [db, count] : facts->keys_per_db) {
        if (!m_options.db || *m_options.db == db) {
          dbs.insert(db);
        }
      }
    }
  }
  for (int db : dbs) {
    auto it = s_facts->keys_per_db.find(m_source.url_db().value_or(db));
    if (it != s_facts->keys_per_db.end()) {
      m_progress.keys_total += static_cast<uint64_t>(
          static_cast<double>(it->second) * std::min(100.0, m_options.sample_percent) / 100.0);
    }
  }
  // Round 1: every key, both ways; in-process when both datasets are here.
  m_progress.round = 1;
  bool in_process =
      m_options.in_process && m_source.dataset() != nullptr && m_target.dataset() != nullptr;
  m_report.in_process = in_process;
  for (int db : dbs) {
    DbSummary summary;
    summary.db = db;
    m_seen.clear();
    m_present.clear();
    if (in_process) {
      auto pass = dataset_pass(db, summary);
      if (!pass) {
        return Unexpected{pass.error()};
      }
      m_report.dbs.push_back(std::move(summary));
      continue;
    }
    auto pass = scan_pass(db, false, summary);
    if (!pass) {
      return Unexpected{pass.error()};
    }
    auto extra_possible = target_may_have_more(db);
    if (!extra_possible) {
      return Unexpected{extra_possible.error()};
    }
    summary.reverse_scanned = *extra_possible;
    if (*extra_possible) {
      pass = scan_pass(db, true, summary);
      if (!pass) {
        return Unexpected{pass.error()};
      }
    }
    m_report.dbs.push_back(std::move(summary));
  }
  m_report.rounds_run = 1;
  // A key SCAN listed twice was compared twice: keep one difference.
  std::set<std::pair<int, std::string>> unique;
  std::erase_if(m_pending,
                [&](const KeyDifference& d) { return !unique.emplace(d.db, d.key).second; });

  // Later rounds: only what differed, after a pause for writes and expiries to settle.
  for (int round = 2; round <= m_options.rounds && !m_pending.empty(); ++round) {
    if (m_options.pause) {
      m_options.pause(round, m_options.pause_ms);
    } else if (m_options.pause_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(m_options.pause_ms));
    }
    m_report.rounds_run = round;
    m_progress = {round, 0, m_pending.size()};
    std::vector<KeyDifference> still;
    std::stable_sort(m_pending.begin(), m_pending.end(),
                     [](const KeyDifference& a, const KeyDifference& b) { return a.db < b.db; });
    for (size_t at = 0; at < m_pending.size();) {
      int db = m_pending[at].db;
      size_t end = at;
      std::vector<std::string> keys;
      while (end < m_pending.size() && m_pending[end].db == db &&
             keys.size() < m_options.scan_count) {
        keys.push_back(m_pending[end].key);
        ++end;
      }
      auto ready = use_db(db);
      if (!ready) {
        return Unexpected{ready.error()};
      }
      auto outcomes = compare(keys);
      if (!outcomes) {
        return Unexpected{outcomes.error()};
      }
      for (size_t i = 0; i < keys.size(); ++i) {
        Outcome& o = (*outcomes)[i];
        KeyDifference& was = m_pending[at + i];
        if (o.reasons.empty()) {
          m_report.changed.push_back(std::move(was));
        } else {
          was.reasons = std::move(o.reasons);
          was.source = std::move(o.source);
          was.target = std::move(o.target);
          was.detail = std::move(o.detail);
          still.push_back(std::move(was));
        }
      }
      m_progress.keys_done += keys.size();
      tell_progress();
      at = end;
    }
    m_pending = std::move(still);
  }
  m_report.differences = std::move(m_pending);
  for (DbSummary& summary : m_report.dbs) {
    for (const KeyDifference& d : m_report.differences) {
      summary.differences += d.db == summary.db ? 1 : 0;
    }
    for (const KeyDifference& d : m_report.changed) {
      summary.changed += d.db == summary.db ? 1 : 0;
    }
  }
  m_report.seconds = clock() - start;
  return std::move(m_report);
}

// ---- Rendering ----------------------------------------------------------------------------

std::string ttl_text(int64_t pttl) {
  if (pttl == -1) {
    return "no TTL";
  }
  if (pttl < 0) {
    return "absent";
  }
  return fmt::format("TTL {} ms", pttl);
}

std::string reason_text(const KeyDifference& d) {
  std::string out;
  for (DiffReason r : d.reasons) {
    if (!out.empty()) {
      out += ", ";
    }
    switch (r) {
      case DiffReason::missing_on_target:
        out += "missing on the target";
        break;
      case DiffReason::missing_on_source:
        out += "only on the target";
        break;
      case DiffReason::type:
        out += "type differs";
        break;
      case DiffReason::ttl:
        out += "TTL differs";
        break;
      case DiffReason::value:
        out += "value differs";
        break;
      case DiffReason::field_ttl:
        out += "field TTLs differ";
        break;
    }
  }
  out += fmt::format(" (source: {}, {}; target: {}, {})", d.source.type, ttl_text(d.source.pttl),
                     d.target.type, ttl_text(d.target.pttl));
  if (!d.detail.empty()) {
    out += ": " + d.detail;
  }
  return out;
}

void append_list_text(std::string& out, const std::vector<KeyDifference>& list, size_t max) {
  for (size_t i = 0; i < list.size() && i < max; ++i) {
    out += fmt::format("  db {} {}: {}\n", list[i].db, engine::quote_repr(list[i].key),
                       reason_text(list[i]));
  }
  if (list.size() > max) {
    out += fmt::format("  ... and {} more\n", list.size() - max);
  }
}

void append_state_json(std::string& out, const KeyState& s) {
  out += "{\"type\":";
  append_json_bytes(out, s.type);
  out += fmt::format(",\"ttl_ms\":{}}}", s.pttl);
}

void append_list_json(std::string& out, const std::vector<KeyDifference>& list, size_t max) {
  out.push_back('[');
  for (size_t i = 0; i < list.size() && i < max; ++i) {
    const KeyDifference& d = list[i];
    out += i == 0 ? "" : ",";
    out += fmt::format("{{\"db\":{},\"key\":", d.db);
    append_json_bytes(out, d.key);
    out += ",\"reason\":\"";
    out += diff_reason_name(d.reasons.front());
    out += "\",\"reasons\":[";
    for (size_t r = 0; r < d.reasons.size(); ++r) {
      out += r == 0 ? "\"" : ",\"";
      out += diff_reason_name(d.reasons[r]);
      out += "\"";
    }
    out += "],\"source\":";
    append_state_json(out, d.source);
    out += ",\"target\":";
    append_state_json(out, d.target);
    if (!d.detail.empty()) {
      out += ",\"detail\":";
      append_json_bytes(out, d.detail);
    }
    out += "}";
  }
  out.push_back(']');
}

/// The ways values were compared, in the order tried: "dump+digest+read", ..., "read".
std::string value_check_text(const VerifyReport& r) {
  std::string out;
  if (r.in_process) {
    out += "in-process+";
  }
  if (r.options.dump) {
    out += "dump+";
  }
  if (r.server_digest) {
    out += "digest+";
  }
  return out + "read";
}

}  // namespace

std::string_view diff_reason_name(DiffReason reason) {
  switch (reason) {
    case DiffReason::missing_on_target:
      return "missing_on_target";
    case DiffReason::missing_on_source:
      return "missing_on_source";
    case DiffReason::type:
      return "type";
    case DiffReason::ttl:
      return "ttl";
    case DiffReason::value:
      return "value";
    case DiffReason::field_ttl:
      return "field_ttl";
  }
  return "value";
}

Expected<VerifyReport, std::string> verify_data(VerifySide& source, VerifySide& target,
                                                const VerifyOptions& options) {
  if (options.rounds < 1 || options.sample_percent <= 0 || options.sample_percent > 100 ||
      options.scan_count == 0 || options.chunk == 0 || options.ttl_tolerance_ms < 0) {
    return Unexpected{std::string(
        "verify options out of range: rounds >= 1, 0 < sample <= 100, batch and chunk > 0, "
        "TTL tolerance >= 0")};
  }
  Verifier verifier(source, target, options);
  return verifier.run();
}

std::string render_verify_text(const VerifyReport& r, size_t max_listed) {
  std::string out = fmt::format("keyshift verify: {} -> {}\n", r.source, r.target);
  double rate = r.seconds > 0 ? static_cast<double>(r.keys_compared) / r.seconds : 0;
  out += fmt::format("compared {} key(s) in {} database(s)", r.keys_compared, r.dbs.size());
  if (r.options.sample_percent < 100) {
    out += fmt::format(" (a {}% sample)", r.options.sample_percent);
  }
  out += fmt::format(" in {:.2f} s ({:.0f} keys/s), {} round(s)\n", r.seconds, rate, r.rounds_run);
  if (r.setup_seconds > 0) {
    out += fmt::format("opening the sides (files loaded, snapshots taken) took {:.2f} s before\n",
                       r.setup_seconds);
  }
  if (r.in_process) {
    out += fmt::format("round 1 compared the two datasets in this process: {} value(s)\n",
                       r.values_in_process);
  }
  out += fmt::format(
      "values: {} equal by DUMP payload, {} by DEBUG DIGEST-VALUE{}, {} read in "
      "chunks and fingerprinted here\n",
      r.values_by_dump, r.values_by_digest,
      !r.server_digest ? " (not allowed or not asked for)"
      : r.source_facts.score_format != r.target_facts.score_format
          ? " (not for sorted sets: the servers format digest scores differently)"
          : "",
      r.values_read);
  if (r.field_ttls) {
    out += fmt::format("hash field TTLs compared (HPEXPIRETIME: source {}, target {})\n",
                       r.source_facts.field_ttls ? "yes" : "no, so none",
                       r.target_facts.field_ttls ? "yes" : "no, so none");
  }
  for (const DbSummary& db : r.dbs) {
    std::string types;
    for (const auto& [type, count] : db.types) {
      types += fmt::format("{}{} {}", types.empty() ? "" : ", ", type, count);
    }
    out += fmt::format(
        "  db {}: {} key(s){}{}{}\n", db.db, db.keys, types.empty() ? "" : " (" + types + ")",
        db.differences > 0 ? fmt::format(", {} differ", db.differences) : "",
        db.changed > 0 ? fmt::format(", {} changed during the run", db.changed) : "");
  }
  if (!r.changed.empty()) {
    out += fmt::format(
        "{} key(s) differed and agreed in a later round (changed or expired during the run):\n",
        r.changed.size());
    append_list_text(out, r.changed, max_listed);
  }
  if (!r.differences.empty()) {
    out += fmt::format("{} difference(s) after {} round(s):\n", r.differences.size(), r.rounds_run);
    append_list_text(out, r.differences, max_listed);
  }
  out += r.equal() ? "result: equal\n"
                   : fmt::format("result: {} key(s) differ\n", r.differences.size());
  return out;
}

std::string render_verify_json(const VerifyReport& r, size_t max_listed) {
  std::string out = "{\"source\":";
  append_json_bytes(out, r.source);
  out += ",\"target\":";
  append_json_bytes(out, r.target);
  out += fmt::format(
      ",\"equal\":{},\"keys_compared\":{},\"rounds\":{},\"sample_percent\":{},"
      "\"ttl_tolerance_ms\":{},\"value_check\":\"{}\",\"zset_digest\":{},\"field_ttls\":{},"
      "\"values_by_dump\":{},\"values_by_digest\":{},\"values_read\":{},\"seconds\":{:.3f},"
      "\"setup_seconds\":{:.3f},\"in_process\":{},\"values_in_process\":{},\"databases\":[",
      r.equal() ? "true" : "false", r.keys_compared, r.rounds_run, r.options.sample_percent,
      r.options.ttl_tolerance_ms, value_check_text(r),
      r.server_digest && r.source_facts.score_format == r.target_facts.score_format ? "true"
                                                                                    : "false",
      r.field_ttls ? "true" : "false", r.values_by_dump, r.values_by_digest, r.values_read,
      r.seconds, r.setup_seconds, r.in_process ? "true" : "false", r.values_in_process);
  for (size_t i = 0; i < r.dbs.size(); ++i) {
    const DbSummary& db = r.dbs[i];
    out += fmt::format("{}{{\"db\":{},\"keys\":{},\"types\":{{", i == 0 ? "" : ",", db.db, db.keys);
    bool first = true;
    for (const auto& [type, count] : db.types) {
      out += first ? "" : ",";
      first = false;
      append_json_bytes(out, type);
      out += fmt::format(":{}", count);
    }
    out += fmt::format("}},\"differences\":{},\"changed\":{},\"target_scanned\":{}}}",
                       db.differences, db.changed, db.reverse_scanned ? "true" : "false");
  }
  out += fmt::format("],\"differences_total\":{},\"changed_total\":{},\"listed_max\":{}",
                     r.differences.size(), r.changed.size(), max_listed);
  out += ",\"differences\":";
  append_list_json(out, r.differences, max_listed);
  out += ",\"changed\":";
  append_list_json(out, r.changed, max_listed);
  out += "}\n";
  return out;
}

std::string verify_progress_line(const VerifyProgress& p, double elapsed) {
  double rate = elapsed > 0 ? static_cast<double>(p.keys_done) / elapsed : 0;
  if (p.keys_total == 0) {
    return fmt::format("\rkeyshift verify: round {}: {} keys {:.0f} keys/s", p.round, p.keys_done,
                       rate);
  }
  double percent =
      std::min(100.0, 100.0 * static_cast<double>(p.keys_done) / static_cast<double>(p.keys_total));
  return fmt::format("\rkeyshift verify: round {}: {}/{} keys {:.0f}% {:.0f} keys/s", p.round,
                     p.keys_done, p.keys_total, percent, rate);
}

}  // namespace keyshift::compat
