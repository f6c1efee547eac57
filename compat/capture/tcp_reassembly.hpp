#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

// One direction of a TCP connection put back in order from captured segments, with no I/O:
// sequence numbers as 64-bit stream offsets (wrap-around handled), out-of-order segments
// held (bounded), retransmits and overlaps trimmed to the bytes not yet delivered. What
// cannot be followed is a gap: bytes the capture lost (the peer acknowledged them, a
// truncated packet held them, the hold overflowed, or the stream ended with a hole). From
// the first gap on nothing more is delivered, so no one parses across it.
namespace keyshift::compat::capture {

/// What one direction's reassembly has seen.
struct TcpStreamStats {
  uint64_t delivered = 0;      ///< bytes handed on in order
  uint64_t retransmitted = 0;  ///< bytes seen again (retransmits, overlaps), dropped
  uint64_t out_of_order = 0;   ///< segments held until the bytes before them came
  uint64_t gap_bytes = 0;      ///< bytes lost at the gap (0 when the size is unknown)
};

/// One direction of a TCP connection.
class TcpReassembler {
 public:
  /// At most `max_held` bytes of out-of-order segments are held.
  explicit TcpReassembler(size_t max_held = size_t{16} << 20) : m_max_held(max_held) {}

  /// The stream's first byte has sequence number isn + 1 (the SYN's own number is isn).
  void start_at_syn(uint32_t isn);
  /// A segment: the bytes now in order are appended to `out`. A stream not started yet
  /// (no SYN seen) starts at its first segment with data.
  void add(uint32_t seq, std::string_view payload, std::string& out);
  /// A FIN at `seq` (after the segment's payload): the stream ends there.
  void fin(uint32_t seq);
  /// The other side acknowledged everything before `ack`: bytes before it never seen were
  /// lost by the capture.
  void acknowledged(uint32_t ack);
  /// A segment whose payload the capture cut (caplen < len): its `len` bytes are lost. The
  /// bytes before it are still delivered as they come; the gap opens when they are.
  void lost(uint32_t seq, uint32_t len);
  /// No more segments will come: bytes held behind a hole are lost.
  void finish();

  bool started() const { return m_started; }
  /// True once a gap was found: nothing after it is delivered.
  bool damaged() const { return m_damaged; }
  const TcpStreamStats& stats() const { return m_stats; }
  /// Bytes held out of order now.
  size_t held() const { return m_held; }

 private:
  /// The stream offset of `seq`, taken as the one nearest the next expected byte.
  uint64_t offset_of(uint32_t seq) const;
  void gap(uint64_t lost);
  void drain(std::string& out);
  /// Appends bytes at stream offset `start` (== m_next), stopping at a cut segment.
  void deliver(uint64_t start, std::string_view bytes, std::string& out);

  size_t m_max_held;
  bool m_started = false;
  bool m_damaged = false;
  uint32_t m_isn = 0;     // sequence number of stream offset 0, minus 1 (as a SYN has it)
  uint64_t m_next = 0;    // the next stream offset to deliver
  int64_t m_fin_at = -1;  // stream offset the FIN takes, once seen
  int64_t m_cut_at = -1;  // stream offset of a cut segment ahead of m_next
  uint64_t m_cut_len = 0;
  std::map<uint64_t, std::string> m_hold;
  size_t m_held = 0;
  TcpStreamStats m_stats;
};

}  // namespace keyshift::compat::capture
