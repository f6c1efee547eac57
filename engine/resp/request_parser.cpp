#include "engine/resp/request_parser.hpp"

#include "engine/util/split_args.hpp"
#include "engine/util/strconv.hpp"

#include <cstring>
#include <utility>

namespace keyshift::engine {
namespace {

// Valkey's limit on a line that is not yet terminated (inline command or length header).
constexpr size_t k_inline_max_size = 64 * 1024;

}  // namespace

void RequestParser::reset() {
  m_slices.clear();
  m_pos = 0;
  m_args_left = 0;
  m_bulk_len = -1;
  m_multibulk = false;
  m_inline_storage.clear();
}

RequestParser::Status RequestParser::fail(std::string message) {
  m_error = std::move(message);
  return Status::error;
}

RequestParser::Status RequestParser::parse(const char* base, size_t available,
                                           const RequestLimits& limits) {
  if (m_pos == 0) {
    if (available == 0) {
      return Status::need_more;
    }
    m_multibulk = base[0] == '*';
  }
  return m_multibulk ? parse_multibulk(base, available, limits) : parse_inline(base, available);
}

RequestParser::Status RequestParser::parse_inline(const char* base, size_t available) {
  const char* nl = static_cast<const char*>(std::memchr(base, '\n', available));
  if (nl == nullptr) {
    if (available > k_inline_max_size) {
      return fail("Protocol error: too big inline request");
    }
    return Status::need_more;
  }
  size_t line_len = static_cast<size_t>(nl - base);
  size_t consumed = line_len + 1;
  if (line_len > 0 && base[line_len - 1] == '\r') {
    --line_len;
  }
  std::vector<std::string> words;
  if (!split_args(std::string_view(base, line_len), words)) {
    return fail("Protocol error: unbalanced quotes in request");
  }
  m_pos = consumed;
  if (words.empty()) {
    return Status::empty;
  }
  m_inline_storage.clear();
  m_slices.clear();
  for (const auto& w : words) {
    m_slices.push_back({(m_inline_storage.size()), (w.size())});
    m_inline_storage.insert(m_inline_storage.end(), w.begin(), w.end());
  }
  return Status::ready;
}

RequestParser::Status RequestParser::parse_multibulk(const char* base, size_t available,
                                                     const RequestLimits& limits) {
  if (m_pos == 0) {
    const char* cr = static_cast<const char*>(std::memchr(base, '\r', available));
    if (cr == nullptr) {
      if (available > k_inline_max_size) {
        return fail("Protocol error: too big mbulk count string");
      }
      return Status::need_more;
    }
    size_t cr_off = static_cast<size_t>(cr - base);
    if (cr_off + 2 > available) {
      return Status::need_more;
    }
    int64_t count = 0;
    if (!parse_i64(std::string_view(base + 1, cr_off - 1), count) || count > INT32_MAX) {
      return fail("Protocol error: invalid multibulk length");
    }
    if (count > 10 && limits.auth_required) {
      return fail("Protocol error: unauthenticated multibulk length");
    }
    m_pos = cr_off + 2;
    if (count <= 0) {
      return Status::empty;
    }
    m_args_left = count;
    m_slices.clear();
    m_slices.reserve(static_cast<size_t>(count < 1024 ? count : 1024));
    m_bulk_len = -1;
  }
  while (m_args_left > 0) {
    if (m_bulk_len < 0) {
      const char* p = base + m_pos;
      size_t left = available - m_pos;
      const char* cr = static_cast<const char*>(std::memchr(p, '\r', left));
      if (cr == nullptr) {
        if (left > k_inline_max_size) {
          return fail("Protocol error: too big bulk count string");
        }
        return Status::need_more;
      }
      size_t cr_off = static_cast<size_t>(cr - p);
      if (cr_off + 2 > left) {
        return Status::need_more;
      }
      if (p[0] != '$') {
        return fail(std::string("Protocol error: expected '$', got '") + p[0] + "'");
      }
      int64_t len = 0;
      if (!parse_i64(std::string_view(p + 1, cr_off - 1), len) || len < 0 ||
          static_cast<uint64_t>(len) > limits.proto_max_bulk_len) {
        return fail("Protocol error: invalid bulk length");
      }
      if (len > 16384 && limits.auth_required) {
        return fail("Protocol error: unauthenticated bulk length");
      }
      m_pos += cr_off + 2;
      m_bulk_len = len;
    }
    if (available - m_pos < static_cast<size_t>(m_bulk_len) + 2) {
      return Status::need_more;
    }
    m_slices.push_back({m_pos, static_cast<size_t>(m_bulk_len)});
    m_pos += static_cast<size_t>(m_bulk_len) + 2;
    m_bulk_len = -1;
    --m_args_left;
  }
  return Status::ready;
}

void RequestParser::args(const char* base, std::vector<std::string_view>& out) const {
  out.clear();
  const char* src = m_multibulk ? base : m_inline_storage.data();
  for (const auto& s : m_slices) {
    out.emplace_back(src + s.offset, s.length);
  }
}

}  // namespace keyshift::engine
