// The fuzz targets without libFuzzer: runs LLVMFuzzerTestOneInput once on every file of the
// corpora named on the command line, so the ordinary presets (gcc, ASan + UBSan in `sanitize`)
// check every seed and every input a fuzzing run kept, as regression tests (`ctest -L corpus`).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

// The regular files a path names: itself, or those in the folder, in name order (one run, one order).
std::vector<std::filesystem::path> inputs_of(const std::filesystem::path& path) {
  std::vector<std::filesystem::path> inputs;
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) {
    inputs.push_back(path);
    return inputs;
  }
  for (const auto& entry : std::filesystem::directory_iterator(path))
    if (entry.is_regular_file()) inputs.push_back(entry.path());
  std::sort(inputs.begin(), inputs.end());
  return inputs;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  std::size_t ran = 0;
  for (int index = 1; index < argc; ++index) {
    for (const auto& input : inputs_of(argv[index])) {
      std::ifstream file(input, std::ios::binary);
      if (!file) {
        std::fprintf(stderr, "%s: cannot read %s\n", argv[0], input.c_str());
        return 2;
      }
      const std::vector<char> bytes{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
      std::fprintf(stderr, "%s\n", input.c_str());
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
      ++ran;
    }
  }
  // A corpus that is empty or missing checks nothing: that is a failure, not a pass.
  if (ran == 0) {
    std::fprintf(stderr, "%s: no inputs in the corpora given\n", argv[0]);
    return 1;
  }
  std::printf("%zu inputs ran, every property held\n", ran);
  return 0;
}
