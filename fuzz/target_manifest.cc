// fuzz_manifest: shard-set manifests (spec/SHARDS.md) on arbitrary input.
//
// The input is a manifest's text.
//
// 1. parse_shard_manifest refuses it with a bbtree::error of a manifest's
//    kinds whose message names the manifest, or accepts it.  What it
//    accepts holds only what section 5 allows, and is byte for byte the
//    text format_shard_manifest writes for it: section 4.5 gives every
//    value one spelling, so a parser that accepts a second one (or a
//    writer that changes one) breaks "equal sets, equal manifests".
// 2. The input, written as a manifest beside the fixture's shard files
//    (manifest_fixture.h), goes to sharded_reader::open and
//    verify_shard_set.  What the harness knows of those files says whether
//    the set must open (every line names a shard whose header it matches)
//    and whether it must verify (also the right first and last keys, no
//    file twice); both must agree, and a refused manifest fails both alike.
// 3. Every set that opens answers queries: lookups, bounds, ranks, counts,
//    ranges, prefixes, get_many, at, and scans and cursor steps in both
//    directions across shards.  Its shards are valid files, so no query may
//    throw.  Positions hold whatever the manifest claims: a set's entries in
//    order are its shards' entries, shard after shard, so every cursor must
//    read the entry of its rank.  When the set verifies, every answer must
//    also be the answer of a std::map of those entries.  A manifest that
//    lies about its keys (which the reader routes by) only loses the
//    second check.
//
// Shard paths that lead out of the scratch directory are not opened: the
// fuzzer would be reading whatever files the machine has.
#include "manifest_fixture.h"

#include "../lib/src/shard_support.h"

#include <bbtree/shards.h>

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <sstream>

namespace bbtree::fuzz {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view manifest_magic = "bbtree-shards ";
constexpr std::size_t scan_limit = 4096;  // steps of a whole scan: a set may list a shard often
constexpr std::size_t bound_steps = 3;    // cursor steps each way from every answer
constexpr std::size_t range_steps = 8;    // steps into every range
constexpr std::size_t probe_limit = 40;
constexpr std::size_t range_probes = 6;  // probes that also run every pair of bound kinds
// at() of every rank of sets up to this many entries, of a sample of larger ones
constexpr std::size_t rank_limit = 200;

std::size_t key_size_of(const entry_types& types) {
  return format::encoded_key_size(types.keys, types.key_size);
}

using detail::same_types;

bool same_record(const shard_record& a, const shard_record& b) {
  return a.path == b.path && a.first_key == b.first_key && a.last_key == b.last_key &&
         a.entries == b.entries && a.file_size == b.file_size &&
         a.header_checksum == b.header_checksum && a.line == b.line;
}

bool same_manifest(const shard_manifest& a, const shard_manifest& b) {
  return same_types(a.types, b.types) && std::equal(a.shards.begin(), a.shards.end(),
                                                    b.shards.begin(), b.shards.end(), same_record);
}

// ---------------------------------------------------------------------------
// 1. Parsing

struct parse_outcome {
  std::optional<shard_manifest> manifest;
  errc code = errc::corrupt;  // when refused
  std::string message;
};

// What section 5 requires of a manifest that a reader accepts, and the one
// spelling of section 4.5.
void check_accepted(const shard_manifest& manifest, std::string_view text) {
  const std::string written = format_shard_manifest(manifest);
  if (written != text) {
    const std::size_t at = static_cast<std::size_t>(
        std::mismatch(text.begin(), text.end(), written.begin(), written.end()).first -
        text.begin());
    fail(fmt::format(
        "a manifest that parses is not the text format_shard_manifest writes for it: they differ "
        "from byte {} on: input {}, written {}",
        at, hex(text.substr(at, 32)), hex(std::string_view(written).substr(at, 32))));
  }
  const entry_types& types = manifest.types;
  BBTREE_FUZZ_CHECK(
      types.keys != key_kind::fixed || (types.key_size >= 1 && types.key_size <= 4096),
      fmt::format("a fixed key size of {} parsed", types.key_size));
  BBTREE_FUZZ_CHECK(
      types.values != value_kind::fixed || (types.value_size >= 1 && types.value_size <= 4096),
      fmt::format("a fixed value size of {} parsed", types.value_size));
  const std::size_t key_size = key_size_of(types);
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < manifest.shards.size(); ++i) {
    const shard_record& shard = manifest.shards[i];
    const std::string where = fmt::format("shard line {} (manifest line {})", i, shard.line);
    BBTREE_FUZZ_CHECK(shard.line == i + 3, where + " has the wrong line number");
    BBTREE_FUZZ_CHECK(!shard.path.empty() && shard.path.front() != '/' &&
                          shard.path.find('\0') == std::string::npos,
                      where + " has the path " + hex(shard.path));
    for (const std::string* key : {&shard.first_key, &shard.last_key}) {
      BBTREE_FUZZ_CHECK(
          key_size == 0 ? key->size() <= format::max_key_length : key->size() == key_size,
          fmt::format("{} has a key of {} bytes: {}", where, key->size(), hex(*key)));
    }
    BBTREE_FUZZ_CHECK(shard.entries >= 1, where + " has no entries");
    BBTREE_FUZZ_CHECK(shard.first_key <= shard.last_key &&
                          (shard.first_key == shard.last_key) == (shard.entries == 1),
                      fmt::format("{}: keys {} to {} for {} entries", where, hex(shard.first_key),
                                  hex(shard.last_key), shard.entries));
    BBTREE_FUZZ_CHECK(i == 0 || manifest.shards[i - 1].last_key < shard.first_key,
                      where + " overlaps the shard before it");
    BBTREE_FUZZ_CHECK(total <= UINT64_MAX - shard.entries, where + ": the entries overflow");
    total += shard.entries;
  }
}

parse_outcome parse(std::string_view text, const std::string& name) {
  const bool magic = text.starts_with(manifest_magic);
  BBTREE_FUZZ_CHECK(is_shard_manifest(std::as_bytes(std::span(text.data(), text.size()))) == magic,
                    "is_shard_manifest() disagrees with the magic");
  parse_outcome outcome;
  try {
    outcome.manifest = parse_shard_manifest(text, name);
  } catch (const error& e) {
    outcome.code = e.code();
    outcome.message = e.what();
    BBTREE_FUZZ_CHECK(
        outcome.code == errc::not_bbtree || outcome.code == errc::newer_version ||
            outcome.code == errc::truncated || outcome.code == errc::corrupt ||
            outcome.code == errc::out_of_order,
        fmt::format("the parser refused with error {} ({}): {}", static_cast<int>(outcome.code),
                    to_string(outcome.code), outcome.message));
    BBTREE_FUZZ_CHECK(outcome.message.starts_with(name + ":"),
                      "a refusal that does not name the manifest: " + outcome.message);
    BBTREE_FUZZ_CHECK((outcome.code == errc::not_bbtree) == !magic,
                      "not_bbtree for a text with the magic, or another error for one without: " +
                          outcome.message);
    return outcome;
  }
  BBTREE_FUZZ_CHECK(magic, "a manifest without the magic parsed");
  check_accepted(*outcome.manifest, text);
  return outcome;
}

// ---------------------------------------------------------------------------
// 2. What the fixture says about a manifest's shards

struct expectation {
  bool opens = true;   // every line names a fixture shard whose header matches it
  bool intact = true;  // and its true first and last keys, and no shard twice
  std::vector<const fixture_shard*> shards;
  std::string why;  // why it cannot open or verify, for messages
};

expectation expect(const shard_manifest& manifest, const manifest_fixture& fixture) {
  expectation result;
  std::set<const fixture_shard*> named;
  for (const shard_record& record : manifest.shards) {
    const fixture_shard* shard = fixture.shard_at(fixture.directory / fs::path(record.path));
    const std::string where = fmt::format("line {}", record.line);
    if (shard == nullptr) {
      result.opens = result.intact = false;
      result.why = where + " names no shard file";
      return result;
    }
    if (!same_types(shard->types, manifest.types) || shard->record.entries != record.entries ||
        shard->record.file_size != record.file_size ||
        shard->record.header_checksum != record.header_checksum) {
      result.opens = result.intact = false;
      result.why = where + " does not match its shard's header";
      return result;
    }
    if (result.intact && (shard->record.first_key != record.first_key ||
                          shard->record.last_key != record.last_key)) {
      result.intact = false;
      result.why = where + " has another first or last key than its shard";
    }
    if (!named.insert(shard).second && result.intact) {
      result.intact = false;
      result.why = where + " names a shard again";
    }
    result.shards.push_back(shard);
  }
  return result;
}

bool stays_in_scratch(const shard_manifest& manifest, const manifest_fixture& fixture) {
  const fs::path scratch = scratch_directory().lexically_normal();
  for (const shard_record& record : manifest.shards) {
    const fs::path relative =
        (fixture.directory / fs::path(record.path)).lexically_normal().lexically_relative(scratch);
    if (relative.empty() || *relative.begin() == "..") return false;
  }
  return true;
}

void write_input(const fs::path& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot write the manifest " + path.string());
  while (!text.empty()) {
    const ssize_t written = ::write(fd, text.data(), text.size());
    if (written <= 0) fail("cannot write the manifest " + path.string());
    text.remove_prefix(static_cast<std::size_t>(written));
  }
  ::close(fd);
}

// ---------------------------------------------------------------------------
// 3. Queries

using entry_list = std::vector<std::pair<std::string, std::string>>;

// A query's name for set_checker's messages, when it is a constant.
auto named(const char* text) {
  return [text] { return std::string(text); };
}

class set_checker {
 public:
  // `scan`: the set's entries in order (its shards', shard after shard).
  // `sorted`: the set verifies, so that `scan` is in key order and is the
  // model of every lookup too.
  set_checker(const sharded_reader& set, const shard_manifest& manifest, entry_list scan,
              bool sorted, bytes_view input)
      : set_(set),
        manifest_(manifest),
        scan_(std::move(scan)),
        sorted_(sorted),
        input_(input),
        key_size_(key_size_of(manifest.types)) {
    if (sorted_) {
      for (std::size_t i = 1; i < scan_.size(); ++i) {
        if (!(scan_[i - 1].first < scan_[i].first)) fail("harness: a verified set out of order");
      }
    }
    for (const auto& entry : scan_) by_key_.push_back(&entry);
    std::stable_sort(by_key_.begin(), by_key_.end(),
                     [](const auto* a, const auto* b) { return a->first < b->first; });
  }

  void run() {
    const std::uint64_t n = scan_.size();
    guarded("the set's shape", [&] { check_shape(); });
    guarded("a forward scan", [&] { check_scans(); });
    guarded("first and last", [&] {
      const auto first = set_.first();
      const auto last = set_.last();
      BBTREE_FUZZ_CHECK(first.has_value() == (n > 0) && last.has_value() == (n > 0),
                        "first() or last() of a set of " + std::to_string(n));
      if (n > 0) {
        BBTREE_FUZZ_CHECK(first->key == scan_.front().first && first->value == scan_.front().second,
                          "first() is not the first entry of the scan");
        BBTREE_FUZZ_CHECK(last->key == scan_.back().first && last->value == scan_.back().second,
                          "last() is not the last entry of the scan");
      }
    });
    // Every rank (a sample of large sets), with steps both ways from the
    // first and last entries of shards, where cursors cross.
    std::set<std::uint64_t> borders;
    for (std::size_t shard = 0; shard < set_.shard_count(); ++shard) {
      const std::uint64_t first = set_.shard_first_rank(shard);
      borders.insert(first);
      borders.insert(first > 0 ? first - 1 : n);
    }
    std::set<std::uint64_t> ranks(borders);
    for (std::uint64_t r = 0; r < n; r += 1 + n / rank_limit) ranks.insert(r);
    for (const std::uint64_t r : {n, n + 1, ~std::uint64_t{0}, n / 2}) ranks.insert(r);
    for (const std::uint64_t r : ranks) {
      guarded("at()", [&] {
        const cursor position = set_.at(r);
        const auto what = [&] { return fmt::format("at({})", r); };
        expect_at(position, std::min<std::uint64_t>(r, n), what);
        if (borders.count(r) != 0 || r >= n) steps_both_ways(position, bound_steps, what);
      });
    }

    const std::vector<std::string> probes = make_probes();
    for (std::size_t i = 0; i < probes.size(); ++i) {
      check_probe(probes[i], probes[(i * 7 + 3) % probes.size()], i < range_probes);
    }
    // The empty key as a view without bytes (a null data pointer), which
    // reaches memcmp in places a std::string's never does.
    if (key_size_ == 0) check_probe(std::string_view(), probes.front(), true);
    check_get_many(probes);
    // Probes of the wrong length, for sized keys (spec/FORMAT.md 13.1 has
    // the probe exactly key_size bytes): no answer is checked, but they
    // must not crash or read out of bounds.
    if (key_size_ > 0) {
      std::vector<std::string> odd;
      odd.emplace_back(key_size_ - 1, '\x01');
      odd.emplace_back(key_size_ + 1, '\xfe');
      if (!scan_.empty()) odd.push_back(scan_.front().first.substr(0, key_size_ / 2));
      for (const std::string& probe : odd) {
        try_unchecked([&] { run_unchecked(probe); });
      }
      try_unchecked([&] { run_unchecked(std::string_view()); });
    }
  }

 private:
  // Queries on a set of valid shards may not throw, whatever the manifest
  // says of their keys.
  template <typename Queries>
  void guarded(std::string_view what, Queries&& queries) {
    try {
      queries();
    } catch (const error& e) {
      fail(fmt::format("{} threw on a set of valid shards{}: {}", what,
                       sorted_ ? " that verifies" : "", e.what()));
    }
  }
  template <typename Queries>
  void try_unchecked(Queries&& queries) {
    try {
      queries();
    } catch (const error&) {
    }
  }

  // The cursor reads the entry of its rank, and sits at `position` when the
  // model knows it (a verified set, or a query by rank).  `what()` names the
  // query in a finding's message; it runs only then, since formatting every
  // query's name would cost more than the queries.
  template <typename Describe>
  void expect_at(const cursor& at, std::optional<std::uint64_t> position,
                 const Describe& what) const {
    const std::uint64_t n = scan_.size();
    const std::uint64_t rank = at.rank();
    if (at.is_end()) {
      BBTREE_FUZZ_CHECK(rank == n, fmt::format("{}: the end has rank {} of {}", what(), rank, n));
    } else {
      BBTREE_FUZZ_CHECK(rank < n, fmt::format("{}: an entry of rank {} of {}", what(), rank, n));
      const std::string_view key = at.key();
      const std::string_view value = at.value();
      touch(value);
      BBTREE_FUZZ_CHECK(key == scan_[rank].first && value == scan_[rank].second,
                        fmt::format("{}: the entry of rank {} is key {}, the scan has {}", what(),
                                    rank, hex(key), hex(scan_[rank].first)));
    }
    if (position) {
      BBTREE_FUZZ_CHECK(
          rank == *position,
          fmt::format("{}: at rank {}, the model says {} (key {})", what(), rank, *position,
                      *position < n ? hex(scan_[*position].first) : "the end"));
    }
  }

  std::uint64_t next_rank(std::uint64_t rank) const {
    return rank >= scan_.size() ? scan_.size() : rank + 1;
  }
  // Before the first entry is the end; before the end, the last entry.
  std::uint64_t previous_rank(std::uint64_t rank) const {
    const std::uint64_t n = scan_.size();
    if (rank >= n) return n > 0 ? n - 1 : n;
    return rank == 0 ? n : rank - 1;
  }

  template <typename Describe>
  void steps_both_ways(const cursor& from, std::size_t steps, const Describe& what) const {
    for (const bool forwards : {true, false}) {
      cursor at = from;
      std::uint64_t rank = at.rank();
      for (std::size_t step = 0; step < steps; ++step) {
        if (forwards) {
          ++at;
          rank = next_rank(rank);
        } else {
          --at;
          rank = previous_rank(rank);
        }
        expect_at(at, rank, [&] {
          return fmt::format("{}, then {} {} times", what(), forwards ? "++" : "--", step + 1);
        });
      }
    }
  }

  void check_shape() {
    const std::uint64_t n = scan_.size();
    BBTREE_FUZZ_CHECK(set_.size() == n && set_.info().entries == n && set_.empty() == (n == 0),
                      fmt::format("size() {} of a set of {}", set_.size(), n));
    BBTREE_FUZZ_CHECK(set_.is_shard_set(), "a manifest's set is not a shard set");
    BBTREE_FUZZ_CHECK(same_manifest(set_.manifest(), manifest_),
                      "the set's manifest is not the parsed one");
    BBTREE_FUZZ_CHECK(
        set_.info().keys == manifest_.types.keys && set_.info().values == manifest_.types.values,
        "info() has other kinds than the manifest");
    BBTREE_FUZZ_CHECK(set_.shard_count() == manifest_.shards.size(), "shard_count()");
    std::uint64_t first_rank = 0;
    for (std::size_t shard = 0; shard < set_.shard_count(); ++shard) {
      BBTREE_FUZZ_CHECK(set_.shard_first_rank(shard) == first_rank,
                        fmt::format("shard_first_rank({})", shard));
      BBTREE_FUZZ_CHECK(set_.shard(shard).size() == manifest_.shards[shard].entries,
                        fmt::format("shard({}).size()", shard));
      first_rank += manifest_.shards[shard].entries;
    }
    bool refused = false;
    try {
      (void)set_.shard(set_.shard_count());
    } catch (const error& e) {
      refused = e.code() == errc::invalid_argument;
    }
    BBTREE_FUZZ_CHECK(refused, "shard(shard_count()) did not throw invalid_argument");
    std::ostringstream out;
    write_shard_set_header(set_, out);
    write_shard_set_stats(set_, out);
    touch(out.str());
  }

  void check_scans() {
    const std::uint64_t n = scan_.size();
    std::uint64_t rank = 0;
    cursor at = set_.begin();
    for (; !at.is_end() && rank < scan_limit; ++at, ++rank)
      expect_at(at, rank, named("a forward scan"));
    BBTREE_FUZZ_CHECK(rank == std::min<std::uint64_t>(n, scan_limit),
                      fmt::format("a forward scan ends after {} entries of {}", rank, n));
    if (at.is_end()) {
      BBTREE_FUZZ_CHECK(at == set_.end(), "the scan's end is not end()");
      ++at;
      BBTREE_FUZZ_CHECK(at.is_end(), "++ moved the end");
    }
    std::uint64_t walked = 0;
    set_.for_each([&](const entry_ref& entry) {
      BBTREE_FUZZ_CHECK(
          walked < n && entry.key() == scan_[walked].first && entry.value() == scan_[walked].second,
          fmt::format("for_each() differs from the scan at entry {}", walked));
      return ++walked < scan_limit;
    });
    BBTREE_FUZZ_CHECK(walked == std::min<std::uint64_t>(n, scan_limit),
                      fmt::format("for_each() visits {} entries of {}", walked, n));
    cursor back = set_.end();
    for (std::uint64_t step = 0; step < std::min<std::uint64_t>(n, scan_limit); ++step) {
      --back;
      expect_at(back, n - 1 - step, named("a backward scan"));
    }
    if (n <= scan_limit) {
      --back;
      expect_at(back, n, named("a step back from the first entry"));
    }
  }

  // Keys that land on and beside every shard's edges (the manifest's and the
  // true ones), the entries of the fixture's other shards, the extremes of
  // the key space and slices of the input.
  std::vector<std::string> make_probes() const {
    std::vector<std::string> probes;
    std::set<std::string> seen;
    auto add = [&](std::string key) {
      if (probes.size() < probe_limit && (key_size_ == 0 || key.size() == key_size_) &&
          seen.insert(key).second) {
        probes.push_back(std::move(key));
      }
    };
    auto add_with_neighbours = [&](const std::string& key) {
      add(key);
      if (key.empty()) return;
      std::string up = key;
      std::string down = key;
      for (std::size_t i = up.size(); i-- > 0;) {
        if (reinterpret_cast<unsigned char&>(up[i])++ != 0xFF) break;
      }
      for (std::size_t i = down.size(); i-- > 0;) {
        if (reinterpret_cast<unsigned char&>(down[i])-- != 0) break;
      }
      add(up);
      add(down);
      if (key_size_ == 0) {
        add(key + '\0');
        add(key.substr(0, key.size() - 1));
      }
    };
    for (const shard_record& record : manifest_.shards) {
      add_with_neighbours(record.first_key);
      add_with_neighbours(record.last_key);
    }
    for (std::size_t shard = 0; shard < set_.shard_count(); ++shard) {
      const std::uint64_t first = set_.shard_first_rank(shard);
      if (first < scan_.size()) add_with_neighbours(scan_[first].first);
      if (first > 0) add_with_neighbours(scan_[first - 1].first);
    }
    if (!scan_.empty()) add_with_neighbours(scan_.back().first);
    if (key_size_ > 0) {
      add(std::string(key_size_, '\0'));
      add(std::string(key_size_, '\xff'));
    } else {
      add("");
      add(std::string(1, '\0'));
      add(std::string(4, '\xff'));
    }
    if (const fixture_set* fixture = the_manifest_fixture().set_of(manifest_.types)) {
      for (const fixture_shard& shard : fixture->shards) {
        add(shard.record.first_key);
        add(std::next(shard.entries.begin(), static_cast<std::ptrdiff_t>(shard.entries.size() / 2))
                ->first);
      }
    }
    for (std::size_t i = 0; i < scan_.size(); i += 1 + scan_.size() / 8) add(scan_[i].first);
    // Slices of the input, at places that depend on it.
    std::uint64_t state = input_.size() * 0x9E3779B97F4A7C15ull + 1;
    for (int tries = 0; tries < 64 && probes.size() < probe_limit && !input_.empty(); ++tries) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const std::size_t start = (state >> 33) % input_.size();
      std::size_t length = key_size_ > 0 ? key_size_ : (state >> 20) % 12;
      length = std::min(length, input_.size() - start);
      std::string probe(reinterpret_cast<const char*>(input_.data()) + start, length);
      if (key_size_ > 0) probe.resize(key_size_, '\0');
      add(std::move(probe));
    }
    return probes;
  }

  // Positions in the sorted model.
  std::uint64_t lower(std::string_view key) const {
    return static_cast<std::uint64_t>(
        std::lower_bound(scan_.begin(), scan_.end(), key,
                         [](const auto& entry, std::string_view k) { return entry.first < k; }) -
        scan_.begin());
  }
  std::uint64_t upper(std::string_view key) const {
    return static_cast<std::uint64_t>(
        std::upper_bound(scan_.begin(), scan_.end(), key,
                         [](std::string_view k, const auto& entry) { return k < entry.first; }) -
        scan_.begin());
  }
  bool present(std::string_view key) const {
    const std::uint64_t at = lower(key);
    return at < scan_.size() && scan_[at].first == key;
  }
  std::optional<std::uint64_t> when_sorted(std::uint64_t position) const {
    return sorted_ ? std::optional(position) : std::nullopt;
  }
  // A value get() may return in a set that lies about its keys: that of the
  // key in one of the shards.
  bool a_value_of(std::string_view key, std::string_view value) const {
    const auto [first, last] =
        std::equal_range(by_key_.begin(), by_key_.end(), key, by_key_order{});
    return std::any_of(first, last, [&](const auto* entry) { return entry->second == value; });
  }
  struct by_key_order {
    using entry = std::pair<std::string, std::string>;
    bool operator()(const entry* a, std::string_view b) const { return a->first < b; }
    bool operator()(std::string_view a, const entry* b) const { return a < b->first; }
  };

  std::uint64_t start_of(const bound& from) const {
    switch (from.type) {
      case bound::kind::unbounded:
        return 0;
      case bound::kind::inclusive:
        return lower(from.key);
      case bound::kind::exclusive:
        return upper(from.key);
    }
    return 0;
  }
  std::uint64_t end_of(const bound& to) const {
    switch (to.type) {
      case bound::kind::unbounded:
        return scan_.size();
      case bound::kind::inclusive:
        return upper(to.key);
      case bound::kind::exclusive:
        return lower(to.key);
    }
    return scan_.size();
  }

  template <typename Describe>
  void check_range(const entry_range& range, std::optional<std::uint64_t> first,
                   std::optional<std::uint64_t> last, const Describe& what) const {
    expect_at(range.begin(), first, [&] { return what() + ": begin"; });
    expect_at(range.end(), last, [&] { return what() + ": end"; });
    // Walked, by steps and by a walk, as far as range_steps.
    cursor at = range.begin();
    std::uint64_t rank = at.rank();
    std::size_t steps = 0;
    for (; at != range.end() && steps < range_steps; ++steps) {
      BBTREE_FUZZ_CHECK(!at.is_end(), fmt::format("{}: the walk passes the end", what()));
      ++at;
      rank = next_rank(rank);
      expect_at(at, rank, what);
    }
    if (sorted_ && first && last) {
      const std::uint64_t length = *last > *first ? *last - *first : 0;
      BBTREE_FUZZ_CHECK(
          steps == std::min<std::uint64_t>(length, range_steps),
          fmt::format("{}: {} steps to its end, the model has {}", what(), steps, length));
      std::size_t walked = 0;
      range.for_each([&](const entry_ref& entry) {
        BBTREE_FUZZ_CHECK(entry.key() == scan_[*first + walked].first &&
                              entry.value() == scan_[*first + walked].second,
                          fmt::format("{}: for_each() differs at entry {}", what(), walked));
        return ++walked < range_steps;
      });
      BBTREE_FUZZ_CHECK(walked == std::min<std::uint64_t>(length, range_steps),
                        fmt::format("{}: for_each() visits {} entries", what(), walked));
    }
  }

  void check_probe(std::string_view probe, std::string_view other, bool ranges) {
    auto call = [probe](std::string_view query) {
      return [probe, query] { return fmt::format("{}({})", query, hex(probe, 24)); };
    };
    const auto at = [probe] { return hex(probe, 24); };
    guarded("get()", [&] {
      const auto value = set_.get(probe);
      BBTREE_FUZZ_CHECK(set_.contains(probe) == value.has_value(), "contains() of " + at());
      if (value) touch(*value);
      if (sorted_) {
        const std::uint64_t position = lower(probe);
        BBTREE_FUZZ_CHECK(
            value.has_value() == present(probe) && (!value || *value == scan_[position].second),
            fmt::format("get({}) found {}, the model {}", at(), value.has_value(), present(probe)));
      } else if (value) {
        BBTREE_FUZZ_CHECK(a_value_of(probe, *value), "get(" + at() + ") gave no shard's value");
      }
    });
    guarded("find()", [&] {
      const cursor found = set_.find(probe);
      expect_at(
          found,
          sorted_ ? std::optional(present(probe) ? lower(probe) : scan_.size()) : std::nullopt,
          call("find"));
      BBTREE_FUZZ_CHECK(found.is_end() || found.key() == probe, call("find")() + " is another key");
      steps_both_ways(found, bound_steps, call("find"));
    });
    guarded("lower_bound()", [&] {
      const cursor bound = set_.lower_bound(probe);
      expect_at(bound, when_sorted(lower(probe)), call("lower_bound"));
      steps_both_ways(bound, bound_steps, call("lower_bound"));
    });
    guarded("upper_bound()", [&] {
      const cursor bound = set_.upper_bound(probe);
      expect_at(bound, when_sorted(upper(probe)), call("upper_bound"));
      steps_both_ways(bound, bound_steps, call("upper_bound"));
    });
    guarded("equal_range()", [&] {
      check_range(set_.equal_range(probe), when_sorted(lower(probe)), when_sorted(upper(probe)),
                  call("equal_range"));
    });
    guarded("rank()", [&] {
      const std::uint64_t rank = set_.rank(probe);
      BBTREE_FUZZ_CHECK(rank <= scan_.size() && (!sorted_ || rank == lower(probe)),
                        fmt::format("rank({}) is {}", at(), rank));
    });
    guarded("prefix()", [&] {
      for (const std::string_view head :
           {std::string_view(probe).substr(0, probe.size() / 2), std::string_view(probe)}) {
        std::uint64_t first = lower(head);
        std::uint64_t last = first;
        while (last < scan_.size() && std::string_view(scan_[last].first).starts_with(head)) ++last;
        check_range(set_.prefix(head), when_sorted(first), when_sorted(last),
                    [head] { return "prefix(" + hex(head, 24) + ")"; });
      }
    });
    if (!ranges) return;
    const bound froms[] = {bound::none(), bound::inclusive(probe), bound::exclusive(probe)};
    const bound tos[] = {bound::none(), bound::inclusive(other), bound::exclusive(other)};
    for (const bound& from : froms) {
      for (const bound& to : tos) {
        const auto what = [&] {
          return fmt::format("range from {} {} to {} {}", static_cast<int>(from.type), at(),
                             static_cast<int>(to.type), hex(other, 24));
        };
        const std::uint64_t first = start_of(from);
        const std::uint64_t last = std::max(first, end_of(to));
        guarded("count()", [&] {
          const std::uint64_t count = set_.count(from, to);
          BBTREE_FUZZ_CHECK(
              count <= scan_.size() && (!sorted_ || count == last - first),
              fmt::format("{}: count() is {}, the model {}", what(), count, last - first));
        });
        guarded("range()", [&] {
          check_range(set_.range(from, to), when_sorted(first), when_sorted(last), what);
        });
      }
    }
  }

  // One batch: every value found is the key's (in a verified set, exactly
  // the keys present are found), and the count is of the values returned.
  std::vector<std::optional<std::string_view>> check_batch(
      std::span<const std::string_view> keys) const {
    std::vector<std::optional<std::string_view>> values(keys.size());
    const std::size_t found = set_.get_many(keys, values);
    std::size_t counted = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const auto what = [&] {
        return fmt::format("get_many() of {} keys, key {} ({})", keys.size(), i, hex(keys[i], 24));
      };
      if (values[i]) {
        ++counted;
        touch(*values[i]);
        BBTREE_FUZZ_CHECK(a_value_of(keys[i], *values[i]), what() + " gave no shard's value");
      }
      if (sorted_) {
        BBTREE_FUZZ_CHECK(values[i].has_value() == present(keys[i]),
                          what() + " disagrees with the model");
      }
    }
    BBTREE_FUZZ_CHECK(found == counted, "get_many() counts other keys than it returns");
    return values;
  }

  void check_get_many(const std::vector<std::string>& probes) {
    // All of them, then again backwards with each key twice: get_many
    // groups keys by shard, so the order of the keys must not matter.
    std::vector<std::string_view> keys(probes.begin(), probes.end());
    for (std::size_t i = probes.size(); i-- > 0;) {
      keys.push_back(probes[i]);
      keys.push_back(probes[i]);
    }
    guarded("get_many()", [&] {
      const auto values = check_batch(keys);
      for (std::size_t i = 0; i < probes.size(); ++i) {
        // Its two copies in the second half.
        const std::size_t twin = probes.size() + (probes.size() - 1 - i) * 2;
        BBTREE_FUZZ_CHECK(
            values[twin] == values[i] && values[twin + 1] == values[i],
            fmt::format("get_many() of key {} ({}) differs in another order", i, hex(keys[i], 24)));
      }
    });
    // A batch of several of the chunks (256 keys) that get_many sorts by
    // shard: the entries' keys (a sample of large sets) and the probes,
    // shuffled, so that every chunk holds keys of many shards.
    std::vector<std::string_view> many;
    for (std::size_t round = 0; round < 4 && many.size() < 600; ++round) {
      for (std::size_t i = round; i < scan_.size(); i += 1 + scan_.size() / 160)
        many.push_back(scan_[i].first);
      many.insert(many.end(), probes.begin(), probes.end());
    }
    std::shuffle(many.begin(), many.end(), std::mt19937(static_cast<unsigned>(input_.size())));
    guarded("get_many() of many keys", [&] { (void)check_batch(many); });
  }

  void run_unchecked(std::string_view probe) const {
    if (const auto value = set_.get(probe)) touch(*value);
    const cursor bound = set_.lower_bound(probe);
    if (!bound.is_end()) touch(bound.key());
    (void)set_.upper_bound(probe).rank();
    (void)set_.find(probe).rank();
    (void)set_.rank(probe);
    (void)set_.count(bound::inclusive(probe), bound::none());
    std::string_view keys[] = {probe, probe};
    std::optional<std::string_view> values[2];
    (void)set_.get_many(keys, values);
  }

  const sharded_reader& set_;
  const shard_manifest& manifest_;
  entry_list scan_;
  std::vector<const entry_list::value_type*> by_key_;  // scan_ sorted by key, for a_value_of
  bool sorted_;
  bytes_view input_;
  std::size_t key_size_;
};

entry_list scan_of(const std::vector<const fixture_shard*>& shards) {
  entry_list entries;
  for (const fixture_shard* shard : shards) {
    entries.insert(entries.end(), shard->entries.begin(), shard->entries.end());
  }
  return entries;
}

}  // namespace

int run_manifest(bytes_view input) {
  const manifest_fixture& fixture = the_manifest_fixture();
  const std::string name = fixture.manifest.string();
  const std::string_view text(reinterpret_cast<const char*>(input.data()), input.size());
  const parse_outcome parsed = parse(text, name);
  if (!text.starts_with(manifest_magic)) return 0;  // an index file's bytes: fuzz_open_query's
  if (parsed.manifest && !stays_in_scratch(*parsed.manifest, fixture)) return 0;

  write_input(fixture.manifest, text);
  std::optional<sharded_reader> set;
  errc open_code = errc::corrupt;
  std::string open_message;
  try {
    set.emplace(sharded_reader::open(fixture.manifest));
  } catch (const error& e) {
    open_code = e.code();
    open_message = e.what();
  }
  shard_set_report report;
  try {
    report = verify_shard_set(fixture.manifest);
  } catch (const error& e) {
    fail(std::string("verify_shard_set threw on a manifest it can read: ") + e.what());
  }
  for (const shard_set_problem& problem : report.problems) touch(format_problem(report, problem));

  if (!parsed.manifest) {
    BBTREE_FUZZ_CHECK(!set && open_code == parsed.code && open_message == parsed.message,
                      fmt::format("the parser refused the manifest ({}), the reader said: {}",
                                  parsed.message, set ? "(it opened)" : open_message));
    BBTREE_FUZZ_CHECK(
        !report.ok() && report.problems.size() == 1,
        "verify_shard_set passed or reported more than the parser's refusal: " + parsed.message);
    return 0;
  }
  const shard_manifest& manifest = *parsed.manifest;
  const expectation expected = expect(manifest, fixture);
  BBTREE_FUZZ_CHECK(set.has_value() == expected.opens,
                    set ? "a manifest opened although " + expected.why
                        : "a manifest whose shards match it did not open: " + open_message);
  BBTREE_FUZZ_CHECK(set || open_message.starts_with(name + ":"),
                    "a refused set whose error does not name the manifest: " + open_message);
  BBTREE_FUZZ_CHECK(
      report.shard_count == manifest.shards.size() && report.entries == manifest.entries(),
      "verify_shard_set counts other shards or entries than the manifest");
  if (report.ok() != (expected.opens && expected.intact)) {
    std::string problems;
    for (const shard_set_problem& problem : report.problems)
      problems += "; " + format_problem(report, problem);
    for (const auto& [path, why] : report.unreadable) problems += "; " + path + ": " + why;
    fail(report.ok() ? "verify_shard_set passed a set although " + expected.why
                     : "verify_shard_set failed a set of its true shards" + problems);
  }
  if (set) {
    set_checker(*set, manifest, scan_of(expected.shards), expected.intact, input).run();
  }
  return 0;
}

}  // namespace bbtree::fuzz
