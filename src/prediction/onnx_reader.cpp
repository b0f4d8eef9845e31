// Reading an ONNX model's structure without its weights. The protobuf wire format is walked by hand for
// the two levels that hold initializers (ModelProto.graph, GraphProto.initializer); everything else is
// handed to protobuf unchanged. A MobileNetV2 file is ~14 MB of weights and ~30 KB of structure, so this
// is what keeps prediction within milliseconds.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>

#include <cstring>

#include "onnx_io/tensor.h"
#include "prediction/internal.h"

namespace nnmeter::prediction {

namespace {

// Field numbers of onnx.proto (stable since ONNX 1.0).
constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kGraphInitializer = 5;
constexpr uint32_t kTensorFloatData = 4, kTensorInt32Data = 5, kTensorStringData = 6, kTensorInt64Data = 7,
                   kTensorRawData = 9, kTensorDoubleData = 10, kTensorUint64Data = 11;

struct Malformed {};

class Reader {
 public:
  Reader(const uint8_t* begin, const uint8_t* end) : p_(begin), end_(end) {}
  bool done() const { return p_ >= end_; }

  // One field: its number, the bytes of the whole field (tag included) and, for length-delimited
  // fields, the payload.
  struct Field {
    uint32_t number = 0;
    uint32_t wire_type = 0;
    const uint8_t* begin = nullptr;
    const uint8_t* end = nullptr;
    const uint8_t* payload = nullptr;
    size_t payload_size = 0;
  };

  Field next() {
    Field f;
    f.begin = p_;
    const uint64_t tag = varint();
    f.number = static_cast<uint32_t>(tag >> 3);
    f.wire_type = static_cast<uint32_t>(tag & 7);
    if (f.number == 0) throw Malformed{};
    switch (f.wire_type) {
      case 0: varint(); break;
      case 1: advance(8); break;
      case 5: advance(4); break;
      case 2: {
        const uint64_t n = varint();
        if (n > static_cast<uint64_t>(end_ - p_)) throw Malformed{};
        f.payload = p_;
        f.payload_size = static_cast<size_t>(n);
        p_ += n;
        break;
      }
      default: throw Malformed{};  // groups are not used by onnx.proto
    }
    f.end = p_;
    return f;
  }

 private:
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) throw Malformed{};
      const uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    throw Malformed{};
  }
  void advance(size_t n) {
    if (n > static_cast<size_t>(end_ - p_)) throw Malformed{};
    p_ += n;
  }
  const uint8_t* p_;
  const uint8_t* end_;
};

bool is_data_field(uint32_t number) {
  switch (number) {
    case kTensorFloatData:
    case kTensorInt32Data:
    case kTensorStringData:
    case kTensorInt64Data:
    case kTensorRawData:
    case kTensorDoubleData:
    case kTensorUint64Data: return true;
    default: return false;
  }
}

// Parsing a message's bytes is merging its fields one run at a time (protobuf's wire-format contract), so
// the fields kept around skipped ones are parsed where they lie in the mapped file, never copied.
class KeptFields {
 public:
  explicit KeptFields(google::protobuf::MessageLite& msg) : msg_(msg) {}
  KeptFields(const KeptFields&) = delete;
  KeptFields& operator=(const KeptFields&) = delete;

  void keep(const Reader::Field& f) {
    if (f.begin != end_) {
      flush();
      begin_ = f.begin;
    }
    end_ = f.end;
  }
  // Parses what is pending; call it once the message's fields are all seen.
  void flush() {
    if (begin_ == end_) return;
    google::protobuf::io::CodedInputStream in(begin_, static_cast<int>(end_ - begin_));
    begin_ = end_ = nullptr;
    if (!msg_.MergeFromCodedStream(&in) || !in.ConsumedEntireMessage()) throw Malformed{};
  }

 private:
  google::protobuf::MessageLite& msg_;
  const uint8_t* begin_ = nullptr;
  const uint8_t* end_ = nullptr;
};

void skim_tensor(const uint8_t* begin, size_t size, onnx::TensorProto& t) {
  Reader r(begin, begin + size);
  KeptFields kept(t);
  bool elided = false;
  while (!r.done()) {
    const auto f = r.next();
    if (f.wire_type == 2 && is_data_field(f.number) && f.payload_size > kElideBytes) elided = true;
    else kept.keep(f);
  }
  kept.flush();
  if (elided) t.set_data_location(onnx::TensorProto::EXTERNAL);
}

void skim_graph(const uint8_t* begin, size_t size, onnx::GraphProto& graph) {
  Reader r(begin, begin + size);
  KeptFields rest(graph);
  std::vector<Reader::Field> initializers;
  while (!r.done()) {
    const auto f = r.next();
    if (f.number == kGraphInitializer && f.wire_type == 2) initializers.push_back(f);
    else rest.keep(f);
  }
  rest.flush();
  for (const auto& f : initializers) skim_tensor(f.payload, f.payload_size, *graph.add_initializer());
}

void skim_model(const uint8_t* begin, size_t size, onnx::ModelProto& model) {
  Reader r(begin, begin + size);
  KeptFields rest(model);
  const uint8_t* graph = nullptr;
  size_t graph_size = 0;
  while (!r.done()) {
    const auto f = r.next();
    if (f.number == kModelGraph && f.wire_type == 2) {
      graph = f.payload;
      graph_size = f.payload_size;
    } else {
      rest.keep(f);
    }
  }
  if (graph == nullptr) throw Malformed{};
  rest.flush();
  skim_graph(graph, graph_size, *model.mutable_graph());
}

class MappedFile {
 public:
  explicit MappedFile(const fs::path& path) {
    // O_NONBLOCK: opening a FIFO would otherwise wait for a writer; fstat then refuses it.
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) throw Error("cannot read ONNX model " + path.string() + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw Error("cannot read ONNX model " + path.string() + ": not a regular file");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > kMaxModelFileBytes) {
      ::close(fd_);
      throw Error(path.string() + " is " + std::to_string(size_) + " bytes, more than the " +
                  std::to_string(kMaxModelFileBytes) + " an ONNX model can be (keep large weights as external data)");
    }
    if (size_ == 0) return;
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (p == MAP_FAILED) {
      ::close(fd_);
      throw Error("cannot read ONNX model " + path.string() + ": " + std::strerror(errno));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    if (fd_ >= 0) ::close(fd_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  int fd_ = -1;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

size_t data_bytes(const onnx::TensorProto& t) {
  return t.raw_data().size() + t.float_data_size() * 4 + t.int32_data_size() * 4 + t.int64_data_size() * 8 +
         t.double_data_size() * 8 + t.uint64_data_size() * 8 + static_cast<size_t>(t.string_data_size()) * 16;
}

}  // namespace

void read_onnx_structure(const fs::path& file, onnx::ModelProto& model) {
  MappedFile mapped(file);
  read_onnx_structure(mapped.data(), mapped.size(), file.string(), model);
}

void read_onnx_structure(const uint8_t* data, size_t size, const std::string& origin, onnx::ModelProto& model) {
  if (size > kMaxModelFileBytes)
    throw Error(origin + " is " + std::to_string(size) + " bytes, more than the " + std::to_string(kMaxModelFileBytes) +
                " an ONNX model can be (keep large weights as external data)");
  try {
    if (size == 0) throw Malformed{};
    skim_model(data, size, model);
  } catch (const Malformed&) {
    throw Error(origin + " is not an ONNX model (it does not parse as an ONNX ModelProto with a graph)");
  }
}

void structure_copy(const onnx::ModelProto& model, onnx::ModelProto& copy) {
  copy.set_ir_version(model.ir_version());
  *copy.mutable_opset_import() = model.opset_import();
  *copy.mutable_functions() = model.functions();
  const onnx::GraphProto& g = model.graph();
  onnx::GraphProto& out = *copy.mutable_graph();
  out.set_name(g.name());
  *out.mutable_node() = g.node();
  *out.mutable_input() = g.input();
  *out.mutable_output() = g.output();
  *out.mutable_value_info() = g.value_info();
  for (const auto& t : g.initializer()) {
    auto* c = out.add_initializer();
    if (data_bytes(t) <= kElideBytes) {
      *c = t;
      continue;
    }
    c->set_name(t.name());
    c->set_data_type(t.data_type());
    *c->mutable_dims() = t.dims();
    c->set_data_location(onnx::TensorProto::EXTERNAL);
  }
}

std::optional<std::vector<double>> tensor_values(const onnx::TensorProto& t) {
  try {
    return onnx_io::from_tensor_proto(t, t.name()).data;
  } catch (const Error&) {
    return std::nullopt;  // elided or external data, another type, or values that do not match the dims
  }
}

}  // namespace nnmeter::prediction
