// The benchmark tools' clock: elapsed time on steady_clock, in the unit
// their figures are printed in.
#pragma once

#include <chrono>

namespace bbtree::bench {

// Nanoseconds from `begin` to now.
inline double nanoseconds_since(std::chrono::steady_clock::time_point begin) {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - begin).count();
}

}  // namespace bbtree::bench
