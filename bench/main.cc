// bbtree-bench: bbtree and its peers, side by side, on the same data in the
// same run.  See bench/README.md.
#include "dataset.h"
#include "median.h"
#include "peer.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>

extern char** environ;

namespace bbtree::bench {
namespace {

// ---------------------------------------------------------------------------
// Configuration

struct peer_entry {
  const char* name;
  std::unique_ptr<peer_runner> (*make)(data_kind);
};

const peer_entry peers[] = {
#ifdef BBTREE_BENCH_HAVE_BBTREE
    {"bbtree", make_bbtree},
#endif
    {"sorted-array", make_sorted_array},
    {"lmdb", make_lmdb},
    {"mtbl", make_mtbl},
    {"sqlite", make_sqlite},
    {"marisa", make_marisa},
    {"tinycdb", make_cdb},
    {"std::map", make_std_map},
    {"absl::btree_map", make_absl_btree},
};

const char* const all_metrics[] = {"build_sorted",      "build_unsorted",
                                   "bytes_per_entry",   "first_answer_warm",
                                   "first_answer_cold", "open_answer_warm",
                                   "open_answer_cold",  "lookup_hit",
                                   "lookup_miss",       "batch_hit",
                                   "batch_miss",        "scan100",
                                   "full_scan",         "verify"};

struct settings {
  bool quick = false;
  std::string csv_path;
  std::string markdown_path;
  std::vector<std::string> datasets, peers, metrics;  // empty: all
  std::string workdir = "bench-work";
  bool keep_files = false;
  bool cold = true;
  std::size_t lookups = 1'000'000;
  std::size_t scans = 100'000;
  int reps = 5;
  int build_reps = 3;  // sorted builds; unsorted builds run once
  int first_answer_reps = 11;
  int cold_reps = 5;
  std::size_t batch = 256;
  std::string note;  // e.g. the compiler flags, printed with the host
  // Each other peer's read metrics and warm first answers alternate rep by
  // rep with a bbtree index of the same data, so that their ratio compares
  // figures taken in the same seconds (see "Paired ratios" in
  // bench/README.md).
  bool paired = true;
};

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

bool selected(const std::vector<std::string>& filter, const std::string& name) {
  if (filter.empty()) return true;
  for (const auto& f : filter) {
    if (f == name) return true;
    // "u64" selects u64-1M and u64-10M.
    if (name.size() > f.size() && name.compare(0, f.size(), f) == 0 && name[f.size()] == '-')
      return true;
  }
  return false;
}

// The peer every other one is paired with, when pairing is on and bbtree
// runs at all.
const peer_entry* bbtree_entry(const settings& s) {
  if (!s.paired) return nullptr;
  for (const auto& p : peers) {
    if (std::string_view(p.name) == "bbtree" && selected(s.peers, p.name)) return &p;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// Results

struct row {
  std::string dataset, peer, metric,
      hugepages;  // hugepages: off, on, or "-" where it does not apply
  double value = 0, min = 0, max = 0;
  std::string unit;
  int reps = 0;
  std::int64_t huge_kb = -1, rss_kb = -1, mapped_kb = -1;  // from smaps; -1: not known
  std::string config;
  // Paired rows: the median of the bbtree samples taken alternately with
  // this row's, and the median of the per-rep ratios (this row's sample
  // over bbtree's).  0: not paired.
  double paired_bbtree = 0, paired_ratio = 0;
  // Batched rows: the median of the same peer's lone lookups of the same
  // keys, taken rep by rep alternately with this row's, and the median of
  // the per-rep ratios (batched over lone).  0: none.
  double alternated_single = 0, over_single = 0;
};

std::vector<row> results;

row& record(const std::string& dataset, const std::string& peer, const std::string& metric,
            const std::string& hugepages, const std::vector<double>& samples,
            const std::string& unit, const std::string& config) {
  row r;
  r.dataset = dataset;
  r.peer = peer;
  r.metric = metric;
  r.hugepages = hugepages;
  r.value = median(samples);
  r.min = *std::min_element(samples.begin(), samples.end());
  r.max = *std::max_element(samples.begin(), samples.end());
  r.unit = unit;
  r.reps = static_cast<int>(samples.size());
  r.config = config;
  results.push_back(r);
  std::fprintf(stderr, "  %-16s %-18s %-4s %12.4g %-12s (min %.4g, max %.4g, n=%d)\n", peer.c_str(),
               metric.c_str(), hugepages.c_str(), r.value, unit.c_str(), r.min, r.max, r.reps);
  return results.back();
}

// Runs `reps` reps of `peer`, and with a partner as many of `partner`,
// alternately, each going first in turn, so that drift in the machine's
// speed moves both alike.
template <class Peer, class Partner>
void alternate(int reps, bool with_partner, Peer&& peer, Partner&& partner) {
  for (int i = 0; i < reps; ++i) {
    if (with_partner && i % 2 == 0) partner();
    peer();
    if (with_partner && i % 2 == 1) partner();
  }
}

// The median of `other`'s samples and of the per-rep ratios of `samples`
// to them, for samples taken alternately, rep by rep; {0, 0} when there
// are none.
struct alternated_figures {
  double other_median = 0, ratio = 0;
};
alternated_figures alternated(const std::vector<double>& samples,
                              const std::vector<double>& other) {
  std::vector<double> ratios;
  for (std::size_t i = 0; i < samples.size() && i < other.size(); ++i) {
    if (other[i] > 0) ratios.push_back(samples[i] / other[i]);
  }
  if (ratios.empty()) return {};
  return {median(other), median(ratios)};
}

// Sets a row's paired figures from its samples and the bbtree samples
// taken alternately with them.
void set_paired(row& r, const std::vector<double>& samples,
                const std::vector<double>& bbtree_samples) {
  const alternated_figures figures = alternated(samples, bbtree_samples);
  r.paired_bbtree = figures.other_median;
  r.paired_ratio = figures.ratio;
}

// ---------------------------------------------------------------------------
// Timing and checking

std::uint64_t now_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

template <class F>
double time_ns(F&& f) {
  const std::uint64_t start = now_ns();
  f();
  return static_cast<double>(now_ns() - start);
}

void expect(const std::string& what, const tally& got, std::uint64_t hits, std::uint64_t digest,
            std::uint64_t entries) {
  if (got.hits != hits || got.digest != digest || got.entries != entries) {
    char text[512];
    std::snprintf(
        text, sizeof text,
        "%s: WRONG ANSWERS: hits %llu (expected %llu), digest %016llx (expected %016llx), "
        "entries %llu (expected %llu)",
        what.c_str(), (unsigned long long)got.hits, (unsigned long long)hits,
        (unsigned long long)got.digest, (unsigned long long)digest, (unsigned long long)got.entries,
        (unsigned long long)entries);
    fail(text);
  }
}

// ---------------------------------------------------------------------------
// First answer: a fresh process opens the file and answers one lookup.

std::string self_path() {
  char buffer[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) fail("readlink /proc/self/exe");
  return std::string(buffer, static_cast<std::size_t>(n));
}

std::string to_hex(std::string_view bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (const unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string from_hex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  }
  return out;
}

// The two clocks of a first answer, in microseconds.
struct first_answer_time {
  double spawn_to_answer;  // from before posix_spawn to the answer on the child's stdout
  double open_to_answer;   // in the child: from before opening the file to the answer
};

// Spawns `bbtree-bench --first-answer ...` and checks its answer.
first_answer_time spawn_first_answer(const std::string& peer, data_kind kind,
                                     const std::string& file, std::string_view key, bool huge,
                                     std::uint64_t expected_digest, const std::string& what) {
  const std::string self = self_path();
  const std::string hex = to_hex(key);
  std::vector<std::string> args = {self, "--first-answer",   peer, to_string(kind), file,
                                   hex,  huge ? "on" : "off"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) fail("pipe2");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  pid_t pid;
  const std::uint64_t start = now_ns();
  if (posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(), environ) != 0)
    fail("posix_spawn");
  ::close(fds[1]);
  std::string answer;
  char buffer[256];
  while (answer.find('\n') == std::string::npos) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n <= 0) break;
    answer.append(buffer, static_cast<std::size_t>(n));
  }
  const std::uint64_t end = now_ns();
  ::close(fds[0]);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail(what + ": first-answer child failed: '" + answer + "'");
  unsigned long long hits = 0, digest = 0, open_ns = 0;
  if (std::sscanf(answer.c_str(), "%llu %llx %llu", &hits, &digest, &open_ns) != 3 || hits != 1 ||
      digest != expected_digest) {
    fail(what + ": first-answer child gave a wrong answer: '" + answer + "'");
  }
  return {static_cast<double>(end - start) / 1000.0, static_cast<double>(open_ns) / 1000.0};
}

// Huge pages off means off for every peer: while a peer is opened and
// measured without them, transparent huge pages are disabled for the
// process.  The kernel maps a file whose page cache holds 2 MiB folios
// with 2 MiB entries on its own, asked or not: LMDB's file, which it
// writes through a shared mapping, was mapped so in the "off" rows
// (215,040 kB huge in the 13:09 run), and bbtree's is since its builder
// writes 2 MiB pieces.  smaps shows the result in each row (huge_kb).
void allow_huge_pages(bool allowed) {
  if (::prctl(PR_SET_THP_DISABLE, allowed ? 0 : 1, 0, 0, 0) != 0) {
    std::perror("bbtree-bench: prctl(PR_SET_THP_DISABLE)");
    std::exit(3);
  }
}

int first_answer_child(int argc, char** argv) {
  if (argc != 7) return 2;
  const std::string peer = argv[2];
  data_kind kind;
  if (!parse_kind(argv[3], kind)) return 2;
  const std::string file = argv[4];
  const std::string key = from_hex(argv[5]);
  const bool huge = std::string_view(argv[6]) == "on";
  allow_huge_pages(huge);
  tally t;
  std::unique_ptr<peer_runner> r;  // never closed: the clock stops at the answer
  const std::uint64_t start = now_ns();
  if (peer == "none") {
    t.hits = 1;  // the spawn baseline: no file opened
  } else {
    for (const auto& p : peers) {
      if (peer == p.name) r = p.make(kind);
    }
    if (!r) return 2;
    r->open(file, huge);
    const std::string_view keys[1] = {key};
    t = r->lookup(keys);
  }
  const std::uint64_t open_ns = now_ns() - start;
  std::printf("%llu %llx %llu\n", (unsigned long long)t.hits, (unsigned long long)t.digest,
              (unsigned long long)open_ns);
  std::fflush(stdout);
  ::_exit(0);  // the answer is out; skip the teardown
}

void drop_from_page_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;  // a file the peer does not keep (e.g. a lock file)
  ::fdatasync(fd);     // dirty pages cannot be dropped
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// ---------------------------------------------------------------------------
// One peer on one dataset

std::string file_name(std::string name) {
  for (auto& c : name) {
    if (c == ':') c = '_';
  }
  return name;
}

void attach_usage(std::size_t first_row, const smaps_usage& usage) {
  if (usage.mappings == 0) return;  // not known (in-memory peers)
  for (std::size_t i = first_row; i < results.size(); ++i) {
    results[i].huge_kb = static_cast<std::int64_t>(usage.huge_kb());
    results[i].rss_kb = static_cast<std::int64_t>(usage.rss_kb);
    results[i].mapped_kb = static_cast<std::int64_t>(usage.size_kb);
  }
}

// `reference`, when given, is bbtree's entry: the peer's read metrics and
// warm first answers then alternate, rep by rep, with a bbtree index of the
// same data built just before them (set_paired).
void run_peer(const settings& s, const dataset& d, const peer_entry& entry,
              const peer_entry* reference) {
  const auto want = [&](const char* metric) { return selected(s.metrics, metric); };
  std::unique_ptr<peer_runner> r = entry.make(d.spec.kind);
  if (!r) return;
  const std::uint64_t peer_start = now_ns();
  const peer_caps caps = r->caps();
  const std::string& ds = d.spec.name;
  const std::string peer = r->name();
  std::filesystem::create_directories(s.workdir);
  const std::string file = s.workdir + "/" + ds + "." + file_name(peer);
  const std::string build_config = r->config(false);
  const double n = static_cast<double>(d.size());

  // Each timed build starts from the same state, set up untimed: no file
  // of the peer's in place (replacing a file frees its cached pages, which
  // cost bbtree's 1M build 8-11 ms of its 13), and, since no peer syncs
  // its build (see below), an empty writeback queue, which the build
  // before would otherwise drain during this one, on the same two cores.
  const auto prepare_build = [&] {
    if (caps.file) {
      for (const auto& f : r->files(file)) ::unlink(f.c_str());
    }
    ::sync();
  };
  if (want("build_unsorted") && caps.unsorted_build) {
    prepare_build();
    const double ns = time_ns([&] { r->build(d, false, file); });
    record(ds, peer, "build_unsorted", "-", {ns / 1e6}, "ms", build_config);
  }
  {
    // Sorted builds are short: the median of several, like the reads.
    const int reps = want("build_sorted") ? s.build_reps : 1;
    std::vector<double> samples;
    for (int i = 0; i < reps; ++i) {
      prepare_build();
      samples.push_back(time_ns([&] { r->build(d, true, file); }) / 1e6);
    }
    if (want("build_sorted")) record(ds, peer, "build_sorted", "-", samples, "ms", build_config);
  }
  if (want("bytes_per_entry")) {
    // In-memory peers: heap bytes (their config says so).
    record(ds, peer, "bytes_per_entry", "-", {static_cast<double>(r->footprint(file)) / n}, "B",
           build_config);
  }
  // The bbtree index read alternately with this peer, built now, so that it
  // is as fresh in the page cache as the peer's own files.
  std::unique_ptr<peer_runner> paired;
  const std::string paired_file = s.workdir + "/" + ds + ".bbtree-paired";
  const bool want_warm = want("first_answer_warm") || want("open_answer_warm");
  const bool paired_metric_wanted = want("lookup_hit") || want("lookup_miss") ||
                                    want("batch_hit") || want("batch_miss") || want("scan100") ||
                                    want("full_scan") || want_warm;
  if (reference != nullptr && peer != reference->name && paired_metric_wanted) {
    paired = reference->make(d.spec.kind);
    paired->build(d, true, paired_file);
  }
  // No peer syncs its build, so the kernel would write the files back while
  // the read metrics run, on the same two cores (the unsorted builds leave
  // the most, with their temporary files): flush it all first, untimed.
  ::sync();

  const std::vector<bool> modes =
      caps.huge ? std::vector<bool>{false, true} : std::vector<bool>{false};
  for (const bool huge : modes) {
    const std::string hp = huge ? "on" : "off";
    const std::string config = r->config(huge);
    const std::string what = ds + " " + peer + " hugepages=" + hp;
    const std::size_t first_row = results.size();
    allow_huge_pages(huge);
    r->open(file, huge);
    // Warm up: every hit once (faults the mapping in, fills caches).
    expect(what + " warm-up", r->lookup(d.hits), d.hits.size(), d.hits_digest, 0);
    // The paired bbtree index has huge pages wherever the peer does.
    peer_runner* const partner = paired && (!huge || paired->caps().huge) ? paired.get() : nullptr;
    const std::string partner_what = ds + " bbtree (paired with " + peer + ") hugepages=" + hp;
    if (partner != nullptr) {
      partner->open(paired_file, huge);
      expect(partner_what + " warm-up", partner->lookup(d.hits), d.hits.size(), d.hits_digest, 0);
    }

    const auto lookup_hits = [&](peer_runner& runner, const std::string& w) {
      expect(w + " lookup_hit", runner.lookup(d.hits), d.hits.size(), d.hits_digest, 0);
    };
    // `run(runner, what)` is one timed loop.  With `single`, each of the
    // peer's reps also alternates with one of `single` on the same runner
    // (a batched metric against lone lookups of the same keys).
    const auto per_op_alternating = [&](const char* metric, std::size_t ops,
                                        const std::string& unit, auto&& run, const auto& single) {
      constexpr bool with_single = !std::is_same_v<std::decay_t<decltype(single)>, std::nullptr_t>;
      std::vector<double> samples, partner_samples, single_samples;
      const auto sample = [&](peer_runner& runner, const std::string& label,
                              std::vector<double>& into) {
        into.push_back(time_ns([&] { run(runner, label); }) / static_cast<double>(ops));
      };
      const auto single_sample = [&] {
        if constexpr (with_single) {
          single_samples.push_back(time_ns([&] { single(*r, what); }) / static_cast<double>(ops));
        }
      };
      // Each going first in turn, as with a partner.
      const auto peer_sample = [&] {
        const bool single_first = samples.size() % 2 == 0;
        if (single_first) single_sample();
        sample(*r, what, samples);
        if (!single_first) single_sample();
      };
      alternate(s.reps, partner != nullptr, peer_sample,
                [&] { sample(*partner, partner_what, partner_samples); });
      row& recorded = record(ds, peer, metric, hp, samples, unit, config);
      if (partner != nullptr) set_paired(recorded, samples, partner_samples);
      if constexpr (with_single) {
        const alternated_figures figures = alternated(samples, single_samples);
        recorded.alternated_single = figures.other_median;
        recorded.over_single = figures.ratio;
      }
    };
    const auto per_op = [&](const char* metric, std::size_t ops, const std::string& unit,
                            auto&& run) { per_op_alternating(metric, ops, unit, run, nullptr); };
    if (want("lookup_hit")) per_op("lookup_hit", d.hits.size(), "ns/op", lookup_hits);
    if (want("lookup_miss")) {
      per_op("lookup_miss", d.misses.size(), "ns/op",
             [&](peer_runner& runner, const std::string& w) {
               expect(w + " lookup_miss", runner.lookup(d.misses), 0, 0, 0);
             });
    }
    // get_many's target is a ratio to lone lookups of the same keys on the
    // same index: its reps alternate with lookup_hit's, so that the ratio
    // compares figures taken in the same seconds (bench/README.md, "Paired
    // ratios").
    if (caps.batched && want("batch_hit")) {
      per_op_alternating(
          "batch_hit", d.hits.size(), "ns/key",
          [&](peer_runner& runner, const std::string& w) {
            expect(w + " batch_hit", runner.lookup_batched(d.hits, s.batch), d.hits.size(),
                   d.hits_digest, 0);
          },
          lookup_hits);
    }
    if (caps.batched && want("batch_miss")) {
      per_op("batch_miss", d.misses.size(), "ns/key",
             [&](peer_runner& runner, const std::string& w) {
               expect(w + " batch_miss", runner.lookup_batched(d.misses, s.batch), 0, 0, 0);
             });
    }
    if (caps.scans && want("scan100")) {
      per_op("scan100", d.scan_entries, "ns/entry", [&](peer_runner& runner, const std::string& w) {
        expect(w + " scan100", runner.scan(d.scan_starts, d.scan_length), 0, d.scan_digest,
               d.scan_entries);
      });
    }
    if (caps.scans && want("full_scan")) {
      per_op("full_scan", d.size(), "ns/entry", [&](peer_runner& runner, const std::string& w) {
        expect(w + " full_scan", runner.scan_all(), 0, d.total_digest(), d.size());
      });
    }
    if (caps.verify && want("verify")) {
      std::vector<double> samples;
      for (int i = 0; i < s.reps; ++i) {
        std::uint64_t bytes = 0;
        const double ns = time_ns([&] { bytes = r->verify(file); });
        samples.push_back(static_cast<double>(bytes) / ns);
      }
      record(ds, peer, "verify", hp, samples, "GB/s", config);
    }
    attach_usage(first_row, r->memory_usage(file));
    r->close();
    if (partner != nullptr) partner->close();
  }
  allow_huge_pages(true);  // the default, for what follows

  const bool want_cold = (want("first_answer_cold") || want("open_answer_cold")) && s.cold;
  if (caps.file && (want_warm || want_cold)) {
    const std::string_view key = d.hits.front();
    const std::size_t index = static_cast<std::size_t>(
        std::lower_bound(d.keys.begin(), d.keys.end(), key) - d.keys.begin());
    // Both clocks of each run: the spawn-inclusive one, and the child's own
    // from open to answer, which is what an application that is already
    // running pays.
    const auto record_both = [&](const std::vector<first_answer_time>& times,
                                 const std::string& suffix, const std::string& hp,
                                 const std::string& config,
                                 const std::vector<first_answer_time>& partner_times = {}) {
      const auto record_clock = [&](const std::string& metric, double first_answer_time::*clock) {
        if (!want(metric.c_str())) return;
        const auto samples = [clock](const std::vector<first_answer_time>& of) {
          std::vector<double> out;
          for (const auto& t : of) out.push_back(t.*clock);
          return out;
        };
        row& recorded = record(ds, peer, metric, hp, samples(times), "us", config);
        if (!partner_times.empty()) set_paired(recorded, samples(times), samples(partner_times));
      };
      record_clock("first_answer_" + suffix, &first_answer_time::spawn_to_answer);
      record_clock("open_answer_" + suffix, &first_answer_time::open_to_answer);
    };
    for (const bool huge : modes) {
      const std::string hp = huge ? "on" : "off";
      const std::string what = ds + " " + peer + " first answer hugepages=" + hp;
      const std::string config = r->config(huge);
      if (want_warm) {
        const bool with_partner = paired && (!huge || paired->caps().huge);
        const auto answer = [&](const std::string& of, const std::string& at,
                                const std::string& label) {
          return spawn_first_answer(of, d.spec.kind, at, key, huge, d.digests[index], label);
        };
        const std::string partner_label = what + " (paired bbtree)";
        answer(peer, file, what);  // warm the cache
        if (with_partner) answer(reference->name, paired_file, partner_label);
        std::vector<first_answer_time> times, partner_times;
        alternate(
            s.first_answer_reps, with_partner, [&] { times.push_back(answer(peer, file, what)); },
            [&] { partner_times.push_back(answer(reference->name, paired_file, partner_label)); });
        record_both(times, "warm", hp, config, partner_times);
      }
      if (want_cold) {
        std::vector<first_answer_time> times;
        for (int i = 0; i < s.cold_reps; ++i) {
          for (const auto& f : r->files(file)) drop_from_page_cache(f);
          times.push_back(
              spawn_first_answer(peer, d.spec.kind, file, key, huge, d.digests[index], what));
        }
        record_both(times, "cold", hp, config + "; data files dropped with POSIX_FADV_DONTNEED");
      }
    }
  }

  const std::vector<std::string> files = r->files(file);
  r.reset();
  if (paired) {
    for (const auto& f : paired->files(paired_file)) ::unlink(f.c_str());
  }
  std::fprintf(stderr, "  %-16s (%.1f s)\n", entry.name,
               static_cast<double>(now_ns() - peer_start) / 1e9);
  if (!s.keep_files && caps.file) {
    for (const auto& f : files) ::unlink(f.c_str());
  }
}

// ---------------------------------------------------------------------------
// Reports

std::string host_cpu() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

std::string read_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::vector<std::string> host_lines(const settings& s, int argc, char** argv) {
  utsname u;
  ::uname(&u);
  char date[64];
  const std::time_t t = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", std::localtime(&t));
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  return {
      "date: " + std::string(date),
      "cpu: " + host_cpu() + " (" + std::to_string(::sysconf(_SC_NPROCESSORS_ONLN)) + " online)",
      "kernel: " + std::string(u.sysname) + " " + u.release + " " + u.machine,
      "transparent_hugepage: " + read_line("/sys/kernel/mm/transparent_hugepage/enabled"),
      "mode: " + std::string(s.quick ? "quick" : "full") + ", lookups " +
          std::to_string(s.lookups) + ", scans " + std::to_string(s.scans) + " x 100, reps " +
          std::to_string(s.reps) + ", batch " + std::to_string(s.batch),
      "command: " + command,
      "note: " + (s.note.empty() ? std::string("-") : s.note),
  };
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// The bbtree row a result compares with: same dataset, metric and huge pages.
const row* bbtree_row(const row& r) {
  for (const auto& b : results) {
    if (b.peer == "bbtree" && b.dataset == r.dataset && b.metric == r.metric &&
        b.hugepages == r.hugepages)
      return &b;
  }
  return nullptr;
}

// Peer over bbtree: the paired ratio where there is one, else the ratio of
// the two rows' medians; empty without a bbtree row.  Three significant
// digits for the markdown table; the CSV keeps six, since targets.py
// compares them with bars such as 0.7 (a paired 1.4249 printed as 1.42
// would read 0.704).
std::string ratio_text(const row& r, int digits = 3) {
  double ratio = r.paired_ratio;
  if (ratio == 0) {
    const row* b = bbtree_row(r);
    if (b == nullptr || b->value == 0) return "";
    ratio = r.value / b->value;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.*g", digits, ratio);
  return text;
}

void write_csv(const std::string& path) {
  std::ofstream out(path);
  out << "dataset,peer,metric,hugepages,median,min,max,unit,reps,ratio_vs_bbtree,huge_kb,rss_kb,"
         "mapped_kb,config,paired_bbtree_median,alternated_single_median,over_single\n";
  for (const auto& r : results) {
    char numbers[160];
    std::snprintf(numbers, sizeof numbers, "%.6g,%.6g,%.6g", r.value, r.min, r.max);
    out << csv_field(r.dataset) << ',' << csv_field(r.peer) << ',' << r.metric << ',' << r.hugepages
        << ',' << numbers << ',' << csv_field(r.unit) << ',' << r.reps << ',' << ratio_text(r, 6)
        << ',' << (r.huge_kb >= 0 ? std::to_string(r.huge_kb) : "") << ','
        << (r.rss_kb >= 0 ? std::to_string(r.rss_kb) : "") << ','
        << (r.mapped_kb >= 0 ? std::to_string(r.mapped_kb) : "") << ',' << csv_field(r.config)
        << ',';
    if (r.paired_ratio != 0) {
      std::snprintf(numbers, sizeof numbers, "%.6g", r.paired_bbtree);
      out << numbers;
    }
    out << ',';
    if (r.over_single != 0) {
      std::snprintf(numbers, sizeof numbers, "%.6g,%.6g", r.alternated_single, r.over_single);
      out << numbers;
    } else {
      out << ',';
    }
    out << '\n';
  }
  if (!out) fail("cannot write " + path);
}

std::string format_value(double v) {
  char text[32];
  if (v >= 100)
    std::snprintf(text, sizeof text, "%.0f", v);
  else if (v >= 10)
    std::snprintf(text, sizeof text, "%.1f", v);
  else
    std::snprintf(text, sizeof text, "%.2f", v);
  return text;
}

void write_markdown(const std::string& path, const std::vector<std::string>& host) {
  std::ofstream out(path);
  out << "# bbtree-bench results\n\n";
  for (const auto& line : host) out << "- " << line << "\n";
  out << "\nCells: median (ratio = peer / bbtree with the same huge-page setting; for times and "
         "sizes, above 1 means bbtree is faster or smaller). `hp` = huge pages requested; `huge "
         "MiB` = AnonHugePages + FilePmdMapped of the data's mapping(s) after the read metrics "
         "(smaps).\n";
  const bool any_paired =
      std::any_of(results.begin(), results.end(), [](const row& r) { return r.paired_ratio != 0; });
  if (any_paired) {
    out << "\nRead metrics and warm first answers are paired: each peer's reps alternate with "
           "those of a bbtree index of the same data, built just before, and the ratio is the "
           "median of the per-rep ratios. It can differ from the ratio of the two medians shown, "
           "which were taken minutes apart.\n";
  }
  std::vector<std::string> datasets;
  for (const auto& r : results) {
    if (std::find(datasets.begin(), datasets.end(), r.dataset) == datasets.end())
      datasets.push_back(r.dataset);
  }
  for (const auto& ds : datasets) {
    std::vector<std::string> metrics;
    std::vector<std::pair<std::string, std::string>> lines;  // peer, hugepages
    std::map<std::string, std::string> units;
    for (const auto& r : results) {
      if (r.dataset != ds) continue;
      if (std::find(metrics.begin(), metrics.end(), r.metric) == metrics.end())
        metrics.push_back(r.metric);
      units[r.metric] = r.unit;
      // Metrics that do not depend on huge pages are shown on the "off" line.
      const std::string hp = r.hugepages == "-" ? "off" : r.hugepages;
      if (std::find(lines.begin(), lines.end(), std::make_pair(r.peer, hp)) == lines.end())
        lines.emplace_back(r.peer, hp);
    }
    out << "\n## " << ds << "\n\n| peer | hp |";
    for (const auto& m : metrics) out << ' ' << m << " (" << units[m] << ") |";
    out << " huge MiB |\n|---|---|";
    for (std::size_t i = 0; i <= metrics.size(); ++i) out << "---:|";
    out << "\n";
    for (const auto& [peer, hp] : lines) {
      out << "| " << peer << " | " << hp << " |";
      std::int64_t huge_kb = -1;
      for (const auto& m : metrics) {
        const row* found = nullptr;
        for (const auto& r : results) {
          if (r.dataset == ds && r.peer == peer && r.metric == m &&
              (r.hugepages == hp || (r.hugepages == "-" && hp == "off"))) {
            found = &r;
          }
        }
        if (found == nullptr) {
          out << " |";
          continue;
        }
        if (found->huge_kb >= 0) huge_kb = found->huge_kb;
        const std::string ratio = peer == "bbtree" ? "" : ratio_text(*found);
        out << ' ' << format_value(found->value) << (ratio.empty() ? "" : " (" + ratio + "x)")
            << " |";
      }
      out << ' ' << (huge_kb >= 0 ? format_value(static_cast<double>(huge_kb) / 1024) : "")
          << " |\n";
    }
  }
  std::set<std::pair<std::string, std::string>> configs;
  for (const auto& r : results) configs.emplace(r.peer, r.config);
  out << "\n## Peer configurations\n\n";
  for (const auto& [peer, config] : configs) out << "- " << peer << ": " << config << "\n";
  if (!out) fail("cannot write " + path);
}

void usage() {
  std::fprintf(
      stderr,
      "usage: bbtree-bench [--quick] [--csv FILE] [--markdown FILE] [--dataset LIST] [--peer "
      "LIST]\n"
      "                    [--metric LIST] [--workdir DIR] [--keep-files] [--no-cold] [--lookups "
      "N]\n"
      "                    [--reps N] [--unpaired] [--note TEXT] [--page-size BYTES] [--list]\n"
      "LISTs are comma-separated; a dataset kind (u64, str, fix16) selects all its sizes.\n"
      "--page-size: bbtree's page size (default: the library's default).\n"
      "--unpaired: read each peer on its own, not rep by rep alternately with bbtree.\n");
}

std::vector<dataset_spec> dataset_specs(bool quick) {
  if (quick) {
    return {{"u64-100K", data_kind::u64, 100'000},
            {"u64-1M", data_kind::u64, 1'000'000},
            {"str-100K", data_kind::str, 100'000},
            {"fix16-100K", data_kind::fix16, 100'000}};
  }
  return {{"u64-1M", data_kind::u64, 1'000'000},
          {"u64-10M", data_kind::u64, 10'000'000},
          {"str-1M", data_kind::str, 1'000'000},
          {"fix16-1M", data_kind::fix16, 1'000'000}};
}

int run(int argc, char** argv) {
  settings s;
  bool list = false, lookups_set = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--quick")
      s.quick = true;
    else if (a == "--csv")
      s.csv_path = next();
    else if (a == "--markdown")
      s.markdown_path = next();
    else if (a == "--dataset")
      s.datasets = split(next());
    else if (a == "--peer")
      s.peers = split(next());
    else if (a == "--metric")
      s.metrics = split(next());
    else if (a == "--workdir")
      s.workdir = next();
    else if (a == "--keep-files")
      s.keep_files = true;
    else if (a == "--no-cold")
      s.cold = false;
    else if (a == "--unpaired")
      s.paired = false;
    else if (a == "--lookups") {
      s.lookups = std::stoul(next());
      lookups_set = true;
    } else if (a == "--reps")
      s.reps = std::stoi(next());
    else if (a == "--list")
      list = true;
    else if (a == "--note")
      s.note = next();
    else if (a == "--page-size")
      bbtree_page_size = static_cast<std::uint32_t>(std::stoul(next()));
    else {
      usage();
      return 2;
    }
  }
  if (s.quick) {
    if (!lookups_set) s.lookups = 50'000;
    s.scans = 5'000;
    s.reps = std::min(s.reps, 3);
    s.build_reps = 1;
    s.first_answer_reps = 5;
    s.cold_reps = 3;
  }
  for (const auto& m : s.metrics) {
    if (std::find(std::begin(all_metrics), std::end(all_metrics), m) == std::end(all_metrics)) {
      std::fprintf(stderr, "bbtree-bench: unknown metric %s\n", m.c_str());
      return 2;
    }
  }
  if (list) {
    std::printf("datasets:");
    for (const auto& d : dataset_specs(s.quick)) std::printf(" %s", d.name.c_str());
    std::printf("\npeers:");
    for (const auto& p : peers) std::printf(" %s", p.name);
    std::printf("\nmetrics:");
    for (const char* m : all_metrics) std::printf(" %s", m);
    std::printf("\n");
    return 0;
  }

  const std::vector<std::string> host = host_lines(s, argc, argv);
  for (const auto& line : host) std::printf("%s\n", line.c_str());
  std::fflush(stdout);

  // The cost of starting this binary and reading its answer, to subtract
  // from first-answer figures.
  if (selected(s.metrics, "first_answer_warm") || selected(s.metrics, "open_answer_warm")) {
    std::vector<double> spawn_to_answer, open_to_answer;
    for (int i = 0; i < s.first_answer_reps; ++i) {
      const first_answer_time t =
          spawn_first_answer("none", data_kind::u64, "-", "", false, 0, "spawn baseline");
      spawn_to_answer.push_back(t.spawn_to_answer);
      open_to_answer.push_back(t.open_to_answer);
    }
    const char* config = "the child answers without opening a file";
    record("-", "(spawn only)", "first_answer_warm", "-", spawn_to_answer, "us", config);
    record("-", "(spawn only)", "open_answer_warm", "-", open_to_answer, "us", config);
  }

  for (const auto& spec : dataset_specs(s.quick)) {
    if (!selected(s.datasets, spec.name)) continue;
    std::fprintf(stderr, "[%s] generating %zu entries\n", spec.name.c_str(), spec.entries);
    const std::uint64_t start = now_ns();
    const dataset d = generate(spec, std::min(s.lookups, spec.entries), s.scans);
    std::fprintf(stderr, "[%s] generated in %.1f s (%.1f MiB keys, %.1f MiB values)\n",
                 spec.name.c_str(), static_cast<double>(now_ns() - start) / 1e9,
                 static_cast<double>(d.key_arena.size()) / 1048576.0,
                 static_cast<double>(d.value_arena.size()) / 1048576.0);
    for (const auto& p : peers) {
      if (!selected(s.peers, p.name)) continue;
      run_peer(s, d, p, bbtree_entry(s));
    }
  }

  if (!s.csv_path.empty()) write_csv(s.csv_path);
  if (!s.markdown_path.empty()) write_markdown(s.markdown_path, host);
  return 0;
}

}  // namespace
}  // namespace bbtree::bench

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "--first-answer") {
    return bbtree::bench::first_answer_child(argc, argv);
  }
  try {
    return bbtree::bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bbtree-bench: %s\n", e.what());
    return 1;
  }
}
