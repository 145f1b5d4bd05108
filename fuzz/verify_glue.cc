// Full verification for the targets (bbtree/verify.h).
#include "fuzz_support.h"

#include <bbtree/verify.h>

#include <fmt/format.h>

namespace bbtree::fuzz {

namespace {

verify_report run(bytes_view file, const verify_options& options) {
  try {
    return verify_bytes({reinterpret_cast<const std::byte*>(file.data()), file.size()}, "input",
                        options);
  } catch (const error& e) {
    // Bytes in memory can always be read: every problem belongs in the report.
    fail(fmt::format("verify_bytes() threw instead of reporting: {}", e.what()));
  }
}

}  // namespace

std::string verify_problems(bytes_view file, bool builder_policy) {
  verify_options options;
  options.builder_policy = builder_policy;
  options.max_errors = 16;
  const verify_report report = run(file, options);
  for (const verify_problem& problem : report.problems) {
    BBTREE_FUZZ_CHECK(!problem.message.empty(), "a problem without a message");
    BBTREE_FUZZ_CHECK(problem.region != verify_region::page || problem.page.has_value(),
                      "a page problem without a page: " + problem.message);
    (void)format_problem(report, problem);
  }
  BBTREE_FUZZ_CHECK(report.problems.size() <= options.max_errors,
                    fmt::format("{} problems reported, max_errors is {}", report.problems.size(),
                                options.max_errors));
  std::string out;
  for (std::size_t i = 0; i < report.problems.size() && i < 3; ++i) {
    out += (i > 0 ? "; " : "") + format_problem(report, report.problems[i]);
  }
  return out;
}

bool verifies(bytes_view file, bool builder_policy) {
  return verify_problems(file, builder_policy).empty();
}

void check_verifier_modes(bytes_view file, bool full_ok) {
  verify_options quick;
  quick.quick = true;
  const verify_report checksums = run(file, quick);
  BBTREE_FUZZ_CHECK(!full_ok || checksums.ok(),
                    "full verification passes, checksums-only fails: " +
                        format_problem(checksums, checksums.problems.front()));
  verify_options policy;
  policy.builder_policy = true;
  const verify_report strict = run(file, policy);
  BBTREE_FUZZ_CHECK(!strict.ok() || full_ok,
                    "verification with builder_policy passes, without it fails");
  verify_options everything;
  everything.max_errors = 0;
  const verify_report all = run(file, everything);
  BBTREE_FUZZ_CHECK(all.ok() == full_ok, "max_errors = 0 changes the verdict");
}

}  // namespace bbtree::fuzz
