#include "common/range.h"

#include <algorithm>
#include <numeric>

namespace distarray {
namespace {

// Returns g = gcd(a, b) and x with a*x ≡ g (mod b).
int64_t ExtendedGcd(int64_t a, int64_t b, int64_t& x) {
  int64_t old_r = a, r = b, old_s = 1, s = 0;
  while (r != 0) {
    const int64_t q = old_r / r;
    old_r -= q * r;
    std::swap(old_r, r);
    old_s -= q * s;
    std::swap(old_s, s);
  }
  x = old_s;
  return old_r;
}

// Smallest value >= lower that is ≡ residue (mod modulus).
int64_t FirstAtLeast(int64_t lower, int64_t residue, int64_t modulus) {
  int64_t r = ((residue - lower) % modulus + modulus) % modulus;
  return lower + r;
}

}  // namespace

std::optional<Range> Intersect(const Range& a, const Range& b) {
  const int64_t lo = std::max(a.start, b.start);
  const int64_t hi = std::min(a.last(), b.last());
  if (lo > hi) return std::nullopt;
  // Solve x ≡ a.start (mod a.step), x ≡ b.start (mod b.step) by the Chinese remainder theorem.
  int64_t inv = 0;
  const int64_t g = ExtendedGcd(a.step, b.step, inv);
  const int64_t diff = b.start - a.start;
  if (diff % g != 0) return std::nullopt;
  const int64_t lcm = a.step / g * b.step;
  const int64_t mod_b = b.step / g;
  // a.start + a.step * t with t ≡ (diff/g) * inv (mod b.step/g).
  __int128 t = static_cast<__int128>(diff / g) * inv % mod_b;
  if (t < 0) t += mod_b;
  const int64_t residue = static_cast<int64_t>((a.start + a.step * t) % lcm);
  const int64_t first = FirstAtLeast(lo, residue, lcm);
  if (first > hi) return std::nullopt;
  return Range{first, lcm, (hi - first) / lcm + 1};
}

bool ContainsRange(const Range& outer, const Range& inner) {
  if (!outer.Contains(inner.start)) return false;
  if (inner.count == 1) return true;
  return inner.step % outer.step == 0 && inner.last() <= outer.last();
}

}  // namespace distarray
