#include "engine/repl/replication_state.hpp"

#include <utility>

namespace keyshift::engine {

std::string_view repl_link_state_name(ReplLinkState state) {
  switch (state) {
    case ReplLinkState::none:
      return "none";
    case ReplLinkState::connect:
      return "connect";
    case ReplLinkState::connecting:
      return "connecting";
    case ReplLinkState::sync:
      return "sync";
    case ReplLinkState::connected:
      return "connected";
  }
  return "unknown";
}

ReplicationState::ReplicationState(std::string replid) : m_replid(std::move(replid)) {}

bool ReplicationState::follow(std::string host, int port) {
  if (is_replica() && host == m_host && port == m_port) {
    return false;
  }
  m_host = std::move(host);
  m_port = port;
  m_state = ReplLinkState::connect;
  ++m_generation;
  m_read_offset = m_offset;
  return true;
}

bool ReplicationState::promote(std::string new_replid) {
  if (!is_replica()) {
    return false;
  }
  m_host.clear();
  m_port = 0;
  m_state = ReplLinkState::none;
  ++m_generation;
  m_replid2 = std::exchange(m_replid, std::move(new_replid));
  m_second_offset = static_cast<int64_t>(m_offset) + 1;
  m_down_since_ms = 0;
  return true;
}

void ReplicationState::on_connecting() {
  if (m_state == ReplLinkState::connect) {
    m_state = ReplLinkState::connecting;
  }
}

void ReplicationState::on_psync(bool full, const std::string& replid, uint64_t offset) {
  if (full) {
    // A new dataset: its history replaces ours, and nothing of the old one is valid.
    m_replid = replid;
    m_replid2 = std::string(40, '0');
    m_second_offset = -1;
    m_offset = offset;
    m_read_offset = offset;
    m_state = ReplLinkState::sync;
    m_loading = false;  // the old data is served until the payload starts
    return;
  }
  if (replid != m_replid) {
    // The primary was promoted since: our history goes on under its new ID.
    m_replid2 = std::exchange(m_replid, replid);
    m_second_offset = static_cast<int64_t>(m_offset) + 1;
  }
  m_has_history = true;
  m_state = ReplLinkState::connected;
  m_down_since_ms = 0;
}

void ReplicationState::on_loaded() {
  m_loading = false;
  m_has_history = true;
  m_state = ReplLinkState::connected;
  m_down_since_ms = 0;
}

void ReplicationState::on_link_lost(int64_t now_ms) {
  if (!is_replica()) {
    return;
  }
  if (m_state == ReplLinkState::sync) {
    // A payload cut short leaves a partial dataset: only a full sync can repair it.
    m_has_history = false;
  }
  if (m_state == ReplLinkState::connected || m_down_since_ms == 0) {
    m_down_since_ms = now_ms;
  }
  m_state = ReplLinkState::connect;
  m_read_offset = m_offset;
  m_loading = false;
}

}  // namespace keyshift::engine
