// The translation unit CMake precompiles lib/PrecompiledHeaders.h with;
// the libraries reuse its precompiled header and never link this object.
