// Keeps a library with no sources yet a valid CMake target.
