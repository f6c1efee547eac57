#include "compat/monitor/monitor_log.hpp"

#include "engine/util/mapped_file.hpp"

#include <fmt/core.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace keyshift::compat {
namespace {

using engine::Expected;
using engine::Unexpected;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

/// Reads `<sec>.<usec>` at `pos`; the microseconds are the digits printed (Redis prints six).
bool read_time(std::string_view s, size_t& pos, int64_t& out) {
  int64_t sec = 0;
  size_t start = pos;
  while (pos < s.size() && is_digit(s[pos]) && pos - start < 12) {
    sec = sec * 10 + (s[pos] - '0');
    ++pos;
  }
  if (pos == start || pos >= s.size() || s[pos] != '.') {
    return false;
  }
  ++pos;
  int64_t usec = 0;
  size_t digits = 0;
  while (pos < s.size() && is_digit(s[pos])) {
    if (digits < 6) {
      usec = usec * 10 + (s[pos] - '0');
    }
    ++digits;
    ++pos;
  }
  if (digits == 0) {
    return false;
  }
  for (size_t i = digits; i < 6; ++i) {
    usec *= 10;
  }
  out = sec * 1000000 + usec;
  return true;
}

bool read_int(std::string_view s, size_t& pos, int64_t& out) {
  size_t start = pos;
  int64_t v = 0;
  while (pos < s.size() && is_digit(s[pos]) && pos - start < 10) {
    v = v * 10 + (s[pos] - '0');
    ++pos;
  }
  out = v;
  return pos > start;
}

MonitorError error_at(uint64_t line, size_t pos, std::string message) {
  return MonitorError{line, pos + 1, std::move(message)};
}

}  // namespace

Expected<bool, MonitorError> MonitorLineParser::parse(std::string_view line, uint64_t line_no,
                                                      MonitorEntry& out) {
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  if (line.empty() || line == "OK" || line == "+OK") {
    return false;
  }
  size_t pos = 0;
  if (line[0] == '+') {
    pos = 1;
  }
  out = MonitorEntry{};
  out.line = line_no;
  if (!read_time(line, pos, out.time_us)) {
    return Unexpected{error_at(line_no, pos, "expected a timestamp <seconds>.<microseconds>")};
  }
  if (pos >= line.size() || line[pos] != ' ') {
    return Unexpected{error_at(line_no, pos, "expected a space after the timestamp")};
  }
  ++pos;
  if (line.compare(pos, 4, "(db ") == 0) {
    // Redis 2.4: `(db N) "arg"...`, no peer.
    pos += 4;
    if (!read_int(line, pos, out.db) || line.compare(pos, 2, ") ") != 0) {
      return Unexpected{error_at(line_no, pos, "expected (db <number>) ")};
    }
    pos += 2;
    out.peer_kind = MonitorPeerKind::unknown;
  } else {
    if (pos >= line.size() || line[pos] != '[') {
      return Unexpected{error_at(line_no, pos, "expected [<db> <client>]")};
    }
    ++pos;
    if (!read_int(line, pos, out.db) || pos >= line.size() || line[pos] != ' ') {
      return Unexpected{error_at(line_no, pos, "expected the database number and a space")};
    }
    ++pos;
    // The peer runs to the "] " that the first argument's quote follows (a unix socket path
    // may hold anything; an IPv6 peer holds "]" itself).
    size_t end = pos;
    for (;;) {
      end = line.find("] ", end);
      if (end == std::string_view::npos) {
        return Unexpected{error_at(line_no, pos, "the client field is not closed by \"] \"")};
      }
      if (end + 2 < line.size() && line[end + 2] == '"') {
        break;
      }
      ++end;
    }
    out.peer = line.substr(pos, end - pos);
    if (out.peer.empty()) {
      return Unexpected{error_at(line_no, pos, "empty client field")};
    }
    if (out.peer == "lua") {
      out.peer_kind = MonitorPeerKind::lua;
    } else if (out.peer.starts_with("unix:")) {
      out.peer_kind = MonitorPeerKind::unix;
    } else {
      out.peer_kind = MonitorPeerKind::tcp;
    }
    pos = end + 2;
  }

  // Arguments as sdssplitargs reads them; unescaped bytes go to the scratch buffer, which is
  // reserved to the line's size first so views into it stay valid.
  m_scratch.clear();
  if (m_scratch.capacity() < line.size()) {
    m_scratch.reserve(line.size());
  }
  m_args.clear();
  while (pos < line.size()) {
    if (line[pos] == '"') {
      size_t arg_start = pos;
      ++pos;
      size_t begin = m_scratch.size();
      bool closed = false;
      while (pos < line.size()) {
        char c = line[pos];
        if (c == '"') {
          closed = true;
          ++pos;
          break;
        }
        if (c != '\\') {
          // Copy the run of plain bytes at once.
          size_t run = pos;
          while (run < line.size() && line[run] != '"' && line[run] != '\\') {
            ++run;
          }
          m_scratch.append(line.data() + pos, run - pos);
          pos = run;
          continue;
        }
        if (pos + 1 >= line.size()) {
          return Unexpected{error_at(line_no, pos, "a backslash ends the line")};
        }
        char e = line[pos + 1];
        if (e == 'x' && pos + 3 < line.size() && hex_value(line[pos + 2]) >= 0 &&
            hex_value(line[pos + 3]) >= 0) {
          m_scratch.push_back(
              static_cast<char>(hex_value(line[pos + 2]) * 16 + hex_value(line[pos + 3])));
          pos += 4;
          continue;
        }
        switch (e) {
          case 'n':
            m_scratch.push_back('\n');
            break;
          case 'r':
            m_scratch.push_back('\r');
            break;
          case 't':
            m_scratch.push_back('\t');
            break;
          case 'b':
            m_scratch.push_back('\b');
            break;
          case 'a':
            m_scratch.push_back('\a');
            break;
          default:
            m_scratch.push_back(e);  // \\ \" and \<any>, as sdssplitargs takes them
            break;
        }
        pos += 2;
      }
      if (!closed) {
        return Unexpected{error_at(line_no, arg_start, "unterminated quoted argument")};
      }
      if (pos < line.size() && line[pos] != ' ') {
        return Unexpected{error_at(line_no, pos, "a closing quote must be followed by a space")};
      }
      m_args.emplace_back(m_scratch.data() + begin, m_scratch.size() - begin);
    } else {
      size_t end = line.find(' ', pos);
      if (end == std::string_view::npos) {
        end = line.size();
      }
      if (end == pos) {
        return Unexpected{error_at(line_no, pos, "empty argument (two spaces)")};
      }
      m_args.push_back(line.substr(pos, end - pos));
      pos = end;
    }
    if (pos < line.size()) {
      ++pos;  // the space between arguments
      if (pos == line.size()) {
        return Unexpected{error_at(line_no, pos - 1, "a space ends the line")};
      }
    }
  }
  if (m_args.empty()) {
    return Unexpected{error_at(line_no, pos, "no command after the client field")};
  }
  out.args = m_args;
  return true;
}

Expected<MonitorSummary, MonitorError> read_monitor_text(std::string_view text,
                                                         const MonitorHandler& handler) {
  MonitorSummary summary;
  MonitorLineParser parser;
  MonitorEntry entry;
  size_t pos = 0;
  uint64_t line_no = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string_view::npos ? text.size() : nl;
    ++line_no;
    auto got = parser.parse(text.substr(pos, end - pos), line_no, entry);
    if (!got) {
      return Unexpected{got.error()};
    }
    summary.lines = line_no;
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    summary.bytes = pos;
    if (*got) {
      ++summary.entries;
      if (!handler(entry)) {
        break;
      }
    }
  }
  return summary;
}

Expected<MonitorSummary, std::string> read_monitor_file(
    const std::string& path, const MonitorHandler& handler,
    const std::function<void(uint64_t, uint64_t)>& progress) {
  auto name_error = [&](const MonitorError& e) {
    return fmt::format("{}:{}:{}: {}", path == "-" ? "<stdin>" : path, e.line, e.column, e.message);
  };
  if (path == "-") {
    // A pipe: read blocks, keep the unfinished last line for the next one.
    MonitorSummary summary;
    MonitorLineParser parser;
    MonitorEntry entry;
    std::string carry;
    std::string block(1 << 20, '\0');
    uint64_t line_no = 0;
    bool stop = false;
    for (;;) {
      ssize_t n = ::read(STDIN_FILENO, block.data(), block.size());
      if (n < 0) {
        if (errno == EINTR) {
          continue;
        }
        return Unexpected{fmt::format("<stdin>: {}", std::strerror(errno))};
      }
      bool eof = n == 0;
      carry.append(block.data(), static_cast<size_t>(n));
      summary.bytes += static_cast<uint64_t>(n);
      size_t pos = 0;
      while (!stop) {
        size_t nl = carry.find('\n', pos);
        if (nl == std::string::npos && !(eof && pos < carry.size())) {
          break;
        }
        size_t end = nl == std::string::npos ? carry.size() : nl;
        ++line_no;
        auto got = parser.parse(std::string_view(carry).substr(pos, end - pos), line_no, entry);
        if (!got) {
          return Unexpected{name_error(got.error())};
        }
        pos = nl == std::string::npos ? carry.size() : nl + 1;
        if (*got) {
          ++summary.entries;
          stop = !handler(entry);
        }
      }
      carry.erase(0, pos);
      summary.lines = line_no;
      if (progress) {
        progress(summary.bytes, 0);
      }
      if (eof || stop) {
        return summary;
      }
    }
  }
  auto file = engine::MappedFile::open(path, engine::MappedFile::Access::streaming);
  if (!file) {
    return Unexpected{file.error().message()};
  }
  std::string_view text = file->data();
  MonitorSummary summary;
  MonitorLineParser parser;
  MonitorEntry entry;
  size_t pos = 0;
  size_t dropped = 0;
  uint64_t line_no = 0;
  constexpr size_t k_step = 8u << 20;  // give pages back every 8 MiB
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string_view::npos ? text.size() : nl;
    ++line_no;
    auto got = parser.parse(text.substr(pos, end - pos), line_no, entry);
    if (!got) {
      return Unexpected{name_error(got.error())};
    }
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    if (*got) {
      ++summary.entries;
      if (!handler(entry)) {
        break;
      }
    }
    if (pos - dropped >= k_step) {
      file->drop(dropped, pos);
      dropped = pos;
      if (progress) {
        progress(pos, text.size());
      }
    }
  }
  summary.lines = line_no;
  summary.bytes = pos;
  if (progress) {
    progress(pos, text.size());
  }
  return summary;
}

std::string monitor_quote(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() + 2);
  out.push_back('"');
  for (char ch : bytes) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      default:
        if (c >= 0x20 && c <= 0x7e) {
          out.push_back(ch);
        } else {
          out += fmt::format("\\x{:02x}", c);
        }
    }
  }
  out.push_back('"');
  return out;
}

std::string format_monitor_line(int64_t time_us, int64_t db, std::string_view peer,
                                std::span<const std::string> args) {
  std::string out = fmt::format("{}.{:06} [{} {}]", time_us / 1000000, time_us % 1000000, db, peer);
  for (const std::string& a : args) {
    out.push_back(' ');
    out += monitor_quote(a);
  }
  return out;
}

}  // namespace keyshift::compat
