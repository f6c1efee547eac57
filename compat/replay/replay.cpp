#include "compat/replay/replay.hpp"

#include "compat/capture/capture_anonymize.hpp"
#include "compat/capture/capture_record.hpp"
#include "compat/kb/knowledge_base.hpp"
#include "compat/replay/replay_target.hpp"
#include "compat/report/html_page.hpp"
#include "compat/report/json_text.hpp"
#include "engine/resp/pipelined_connection.hpp"
#include "engine/resp/request_parser.hpp"
#include "engine/resp/resp_value.hpp"
#include "engine/util/split_args.hpp"
#include "engine/util/strings.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <unordered_map>
#include <unordered_set>

namespace keyshift::compat::replay {
namespace {

using capture::CaptureEvent;
using capture::EventKind;

/// Replies a target may keep waiting on one connection (pipelines of a whole capture).
constexpr uint32_t k_window = 1u << 30;
/// Requests queued across connections before they are written even with no reply awaited
/// (a capture under CLIENT REPLY OFF awaits none).
constexpr uint32_t k_flush_batch = 256;
/// Characters of a request or reply an example keeps.
constexpr size_t k_example_chars = 300;

/// A request sent and the recorded facts its reply is compared against.
struct Pending {
  std::string command;
  SentRequest sent_request;  // where its reply comes from
  std::string raw;           // the recorded request: an example shows it (display_request)
  bool resend = false;       // into a cluster: `raw` is sent again after MOVED/ASK
  int64_t recorded_start_ns = 0;
  std::chrono::steady_clock::time_point sent;
  bool skip = false;  // not sent (redacted): its recorded reply is passed over
};

/// One recorded connection and its counterpart on the target.
struct Conn {
  TargetSide* target = nullptr;  // its own (below) or one of the shared ones
  std::optional<TargetSide> own_target;
  std::optional<engine::PipelinedConnection> ref;  // --compare: the same requests there
  std::deque<Pending> pending;
  SentRequest last_request;  // the request the last reply answered
  std::string last_command;
  bool last_skipped = false;  // the request the last reply answered was not sent
  bool broken = false;        // a reply did not come: the rest of this connection is not compared
};

/// The commands that have subcommands in the command table ("client", "config", ...).
std::unordered_set<std::string> container_commands() {
  std::unordered_set<std::string> out;
  for (const kb::KbCommand* row : kb::commands_of(*kb::find_profile("valkey-8.0"))) {
    if (size_t bar = row->name.find('|'); bar != std::string_view::npos) {
      out.emplace(row->name.substr(0, bar));
    }
  }
  return out;
}

/// The command's name as the command table has it: "get", "client|list". `containers`:
/// container_commands(), so that a plain command's second argument (a key) is never
/// looked up as a subcommand.
std::string command_name(const std::vector<std::string_view>& args,
                         const std::unordered_set<std::string>& containers) {
  if (args.empty()) {
    return {};
  }
  std::string name = engine::to_lower(args[0]);
  if (args.size() > 1 && containers.count(name) != 0) {
    static const kb::ProfileId k_profile = *kb::find_profile("valkey-8.0");
    std::string sub = name + "|" + engine::to_lower(args[1]);
    if (kb::find_command(k_profile, sub) != nullptr) {
      return sub;
    }
  }
  return name;
}

/// The request as redis-cli shows one (quoted where needed), cut.
std::string display(const std::vector<std::string_view>& args) {
  std::string out;
  for (std::string_view a : args) {
    if (!out.empty()) {
      out += ' ';
    }
    out += engine::quote_repr(a);
    if (out.size() > k_example_chars) {
      out.resize(k_example_chars);
      out += "...";
      break;
    }
  }
  return out;
}

std::string shown_reply(std::string_view bytes) {
  engine::RespValue v;
  size_t used = 0;
  std::string text = engine::parse_resp(bytes, v, used) == engine::RespParse::ok
                         ? v.to_display()
                         : engine::quote_repr(bytes);
  if (text.size() > k_example_chars) {
    text.resize(k_example_chars);
    text += "...";
  }
  return text;
}

/// The top-level elements of an aggregate reply, each re-encoded for comparison; nothing
/// for a reply that is not an aggregate.
std::optional<std::vector<std::string>> elements(std::string_view bytes) {
  engine::RespValue v;
  size_t used = 0;
  if (engine::parse_resp(bytes, v, used) != engine::RespParse::ok ||
      (v.type != engine::RespValue::Type::array && v.type != engine::RespValue::Type::set &&
       v.type != engine::RespValue::Type::map)) {
    return std::nullopt;
  }
  std::vector<std::string> out;
  if (v.type == engine::RespValue::Type::map) {
    // A map's entries keep their key with them.
    for (size_t i = 0; i + 1 < v.elements.size(); i += 2) {
      out.push_back(v.elements[i].to_display() + "\n" + v.elements[i + 1].to_display());
    }
  } else {
    for (const engine::RespValue& e : v.elements) {
      out.push_back(e.to_display());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Commands whose output varies by nature although their table rows carry no tip.
bool varies_by_nature(std::string_view command) {
  static constexpr std::string_view k_names[] = {
      "info",         "time",         "hello",           "lastsave",
      "client|id",    "client|list",  "client|info",     "client|getname",
      "memory|usage", "memory|stats", "object|idletime", "object|freq",
      "debug",        "slowlog|get",  "latency|latest",  "command|docs",
      "command|info", "command",      "command|count",   "dbsize"};
  return std::find(std::begin(k_names), std::end(k_names), command) != std::end(k_names);
}

ReplyVerdict compare(const std::string& command, std::string_view recorded,
                     const engine::ReplyView& got) {
  if (recorded == got.bytes) {
    return ReplyVerdict::same;
  }
  static const kb::ProfileId k_profile = *kb::find_profile("valkey-8.0");
  const kb::KbCommand* row = kb::find_command(k_profile, command);
  std::string_view tips = row != nullptr ? row->tips : std::string_view();
  if (varies_by_nature(command) || tips.find("nondeterministic_output ") != std::string::npos ||
      (tips.ends_with("nondeterministic_output"))) {
    return ReplyVerdict::varies;
  }
  bool recorded_error = !recorded.empty() && (recorded[0] == '-' || recorded[0] == '!');
  if (recorded_error && got.is_error) {
    std::string_view a = recorded.substr(1, recorded.find_first_of(" \r") - 1);
    std::string_view b = got.error_text.substr(0, got.error_text.find(' '));
    return a == b ? ReplyVerdict::error_text : ReplyVerdict::differs;
  }
  if (tips.find("nondeterministic_output_order") != std::string::npos) {
    auto a = elements(recorded);
    auto b = elements(got.bytes);
    if (a && b && *a == *b) {
      return ReplyVerdict::same_unordered;
    }
  }
  return ReplyVerdict::differs;
}

ReplayLatency percentiles(std::vector<int64_t>& ns) {
  ReplayLatency out;
  out.samples = ns.size();
  if (ns.empty()) {
    return out;
  }
  // Each quantile selected in the part above the one before: linear, where a sort of a
  // million samples was a visible share of a replay.
  size_t from = 0;
  auto at = [&ns, &from](double q) {
    size_t i = static_cast<size_t>(q * static_cast<double>(ns.size() - 1));
    std::nth_element(ns.begin() + static_cast<std::ptrdiff_t>(from),
                     ns.begin() + static_cast<std::ptrdiff_t>(i), ns.end());
    from = i;
    return static_cast<double>(ns[i]) / 1000.0;
  };
  out.p50_us = at(0.50);
  out.p90_us = at(0.90);
  out.p99_us = at(0.99);
  out.p999_us = at(0.999);
  out.max_us = static_cast<double>(*std::max_element(ns.begin(), ns.end())) / 1000.0;
  return out;
}

/// HELLO without its redacted AUTH: the protocol and name still apply on the target.
std::vector<std::string_view> hello_without_auth(const std::vector<std::string_view>& args) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i > 0 && engine::to_lower(args[i]) == "auth" && i + 2 < args.size()) {
      i += 2;  // AUTH user password
      continue;
    }
    out.push_back(args[i]);
  }
  return out;
}

/// Whether a request leaves state on its connection that other clients' requests must not
/// share: a transaction, a subscription, a block, another database or protocol.
bool keeps_state(const std::vector<std::string_view>& args) {
  if (args.empty()) {
    return false;
  }
  std::string name = engine::to_lower(args[0]);
  if (name == "multi" || name == "watch" || name == "subscribe" || name == "psubscribe" ||
      name == "ssubscribe" || name == "monitor" || name == "reset") {
    return true;
  }
  if (name == "select") {
    return args.size() < 2 || args[1] != "0";
  }
  if (name == "hello") {
    return args.size() >= 2 && args[1] != "2";
  }
  if (name == "client" && args.size() >= 2) {
    std::string sub = engine::to_lower(args[1]);
    return sub == "reply" || sub == "tracking" || sub == "no-evict" || sub == "no-touch";
  }
  static const kb::ProfileId k_profile = *kb::find_profile("valkey-8.0");
  const kb::KbCommand* row = kb::find_command(k_profile, name);
  return row != nullptr &&
         (" " + std::string(row->flags) + " ").find(" blocking ") != std::string::npos;
}

/// The recorded connections that send a request which keeps state (a pass over the file).
engine::Expected<std::unordered_set<uint64_t>, std::string> stateful_connections(
    const std::string& path) {
  auto reader = capture::CaptureFileReader::open(path);
  if (!reader) {
    return engine::Unexpected{
        fmt::format("{}: {} (at byte {})", path, reader.error().message, reader.error().offset)};
  }
  std::unordered_set<uint64_t> out;
  CaptureEvent e;
  engine::RequestParser parser;
  engine::RequestLimits limits;
  std::vector<std::string_view> args;
  while (reader->next(e)) {
    if (e.kind != EventKind::request || out.count(e.conn_id) != 0) {
      continue;
    }
    parser.reset();
    args.clear();
    if (parser.parse(e.bytes.data(), e.bytes.size(), limits) ==
        engine::RequestParser::Status::ready) {
      parser.args(e.bytes.data(), args);
    }
    if (keeps_state(args)) {
      out.insert(e.conn_id);
    }
  }
  return out;
}

class Replayer {
 public:
  /// `monitor`: the capture holds no replies (MONITOR), so each reply is judged alone.
  /// `routes`: the target is a cluster (null: one server).
  Replayer(const ReplayOptions& options, ReplayReport& report, bool monitor, ClusterRoutes* routes)
      : m_options(options),
        m_report(report),
        m_monitor(monitor),
        m_routes(routes),
        m_containers(container_commands()) {}

  /// --connections N: the recorded connections that keep state on their connection.
  void keep_own(std::unordered_set<uint64_t> stateful) { m_stateful = std::move(stateful); }

  engine::Expected<bool, std::string> request(const CaptureEvent& e) {
    if ((e.flags & capture::k_flag_nested) != 0) {
      ++m_report.skipped_nested;  // the script that ran it runs again on the target
      return true;
    }
    Conn& c = m_conns[e.conn_id];
    if (c.broken) {
      return true;
    }
    if (c.target == nullptr) {
      if (m_options.connections > 0 && m_stateful.count(e.conn_id) == 0) {
        if (m_pool.size() < m_options.connections) {
          m_pool.push_back(std::make_unique<TargetSide>(m_options.target, m_routes, k_window));
        }
        c.target = m_pool[m_next_shared++ % m_pool.size()].get();
      } else {
        c.target = &c.own_target.emplace(m_options.target, m_routes, k_window);
        m_report.dedicated += m_options.connections > 0 ? 1 : 0;
      }
      if (m_options.compare) {
        auto ref = engine::PipelinedConnection::connect(*m_options.compare, k_window);
        if (!ref) {
          return engine::Unexpected{ref.error()};
        }
        c.ref = std::move(*ref);
      }
    }
    std::vector<std::string_view>& args = m_args;
    args.clear();
    m_parser.reset();
    if (m_parser.parse(e.bytes.data(), e.bytes.size(), m_limits) ==
        engine::RequestParser::Status::ready) {
      m_parser.args(e.bytes.data(), args);
    }
    Pending p;
    p.command = command_name(args, m_containers);
    p.raw = e.bytes;  // cheaper than display() for every request, when few become examples
    p.recorded_start_ns = e.start_ns;
    if (m_first_ns == 0) {
      m_first_ns = e.start_ns;
      m_started = std::chrono::steady_clock::now();
    }
    double at_s = static_cast<double>(e.start_ns - m_first_ns) / 1e9;
    if ((m_options.from_s && at_s < *m_options.from_s) ||
        (m_options.until_s && at_s > *m_options.until_s)) {
      p.skip = true;
      ++m_report.outside_window;
    } else if (m_options.read_only && is_write(p.command)) {
      p.skip = true;
      ++m_report.skipped_writes;
    } else if (m_options.speed > 0) {
      if (auto flushed = flush_all(); !flushed) {
        return engine::Unexpected{flushed.error()};
      }
      pace(e.start_ns);
    }
    if (p.skip) {
      // left out: its reply is passed over
    } else if ((e.flags & capture::k_flag_redacted) != 0) {
      if (p.command == "hello") {
        std::vector<std::string_view> bare = hello_without_auth(args);
        auto sent = c.target->send_args(bare);
        if (!sent) {
          return engine::Unexpected{sent.error()};
        }
        p.sent_request = *sent;
        if (c.ref) {
          c.ref->send(std::span<const std::string_view>(bare));
        }
      } else {
        // AUTH, CONFIG SET requirepass, ...: the secret is gone; the target's own URL
        // carries its credentials.
        p.skip = true;
        ++m_report.skipped_redacted;
      }
    } else {
      // Sent under CLIENT REPLY OFF/SKIP at the source: no reply comes (a MONITOR capture
      // flags every command so, and its replies are awaited to judge them alone).
      bool silent = !m_monitor && (e.flags & capture::k_flag_no_reply) != 0;
      auto sent = c.target->send(args, e.bytes, !silent);
      if (!sent) {
        return engine::Unexpected{sent.error()};
      }
      p.sent_request = *sent;
      p.resend = m_routes != nullptr;
      if (c.ref) {
        c.ref->send_raw(e.bytes, silent ? 0 : 1);
      }
    }
    if (!p.skip) {
      ++m_report.requests;
      // Written when a reply is next awaited (or a batch has built up): one write per
      // pipeline instead of one per request, and still before anything is awaited that
      // the recording shows came after it.
      if (m_dirty.empty() || m_dirty.back().target != c.target) {
        m_dirty.push_back({c.target, c.ref ? &*c.ref : nullptr});
      }
      if (++m_unflushed >= k_flush_batch) {
        if (auto flushed = flush_all(); !flushed) {
          return engine::Unexpected{flushed.error()};
        }
      }
    }
    p.sent = std::chrono::steady_clock::now();
    if (m_monitor && !p.skip) {
      return judge_alone(e, c, p);
    }
    if ((e.flags & capture::k_flag_no_reply) == 0 || p.skip) {
      c.pending.push_back(std::move(p));
    }
    return true;
  }

  engine::Expected<bool, std::string> reply(const CaptureEvent& e) {
    auto it = m_conns.find(e.conn_id);
    if (it == m_conns.end() || it->second.broken || !it->second.target) {
      return true;
    }
    Conn& c = it->second;
    Pending p;
    if (!c.pending.empty()) {
      p = std::move(c.pending.front());
      c.pending.pop_front();
      c.last_command = p.command;
      c.last_skipped = p.skip;
      c.last_request = p.sent_request;
    } else if (c.last_skipped) {
      return true;  // more replies of a request that was not sent (SUBSCRIBE a b, its pushes)
    } else {
      // A push, or the second confirmation of SUBSCRIBE a b: one more reply to wait for.
      p.command = c.last_command;
      p.sent = std::chrono::steady_clock::now();
      p.recorded_start_ns = e.start_ns;
      p.sent_request = c.target->expect_more(c.last_request);
      c.last_request = p.sent_request;
      if (c.ref) {
        c.ref->send_raw(std::string_view("", 0), 1);
      }
    }
    if (p.skip) {
      return true;
    }
    if (auto flushed = flush_all(); !flushed) {
      return engine::Unexpected{flushed.error()};
    }
    ++m_report.replies;
    ReplayCommandCounts& counts = m_report.commands[p.command];
    ++counts.replies;
    auto got = c.target->wait(p.sent_request, resend_bytes(p), m_options.reply_timeout);
    if (!got) {
      c.broken = true;
      note(e, p, ReplyVerdict::no_reply, got.error(), counts);
      return true;
    }
    m_replayed_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now() - p.sent)
                                .count());
    if (e.end_ns >= p.recorded_start_ns && p.recorded_start_ns > 0) {
      m_recorded_ns.push_back(e.end_ns - p.recorded_start_ns);
    }
    // The view stays valid until this connection's next wait.
    std::string_view got_bytes = got->bytes;
    if (c.ref) {
      return against_reference(e, c, p, *got, got_bytes, counts);
    }
    ReplyVerdict v = ReplyVerdict::same;
    if ((e.flags & capture::k_flag_redacted) != 0) {
      // The recorded reply's secrets were replaced: the target's are too before comparing.
      std::string redacted(got_bytes);
      capture::redact_reply(redacted);
      engine::ReplyView view = *got;
      view.bytes = redacted;
      v = compare(p.command, e.bytes, view);
    } else {
      v = compare(p.command, e.bytes, *got);
    }
    note(e, p, v, got_bytes, counts);
    return true;
  }

  engine::Expected<bool, std::string> close(const CaptureEvent& e) {
    auto it = m_conns.find(e.conn_id);
    if (it == m_conns.end()) {
      return true;
    }
    if (auto flushed = flush_all(); !flushed) {
      return flushed;
    }
    {
      retire(it->second);
      m_conns.erase(it);
    }
    return true;
  }

  engine::Expected<bool, std::string> finish() {
    // Requests after the last awaited reply still go out.
    auto flushed = flush_all();
    for (auto& [id, c] : m_conns) {
      retire(c);
    }
    m_conns.clear();
    for (const std::unique_ptr<TargetSide>& shared : m_pool) {
      m_report.connections += shared->connections();
    }
    m_report.shared_connections = static_cast<uint32_t>(m_pool.size());
    if (m_routes != nullptr) {
      m_report.redirects = m_routes->redirects();
    }
    m_report.recorded = percentiles(m_recorded_ns);
    m_report.replayed = percentiles(m_replayed_ns);
    return flushed;
  }

 private:
  static bool is_write(const std::string& command) {
    static const kb::ProfileId k_profile = *kb::find_profile("valkey-8.0");
    const kb::KbCommand* row = kb::find_command(k_profile, command);
    return row != nullptr &&
           (" " + std::string(row->flags) + " ").find(" write ") != std::string::npos;
  }

  static std::string_view resend_bytes(const Pending& p) {
    return p.resend ? std::string_view(p.raw) : std::string_view();
  }

  /// The request as an example shows it.
  std::string display_request(std::string_view raw) {
    m_args.clear();
    m_parser.reset();
    if (m_parser.parse(raw.data(), raw.size(), m_limits) == engine::RequestParser::Status::ready) {
      m_parser.args(raw.data(), m_args);
    }
    return display(m_args);
  }

  /// Writes every request queued since the last flush, target and --compare side.
  engine::Expected<bool, std::string> flush_all() {
    m_unflushed = 0;
    for (const Dirty& d : m_dirty) {
      if (auto flushed = d.target->flush(); !flushed) {
        m_dirty.clear();
        return flushed;
      }
      if (d.ref != nullptr && d.ref->flush() == engine::PipelinedConnection::Io::failed) {
        m_dirty.clear();
        return engine::Unexpected{d.ref->error()};
      }
    }
    m_dirty.clear();
    return true;
  }

  /// Waits until the request recorded at `at_ns` is due at the chosen speed.
  void pace(int64_t at_ns) {
    auto due = m_started + std::chrono::nanoseconds(static_cast<int64_t>(
                               static_cast<double>(at_ns - m_first_ns) / m_options.speed));
    auto now = std::chrono::steady_clock::now();
    if (due > now) {
      if (m_options.wait) {
        m_options.wait(due - now);
      }
    } else {
      double behind = std::chrono::duration<double, std::milli>(now - due).count();
      m_report.behind_max_ms = std::max(m_report.behind_max_ms, behind);
    }
  }

  /// A command the source ran, with no reply recorded: its reply is awaited now and only an
  /// error counts against the target.
  engine::Expected<bool, std::string> judge_alone(const CaptureEvent& e, Conn& c,
                                                  const Pending& p) {
    if (auto flushed = flush_all(); !flushed) {
      return engine::Unexpected{flushed.error()};
    }
    ++m_report.replies;
    ReplayCommandCounts& counts = m_report.commands[p.command];
    ++counts.replies;
    auto got = c.target->wait(p.sent_request, resend_bytes(p), m_options.reply_timeout);
    if (!got) {
      c.broken = true;
      note(e, p, ReplyVerdict::no_reply, got.error(), counts);
      return true;
    }
    m_replayed_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now() - p.sent)
                                .count());
    if (c.ref) {
      return against_reference(e, c, p, *got, got->bytes, counts);
    }
    note(e, p, got->is_error ? ReplyVerdict::refused : ReplyVerdict::accepted, got->bytes, counts);
    return true;
  }

  /// --compare: the target's reply `got` (its bytes also in `got_bytes`) is judged against
  /// the reference server's reply to the same request, not against the recording.
  engine::Expected<bool, std::string> against_reference(const CaptureEvent& e, Conn& c,
                                                        const Pending& p,
                                                        const engine::ReplyView& got,
                                                        std::string_view got_bytes,
                                                        ReplayCommandCounts& counts) {
    auto ref = c.ref->wait_reply(m_options.reply_timeout);
    if (!ref) {
      return engine::Unexpected{m_options.compare->describe() + ": " + ref.error()};
    }
    ReplyVerdict v = compare(p.command, ref->bytes, got);
    note(e, p, v, got_bytes, counts, ref->bytes);
    return true;
  }

  /// Counts verdict `v` of `got`, compared with the recorded reply or, when given, with
  /// `reference` (--compare).
  void note(const CaptureEvent& e, const Pending& p, ReplyVerdict v, std::string_view got,
            ReplayCommandCounts& counts, std::optional<std::string_view> reference = std::nullopt) {
    ++m_report.verdicts[v];
    switch (v) {
      case ReplyVerdict::same:
      case ReplyVerdict::same_unordered:
      case ReplyVerdict::accepted:
        ++counts.same;
        return;
      case ReplyVerdict::varies:
        ++counts.varies;
        return;
      case ReplyVerdict::error_text:
        ++counts.error_text;
        break;
      case ReplyVerdict::differs:
      case ReplyVerdict::no_reply:
      case ReplyVerdict::refused:
        ++counts.differs;
        break;
    }
    if (m_report.examples.size() < m_options.max_examples) {
      m_report.examples.push_back(
          {e.conn_id, p.command, display_request(p.raw),
           shown_reply(reference ? *reference : e.bytes),
           v == ReplyVerdict::no_reply ? std::string(got) : shown_reply(got), v});
    }
  }

  /// Counts what a connection opened on the target.
  void retire(Conn& c) {
    if (c.own_target) {
      m_report.connections += c.own_target->connections();
      c.own_target.reset();
    }
    c.target = nullptr;
  }

  const ReplayOptions& m_options;
  ReplayReport& m_report;
  bool m_monitor = false;
  ClusterRoutes* m_routes = nullptr;
  std::unordered_set<uint64_t> m_stateful;  // --connections N: these keep their own
  std::unordered_set<std::string> m_containers;
  // Reused for every request, so that parsing one allocates nothing.
  engine::RequestParser m_parser;
  engine::RequestLimits m_limits;
  std::vector<std::string_view> m_args;
  /// A connection with requests queued and not yet written.
  struct Dirty {
    TargetSide* target;
    engine::PipelinedConnection* ref;  // --compare's connection, or null
  };
  std::vector<Dirty> m_dirty;
  uint32_t m_unflushed = 0;  // requests queued since the last flush_all
  std::vector<std::unique_ptr<TargetSide>> m_pool;
  uint64_t m_next_shared = 0;
  int64_t m_first_ns = 0;
  std::chrono::steady_clock::time_point m_started;
  std::unordered_map<uint64_t, Conn> m_conns;
  std::vector<int64_t> m_recorded_ns;
  std::vector<int64_t> m_replayed_ns;
};

}  // namespace

std::string_view verdict_name(ReplyVerdict verdict) {
  switch (verdict) {
    case ReplyVerdict::same:
      return "same";
    case ReplyVerdict::same_unordered:
      return "same-unordered";
    case ReplyVerdict::varies:
      return "varies";
    case ReplyVerdict::error_text:
      return "error-text";
    case ReplyVerdict::differs:
      return "differs";
    case ReplyVerdict::no_reply:
      return "no-reply";
    case ReplyVerdict::accepted:
      return "accepted";
    case ReplyVerdict::refused:
      return "refused";
  }
  return "?";
}

bool ReplayReport::same() const {
  for (ReplyVerdict v : {ReplyVerdict::differs, ReplyVerdict::no_reply, ReplyVerdict::refused}) {
    if (auto it = verdicts.find(v); it != verdicts.end() && it->second > 0) {
      return false;
    }
  }
  return true;
}

engine::Expected<ReplayReport, std::string> replay_capture(const ReplayOptions& options) {
  auto start = std::chrono::steady_clock::now();
  auto reader = capture::CaptureFileReader::open(options.file);
  if (!reader) {
    return engine::Unexpected{fmt::format("{}: {} (at byte {})", options.file,
                                          reader.error().message, reader.error().offset)};
  }
  ReplayReport report;
  report.file = options.file;
  report.speed = options.speed;
  report.target = options.target.describe();
  if (options.compare) {
    report.compared_with = options.compare->describe();
  }
  const std::string* method = reader->header().find("capture.method");
  report.replies_recorded = method == nullptr || !method->starts_with("monitor");
  auto routes = ClusterRoutes::open(options.target);
  if (!routes) {
    return engine::Unexpected{routes.error()};
  }
  report.cluster = *routes != nullptr;
  Replayer replayer(options, report, !report.replies_recorded, routes->get());
  if (options.connections > 0) {
    auto stateful = stateful_connections(options.file);
    if (!stateful) {
      return engine::Unexpected{stateful.error()};
    }
    replayer.keep_own(std::move(*stateful));
  }
  CaptureEvent e;
  while (reader->next(e)) {
    switch (e.kind) {
      case EventKind::open:
        break;
      case EventKind::request:
        if (auto ok = replayer.request(e); !ok) {
          return engine::Unexpected{ok.error()};
        }
        break;
      case EventKind::reply:
        if (auto ok = replayer.reply(e); !ok) {
          return engine::Unexpected{ok.error()};
        }
        break;
      case EventKind::close:
        if (auto ok = replayer.close(e); !ok) {
          return engine::Unexpected{ok.error()};
        }
        break;
      case EventKind::drop: {
        uint64_t n = 0;
        for (char ch : e.bytes) {
          if (ch >= '0' && ch <= '9') {
            n = n * 10 + static_cast<uint64_t>(ch - '0');
          }
        }
        report.dropped_bytes += n;
        break;
      }
    }
  }
  report.damage = reader->damage();
  if (auto ok = replayer.finish(); !ok) {
    return engine::Unexpected{ok.error()};
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

std::string render_replay_text(const ReplayReport& r) {
  std::string out = fmt::format("replay of {} against {}\n", r.file, r.target);
  if (!r.compared_with.empty()) {
    out += fmt::format("  replies compared with those of {}, not with the recorded ones\n",
                       r.compared_with);
  }
  if (r.shared_connections > 0) {
    out += fmt::format(
        "  {} shared connection(s) for the recorded ones that keep no state; {} kept their "
        "own (MULTI, SUBSCRIBE, blocking, SELECT, ...)\n",
        r.shared_connections, r.dedicated);
  }
  if (r.cluster) {
    out += fmt::format(
        "  the target is a cluster: each request went to its slot's primary ({} redirect(s) "
        "followed)\n",
        r.redirects);
  }
  out += fmt::format("  {} connection(s), {} request(s) sent, {} reply(ies) compared in {:.2f} s\n",
                     r.connections, r.requests, r.replies, r.seconds);
  for (const auto& [v, n] : r.verdicts) {
    out += fmt::format("  {:<15} {}\n", verdict_name(v), n);
  }
  if (!r.replies_recorded && r.compared_with.empty()) {
    out +=
        "  the capture holds no replies (MONITOR): each reply is judged alone, an error "
        "being a command the target refused\n";
  }
  if (r.skipped_nested > 0) {
    out += fmt::format("  {} command(s) a script ran were left to the script\n", r.skipped_nested);
  }
  if (r.skipped_redacted > 0) {
    out += fmt::format("  {} redacted request(s) not sent (the target URL carries the password)\n",
                       r.skipped_redacted);
  }
  if (r.recorded.samples > 0 || r.replayed.samples > 0) {
    out += fmt::format("  latency p50/p99: recorded {:.0f}/{:.0f} us, replayed {:.0f}/{:.0f} us\n",
                       r.recorded.p50_us, r.recorded.p99_us, r.replayed.p50_us, r.replayed.p99_us);
  }
  bool header = false;
  for (const auto& [name, c] : r.commands) {
    if (c.differs + c.error_text == 0) {
      continue;
    }
    if (!header) {
      out += "  commands that answered differently:\n";
      header = true;
    }
    out += fmt::format("    {:<20} {} of {} differ, {} error text(s)\n", name, c.differs, c.replies,
                       c.error_text);
  }
  for (const ReplayExample& x : r.examples) {
    out += fmt::format("  {} on connection {}: {}\n    recorded: {}\n    replayed: {}\n",
                       verdict_name(x.verdict), x.conn, x.request, x.recorded, x.replayed);
  }
  if (r.dropped_bytes > 0) {
    out += fmt::format("  warning: the capture lost {} byte(s) while recording\n", r.dropped_bytes);
  }
  if (r.damage) {
    out += fmt::format(
        "  warning: the file is damaged at byte {} ({}): what came before it "
        "was replayed\n",
        r.damage->offset, r.damage->reason);
  }
  if (r.compared_with.empty()) {
    out += r.same() ? "verdict: the target answered as recorded\n"
                    : "verdict: the target answered differently\n";
  } else {
    out += r.same() ? "verdict: the target answered as " + r.compared_with + " did\n"
                    : "verdict: the target answered differently from " + r.compared_with + "\n";
  }
  return out;
}

std::string render_replay_json(const ReplayReport& r) {
  std::string j = "{\"file\":";
  append_json_bytes(j, r.file);
  j += ",\"target\":";
  append_json_bytes(j, r.target);
  j += fmt::format(",\"cluster\":{},\"redirects\":{},\"shared_connections\":{},\"dedicated\":{}",
                   r.cluster ? "true" : "false", r.redirects, r.shared_connections, r.dedicated);
  j += ",\"compared_with\":";
  if (r.compared_with.empty()) {
    j += "null";
  } else {
    append_json_bytes(j, r.compared_with);
  }
  j += fmt::format(
      ",\"connections\":{},\"requests\":{},\"skipped_redacted\":{},\"skipped_nested\":{},"
      "\"replies_recorded\":{},\"replies\":{},\"same\":{},\"verdicts\":{{",
      r.connections, r.requests, r.skipped_redacted, r.skipped_nested, r.replies_recorded,
      r.replies, r.same() ? "true" : "false");
  bool first = true;
  for (const auto& [v, n] : r.verdicts) {
    j += first ? "\"" : ",\"";
    first = false;
    j += std::string(verdict_name(v)) + "\":" + std::to_string(n);
  }
  j += "},\"commands\":{";
  first = true;
  for (const auto& [name, c] : r.commands) {
    j += first ? "" : ",";
    first = false;
    append_json_string(j, name);
    j += fmt::format(
        ":{{\"replies\":{},\"same\":{},\"varies\":{},\"error_text\":{},\"differs\":{}}}", c.replies,
        c.same, c.varies, c.error_text, c.differs);
  }
  j += "},\"examples\":[";
  for (size_t i = 0; i < r.examples.size(); ++i) {
    const ReplayExample& x = r.examples[i];
    j += fmt::format("{}{{\"conn\":{},\"verdict\":\"{}\",\"command\":", i == 0 ? "" : ",", x.conn,
                     verdict_name(x.verdict));
    append_json_string(j, x.command);
    j += ",\"request\":";
    append_json_bytes(j, x.request);
    j += ",\"recorded\":";
    append_json_bytes(j, x.recorded);
    j += ",\"replayed\":";
    append_json_bytes(j, x.replayed);
    j += "}";
  }
  auto latency = [&j](const ReplayLatency& l) {
    j += fmt::format(
        "{{\"samples\":{},\"p50_us\":{:.1f},\"p90_us\":{:.1f},\"p99_us\":{:.1f},"
        "\"p999_us\":{:.1f},\"max_us\":{:.1f}}}",
        l.samples, l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.max_us);
  };
  j += "],\"latency\":{\"recorded\":";
  latency(r.recorded);
  j += ",\"replayed\":";
  latency(r.replayed);
  j += fmt::format(
      "}},\"skipped_writes\":{},\"outside_window\":{},\"speed\":{},\"behind_max_ms\":{:.1f},"
      "\"dropped_bytes\":{},\"damage\":",
      r.skipped_writes, r.outside_window, r.speed, r.behind_max_ms, r.dropped_bytes);
  if (r.damage) {
    j += fmt::format("{{\"offset\":{},\"reason\":", r.damage->offset);
    append_json_string(j, r.damage->reason);
    j += "}";
  } else {
    j += "null";
  }
  j += fmt::format(",\"seconds\":{:.3f}}}\n", r.seconds);
  return j;
}

std::string render_replay_html(const ReplayReport& r) {
  std::string out =
      html_page_start("keyshift replay",
                      ".v-same,.v-same-unordered,.v-accepted{color:#1a7f37}"
                      ".v-differs,.v-no-reply,.v-refused{color:#cf222e;font-weight:600}"
                      ".v-varies,.v-error-text{color:#9a6700;font-weight:600}"
                      "td code{white-space:pre-wrap;word-break:break-all}");
  out += "<p class=\"meta\">" +
         html_escape(fmt::format("{} replayed against {}", r.file, r.target)) + "</p>\n";
  if (!r.compared_with.empty()) {
    out += "<p class=\"meta\">" +
           html_escape("replies compared with those of " + r.compared_with +
                       ", not with the recorded ones") +
           "</p>\n";
  }
  out += "<p class=\"meta\">" +
         html_escape(fmt::format("{} connection(s), {} request(s) sent, {} reply(ies) compared "
                                 "in {:.2f} s; speed {}",
                                 r.connections, r.requests, r.replies, r.seconds,
                                 r.speed == 0 ? std::string("max") : fmt::format("{}x", r.speed))) +
         "</p>\n";
  std::string verdict = r.same() ? "the target answered alike" : "the target answered differently";
  out += fmt::format("<p class=\"{}\"><strong>{}</strong></p>\n", r.same() ? "meta" : "warning",
                     html_escape(verdict));
  if (r.damage) {
    out += "<p class=\"warning\">" +
           html_escape(fmt::format("the file is damaged at byte {} ({}): what came before it was "
                                   "replayed",
                                   r.damage->offset, r.damage->reason)) +
           "</p>\n";
  }
  if (r.dropped_bytes > 0) {
    out +=
        "<p class=\"warning\">" +
        html_escape(fmt::format("the capture lost {} byte(s) while recording", r.dropped_bytes)) +
        "</p>\n";
  }
  // Replies by verdict, as bars.
  uint64_t most = 1;
  for (const auto& [v, n] : r.verdicts) {
    most = std::max(most, n);
  }
  out += fmt::format(
      "<figure class=\"chart\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"560\" "
      "height=\"{}\" role=\"img\" aria-label=\"replies by verdict\">\n",
      static_cast<int>(r.verdicts.size()) * 28 + 8);
  int y = 4;
  for (const auto& [v, n] : r.verdicts) {
    int width = static_cast<int>(360.0 * static_cast<double>(n) / static_cast<double>(most));
    bool good =
        v == ReplyVerdict::same || v == ReplyVerdict::same_unordered || v == ReplyVerdict::accepted;
    bool bad =
        v == ReplyVerdict::differs || v == ReplyVerdict::no_reply || v == ReplyVerdict::refused;
    out += fmt::format(
        "<text x=\"0\" y=\"{}\" font-size=\"13\">{}</text><rect x=\"120\" y=\"{}\" "
        "width=\"{}\" height=\"20\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" "
        "font-size=\"13\">{}</text>\n",
        y + 15, verdict_name(v), y, std::max(width, 1),
        good ? "#1a7f37" : (bad ? "#cf222e" : "#bf8700"), 126 + width, y + 15, n);
    y += 28;
  }
  out += "</svg><figcaption>Replies by verdict</figcaption></figure>\n";
  out +=
      "<h2>Latency</h2>\n<div class=\"scroll\"><table><thead><tr><th></th><th>samples</th>"
      "<th>p50 us</th><th>p90 us</th><th>p99 us</th><th>p99.9 us</th><th>max us</th></tr>"
      "</thead><tbody>\n";
  for (auto [name, l] : {std::pair{"recorded", &r.recorded}, {"replayed", &r.replayed}}) {
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td>"
        "<td>{:.1f}</td></tr>\n",
        name, l->samples, l->p50_us, l->p90_us, l->p99_us, l->p999_us, l->max_us);
  }
  out += "</tbody></table></div>\n";
  out +=
      "<h2>Commands</h2>\n<div class=\"scroll\"><table><thead><tr><th>command</th>"
      "<th>replies</th><th>same</th><th>varies</th><th>error text</th><th>differs</th></tr>"
      "</thead><tbody>\n";
  for (const auto& [name, c] : r.commands) {
    out += fmt::format(
        "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td{}>{}</td>"
        "<td{}>{}</td></tr>\n",
        html_escape(name), c.replies, c.same, c.varies,
        c.error_text > 0 ? " class=\"v-error-text\"" : "", c.error_text,
        c.differs > 0 ? " class=\"v-differs\"" : "", c.differs);
  }
  out += "</tbody></table></div>\n";
  if (!r.examples.empty()) {
    out += fmt::format(
        "<h2>Examples</h2>\n<div class=\"scroll\"><table><thead><tr><th>verdict</th>"
        "<th>connection</th><th>request</th><th>{}</th><th>replayed</th></tr></thead>"
        "<tbody>\n",
        r.compared_with.empty() ? "recorded" : "reference");
    for (const ReplayExample& x : r.examples) {
      out += fmt::format(
          "<tr><td class=\"v-{0}\">{0}</td><td>{1}</td><td><code>{2}</code></td>"
          "<td><code>{3}</code></td><td><code>{4}</code></td></tr>\n",
          verdict_name(x.verdict), x.conn, html_escape(x.request), html_escape(x.recorded),
          html_escape(x.replayed));
    }
    out += "</tbody></table></div>\n";
  }
  out += html_page_end();
  return out;
}

}  // namespace keyshift::compat::replay
