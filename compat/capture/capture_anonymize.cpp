#include "compat/capture/capture_anonymize.hpp"

#include "compat/kb/knowledge_base.hpp"
#include "engine/util/strconv.hpp"
#include "engine/util/strings.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <stdexcept>
#include <vector>

namespace keyshift::compat::capture {
namespace {

constexpr std::string_view k_alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
constexpr std::string_view k_redacted_bulk = "$10\r\n(redacted)\r\n";
/// Aggregates nested deeper than this are left as they are (the walker stops there).
constexpr int k_max_depth = 64;

/// One RESP element found in a byte string.
struct Item {
  char type = 0;
  size_t begin = 0;     // the type byte
  size_t payload = 0;   // a bulk's or line's first byte of content
  size_t length = 0;    // its content's length
  size_t end = 0;       // one past the element, children included
  int parent = -1;      // index of the aggregate holding it
  size_t children = 0;  // elements directly inside (an aggregate)
};

bool is_line_type(char c) {
  return c == '+' || c == '-' || c == ':' || c == ',' || c == '#' || c == '(' || c == '_';
}

bool is_bulk_type(char c) {
  return c == '$' || c == '=' || c == '!';
}

bool is_aggregate_type(char c) {
  return c == '*' || c == '%' || c == '~' || c == '>' || c == '|';
}

/// Reads the element at `at` (and what it holds) into `items`; false when the bytes are not
/// one whole RESP element (the recorder only hands over whole ones, so this is a guard).
bool walk(std::string_view s, size_t& at, int parent, int depth, std::vector<Item>& items) {
  if (at >= s.size() || depth > k_max_depth) {
    return false;
  }
  size_t eol = s.find("\r\n", at);
  if (eol == std::string_view::npos) {
    return false;
  }
  Item item;
  item.type = s[at];
  item.begin = at;
  item.parent = parent;
  item.payload = at + 1;
  item.length = eol - at - 1;
  size_t index = items.size();
  items.push_back(item);
  if (is_line_type(item.type)) {
    at = eol + 2;
    items[index].end = at;
    return true;
  }
  int64_t n = 0;
  std::string_view count = s.substr(at + 1, eol - at - 1);
  if (!engine::parse_i64(count, n)) {
    return false;
  }
  at = eol + 2;
  if (is_bulk_type(item.type)) {
    if (n < 0) {
      items[index].length = 0;
      items[index].payload = at;
      items[index].end = at;
      return true;
    }
    if (s.size() - at < static_cast<size_t>(n) + 2) {
      return false;
    }
    items[index].payload = at;
    items[index].length = static_cast<size_t>(n);
    at += static_cast<size_t>(n) + 2;
    items[index].end = at;
    return true;
  }
  if (!is_aggregate_type(item.type)) {
    return false;
  }
  if (n < 0) {
    items[index].end = at;
    return true;
  }
  uint64_t elements = static_cast<uint64_t>(n);
  if (item.type == '%' || item.type == '|') {
    elements *= 2;
  }
  for (uint64_t i = 0; i < elements; ++i) {
    size_t child = items.size();
    if (!walk(s, at, static_cast<int>(index), depth + 1, items)) {
      return false;
    }
    if (items[child].type == '|') {
      // An attribute comes before the element it describes: that element takes the slot.
      if (!walk(s, at, static_cast<int>(index), depth + 1, items)) {
        return false;
      }
    }
  }
  items[index].children = elements;
  items[index].end = at;
  return true;
}

std::optional<std::vector<Item>> walk_all(std::string_view s) {
  std::vector<Item> items;
  size_t at = 0;
  while (at < s.size()) {
    if (!walk(s, at, -1, 0, items)) {
      return std::nullopt;
    }
  }
  return items;
}

std::vector<size_t> children_of(const std::vector<Item>& items, size_t parent) {
  std::vector<size_t> out;
  for (size_t i = parent + 1; i < items.size() && items[i].begin < items[parent].end; ++i) {
    if (items[i].parent == static_cast<int>(parent)) {
      out.push_back(i);
    }
  }
  return out;
}

std::string_view content(std::string_view s, const Item& item) {
  return s.substr(item.payload, item.length);
}

bool is_secret_config(std::string_view name) {
  for (std::string_view secret : {"requirepass", "masterauth", "primaryauth", "tls-key-file-pass",
                                  "tls-client-key-file-pass"}) {
    if (engine::iequals(name, secret)) {
      return true;
    }
  }
  return false;
}

struct Splice {
  size_t begin;
  size_t end;
  std::string with;
};

/// The redactions an aggregate at `index` needs: CONFIG GET pairs naming a secret, ACL
/// GETUSER's passwords, ACL LIST's password hashes.
void find_secrets(std::string_view s, const std::vector<Item>& items, size_t index,
                  std::vector<Splice>& out) {
  std::vector<size_t> kids = children_of(items, index);
  bool all_user_lines = !kids.empty();
  for (size_t k : kids) {
    all_user_lines =
        all_user_lines && is_bulk_type(items[k].type) && content(s, items[k]).starts_with("user ");
  }
  if (all_user_lines) {
    for (size_t k : kids) {
      std::string_view line = content(s, items[k]);
      std::string fixed;
      bool changed = false;
      size_t at = 0;
      while (at <= line.size()) {
        size_t space = line.find(' ', at);
        std::string_view word =
            line.substr(at, space == std::string_view::npos ? std::string_view::npos : space - at);
        bool hash = word.size() == 65 && word[0] == '#';
        fixed += hash ? std::string_view("#(redacted)") : word;
        changed = changed || hash;
        if (space == std::string_view::npos) {
          break;
        }
        fixed += ' ';
        at = space + 1;
      }
      if (changed) {
        out.push_back({items[k].begin, items[k].end,
                       "$" + std::to_string(fixed.size()) + "\r\n" + fixed + "\r\n"});
      }
    }
    return;
  }
  if (kids.size() % 2 != 0) {
    return;
  }
  for (size_t i = 0; i + 1 < kids.size(); i += 2) {
    const Item& name = items[kids[i]];
    const Item& value = items[kids[i + 1]];
    if (!is_bulk_type(name.type) && name.type != '+') {
      continue;
    }
    std::string_view n = content(s, name);
    if (is_secret_config(n) && is_bulk_type(value.type) && value.length > 0) {
      out.push_back({value.begin, value.end, std::string(k_redacted_bulk)});
    } else if (n == "passwords" && is_aggregate_type(value.type)) {
      for (size_t p : children_of(items, kids[i + 1])) {
        if (is_bulk_type(items[p].type)) {
          out.push_back({items[p].begin, items[p].end, std::string(k_redacted_bulk)});
        }
      }
    }
  }
}

bool is_number(std::string_view text) {
  int64_t i = 0;
  double d = 0;
  return engine::parse_i64(text, i) || (!text.empty() &&
                                        (std::isdigit(static_cast<unsigned char>(text[0])) != 0 ||
                                         text[0] == '-' || text[0] == '.') &&
                                        engine::parse_double(text, d));
}

}  // namespace

bool reply_may_hold_secret(std::string_view reply) {
  return !reply.empty() && is_aggregate_type(reply[0]) &&
         (reply.find("pass") != std::string_view::npos ||
          reply.find("auth") != std::string_view::npos ||
          reply.find("user ") != std::string_view::npos);
}

bool redact_reply(std::string& reply) {
  if (!reply_may_hold_secret(reply)) {
    return false;
  }
  auto items = walk_all(reply);
  if (!items || items->empty()) {
    return false;
  }
  std::vector<Splice> splices;
  // The reply itself, and the replies an EXEC holds.
  for (size_t i = 0; i < items->size(); ++i) {
    const Item& it = (*items)[i];
    bool top = it.parent < 0;
    bool in_exec = it.parent >= 0 && (*items)[static_cast<size_t>(it.parent)].parent < 0;
    if (is_aggregate_type(it.type) && (top || in_exec)) {
      find_secrets(reply, *items, i, splices);
    }
  }
  if (splices.empty()) {
    return false;
  }
  std::sort(splices.begin(), splices.end(),
            [](const Splice& a, const Splice& b) { return a.begin < b.begin; });
  std::string out;
  size_t at = 0;
  for (const Splice& sp : splices) {
    if (sp.begin < at) {
      continue;  // inside one already replaced
    }
    out.append(reply, at, sp.begin - at);
    out += sp.with;
    at = sp.end;
  }
  out.append(reply, at);
  reply = std::move(out);
  return true;
}

Anonymizer Anonymizer::with_random_key() {
  std::array<uint8_t, 32> key{};
  if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1) {
    throw std::runtime_error("no random bytes for the anonymisation key");
  }
  return Anonymizer(key);
}

void Anonymizer::fill(std::string_view part, char* out) const {
  // HMAC-SHA-256 of the part, then of the previous block for every 32 more bytes.
  std::array<unsigned char, 32> block{};
  unsigned int length = 0;
  HMAC(EVP_sha256(), m_key.data(), static_cast<int>(m_key.size()),
       reinterpret_cast<const unsigned char*>(part.data()), part.size(), block.data(), &length);
  for (size_t i = 0; i < part.size(); ++i) {
    if (i > 0 && i % block.size() == 0) {
      std::array<unsigned char, 32> next{};
      HMAC(EVP_sha256(), m_key.data(), static_cast<int>(m_key.size()), block.data(), block.size(),
           next.data(), &length);
      block = next;
    }
    out[i] = k_alphabet[block[i % block.size()] % k_alphabet.size()];
  }
}

std::string Anonymizer::hash(std::string_view text) const {
  std::string out(text);
  rewrite(out.data(), out.size());
  return out;
}

void Anonymizer::rewrite(char* at, size_t n) const {
  std::string original(at, n);
  std::string_view s = original;
  size_t open = s.find('{');
  size_t close = open == std::string_view::npos ? open : s.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) {
    fill(s, at);
    return;
  }
  // Cluster hash tag: the tag is hashed alone, so keys sharing it still share a slot.
  fill(s.substr(0, open), at);
  fill(s.substr(open + 1, close - open - 1), at + open + 1);
  fill(s.substr(close + 1), at + close + 1);
}

void Anonymizer::request(std::string& bytes) const {
  static const kb::ProfileId k_profile = *kb::find_profile("valkey-8.0");
  if (bytes.empty()) {
    return;
  }
  // Arguments: multibulk payloads, or an inline request's words.
  std::vector<std::pair<size_t, size_t>> args;
  if (bytes[0] == '*') {
    auto items = walk_all(bytes);
    if (!items) {
      return;
    }
    for (const Item& it : *items) {
      if (it.parent == 0 && is_bulk_type(it.type)) {
        args.emplace_back(it.payload, it.length);
      }
    }
  } else {
    size_t end = bytes.find('\n');
    end = end == std::string::npos ? bytes.size() : end;
    size_t at = 0;
    while (at < end) {
      while (at < end && (bytes[at] == ' ' || bytes[at] == '\t' || bytes[at] == '\r')) {
        ++at;
      }
      size_t start = at;
      while (at < end && bytes[at] != ' ' && bytes[at] != '\t' && bytes[at] != '\r') {
        ++at;
      }
      if (at > start) {
        args.emplace_back(start, at - start);
      }
    }
  }
  if (args.empty()) {
    return;
  }
  auto arg = [&](size_t i) {
    return std::string_view(bytes).substr(args[i].first, args[i].second);
  };
  std::string name = engine::to_lower(arg(0));
  const kb::KbCommand* row = kb::find_command(k_profile, name);
  size_t first = 1;
  if (args.size() > 1) {
    if (const kb::KbCommand* sub =
            kb::find_command(k_profile, name + "|" + engine::to_lower(arg(1)))) {
      row = sub;
      first = 2;
    }
  }
  // Code is not data: a script's body, its SHA-1, a function's name and a library's
  // source stay as they are, or they would no longer run.
  size_t code = 0;
  if (name == "eval" || name == "eval_ro" || name == "evalsha" || name == "evalsha_ro" ||
      name == "fcall" || name == "fcall_ro") {
    code = 1;
  } else if (first == 2 && (name == "script" || name == "function") &&
             engine::iequals(arg(1), "load")) {
    code = args.size() - 1;  // SCRIPT LOAD body, FUNCTION LOAD [REPLACE] code
  }
  for (size_t i = first; i < args.size(); ++i) {
    std::string_view a = arg(i);
    if (i == code || is_number(a) || (row != nullptr && kb::has_argument(*row, a))) {
      continue;
    }
    if (bytes[0] == '*') {
      rewrite(bytes.data() + args[i].first, args[i].second);
    } else {
      // Inline words: quotes and escapes stay where they are, so the words still split.
      std::string word(a);
      std::string hashed = hash(word);
      for (size_t j = 0; j < word.size(); ++j) {
        char c = word[j];
        if (c != '"' && c != '\'' && c != '\\') {
          bytes[args[i].first + j] = hashed[j];
        }
      }
    }
  }
}

void Anonymizer::reply(std::string& bytes) const {
  auto items = walk_all(bytes);
  if (!items) {
    return;
  }
  for (const Item& it : *items) {
    if (!is_bulk_type(it.type) || it.length == 0) {
      continue;
    }
    size_t at = it.payload;
    size_t n = it.length;
    if (it.type == '=' && n >= 4) {
      at += 4;  // the verbatim string's "txt:" format
      n -= 4;
    }
    std::string_view text = std::string_view(bytes).substr(at, n);
    if (it.type == '!' || is_number(text)) {
      continue;
    }
    rewrite(bytes.data() + at, n);
  }
}

}  // namespace keyshift::compat::capture
