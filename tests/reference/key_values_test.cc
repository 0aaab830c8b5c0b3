// Checks the `key=value,...` grammar: splitting (order, empty and trailing items, missing '=',
// repeated keys) and the readers' ranges and messages on good, huge and malformed values.
#include "reference/key_values.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace collcheck {
namespace {

std::vector<std::string> keys_of(std::string_view text) {
  const std::vector<KeyValue> items = split_key_values(text).value();
  std::vector<std::string> keys;
  for (const KeyValue& item : items) keys.emplace_back(item.key);
  return keys;
}

std::string error_of(std::string_view text) {
  Result<std::vector<KeyValue>> items = split_key_values(text);
  return items ? "(accepted)" : items.error().text();
}

TEST(KeyValues, SplitsInOrderAtTheFirstEquals) {
  const std::vector<KeyValue> items = split_key_values("b=1,a=x=y,c=").value();
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].key, "b");
  EXPECT_EQ(items[0].value, "1");
  EXPECT_EQ(items[1].key, "a");
  EXPECT_EQ(items[1].value, "x=y");
  EXPECT_EQ(items[1].item, "a=x=y");
  EXPECT_EQ(items[2].key, "c");
  EXPECT_TRUE(items[2].has_value);
  EXPECT_EQ(items[2].value, "");
  EXPECT_EQ(keys_of("p=1:q=2"), std::vector<std::string>{"p"});  // ':' is not the separator here
  EXPECT_EQ(split_key_values("p=1:q=2", ':').value().size(), 2u);
}

TEST(KeyValues, AWordWithoutEqualsIsKeptForTheCallerToJudge) {
  const std::vector<KeyValue> items = split_key_values("all-algorithms,x=1").value();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_FALSE(items[0].has_value);
  EXPECT_EQ(items[0].key, "all-algorithms");
  EXPECT_EQ(items[0].value, "");
  EXPECT_TRUE(items[1].has_value);
}

TEST(KeyValues, EmptyTextAndOneTrailingSeparatorAreAllowed) {
  EXPECT_TRUE(split_key_values("").value().empty());
  EXPECT_EQ(keys_of("chunk=8,"), std::vector<std::string>{"chunk"});
}

TEST(KeyValues, OtherEmptyItemsAreErrors) {
  for (std::string_view text : {",", ",a=1", "a=1,,b=2", "a=1,,"}) {
    EXPECT_NE(error_of(text).find("has an empty item: items are KEY=VALUE separated by ','"), std::string::npos)
        << text << ": " << error_of(text);
  }
}

TEST(KeyValues, RepeatedKeyFindsTheSecondMention) {
  const std::vector<KeyValue> items = split_key_values("a=1,b=2,a=3").value();
  ASSERT_NE(repeated_key(items), nullptr);
  EXPECT_EQ(repeated_key(items)->item, "a=3");
  EXPECT_EQ(repeated_key(split_key_values("a=1,b=2").value()), nullptr);
}

TEST(KeyValues, SplitListKeepsEveryPiece) {
  EXPECT_EQ(split_list("a,,b"), (std::vector<std::string_view>{"a", "", "b"}));
  EXPECT_EQ(split_list(""), (std::vector<std::string_view>{""}));
  EXPECT_EQ(split_list("a/b/", '/'), (std::vector<std::string_view>{"a", "b", ""}));
}

TEST(KeyValues, ReadUnsignedChecksDigitsAndRange) {
  EXPECT_EQ(read_unsigned(split_key_value("channels=64"), 1, 64).value(), 64u);
  EXPECT_EQ(read_unsigned(split_key_value("channels=99"), 1, 64).error().message, "channels=99: must be 1..64");
  EXPECT_EQ(read_unsigned(split_key_value("channels=99"), 1, 64).error().field, "channels");
  EXPECT_EQ(read_unsigned(split_key_value("timeout=0"), 1, 3600000, "milliseconds").error().message,
            "timeout=0: must be 1..3600000 (milliseconds)");
  for (std::string_view bad : {"n=x", "n=", "n", "n=-1", "n=+1", "n= 1", "n=1k", "n=1.0"}) {
    EXPECT_EQ(read_unsigned(split_key_value(bad), 0, 10).error().message.substr(0, bad.size()), bad) << bad;
    EXPECT_NE(read_unsigned(split_key_value(bad), 0, 10).error().message.find("must be an integer, 0..10"),
              std::string::npos)
        << bad;
  }
  const KeyValue huge = split_key_value("chunk=99999999999999999999999");
  EXPECT_EQ(read_unsigned(huge, 0, UINT64_MAX).error().message,
            "chunk=99999999999999999999999: must be 0..18446744073709551615");
  EXPECT_EQ(read_unsigned(split_key_value("chunk=18446744073709551615"), 0, UINT64_MAX).value(), UINT64_MAX);
}

TEST(KeyValues, ReadRealChecksRange) {
  EXPECT_DOUBLE_EQ(read_real(split_key_value("timeout=0.5"), 0.001, 86400, "seconds").value(), 0.5);
  for (std::string_view bad : {"timeout=0", "timeout=1e9", "timeout=x", "timeout=", "timeout=nan", "timeout=1s",
                               "timeout=inf", "timeout=infinity", "timeout=+5", "timeout=0x10", "timeout=-0"}) {
    EXPECT_EQ(read_real(split_key_value(bad), 0.001, 86400, "seconds, 0.001..86400").error().message,
              std::string(bad) + ": must be seconds, 0.001..86400");
  }
}

TEST(KeyValues, BadValuesAreEchoedEscapedAndCut) {
  EXPECT_EQ(read_unsigned(split_key_value("n=\x01\n"), 0, 10).error().message, "n=\\x01\\n: must be an integer, 0..10");
  const std::string huge = "n=" + std::string(100000, '7');
  const std::string message = read_unsigned(split_key_value(huge), 0, 10).error().message;
  EXPECT_LT(message.size(), 120u) << message;
  EXPECT_NE(message.find("... (100002 bytes)"), std::string::npos) << message;
  EXPECT_EQ(read_choice(split_key_value("transport=\x7f"), std::span<const std::string_view>{}).error().message,
            "transport=\\x7f: must be ");
}

TEST(KeyValues, ReadOnOffAndChoice) {
  EXPECT_TRUE(read_on_off(split_key_value("reliable=on")).value());
  EXPECT_FALSE(read_on_off(split_key_value("reliable=off")).value());
  EXPECT_EQ(read_on_off(split_key_value("reliable=yes")).error().message, "reliable=yes: must be on or off");
  EXPECT_FALSE(read_on_off(split_key_value("reliable")).ok());
  constexpr std::string_view kLinks[] = {"auto", "shm", "tcp"};
  EXPECT_EQ(read_choice(split_key_value("transport=tcp"), kLinks).value(), 2u);
  EXPECT_EQ(read_choice(split_key_value("transport=udp"), kLinks).error().message,
            "transport=udp: must be auto, shm or tcp");
  EXPECT_EQ(or_list(std::span<const std::string_view>(kLinks, 1)), "auto");
}

}  // namespace
}  // namespace collcheck
