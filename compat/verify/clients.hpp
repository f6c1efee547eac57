#pragma once

#include "compat/kb/knowledge_base.hpp"
#include "compat/monitor/monitor_log.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

// `keyshift verify clients`: what the clients of a server use, from what they sent (a MONITOR
// log or sample, a capture file, a replay report, INFO commandstats deltas), and whether a
// target server line has it, judged by the knowledge base and by what a replay saw.
namespace keyshift::compat {

/// How a used command or option fares on the target.
enum class ClientVerdict : uint8_t {
  ok,
  missing,            ///< the target has no such command (or option)
  differs,            ///< the target has it, and a behaviour note says how it differs
  depends_on_config,  ///< works where the target's configuration allows it
  module,             ///< a module command: needs the module on the target
  unknown,            ///< no server line the knowledge base knows has it
};

/// The verdict's name in reports: "ok", "missing", "differs", "config", "module", "unknown".
std::string_view client_verdict_name(ClientVerdict v);

/// One thing a client used: a command, a subcommand or an option word of one.
struct ClientUsage {
  std::string item;  ///< "hexpire", "client|setinfo", "set IFEQ"
  uint64_t count = 0;
  std::string example;  ///< the first use, secrets redacted, as MONITOR quotes it
  ClientVerdict verdict = ClientVerdict::ok;
  std::string detail;  ///< "valkey-9.0 has it", the note's text, ...
  std::string source;  ///< where the detail is documented
};

/// The usage of one client: a library on one host, or the commands scripts ran.
struct ClientGroup {
  std::string name;     ///< "phpredis 6.0", "redis-py 5.0.1", "unidentified client", "scripts"
  std::string address;  ///< host (no port), "unix:/path" or "lua"
  uint64_t connections = 0;
  uint64_t commands = 0;
  std::vector<ClientUsage> usage;  ///< by count, highest first
};

/// What verify clients found.
struct ClientsReport {
  kb::ProfileId source;
  kb::ProfileId target;
  bool source_given = false;  ///< false: the default source line was assumed
  std::vector<std::string> inputs;
  std::string method;  ///< "MONITOR log"
  uint64_t commands = 0;
  std::vector<ClientGroup> clients;
  std::vector<ClientUsage> overall;  ///< every item over all clients
  std::map<ClientVerdict, uint64_t> items_by_verdict;
  /// True when nothing used is missing, different, configuration-bound or a module command.
  bool all_ok() const;
};

/// Accumulates commands and judges them.
class ClientsAnalyzer {
 public:
  ClientsAnalyzer(kb::ProfileId source, kb::ProfileId target, bool source_given);
  ~ClientsAnalyzer();
  ClientsAnalyzer(const ClientsAnalyzer&) = delete;
  ClientsAnalyzer& operator=(const ClientsAnalyzer&) = delete;

  /// One monitored command.
  void add(const MonitorEntry& entry);
  /// One command a client sent: `conn` tells connections apart (a MONITOR peer, a capture's
  /// connection), `peer` says where it came from ("ip:port", "unix:path", "lua").
  void add_command(std::string_view conn, MonitorPeerKind kind, std::string_view peer,
                   std::span<const std::string_view> args);
  /// How a connection named itself when it opened (a capture's client lib "name ver", name).
  void name_connection(std::string_view conn, MonitorPeerKind kind, std::string_view peer,
                       std::string_view client_lib, std::string_view client_name);
  /// Calls per command without their clients or arguments (INFO commandstats deltas).
  void add_counts(const std::map<std::string, uint64_t>& calls);
  /// Calls per command seen by a replay (counts only, like commandstats, under `label`).
  void add_replayed_counts(std::string label, const std::map<std::string, uint64_t>& calls);
  /// What replaying against `target` showed for `command` ("get", "client|list"): of
  /// `replies` compared, `differs` differed and `error_text` differed only in error text.
  void add_replay_evidence(const std::string& command, std::string target, uint64_t replies,
                           uint64_t differs, uint64_t error_text, std::string source);
  /// Names an input for the report.
  void add_input(std::string name) { m_inputs.push_back(std::move(name)); }
  /// The report so far.
  ClientsReport report(std::string method) const;

 private:
  struct Item;
  struct Peer;
  struct CommandInfo;
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  /// What the knowledge base says about a command name (lower case, "client|setinfo"),
  /// looked up once per distinct name.
  const CommandInfo& command_info(std::string_view lower_name);
  /// The item ids one command counts as (command, then its option words that matter).
  void items_of(std::span<const std::string_view> args, std::vector<uint32_t>& out);
  uint32_t intern(std::string item);
  /// The knowledge base's verdict, then a replay's evidence over it.
  Item judge(const std::string& item) const;
  Item judge_by_kb(const std::string& item) const;
  Peer& peer_of(std::string_view conn, MonitorPeerKind kind, std::string_view peer);
  void add_counts_as(std::string_view conn, std::string label, std::string_view example,
                     const std::map<std::string, uint64_t>& calls);

  /// A replay's evidence for one command.
  struct Evidence {
    std::string target;
    uint64_t replies = 0;
    uint64_t differs = 0;
    uint64_t error_text = 0;
    std::string source;
  };

  kb::ProfileId m_source;
  kb::ProfileId m_target;
  bool m_source_given;
  std::vector<std::string> m_inputs;
  uint64_t m_commands = 0;
  std::unordered_map<std::string, std::unique_ptr<Peer>, StringHash, std::equal_to<>> m_peers;
  std::unordered_map<std::string, std::unique_ptr<CommandInfo>, StringHash, std::equal_to<>>
      m_commands_seen;
  std::vector<std::string> m_item_names;  ///< by item id
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> m_item_ids;
  std::vector<uint32_t> m_items_scratch;
  std::string m_name_scratch;
  std::map<std::string, Evidence, std::less<>> m_evidence;  ///< by command name
};

/// `args` with secrets (AUTH, HELLO AUTH, MIGRATE AUTH/AUTH2, CONFIG SET of passwords, ACL
/// SETUSER passwords) replaced by "(redacted)", MONITOR-quoted and joined, at most `max` bytes.
std::string redacted_example(std::span<const std::string_view> args, size_t max = 200);

/// The report as text, Markdown, JSON, a self-contained HTML page, or JUnit XML.
std::string render_clients_text(const ClientsReport& r);
std::string render_clients_markdown(const ClientsReport& r);
std::string render_clients_json(const ClientsReport& r);
std::string render_clients_html(const ClientsReport& r);
std::string render_clients_junit(const ClientsReport& r);

}  // namespace keyshift::compat
