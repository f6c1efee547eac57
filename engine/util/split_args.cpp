#include "engine/util/split_args.hpp"

#include "engine/util/strings.hpp"

#include <algorithm>

namespace keyshift::engine {
namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\0';
}

bool is_hex(char c) {
  return hex_digit_value(c) >= 0;
}

bool is_printable(unsigned char c) {
  return c >= 0x20 && c < 0x7f;
}

}  // namespace

std::string quote_repr(std::string_view bytes) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() + 2);
  out += '"';
  for (char c : bytes) {
    switch (c) {
      case '\\':
      case '"':
        out += '\\';
        out += c;
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
      default: {
        auto u = static_cast<unsigned char>(c);
        if (is_printable(u)) {
          out += c;
        } else {
          out += "\\x";
          out += k_hex[u >> 4];
          out += k_hex[u & 0xf];
        }
      }
    }
  }
  out += '"';
  return out;
}

std::string quote_arg(std::string_view word) {
  bool bare = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return is_printable(static_cast<unsigned char>(c)) && c != ' ' && c != '"' && c != '\'' &&
           c != '\\';
  });
  return bare ? std::string(word) : quote_repr(word);
}

bool split_args(std::string_view line, std::vector<std::string>& out) {
  out.clear();
  size_t i = 0;
  const size_t n = line.size();
  while (true) {
    while (i < n && is_blank(line[i])) {
      ++i;
    }
    if (i >= n) {
      return true;
    }
    std::string word;
    bool in_double = false;
    bool in_single = false;
    bool done = false;
    while (!done) {
      if (in_double) {
        if (i >= n) {
          return false;
        }
        char c = line[i];
        if (c == '\\' && i + 3 < n && line[i + 1] == 'x' && is_hex(line[i + 2]) &&
            is_hex(line[i + 3])) {
          word.push_back(
              static_cast<char>(hex_digit_value(line[i + 2]) * 16 + hex_digit_value(line[i + 3])));
          i += 3;
        } else if (c == '\\' && i + 1 < n) {
          ++i;
          switch (line[i]) {
            case 'n':
              word.push_back('\n');
              break;
            case 'r':
              word.push_back('\r');
              break;
            case 't':
              word.push_back('\t');
              break;
            case 'b':
              word.push_back('\b');
              break;
            case 'a':
              word.push_back('\a');
              break;
            default:
              word.push_back(line[i]);
              break;
          }
        } else if (c == '"') {
          // A closing quote must be followed by a blank or the end.
          if (i + 1 < n && !is_blank(line[i + 1])) {
            return false;
          }
          done = true;
        } else {
          word.push_back(c);
        }
      } else if (in_single) {
        if (i >= n) {
          return false;
        }
        char c = line[i];
        if (c == '\\' && i + 1 < n && line[i + 1] == '\'') {
          ++i;
          word.push_back('\'');
        } else if (c == '\'') {
          if (i + 1 < n && !is_blank(line[i + 1])) {
            return false;
          }
          done = true;
        } else {
          word.push_back(c);
        }
      } else {
        if (i >= n) {
          break;
        }
        char c = line[i];
        if (is_blank(c)) {
          done = true;
        } else if (c == '"') {
          in_double = true;
        } else if (c == '\'') {
          in_single = true;
        } else {
          word.push_back(c);
        }
      }
      if (i < n) {
        ++i;
      }
    }
    out.push_back(std::move(word));
  }
}

}  // namespace keyshift::engine
