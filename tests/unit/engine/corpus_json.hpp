#pragma once

// Reading the ground-truth JSON files of ../shared/corpus/rdb in tests: a small JSON reader
// and the corpus' conventions for binary strings.

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keyshift::test {

/// A parsed JSON value, enough for the corpus ground-truth files.

struct Json {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  std::string text;  // string contents, or the number / literal as written
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> fields;

  const Json* find(std::string_view name) const {
    for (const auto& [key, value] : fields) {
      if (key == name) {
        return &value;
      }
    }
    return nullptr;
  }
  const Json& at(std::string_view name) const {
    const Json* value = find(name);
    if (value == nullptr) {
      throw std::runtime_error("missing JSON field " + std::string(name));
    }
    return *value;
  }
};

/// Parses JSON text; throws std::runtime_error on malformed input.
class JsonReader {
 public:
  explicit JsonReader(std::string_view text) : m_text(text) {}

  Json parse() {
    Json value = parse_value();
    skip_blanks();
    if (m_pos != m_text.size()) {
      fail();
    }
    return value;
  }

 private:
  void skip_blanks() {
    while (m_pos < m_text.size() &&
           std::string_view(" \t\r\n").find(m_text[m_pos]) != std::string_view::npos) {
      ++m_pos;
    }
  }

  // Thrown rather than asserted: a doctest assertion per character would dominate the run.
  [[noreturn]] void fail() const {
    throw std::runtime_error("malformed JSON at offset " + std::to_string(m_pos));
  }

  char next() {
    if (m_pos >= m_text.size()) {
      fail();
    }
    return m_text[m_pos++];
  }

  void expect(char c) {
    if (next() != c) {
      fail();
    }
  }

  Json parse_value() {
    skip_blanks();
    if (m_pos >= m_text.size()) {
      fail();
    }
    Json value;
    const char c = m_text[m_pos];
    if (c == '{') {
      value.kind = Json::Kind::object;
      ++m_pos;
      skip_blanks();
      if (m_text[m_pos] == '}') {
        ++m_pos;
        return value;
      }
      for (;;) {
        skip_blanks();
        std::string key = parse_string();
        skip_blanks();
        expect(':');
        value.fields.emplace_back(std::move(key), parse_value());
        skip_blanks();
        if (next() == '}') {
          return value;
        }
      }
    }
    if (c == '[') {
      value.kind = Json::Kind::array;
      ++m_pos;
      skip_blanks();
      if (m_text[m_pos] == ']') {
        ++m_pos;
        return value;
      }
      for (;;) {
        value.items.push_back(parse_value());
        skip_blanks();
        if (next() == ']') {
          return value;
        }
      }
    }
    if (c == '"') {
      value.kind = Json::Kind::string;
      value.text = parse_string();
      return value;
    }
    const size_t start = m_pos;
    while (m_pos < m_text.size() &&
           std::string_view(",]} \t\r\n").find(m_text[m_pos]) == std::string_view::npos) {
      ++m_pos;
    }
    value.text = std::string(m_text.substr(start, m_pos - start));
    if (value.text == "null") {
      value.kind = Json::Kind::null;
    } else if (value.text == "true" || value.text == "false") {
      value.kind = Json::Kind::boolean;
    } else {
      value.kind = Json::Kind::number;
    }
    return value;
  }

  uint32_t parse_hex4() {
    uint32_t code = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = next();
      code = code * 16 + static_cast<uint32_t>(std::stoi(std::string(1, h), nullptr, 16));
    }
    return code;
  }

  static void append_utf8(std::string& out, uint32_t code) {
    if (code < 0x80) {
      out.push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out.push_back(static_cast<char>(0xc0 | (code >> 6)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3f)));
    } else if (code < 0x10000) {
      out.push_back(static_cast<char>(0xe0 | (code >> 12)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3f)));
    } else {
      out.push_back(static_cast<char>(0xf0 | (code >> 18)));
      out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3f)));
    }
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    for (;;) {
      const char c = next();
      if (c == '"') {
        return out;
      }
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      const char escaped = next();
      switch (escaped) {
        case 'n':
          out.push_back('\n');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'u': {
          uint32_t code = parse_hex4();
          if (code >= 0xd800 && code < 0xdc00) {
            expect('\\');
            expect('u');
            code = 0x10000 + ((code - 0xd800) << 10) + (parse_hex4() - 0xdc00);
          }
          append_utf8(out, code);
          break;
        }
        default:
          out.push_back(escaped);  // '"', '\\', '/'
      }
    }
  }

  std::string_view m_text;
  size_t m_pos = 0;
};

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open ", path.string());
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

inline std::string from_hex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// A binary string as the corpus writes it; false when only its length and SHA-256 survive.
inline bool decode_bytes(const Json& value, std::string& out) {
  if (value.kind == Json::Kind::string) {
    out = value.text;
    return true;
  }
  if (const Json* hex = value.find("hex")) {
    out = from_hex(hex->text);
    return true;
  }
  return false;
}

}  // namespace keyshift::test
