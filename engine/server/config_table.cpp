#include "engine/server/config_table.hpp"

#include "engine/acl/acl.hpp"
#include "engine/commands/errors.hpp"
#include "engine/commands/registry.hpp"
#include "engine/keyspace/notify.hpp"
#include "engine/util/glob.hpp"
#include "engine/util/split_args.hpp"
#include "engine/util/strconv.hpp"
#include "engine/util/strings.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

namespace keyshift::engine {
namespace {

// --- Small helpers ---

constexpr int64_t k_int_min = std::numeric_limits<int32_t>::min();
constexpr int64_t k_int_max = std::numeric_limits<int32_t>::max();
constexpr int64_t k_i64_max = std::numeric_limits<int64_t>::max();
constexpr int64_t k_u32_max = std::numeric_limits<uint32_t>::max();
// Unsigned bounds are kept as the bit pattern Valkey stores in its long long fields.
constexpr int64_t k_u64_max = -1;
// Valkey accepts any hz but runs (and reports) it clamped to this range.
constexpr int64_t k_min_hz = 1;
constexpr int64_t k_max_hz = 500;
constexpr size_t k_max_bind_addresses = 16;
constexpr int64_t k_max_io_threads = 16;
constexpr int k_shutdown_save = 1;
constexpr int k_shutdown_nosave = 2;

constexpr std::string_view k_wrong_arg_count = "wrong number of arguments";
constexpr std::string_view k_bad_directive = "Bad directive or wrong number of arguments";

std::string join(std::span<const std::string> words, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) {
      out += separator;
    }
    out += words[i];
  }
  return out;
}

// Splits on every single space and keeps empty words, like Valkey's sdssplitlen() that
// CONFIG SET uses for list values; an empty text has no words.
std::vector<std::string> split_on_spaces(std::string_view text) {
  std::vector<std::string> words;
  if (text.empty()) {
    return words;
  }
  size_t start = 0;
  while (true) {
    size_t end = text.find(' ', start);
    words.emplace_back(text.substr(start, end == text.npos ? text.npos : end - start));
    if (end == text.npos) {
      return words;
    }
    start = end + 1;
  }
}

// strtoll() the way Valkey calls it for list values: blanks and a sign may lead, overflow
// clamps, and the caller only checks that every byte was used.
long long c_strtoll(const std::string& text, bool& whole) {
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  whole = *end == '\0';
  return value;
}

// Values handed to FieldAccess::set are canonical, so plain conversions suffice.
int64_t canonical_i64(std::string_view text, int base = 10) {
  int64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value, base);
  return value;
}

uint64_t canonical_u64(std::string_view text) {
  uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

// --- Enumerations (values only matter where they combine or alias) ---

constexpr EnumChoice k_maxmemory_policy_choices[] = {
    {"volatile-lru", static_cast<int>(EvictionPolicy::volatile_lru)},
    {"volatile-lfu", static_cast<int>(EvictionPolicy::volatile_lfu)},
    {"volatile-random", static_cast<int>(EvictionPolicy::volatile_random)},
    {"volatile-ttl", static_cast<int>(EvictionPolicy::volatile_ttl)},
    {"allkeys-lru", static_cast<int>(EvictionPolicy::allkeys_lru)},
    {"allkeys-lfu", static_cast<int>(EvictionPolicy::allkeys_lfu)},
    {"allkeys-random", static_cast<int>(EvictionPolicy::allkeys_random)},
    {"noeviction", static_cast<int>(EvictionPolicy::noeviction)},
};
constexpr EnumChoice k_syslog_facility_choices[] = {
    {"user", 0},   {"local0", 1}, {"local1", 2}, {"local2", 3}, {"local3", 4},
    {"local4", 5}, {"local5", 6}, {"local6", 7}, {"local7", 8},
};
constexpr EnumChoice k_loglevel_choices[] = {
    {"debug", 0}, {"verbose", 1}, {"notice", 2}, {"warning", 3}, {"nothing", 4},
};
constexpr EnumChoice k_supervised_choices[] = {
    {"upstart", 0},
    {"systemd", 1},
    {"auto", 2},
    {"no", 3},
};
constexpr EnumChoice k_appendfsync_choices[] = {{"everysec", 0}, {"always", 1}, {"no", 2}};
constexpr EnumChoice k_shutdown_on_signal_choices[] = {
    {"default", 0}, {"save", k_shutdown_save}, {"nosave", k_shutdown_nosave}, {"now", 4},
    {"force", 8},
};
constexpr EnumChoice k_repl_diskless_load_choices[] = {
    {"disabled", 0}, {"on-empty-db", 1}, {"swapdb", 2}};
constexpr EnumChoice k_tls_auth_clients_choices[] = {{"no", 0}, {"yes", 1}, {"optional", 2}};
// "yes" and "relative" are one setting; CONFIG GET prints the first name, "yes".
constexpr EnumChoice k_oom_score_adj_choices[] = {
    {"no", 0}, {"yes", 1}, {"relative", 1}, {"absolute", 2}};
constexpr EnumChoice k_acl_pubsub_default_choices[] = {{"allchannels", 1}, {"resetchannels", 0}};
constexpr EnumChoice k_sanitize_dump_payload_choices[] = {{"no", 0}, {"yes", 1}, {"clients", 2}};
constexpr EnumChoice k_protected_action_choices[] = {
    {"no", static_cast<int>(EnableMode::no)},
    {"yes", static_cast<int>(EnableMode::yes)},
    {"local", static_cast<int>(EnableMode::local)},
};
constexpr EnumChoice k_endpoint_type_choices[] = {
    {"ip", 0}, {"hostname", 1}, {"unknown-endpoint", 2}};
constexpr EnumChoice k_propagation_error_choices[] = {
    {"ignore", 0}, {"panic", 1}, {"panic-on-replicas", 2}};

// Name(s) for `value` as Valkey prints them: the first exact match, else (for flag sets)
// each contained flag in table order, else "unknown".
std::string enum_name(std::span<const EnumChoice> choices, int value, bool flag_set) {
  std::string names;
  int unmatched = value;
  for (const EnumChoice& choice : choices) {
    if (choice.value == value) {
      return std::string(choice.name);
    }
    if (flag_set && choice.value != 0 && (unmatched & choice.value) == choice.value) {
      names += names.empty() ? "" : " ";
      names += choice.name;
      unmatched &= ~choice.value;
    }
  }
  return names.empty() || unmatched != 0 ? std::string("unknown") : names;
}

int enum_value(std::span<const EnumChoice> choices, std::string_view name) {
  for (const EnumChoice& choice : choices) {
    if (choice.name == name) {
      return choice.value;
    }
  }
  return 0;
}

// --- Field bindings of the implemented directives ---

// A field is named by a member pointer of EngineConfig or of its KeyspaceSettings base (which a
// non-type template parameter of type `T EngineConfig::*` could not take); `c.*Field` reaches
// both, and the assertion keeps the field's type what the reader writes.
template <typename T, auto Field>
constexpr bool k_field_of =
    std::is_same_v<std::remove_cvref_t<decltype(std::declval<EngineConfig&>().*Field)>, T>;

template <auto Field, int64_t Min = k_int_min, int64_t Max = k_int_max>
requires k_field_of<int, Field>
constexpr FieldAccess int_field() {
  // Clamping keeps maxclients (Valkey: unsigned) inside int and hz inside what Valkey runs.
  return {[](const EngineConfig& c) { return std::to_string(c.*Field); },
          [](EngineConfig& c, std::string_view v) {
            c.*Field = static_cast<int>(std::clamp(canonical_i64(v), Min, Max));
          }};
}

template <auto Field>
requires k_field_of<uint64_t, Field>
constexpr FieldAccess u64_field() {
  return {[](const EngineConfig& c) { return std::to_string(c.*Field); },
          [](EngineConfig& c, std::string_view v) { c.*Field = canonical_u64(v); }};
}

template <uint32_t EngineConfig::*Field>
constexpr FieldAccess octal_field() {
  return {[](const EngineConfig& c) { return fmt::format("{:o}", c.*Field); },
          [](EngineConfig& c, std::string_view v) {
            c.*Field = static_cast<uint32_t>(canonical_i64(v, 8));
          }};
}

template <bool EngineConfig::*Field>
constexpr FieldAccess bool_field() {
  return {[](const EngineConfig& c) { return std::string(c.*Field ? "yes" : "no"); },
          [](EngineConfig& c, std::string_view v) { c.*Field = v == "yes"; }};
}

template <std::string EngineConfig::*Field>
constexpr FieldAccess string_field() {
  return {[](const EngineConfig& c) { return c.*Field; },
          [](EngineConfig& c, std::string_view v) { c.*Field = std::string(v); }};
}

template <EnableMode EngineConfig::*Field>
constexpr FieldAccess enable_mode_field() {
  return {[](const EngineConfig& c) {
            return enum_name(k_protected_action_choices, static_cast<int>(c.*Field), false);
          },
          [](EngineConfig& c, std::string_view v) {
            c.*Field = static_cast<EnableMode>(enum_value(k_protected_action_choices, v));
          }};
}

constexpr FieldAccess tls_auth_clients_field() {
  return {[](const EngineConfig& c) {
            return enum_name(k_tls_auth_clients_choices, c.tls_auth_clients, false);
          },
          [](EngineConfig& c, std::string_view v) {
            c.tls_auth_clients = enum_value(k_tls_auth_clients_choices, v);
          }};
}

constexpr FieldAccess eviction_policy_field() {
  return {
      [](const EngineConfig& c) {
        return enum_name(k_maxmemory_policy_choices, static_cast<int>(c.maxmemory_policy), false);
      },
      [](EngineConfig& c, std::string_view v) {
        c.maxmemory_policy = static_cast<EvictionPolicy>(enum_value(k_maxmemory_policy_choices, v));
      }};
}

constexpr FieldAccess bind_field() {
  return {[](const EngineConfig& c) { return join(c.bind, " "); },
          [](EngineConfig& c, std::string_view v) { c.bind = split_on_spaces(v); }};
}

// --- Validators of string directives ---

using ParseResult = Expected<std::string, std::string>;

ParseResult check_file_name(std::string_view value, std::string_view what, std::string_view kind) {
  if (value.empty()) {
    return Unexpected{fmt::format("{} can't be empty", what)};
  }
  if (value.find_first_of("/\\") != value.npos) {
    return Unexpected{fmt::format("{} can't be a path, just a {}", what, kind)};
  }
  return std::string(value);
}

ParseResult check_dbfilename(std::span<const std::string> args, std::string_view) {
  return check_file_name(args[0], "dbfilename", "filename");
}

ParseResult check_appendfilename(std::span<const std::string> args, std::string_view) {
  return check_file_name(args[0], "appendfilename", "filename");
}

ParseResult check_appenddirname(std::span<const std::string> args, std::string_view) {
  return check_file_name(args[0], "appenddirname", "dirname");
}

ParseResult check_cluster_config_file(std::span<const std::string> args, std::string_view) {
  if (args[0].empty()) {
    return Unexpected{std::string("cluster-config-file can't be empty")};
  }
  return args[0];
}

ParseResult check_ipv4(std::span<const std::string> args, std::string_view) {
  in_addr address{};
  if (!args[0].empty() && inet_pton(AF_INET, args[0].c_str(), &address) != 1) {
    return Unexpected{std::string("Invalid IPv4 address")};
  }
  return args[0];
}

ParseResult check_ipv6(std::span<const std::string> args, std::string_view) {
  in6_addr address{};
  if (!args[0].empty() && inet_pton(AF_INET6, args[0].c_str(), &address) != 1) {
    return Unexpected{std::string("Invalid IPv6 address")};
  }
  return args[0];
}

ParseResult check_hostname(std::span<const std::string> args, std::string_view) {
  const std::string& name = args[0];
  if (name.size() >= 256) {
    return Unexpected{std::string("Hostnames must be less than 256 characters")};
  }
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.';
    if (!ok) {
      return Unexpected{
          std::string("Hostnames may only contain alphanumeric characters, hyphens or dots")};
    }
  }
  return name;
}

ParseResult check_nodename(std::span<const std::string> args, std::string_view) {
  constexpr std::string_view k_forbidden = "!#$%&()*+;<>?@[]^{|}~";
  if (args[0].find_first_of(k_forbidden) != std::string::npos) {
    return Unexpected{std::string("Announced human node name contained invalid character")};
  }
  return args[0];
}

// --- Parsers of special directives ---

ParseResult parse_dir(std::span<const std::string> args, std::string_view) {
  if (args.size() != 1) {
    return Unexpected{std::string(k_wrong_arg_count)};
  }
  if (args[0].empty()) {
    return Unexpected{std::string("dir can't be empty")};
  }
  // Valkey chdir()s here; whether the directory exists is checked by the server.
  return args[0];
}

ParseResult parse_save(std::span<const std::string> args, std::string_view) {
  if (args.size() == 1 && args[0].empty()) {
    return std::string();
  }
  const std::string k_invalid = "Invalid save parameters";
  if (args.size() % 2 != 0) {
    return Unexpected{k_invalid};
  }
  std::string out;
  for (size_t i = 0; i < args.size(); i += 2) {
    bool whole_seconds = false;
    bool whole_changes = false;
    long long seconds = c_strtoll(args[i], whole_seconds);
    long long changes = c_strtoll(args[i + 1], whole_changes);
    if (!whole_seconds || !whole_changes || seconds < 1 || changes < 0) {
      return Unexpected{k_invalid};
    }
    // Valkey keeps the change count in an int.
    out += fmt::format("{}{} {}", out.empty() ? "" : " ", seconds, static_cast<int>(changes));
  }
  return out;
}

// The classes of client-output-buffer-limit as Valkey prints them, in ClientClass order.
constexpr std::string_view k_output_limit_classes[k_client_class_count] = {"normal", "slave",
                                                                           "pubsub"};

ParseResult parse_client_output_buffer_limit(std::span<const std::string> args,
                                             std::string_view current) {
  struct Limit {
    uint64_t hard = 0;
    uint64_t soft = 0;
    long long seconds = 0;
  };
  const auto& k_classes = k_output_limit_classes;
  Limit limits[3];
  // Classes not named keep their current limits.
  std::vector<std::string> now = split_on_spaces(current);
  for (size_t i = 0; i + 3 < now.size(); i += 4) {
    for (size_t c = 0; c < 3; ++c) {
      if (now[i] == k_classes[c]) {
        limits[c] = {canonical_u64(now[i + 1]), canonical_u64(now[i + 2]),
                     canonical_i64(now[i + 3])};
      }
    }
  }
  if (args.size() % 4 != 0) {
    return Unexpected{std::string("Wrong number of arguments in buffer limit configuration.")};
  }
  for (size_t i = 0; i < args.size(); i += 4) {
    int index = -1;
    if (iequals(args[i], "normal")) {
      index = 0;
    } else if (iequals(args[i], "slave") || iequals(args[i], "replica")) {
      index = 1;
    } else if (iequals(args[i], "pubsub")) {
      index = 2;
    }
    if (index < 0) {
      return Unexpected{
          std::string("Invalid client class specified in buffer limit configuration.")};
    }
    auto hard = parse_memory(args[i + 1]);
    auto soft = parse_memory(args[i + 2]);
    bool whole = false;
    // Valkey keeps the seconds in an int before checking the sign.
    int seconds = static_cast<int>(c_strtoll(args[i + 3], whole));
    if (!hard || !soft || seconds < 0 || !whole) {
      return Unexpected{std::string(
          "Error in hard, soft or soft_seconds setting in buffer limit configuration.")};
    }
    limits[index] = {*hard, *soft, seconds};
  }
  std::string out;
  for (size_t c = 0; c < 3; ++c) {
    out += fmt::format("{}{} {} {} {}", c == 0 ? "" : " ", k_classes[c], limits[c].hard,
                       limits[c].soft, limits[c].seconds);
  }
  return out;
}

// client-output-buffer-limit in its CONFIG GET form ("normal H S T slave H S T pubsub ...").
constexpr FieldAccess client_output_buffer_limit_field() {
  return {[](const EngineConfig& c) {
            std::string out;
            for (size_t i = 0; i < k_client_class_count; ++i) {
              const OutputBufferLimit& limit = c.client_output_buffer_limits[i];
              out += fmt::format("{}{} {} {} {}", i == 0 ? "" : " ", k_output_limit_classes[i],
                                 limit.hard_bytes, limit.soft_bytes, limit.soft_seconds);
            }
            return out;
          },
          [](EngineConfig& c, std::string_view v) {
            std::vector<std::string> words = split_on_spaces(v);
            for (size_t i = 0; i + 3 < words.size(); i += 4) {
              for (size_t k = 0; k < k_client_class_count; ++k) {
                if (words[i] == k_output_limit_classes[k]) {
                  c.client_output_buffer_limits[k] = {canonical_u64(words[i + 1]),
                                                      canonical_u64(words[i + 2]),
                                                      canonical_i64(words[i + 3])};
                }
              }
            }
          }};
}

ParseResult parse_oom_score_adj_values(std::span<const std::string> args, std::string_view) {
  if (args.size() != 3) {
    return Unexpected{std::string(k_wrong_arg_count)};
  }
  std::string out;
  for (const std::string& arg : args) {
    bool whole = false;
    long long value = c_strtoll(arg, whole);
    if (!whole || value < -2000 || value > 2000) {
      return Unexpected{
          std::string("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")};
    }
    out += fmt::format("{}{}", out.empty() ? "" : " ", value);
  }
  return out;
}

ParseResult parse_notify_keyspace_events(std::span<const std::string> args, std::string_view) {
  if (args.size() != 1) {
    return Unexpected{std::string(k_wrong_arg_count)};
  }
  std::optional<int> flags = notify_flags_from_letters(args[0]);
  if (!flags) {
    return Unexpected{std::string("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")};
  }
  // The stored form keeps an 'n' that printing hides, since Valkey still sends those events.
  std::string letters = notify_letters(*flags);
  bool hidden_new = (*flags & k_notify_all) == k_notify_all && (*flags & k_notify_new) != 0;
  return hidden_new ? letters + 'n' : letters;
}

// notify-keyspace-events lives in EngineConfig as Valkey's bit set.
constexpr FieldAccess notify_keyspace_events_field() {
  return {[](const EngineConfig& c) {
            return notify_letters(static_cast<int>(c.notify_keyspace_events));
          },
          [](EngineConfig& c, std::string_view v) {
            c.notify_keyspace_events =
                static_cast<uint32_t>(notify_flags_from_letters(v).value_or(0));
          }};
}

ParseResult parse_bind(std::span<const std::string> args, std::string_view) {
  if (args.size() > k_max_bind_addresses) {
    return Unexpected{std::string("Too many bind addresses specified.")};
  }
  if (args.size() == 1 && args[0].empty()) {
    return std::string();
  }
  return join(args, " ");
}

ParseResult parse_replicaof(std::span<const std::string> args, std::string_view) {
  if (args.size() != 2) {
    return Unexpected{std::string(k_wrong_arg_count)};
  }
  if (iequals(args[0], "no") && iequals(args[1], "one")) {
    return std::string();
  }
  bool whole = false;
  long long port = c_strtoll(args[1], whole);
  if (!whole || port < 0 || port > 65535) {
    return Unexpected{std::string("Invalid primary port")};
  }
  return fmt::format("{} {}", args[0], port);
}

ParseResult parse_latency_percentiles(std::span<const std::string> args, std::string_view) {
  if (args.size() == 1 && args[0].empty()) {
    return std::string();
  }
  std::string out;
  for (const std::string& arg : args) {
    double percentile = 0;
    if (!parse_double(arg, percentile)) {
      return Unexpected{std::string("Invalid latency-tracking-info-percentiles parameters")};
    }
    if (percentile > 100.0 || percentile < 0.0) {
      return Unexpected{std::string(
          "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")};
    }
    std::string text = fmt::format("{:f}", percentile);
    if (text.find('.') != std::string::npos) {
      text.erase(text.find_last_not_of('0') + 1);
      if (text.ends_with('.')) {
        text.pop_back();
      }
    }
    out += (out.empty() ? "" : " ") + text;
  }
  return out;
}

// --- Table rows ---

constexpr DirectiveSpec yes_no(std::string_view name, std::string_view alias, uint16_t flags,
                               std::string_view default_value, FieldAccess field = {}) {
  DirectiveSpec spec;
  spec.name = name;
  spec.alias = alias;
  spec.type = DirectiveType::boolean;
  spec.flags = flags;
  spec.default_value = default_value;
  spec.field = field;
  return spec;
}

constexpr DirectiveSpec bounded(DirectiveType type, std::string_view name, std::string_view alias,
                                uint16_t flags, int64_t lower, int64_t upper,
                                std::string_view default_value, FieldAccess field) {
  DirectiveSpec spec;
  spec.name = name;
  spec.alias = alias;
  spec.type = type;
  spec.flags = flags;
  spec.lower = lower;
  spec.upper = upper;
  spec.default_value = default_value;
  spec.field = field;
  return spec;
}

constexpr DirectiveSpec number(std::string_view name, std::string_view alias, uint16_t flags,
                               int64_t lower, int64_t upper, std::string_view default_value,
                               FieldAccess field = {}) {
  return bounded(DirectiveType::integer, name, alias, flags, lower, upper, default_value, field);
}

constexpr DirectiveSpec memory(std::string_view name, std::string_view alias, uint16_t flags,
                               int64_t lower, int64_t upper, std::string_view default_value,
                               FieldAccess field = {}) {
  return bounded(DirectiveType::memory, name, alias, flags, lower, upper, default_value, field);
}

constexpr DirectiveSpec octal(std::string_view name, std::string_view alias, uint16_t flags,
                              int64_t lower, int64_t upper, std::string_view default_value,
                              FieldAccess field = {}) {
  return bounded(DirectiveType::octal, name, alias, flags, lower, upper, default_value, field);
}

constexpr DirectiveSpec one_of(std::string_view name, std::string_view alias, uint16_t flags,
                               std::span<const EnumChoice> choices, std::string_view default_value,
                               FieldAccess field = {}) {
  DirectiveSpec spec;
  spec.name = name;
  spec.alias = alias;
  spec.type = DirectiveType::enumeration;
  spec.flags = flags;
  spec.choices = choices;
  spec.default_value = default_value;
  spec.field = field;
  return spec;
}

constexpr DirectiveSpec free_text(std::string_view name, std::string_view alias, uint16_t flags,
                                  std::string_view default_value, DirectiveParser check = nullptr,
                                  FieldAccess field = {}) {
  DirectiveSpec spec;
  spec.name = name;
  spec.alias = alias;
  spec.type = DirectiveType::string;
  spec.flags = flags;
  spec.default_value = default_value;
  spec.parser = check;
  spec.field = field;
  return spec;
}

constexpr DirectiveSpec special(std::string_view name, std::string_view alias, uint16_t flags,
                                std::string_view default_value, DirectiveParser parser,
                                FieldAccess field = {}) {
  DirectiveSpec spec = free_text(name, alias, flags, default_value, parser, field);
  spec.type = DirectiveType::special;
  return spec;
}

constexpr DirectiveSpec statement(std::string_view name, int min_args, int max_args,
                                  uint16_t flags = 0) {
  DirectiveSpec spec;
  spec.name = name;
  spec.type = DirectiveType::statement;
  spec.flags = flags;
  spec.min_args = min_args;
  spec.max_args = max_args;
  return spec;
}

// Valkey 8.0.1's config table (src/config.c), in its order. Builds with LOG_REQ_RES add
// req-res-logfile and client-default-resp; release builds, like Debian's, do not.
constexpr DirectiveSpec k_directives[] = {
    // clang-format off
    yes_no("rdbchecksum", {}, k_flag_immutable, "yes", bool_field<&EngineConfig::rdbchecksum>()),
    yes_no("daemonize", {}, k_flag_immutable, "no", bool_field<&EngineConfig::daemonize>()),
    yes_no("io-threads-do-reads", {}, k_flag_immutable, "yes"),
    yes_no("always-show-logo", {}, k_flag_immutable, "no"),
    yes_no("protected-mode", {}, 0, "yes", bool_field<&EngineConfig::protected_mode>()),
    yes_no("rdbcompression", {}, 0, "yes", bool_field<&EngineConfig::rdbcompression>()),
    yes_no("rdb-del-sync-files", {}, 0, "no"),
    yes_no("activerehashing", {}, 0, "yes"),
    yes_no("stop-writes-on-bgsave-error", {}, 0, "yes",
        bool_field<&EngineConfig::stop_writes_on_bgsave_error>()),
    yes_no("set-proc-title", {}, k_flag_immutable, "yes"),
    yes_no("dynamic-hz", {}, 0, "yes"),
    yes_no("lazyfree-lazy-eviction", {}, 0, "yes"),
    yes_no("lazyfree-lazy-expire", {}, 0, "yes"),
    yes_no("lazyfree-lazy-server-del", {}, 0, "yes"),
    yes_no("lazyfree-lazy-user-del", {}, 0, "yes"),
    yes_no("lazyfree-lazy-user-flush", {}, 0, "yes"),
    yes_no("repl-disable-tcp-nodelay", {}, 0, "no"),
    yes_no("repl-diskless-sync", {}, k_flag_read_kept, "yes"),
    yes_no("dual-channel-replication-enabled", {}, 0, "no"),
    yes_no("aof-rewrite-incremental-fsync", {}, 0, "yes"),
    yes_no("no-appendfsync-on-rewrite", {}, 0, "no",
        bool_field<&EngineConfig::no_appendfsync_on_rewrite>()),
    yes_no("cluster-require-full-coverage", {}, 0, "yes"),
    yes_no("rdb-save-incremental-fsync", {}, 0, "yes"),
    yes_no("aof-load-truncated", {}, 0, "yes", bool_field<&EngineConfig::aof_load_truncated>()),
    yes_no("aof-use-rdb-preamble", {}, 0, "yes",
        bool_field<&EngineConfig::aof_use_rdb_preamble>()),
    yes_no("aof-timestamp-enabled", {}, 0, "no"),
    yes_no("cluster-replica-no-failover", "cluster-slave-no-failover", 0, "no"),
    yes_no("replica-lazy-flush", "slave-lazy-flush", 0, "yes"),
    yes_no("replica-serve-stale-data", "slave-serve-stale-data", 0, "yes"),
    yes_no("replica-read-only", "slave-read-only", k_flag_read_kept, "yes"),
    yes_no("replica-ignore-maxmemory", "slave-ignore-maxmemory", 0, "yes"),
    yes_no("jemalloc-bg-thread", {}, 0, "yes"),
    yes_no("activedefrag", {}, 0, "no"),
    yes_no("syslog-enabled", {}, k_flag_immutable, "no"),
    yes_no("cluster-enabled", {}, k_flag_immutable, "no"),
    yes_no("appendonly", {}, 0, "no", bool_field<&EngineConfig::appendonly>()),
    yes_no("cluster-allow-reads-when-down", {}, 0, "no"),
    yes_no("cluster-allow-pubsubshard-when-down", {}, 0, "yes"),
    yes_no("crash-log-enabled", {}, 0, "yes"),
    yes_no("crash-memcheck-enabled", {}, 0, "yes"),
    yes_no("use-exit-on-panic", {}, k_flag_hidden, "no"),
    yes_no("disable-thp", {}, k_flag_immutable, "yes", bool_field<&EngineConfig::disable_thp>()),
    yes_no("cluster-allow-replica-migration", {}, 0, "yes"),
    yes_no("replica-announced", {}, k_flag_read_kept, "yes"),
    yes_no("latency-tracking", {}, 0, "yes"),
    yes_no("aof-disable-auto-gc", {}, k_flag_hidden, "no",
        bool_field<&EngineConfig::aof_disable_auto_gc>()),
    yes_no("replica-ignore-disk-write-errors", {}, 0, "no"),
    yes_no("extended-redis-compatibility", {}, 0, "no",
        bool_field<&EngineConfig::extended_redis_compatibility>()),
    yes_no("enable-debug-assert", {}, k_flag_immutable | k_flag_hidden, "no"),
    yes_no("cluster-slot-stats-enabled", {}, 0, "no"),
    yes_no("hide-user-data-from-log", {}, 0, "yes"),
    free_text("aclfile", {}, k_flag_immutable, "", nullptr, string_field<&EngineConfig::aclfile>()),
    free_text("unixsocket", {}, k_flag_immutable, "", nullptr,
        string_field<&EngineConfig::unixsocket>()),
    free_text("unixsocketgroup", {}, k_flag_immutable, "", nullptr,
        string_field<&EngineConfig::unixsocketgroup>()),
    free_text("pidfile", {}, k_flag_immutable, "", nullptr, string_field<&EngineConfig::pidfile>()),
    free_text("replica-announce-ip", "slave-announce-ip", 0, ""),
    free_text("primaryuser", "masteruser", k_flag_sensitive | k_flag_read_kept, ""),
    free_text("cluster-announce-ip", {}, 0, ""),
    free_text("cluster-announce-client-ipv4", {}, 0, "", check_ipv4),
    free_text("cluster-announce-client-ipv6", {}, 0, "", check_ipv6),
    free_text("cluster-config-file", {}, k_flag_immutable, "nodes.conf", check_cluster_config_file),
    free_text("cluster-announce-hostname", {}, 0, "", check_hostname),
    free_text("cluster-announce-human-nodename", {}, 0, "", check_nodename),
    free_text("syslog-ident", {}, k_flag_immutable, "valkey"),
    free_text("dbfilename", {}, k_flag_protected, "dump.rdb", check_dbfilename,
        string_field<&EngineConfig::dbfilename>()),
    free_text("appendfilename", {}, k_flag_immutable, "appendonly.aof", check_appendfilename,
        string_field<&EngineConfig::appendfilename>()),
    free_text("appenddirname", {}, k_flag_immutable, "appendonlydir", check_appenddirname,
        string_field<&EngineConfig::appenddirname>()),
    free_text("server-cpulist", "server_cpulist", k_flag_immutable, ""),
    free_text("bio-cpulist", "bio_cpulist", k_flag_immutable, ""),
    free_text("aof-rewrite-cpulist", "aof_rewrite_cpulist", k_flag_immutable, ""),
    free_text("bgsave-cpulist", "bgsave_cpulist", k_flag_immutable, ""),
    free_text("ignore-warnings", {}, 0, ""),
    free_text("proc-title-template", {}, 0, "{title} {listen-addr} {server-mode}"),
    free_text("bind-source-addr", {}, 0, ""),
    free_text("logfile", {}, k_flag_immutable, "", nullptr, string_field<&EngineConfig::logfile>()),
    free_text("locale-collate", {}, 0, ""),
    free_text("debug-context", {}, k_flag_hidden, ""),
    free_text("primaryauth", "masterauth", k_flag_sensitive | k_flag_read_kept, ""),
    free_text("requirepass", {}, k_flag_sensitive, "", nullptr,
        string_field<&EngineConfig::requirepass>()),
    free_text("availability-zone", {}, 0, ""),
    one_of("supervised", {}, k_flag_immutable, k_supervised_choices, "no",
        string_field<&EngineConfig::supervised>()),
    one_of("syslog-facility", {}, k_flag_immutable, k_syslog_facility_choices, "local0"),
    one_of("repl-diskless-load", {}, 0, k_repl_diskless_load_choices, "disabled"),
    one_of("loglevel", {}, 0, k_loglevel_choices, "notice",
        string_field<&EngineConfig::loglevel>()),
    one_of("maxmemory-policy", {}, 0, k_maxmemory_policy_choices, "noeviction",
        eviction_policy_field()),
    one_of("appendfsync", {}, 0, k_appendfsync_choices, "everysec",
        string_field<&EngineConfig::appendfsync>()),
    one_of("oom-score-adj", {}, 0, k_oom_score_adj_choices, "no"),
    one_of("acl-pubsub-default", {}, 0, k_acl_pubsub_default_choices, "resetchannels"),
    one_of("sanitize-dump-payload", {}, 0, k_sanitize_dump_payload_choices, "no"),
    one_of("enable-protected-configs", {}, k_flag_immutable, k_protected_action_choices, "no"),
    one_of("enable-debug-command", {}, k_flag_immutable, k_protected_action_choices, "no",
        enable_mode_field<&EngineConfig::enable_debug_command>()),
    one_of("enable-module-command", {}, k_flag_immutable, k_protected_action_choices, "no",
        enable_mode_field<&EngineConfig::enable_module_command>()),
    one_of("cluster-preferred-endpoint-type", {}, 0, k_endpoint_type_choices, "ip"),
    one_of("propagation-error-behavior", {}, 0, k_propagation_error_choices, "ignore"),
    one_of("shutdown-on-sigint", {}, k_flag_multi_arg, k_shutdown_on_signal_choices, "default",
        string_field<&EngineConfig::shutdown_on_sigint>()),
    one_of("shutdown-on-sigterm", {}, k_flag_multi_arg, k_shutdown_on_signal_choices, "default",
        string_field<&EngineConfig::shutdown_on_sigterm>()),
    number("databases", {}, k_flag_immutable, 1, k_int_max, "16",
        int_field<&EngineConfig::databases>()),
    number("port", {}, 0, 0, 65535, "6379", int_field<&EngineConfig::port>()),
    number("io-threads", {}, k_flag_immutable, 1, 128, "1"),
    number("events-per-io-thread", {}, 0, 0, k_int_max, "2"),
    number("prefetch-batch-max-size", {}, 0, 0, 128, "16"),
    number("auto-aof-rewrite-percentage", {}, 0, 0, k_int_max, "100",
        int_field<&EngineConfig::auto_aof_rewrite_percentage>()),
    number("cluster-replica-validity-factor", "cluster-slave-validity-factor", 0, 0, k_int_max,
        "10"),
    number("list-max-listpack-size", "list-max-ziplist-size", 0, k_int_min, k_int_max, "-2",
        int_field<&EngineConfig::list_max_listpack_size>()),
    number("tcp-keepalive", {}, 0, 0, k_int_max, "300", int_field<&EngineConfig::tcp_keepalive>()),
    number("cluster-migration-barrier", {}, 0, 0, k_int_max, "1"),
    number("active-defrag-cycle-min", {}, 0, 1, 99, "1"),
    number("active-defrag-cycle-max", {}, 0, 1, 99, "25"),
    number("active-defrag-threshold-lower", {}, 0, 0, 1000, "10"),
    number("active-defrag-threshold-upper", {}, 0, 0, 1000, "100"),
    number("lfu-log-factor", {}, 0, 0, k_int_max, "10", int_field<&EngineConfig::lfu_log_factor>()),
    number("lfu-decay-time", {}, 0, 0, k_int_max, "1", int_field<&EngineConfig::lfu_decay_time>()),
    number("replica-priority", "slave-priority", k_flag_read_kept, 0, k_int_max, "100"),
    number("repl-diskless-sync-delay", {}, k_flag_read_kept, 0, k_int_max, "5"),
    number("maxmemory-samples", {}, 0, 1, 64, "5", int_field<&EngineConfig::maxmemory_samples>()),
    number("maxmemory-eviction-tenacity", {}, 0, 0, 100, "10",
        int_field<&EngineConfig::maxmemory_eviction_tenacity>()),
    number("timeout", {}, 0, 0, k_int_max, "0", int_field<&EngineConfig::timeout>()),
    number("replica-announce-port", "slave-announce-port", 0, 0, 65535, "0"),
    number("tcp-backlog", {}, k_flag_immutable, 0, k_int_max, "511",
        int_field<&EngineConfig::tcp_backlog>()),
    number("cluster-port", {}, k_flag_immutable, 0, 65535, "0"),
    number("cluster-announce-bus-port", {}, 0, 0, 65535, "0"),
    number("cluster-announce-port", {}, 0, 0, 65535, "0"),
    number("cluster-announce-tls-port", {}, 0, 0, 65535, "0"),
    number("repl-timeout", {}, k_flag_read_kept, 1, k_int_max, "60"),
    number("repl-ping-replica-period", "repl-ping-slave-period", k_flag_read_kept, 1, k_int_max, "10"),
    number("list-compress-depth", {}, 0, 0, k_int_max, "0",
        int_field<&EngineConfig::list_compress_depth>()),
    number("rdb-key-save-delay", {}, k_flag_hidden, k_int_min, k_int_max, "0"),
    number("key-load-delay", {}, k_flag_hidden, k_int_min, k_int_max, "0"),
    number("active-expire-effort", {}, 0, 1, 10, "1"),
    number("hz", {}, 0, 0, k_int_max, "10", int_field<&EngineConfig::hz, k_min_hz, k_max_hz>()),
    number("min-replicas-to-write", "min-slaves-to-write", k_flag_read_kept, 0, k_int_max, "0"),
    number("min-replicas-max-lag", "min-slaves-max-lag", k_flag_read_kept, 0, k_int_max, "10"),
    number("watchdog-period", {}, k_flag_hidden, 0, k_int_max, "0"),
    number("shutdown-timeout", {}, 0, 0, k_int_max, "10"),
    number("repl-diskless-sync-max-replicas", {}, k_flag_read_kept, 0, k_int_max, "0"),
    number("maxclients", {}, k_flag_unsigned, 1, k_u32_max, "10000",
        int_field<&EngineConfig::maxclients>()),
    octal("unixsocketperm", {}, k_flag_immutable | k_flag_unsigned, 0, 0777, "0",
        octal_field<&EngineConfig::unixsocketperm>()),
    number("socket-mark-id", {}, k_flag_immutable | k_flag_unsigned, 0, k_u32_max, "0"),
    number("max-new-connections-per-cycle", {}, k_flag_unsigned, 1, 1000, "10"),
    number("max-new-tls-connections-per-cycle", {}, k_flag_unsigned, 1, 1000, "1"),
    number("active-defrag-max-scan-fields", {}, k_flag_unsigned, 1, k_i64_max, "1000"),
    number("slowlog-max-len", {}, k_flag_unsigned, 0, k_i64_max, "128"),
    number("acllog-max-len", {}, k_flag_unsigned, 0, k_i64_max, "128"),
    number("cluster-blacklist-ttl", {}, k_flag_unsigned, 0, k_u64_max, "60"),
    number("busy-reply-threshold", "lua-time-limit", 0, 0, k_i64_max, "5000"),
    number("cluster-node-timeout", {}, 0, 0, k_i64_max, "15000"),
    number("cluster-ping-interval", {}, k_flag_hidden, 0, k_i64_max, "0"),
    number("slowlog-log-slower-than", {}, 0, -1, k_i64_max, "10000"),
    number("latency-monitor-threshold", {}, 0, 0, k_i64_max, "0"),
    memory("proto-max-bulk-len", {}, 0, 1048576, k_i64_max, "536870912",
        u64_field<&EngineConfig::proto_max_bulk_len>()),
    number("stream-node-max-entries", {}, 0, 0, k_i64_max, "100",
        u64_field<&EngineConfig::stream_node_max_entries>()),
    memory("repl-backlog-size", {}, k_flag_read_kept, 1, k_i64_max, "10485760"),
    memory("maxmemory", {}, k_flag_unsigned, 0, k_u64_max, "0",
        u64_field<&EngineConfig::maxmemory>()),
    memory("cluster-link-sendbuf-limit", {}, k_flag_unsigned, 0, k_u64_max, "0"),
    number("hash-max-listpack-entries", "hash-max-ziplist-entries", k_flag_unsigned, 0, k_i64_max,
        "512", u64_field<&EngineConfig::hash_max_listpack_entries>()),
    number("set-max-intset-entries", {}, k_flag_unsigned, 0, k_i64_max, "512",
        u64_field<&EngineConfig::set_max_intset_entries>()),
    number("set-max-listpack-entries", {}, k_flag_unsigned, 0, k_i64_max, "128",
        u64_field<&EngineConfig::set_max_listpack_entries>()),
    number("set-max-listpack-value", {}, k_flag_unsigned, 0, k_i64_max, "64",
        u64_field<&EngineConfig::set_max_listpack_value>()),
    number("zset-max-listpack-entries", "zset-max-ziplist-entries", k_flag_unsigned, 0, k_i64_max,
        "128", u64_field<&EngineConfig::zset_max_listpack_entries>()),
    memory("active-defrag-ignore-bytes", {}, k_flag_unsigned, 1, k_i64_max, "104857600"),
    memory("hash-max-listpack-value", "hash-max-ziplist-value", k_flag_unsigned, 0, k_i64_max,
        "64", u64_field<&EngineConfig::hash_max_listpack_value>()),
    memory("stream-node-max-bytes", {}, k_flag_unsigned, 0, k_i64_max, "4096",
        u64_field<&EngineConfig::stream_node_max_bytes>()),
    memory("zset-max-listpack-value", "zset-max-ziplist-value", k_flag_unsigned, 0, k_i64_max,
        "64", u64_field<&EngineConfig::zset_max_listpack_value>()),
    memory("hll-sparse-max-bytes", {}, k_flag_unsigned, 0, k_i64_max, "3000"),
    number("tracking-table-max-keys", {}, k_flag_unsigned, 0, k_i64_max, "1000000"),
    memory("client-query-buffer-limit", {}, k_flag_unsigned, 1048576, k_i64_max, "1073741824",
        u64_field<&EngineConfig::client_query_buffer_limit>()),
    memory("maxmemory-clients", {}, k_flag_percent, -100, k_i64_max, "0"),
    number("repl-backlog-ttl", {}, 0, 0, k_i64_max, "3600"),
    memory("auto-aof-rewrite-min-size", {}, 0, 0, k_i64_max, "67108864",
        u64_field<&EngineConfig::auto_aof_rewrite_min_size>()),
    number("loading-process-events-interval-bytes", {}, k_flag_hidden, 1024, k_int_max, "2097152"),
    number("tls-port", {}, 0, 0, 65535, "0", int_field<&EngineConfig::tls_port>()),
    number("tls-session-cache-size", {}, 0, 0, k_int_max, "20480",
        int_field<&EngineConfig::tls_session_cache_size>()),
    number("tls-session-cache-timeout", {}, 0, 0, k_int_max, "300",
        int_field<&EngineConfig::tls_session_cache_timeout>()),
    yes_no("tls-cluster", {}, 0, "no"),
    yes_no("tls-replication", {}, 0, "no", bool_field<&EngineConfig::tls_replication>()),
    one_of("tls-auth-clients", {}, 0, k_tls_auth_clients_choices, "yes",
        tls_auth_clients_field()),
    yes_no("tls-prefer-server-ciphers", {}, 0, "no",
        bool_field<&EngineConfig::tls_prefer_server_ciphers>()),
    yes_no("tls-session-caching", {}, 0, "yes", bool_field<&EngineConfig::tls_session_caching>()),
    free_text("tls-cert-file", {}, 0, "", nullptr, string_field<&EngineConfig::tls_cert_file>()),
    free_text("tls-key-file", {}, 0, "", nullptr, string_field<&EngineConfig::tls_key_file>()),
    free_text("tls-key-file-pass", {}, k_flag_sensitive, "", nullptr,
        string_field<&EngineConfig::tls_key_file_pass>()),
    free_text("tls-client-cert-file", {}, 0, "", nullptr,
        string_field<&EngineConfig::tls_client_cert_file>()),
    free_text("tls-client-key-file", {}, 0, "", nullptr,
        string_field<&EngineConfig::tls_client_key_file>()),
    free_text("tls-client-key-file-pass", {}, k_flag_sensitive, "", nullptr,
        string_field<&EngineConfig::tls_client_key_file_pass>()),
    free_text("tls-dh-params-file", {}, 0, "", nullptr,
        string_field<&EngineConfig::tls_dh_params_file>()),
    free_text("tls-ca-cert-file", {}, 0, "", nullptr,
        string_field<&EngineConfig::tls_ca_cert_file>()),
    free_text("tls-ca-cert-dir", {}, 0, "", nullptr,
        string_field<&EngineConfig::tls_ca_cert_dir>()),
    free_text("tls-protocols", {}, 0, "", nullptr, string_field<&EngineConfig::tls_protocols>()),
    free_text("tls-ciphers", {}, 0, "", nullptr, string_field<&EngineConfig::tls_ciphers>()),
    free_text("tls-ciphersuites", {}, 0, "", nullptr,
        string_field<&EngineConfig::tls_ciphersuites>()),
    special("dir", {}, k_flag_protected, ".", parse_dir, string_field<&EngineConfig::dir>()),
    special("save", {}, k_flag_multi_arg, "3600 1 300 100 60 10000", parse_save,
            string_field<&EngineConfig::save>()),
    special("client-output-buffer-limit", {}, k_flag_multi_arg,
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        parse_client_output_buffer_limit, client_output_buffer_limit_field()),
    special("oom-score-adj-values", {}, k_flag_multi_arg, "0 200 800", parse_oom_score_adj_values),
    special("notify-keyspace-events", {}, 0, "", parse_notify_keyspace_events,
            notify_keyspace_events_field()),
    special("bind", {}, k_flag_multi_arg, "* -::*", parse_bind, bind_field()),
    special("replicaof", "slaveof", k_flag_immutable | k_flag_multi_arg | k_flag_read_kept, "",
            parse_replicaof),
    special("latency-tracking-info-percentiles", {}, k_flag_multi_arg, "50 99 99.9",
        parse_latency_percentiles),

    // keyshift's own settings (see k_flag_keyshift).
    yes_no("huge-page-heap", {}, k_flag_immutable | k_flag_hidden | k_flag_keyshift, "yes",
        bool_field<&EngineConfig::huge_page_heap>()),
    // clang-format on

    // Handled by the config-file reader itself rather than the table.
    statement("include", 1, 1),
    statement("rename-command", 2, 2),
    statement("user", 1, -1),
    statement("loadmodule", 1, -1),
    statement("sentinel", 0, -1),
    // Old names Valkey still reads from files and ignores.
    statement("list-max-ziplist-entries", 1, 1, k_flag_deprecated),
    statement("list-max-ziplist-value", 1, 1, k_flag_deprecated),
    statement("lua-replicate-commands", 1, 1, k_flag_deprecated),
};

// --- Parsing values ---

ParseResult parse_number(const DirectiveSpec& spec, const std::string& text) {
  bool memory_value = spec.type == DirectiveType::memory;
  bool percent = (spec.flags & k_flag_percent) != 0;
  bool octal_value = spec.type == DirectiveType::octal;
  int64_t value = 0;
  bool parsed = false;
  // The same attempts, in the same order, as Valkey's numericParseString().
  if (memory_value) {
    if (auto bytes = parse_memory(text)) {
      value = static_cast<int64_t>(*bytes);
      parsed = true;
    }
  }
  if (!parsed && percent && text.size() > 1 && text.back() == '%') {
    int64_t share = 0;
    if (parse_i64(std::string_view(text).substr(0, text.size() - 1), share) && share >= 0) {
      value = -share;  // Valkey stores percentages as negative numbers
      parsed = true;
    }
  }
  if (!parsed && octal_value) {
    char* end = nullptr;
    errno = 0;
    long long octal_number = std::strtoll(text.c_str(), &end, 8);
    if (errno == 0 && *end == '\0') {
      value = octal_number;
      parsed = true;
    }
  }
  if (!parsed && spec.type == DirectiveType::integer) {
    parsed = parse_i64(text, value);
  }
  if (!parsed) {
    if (memory_value && percent) {
      return Unexpected{std::string("argument must be a memory or percent value")};
    }
    if (memory_value) {
      return Unexpected{std::string("argument must be a memory value")};
    }
    if (octal_value) {
      return Unexpected{std::string("argument couldn't be parsed as an octal number")};
    }
    return Unexpected{std::string("argument couldn't be parsed into an integer")};
  }

  if ((spec.flags & k_flag_unsigned) != 0) {
    auto as_unsigned = static_cast<uint64_t>(value);
    auto lower = static_cast<uint64_t>(spec.lower);
    auto upper = static_cast<uint64_t>(spec.upper);
    if (as_unsigned < lower || as_unsigned > upper) {
      return Unexpected{
          octal_value
              ? fmt::format("argument must be between {:o} and {:o} inclusive", lower, upper)
              : fmt::format("argument must be between {} and {} inclusive", lower, upper)};
    }
  } else if (percent && value < 0) {
    if (value < spec.lower) {
      return Unexpected{
          fmt::format("percentage argument must be less or equal to {}", -spec.lower)};
    }
  } else if (value < spec.lower || value > spec.upper) {
    return Unexpected{
        fmt::format("argument must be between {} and {} inclusive", spec.lower, spec.upper)};
  }

  if (percent && value < 0) {
    return fmt::format("{}%", -value);
  }
  if (memory_value) {
    return std::to_string(static_cast<uint64_t>(value));
  }
  if (octal_value) {
    return fmt::format("{:o}", static_cast<uint64_t>(value));
  }
  return std::to_string(value);
}

ParseResult parse_enumeration(const DirectiveSpec& spec, std::span<const std::string> args) {
  bool flag_set = (spec.flags & k_flag_multi_arg) != 0;
  bool ok = !args.empty() && (flag_set || args.size() == 1);
  int value = 0;
  for (const std::string& arg : args) {
    bool matched = false;
    for (const EnumChoice& choice : spec.choices) {
      if (iequals(arg, choice.name)) {
        value |= choice.value;
        matched = true;
      }
    }
    ok = ok && matched;
  }
  if (!ok) {
    std::string message = "argument(s) must be one of the following: ";
    for (size_t i = 0; i < spec.choices.size(); ++i) {
      message += i == 0 ? "" : ", ";
      message += spec.choices[i].name;
    }
    return Unexpected{std::move(message)};
  }
  if (spec.choices.data() == std::data(k_shutdown_on_signal_choices) &&
      (value & k_shutdown_save) != 0 && (value & k_shutdown_nosave) != 0) {
    return Unexpected{std::string("shutdown options SAVE and NOSAVE can't be used simultaneously")};
  }
  return enum_name(spec.choices, value, flag_set);
}

// The CONFIG GET form of `args` for `spec`, or Valkey's complaint; `args` already has the
// count a single-value directive needs.
ParseResult parse_value(const DirectiveSpec& spec, std::span<const std::string> args,
                        std::string_view current) {
  switch (spec.type) {
    case DirectiveType::boolean:
      if (iequals(args[0], "yes")) {
        return std::string("yes");
      }
      if (iequals(args[0], "no")) {
        return std::string("no");
      }
      return Unexpected{std::string("argument must be 'yes' or 'no'")};
    case DirectiveType::integer:
    case DirectiveType::memory:
    case DirectiveType::octal:
      return parse_number(spec, args[0]);
    case DirectiveType::enumeration:
      return parse_enumeration(spec, args);
    case DirectiveType::string:
      return spec.parser != nullptr ? spec.parser(args, current) : ParseResult(args[0]);
    case DirectiveType::special:
      return spec.parser(args, current);
    case DirectiveType::statement:
      break;
  }
  return Unexpected{std::string(k_bad_directive)};
}

void store(const DirectiveSpec& spec, std::string value, EngineConfig& config) {
  if (spec.implemented()) {
    spec.field.set(config, value);
  } else {
    config.unimplemented_settings.insert_or_assign(std::string(spec.name), std::move(value));
  }
}

// The name Valkey reports for a setting reached through `typed`: its alias when the alias
// was used.
std::string_view registered_name(const DirectiveSpec& spec, std::string_view typed) {
  return !spec.alias.empty() && iequals(typed, spec.alias) ? spec.alias : spec.name;
}

std::string location(const Directive& directive) {
  return fmt::format("{}:{}", directive.file, directive.line);
}

ConfigError error_at(const Directive& directive, std::string message) {
  return ConfigError{directive.file, directive.line, std::move(message), directive.text};
}

// Settings keyshift does not act on where any value but the one listed (Valkey's default,
// which is what keyshift does) would mislead if it were ignored: they restrict access,
// promise persistence or replication, or limit memory. Refused in files and CONFIG SET.
struct RefusedSetting {
  std::string_view name;
  std::string_view accepted;  // CONFIG GET form of the only value accepted
  std::string_view why;
};
constexpr RefusedSetting k_refused_settings[] = {
    {"aof-timestamp-enabled", "no",
     "AOF timestamp annotations are not written by keyshift: the point-in-time recovery the "
     "setting promises would have nothing to go by"},
    {"cluster-enabled", "no", "cluster mode is not implemented by keyshift"},
    {"maxmemory-clients", "0",
     "client eviction is not implemented by keyshift: the memory of clients would not be "
     "limited"},
    {"syslog-enabled", "no",
     "syslog is not implemented by keyshift: the log would not reach syslog"},
    {"socket-mark-id", "0",
     "socket marks are not implemented by keyshift: connections would not carry the mark "
     "that firewall rules expect"},
};

// Why `value` (CONFIG GET form) of `spec` is refused, or nullptr when it is accepted.
const std::string_view* refusal(const DirectiveSpec& spec, std::string_view value) {
  for (const RefusedSetting& refused : k_refused_settings) {
    if (refused.name == spec.name && value != refused.accepted) {
      return &refused.why;
    }
  }
  return nullptr;
}

// Reads one directive as loadServerConfigFromString() does; nullopt when accepted.
class DirectiveApplier {
 public:
  DirectiveApplier(EngineConfig& config, std::vector<std::string>& warnings)
      : m_config(config), m_warnings(warnings) {}

  std::optional<ConfigError> apply(const Directive& directive) {
    const DirectiveSpec* spec = find_directive(directive.name);
    if (spec != nullptr && spec->is_setting()) {
      return apply_setting(*spec, directive);
    }
    int count = static_cast<int>(directive.args.size());
    if (spec != nullptr && count >= spec->min_args &&
        (spec->max_args < 0 || count <= spec->max_args)) {
      return apply_statement(*spec, directive);
    }
    // Dotted names are module settings, which Valkey queues for the modules it loads.
    if (directive.name.find('.') != std::string::npos) {
      if (directive.args.empty()) {
        return error_at(directive, "Module config specified without value");
      }
      warn(directive, "module setting ignored: keyshift does not load modules");
      return std::nullopt;
    }
    return error_at(directive, std::string(k_bad_directive));
  }

 private:
  std::optional<ConfigError> apply_setting(const DirectiveSpec& spec, const Directive& directive) {
    bool list = (spec.flags & k_flag_multi_arg) != 0;
    if (!list && directive.args.size() != 1) {
      return error_at(directive, std::string(k_wrong_arg_count));
    }
    std::vector<std::string> words;
    std::span<const std::string> args = directive.args;
    // A list given as one quoted word is split again: bind "127.0.0.1 ::1". Valkey reads a
    // word that does not split (bind "a \"b") as no words at all, and so do we.
    if (list && args.size() == 1 && !args[0].empty()) {
      if (!split_args(args[0], words)) {
        words.clear();
      }
      args = words;
    }
    std::string current = directive_value(spec, m_config);
    auto value = parse_value(spec, args, current);
    if (!value) {
      return error_at(directive, std::move(value).error());
    }
    if (spec.name == "save") {
      // In a file the first save line replaces the defaults and later ones add to it;
      // save "" always clears.
      bool clears = args.size() == 1 && args[0].empty();
      if (m_save_seen && !clears && !current.empty()) {
        *value = value->empty() ? current : current + " " + *value;
      }
      m_save_seen = true;
    }
    if (const std::string_view* why = refusal(spec, *value)) {
      return error_at(directive, std::string(*why));
    }
    store(spec, std::move(*value), m_config);
    if (!spec.implemented() && (spec.flags & k_flag_read_kept) == 0) {
      warn(directive, "not implemented by keyshift; the value is only kept for CONFIG GET");
    }
    return std::nullopt;
  }

  std::optional<ConfigError> apply_statement(const DirectiveSpec& spec,
                                             const Directive& directive) {
    if (spec.name == "user") {
      // Valkey's ACLAppendUserForLoading: syntax now, unknown commands when the engine
      // starts. The word it names is counted from "user" (Valkey's own indexing).
      const std::string& name = directive.args[0];
      bool duplicate = std::any_of(m_config.acl_users.begin(), m_config.acl_users.end(),
                                   [&](const AclUserLine& u) { return u.args[0] == name; });
      std::optional<std::pair<size_t, acl::RuleError>> bad;
      if (duplicate) {
        bad = std::pair<size_t, acl::RuleError>{1, acl::RuleError::duplicate_user};
      } else {
        bad = acl::check_user_line(directive.args);
      }
      if (bad) {
        size_t at = bad->first;
        std::string_view word =
            at == 0 ? std::string_view("user") : std::string_view(directive.args[at - 1]);
        return error_at(directive, fmt::format("Error in user declaration '{}': {}", word,
                                               acl::rule_error_text(bad->second)));
      }
      m_config.acl_users.push_back({directive.args, directive.file, directive.line});
      return std::nullopt;
    }
    if (spec.name == "rename-command") {
      return apply_rename(directive);
    }
    if ((spec.flags & k_flag_deprecated) != 0) {
      warn(directive, "deprecated and ignored");
    } else if (spec.name == "sentinel") {
      if (!directive.args.empty()) {
        return error_at(directive, "sentinel directive while not in sentinel mode");
      }
      warn(directive, "ignored: keyshift has no sentinel mode");
    } else if (spec.name == "include") {
      warn(directive, "ignored: includes are only followed while reading config files");
    } else {
      warn(directive, "not implemented by keyshift; ignored");
    }
    return std::nullopt;
  }

  // Valkey checks each rename against the command table as renamed so far, and stops at the
  // first that names no command or a name already taken.
  std::optional<ConfigError> apply_rename(const Directive& directive) {
    if (!m_commands) {
      m_commands = std::make_unique<CommandRegistry>();
      register_all_families(*m_commands);
      for (const CommandRenameLine& r : m_config.renamed_commands) {
        m_commands->rename(r.from, r.to);
      }
    }
    switch (m_commands->rename(directive.args[0], directive.args[1])) {
      case RenameStatus::ok:
        m_config.renamed_commands.push_back(
            {directive.args[0], directive.args[1], directive.file, directive.line});
        return std::nullopt;
      case RenameStatus::no_such_command:
        return error_at(directive, std::string(errors::k_rename_no_such_command));
      case RenameStatus::target_exists:
        break;
    }
    return error_at(directive, std::string(errors::k_rename_target_exists));
  }

  void warn(const Directive& directive, std::string_view what) {
    m_warnings.push_back(fmt::format("{}: '{}' {}", location(directive), directive.name, what));
  }

 private:
  EngineConfig& m_config;
  std::vector<std::string>& m_warnings;
  bool m_save_seen = false;
  std::unique_ptr<CommandRegistry> m_commands;  // built at the first rename-command
};

}  // namespace

std::span<const DirectiveSpec> directive_table() {
  return k_directives;
}

const DirectiveSpec* find_directive(std::string_view name) {
  for (const DirectiveSpec& spec : k_directives) {
    if (iequals(name, spec.name) || (!spec.alias.empty() && iequals(name, spec.alias))) {
      return &spec;
    }
  }
  return nullptr;
}

std::string directive_value(const DirectiveSpec& spec, const EngineConfig& config) {
  if (spec.implemented()) {
    return spec.field.get(config);
  }
  auto it = config.unimplemented_settings.find(spec.name);
  return it != config.unimplemented_settings.end() ? it->second : std::string(spec.default_value);
}

std::optional<ConfigError> apply_directives(std::span<const Directive> directives,
                                            EngineConfig& config,
                                            std::vector<std::string>& warnings) {
  EngineConfig next = config;
  std::vector<std::string> notes;
  DirectiveApplier applier(next, notes);
  for (const Directive& directive : directives) {
    if (auto error = applier.apply(directive)) {
      return error;
    }
  }
  // The checks Valkey makes once the whole configuration is read.
  auto setting = [&](std::string_view name) {
    return directive_value(*find_directive(name), next);
  };
  if (setting("cluster-enabled") == "yes") {
    if (!setting("replicaof").empty()) {
      return ConfigError{"", 0, "replicaof directive not allowed in cluster mode", ""};
    }
    if (next.databases > 1) {
      notes.push_back(fmt::format(
          "WARNING: Changing databases number from {} to 1 since we are in cluster mode",
          next.databases));
      next.databases = 1;
    }
  }
  // Older configs may ask for up to 128 I/O threads; Valkey 8 quietly runs at most 16.
  auto threads = next.unimplemented_settings.find("io-threads");
  if (threads != next.unimplemented_settings.end() &&
      canonical_i64(threads->second) > k_max_io_threads) {
    threads->second = std::to_string(k_max_io_threads);
  }
  config = std::move(next);
  warnings.insert(warnings.end(), std::make_move_iterator(notes.begin()),
                  std::make_move_iterator(notes.end()));
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> config_get(const EngineConfig& config,
                                                            std::span<const std::string> patterns) {
  std::vector<std::pair<std::string, std::string>> found;
  auto seen = [&](std::string_view name) {
    return std::any_of(found.begin(), found.end(),
                       [&](const auto& entry) { return iequals(entry.first, name); });
  };
  for (const std::string& pattern : patterns) {
    if (pattern.find_first_of("[*?") == std::string::npos) {
      // A plain name is looked up directly, reaches hidden settings and is echoed as typed.
      const DirectiveSpec* spec = find_directive(pattern);
      if (spec != nullptr && spec->is_setting() && !seen(pattern)) {
        found.emplace_back(pattern, directive_value(*spec, config));
      }
      continue;
    }
    for (const DirectiveSpec& spec : k_directives) {
      if (!spec.is_setting() || (spec.flags & k_flag_hidden) != 0) {
        continue;
      }
      for (std::string_view name : {spec.name, spec.alias}) {
        if (!name.empty() && !seen(name) && glob_match(pattern, name, GlobCase::insensitive)) {
          found.emplace_back(std::string(name), directive_value(spec, config));
        }
      }
    }
  }
  return found;
}

Expected<std::vector<std::string_view>, std::string> config_set(
    EngineConfig& config, std::span<const std::string> name_value_pairs, ClientLocality locality) {
  // Valkey's arity check (-4) comes before its own pairing check.
  if (name_value_pairs.size() < 2) {
    return Unexpected{std::string("ERR wrong number of arguments for 'config|set' command")};
  }
  if (name_value_pairs.size() % 2 != 0) {
    return Unexpected{std::string("ERR syntax error")};
  }
  auto failed = [](std::string_view name, std::string_view why) {
    return Unexpected{
        fmt::format("ERR CONFIG SET failed (possibly related to argument '{}') - {}", name, why)};
  };

  // First every name is checked; as in Valkey the first problem found is the one reported.
  std::vector<std::pair<const DirectiveSpec*, std::string_view>> targets;
  for (size_t i = 0; i < name_value_pairs.size(); i += 2) {
    const std::string& typed = name_value_pairs[i];
    const DirectiveSpec* spec = find_directive(typed);
    if (spec == nullptr || !spec->is_setting()) {
      return Unexpected{
          fmt::format("ERR Unknown option or number of arguments for CONFIG SET - '{}'", typed)};
    }
    if ((spec->flags & k_flag_immutable) != 0) {
      return failed(typed, "can't set immutable config");
    }
    if ((spec->flags & k_flag_protected) != 0) {
      std::string allowed = directive_value(*find_directive("enable-protected-configs"), config);
      if (allowed != "yes" && !(allowed == "local" && locality == ClientLocality::local)) {
        return failed(typed, "can't set protected config");
      }
    }
    std::string_view used = registered_name(*spec, typed);
    // Valkey registers an alias as a separate entry, so only the same spelling repeats.
    for (const auto& [other, other_name] : targets) {
      if (other == spec && other_name == used) {
        return failed(typed, "duplicate parameter");
      }
    }
    targets.emplace_back(spec, used);
  }

  EngineConfig next = config;
  for (size_t i = 0; i < targets.size(); ++i) {
    const auto& [spec, used] = targets[i];
    const std::string& text = name_value_pairs[2 * i + 1];
    std::vector<std::string> words;
    if ((spec->flags & k_flag_multi_arg) != 0) {
      words = split_on_spaces(text);
    } else {
      words.push_back(text);
    }
    auto value = parse_value(*spec, words, directive_value(*spec, next));
    if (!value) {
      return failed(used, value.error());
    }
    if (const std::string_view* why = refusal(*spec, *value)) {
      return failed(used, *why);
    }
    store(*spec, std::move(*value), next);
  }

  std::vector<std::string_view> changed;
  for (const auto& [spec, used] : targets) {
    if (directive_value(*spec, next) != directive_value(*spec, config) &&
        std::find(changed.begin(), changed.end(), spec->name) == changed.end()) {
      changed.push_back(spec->name);
    }
  }
  config = std::move(next);
  return changed;
}

std::string render_config(const EngineConfig& config) {
  std::string out;
  for (const DirectiveSpec& spec : k_directives) {
    if (!spec.is_setting()) {
      continue;
    }
    std::string value = directive_value(spec, config);
    if (value == spec.default_value) {
      continue;
    }
    out += spec.name;
    if ((spec.flags & k_flag_multi_arg) != 0 && !value.empty()) {
      for (const std::string& word : split_on_spaces(value)) {
        out += ' ';
        out += quote_arg(word);
      }
    } else {
      out += ' ';
      out += quote_arg(value);
    }
    out += '\n';
  }
  return out;
}

}  // namespace keyshift::engine
