#include "engine/repl/backlog.hpp"

#include <algorithm>

namespace keyshift::engine {

ReplBacklog::ReplBacklog(uint64_t capacity, uint64_t next_offset)
    : m_capacity(std::max<uint64_t>(capacity, 1)), m_end_offset(next_offset) {
  m_buf.resize(m_capacity);
}

void ReplBacklog::append(std::string_view bytes) {
  m_end_offset += bytes.size();
  if (bytes.size() >= m_capacity) {
    // Only the tail survives: the buffer restarts holding exactly the last `capacity` bytes.
    bytes.remove_prefix(bytes.size() - m_capacity);
    m_buf.assign(bytes);
    m_head = 0;
    m_histlen = m_capacity;
    return;
  }
  size_t first = std::min<size_t>(bytes.size(), m_capacity - m_head);
  m_buf.replace(m_head, first, bytes.substr(0, first));
  if (first < bytes.size()) {
    m_buf.replace(0, bytes.size() - first, bytes.substr(first));
  }
  m_head = (m_head + bytes.size()) % m_capacity;
  m_histlen = std::min<uint64_t>(m_histlen + bytes.size(), m_capacity);
}

std::string ReplBacklog::copy_after(uint64_t offset) const {
  uint64_t want = m_end_offset - std::min(offset, m_end_offset);
  want = std::min(want, m_histlen);
  std::string out;
  out.reserve(want);
  // The byte at end_offset is just before m_head.
  size_t start = (m_head + m_capacity - want % m_capacity) % m_capacity;
  if (want == m_capacity) {
    start = m_head;
  }
  size_t first = std::min<size_t>(want, m_capacity - start);
  out.append(m_buf, start, first);
  out.append(m_buf, 0, want - first);
  return out;
}

void ReplBacklog::resize(uint64_t capacity) {
  capacity = std::max<uint64_t>(capacity, 1);
  if (capacity == m_capacity) {
    return;
  }
  std::string kept = copy_after(m_end_offset - std::min(m_histlen, capacity));
  uint64_t end = m_end_offset;
  m_capacity = capacity;
  m_buf.assign(capacity, '\0');
  m_head = 0;
  m_histlen = 0;
  m_end_offset = end - kept.size();
  append(kept);
}

PsyncDecision decide_psync(const PsyncHistory& history, std::string_view replid, int64_t offset) {
  if (replid == "?") {
    return PsyncDecision::full_requested;
  }
  bool current = replid == history.replid;
  bool previous = !current && replid == history.replid2 && offset <= history.second_offset;
  if (!current && !previous) {
    return PsyncDecision::full_replid;
  }
  if (!history.has_backlog || offset < static_cast<int64_t>(history.backlog_first) ||
      offset > static_cast<int64_t>(history.backlog_first + history.backlog_histlen)) {
    return PsyncDecision::full_backlog;
  }
  return PsyncDecision::partial;
}

}  // namespace keyshift::engine
