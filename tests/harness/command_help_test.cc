// A command's option table read both ways: Arguments::parse takes its flags, switches, spellings
// and defaults from it, and the help printed from it lists the same, so the two cannot drift.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "harness/arguments.h"
#include "harness/command_help.h"

namespace collcheck::cli {
namespace {

constexpr Option kOptions[] = {
    {"ranks", "LIST", "1..64", "rank counts"},
    {"backend", "B", "all@sim", "what to test", Use::Repeatable},
    {"algorithm", "A", "", "the algorithm", Use::Required},
    {"warmup_iters", "N", "5", "untimed iterations", Use::Once, "-w --warmup"},
    {"inplace", "", "", "run in place"},
};
constexpr CommandHelp kHelp{"demo", "a command for the test", kOptions, "'CASE'", "a note", "collcheck demo -w 2"};

Result<Arguments> parse(std::vector<std::string_view> args) { return Arguments::parse(args, kOptions); }

TEST(OptionTable, DefaultsComeFromTheTableAndDoNotCountAsGiven) {
  const Result<Arguments> args = parse({"--inplace", "--backend", "ring@sim"});
  ASSERT_TRUE(args.ok()) << args.error().text();
  EXPECT_EQ(args->get("ranks"), "1..64");
  EXPECT_FALSE(args->has("ranks"));
  EXPECT_EQ(args->get("algorithm"), "");
  EXPECT_EQ(args->get("algorithm", "computed"), "computed");
  EXPECT_EQ(args->get("backend"), "ring@sim");
  EXPECT_TRUE(args->has("inplace"));
  EXPECT_EQ(parse({"--ranks=3"})->get("ranks"), "3");
}

TEST(OptionTable, RefusesWhatTheTableDoesNotHaveAndListsWhatItHas) {
  const Result<Arguments> args = parse({"--rank", "3"});
  ASSERT_FALSE(args.ok());
  EXPECT_EQ(args.error().text(),
            "--rank is not an option: options are --ranks, --backend, --algorithm, --warmup_iters, --inplace");
  EXPECT_EQ(parse({"--ranks"}).error().text(), "--ranks needs a value");
}

TEST(OptionTable, OtherSpellingsAreSplitAtSpaces) {
  EXPECT_EQ(other_spellings(kOptions[3]), (std::vector<std::string_view>{"-w", "--warmup"}));
  EXPECT_TRUE(other_spellings(kOptions[0]).empty());
}

TEST(CommandHelp, ListsEveryOptionWithItsSpellingsDefaultAndUse) {
  std::ostringstream out;
  print_command_help(kHelp, out);
  const std::string help = out.str();
  EXPECT_TRUE(
      help.starts_with("usage: collcheck demo [--ranks LIST] [--backend B ...] --algorithm A [-w N] "
                       "[--inplace] 'CASE'\n\na command for the test\n"))
      << help;
  for (std::string_view line :
       {"\n  --ranks LIST ", "rank counts (default 1..64)\n", "what to test (repeatable) (default all@sim)\n",
        "the algorithm (required)\n", "\n  -w, --warmup_iters, --warmup N", "\n  --inplace ", "\n  -h, --help ",
        "\na note\n", "\nexample:\n  collcheck demo -w 2\n"}) {
    EXPECT_NE(help.find(line), std::string::npos) << "no '" << line << "' in\n" << help;
  }
}

TEST(CommandHelp, LongUsageLinesAreWrappedAndIndented) {
  constexpr Option many[] = {{"first-long-option", "VALUE", "", ""},
                             {"second-long-option", "VALUE", "", ""},
                             {"third-long-option", "VALUE", "", ""},
                             {"fourth-long-option", "VALUE", "", ""}};
  const std::string text = synopsis(CommandHelp{"demo", "", many, "", "", ""}, 6);
  EXPECT_EQ(text,
            "collcheck demo [--first-long-option VALUE] [--second-long-option VALUE] [--third-long-option VALUE]\n"
            "      [--fourth-long-option VALUE]");
}

TEST(CommandHelp, HelpIsAskedWhereAnOptionMayStandNotAsAValue) {
  auto asks = [](std::vector<std::string_view> args) { return asks_for_help(args, kOptions); };
  EXPECT_TRUE(asks({"--help"}));
  EXPECT_TRUE(asks({"--ranks", "3", "-h"}));
  EXPECT_TRUE(asks({"--inplace", "--help"}));
  EXPECT_FALSE(asks({"--ranks", "--help"}));
  EXPECT_FALSE(asks({"-w", "-h"}));
  EXPECT_FALSE(asks({"--ranks=3", "--helpful"}));
}

}  // namespace
}  // namespace collcheck::cli
