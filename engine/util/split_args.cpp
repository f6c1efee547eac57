#include "engine/util/split_args.hpp"

namespace keyshift::engine {
namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\0';
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

bool is_hex(char c) {
  return hex_value(c) >= 0;
}

}  // namespace

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
          word.push_back(static_cast<char>(hex_value(line[i + 2]) * 16 + hex_value(line[i + 3])));
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
