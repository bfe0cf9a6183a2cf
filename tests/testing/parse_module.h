// A module parsed from HLO text in a test; a parse error fails the test (and gives nullptr).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "hlo/parser.h"

namespace opprobe::testing {

inline std::unique_ptr<hlo::Module> ParseUnit(const std::string& text) {
  auto m = hlo::ParseModule(text, "test");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(m).value() : nullptr;
}

}  // namespace opprobe::testing
