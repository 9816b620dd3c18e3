#ifndef GDN_TESTS_REJECT_HARNESS_HPP
#define GDN_TESTS_REJECT_HARNESS_HPP

// The table-driven bad-input suite shared by the recurrence's and the conv's
// validation tests: each case breaks one argument of a valid call setup; the
// call must throw gdn::InvalidArgument naming the function and the argument
// (a std::invalid_argument whose message says what was expected and what was
// given) and change none of the setup's buffers.
//
// A Setup has `space`, `valid_calls()`: its valid calls, run in order, and
// `buffers()`: the (name, bytes) of every buffer a call could write.

#include "test_support.hpp"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace gdn_test {

template <class Setup>
struct BadCase {
  const char* name;
  const char* function;  // expected gdn:: function in the message
  const char* argument;  // expected argument name
  bool checking;         // needs the index checking mode
  std::function<void(Setup&)> call;
};

/// Runs case `c` on a fresh setup and checks the rejection and that nothing changed.
template <class Setup>
void expect_rejected(const BadCase<Setup>& c) {
  Setup s;
  s.space.fence();
  const std::vector<std::pair<std::string, std::vector<unsigned char>>> before = s.buffers();
  gdn::set_index_checking(c.checking);
  bool threw = false;
  try {
    c.call(s);
  } catch (const gdn::InvalidArgument& e) {
    threw = true;
    EXPECT_EQ(e.argument(), c.argument) << e.what();
    EXPECT_EQ(e.function(), c.function) << e.what();
    const std::string msg = e.what();
    EXPECT_NE(msg.find(c.function), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected"), std::string::npos) << msg;
    EXPECT_NE(msg.find("got"), std::string::npos) << msg;
    const std::invalid_argument& base = e;  // the documented base type
    (void)base;
  }
  gdn::set_index_checking(false);
  EXPECT_TRUE(threw) << c.name << " was not rejected";
  s.space.fence();
  const auto after = s.buffers();
  for (std::size_t i = 0; i < before.size(); ++i) {
    EXPECT_TRUE(same_bytes(after[i].second, before[i].second)) << before[i].first << " changed";
  }
}

/// The setup's valid calls pass with and without the checking mode (so that
/// the cases fail for the reason they name).
template <class Setup>
void expect_valid_calls_pass() {
  for (bool on : {false, true}) {
    Setup s;
    gdn::set_index_checking(on);
    for (const std::function<void()>& call : s.valid_calls()) EXPECT_NO_THROW(call());
    gdn::set_index_checking(false);
    s.space.fence();
  }
}

/// The test name of a case (INSTANTIATE_TEST_SUITE_P's name generator).
struct BadCaseName {
  template <class Param>
  std::string operator()(const ::testing::TestParamInfo<Param>& i) const {
    return std::string(i.param.name);
  }
};

}  // namespace gdn_test

#endif  // GDN_TESTS_REJECT_HARNESS_HPP
