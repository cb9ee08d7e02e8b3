// Helpers shared by the fuzz targets and the seed corpus generator (make_corpus.cc).
//
// Fuzz inputs are read front to back with Reader: little-endian integers, then byte runs. A
// Reader past the end yields zeros, so every input, however short, is a valid (if dull) case.
// Writer produces the same layout, so make_corpus.cc can emit seeds that a target decodes
// exactly as intended.
//
// FUZZ_CHECK(cond) is the property assertion: it prints the failed condition and traps, which
// libFuzzer reports as a crash and saves as an artifact.
#ifndef ECD_TESTS_FUZZ_FUZZ_UTIL_H_
#define ECD_TESTS_FUZZ_FUZZ_UTIL_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: property violated: %s\n", __FILE__, __LINE__, #cond); \
      __builtin_trap();                                                                  \
    }                                                                                    \
  } while (0)

namespace ecd::fuzz {

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), n_(size) {}

  size_t remaining() const { return n_; }
  bool empty() const { return n_ == 0; }

  uint8_t U8() { return static_cast<uint8_t>(Le(1)); }
  uint16_t U16() { return static_cast<uint16_t>(Le(2)); }
  uint32_t U32() { return static_cast<uint32_t>(Le(4)); }
  uint64_t U64() { return Le(8); }
  bool Bool() { return (U8() & 1) != 0; }

  // Up to `n` bytes (fewer at the end of the input).
  std::vector<uint8_t> Bytes(size_t n) {
    n = std::min(n, n_);
    std::vector<uint8_t> out(p_, p_ + n);
    p_ += n;
    n_ -= n;
    return out;
  }
  // A run of bytes whose length is the next byte.
  std::vector<uint8_t> ShortBytes() { return Bytes(U8()); }
  std::string ShortString() {
    std::vector<uint8_t> b = ShortBytes();
    return std::string(b.begin(), b.end());
  }
  // Everything left.
  std::vector<uint8_t> Rest() { return Bytes(n_); }

 private:
  uint64_t Le(size_t len) {
    uint64_t v = 0;
    for (size_t i = 0; i < len; ++i) {
      const uint64_t b = i < n_ ? p_[i] : 0;
      v |= b << (8 * i);
    }
    const size_t used = std::min(len, n_);
    p_ += used;
    n_ -= used;
    return v;
  }

  const uint8_t* p_;
  size_t n_;
};

class Writer {
 public:
  Writer& U8(uint8_t v) { return Le(v, 1); }
  Writer& U16(uint16_t v) { return Le(v, 2); }
  Writer& U32(uint32_t v) { return Le(v, 4); }
  Writer& U64(uint64_t v) { return Le(v, 8); }
  Writer& Bool(bool v) { return U8(v ? 1 : 0); }
  template <typename Bytes>
  Writer& Raw(const Bytes& b) {
    out_.insert(out_.end(), std::begin(b), std::end(b));
    return *this;
  }
  Writer& ShortBytes(const std::vector<uint8_t>& b) {
    U8(static_cast<uint8_t>(b.size()));
    return Raw(b);
  }
  Writer& ShortString(std::string_view s) {
    U8(static_cast<uint8_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
    return *this;
  }
  const std::vector<uint8_t>& bytes() const { return out_; }

 private:
  Writer& Le(uint64_t v, size_t len) {
    for (size_t i = 0; i < len; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  std::vector<uint8_t> out_;
};

}  // namespace ecd::fuzz

#endif  // ECD_TESTS_FUZZ_FUZZ_UTIL_H_
