// A temporary directory removed at the end of each test.
#pragma once

#include "temp_dir.h"

namespace trainyard::storage::testing {

class TempDir : public test_support::TempDir {
 public:
  TempDir() : test_support::TempDir("ty-storage") {}
};

}  // namespace trainyard::storage::testing
