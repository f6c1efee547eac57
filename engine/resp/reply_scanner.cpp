#include "engine/resp/reply_scanner.hpp"

#include <cstring>

namespace keyshift::engine {
namespace {

/// Parses a signed decimal length from [p, end); false when it is not one.
bool parse_length(const char* p, const char* end, int64_t& out) {
  bool negative = false;
  if (p < end && *p == '-') {
    negative = true;
    ++p;
  }
  if (p == end || end - p > 18) {
    return false;
  }
  int64_t v = 0;
  for (; p < end; ++p) {
    if (*p < '0' || *p > '9') {
      return false;
    }
    v = v * 10 + (*p - '0');
  }
  out = negative ? -v : v;
  return true;
}

}  // namespace

bool ReplyScanner::value_done() {
  while (m_depth > 0) {
    if (--m_pending[m_depth - 1] > 0) {
      return false;
    }
    --m_depth;
  }
  m_last_error = m_top_is_error;
  m_last_null = m_top_is_null;
  m_top_is_error = false;
  m_top_is_null = false;
  return true;
}

ReplyScanner::Status ReplyScanner::scan(const char* data, size_t size, size_t& consumed) {
  size_t pos = 0;
  while (true) {
    if (m_bulk_left > 0) {
      size_t take = static_cast<size_t>(m_bulk_left) < size - pos ? static_cast<size_t>(m_bulk_left)
                                                                  : size - pos;
      pos += take;
      m_bulk_left -= static_cast<int64_t>(take);
      if (m_bulk_left > 0) {
        consumed = pos;
        return Status::need_more;
      }
      if (value_done()) {
        consumed = pos;
        return Status::reply;
      }
      continue;
    }
    const char* line = data + pos;
    const char* nl = static_cast<const char*>(std::memchr(line, '\n', size - pos));
    if (nl == nullptr) {
      consumed = pos;
      return Status::need_more;
    }
    if (nl == line || nl[-1] != '\r') {
      m_protocol_error = "line not terminated by CRLF";
      consumed = pos;
      return Status::error;
    }
    const char* end = nl - 1;  // at '\r'
    pos = static_cast<size_t>(nl + 1 - data);
    bool top = m_depth == 0;
    int64_t n = 0;
    switch (*line) {
      case '-':
        if (top) {
          m_top_is_error = true;
          m_error_text.assign(line + 1, end);
        }
        break;
      case '+':
      case ':':
      case ',':
      case '#':
      case '(':
        break;
      case '_':
        m_top_is_null = top;
        break;
      case '$':
      case '!':
      case '=':
        if (!parse_length(line + 1, end, n) || n < -1) {
          m_protocol_error = "bad bulk length";
          consumed = pos;
          return Status::error;
        }
        if (*line == '!' && top) {
          m_top_is_error = true;
          m_error_text = "(blob error)";
        }
        if (n == -1) {
          m_top_is_null = top;
          break;
        }
        m_bulk_left = n + 2;
        continue;
      case '*':
      case '~':
      case '>':
      case '%':
      case '|':
        if (!parse_length(line + 1, end, n) || n < -1) {
          m_protocol_error = "bad aggregate length";
          consumed = pos;
          return Status::error;
        }
        if (n == -1) {
          m_top_is_null = top;
          break;
        }
        if (*line == '%') {
          n *= 2;
        } else if (*line == '|') {
          n = n * 2 + 1;  // the attribute's pairs, then the value they describe
        }
        if (n == 0) {
          break;
        }
        if (m_depth == k_max_depth) {
          m_protocol_error = "replies nested too deeply";
          consumed = pos;
          return Status::error;
        }
        m_pending[m_depth++] = n;
        continue;
      default:
        m_protocol_error = "unknown reply type";
        consumed = pos;
        return Status::error;
    }
    if (value_done()) {
      consumed = pos;
      return Status::reply;
    }
  }
}

}  // namespace keyshift::engine
