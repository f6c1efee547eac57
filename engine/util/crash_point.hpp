#pragma once

#include <sys/types.h>

#include <cstddef>

// Test-only crash points, so tests can kill -9 a writer at an exact, repeatable place
// instead of racing a signal against it. Off unless the environment asks:
//   KEYSHIFT_TEST_KILL_AFTER_BYTES=N  the process SIGKILLs itself once N bytes have gone to
//                                     files it is replacing (the write crossing N is cut at N)
//   KEYSHIFT_TEST_KILL_AT_SYNC=N      the process SIGKILLs itself right before its Nth
//                                     durability step (an fsync, a rename, a directory fsync)
// The counts are the process's own (a forked child continues its parent's), which is what a
// crash is: it ends the whole process, whichever engine was writing.
namespace keyshift::engine {

/// write(2) to a file being replaced, counted against KEYSHIFT_TEST_KILL_AFTER_BYTES.
ssize_t counted_write(int fd, const void* data, size_t size);

/// Marks a durability step about to happen, counted against KEYSHIFT_TEST_KILL_AT_SYNC.
void sync_point();

}  // namespace keyshift::engine
