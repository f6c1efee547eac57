#include "compat/bench/load.hpp"

#include "engine/resp/pipelined_connection.hpp"
#include "engine/util/strings.hpp"

#include <fmt/core.h>

#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

namespace keyshift::compat {
namespace {

constexpr int k_max_events = 256;

int64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

double cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/// splitmix64: small, fast, and good enough to spread keys.
class Rng {
 public:
  explicit Rng(uint64_t seed) : m_state(seed) {}
  uint64_t next() {
    uint64_t z = (m_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in (0, 1].
  double unit() { return (static_cast<double>(next() >> 11) + 1.0) * (1.0 / 9007199254740992.0); }

 private:
  uint64_t m_state;
};

std::string errno_text() {
  return std::strerror(errno);
}

// ---- request generation ---------------------------------------------------------------

/// Writes the requests of one test; shared read-only by every thread.
class RequestSource {
 public:
  explicit RequestSource(const BenchTest& test) : m_test(test) {
    if (test.workload) {
      m_cycle = test.ratio_set + test.ratio_get;
      uint64_t range = test.key_maximum - test.key_minimum + 1;
      m_range = range;
      m_median = static_cast<double>(test.key_minimum) + static_cast<double>(range - 1) / 2.0;
      m_stddev = static_cast<double>(range) / 6.0;
      m_max_size = 64 + 2 * 24 + test.key_prefix.size() + 20 + test.value.size();
    } else {
      m_max_size = test.request.bytes().size();
    }
  }

  /// Bytes one request can take at most.
  size_t max_size() const { return m_max_size; }
  /// Number of commands (1, or 2 for SET/GET workloads).
  size_t kinds() const { return m_test.workload ? 2 : 1; }
  std::string name(size_t kind) const {
    return m_test.workload ? (kind == 0 ? "SET" : "GET") : m_test.command;
  }

  /// Writes request number `seq` at `dst`; returns its kind and advances `dst`.
  uint8_t write(uint64_t seq, Rng& rng, char*& dst) const {
    if (!m_test.workload) {
      const uint64_t space = m_test.keyspace;
      m_test.request.write(dst, space != 0, [&rng, space]() { return rng.next() % space; });
      dst += m_test.request.bytes().size();
      return 0;
    }
    uint64_t round = seq / m_cycle;
    uint64_t pos = seq % m_cycle;
    bool is_set = pos < m_test.ratio_set;
    uint64_t ordinal = is_set ? round * m_test.ratio_set + pos
                              : round * m_test.ratio_get + (pos - m_test.ratio_set);
    uint64_t key = pick(is_set ? m_test.set_pattern : m_test.get_pattern, ordinal, rng);
    if (is_set) {
      std::memcpy(dst, "*3\r\n$3\r\nSET\r\n", 13);
      dst += 13;
    } else {
      std::memcpy(dst, "*2\r\n$3\r\nGET\r\n", 13);
      dst += 13;
    }
    char digits[24];
    char* dend = engine::write_decimal(digits, key);
    size_t dlen = static_cast<size_t>(dend - digits);
    dst = engine::write_bulk_header(dst, m_test.key_prefix.size() + dlen);
    std::memcpy(dst, m_test.key_prefix.data(), m_test.key_prefix.size());
    dst += m_test.key_prefix.size();
    std::memcpy(dst, digits, dlen);
    dst += dlen;
    *dst++ = '\r';
    *dst++ = '\n';
    if (is_set) {
      dst = engine::write_bulk_header(dst, m_test.value.size());
      std::memcpy(dst, m_test.value.data(), m_test.value.size());
      dst += m_test.value.size();
      *dst++ = '\r';
      *dst++ = '\n';
    }
    return is_set ? 0 : 1;
  }

 private:
  uint64_t pick(KeyPattern pattern, uint64_t ordinal, Rng& rng) const {
    switch (pattern) {
      case KeyPattern::sequential:
        return m_test.key_minimum + ordinal % m_range;
      case KeyPattern::gaussian: {
        constexpr double k_two_pi = 6.283185307179586;
        double z = std::sqrt(-2.0 * std::log(rng.unit())) * std::cos(k_two_pi * rng.unit());
        double k = std::round(m_median + z * m_stddev);
        double lo = static_cast<double>(m_test.key_minimum);
        double hi = static_cast<double>(m_test.key_maximum);
        return static_cast<uint64_t>(std::clamp(k, lo, hi));
      }
      case KeyPattern::random:
        break;
    }
    return m_test.key_minimum + rng.next() % m_range;
  }

  const BenchTest& m_test;
  uint64_t m_cycle = 1;
  uint64_t m_range = 1;
  double m_median = 0;
  double m_stddev = 1;
  size_t m_max_size = 0;
};

// ---- the event loops ------------------------------------------------------------------

/// State shared by every thread of one test.
struct Shared {
  std::atomic<uint64_t> next_seq{0};
  uint64_t limit = UINT64_MAX;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> done{0};
  std::mutex mutex;
  std::string error;  // first failure

  void fail(std::string message) {
    std::lock_guard<std::mutex> lock(mutex);
    if (error.empty()) {
      error = std::move(message);
    }
    stop.store(true, std::memory_order_relaxed);
  }
};

/// One benchmark connection: the shared pipelined client plus what the load loop needs
/// to time a batch and sort its replies by command.
struct Conn {
  explicit Conn(engine::PipelinedConnection connection) : link(std::move(connection)) {}
  engine::PipelinedConnection link;
  std::unique_ptr<uint8_t[]> kinds;  // kind of each request in flight
  uint32_t expected = 0;
  uint32_t replies = 0;
  int64_t started_ns = 0;
  bool want_write = false;
  bool active = false;
};

class Worker {
 public:
  Worker(const RequestSource& source, const LoadOptions& options, Shared& shared, uint64_t seed)
      : m_source(source),
        m_options(options),
        m_shared(shared),
        m_rng(seed),
        m_latency(source.kinds()),
        m_hits(source.kinds()),
        m_misses(source.kinds()) {}
  ~Worker() {
    if (m_epoll >= 0) {
      ::close(m_epoll);
    }
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /// Opens `count` connections (called before the clock starts).
  void connect(uint32_t count) {
    m_epoll = ::epoll_create1(EPOLL_CLOEXEC);
    if (m_epoll < 0) {
      throw BenchError("epoll_create1: " + errno_text());
    }
    m_conns.reserve(count);
    size_t out_cap = m_source.max_size() * m_options.pipeline;
    for (uint32_t i = 0; i < count; ++i) {
      auto link =
          engine::PipelinedConnection::connect(m_options.target, m_options.pipeline, out_cap);
      if (!link) {
        throw BenchError(link.error());
      }
      Conn& c = m_conns.emplace_back(std::move(*link));
      c.kinds = std::make_unique<uint8_t[]>(m_options.pipeline);
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u32 = i;
      if (::epoll_ctl(m_epoll, EPOLL_CTL_ADD, c.link.fd(), &ev) != 0) {
        throw BenchError("epoll_ctl: " + errno_text());
      }
    }
  }

  /// Runs until every connection is idle (requests used up, time over, or a failure).
  void run() {
    for (Conn& c : m_conns) {
      start_batch(c, now_ns());
    }
    epoll_event events[k_max_events];
    while (m_active > 0) {
      int n = ::epoll_wait(m_epoll, events, k_max_events, 100);
      if (n < 0) {
        if (errno == EINTR) {
          continue;
        }
        m_shared.fail("epoll_wait: " + errno_text());
        return;
      }
      for (int i = 0; i < n; ++i) {
        Conn& c = m_conns[events[i].data.u32];
        if ((events[i].events & EPOLLOUT) != 0 && c.active) {
          flush(c);
        }
        if ((events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0 && c.active) {
          on_readable(c);
        }
      }
    }
  }

  std::vector<LatencyHistogram>& latency() { return m_latency; }
  const std::vector<uint64_t>& hits() const { return m_hits; }
  const std::vector<uint64_t>& misses() const { return m_misses; }

 private:
  void start_batch(Conn& c, int64_t now) {
    if (c.active) {
      c.active = false;
      --m_active;
    }
    if (m_shared.stop.load(std::memory_order_relaxed)) {
      return;
    }
    uint32_t p = m_options.pipeline;
    uint64_t seq = m_shared.next_seq.fetch_add(p, std::memory_order_relaxed);
    if (seq >= m_shared.limit) {
      return;
    }
    uint64_t n = std::min<uint64_t>(p, m_shared.limit - seq);
    const size_t max_size = m_source.max_size();
    for (uint64_t i = 0; i < n; ++i) {
      char* start = c.link.reserve(max_size);
      char* dst = start;
      c.kinds[i] = m_source.write(seq + i, m_rng, dst);
      c.link.commit(static_cast<size_t>(dst - start));
    }
    c.expected = static_cast<uint32_t>(n);
    c.replies = 0;
    c.started_ns = now;
    c.active = true;
    ++m_active;
    flush(c);
  }

  void flush(Conn& c) {
    switch (c.link.flush()) {
      case engine::PipelinedConnection::Io::blocked:
        set_write_interest(c, true);
        return;
      case engine::PipelinedConnection::Io::failed:
        fail(c, c.link.error());
        return;
      case engine::PipelinedConnection::Io::ok:
        break;
    }
    if (c.want_write) {
      set_write_interest(c, false);
    }
    // Over TLS a flush may finish a read that waited for the socket to be writable: the
    // replies it brought are taken now, since no readiness event will announce them.
    if (c.active && c.link.has_buffered()) {
      on_readable(c);
    }
  }

  void set_write_interest(Conn& c, bool on) {
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0u);
    ev.data.u32 = static_cast<uint32_t>(&c - m_conns.data());
    ::epoll_ctl(m_epoll, EPOLL_CTL_MOD, c.link.fd(), &ev);
    c.want_write = on;
  }

  void fail(Conn& c, std::string message) {
    m_shared.fail(std::move(message));
    if (c.active) {
      c.active = false;
      --m_active;
    }
  }

  void on_readable(Conn& c) {
    auto io = c.link.fill();
    if (io == engine::PipelinedConnection::Io::blocked && !c.link.has_buffered()) {
      if (c.link.wants_write() && !c.want_write) {
        set_write_interest(c, true);  // a TLS read waits for the socket to be writable
      }
      return;
    }
    if (io == engine::PipelinedConnection::Io::failed) {
      fail(c, c.link.error());
      return;
    }
    int64_t now = now_ns();
    uint64_t latency = static_cast<uint64_t>(now - c.started_ns);
    engine::ReplyView reply;
    while (c.link.next_reply(reply)) {
      uint8_t kind = c.kinds[c.replies++];
      m_latency[kind].record(latency);
      if (reply.is_error) {
        fail(c, fmt::format("Error from server: {}", reply.error_text));
        return;
      }
      if (reply.is_null) {
        ++m_misses[kind];
      } else {
        ++m_hits[kind];
      }
      if (c.replies == c.expected) {
        m_shared.done.fetch_add(c.expected, std::memory_order_relaxed);
        if (c.link.has_buffered()) {
          fail(c, fmt::format("{}: a reply nobody asked for", target_address(m_options.target)));
          return;
        }
        start_batch(c, now);
        return;
      }
    }
    if (c.link.failed()) {
      fail(c, c.link.error());
    }
  }

  const RequestSource& m_source;
  const LoadOptions& m_options;
  Shared& m_shared;
  Rng m_rng;
  std::vector<Conn> m_conns;
  int m_epoll = -1;
  uint32_t m_active = 0;
  std::vector<LatencyHistogram> m_latency;
  std::vector<uint64_t> m_hits;
  std::vector<uint64_t> m_misses;
};

std::string format_data(size_t size) {
  return std::string(size, 'x');
}

BenchTest fixed_test(std::string title, std::vector<std::string_view> args, uint64_t keyspace) {
  BenchTest t;
  t.title = std::move(title);
  t.command = engine::to_upper(args.front());
  t.request = engine::RequestTemplate::multibulk(args);
  t.keyspace = keyspace;
  return t;
}

}  // namespace

std::string target_address(const BenchTarget& target) {
  return target.unix_path.empty() ? fmt::format("{}:{}", target.host, target.port)
                                  : target.unix_path;
}

KeyPattern parse_key_pattern(std::string_view text) {
  if (text == "R") {
    return KeyPattern::random;
  }
  if (text == "S") {
    return KeyPattern::sequential;
  }
  if (text == "G") {
    return KeyPattern::gaussian;
  }
  throw BenchError(
      fmt::format("unknown key pattern '{}': use R (random), S (sequential) or G "
                  "(gaussian)",
                  text));
}

std::vector<BenchTest> redis_benchmark_tests(std::string_view selected, size_t data_size,
                                             uint64_t keyspace) {
  static constexpr std::string_view k_known[] = {
      "ping_inline", "ping_mbulk", "ping",       "set",        "get",  "incr", "lpush",   "rpush",
      "lpop",        "rpop",       "sadd",       "hset",       "spop", "zadd", "zpopmin", "lrange",
      "lrange_100",  "lrange_300", "lrange_500", "lrange_600", "mset", "xadd"};
  std::string list = "," + engine::to_lower(selected) + ",";
  if (!selected.empty()) {
    size_t start = 1;
    while (start < list.size()) {
      size_t comma = list.find(',', start);
      std::string_view name(list.data() + start, comma - start);
      if (!name.empty() &&
          std::find(std::begin(k_known), std::end(k_known), name) == std::end(k_known)) {
        std::string known;
        for (std::string_view k : k_known) {
          known += known.empty() ? "" : ",";
          known += k;
        }
        throw BenchError(fmt::format("unknown test '{}' in -t; known tests: {}", name, known));
      }
      start = comma + 1;
    }
  }
  auto is = [&](std::string_view name) {
    return selected.empty() || list.find(fmt::format(",{},", name)) != std::string::npos;
  };
  std::string data = format_data(data_size);
  std::string_view d = data;
  std::vector<BenchTest> out;
  if (is("ping_inline") || is("ping")) {
    BenchTest t;
    t.title = "PING_INLINE";
    t.command = "PING";
    t.request = engine::RequestTemplate::raw("PING\r\n");
    out.push_back(std::move(t));
  }
  if (is("ping_mbulk") || is("ping")) {
    out.push_back(fixed_test("PING_MBULK", {"PING"}, keyspace));
  }
  if (is("set")) {
    out.push_back(fixed_test("SET", {"SET", "key:__rand_int__", d}, keyspace));
  }
  if (is("get")) {
    out.push_back(fixed_test("GET", {"GET", "key:__rand_int__"}, keyspace));
  }
  if (is("incr")) {
    out.push_back(fixed_test("INCR", {"INCR", "counter:__rand_int__"}, keyspace));
  }
  if (is("lpush")) {
    out.push_back(fixed_test("LPUSH", {"LPUSH", "mylist", d}, keyspace));
  }
  if (is("rpush")) {
    out.push_back(fixed_test("RPUSH", {"RPUSH", "mylist", d}, keyspace));
  }
  if (is("lpop")) {
    out.push_back(fixed_test("LPOP", {"LPOP", "mylist"}, keyspace));
  }
  if (is("rpop")) {
    out.push_back(fixed_test("RPOP", {"RPOP", "mylist"}, keyspace));
  }
  if (is("sadd")) {
    out.push_back(fixed_test("SADD", {"SADD", "myset", "element:__rand_int__"}, keyspace));
  }
  if (is("hset")) {
    out.push_back(fixed_test("HSET", {"HSET", "myhash", "element:__rand_int__", d}, keyspace));
  }
  if (is("spop")) {
    out.push_back(fixed_test("SPOP", {"SPOP", "myset"}, keyspace));
  }
  if (is("zadd")) {
    std::string_view score = keyspace != 0 ? "__rand_int__" : "0";
    out.push_back(fixed_test("ZADD", {"ZADD", "myzset", score, "element:__rand_int__"}, keyspace));
  }
  if (is("zpopmin")) {
    out.push_back(fixed_test("ZPOPMIN", {"ZPOPMIN", "myzset"}, keyspace));
  }
  bool any_lrange =
      is("lrange") || is("lrange_100") || is("lrange_300") || is("lrange_500") || is("lrange_600");
  if (any_lrange) {
    out.push_back(
        fixed_test("LPUSH (needed to benchmark LRANGE)", {"LPUSH", "mylist", d}, keyspace));
  }
  static constexpr std::string_view k_lranges[][3] = {{"lrange_100", "99", "100"},
                                                      {"lrange_300", "299", "300"},
                                                      {"lrange_500", "499", "500"},
                                                      {"lrange_600", "599", "600"}};
  for (const auto& lr : k_lranges) {
    if (is("lrange") || is(lr[0])) {
      out.push_back(fixed_test(fmt::format("LRANGE_{} (first {} elements)", lr[2], lr[2]),
                               {"LRANGE", "mylist", "0", lr[1]}, keyspace));
    }
  }
  if (is("mset")) {
    std::vector<std::string_view> args{"MSET"};
    for (int i = 0; i < 10; ++i) {
      args.push_back("key:__rand_int__");
      args.push_back(d);
    }
    out.push_back(fixed_test("MSET (10 keys)", args, keyspace));
  }
  if (is("xadd")) {
    out.push_back(fixed_test("XADD", {"XADD", "mystream", "*", "myfield", d}, keyspace));
  }
  return out;
}

BenchTest custom_test(const std::vector<std::string>& words, uint64_t keyspace) {
  if (words.empty()) {
    throw BenchError("no command after '--'");
  }
  std::vector<std::string_view> args(words.begin(), words.end());
  std::string title;
  for (const auto& w : words) {
    title += title.empty() ? "" : " ";
    title += w;
  }
  return fixed_test(title, args, keyspace);
}

TestResult run_test(const BenchTest& test, const LoadOptions& options) {
  if (options.clients == 0 || options.pipeline == 0 || options.threads == 0) {
    throw BenchError("clients, pipeline and threads must be at least 1");
  }
  RequestSource source(test);
  Shared shared;
  shared.limit = options.requests == 0 ? UINT64_MAX : options.requests;
  uint32_t threads = std::min(options.threads, options.clients);
  std::vector<std::unique_ptr<Worker>> workers;
  for (uint32_t t = 0; t < threads; ++t) {
    workers.push_back(
        std::make_unique<Worker>(source, options, shared, options.seed * 1'000'003 + t));
    workers.back()->connect(options.clients / threads + (t < options.clients % threads ? 1 : 0));
  }
  double cpu_start = cpu_seconds();
  int64_t start = now_ns();
  std::vector<std::thread> running;
  std::atomic<uint32_t> finished{0};
  std::mutex mutex;
  std::condition_variable cv;
  for (auto& w : workers) {
    running.emplace_back([&w, &finished, &mutex, &cv]() {
      w->run();
      std::lock_guard<std::mutex> lock(mutex);
      finished.fetch_add(1);
      cv.notify_all();
    });
  }
  int64_t deadline =
      options.requests == 0 ? start + static_cast<int64_t>(options.seconds * 1e9) : INT64_MAX;
  {
    std::unique_lock<std::mutex> lock(mutex);
    while (finished.load() < threads) {
      cv.wait_for(lock, std::chrono::milliseconds(250));
      int64_t now = now_ns();
      if (now >= deadline) {
        shared.stop.store(true, std::memory_order_relaxed);
      }
      if (options.progress && finished.load() < threads) {
        options.progress(shared.done.load(std::memory_order_relaxed),
                         static_cast<double>(now - start) / 1e9);
      }
    }
  }
  for (auto& th : running) {
    th.join();
  }
  int64_t end = now_ns();
  if (!shared.error.empty()) {
    throw BenchError(shared.error);
  }
  TestResult result;
  result.title = test.title;
  result.seconds = static_cast<double>(end - start) / 1e9;
  result.client_cpu_seconds = cpu_seconds() - cpu_start;
  for (size_t k = 0; k < source.kinds(); ++k) {
    CommandResult cr;
    cr.name = source.name(k);
    for (auto& w : workers) {
      cr.latency.merge(w->latency()[k]);
      cr.hits += w->hits()[k];
      cr.misses += w->misses()[k];
    }
    cr.requests = cr.latency.count();
    result.requests += cr.requests;
    result.latency.merge(cr.latency);
    if (cr.requests > 0) {
      result.commands.push_back(std::move(cr));
    }
  }
  result.rps = result.seconds > 0 ? static_cast<double>(result.requests) / result.seconds : 0;
  return result;
}

}  // namespace keyshift::compat
