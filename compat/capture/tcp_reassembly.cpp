#include "compat/capture/tcp_reassembly.hpp"

#include <algorithm>

namespace keyshift::compat::capture {

void TcpReassembler::start_at_syn(uint32_t isn) {
  if (m_started) {
    return;  // a retransmitted SYN
  }
  m_started = true;
  m_isn = isn;
  m_next = 0;
}

uint64_t TcpReassembler::offset_of(uint32_t seq) const {
  // Offset 0 is sequence number isn + 1; the 32-bit distance from the next expected byte,
  // read as signed, places seq within 2 GiB either side of it.
  auto next_seq = static_cast<uint32_t>(m_isn + 1 + static_cast<uint32_t>(m_next));
  auto delta = static_cast<int32_t>(seq - next_seq);
  auto off = static_cast<int64_t>(m_next) + delta;
  return off < 0 ? 0 : static_cast<uint64_t>(off);
}

void TcpReassembler::add(uint32_t seq, std::string_view payload, std::string& out) {
  if (payload.empty() || m_damaged) {
    return;
  }
  if (!m_started) {
    start_at_syn(seq - 1);
  }
  auto next_seq = static_cast<uint32_t>(m_isn + 1 + static_cast<uint32_t>(m_next));
  auto delta = static_cast<int64_t>(static_cast<int32_t>(seq - next_seq));
  auto end = delta + static_cast<int64_t>(payload.size());
  if (end <= 0) {
    m_stats.retransmitted += payload.size();
    return;
  }
  if (delta < 0) {
    // Overlaps what was delivered: only the new tail counts.
    m_stats.retransmitted += static_cast<uint64_t>(-delta);
    payload.remove_prefix(static_cast<size_t>(-delta));
    delta = 0;
  }
  uint64_t start = m_next + static_cast<uint64_t>(delta);
  if (start == m_next) {
    deliver(start, payload, out);
    drain(out);
    return;
  }
  auto it = m_hold.find(start);
  if (it != m_hold.end()) {
    if (it->second.size() >= payload.size()) {
      m_stats.retransmitted += payload.size();
      return;
    }
    m_stats.retransmitted += it->second.size();
    m_held -= it->second.size();
    it->second.assign(payload);
  } else {
    m_hold.emplace(start, std::string(payload));
  }
  m_held += payload.size();
  ++m_stats.out_of_order;
  if (m_held > m_max_held) {
    // Too much waits for bytes that do not come: the capture lost them.
    gap(m_hold.begin()->first - m_next);
  }
}

void TcpReassembler::drain(std::string& out) {
  while (!m_hold.empty() && m_hold.begin()->first <= m_next) {
    auto node = m_hold.extract(m_hold.begin());
    std::string_view bytes = node.mapped();
    m_held -= bytes.size();
    uint64_t start = node.key();
    uint64_t end = start + bytes.size();
    if (end <= m_next) {
      m_stats.retransmitted += bytes.size();
      continue;
    }
    size_t skip = static_cast<size_t>(m_next - start);
    m_stats.retransmitted += skip;
    deliver(m_next, bytes.substr(skip), out);
  }
}

void TcpReassembler::deliver(uint64_t start, std::string_view bytes, std::string& out) {
  if (m_damaged) {
    return;
  }
  if (m_cut_at >= 0 && start + bytes.size() > static_cast<uint64_t>(m_cut_at)) {
    bytes = bytes.substr(0, static_cast<size_t>(static_cast<uint64_t>(m_cut_at) - start));
  }
  out.append(bytes);
  m_next = start + bytes.size();
  m_stats.delivered += bytes.size();
  if (m_cut_at >= 0 && m_next == static_cast<uint64_t>(m_cut_at)) {
    gap(m_cut_len);  // everything before the cut segment is out: the hole is its bytes
  }
}

void TcpReassembler::fin(uint32_t seq) {
  if (!m_started) {
    start_at_syn(seq - 1);
  }
  m_fin_at = static_cast<int64_t>(offset_of(seq));
}

void TcpReassembler::acknowledged(uint32_t ack) {
  if (!m_started || m_damaged) {
    return;
  }
  uint64_t acked = offset_of(ack);
  // The FIN takes one sequence number of its own.
  if (m_fin_at >= 0 && acked == static_cast<uint64_t>(m_fin_at) + 1) {
    --acked;
  }
  if (acked > m_next) {
    // The hole runs to the first held segment, or to what was acknowledged.
    uint64_t upto = m_hold.empty() || m_hold.begin()->first > acked ? acked : m_hold.begin()->first;
    if (m_cut_at >= 0) {
      upto = std::min(upto, static_cast<uint64_t>(m_cut_at));
    }
    gap(upto - m_next);
  }
}

void TcpReassembler::lost(uint32_t seq, uint32_t len) {
  if (m_damaged || len == 0) {
    return;
  }
  if (!m_started) {
    gap(len);
    return;
  }
  uint64_t start = offset_of(seq);
  if (start + len <= m_next) {
    m_stats.retransmitted += len;  // a cut copy of bytes already delivered costs nothing
    return;
  }
  if (start > m_next) {
    // Ahead of the stream: the bytes before it may still come (and are delivered).
    if (m_cut_at < 0 || start < static_cast<uint64_t>(m_cut_at)) {
      m_cut_at = static_cast<int64_t>(start);
      m_cut_len = len;
    }
    return;
  }
  gap(start + len - m_next);
}

void TcpReassembler::finish() {
  if (m_damaged) {
    return;
  }
  if (!m_hold.empty() || m_cut_at >= 0) {
    uint64_t upto = m_hold.empty() ? static_cast<uint64_t>(m_cut_at) : m_hold.begin()->first;
    if (m_cut_at >= 0) {
      upto = std::min(upto, static_cast<uint64_t>(m_cut_at));
    }
    gap(upto - m_next);
  }
}

void TcpReassembler::gap(uint64_t lost) {
  m_damaged = true;
  m_stats.gap_bytes = lost;
  m_hold.clear();
  m_held = 0;
}

}  // namespace keyshift::compat::capture
