#pragma once

#include "compat/capture/capture_file.hpp"
#include "engine/resp/connection.hpp"
#include "engine/util/expected.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

// `keyshift replay FILE`: a capture's requests sent again to a target, in the order the file
// recorded them across all of its connections (so a write on one connection still comes
// before the read another connection made after it, and a blocking command's unblocker is
// sent before its reply is awaited), one target connection per recorded connection. Each
// recorded reply is compared with the target's: byte for byte, then as the command table
// says (replies in no defined order compared as multisets, replies that vary by nature
// counted apart), errors by class when only their text differs. Latency is measured per
// request on both sides.
namespace keyshift::compat::replay {

/// How to replay.
struct ReplayOptions {
  std::string file;
  engine::RespEndpoint target;
  /// A reply that has not come after this long ends that connection's replay.
  std::chrono::milliseconds reply_timeout = std::chrono::seconds(5);
  /// Differing replies kept as examples.
  size_t max_examples = 20;
  /// Pacing: 0 sends as fast as the target answers; 1 at the recorded pace, 2 twice as fast.
  double speed = 0;
  /// Leave out write commands (the command table's write flag) and their replies.
  bool read_only = false;
  /// Only requests recorded this many seconds after the capture's first one, and before.
  std::optional<double> from_s;
  std::optional<double> until_s;
  /// 0: one target connection per recorded connection. N: the recorded connections that
  /// keep no state on their connection share N (round robin); those that do (MULTI, WATCH,
  /// SUBSCRIBE, blocking commands, SELECT, HELLO 3, CLIENT REPLY/TRACKING, MONITOR) keep
  /// their own.
  uint32_t connections = 0;
  /// A second server: every request goes to it too, and the target's replies are compared
  /// with its replies instead of the recorded ones (a MONITOR capture then gets compared).
  std::optional<engine::RespEndpoint> compare;
  /// Waits while pacing; tests pass one that does not sleep.
  std::function<void(std::chrono::nanoseconds)> wait;
};

/// How one reply compared.
enum class ReplyVerdict : uint8_t {
  same,            ///< byte for byte
  same_unordered,  ///< the same elements in another order, where the command has no order
  varies,          ///< the command's output varies by nature (TIME, INFO, RANDOMKEY, ...)
  error_text,      ///< both are errors of the same class with other text
  differs,
  no_reply,  ///< the target sent nothing within the timeout
  // Captures without replies (MONITOR logs): what the target made of a command the source ran.
  accepted,  ///< answered without an error (nothing recorded to compare with)
  refused,   ///< answered with an error, where the source had run the command
};

/// The name of a verdict as the reports print it.
std::string_view verdict_name(ReplyVerdict verdict);

/// A reply that differed.
struct ReplayExample {
  uint64_t conn = 0;
  std::string command;  ///< lower case, "client|list" for a subcommand
  std::string request;  ///< the request as redis-cli would show it (cut)
  std::string recorded;
  std::string replayed;
  ReplyVerdict verdict = ReplyVerdict::differs;
};

/// Counts of one command.
struct ReplayCommandCounts {
  uint64_t replies = 0;
  uint64_t same = 0;  ///< same and same_unordered
  uint64_t varies = 0;
  uint64_t error_text = 0;
  uint64_t differs = 0;  ///< differs, no_reply and refused
};

/// Latency percentiles of one side, microseconds.
struct ReplayLatency {
  uint64_t samples = 0;
  double p50_us = 0;
  double p90_us = 0;
  double p99_us = 0;
  double p999_us = 0;
  double max_us = 0;
};

/// What a replay found.
struct ReplayReport {
  std::string file;
  std::string target;
  std::string compared_with;        ///< the --compare server; empty: the recorded replies
  bool cluster = false;             ///< the target is a cluster: requests routed by slot
  uint32_t shared_connections = 0;  ///< --connections N
  uint64_t dedicated = 0;           ///< recorded connections that kept their own (state)
  uint64_t redirects = 0;           ///< MOVED/ASK answers followed (a cluster target)
  uint64_t connections = 0;
  uint64_t requests = 0;          ///< sent to the target
  uint64_t skipped_redacted = 0;  ///< redacted at capture time (AUTH, ...): not sent
  uint64_t skipped_nested = 0;    ///< run by a script at the source: the script runs them here
  uint64_t skipped_writes = 0;    ///< --read-only
  uint64_t outside_window = 0;    ///< --from/--until
  double speed = 0;
  double behind_max_ms = 0;      ///< how far pacing fell behind the recorded times at worst
  bool replies_recorded = true;  ///< false for a MONITOR capture
  uint64_t replies = 0;          ///< recorded replies compared
  std::map<ReplyVerdict, uint64_t> verdicts;
  std::map<std::string, ReplayCommandCounts> commands;
  std::vector<ReplayExample> examples;
  ReplayLatency recorded;
  ReplayLatency replayed;
  uint64_t dropped_bytes = 0;  ///< the capture lost these while recording
  std::optional<capture::CaptureDamage> damage;
  double seconds = 0;
  /// True when no reply differs and none is missing.
  bool same() const;
};

/// Replays `options.file` against `options.target`. Errors: the file is not a capture, or
/// the target cannot be reached.
engine::Expected<ReplayReport, std::string> replay_capture(const ReplayOptions& options);

/// The report for a terminal.
std::string render_replay_text(const ReplayReport& report);
/// The report as one JSON object (keyshift-replay(1)), newline-terminated.
std::string render_replay_json(const ReplayReport& report);
/// The report as a self-contained HTML page (the style of every keyshift report).
std::string render_replay_html(const ReplayReport& report);

}  // namespace keyshift::compat::replay
