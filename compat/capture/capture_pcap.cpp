#include "compat/capture/capture_pcap.hpp"

#include "compat/capture/capture_file.hpp"
#include "compat/capture/capture_stream.hpp"
#include "compat/capture/tcp_reassembly.hpp"

#include <arpa/inet.h>
#include <pcap/pcap.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace keyshift::compat::capture {
namespace {

constexpr uint16_t k_ethertype_ipv4 = 0x0800;
constexpr uint16_t k_ethertype_ipv6 = 0x86dd;
constexpr uint16_t k_ethertype_vlan = 0x8100;
constexpr uint16_t k_ethertype_qinq = 0x88a8;
constexpr uint8_t k_proto_tcp = 6;
constexpr uint8_t k_tcp_fin = 0x01;
constexpr uint8_t k_tcp_syn = 0x02;
constexpr uint8_t k_tcp_rst = 0x04;
constexpr uint8_t k_tcp_ack = 0x10;

uint16_t be16(const uint8_t* p) {
  return static_cast<uint16_t>((p[0] << 8) | p[1]);
}
uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

/// One TCP segment as the packet carried it.
struct Segment {
  std::array<uint8_t, 16> src{};
  std::array<uint8_t, 16> dst{};
  bool v6 = false;
  uint16_t sport = 0;
  uint16_t dport = 0;
  uint32_t seq = 0;
  uint32_t ack = 0;
  uint8_t flags = 0;
  std::string_view payload;
  uint32_t payload_len = 0;  // what the IP header says, which a cut packet lacks
  bool cut = false;
};

enum class Parsed : uint8_t { tcp, other, truncated };

/// Where the IP header starts, and which IP: 4, 6, or 0 (not IP).
struct Network {
  size_t offset = 0;
  int version = 0;
};

std::optional<Network> link_layer(int dlt, const uint8_t* p, size_t n) {
  Network net;
  uint16_t ethertype = 0;
  switch (dlt) {
    case DLT_EN10MB: {
      size_t off = 12;
      if (n < off + 2) {
        return std::nullopt;
      }
      ethertype = be16(p + off);
      off += 2;
      while (ethertype == k_ethertype_vlan || ethertype == k_ethertype_qinq) {
        if (n < off + 4) {
          return std::nullopt;
        }
        ethertype = be16(p + off + 2);
        off += 4;
      }
      net.offset = off;
      break;
    }
    case DLT_LINUX_SLL:
      if (n < 16) {
        return std::nullopt;
      }
      ethertype = be16(p + 14);
      net.offset = 16;
      break;
    case DLT_LINUX_SLL2:
      if (n < 20) {
        return std::nullopt;
      }
      ethertype = be16(p);
      net.offset = 20;
      break;
    case DLT_NULL:
    case DLT_LOOP: {
      if (n < 4) {
        return std::nullopt;
      }
      // The address family in host order (NULL) or network order (LOOP); a file may come
      // from either byte order, so both are read. AF_INET is 2 everywhere; AF_INET6 is 10
      // (Linux), 24, 28 or 30 (the BSDs, macOS).
      uint32_t le =
          uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
      uint32_t family = be32(p) < 256 ? be32(p) : le;
      net.offset = 4;
      if (family == 2) {
        net.version = 4;
      } else if (family == 10 || family == 24 || family == 28 || family == 30) {
        net.version = 6;
      }
      return net;
    }
    case DLT_RAW:
    case DLT_IPV4:
    case DLT_IPV6:
      if (n < 1) {
        return std::nullopt;
      }
      net.offset = 0;
      net.version = p[0] >> 4;
      return net;
    default:
      return net;
  }
  if (ethertype == k_ethertype_ipv4) {
    net.version = 4;
  } else if (ethertype == k_ethertype_ipv6) {
    net.version = 6;
  }
  return net;
}

/// Reads a packet down to its TCP segment.
Parsed parse_packet(int dlt, const uint8_t* p, size_t caplen, Segment& s) {
  auto net = link_layer(dlt, p, caplen);
  if (!net) {
    return Parsed::truncated;
  }
  if (net->version != 4 && net->version != 6) {
    return Parsed::other;
  }
  const uint8_t* ip = p + net->offset;
  size_t avail = caplen - net->offset;
  size_t l4 = 0;
  size_t l4_len = 0;  // by the IP header
  if (net->version == 4) {
    if (avail < 20) {
      return Parsed::truncated;
    }
    if ((ip[0] >> 4) != 4) {
      return Parsed::other;
    }
    size_t ihl = size_t{static_cast<uint8_t>(ip[0] & 0x0f)} * 4;
    size_t total = be16(ip + 2);
    if (ihl < 20 || total < ihl) {
      return Parsed::other;
    }
    if (ip[9] != k_proto_tcp) {
      return Parsed::other;
    }
    if ((be16(ip + 6) & 0x3fff) != 0) {
      return Parsed::other;  // a fragment: not reassembled (TCP avoids them by PMTU)
    }
    std::memcpy(s.src.data(), ip + 12, 4);
    std::memcpy(s.dst.data(), ip + 16, 4);
    s.v6 = false;
    l4 = ihl;
    l4_len = total - ihl;
  } else {
    if (avail < 40) {
      return Parsed::truncated;
    }
    if ((ip[0] >> 4) != 6) {
      return Parsed::other;
    }
    size_t payload = be16(ip + 4);
    if (payload == 0) {
      return Parsed::other;  // a jumbogram
    }
    std::memcpy(s.src.data(), ip + 8, 16);
    std::memcpy(s.dst.data(), ip + 24, 16);
    s.v6 = true;
    uint8_t next = ip[6];
    size_t off = 40;
    size_t end = 40 + payload;
    // Extension headers: hop-by-hop, routing, destination options, AH; a fragment is
    // skipped as it is for IPv4.
    for (;;) {
      if (next == k_proto_tcp) {
        break;
      }
      if (next == 0 || next == 43 || next == 60 || next == 51 || next == 44) {
        if (avail < off + 8) {
          return Parsed::truncated;
        }
        if (next == 44) {
          if ((be16(ip + off + 2) & 0xfff9) != 0) {
            return Parsed::other;
          }
          next = ip[off];
          off += 8;
          continue;
        }
        size_t len = next == 51 ? (size_t{ip[off + 1]} + 2) * 4 : (size_t{ip[off + 1]} + 1) * 8;
        next = ip[off];
        off += len;
        if (off > end) {
          return Parsed::other;
        }
        continue;
      }
      return Parsed::other;
    }
    l4 = off;
    l4_len = end - off;
  }
  if (avail < l4 + 20) {
    return Parsed::truncated;
  }
  const uint8_t* tcp = ip + l4;
  size_t doff = size_t{static_cast<uint8_t>(tcp[12] >> 4)} * 4;
  if (doff < 20 || doff > l4_len) {
    return Parsed::other;
  }
  if (avail < l4 + doff) {
    return Parsed::truncated;
  }
  s.sport = be16(tcp);
  s.dport = be16(tcp + 2);
  s.seq = be32(tcp + 4);
  s.ack = be32(tcp + 8);
  s.flags = tcp[13];
  size_t want = l4_len - doff;
  size_t have = std::min(want, avail - l4 - doff);
  s.payload = std::string_view(reinterpret_cast<const char*>(tcp + doff), have);
  s.payload_len = static_cast<uint32_t>(want);
  s.cut = have < want;
  return Parsed::tcp;
}

std::string format_endpoint(const std::array<uint8_t, 16>& addr, bool v6, uint16_t port) {
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(v6 ? AF_INET6 : AF_INET, addr.data(), text, sizeof(text));
  return v6 ? "[" + std::string(text) + "]:" + std::to_string(port)
            : std::string(text) + ":" + std::to_string(port);
}

/// A connection's identity: client address and port, then server address and port.
struct FlowKey {
  std::array<uint8_t, 16> client{};
  std::array<uint8_t, 16> server{};
  uint16_t client_port = 0;
  uint16_t server_port = 0;
  bool v6 = false;

  bool operator==(const FlowKey&) const = default;
};

struct FlowKeyHash {
  size_t operator()(const FlowKey& k) const {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](const uint8_t* p, size_t n) {
      for (size_t i = 0; i < n; ++i) {
        h = (h ^ p[i]) * 1099511628211ull;
      }
    };
    mix(k.client.data(), k.client.size());
    mix(k.server.data(), k.server.size());
    uint8_t ports[5] = {static_cast<uint8_t>(k.client_port >> 8),
                        static_cast<uint8_t>(k.client_port),
                        static_cast<uint8_t>(k.server_port >> 8),
                        static_cast<uint8_t>(k.server_port), static_cast<uint8_t>(k.v6)};
    mix(ports, sizeof(ports));
    return static_cast<size_t>(h);
  }
};

/// One connection being followed.
struct Flow {
  Flow(uint64_t id, bool redact, const Anonymizer* anonymizer, size_t max_held)
      : recorder(id, redact, anonymizer), to_server(max_held), to_client(max_held) {}

  FlowKey key;
  StreamRecorder recorder;
  TcpReassembler to_server;
  TcpReassembler to_client;
  bool client_fin = false;
  bool server_fin = false;
  bool gap_reported = false;
  uint32_t client_isn = 0;
  bool syn_seen = false;
};

/// Discards events: the first pass only counts.
class NullSink : public EventSink {
 public:
  void emit(const CaptureEventView&, size_t) override {}
};

/// Writes events into the capture file, keeping the first error.
class WriterSink : public EventSink {
 public:
  explicit WriterSink(CaptureFileWriter& writer) : m_writer(writer) {}
  void emit(const CaptureEventView& e, size_t) override {
    if (!m_error) {
      if (auto err = m_writer.append(e)) {
        m_error = err->message();
      }
    }
  }
  const std::optional<std::string>& error() const { return m_error; }

 private:
  CaptureFileWriter& m_writer;
  std::optional<std::string> m_error;
};

/// One pass over a packet capture, recording into a sink.
class Converter {
 public:
  Converter(const PcapCaptureOptions& options, EventSink& sink) : m_options(options), m_sink(sink) {
    if (options.anonymize) {
      m_anonymizer.emplace(Anonymizer::with_random_key());
    }
  }

  void packet(int dlt, const pcap_pkthdr& h, const uint8_t* data);
  void finish();
  PcapCaptureReport& report() { return m_report; }

 private:
  bool is_port(uint16_t port) const {
    return std::find(m_options.ports.begin(), m_options.ports.end(), port) != m_options.ports.end();
  }
  Flow* find_or_open(const Segment& s, bool& to_server, int64_t now);
  void deliver(Flow& f, bool to_server, const Segment& s, int64_t now);
  void check_gaps(Flow& f, int64_t now);
  void close(FlowKey key, int64_t now);

  const PcapCaptureOptions& m_options;
  std::optional<Anonymizer> m_anonymizer;  // one key for the whole capture
  EventSink& m_sink;
  PcapCaptureReport m_report;
  uint64_t m_next_id = 1;
  std::map<uint64_t, std::unique_ptr<Flow>> m_flows;  // by id: the end closes them in order
  std::unordered_map<FlowKey, uint64_t, FlowKeyHash> m_by_key;
  // Connections closed (FIN both ways, RST): their late packets (a retransmit, data in
  // flight after a RST) are not a new partial connection; a new SYN reopens the key.
  std::unordered_set<FlowKey, FlowKeyHash> m_closed;
  std::string m_out;
  int64_t m_last_ns = 0;
};

Flow* Converter::find_or_open(const Segment& s, bool& to_server, int64_t now) {
  FlowKey forward{s.src, s.dst, s.sport, s.dport, s.v6};
  FlowKey backward{s.dst, s.src, s.dport, s.sport, s.v6};
  bool syn_only = (s.flags & (k_tcp_syn | k_tcp_ack)) == k_tcp_syn;
  auto it = m_by_key.find(forward);
  if (it != m_by_key.end()) {
    Flow& f = *m_flows.at(it->second);
    if (syn_only && f.syn_seen && s.seq != f.client_isn) {
      close(forward, now);  // the client port is reused by a new connection
    } else {
      to_server = true;
      return &f;
    }
  } else if (auto back = m_by_key.find(backward); back != m_by_key.end()) {
    to_server = false;
    return m_flows.at(back->second).get();
  }
  // A new connection: a SYN says who the client is; otherwise the port does.
  bool syn_ack = (s.flags & (k_tcp_syn | k_tcp_ack)) == (k_tcp_syn | k_tcp_ack);
  if (!syn_only && !syn_ack && (m_closed.contains(forward) || m_closed.contains(backward))) {
    return nullptr;
  }
  if (syn_only) {
    to_server = true;
  } else if (syn_ack) {
    to_server = false;
  } else if (s.payload_len == 0) {
    return nullptr;  // a bare ACK, FIN or RST of a connection not followed
  } else {
    to_server = is_port(s.dport);
  }
  FlowKey key = to_server ? forward : backward;
  m_closed.erase(key);
  auto flow =
      std::make_unique<Flow>(m_next_id++, m_options.redact, m_anonymizer ? &*m_anonymizer : nullptr,
                             m_options.max_held_bytes);
  flow->key = key;
  Flow& f = *flow;
  m_by_key.emplace(key, f.recorder.conn_id());
  m_flows.emplace(f.recorder.conn_id(), std::move(flow));
  ++m_report.connections;
  if (syn_only) {
    f.syn_seen = true;
    f.client_isn = s.seq;
  } else if (syn_ack) {
    // The SYN was missed but its answer says where the client's bytes start.
    f.syn_seen = true;
    f.client_isn = s.ack - 1;
    f.to_server.start_at_syn(s.ack - 1);
  } else {
    f.recorder.start_mid_stream();
    ++m_report.partial_connections;
  }
  f.recorder.open(format_endpoint(key.client, key.v6, key.client_port), now, m_sink);
  return &f;
}

void Converter::packet(int dlt, const pcap_pkthdr& h, const uint8_t* data) {
  ++m_report.packets;
  int64_t now = static_cast<int64_t>(h.ts.tv_sec) * 1'000'000'000 + h.ts.tv_usec;
  m_last_ns = std::max(m_last_ns, now);
  Segment s;
  Parsed parsed = parse_packet(dlt, data, h.caplen, s);
  if (parsed == Parsed::truncated) {
    ++m_report.truncated_packets;
    return;
  }
  if (parsed == Parsed::other || (!is_port(s.sport) && !is_port(s.dport))) {
    ++m_report.ignored_packets;
    return;
  }
  ++m_report.tcp_packets;
  bool to_server = true;
  Flow* f = find_or_open(s, to_server, now);
  if (f == nullptr) {
    return;
  }
  TcpReassembler& stream = to_server ? f->to_server : f->to_client;
  TcpReassembler& reverse = to_server ? f->to_client : f->to_server;
  if ((s.flags & k_tcp_syn) != 0) {
    stream.start_at_syn(s.seq);
  }
  // The acknowledgement first: a gap it reveals in the other direction must stop the
  // recording before this segment's bytes (a reply to the lost request) are parsed.
  if ((s.flags & k_tcp_ack) != 0 && (s.flags & k_tcp_rst) == 0) {
    reverse.acknowledged(s.ack);
    check_gaps(*f, now);
  }
  if (s.cut) {
    ++m_report.truncated_packets;
    stream.lost(s.seq + ((s.flags & k_tcp_syn) != 0 ? 1 : 0), s.payload_len);
  } else {
    deliver(*f, to_server, s, now);
  }
  if ((s.flags & k_tcp_fin) != 0) {
    stream.fin(s.seq + ((s.flags & k_tcp_syn) != 0 ? 1 : 0) + s.payload_len);
    (to_server ? f->client_fin : f->server_fin) = true;
  }
  check_gaps(*f, now);
  if ((s.flags & k_tcp_rst) != 0 || (f->client_fin && f->server_fin)) {
    close(f->key, now);
  }
}

void Converter::deliver(Flow& f, bool to_server, const Segment& s, int64_t now) {
  if (s.payload.empty()) {
    return;
  }
  TcpReassembler& stream = to_server ? f.to_server : f.to_client;
  uint32_t seq = s.seq + ((s.flags & k_tcp_syn) != 0 ? 1 : 0);
  m_out.clear();
  stream.add(seq, s.payload, m_out);
  if (m_out.empty()) {
    return;
  }
  if (to_server) {
    f.recorder.client_bytes(m_out.data(), m_out.size(), now, now, m_sink);
  } else {
    f.recorder.server_bytes(m_out.data(), m_out.size(), now, now, m_sink);
  }
}

void Converter::check_gaps(Flow& f, int64_t now) {
  if (f.gap_reported) {
    return;
  }
  for (TcpReassembler* r : {&f.to_server, &f.to_client}) {
    if (r->damaged()) {
      f.gap_reported = true;
      ++m_report.gaps;
      ++m_report.damaged_connections;
      m_report.gap_bytes += r->stats().gap_bytes;
      f.recorder.lose(r->stats().gap_bytes, now, m_sink);
      return;
    }
  }
}

void Converter::close(FlowKey key, int64_t now) {
  auto it = m_by_key.find(key);
  if (it == m_by_key.end()) {
    return;
  }
  auto flow = m_flows.find(it->second);
  Flow& f = *flow->second;
  f.to_server.finish();
  f.to_client.finish();
  check_gaps(f, now);
  for (const TcpReassembler* r : {&f.to_server, &f.to_client}) {
    m_report.retransmitted_bytes += r->stats().retransmitted;
    m_report.out_of_order_segments += r->stats().out_of_order;
  }
  const StreamCounts& c = f.recorder.counts();
  m_report.requests += c.requests;
  m_report.replies += c.replies;
  m_report.redacted += c.redacted;
  m_report.skipped_bytes += c.skipped_bytes;
  f.recorder.close(now, m_sink);
  m_closed.insert(key);
  m_flows.erase(flow);
  m_by_key.erase(it);
}

void Converter::finish() {
  while (!m_flows.empty()) {
    close(m_flows.begin()->second->key, m_last_ns);
  }
}

std::string link_name(int dlt) {
  const char* name = pcap_datalink_val_to_name(dlt);
  return name != nullptr ? name : std::to_string(dlt);
}

bool supported_link(int dlt) {
  switch (dlt) {
    case DLT_EN10MB:
    case DLT_LINUX_SLL:
    case DLT_LINUX_SLL2:
    case DLT_NULL:
    case DLT_LOOP:
    case DLT_RAW:
    case DLT_IPV4:
    case DLT_IPV6:
      return true;
    default:
      return false;
  }
}

/// The stdio buffer a pass reads the file through.
constexpr size_t k_read_buffer = size_t{1} << 20;

/// One pass over the file; an error when it cannot be opened or read at all.
engine::Expected<PcapCaptureReport, std::string> convert(const PcapCaptureOptions& options,
                                                         EventSink& sink) {
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  // Opened here with a big stdio buffer: libpcap's own open reads in 4 KiB steps, a read
  // call per few packets. The buffer outlives the FILE (pcap_close closes it).
  auto buffer = std::make_unique<char[]>(k_read_buffer);
  FILE* file = std::fopen(options.pcap.c_str(), "rb");
  if (file == nullptr) {
    return engine::Unexpected{options.pcap + ": " + std::strerror(errno)};
  }
  std::setvbuf(file, buffer.get(), _IOFBF, k_read_buffer);
  pcap_t* raw = pcap_fopen_offline_with_tstamp_precision(file, PCAP_TSTAMP_PRECISION_NANO, errbuf);
  if (raw == nullptr) {
    std::fclose(file);
    return engine::Unexpected{options.pcap + ": " + errbuf};
  }
  std::unique_ptr<pcap_t, void (*)(pcap_t*)> pcap(raw, pcap_close);
  int dlt = pcap_datalink(raw);
  if (!supported_link(dlt)) {
    return engine::Unexpected{options.pcap + ": link type " + link_name(dlt) +
                              " is not read (Ethernet, Linux SLL/SLL2, NULL/LOOP, raw IP are)"};
  }
  Converter converter(options, sink);
  for (;;) {
    pcap_pkthdr* header = nullptr;
    const u_char* data = nullptr;
    int rc = pcap_next_ex(raw, &header, &data);
    if (rc == 1) {
      converter.packet(dlt, *header, data);
      continue;
    }
    if (rc == PCAP_ERROR) {
      converter.report().file_error = pcap_geterr(raw);
    }
    break;
  }
  converter.finish();
  PcapCaptureReport report = converter.report();
  report.link_type = link_name(dlt);
  return report;
}

std::string join_ports(const std::vector<uint16_t>& ports) {
  std::string out;
  for (uint16_t p : ports) {
    out += (out.empty() ? "" : ",") + std::to_string(p);
  }
  return out;
}

}  // namespace

engine::Expected<PcapCaptureReport, std::string> capture_from_pcap(
    const PcapCaptureOptions& options) {
  if (options.pcap == "-") {
    return engine::Unexpected{std::string(
        "--from-pcap reads its file twice (the header states the counts): give a file, not "
        "standard input")};
  }
  // Two passes: the first counts what the header reports (packets, gaps, cut packets), so
  // the file states its own damage before its first record; the second writes.
  NullSink null;
  auto counted = convert(options, null);
  if (!counted) {
    return engine::Unexpected{counted.error()};
  }
  const PcapCaptureReport& r = *counted;
  CaptureHeader header;
  header.add("capture.tool", "keyshift capture");
  header.add("capture.keyshift_version", options.keyshift_version);
  header.add("capture.method", "pcap");
  header.add("capture.source", options.pcap);
  header.add("capture.ports", join_ports(options.ports));
  header.add("capture.redact", options.redact ? "on" : "off");
  header.add("capture.anonymize", options.anonymize ? "on" : "off");
  header.add("capture.pcap.link_type", r.link_type);
  header.add("capture.pcap.packets", std::to_string(r.packets));
  header.add("capture.pcap.tcp_packets", std::to_string(r.tcp_packets));
  header.add("capture.pcap.truncated_packets", std::to_string(r.truncated_packets));
  header.add("capture.pcap.connections", std::to_string(r.connections));
  header.add("capture.pcap.partial_connections", std::to_string(r.partial_connections));
  header.add("capture.pcap.damaged_connections", std::to_string(r.damaged_connections));
  header.add("capture.pcap.gaps", std::to_string(r.gaps));
  header.add("capture.pcap.gap_bytes", std::to_string(r.gap_bytes));
  header.add("capture.pcap.retransmitted_bytes", std::to_string(r.retransmitted_bytes));
  header.add("capture.pcap.file_error", r.file_error);
  auto writer = CaptureFileWriter::create(options.out, header);
  if (!writer) {
    return engine::Unexpected{writer.error().message()};
  }
  WriterSink sink(*writer);
  auto written = convert(options, sink);
  if (!written) {
    return engine::Unexpected{written.error()};
  }
  if (sink.error()) {
    return engine::Unexpected{*sink.error()};
  }
  PcapCaptureReport report = *written;
  report.events = writer->events();
  if (auto err = writer->close()) {
    return engine::Unexpected{err->message()};
  }
  return report;
}

}  // namespace keyshift::compat::capture
