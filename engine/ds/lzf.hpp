#pragma once

// LZF, the byte-oriented LZ77 format Valkey uses for RDB strings and compressed quicklist
// nodes:
//   000LLLLL                     literal run of L+1 bytes (1..32) follows
//   LLLooooo oooooooo            back reference, L in 1..6: copy L+2 bytes
//   111ooooo LLLLLLLL oooooooo   back reference: copy 7+L+2 bytes
// where the 13-bit o counts back from the output position minus one. The compressor makes
// the same choices as Valkey's (and Redis's) lzf_compress, so DUMP payloads and RDB files
// are byte for byte what Valkey writes; any valid LZF stream decompresses, whoever produced
// it.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace keyshift::engine {

/// Compresses `in` into `out` (room for `out_cap` bytes) exactly as Valkey's lzf_compress
/// does; returns the bytes written, or 0 when Valkey's would not fit (keep it raw).
size_t lzf_compress(const void* in, size_t in_len, void* out, size_t out_cap);

/// Decompresses `in` into `out` (room for `out_cap` bytes); returns the bytes written, or 0
/// when the stream is corrupt or does not fit. Never reads or writes out of bounds.
size_t lzf_decompress(const void* in, size_t in_len, void* out, size_t out_cap);

/// What lzf_decompress would return for `in` and `out_cap`, without writing anything:
/// validates a stream whose bytes are not needed (rdb check).
size_t lzf_decompressed_size(const void* in, size_t in_len, size_t out_cap);

/// Convenience: `in` decompressed to exactly `expected_len` bytes, or nullopt.
std::optional<std::string> lzf_decompress(std::string_view in, size_t expected_len);

}  // namespace keyshift::engine
