#include "engine/repl/repl_stream.hpp"

#include <charconv>
#include <cstring>
#include <limits>

namespace keyshift::engine {
namespace {

// A header line longer than this is not a payload header.
constexpr size_t k_max_header_line = 1024;
constexpr std::string_view k_stopped = "the payload's reader stopped the sync";

}  // namespace

ReplStreamParser::ReplStreamParser(bool full_sync, uint64_t offset)
    : m_phase(full_sync ? Phase::payload_header : Phase::commands), m_offset(offset) {
  // A primary's commands are not held to a client's bulk limit (Valkey exempts its primary).
  m_limits.proto_max_bulk_len = std::numeric_limits<uint64_t>::max() / 4;
}

Expected<bool, std::string> ReplStreamParser::feed(std::string_view bytes,
                                                   ReplStreamHandler& handler) {
  while (m_phase != Phase::commands) {
    if (m_phase == Phase::payload_header) {
      m_buf.append(bytes);
      bytes = {};
      auto got = header(handler);
      if (!got) {
        return got;
      }
      if (!*got) {
        return Unexpected{std::string(k_stopped)};
      }
      if (m_phase == Phase::payload_header) {
        return true;  // the line is not complete yet
      }
      // What followed the header line is payload (and perhaps commands after it).
      std::string rest = m_buf.substr(m_pos);
      m_buf.clear();
      m_pos = 0;
      size_t used = 0;
      auto sent = payload(rest, handler, used);
      if (!sent) {
        return sent;
      }
      if (!*sent) {
        return Unexpected{std::string(k_stopped)};
      }
      if (m_phase == Phase::commands) {
        m_buf.assign(rest, used);
      }
      break;
    }
    // Phase::payload
    size_t used = 0;
    auto sent = payload(bytes, handler, used);
    if (!sent) {
      return sent;
    }
    if (!*sent) {
      return Unexpected{std::string(k_stopped)};
    }
    if (m_phase != Phase::commands) {
      return true;
    }
    bytes = bytes.substr(used);
    break;
  }
  m_buf.append(bytes);
  return commands(handler);
}

Expected<bool, std::string> ReplStreamParser::header(ReplStreamHandler& handler) {
  for (;;) {
    while (m_pos < m_buf.size() && m_buf[m_pos] == '\n') {
      ++m_pos;
      handler.on_keepalive();
    }
    size_t eol = m_buf.find("\r\n", m_pos);
    if (eol == std::string::npos) {
      if (m_buf.size() - m_pos > k_max_header_line) {
        return Unexpected{std::string("the primary sent no payload header (a line of over ") +
                          std::to_string(k_max_header_line) + " bytes)"};
      }
      m_buf.erase(0, m_pos);
      m_pos = 0;
      return true;
    }
    std::string_view line = std::string_view(m_buf).substr(m_pos, eol - m_pos);
    m_pos = eol + 2;
    if (line.empty()) {
      continue;
    }
    if (line[0] == '-') {
      return Unexpected{"the primary aborted the sync: " + std::string(line.substr(1))};
    }
    if (line[0] != '$') {
      return Unexpected{"bad payload header from the primary: '" + std::string(line.substr(0, 64)) +
                        "' (the first byte is not '$')"};
    }
    std::optional<uint64_t> size;
    if (line.starts_with("$EOF:")) {
      if (line.size() != 5 + k_eof_mark_len) {
        return Unexpected{"bad diskless payload header from the primary: the EOF mark is " +
                          std::to_string(line.size() - 5) + " bytes, not 40"};
      }
      m_mark.assign(line.substr(5));
      m_tail.clear();
    } else {
      uint64_t n = 0;
      auto r = std::from_chars(line.data() + 1, line.data() + line.size(), n);
      if (r.ec != std::errc() || r.ptr != line.data() + line.size()) {
        return Unexpected{"bad payload length from the primary: '" +
                          std::string(line.substr(0, 64)) + "'"};
      }
      size = n;
      m_payload_left = n;
    }
    m_phase = Phase::payload;
    if (!handler.on_payload_begin(size)) {
      return false;
    }
    return true;
  }
}

Expected<bool, std::string> ReplStreamParser::payload(std::string_view bytes,
                                                      ReplStreamHandler& handler, size_t& used) {
  used = 0;
  if (m_payload_left) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(*m_payload_left, bytes.size()));
    if (n > 0) {
      *m_payload_left -= n;
      m_payload_done += n;
      used = n;
      if (!handler.on_payload(bytes.substr(0, n))) {
        return false;
      }
    }
    if (*m_payload_left == 0) {
      m_payload_left.reset();
      m_phase = Phase::commands;
      return handler.on_payload_end();
    }
    return true;
  }
  // Diskless: the payload ends with the 40-byte mark. The last 40 bytes seen are held back
  // (they may be the mark's first part); the mark is looked for where the held bytes meet
  // the new ones, then in the new ones.
  const size_t mark_len = m_mark.size();
  std::string boundary = m_tail;
  boundary.append(bytes.substr(0, std::min(bytes.size(), mark_len - 1)));
  size_t found = boundary.find(m_mark);
  size_t end_in_bytes = std::string::npos;  // where in `bytes` the mark ends
  size_t payload_in_tail = m_tail.size();
  size_t payload_in_bytes = 0;
  if (found != std::string::npos) {
    if (found <= m_tail.size()) {
      payload_in_tail = found;
      payload_in_bytes = 0;
    } else {
      payload_in_bytes = found - m_tail.size();
    }
    end_in_bytes = found + mark_len - m_tail.size();
  } else if (bytes.size() >= mark_len) {
    const void* at = ::memmem(bytes.data(), bytes.size(), m_mark.data(), mark_len);
    if (at != nullptr) {
      payload_in_bytes = static_cast<size_t>(static_cast<const char*>(at) - bytes.data());
      end_in_bytes = payload_in_bytes + mark_len;
    }
  }
  if (end_in_bytes != std::string::npos) {
    m_payload_done += payload_in_tail + payload_in_bytes;
    if (payload_in_tail > 0 &&
        !handler.on_payload(std::string_view(m_tail).substr(0, payload_in_tail))) {
      return false;
    }
    if (payload_in_bytes > 0 && !handler.on_payload(bytes.substr(0, payload_in_bytes))) {
      return false;
    }
    m_tail.clear();
    used = end_in_bytes;
    m_phase = Phase::commands;
    return handler.on_payload_end();
  }
  // No mark yet: everything but the last mark_len bytes is payload.
  used = bytes.size();
  size_t total = m_tail.size() + bytes.size();
  if (total <= mark_len) {
    m_tail.append(bytes);
    return true;
  }
  size_t emit = total - mark_len;
  size_t from_tail = std::min(emit, m_tail.size());
  size_t from_bytes = emit - from_tail;
  m_payload_done += emit;
  if (from_tail > 0 && !handler.on_payload(std::string_view(m_tail).substr(0, from_tail))) {
    return false;
  }
  if (from_bytes > 0 && !handler.on_payload(bytes.substr(0, from_bytes))) {
    return false;
  }
  std::string tail = m_tail.substr(from_tail);
  tail.append(bytes.substr(from_bytes));
  m_tail = std::move(tail);
  return true;
}

Expected<bool, std::string> ReplStreamParser::commands(ReplStreamHandler& handler) {
  for (;;) {
    if (!m_parser.in_progress()) {
      // Out-of-band newlines (a primary's keepalive) are not commands and not counted.
      while (m_pos < m_buf.size() && (m_buf[m_pos] == '\n' || m_buf[m_pos] == '\r')) {
        ++m_pos;
      }
      if (m_pos == m_buf.size()) {
        m_buf.clear();
        m_pos = 0;
        return true;
      }
      if (m_buf[m_pos] != '*') {
        return Unexpected{"the primary sent inline data in the command stream at offset " +
                          std::to_string(m_offset) + ": '" +
                          std::string(std::string_view(m_buf).substr(m_pos, 32)) + "'"};
      }
    }
    const char* base = m_buf.data() + m_pos;
    auto status = m_parser.parse(base, m_buf.size() - m_pos, m_limits);
    if (status == RequestParser::Status::need_more) {
      if (m_pos > 0) {
        m_buf.erase(0, m_pos);  // the parser keeps offsets from the command's start
        m_pos = 0;
      }
      return true;
    }
    if (status == RequestParser::Status::error) {
      return Unexpected{"protocol error in the primary's command stream at offset " +
                        std::to_string(m_offset) + ": " + std::string(m_parser.error())};
    }
    size_t consumed = m_parser.consumed();
    m_offset += consumed;
    handler.on_stream_bytes(std::string_view(base, consumed));
    bool go_on = true;
    if (status == RequestParser::Status::ready) {
      m_parser.args(base, m_args);
      go_on = handler.on_command(m_args, m_offset);
    }
    m_pos += consumed;
    m_parser.reset();
    if (!go_on) {
      return false;
    }
  }
}

}  // namespace keyshift::engine
