#include "compat/report/json_text.hpp"

#include <cstdint>

namespace keyshift::compat {

bool is_valid_utf8(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    const auto c = static_cast<uint8_t>(bytes[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t extra = 0;
    uint32_t code = 0;
    uint32_t min = 0;
    if ((c & 0xe0) == 0xc0) {
      extra = 1;
      code = c & 0x1f;
      min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2;
      code = c & 0x0f;
      min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      extra = 3;
      code = c & 0x07;
      min = 0x10000;
    } else {
      return false;
    }
    if (bytes.size() - i <= extra) {
      return false;
    }
    for (size_t k = 1; k <= extra; ++k) {
      const auto cc = static_cast<uint8_t>(bytes[i + k]);
      if ((cc & 0xc0) != 0x80) {
        return false;
      }
      code = (code << 6) | (cc & 0x3f);
    }
    if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
      return false;
    }
    i += extra + 1;
  }
  return true;
}

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char k_hex[] = "0123456789abcdef";
  out.push_back('"');
  for (char ch : text) {
    const auto c = static_cast<uint8_t>(ch);
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
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
      default:
        // DEL is legal JSON but unreadable on a terminal, so it is escaped too.
        if (c < 0x20 || c == 0x7f) {
          out += "\\u00";
          out.push_back(k_hex[c >> 4]);
          out.push_back(k_hex[c & 15]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
}

void append_json_bytes(std::string& out, std::string_view bytes) {
  static constexpr char k_hex[] = "0123456789abcdef";
  if (is_valid_utf8(bytes)) {
    append_json_string(out, bytes);
    return;
  }
  out += "{\"hex\": \"";
  for (char ch : bytes) {
    const auto c = static_cast<uint8_t>(ch);
    out.push_back(k_hex[c >> 4]);
    out.push_back(k_hex[c & 15]);
  }
  out += "\"}";
}

}  // namespace keyshift::compat
