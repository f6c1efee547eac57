#include "compat/report/json_value.hpp"

#include <cstdlib>
#include <string>

namespace keyshift::compat {
namespace {

constexpr int k_max_depth = 64;

class Parser {
 public:
  explicit Parser(std::string_view text) : m_text(text) {}

  JsonValue document() {
    JsonValue v = value(0);
    skip_space();
    if (m_pos != m_text.size()) {
      fail("unexpected text after the JSON value");
    }
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& message) { throw JsonError(m_pos, message); }

  void skip_space() {
    while (m_pos < m_text.size() && (m_text[m_pos] == ' ' || m_text[m_pos] == '\n' ||
                                     m_text[m_pos] == '\r' || m_text[m_pos] == '\t')) {
      ++m_pos;
    }
  }

  bool take(std::string_view word) {
    if (m_text.substr(m_pos, word.size()) == word) {
      m_pos += word.size();
      return true;
    }
    return false;
  }

  JsonValue value(int depth) {
    if (depth > k_max_depth) {
      fail("JSON nested too deeply");
    }
    skip_space();
    if (m_pos >= m_text.size()) {
      fail("unexpected end of the JSON text");
    }
    JsonValue v;
    char c = m_text[m_pos];
    if (c == '{') {
      v.type = JsonValue::Type::object;
      ++m_pos;
      skip_space();
      if (take("}")) {
        return v;
      }
      while (true) {
        skip_space();
        if (m_pos >= m_text.size() || m_text[m_pos] != '"') {
          fail("expected a member name in quotes");
        }
        std::string key = string();
        skip_space();
        if (!take(":")) {
          fail("expected ':' after a member name");
        }
        v.object.emplace_back(std::move(key), value(depth + 1));
        skip_space();
        if (take(",")) {
          continue;
        }
        if (take("}")) {
          return v;
        }
        fail("expected ',' or '}' in an object");
      }
    }
    if (c == '[') {
      v.type = JsonValue::Type::array;
      ++m_pos;
      skip_space();
      if (take("]")) {
        return v;
      }
      while (true) {
        v.array.push_back(value(depth + 1));
        skip_space();
        if (take(",")) {
          continue;
        }
        if (take("]")) {
          return v;
        }
        fail("expected ',' or ']' in an array");
      }
    }
    if (c == '"') {
      v.type = JsonValue::Type::string;
      v.string = string();
      return v;
    }
    if (take("true")) {
      v.type = JsonValue::Type::boolean;
      v.boolean = true;
      return v;
    }
    if (take("false")) {
      v.type = JsonValue::Type::boolean;
      return v;
    }
    if (take("null")) {
      return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      size_t start = m_pos;
      if (m_text[m_pos] == '-') {
        ++m_pos;
      }
      auto digits = [&]() {
        size_t from = m_pos;
        while (m_pos < m_text.size() && m_text[m_pos] >= '0' && m_text[m_pos] <= '9') {
          ++m_pos;
        }
        if (m_pos == from) {
          fail("malformed number");
        }
      };
      digits();
      if (m_pos < m_text.size() && m_text[m_pos] == '.') {
        ++m_pos;
        digits();
      }
      if (m_pos < m_text.size() && (m_text[m_pos] == 'e' || m_text[m_pos] == 'E')) {
        ++m_pos;
        if (m_pos < m_text.size() && (m_text[m_pos] == '+' || m_text[m_pos] == '-')) {
          ++m_pos;
        }
        digits();
      }
      std::string number(m_text.substr(start, m_pos - start));
      v.type = JsonValue::Type::number;
      v.number = std::strtod(number.c_str(), nullptr);
      return v;
    }
    fail("unexpected character in JSON");
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xc0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xe0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    }
  }

  unsigned hex4() {
    if (m_pos + 4 > m_text.size()) {
      fail("truncated \\u escape");
    }
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      char h = m_text[m_pos++];
      code <<= 4;
      if (h >= '0' && h <= '9') {
        code |= static_cast<unsigned>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        code |= static_cast<unsigned>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        code |= static_cast<unsigned>(h - 'A' + 10);
      } else {
        fail("bad hex digit in a \\u escape");
      }
    }
    return code;
  }

  std::string string() {
    ++m_pos;  // opening quote
    std::string out;
    while (true) {
      if (m_pos >= m_text.size()) {
        fail("unterminated string");
      }
      char c = m_text[m_pos++];
      if (c == '"') {
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        --m_pos;
        fail("control character in a string");
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (m_pos >= m_text.size()) {
        fail("unterminated string");
      }
      char e = m_text[m_pos++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned code = hex4();
          if (code >= 0xd800 && code < 0xdc00 && take("\\u")) {
            unsigned low = hex4();
            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
          }
          append_utf8(out, code);
          break;
        }
        default:
          --m_pos;
          fail("unknown escape in a string");
      }
    }
  }

  std::string_view m_text;
  size_t m_pos = 0;
};

}  // namespace

JsonValue::JsonValue() noexcept = default;

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const auto& [k, v] : object) {
    if (k == key) {
      return &v;
    }
  }
  return nullptr;
}

JsonValue parse_json(std::string_view text) {
  return Parser(text).document();
}

}  // namespace keyshift::compat
