#include "engine/util/glob.hpp"

#include <cstddef>

namespace keyshift::engine {
namespace {

// Valkey gives up (no match) past this recursion depth so that patterns such as
// "a*a*a*...b" cannot exhaust the stack; keeping the same cut-off keeps the same answers.
constexpr int k_max_nesting = 1000;

unsigned char fold(unsigned char c, GlobCase mode) {
  if (mode == GlobCase::insensitive && c >= 'A' && c <= 'Z') {
    return static_cast<unsigned char>(c - 'A' + 'a');
  }
  return c;
}

// Valkey folds range ends with glibc's tolower() applied to signed chars, which maps bytes
// 0x80..0xfe to their unsigned value but leaves 0xff as -1 (EOF); mirrored so that
// case-insensitive ranges over high bytes give the same answers.
int fold_signed(int c) {
  if (c >= 'A' && c <= 'Z') {
    return c - 'A' + 'a';
  }
  return c < -1 ? c + 256 : c;
}

bool same_byte(char a, char b, GlobCase mode) {
  return fold(static_cast<unsigned char>(a), mode) == fold(static_cast<unsigned char>(b), mode);
}

// Matches one byte against the class that starts after '['; advances `p` to the closing ']'
// (or to the end of an unterminated class, which Valkey accepts as if it were closed).
bool match_class(std::string_view pattern, size_t& p, char c, GlobCase mode) {
  bool negate = p < pattern.size() && pattern[p] == '^';
  if (negate) {
    ++p;
  }
  bool matched = false;
  while (true) {
    size_t left = pattern.size() - p;
    if (left >= 2 && pattern[p] == '\\') {
      // An escaped byte inside a class is compared exactly, even in insensitive mode.
      ++p;
      if (pattern[p] == c) {
        matched = true;
      }
    } else if (left == 0) {
      // Unterminated class: step back so the caller's advance lands on the end.
      --p;
      break;
    } else if (pattern[p] == ']') {
      break;
    } else if (left >= 3 && pattern[p + 1] == '-') {
      // Bytes compare as signed char and folding happens after ordering the ends, exactly
      // as in Valkey, so ranges over bytes >= 0x80 or mixing cases behave the same.
      int lo = static_cast<signed char>(pattern[p]);
      int hi = static_cast<signed char>(pattern[p + 2]);
      if (lo > hi) {
        int swapped = lo;
        lo = hi;
        hi = swapped;
      }
      int x = static_cast<signed char>(c);
      if (mode == GlobCase::insensitive) {
        lo = fold_signed(lo);
        hi = fold_signed(hi);
        x = fold_signed(x);
      }
      if (x >= lo && x <= hi) {
        matched = true;
      }
      p += 2;
    } else if (same_byte(pattern[p], c, mode)) {
      matched = true;
    }
    ++p;
  }
  return negate ? !matched : matched;
}

// `give_up` is set once a '*' failed to place the rest of the pattern anywhere in the
// remaining text: an earlier '*' taking more bytes cannot help then, which bounds the
// backtracking to polynomial time.
bool match_from(std::string_view pattern, std::string_view text, GlobCase mode, bool& give_up,
                int nesting) {
  if (nesting > k_max_nesting) {
    return false;
  }
  size_t p = 0;
  size_t t = 0;
  while (p < pattern.size() && t < text.size()) {
    switch (pattern[p]) {
      case '*': {
        while (p + 1 < pattern.size() && pattern[p + 1] == '*') {
          ++p;
        }
        if (p + 1 == pattern.size()) {
          return true;
        }
        for (; t < text.size(); ++t) {
          if (match_from(pattern.substr(p + 1), text.substr(t), mode, give_up, nesting + 1)) {
            return true;
          }
          if (give_up) {
            return false;
          }
        }
        give_up = true;
        return false;
      }
      case '?':
        ++t;
        break;
      case '[':
        ++p;
        if (!match_class(pattern, p, text[t], mode)) {
          return false;
        }
        ++t;
        break;
      case '\\':
        if (pattern.size() - p >= 2) {
          ++p;
        }
        [[fallthrough]];
      default:
        if (!same_byte(pattern[p], text[t], mode)) {
          return false;
        }
        ++t;
        break;
    }
    ++p;
    if (t == text.size()) {
      // Trailing stars match the empty rest of the text.
      while (p < pattern.size() && pattern[p] == '*') {
        ++p;
      }
      break;
    }
  }
  return p == pattern.size() && t == text.size();
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text, GlobCase mode) {
  bool give_up = false;
  return match_from(pattern, text, mode, give_up, 0);
}

}  // namespace keyshift::engine
