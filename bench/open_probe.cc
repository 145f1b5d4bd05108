// bbtree-open-probe: what opening a file and answering one lookup cost in a
// fresh process, split between the two; for A/B runs of a change to the
// open path, run many times alternating two builds.
//
//   bbtree-open-probe FILE KEY
//
// Opens FILE (memory_mode::map), gets KEY, which must be in it, and prints
// the microseconds and minor page faults of the open and of the get.
// Exits 1 if KEY is missing.
#include <bbtree/reader.h>

#include <sys/resource.h>
#include <chrono>
#include <cstdio>

namespace {

long minor_faults() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: bbtree-open-probe FILE KEY\n");
    return 2;
  }
  using clock = std::chrono::steady_clock;
  const long faults_before = minor_faults();
  const auto before = clock::now();
  const bbtree::reader index = bbtree::reader::open(argv[1]);
  const auto opened = clock::now();
  const long faults_opened = minor_faults();
  const bool found = index.get(argv[2]).has_value();
  const auto answered = clock::now();
  const long faults_answered = minor_faults();
  const auto micros = [](clock::duration d) {
    return std::chrono::duration<double, std::micro>(d).count();
  };
  std::printf("open %.1f us %ld faults, get %.1f us %ld faults\n", micros(opened - before),
              faults_opened - faults_before, micros(answered - opened),
              faults_answered - faults_opened);
  return found ? 0 : 1;
}
