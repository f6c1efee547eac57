#include "compat/bench/setup.hpp"

#include <fmt/core.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace keyshift::compat {
namespace {

/// First chunk of a share prefill: enough keys to measure the bytes one key costs.
constexpr uint64_t k_probe_keys = 10'000;
/// A share prefill stops when used_memory is within this fraction below the goal.
constexpr double k_share_slack = 0.002;

engine::RespConnection open(const BenchTarget& target) {
  auto conn = engine::RespConnection::connect(target);
  if (!conn) {
    throw BenchError(conn.error());
  }
  return std::move(*conn);
}

engine::RespValue call(engine::RespConnection& conn, std::vector<std::string> args) {
  auto reply = conn.call(args);
  if (!reply) {
    throw BenchError(reply.error());
  }
  return std::move(*reply);
}

std::map<std::string, std::string> info_fields(engine::RespConnection& conn,
                                               const std::string& section) {
  auto reply = call(conn, {"INFO", section});
  if (reply.is_error()) {
    throw BenchError(fmt::format("INFO {} failed: {}", section, reply.str));
  }
  std::map<std::string, std::string> out;
  std::string_view text = reply.str;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    size_t colon = line.find(':');
    if (line.empty() || line.front() == '#' || colon == std::string_view::npos) {
      continue;
    }
    out.emplace(std::string(line.substr(0, colon)), std::string(line.substr(colon + 1)));
  }
  return out;
}

uint64_t to_u64(const std::string& text) {
  uint64_t v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

std::string get(const std::map<std::string, std::string>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? std::string() : it->second;
}

}  // namespace

TargetInfo query_target(const BenchTarget& target) {
  engine::RespConnection conn = open(target);
  auto server = info_fields(conn, "server");
  auto memory = info_fields(conn, "memory");
  TargetInfo info;
  info.redis_version = get(server, "redis_version");
  if (!get(server, "keyshift_version").empty()) {
    info.server_name = "keyshift";
    info.server_version = get(server, "keyshift_version");
  } else if (!get(server, "server_name").empty()) {
    info.server_name = get(server, "server_name");
    info.server_version = get(server, info.server_name + "_version");
  } else {
    info.server_name = "redis";
    info.server_version = info.redis_version;
  }
  info.os = get(server, "os");
  info.arch_bits = get(server, "arch_bits");
  info.maxmemory = to_u64(get(memory, "maxmemory"));
  info.maxmemory_policy = get(memory, "maxmemory_policy");
  auto io = call(conn, {"CONFIG", "GET", "io-threads"});
  if (io.type == engine::RespValue::Type::array && io.elements.size() == 2) {
    info.io_threads = static_cast<int64_t>(to_u64(io.elements[1].str));
  } else if (io.type == engine::RespValue::Type::map && io.elements.size() == 2) {
    info.io_threads = static_cast<int64_t>(to_u64(io.elements[1].str));
  }
  return info;
}

uint64_t query_used_memory(const BenchTarget& target) {
  engine::RespConnection conn = open(target);
  return to_u64(get(info_fields(conn, "memory"), "used_memory"));
}

PrefillSpec parse_prefill(std::string_view text) {
  PrefillSpec spec;
  auto bad = [&]() {
    return BenchError(
        fmt::format("--prefill '{}': expected a share of maxmemory such as 35% "
                    "(1-100) or a number of keys",
                    text));
  };
  if (!text.empty() && text.back() == '%') {
    double v = 0;
    std::string_view num = text.substr(0, text.size() - 1);
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
    if (num.empty() || ec != std::errc() || p != num.data() + num.size() || !(v > 0) || v > 100) {
      throw bad();
    }
    spec.percent = true;
    spec.share = v / 100.0;
    return spec;
  }
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), spec.keys);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || spec.keys == 0) {
    throw bad();
  }
  return spec;
}

PrefillResult prefill(const BenchTest& workload, const LoadOptions& options,
                      const PrefillSpec& spec, uint64_t maxmemory,
                      const std::function<void(uint64_t)>& progress) {
  auto start = std::chrono::steady_clock::now();
  BenchTest fill = workload;
  fill.title = "prefill";
  fill.ratio_set = 1;
  fill.ratio_get = 0;
  fill.set_pattern = KeyPattern::sequential;
  LoadOptions opts = options;
  opts.pipeline = std::max<uint32_t>(options.pipeline, 32);
  opts.seconds = 0;
  opts.progress = nullptr;
  const uint64_t range = workload.key_maximum - workload.key_minimum + 1;
  PrefillResult result;
  auto write_keys = [&](uint64_t count) {
    if (result.keys + count > range) {
      throw BenchError(fmt::format(
          "--prefill needs more than the {} keys between --key-minimum and --key-maximum; "
          "raise --key-maximum or --data-size",
          range));
    }
    fill.key_minimum = workload.key_minimum + result.keys;
    fill.key_maximum = fill.key_minimum + count - 1;
    opts.requests = count;
    run_test(fill, opts);
    result.keys += count;
    if (progress) {
      progress(result.keys);
    }
  };
  if (!spec.percent) {
    uint64_t left = spec.keys;
    while (left > 0) {
      uint64_t chunk = std::min<uint64_t>(left, 100'000);
      write_keys(chunk);
      left -= chunk;
    }
  } else {
    if (maxmemory == 0) {
      throw BenchError(
          "--prefill with a percentage needs the target's maxmemory, and it has none "
          "(maxmemory 0); give a number of keys instead");
    }
    const double goal = spec.share * static_cast<double>(maxmemory);
    uint64_t used = query_used_memory(options.target);
    const uint64_t base = used;
    uint64_t chunk = k_probe_keys;
    while (static_cast<double>(used) < goal * (1.0 - k_share_slack)) {
      write_keys(chunk);
      uint64_t now = query_used_memory(options.target);
      if (now <= used && chunk >= 1000) {
        throw BenchError(
            fmt::format("used_memory stopped growing at {} bytes while prefilling (is the target "
                        "evicting keys?)",
                        now));
      }
      used = now;
      double per_key =
          static_cast<double>(used > base ? used - base : 1) / static_cast<double>(result.keys);
      double missing = goal - static_cast<double>(used);
      if (missing <= 0) {
        break;
      }
      // Aim a little short: used_memory grows in steps (rehashing), so approach from below.
      double keys = std::ceil(missing / std::max(per_key, 1.0));
      chunk = static_cast<uint64_t>(keys > 2000 ? keys * 0.9 : keys);
      chunk = std::max<uint64_t>(chunk, 1);
    }
    result.used_memory = used;
    result.share = static_cast<double>(used) / static_cast<double>(maxmemory);
  }
  if (!spec.percent) {
    result.used_memory = query_used_memory(options.target);
    result.share = maxmemory == 0
                       ? 0
                       : static_cast<double>(result.used_memory) / static_cast<double>(maxmemory);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace keyshift::compat
