#pragma once

#include "engine/util/expected.hpp"

#include <cstdint>
#include <string>
#include <vector>

// `keyshift capture --from-pcap FILE`: a packet capture (pcap or pcapng, read by libpcap;
// Ethernet, Linux cooked SLL/SLL2, loopback NULL/LOOP, raw IP; IPv4 and IPv6) turned into
// a capture file. Each TCP connection to or from one of the ports is put back in order in
// both directions (TcpReassembler) and recorded by the proxy's StreamRecorder, with the
// packets' times. A connection whose SYN is missing is partial (synced at its first
// request); lost or cut segments are a gap: a drop event, and the connection is not
// followed past it.
namespace keyshift::compat::capture {

/// How to read a packet capture.
struct PcapCaptureOptions {
  std::string pcap;                   ///< the pcap/pcapng file
  std::string out;                    ///< the capture file to write
  std::vector<uint16_t> ports{6379};  ///< the server's ports
  bool redact = true;
  bool anonymize = false;  ///< keys and values replaced by keyed hashes (capture_anonymize)
  size_t max_held_bytes = size_t{16} << 20;  ///< out-of-order bytes held per direction
  std::string keyshift_version;
};

/// What the conversion found and wrote.
struct PcapCaptureReport {
  uint64_t packets = 0;            ///< packets read
  uint64_t tcp_packets = 0;        ///< TCP packets to or from the ports
  uint64_t ignored_packets = 0;    ///< other traffic, other link layers, IP fragments
  uint64_t truncated_packets = 0;  ///< caplen < len where it cut TCP bytes (or headers)
  uint64_t connections = 0;
  uint64_t partial_connections = 0;  ///< no SYN seen
  uint64_t damaged_connections = 0;  ///< a gap: not followed past it
  uint64_t gaps = 0;
  uint64_t gap_bytes = 0;
  uint64_t retransmitted_bytes = 0;
  uint64_t out_of_order_segments = 0;
  uint64_t skipped_bytes = 0;  ///< partial connections: bytes before their first request
  uint64_t requests = 0;
  uint64_t replies = 0;
  uint64_t redacted = 0;
  uint64_t events = 0;
  std::string link_type;   ///< the file's link-layer type (libpcap's name)
  std::string file_error;  ///< the file ended early (cut mid-packet): libpcap's message
};

/// Reads `options.pcap` and writes `options.out` (its header carries the report's counts).
/// A file libpcap cannot open, or an unsupported link type, is an error and leaves no
/// capture; a file cut mid-way is converted up to the cut, with `file_error` set.
engine::Expected<PcapCaptureReport, std::string> capture_from_pcap(
    const PcapCaptureOptions& options);

}  // namespace keyshift::compat::capture
