// Schedule files in either format behind one face (schedule_file.h): the format told by the
// first word, what a file admits, and failures' steps named as the file names them.
#include "impls/schedule/schedule_file.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>

#include "impls/schedule/msccl_xml.h"

namespace collcheck {
namespace {

constexpr std::uintmax_t kMaxFileBytes = std::uintmax_t{256} << 20;

// Past the description describe() puts after "rank R step K", " (send input[0, 4) to rank 1)",
// whose ranges hold brackets of their own.
std::size_t past_description(const std::string& message, std::size_t at) {
  if (message.compare(at, 2, " (") != 0) return at;
  int depth = 0;
  for (std::size_t i = at + 1; i < message.size(); ++i) {
    if (message[i] == '(' || message[i] == '[') ++depth;  // a range opens with [ and closes with )
    if ((message[i] == ')' || message[i] == ']') && --depth == 0) return i + 1;
  }
  return at;
}

ScheduleFile text_file(std::shared_ptr<const ScheduleText> text) {
  ScheduleFile file;
  file.description = "the schedule " + text->algorithm + " (" + std::string(name(text->collective)) + " on " +
                     std::to_string(text->ranks) + " ranks " + (text->in_place ? "in place" : "out of place") +
                     ", count a multiple of " + std::to_string(text->chunks) + ")";
  file.collective = text->collective;
  file.ranks = text->ranks;
  file.root = text->root;
  file.in_place = text->in_place;
  file.count_multiple = text->chunks;
  file.make = [text](const Case& c) { return text_schedule(*text, c); };
  file.explain = [text](const Case&, const std::string& message) {
    return name_steps_in(message, [&](int participant, int step) -> std::string {
      const auto found = text->lines.find({participant, step});
      return found == text->lines.end() ? "" : text->file + ":" + std::to_string(found->second);
    });
  };
  return file;
}

ScheduleFile msccl_file(std::shared_ptr<const MscclAlgorithm> algorithm) {
  ScheduleFile file;
  file.description = "the MSCCL algorithm " + algorithm->name + " (" + msccl_shapes(*algorithm) + ")";
  file.collective = algorithm->collective;
  file.ranks = algorithm->ngpus;
  file.in_place = algorithm->in_place;
  file.count_multiple = msccl_count_multiple(*algorithm);
  file.make = [algorithm](const Case& c) { return msccl_schedule(*algorithm, c); };
  file.explain = [algorithm](const Case& c, const std::string& message) {
    return msccl_explain(*algorithm, c, message);
  };
  return file;
}

}  // namespace

std::vector<RedOp> schedule_file_ops() { return {RedOp::Sum, RedOp::Prod, RedOp::Min, RedOp::Max}; }

std::string name_steps_in(const std::string& message, const std::function<std::string(int, int)>& name_of) {
  static const std::regex step_pattern(R"(rank (\d+) step (\d+))");
  std::string out;
  std::size_t copied = 0;
  for (auto it = std::sregex_iterator(message.begin(), message.end(), step_pattern); it != std::sregex_iterator();
       ++it) {
    const std::smatch& match = *it;
    const std::size_t end = past_description(message, static_cast<std::size_t>(match.position(0) + match.length(0)));
    out += message.substr(copied, end - copied);
    copied = end;
    const std::string named = name_of(std::stoi(match[1].str()), std::stoi(match[2].str()));
    if (!named.empty()) out += " [" + named + "]";
  }
  return out + message.substr(copied);
}

Result<std::string> read_schedule_file_text(const std::string& path) {
  std::error_code code;
  if (!std::filesystem::is_regular_file(path, code)) return Error{"", path + ": not a readable file"};
  const std::uintmax_t bytes = std::filesystem::file_size(path, code);
  if (code || bytes > kMaxFileBytes) {
    return Error{"",
                 path + ": larger than " + std::to_string(kMaxFileBytes >> 20) + " MiB, more than any schedule file"};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"", path + ": not a readable file"};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Result<ScheduleFile> read_schedule_file(const std::string& path) {
  Result<std::string> text = read_schedule_file_text(path);
  if (!text) return text.error();
  return parse_schedule_file(*text, path);
}

Result<ScheduleFile> parse_schedule_file(const std::string& text, const std::string& path) {
  std::istringstream words(text);
  std::string first;
  words >> first;
  if (first != "collcheck-schedule") {
    Result<MscclAlgorithm> algorithm = parse_msccl_xml(text, path);
    if (!algorithm) return algorithm.error();
    return msccl_file(std::make_shared<const MscclAlgorithm>(std::move(algorithm).value()));
  }
  Result<ScheduleText> schedule_text = parse_schedule_text(text, path);
  if (!schedule_text) return schedule_text.error();
  return text_file(std::make_shared<const ScheduleText>(std::move(schedule_text).value()));
}

Case schedule_file_shape(const ScheduleFile& file, std::size_t count) {
  Case shape;
  shape.collective = file.collective;
  shape.nranks = file.ranks;
  shape.root = file.root;
  shape.count = count;
  shape.in_place = file.in_place;
  return shape;
}

}  // namespace collcheck
