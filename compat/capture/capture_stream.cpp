#include "compat/capture/capture_stream.hpp"

#include "engine/resp/request_writer.hpp"

#include <span>

namespace keyshift::compat::capture {
namespace {

enum class Looks : uint8_t { yes, no, need_more };

// "<digits>\r\n" at `at`, with a value in [min, 10^9): how far the line goes.
Looks count_line(std::string_view s, size_t& at, uint64_t min) {
  size_t digits = 0;
  uint64_t value = 0;
  while (at < s.size() && s[at] >= '0' && s[at] <= '9') {
    value = value * 10 + static_cast<uint64_t>(s[at] - '0');
    ++at;
    if (++digits > 9) {
      return Looks::no;
    }
  }
  if (at == s.size()) {
    return Looks::need_more;
  }
  if (digits == 0 || value < min || s[at] != '\r') {
    return Looks::no;
  }
  if (++at == s.size()) {
    return Looks::need_more;
  }
  if (s[at] != '\n') {
    return Looks::no;
  }
  ++at;
  return Looks::yes;
}

// Whether a multibulk request ("*N\r\n$M\r\n", N >= 1) starts at `at`: strict enough that a
// value's bytes rarely pass, since a wrong guess makes the parser fail and recording stop.
Looks request_starts(std::string_view s, size_t at) {
  if (s[at] != '*') {
    return Looks::no;
  }
  ++at;
  Looks l = count_line(s, at, 1);
  if (l != Looks::yes) {
    return l;
  }
  if (at == s.size()) {
    return Looks::need_more;
  }
  if (s[at] != '$') {
    return Looks::no;
  }
  ++at;
  return count_line(s, at, 0);
}

bool is_reply_type(char c) {
  static constexpr std::string_view k_types = "+-:$*_,#!=(%~>|";
  return k_types.find(c) != std::string_view::npos;
}

}  // namespace

void StreamRecorder::open(std::string_view peer, int64_t now, EventSink& sink) {
  m_peer = peer;
  emit(EventKind::open, k_flag_none, now, now, {}, m_state.db(), m_state.resp(), sink);
}

void StreamRecorder::close(int64_t now, EventSink& sink) {
  emit(EventKind::close, k_flag_none, now, now, {}, m_state.db(), m_state.resp(), sink);
}

void StreamRecorder::lose(uint64_t bytes, int64_t now, EventSink& sink) {
  if (stopped()) {
    return;
  }
  m_requests_broken = true;
  m_replies_broken = true;
  std::string count = std::to_string(bytes);
  emit(EventKind::drop, k_flag_none, now, now, count, m_state.db(), m_state.resp(), sink);
}

bool StreamRecorder::sync_requests(const char*& data, size_t& n) {
  m_sync_hold.append(data, n);
  std::string_view s = m_sync_hold;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && s[i - 1] != '\n') {
      continue;
    }
    Looks l = request_starts(s, i);
    if (l == Looks::no) {
      continue;
    }
    m_counts.skipped_bytes += i;
    m_sync_hold.erase(0, i);
    if (l == Looks::need_more) {
      return false;
    }
    m_synced = true;
    data = m_sync_hold.data();
    n = m_sync_hold.size();
    return true;
  }
  // Keep a possible start cut at the end ("...\n" or "...\n*1"): at most a line's worth.
  size_t keep = s.rfind('\n');
  keep = keep == std::string_view::npos ? 0 : keep + 1;
  m_counts.skipped_bytes += keep;
  m_sync_hold.erase(0, keep);
  if (m_sync_hold.size() > 64) {
    m_counts.skipped_bytes += m_sync_hold.size();
    m_sync_hold.clear();
  }
  return false;
}

void StreamRecorder::client_bytes(const char* data, size_t n, int64_t start, int64_t now,
                                  EventSink& sink) {
  if (m_requests_broken) {
    return;
  }
  std::string held;
  if (m_mid_stream && !m_synced) {
    if (!sync_requests(data, n)) {
      return;
    }
    held = std::move(m_sync_hold);
    m_sync_hold.clear();
    data = held.data();
    n = held.size();
  }
  ++m_batch;
  bool partial = !m_request_partial.empty();
  const char* base = data;
  size_t avail = n;
  if (partial) {
    m_request_partial.append(data, n);
    base = m_request_partial.data();
    avail = m_request_partial.size();
  } else {
    m_request_start_ns = start;
  }
  size_t off = 0;
  while (off < avail) {
    auto st = m_parser.parse(base + off, avail - off, m_limits);
    if (st == engine::RequestParser::Status::need_more) {
      break;
    }
    if (st == engine::RequestParser::Status::error) {
      // Not RESP: the server will say so; the recording of this direction ends here.
      m_requests_broken = true;
      emit(EventKind::drop, k_flag_none, now, now, "0", m_state.db(), m_state.resp(), sink);
      m_request_partial.clear();
      return;
    }
    size_t used = m_parser.consumed();
    if (st == engine::RequestParser::Status::ready) {
      m_args.clear();
      m_parser.args(base + off, m_args);
      record_request(std::string_view(base + off, used), m_request_start_ns, now, sink);
    }
    m_parser.reset();
    off += used;
    m_request_start_ns = now;
  }
  if (partial) {
    m_request_partial.erase(0, off);
  } else if (off < avail) {
    m_request_partial.assign(base + off, avail - off);
  }
}

void StreamRecorder::record_request(std::string_view bytes, int64_t start, int64_t end,
                                    EventSink& sink) {
  uint16_t flags = k_flag_none;
  std::string redacted;
  if (m_redact) {
    if (auto args = redact_request(m_args)) {
      engine::append_request(redacted, std::span<const std::string>(*args));
      bytes = redacted;
      flags |= k_flag_redacted;
      ++m_counts.redacted;
    }
  }
  if (m_anonymizer != nullptr) {
    m_rewritten.assign(bytes);
    m_anonymizer->request(m_rewritten);
    bytes = m_rewritten;
    flags |= k_flag_anonymized;
  }
  // A request runs under the state before it (a SELECT in the old database); the name and
  // lib it sets are recorded on it.
  uint32_t db = m_state.db();
  uint8_t resp = m_state.resp();
  if (m_state.apply(m_args)) {
    flags |= k_flag_no_reply;
    ++m_counts.no_reply;
  }
  ++m_counts.requests;
  emit(EventKind::request, flags, start, end, bytes, db, resp, sink);
}

void StreamRecorder::server_bytes(const char* data, size_t n, int64_t start, int64_t now,
                                  EventSink& sink) {
  if (m_replies_broken) {
    return;
  }
  if (m_mid_stream && !m_replies_synced) {
    // Replies to requests that were not seen: dropped until a request was, and until the
    // server's bytes start with a reply.
    if (!m_synced || n == 0 || !is_reply_type(data[0])) {
      m_counts.skipped_bytes += n;
      return;
    }
    m_replies_synced = true;
  }
  bool partial = !m_reply_partial.empty();
  const char* base = data;
  size_t avail = n;
  size_t scanned = 0;
  if (partial) {
    m_reply_partial.append(data, n);
    base = m_reply_partial.data();
    avail = m_reply_partial.size();
    scanned = m_reply_scanned;
  } else {
    m_reply_start_ns = start;
  }
  size_t off = 0;
  while (off + scanned < avail) {
    size_t used = 0;
    auto st = m_scanner.scan(base + off + scanned, avail - off - scanned, used);
    scanned += used;
    if (st == engine::ReplyScanner::Status::need_more) {
      break;
    }
    if (st == engine::ReplyScanner::Status::error) {
      m_replies_broken = true;
      emit(EventKind::drop, k_flag_none, now, now, "0", m_state.db(), m_state.resp(), sink);
      m_reply_partial.clear();
      return;
    }
    ++m_counts.replies;
    std::string_view reply(base + off, scanned);
    uint16_t flags = k_flag_none;
    if ((m_redact && reply_may_hold_secret(reply)) || m_anonymizer != nullptr) {
      m_rewritten.assign(reply);
      if (m_redact && redact_reply(m_rewritten)) {
        flags |= k_flag_redacted;
        ++m_counts.redacted_replies;
      }
      if (m_anonymizer != nullptr) {
        m_anonymizer->reply(m_rewritten);
        flags |= k_flag_anonymized;
      }
      reply = m_rewritten;
    }
    emit(EventKind::reply, flags, m_reply_start_ns, now, reply, m_state.db(), m_state.resp(), sink);
    off += scanned;
    scanned = 0;
    m_reply_start_ns = now;
  }
  if (partial) {
    m_reply_partial.erase(0, off);
  } else if (off < avail) {
    m_reply_partial.assign(base + off, avail - off);
  }
  m_reply_scanned = scanned;
}

void StreamRecorder::emit(EventKind kind, uint16_t flags, int64_t start, int64_t end,
                          std::string_view bytes, uint32_t db, uint8_t resp, EventSink& sink) {
  CaptureEventView e;
  e.kind = kind;
  e.flags = static_cast<uint16_t>(flags | (m_mid_stream ? k_flag_partial : k_flag_none));
  e.conn_id = m_conn_id;
  e.start_ns = start;
  e.end_ns = end;
  e.batch = kind == EventKind::request ? m_batch : 0;
  e.db = db;
  e.resp = resp;
  std::string lib = m_state.client_lib();
  e.client_name = m_state.client_name();
  e.client_lib = lib;
  if (kind == EventKind::open) {
    e.peer = m_peer;
  }
  e.bytes = bytes;
  size_t traffic = kind == EventKind::request || kind == EventKind::reply ? bytes.size() : 0;
  sink.emit(e, traffic);
}

}  // namespace keyshift::compat::capture
