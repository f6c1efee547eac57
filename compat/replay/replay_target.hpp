#pragma once

#include "engine/commands/registry.hpp"
#include "engine/resp/cluster_map.hpp"
#include "engine/resp/connection.hpp"
#include "engine/resp/pipelined_connection.hpp"
#include "engine/util/expected.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

// Where one recorded connection's requests go when replayed: one server, or a cluster, sent
// as a cluster client sends them. Into a cluster each request goes to the primary serving its
// keys' slot (a request over several slots to the first key's, which answers CROSSSLOT as a
// cluster does); MOVED and ASK are followed; MULTI waits for the transaction's first key to
// pick its node; the commands that set a connection up (HELLO, SELECT, CLIENT SETNAME and
// SETINFO) are repeated on every node connection opened later. Replies are matched to their
// requests whatever link they came back on.
namespace keyshift::compat::replay {

/// The slot map a replay into a cluster shares across its connections, and the command
/// table that finds each request's keys.
class ClusterRoutes {
 public:
  /// Reads the map from `seed`; an error when `seed` is not a cluster node.
  static engine::Expected<std::unique_ptr<ClusterRoutes>, std::string> open(
      const engine::RespEndpoint& seed);

  /// The node serving `slot`, or -1.
  int owner(uint16_t slot) const { return m_map.owner(slot); }
  /// Records a MOVED answer: `slot` is served by host:port now; returns its node index.
  int moved(uint16_t slot, std::string_view host, int port);
  /// The index of the node at host:port (added when new).
  int node_at(std::string_view host, int port) { return m_map.node_at(host, port); }
  /// How to reach node `index`.
  engine::RespEndpoint endpoint(int index) const;
  /// The slot of `args`' first key, or nothing for a keyless command.
  std::optional<uint16_t> slot_of(std::span<const std::string_view> args) const;
  /// Redirects followed so far.
  uint64_t redirects() const { return m_redirects; }

 private:
  ClusterRoutes(engine::RespEndpoint seed, engine::ClusterMap map);

  engine::RespEndpoint m_seed;
  engine::ClusterMap m_map;
  engine::CommandRegistry m_registry;
  uint64_t m_redirects = 0;
};

/// A request sent: the link it went to and its place in that link's replies.
struct SentRequest {
  int link = 0;
  uint64_t id = 0;
};

/// One recorded connection's side of the target.
class TargetSide {
 public:
  /// A side on one server (`routes` null) or on the cluster `routes` describes, whose
  /// connections follow `target`'s credentials and TLS.
  TargetSide(engine::RespEndpoint target, ClusterRoutes* routes, uint32_t window);

  /// Queues `raw` (the request's exact bytes; `args` its arguments) where it belongs.
  /// Without `expect_reply` (sent under CLIENT REPLY OFF/SKIP) no reply is waited for.
  engine::Expected<SentRequest, std::string> send(std::span<const std::string_view> args,
                                                  std::string_view raw, bool expect_reply = true);
  /// Queues a request given by its arguments (HELLO without its redacted AUTH).
  engine::Expected<SentRequest, std::string> send_args(std::span<const std::string_view> args);
  /// One more reply is expected after `after`'s, on its link (a push, a second SUBSCRIBE
  /// confirmation).
  SentRequest expect_more(const SentRequest& after);
  /// Writes what is queued.
  engine::Expected<bool, std::string> flush();
  /// The reply to `request`; a MOVED or ASK answer sends `raw` again where it points (a
  /// bounded number of times) and returns that reply. The view is valid until the next call.
  engine::Expected<engine::ReplyView, std::string> wait(const SentRequest& request,
                                                        std::string_view raw,
                                                        std::chrono::milliseconds timeout);
  /// Connections opened so far.
  uint64_t connections() const { return m_opened; }

 private:
  struct Link {
    engine::PipelinedConnection conn;
    std::deque<uint64_t> order;  // the request id of each reply still to come
  };
  /// The link to node `index` (the server: 0), opened and set up on first use.
  engine::Expected<Link*, std::string> link(int index);
  engine::Expected<SentRequest, std::string> queue(int index,
                                                   std::span<const std::string_view> args,
                                                   std::string_view raw, bool expect_reply);
  /// Where a request of `args` goes, given the transaction state; sends a deferred MULTI.
  engine::Expected<int, std::string> route(std::span<const std::string_view> args);
  engine::Expected<engine::ReplyView, std::string> wait_once(const SentRequest& request,
                                                             std::chrono::milliseconds timeout);
  void remember_setup(std::span<const std::string_view> args);

  static constexpr uint64_t k_nobody = 0;  // a reply no request waits for (setup, MULTI)
  static constexpr int k_deferred = -1;    // MULTI not sent yet

  engine::RespEndpoint m_target;
  ClusterRoutes* m_routes;
  uint32_t m_window;
  std::vector<std::unique_ptr<Link>> m_links;         // by node index; the server: [0]
  std::unordered_map<uint64_t, std::string> m_stash;  // replies read before their turn
  std::string m_last;                                 // the reply wait() returned last
  uint64_t m_next_id = 1;
  uint64_t m_opened = 0;
  int m_home = -1;  // where keyless requests go: the first node used
  std::vector<std::vector<std::string>> m_setup;
  bool m_in_multi = false;
  int m_multi_link = k_deferred;
  std::optional<uint64_t> m_multi_id;  // the deferred MULTI's id, until it is sent
  bool m_multi_answered = false;       // its reply was given (as +OK) before it was sent
  std::unordered_map<uint64_t, int> m_deferred_at;  // a deferred MULTI's id: where it went
};

}  // namespace keyshift::compat::replay
