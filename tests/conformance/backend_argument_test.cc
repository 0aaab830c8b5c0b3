// The conformance programs' `--backend SPEC`: both spellings are taken out and the rest kept in
// order for GoogleTest, the last one given stands, the built-in spec stands without one, and a
// missing value or no spec at all is an error that names --backend.
#include "tests/conformance/backend_argument.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace collcheck::conformance {
namespace {

// A command line as main() gets it: mutable strings, argv[argc] null.
struct CommandLine {
  std::vector<std::string> words;
  std::vector<char*> argv;
  int argc;

  explicit CommandLine(std::vector<std::string> given) : words(std::move(given)), argc(static_cast<int>(words.size())) {
    for (std::string& word : words) argv.push_back(word.data());
    argv.push_back(nullptr);
  }
  std::vector<std::string> left() const {
    std::vector<std::string> out;
    for (int i = 0; i < argc; ++i) out.emplace_back(argv[static_cast<std::size_t>(i)]);
    return out;
  }
};

TEST(BackendArgument, BothSpellingsAreTakenOutTheRestKeptInOrderAndTheLastStands) {
  CommandLine line(
      {"suite", "--gtest_filter=*Oracle*", "--backend", "ring@sim", "--gtest_brief=1", "--backend=tree@sim:chunk=3"});
  const Result<std::string> spec = take_backend_argument(line.argc, line.argv.data(), "all@sim");
  ASSERT_TRUE(spec.ok()) << spec.error().text();
  EXPECT_EQ(spec.value(), "tree@sim:chunk=3");
  EXPECT_EQ(line.left(), (std::vector<std::string>{"suite", "--gtest_filter=*Oracle*", "--gtest_brief=1"}));
  EXPECT_EQ(line.argv[static_cast<std::size_t>(line.argc)], nullptr);
}

TEST(BackendArgument, WithoutOneTheBuiltInSpecStands) {
  CommandLine line({"suite", "--gtest_list_tests"});
  const Result<std::string> spec = take_backend_argument(line.argc, line.argv.data(), "all@sim:chunk=3");
  ASSERT_TRUE(spec.ok()) << spec.error().text();
  EXPECT_EQ(spec.value(), "all@sim:chunk=3");
  EXPECT_EQ(line.left(), (std::vector<std::string>{"suite", "--gtest_list_tests"}));
}

TEST(BackendArgument, AMissingValueOrNoSpecAtAllIsAnErrorNamingBackend) {
  for (const std::vector<std::string>& words :
       {std::vector<std::string>{"suite", "--backend"}, std::vector<std::string>{"suite", "--backend="}}) {
    CommandLine line(words);
    const Result<std::string> spec = take_backend_argument(line.argc, line.argv.data(), "all@sim");
    ASSERT_FALSE(spec.ok()) << words.back();
    EXPECT_EQ(spec.error().field, "--backend");
    EXPECT_NE(spec.error().message.find("expected a backend spec"), std::string::npos) << spec.error().message;
  }
  CommandLine none({"suite"});
  const Result<std::string> spec = take_backend_argument(none.argc, none.argv.data(), "");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error().field, "--backend");
  EXPECT_NE(spec.error().message.find("required"), std::string::npos) << spec.error().message;
}

}  // namespace
}  // namespace collcheck::conformance
