#include "migrate/rewrite/diff.hpp"

#include "engine/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <vector>

namespace keyshift::migrate {
namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      out.push_back(text.substr(start));
      break;
    }
    out.push_back(text.substr(start, end - start + 1));
    start = end + 1;
  }
  return out;
}

enum class Op : char { keep = ' ', del = '-', add = '+' };

struct Edit {
  Op op;
  size_t a;  // index in before (keep/del)
  size_t b;  // index in after (keep/add)
};

// Myers' O((N+M)D) shortest edit script; config rewrites change few lines, so D is small.
std::vector<Edit> edit_script(const std::vector<std::string_view>& a,
                              const std::vector<std::string_view>& b) {
  const auto n = static_cast<long>(a.size());
  const auto m = static_cast<long>(b.size());
  const long max = n + m;
  std::vector<long> v(static_cast<size_t>(2 * max + 2), 0);
  std::vector<std::vector<long>> trace;
  auto at = [&](long k) -> long& { return v[static_cast<size_t>(k + max + 1)]; };
  long found_d = -1;
  for (long d = 0; d <= max && found_d < 0; ++d) {
    trace.push_back(v);
    for (long k = -d; k <= d; k += 2) {
      long x = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? at(k + 1) : at(k - 1) + 1;
      long y = x - k;
      while (x < n && y < m && a[static_cast<size_t>(x)] == b[static_cast<size_t>(y)]) {
        ++x;
        ++y;
      }
      at(k) = x;
      if (x >= n && y >= m) {
        found_d = d;
        break;
      }
    }
  }
  std::vector<Edit> edits;
  long x = n;
  long y = m;
  for (long d = found_d; d >= 0; --d) {
    const std::vector<long>& prev = trace[static_cast<size_t>(d)];
    auto pat = [&](long k) { return prev[static_cast<size_t>(k + max + 1)]; };
    long k = x - y;
    long prev_k = (k == -d || (k != d && pat(k - 1) < pat(k + 1))) ? k + 1 : k - 1;
    long prev_x = d == 0 ? 0 : pat(prev_k);
    long prev_y = prev_x - prev_k;
    while (x > prev_x && y > prev_y) {
      --x;
      --y;
      edits.push_back(Edit{Op::keep, static_cast<size_t>(x), static_cast<size_t>(y)});
    }
    if (d > 0) {
      if (x == prev_x) {
        edits.push_back(Edit{Op::add, static_cast<size_t>(x), static_cast<size_t>(prev_y)});
      } else {
        edits.push_back(Edit{Op::del, static_cast<size_t>(prev_x), static_cast<size_t>(y)});
      }
    }
    x = prev_x;
    y = prev_y;
  }
  std::reverse(edits.begin(), edits.end());
  return edits;
}

void append_line(std::string& out, char mark, std::string_view line) {
  out += mark;
  out += line;
  if (!line.ends_with('\n')) {
    out += "\n\\ No newline at end of file\n";
  }
}

std::string range(size_t start, size_t count) {
  // diff -u numbers an empty range by the line before it.
  if (count == 0) {
    return fmt::format("{},0", start);
  }
  if (count == 1) {
    return fmt::format("{}", start + 1);
  }
  return fmt::format("{},{}", start + 1, count);
}

}  // namespace

std::string unified_diff(std::string_view before, std::string_view after,
                         std::string_view before_header, std::string_view after_header,
                         int context) {
  if (before == after) {
    return {};
  }
  std::vector<std::string_view> a = split_lines(before);
  std::vector<std::string_view> b = split_lines(after);
  std::vector<Edit> edits = edit_script(a, b);
  std::string out = fmt::format("--- {}\n+++ {}\n", before_header, after_header);
  const auto ctx = static_cast<size_t>(std::max(context, 0));
  size_t i = 0;
  while (i < edits.size()) {
    if (edits[i].op == Op::keep) {
      ++i;
      continue;
    }
    // A hunk: from `ctx` lines before this change to `ctx` after the last change that is
    // within 2*ctx keeps of the previous one.
    size_t start = i >= ctx ? i - ctx : 0;
    while (start < i && edits[start].op != Op::keep) {
      ++start;
    }
    size_t end = i;
    size_t last_change = i;
    while (end < edits.size()) {
      if (edits[end].op != Op::keep) {
        last_change = end;
      } else if (end - last_change > 2 * ctx) {
        break;
      }
      ++end;
    }
    end = std::min(edits.size(), last_change + ctx + 1);
    size_t a_start = 0;
    size_t b_start = 0;
    size_t a_count = 0;
    size_t b_count = 0;
    bool first = true;
    for (size_t j = start; j < end; ++j) {
      const Edit& e = edits[j];
      if (first) {
        a_start = e.a;
        b_start = e.b;
        first = false;
      }
      a_count += e.op != Op::add ? 1 : 0;
      b_count += e.op != Op::del ? 1 : 0;
    }
    out += fmt::format("@@ -{} +{} @@\n", range(a_start, a_count), range(b_start, b_count));
    for (size_t j = start; j < end; ++j) {
      const Edit& e = edits[j];
      append_line(out, static_cast<char>(e.op), e.op == Op::add ? b[e.b] : a[e.a]);
    }
    i = end;
  }
  return out;
}

std::string redact_secrets(std::string_view text) {
  static const std::regex k_conf(
      R"re(^(\s*(?:requirepass|masterauth|primaryauth|tls-key-file-pass|tls-client-key-file-pass)\s+)(\S.*?)(\s*)$)re",
      std::regex::icase);
  static const std::regex k_acl(R"re((\s)([>#<])[^\s]+)re");
  static const std::regex k_single(
      R"re(((?:PASSWORD|PASS|SECRET|AUTH)['"]?\s*(?:,|=>|=|:)\s*)'((?:\\.|[^'\\])+)')re",
      std::regex::icase);
  static const std::regex k_double(
      R"re(((?:PASSWORD|PASS|SECRET|AUTH)['"]?\s*(?:,|=>|=|:)\s*)"((?:\\.|[^"\\])+)")re",
      std::regex::icase);
  // WP_REDIS_PASSWORD's ACL pair: define( 'WP_REDIS_PASSWORD', [ 'user', 'password' ] ).
  static const std::regex k_pair(R"re((PASSWORD['"]\s*,\s*(?:\[|array\s*\())([^\])]*))re",
                                 std::regex::icase);
  static const std::regex k_literal(R"re('(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")re");
  // YAML and Ruby: password: secret (unquoted).
  static const std::regex k_yaml(
      R"re(^(\s*:?[A-Za-z0-9_]*password:?\s*(?::|=>)\s*)([^\s'"#<&*{\[][^#]*?)(\s*)$)re",
      std::regex::icase);
  static const std::regex k_empty_value(R"re(=\s*["']?(null)?["']?\s*$)re", std::regex::icase);
  static const std::regex k_env(
      R"re(^(\s*(?:export\s+)?[A-Za-z0-9_]*(?:PASSWORD|PASS|SECRET)[A-Za-z0-9_]*\s*=\s*)(["']?)([^"'\s#]+)(["']?))re",
      std::regex::icase);
  static const std::regex k_url_auth(
      R"re(((?:redis|rediss|unix|tcp|tls|valkey|valkeys)://[^:@/\s'"]*:)([^@\s'"]+)@)re");
  static const std::regex k_auth_param(R"re(([?&](?:auth(?:\[\])?|password)=)([^&\s"',]+))re",
                                       std::regex::icase);
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    size_t stop = end == std::string_view::npos ? text.size() : end + 1;
    std::string line(text.substr(start, stop - start));
    start = stop;
    std::string body = line;
    std::string eol;
    while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) {
      eol.insert(eol.begin(), body.back());
      body.pop_back();
    }
    std::string lowered = engine::to_lower(body);
    size_t first = lowered.find_first_not_of(" \t");
    bool comment = first != std::string::npos && lowered[first] == '#';
    body = std::regex_replace(body, k_conf, "$1********$3");
    if (!comment && lowered.compare(first == std::string::npos ? 0 : first, 5, "user ") == 0) {
      body = std::regex_replace(body, k_acl, "$1$2********");
    }
    if (std::smatch m; std::regex_search(body, m, k_pair)) {
      body = m.prefix().str() + m[1].str() +
             std::regex_replace(m[2].str(), k_literal, "'********'") + m.suffix().str();
    }
    body = std::regex_replace(body, k_yaml, "$1********$3");
    body = std::regex_replace(body, k_single, "$1'********'");
    body = std::regex_replace(body, k_double, "$1\"********\"");
    if (!std::regex_search(body, k_empty_value)) {
      body = std::regex_replace(body, k_env, "$1$2********$4");
    }
    body = std::regex_replace(body, k_url_auth, "$1********@");
    body = std::regex_replace(body, k_auth_param, "$1********");
    out += body;
    out += eol;
  }
  return out;
}

}  // namespace keyshift::migrate
