// Split GGUF models (llama-gguf-split): NAME-00001-of-0000N.gguf holds the metadata and `split.no` 0, `split.count` N,
// `split.tensors.count` T; parts 2..N hold only the split.* keys and their share of the T tensors.
#include <filesystem>
#include <regex>

#include "model/loaders/gguf.h"

namespace cai {

namespace {

// The split.* key `key` of `md` as a non-negative integer, or -1 when absent or not one.
int64_t split_key(const nlohmann::json& md, const char* key) {
  auto it = md.find(key);
  if (it == md.end() || !it->is_number_integer() || it->get<int64_t>() < 0) return -1;
  return it->get<int64_t>();
}

}  // namespace

Status GgufFile::attach_split_parts() {
  const int64_t count = split_key(metadata_, "split.count");
  if (!metadata_.contains("split.count") || count == 1) return {};
  const int64_t no = split_key(metadata_, "split.no");
  const int64_t n_total = split_key(metadata_, "split.tensors.count");
  if (count < 1 || no < 0 || n_total < 0)
    return corrupt("{}: split.count, split.no and split.tensors.count must all be non-negative integers", source_name_);
  // The part names follow the first part's: <prefix>-<i, zero-padded as here>-of-<count as here>.gguf.
  const std::filesystem::path path(source_name_);
  static const std::regex name_re(R"((.*)-(\d+)-of-(\d+)\.gguf)");
  std::smatch m;
  const std::string fname = path.filename().string();
  if (!std::regex_match(fname, m, name_re) || m[3].str() != fmt::format("{:0{}}", count, m[3].length()))
    return invalid_argument("{}: part of a model split in {} files, but its name is not <name>-{:05}-of-{:05}.gguf",
                            source_name_, count, no + 1, count);
  auto part_path = [&](int64_t i) {
    return (path.parent_path() / fmt::format("{}-{:0{}}-of-{}.gguf", m[1].str(), i + 1, m[2].length(), m[3].str()))
        .string();
  };
  if (no != 0)
    return invalid_argument("{} is part {} of {} of a split model: pass the first part, {}", source_name_, no + 1,
                            count, part_path(0));
  std::string per_part = std::to_string(tensors_.size());
  for (int64_t i = 1; i < count; ++i) {
    const std::string p = part_path(i);
    std::error_code ec;
    if (!std::filesystem::exists(p, ec))
      return not_found("{}: part {} of {} of the split model {} is missing", p, i + 1, count, source_name_);
    CAI_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> part, open_one(p));
    const int64_t part_no = split_key(part->metadata_, "split.no"),
                  part_count = split_key(part->metadata_, "split.count");
    if (part_no != i || part_count != count)
      return corrupt("{}: split.no {} of split.count {} where part {} of {} was expected (a part of another model?)", p,
                     part_no, part_count, i + 1, count);
    for (const GgufTensorInfo& t : part->tensors_) {
      if (!index_.emplace(t.name, tensors_.size()).second)
        return corrupt("{}: tensor '{}' is already in an earlier part of {}", p, t.name, source_name_);
      tensors_.push_back(t);  // its bytes stay in the part's mapping, kept open in parts_
    }
    per_part += " + " + std::to_string(part->tensors_.size());
    parts_.push_back(std::move(part));
  }
  if (static_cast<int64_t>(tensors_.size()) != n_total)
    return corrupt("{}: split.tensors.count is {} but the {} parts hold {} = {} tensors", source_name_, n_total, count,
                   per_part, tensors_.size());
  return {};
}

}  // namespace cai
