#pragma once

#include "compat/verify/clients.hpp"
#include "engine/util/expected.hpp"

#include <cstdint>
#include <optional>
#include <string>

// The inputs of `verify clients` beyond MONITOR text: capture files and replay reports, each
// read into a ClientsAnalyzer, and the sniffing that tells the kinds apart by their first bytes.
namespace keyshift::compat {

/// Reads a capture file (keyshift-capture(5)) into `analyzer`, one connection per client.
/// A damaged tail is not an error: the records before it count, and the returned note (empty
/// for a whole file) says where reading stopped. Errors: not a capture, unreadable.
engine::Expected<std::string, std::string> read_capture_for_clients(const std::string& path,
                                                                    ClientsAnalyzer& analyzer);

/// Reads the JSON report of `keyshift replay --format json` into `analyzer`: its per-command
/// counts, and where replies differed, that evidence. The error, if any, names the file and
/// byte offset.
std::optional<std::string> read_replay_report_for_clients(const std::string& path,
                                                          ClientsAnalyzer& analyzer);

/// What kind of file `path` holds, by its first bytes: a capture, a JSON report, or text.
enum class ClientsInputKind : uint8_t { monitor_log, capture, replay_report };
/// Sniffs `path` (standard input, "-", is a MONITOR log); errors name the file.
engine::Expected<ClientsInputKind, std::string> sniff_clients_input(const std::string& path);

}  // namespace keyshift::compat
