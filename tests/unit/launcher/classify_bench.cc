// ty_classify_bench [LINES]: nanoseconds per line of ClassifyLine (src/launcher/output.h) over
// a mix of typical trainer output, to keep the per-line cost of severity detection visible.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "output.h"

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 10000000;
  const std::vector<std::string> mixes[] = {
      // bench/bench_logs.py's trainer: numbers on stdout.
      {"0", "1234", "99999", "512"},
      // A typical mix.
      {"Epoch 1/10", "INFO:root:step 100 loss 0.25",
       "2024-01-01 12:00:00,123 - root - INFO - epoch 1",
       "I1124 12:00:00.123456 140 file.py:12] info",
       "100/100 [==============================] - 1s 5ms/step - loss: 0.1", "[INFO] hello",
       R"({"severity":"WARNING","message":"x"})", "step 3: accuracy 0.91"},
  };
  const char* names[] = {"digits", "mixed"};
  for (int round = 0; round < 3; ++round) {
    for (int m = 0; m < 2; ++m) {
      const auto& lines = mixes[m];
      long sum = 0;
      auto start = std::chrono::steady_clock::now();
      for (long i = 0; i < n; ++i) {
        sum += static_cast<long>(
            trainyard::launcher::ClassifyLine(lines[static_cast<size_t>(i) % lines.size()], i & 1));
      }
      double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
                      .count() /
                  static_cast<double>(n);
      std::printf("%-7s %.1f ns/line (checksum %ld)\n", names[m], ns, sum);
    }
  }
  return 0;
}
