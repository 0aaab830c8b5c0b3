// The verbs interface over libibverbs, loaded at run time (see ibverbs.h).
//
// It works as follows. load_ibverbs opens libibverbs.so.1 and resolves the exported functions it
// needs into a table (Library); posting and polling need none, as libibverbs' own header makes
// them calls through the device context's operations. Opening a device picks the named one (or
// the first with an active port), the port (or its first active one) and, on Ethernet (RoCE), the
// GID at the given index, and allocates a protection domain. Queue pairs are reliable-connected,
// moved to INIT at creation with remote write allowed, and to RTR and RTS by connect() with the
// peer's number, LID or GID, the port's active MTU, 7 transport retries and 7 receiver-not-ready
// retries (forever), as NCCL's net_ib sets them by default.
#include "impls/ib/ibverbs.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace collcheck::ib {
namespace {

constexpr const char* kLibrary = "libibverbs.so.1";

// The exported functions of libibverbs this file calls (by their own names' types).
struct Library {
  void* handle = nullptr;
  decltype(&::ibv_get_device_list) get_device_list = nullptr;
  decltype(&::ibv_free_device_list) free_device_list = nullptr;
  decltype(&::ibv_get_device_name) get_device_name = nullptr;
  decltype(&::ibv_open_device) open_device = nullptr;
  decltype(&::ibv_close_device) close_device = nullptr;
  decltype(&::ibv_query_port) query_port = nullptr;
  decltype(&::ibv_query_gid) query_gid = nullptr;
  decltype(&::ibv_alloc_pd) alloc_pd = nullptr;
  decltype(&::ibv_dealloc_pd) dealloc_pd = nullptr;
  decltype(&::ibv_reg_mr) reg_mr = nullptr;
  decltype(&::ibv_dereg_mr) dereg_mr = nullptr;
  decltype(&::ibv_reg_dmabuf_mr) reg_dmabuf_mr = nullptr;  // rdma-core 34 and later; null before
  decltype(&::ibv_create_cq) create_cq = nullptr;
  decltype(&::ibv_destroy_cq) destroy_cq = nullptr;
  decltype(&::ibv_create_qp) create_qp = nullptr;
  decltype(&::ibv_modify_qp) modify_qp = nullptr;
  decltype(&::ibv_query_qp) query_qp = nullptr;
  decltype(&::ibv_destroy_qp) destroy_qp = nullptr;

  ~Library() {
    if (handle != nullptr) ::dlclose(handle);
  }
};

template <typename Function>
bool resolve(void* handle, const char* name, Function& into) {
  into = reinterpret_cast<Function>(::dlsym(handle, name));
  return into != nullptr;
}

std::string errno_text(const char* call) { return std::string(call) + ": " + std::strerror(errno); }

CompletionStatus status_of(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS: return CompletionStatus::Success;
    case IBV_WC_LOC_PROT_ERR: return CompletionStatus::LocalProtection;
    case IBV_WC_REM_ACCESS_ERR: return CompletionStatus::RemoteAccess;
    case IBV_WC_RNR_RETRY_EXC_ERR: return CompletionStatus::ReceiverNotReady;
    case IBV_WC_RETRY_EXC_ERR: return CompletionStatus::RetryExceeded;
    case IBV_WC_WR_FLUSH_ERR: return CompletionStatus::Flushed;
    default: return CompletionStatus::Other;
  }
}

class RealQueue final : public CompletionQueue {
 public:
  RealQueue(std::shared_ptr<Library> library, ibv_cq* queue) : library_(std::move(library)), queue_(queue) {}
  ~RealQueue() override { library_->destroy_cq(queue_); }
  RealQueue(const RealQueue&) = delete;
  RealQueue& operator=(const RealQueue&) = delete;

  std::size_t poll(std::span<Completion> out) override {
    ibv_wc completions[16];
    const int most = static_cast<int>(std::min<std::size_t>(out.size(), 16));
    const int got = ibv_poll_cq(queue_, most, completions);
    for (int i = 0; i < got; ++i) {
      const ibv_wc& wc = completions[i];
      Completion& c = out[static_cast<std::size_t>(i)];
      c.work_id = wc.wr_id;
      c.status = status_of(wc.status);
      const bool receive = wc.status == IBV_WC_SUCCESS ? (wc.opcode & IBV_WC_RECV) != 0 : false;
      c.kind = receive ? CompletionKind::Receive : CompletionKind::Write;
      c.immediate = (wc.wc_flags & IBV_WC_WITH_IMM) != 0 ? ntohl(wc.imm_data) : 0;
      c.bytes = wc.byte_len;
      c.queue_pair = wc.qp_num;
    }
    return got > 0 ? static_cast<std::size_t>(got) : 0;
  }
  ibv_cq* get() const { return queue_; }

 private:
  std::shared_ptr<Library> library_;
  ibv_cq* queue_;
};

struct PortInfo {
  std::uint8_t port = 1;
  ibv_mtu mtu = IBV_MTU_1024;
  std::uint16_t lid = 0;
  bool ethernet = false;  // RoCE: addressed by GID
  ibv_gid gid{};
  int gid_index = 0;
};

class RealPair final : public QueuePair {
 public:
  RealPair(std::shared_ptr<Library> library, ibv_qp* pair, PortInfo port)
      : library_(std::move(library)), pair_(pair), port_(port) {}
  ~RealPair() override { library_->destroy_qp(pair_); }
  RealPair(const RealPair&) = delete;
  RealPair& operator=(const RealPair&) = delete;

  QueuePairAddress address() const override {
    QueuePairAddress address;
    address.number = pair_->qp_num;
    address.lid = port_.lid;
    std::memcpy(address.gid.data(), port_.gid.raw, address.gid.size());
    address.uses_gid = port_.ethernet ? 1 : 0;
    address.port = port_.port;
    address.gid_index = static_cast<std::uint8_t>(port_.gid_index);
    return address;
  }

  Status connect(const QueuePairAddress& peer) override {
    ibv_qp_attr ready{};
    ready.qp_state = IBV_QPS_RTR;
    ready.path_mtu = port_.mtu;
    ready.dest_qp_num = peer.number;
    ready.rq_psn = 0;
    ready.max_dest_rd_atomic = 1;
    ready.min_rnr_timer = 12;
    ready.ah_attr.dlid = peer.lid;
    ready.ah_attr.port_num = port_.port;
    if (peer.uses_gid != 0) {
      ready.ah_attr.is_global = 1;
      std::memcpy(ready.ah_attr.grh.dgid.raw, peer.gid.data(), peer.gid.size());
      ready.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(port_.gid_index);
      ready.ah_attr.grh.hop_limit = 255;
    }
    if (library_->modify_qp(pair_, &ready,
                            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0)
      return Error{"ib", errno_text("ibv_modify_qp to RTR")};
    ibv_qp_attr sending{};
    sending.qp_state = IBV_QPS_RTS;
    sending.timeout = 14;
    sending.retry_cnt = 7;
    sending.rnr_retry = 7;
    sending.sq_psn = 0;
    sending.max_rd_atomic = 1;
    if (library_->modify_qp(pair_, &sending,
                            IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                IBV_QP_MAX_QP_RD_ATOMIC) != 0)
      return Error{"ib", errno_text("ibv_modify_qp to RTS")};
    return Ok{};
  }

  Status post_write(const WriteRequest& request) override {
    ibv_sge piece{reinterpret_cast<std::uint64_t>(request.local), static_cast<std::uint32_t>(request.bytes),
                  request.local_key};
    ibv_send_wr work{};
    work.wr_id = request.work_id;
    work.sg_list = request.bytes > 0 ? &piece : nullptr;
    work.num_sge = request.bytes > 0 ? 1 : 0;
    work.opcode = request.with_immediate ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
    work.send_flags = request.signaled ? IBV_SEND_SIGNALED : 0;
    work.imm_data = htonl(request.immediate);
    work.wr.rdma.remote_addr = request.remote_address;
    work.wr.rdma.rkey = request.remote_key;
    ibv_send_wr* bad = nullptr;
    if (const int error = ibv_post_send(pair_, &work, &bad); error != 0)
      return Error{"ib", std::string("ibv_post_send: ") + std::strerror(error)};
    return Ok{};
  }

  Status post_receive(std::uint64_t work_id) override {
    ibv_recv_wr work{};
    work.wr_id = work_id;
    ibv_recv_wr* bad = nullptr;
    if (const int error = ibv_post_recv(pair_, &work, &bad); error != 0)
      return Error{"ib", std::string("ibv_post_recv: ") + std::strerror(error)};
    return Ok{};
  }

  bool in_error() const override {
    ibv_qp_attr attributes{};
    ibv_qp_init_attr initial{};
    return library_->query_qp(pair_, &attributes, IBV_QP_STATE, &initial) != 0 || attributes.qp_state == IBV_QPS_ERR;
  }

 private:
  std::shared_ptr<Library> library_;
  ibv_qp* pair_;
  PortInfo port_;
};

class RealDevice final : public Device {
 public:
  RealDevice(std::shared_ptr<Library> library, ibv_context* context, ibv_pd* domain, std::string name, PortInfo port)
      : library_(std::move(library)), context_(context), domain_(domain), name_(std::move(name)), port_(port) {}
  ~RealDevice() override {
    library_->dealloc_pd(domain_);
    library_->close_device(context_);
  }
  RealDevice(const RealDevice&) = delete;
  RealDevice& operator=(const RealDevice&) = delete;

  std::string name() const override {
    return name_ + " port " + std::to_string(port_.port) +
           (port_.ethernet ? " (RoCE, gid " + std::to_string(port_.gid_index) + ")" : " (InfiniBand)");
  }

  Result<MemoryRegion> register_memory(std::byte* address, std::size_t bytes, unsigned access) override {
    int flags = IBV_ACCESS_LOCAL_WRITE;
    if ((access & RemoteWrite) != 0) flags |= IBV_ACCESS_REMOTE_WRITE;
    ibv_mr* region = library_->reg_mr(domain_, address, bytes, flags);
    if (region == nullptr) return Error{"ib", errno_text("ibv_reg_mr")};
    return MemoryRegion{address, bytes, region->lkey, region->rkey, reinterpret_cast<std::uint64_t>(region)};
  }

  Result<MemoryRegion> register_dmabuf(int fd, std::uint64_t offset, std::size_t bytes, std::byte* address,
                                       unsigned access) override {
    if (library_->reg_dmabuf_mr == nullptr)
      return Error{"ib", "this libibverbs has no ibv_reg_dmabuf_mr (rdma-core 34+)"};
    int flags = IBV_ACCESS_LOCAL_WRITE;
    if ((access & RemoteWrite) != 0) flags |= IBV_ACCESS_REMOTE_WRITE;
    ibv_mr* region =
        library_->reg_dmabuf_mr(domain_, offset, bytes, reinterpret_cast<std::uintptr_t>(address), fd, flags);
    if (region == nullptr) return Error{"ib", errno_text("ibv_reg_dmabuf_mr")};
    return MemoryRegion{address, bytes, region->lkey, region->rkey, reinterpret_cast<std::uint64_t>(region)};
  }

  void deregister(const MemoryRegion& region) override {
    library_->dereg_mr(reinterpret_cast<ibv_mr*>(region.handle));  // NOLINT(performance-no-int-to-ptr)
  }

  Result<std::unique_ptr<CompletionQueue>> create_completion_queue(int depth) override {
    ibv_cq* queue = library_->create_cq(context_, depth, nullptr, nullptr, 0);
    if (queue == nullptr) return Error{"ib", errno_text("ibv_create_cq")};
    return std::unique_ptr<CompletionQueue>(std::make_unique<RealQueue>(library_, queue));
  }

  Result<std::unique_ptr<QueuePair>> create_queue_pair(CompletionQueue& sends, CompletionQueue& receives,
                                                       int depth) override {
    auto* send_queue = dynamic_cast<RealQueue*>(&sends);
    auto* receive_queue = dynamic_cast<RealQueue*>(&receives);
    if (send_queue == nullptr || receive_queue == nullptr) return Error{"ib", "completion queues of another device"};
    ibv_qp_init_attr wanted{};
    wanted.send_cq = send_queue->get();
    wanted.recv_cq = receive_queue->get();
    wanted.qp_type = IBV_QPT_RC;
    wanted.cap.max_send_wr = static_cast<std::uint32_t>(depth);
    wanted.cap.max_recv_wr = static_cast<std::uint32_t>(depth);
    wanted.cap.max_send_sge = 1;
    wanted.cap.max_recv_sge = 1;
    ibv_qp* pair = library_->create_qp(domain_, &wanted);
    if (pair == nullptr) return Error{"ib", errno_text("ibv_create_qp")};
    ibv_qp_attr initial{};
    initial.qp_state = IBV_QPS_INIT;
    initial.pkey_index = 0;
    initial.port_num = port_.port;
    initial.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    if (library_->modify_qp(pair, &initial, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) !=
        0) {
      const std::string why = errno_text("ibv_modify_qp to INIT");
      library_->destroy_qp(pair);
      return Error{"ib", why};
    }
    return std::unique_ptr<QueuePair>(std::make_unique<RealPair>(library_, pair, port_));
  }

 private:
  std::shared_ptr<Library> library_;
  ibv_context* context_;
  ibv_pd* domain_;
  std::string name_;
  PortInfo port_;
};

class RealVerbs final : public Verbs {
 public:
  explicit RealVerbs(std::shared_ptr<Library> library) : library_(std::move(library)) {}
  std::string name() const override { return "libibverbs"; }

  Result<std::vector<std::string>> devices() override {
    int count = 0;
    ibv_device** list = library_->get_device_list(&count);
    // Null without kernel support for RDMA (ENOSYS: no uverbs devices at all).
    if (list == nullptr) return Error{"ib", "no RDMA device here (" + errno_text("ibv_get_device_list") + ")"};
    std::vector<std::string> names;
    names.reserve(static_cast<std::size_t>(std::max(count, 0)));
    for (int i = 0; i < count; ++i) names.emplace_back(library_->get_device_name(list[i]));
    library_->free_device_list(list);
    if (names.empty()) return Error{"ib", "no RDMA device here (ibv_get_device_list found none)"};
    return names;
  }

  Result<std::unique_ptr<Device>> open(const std::string& device, int port, int gid_index) override {
    Result<std::vector<std::string>> names = devices();
    if (!names) return names.error();
    std::string why = "no device named " + device;
    for (const std::string& candidate : *names) {
      if (!device.empty() && candidate != device) continue;
      Result<std::unique_ptr<Device>> opened = open_one(candidate, port, gid_index);
      if (opened || !device.empty()) return opened;
      why = opened.error().text();
    }
    return Error{"dev", "no device with an active port: " + why};
  }

 private:
  // The device named `name`, its port (0: the first active), its GID on Ethernet.
  Result<std::unique_ptr<Device>> open_one(const std::string& name, int wanted_port, int gid_index) {
    int count = 0;
    ibv_device** list = library_->get_device_list(&count);
    ibv_context* context = nullptr;
    for (int i = 0; list != nullptr && i < count && context == nullptr; ++i) {
      if (name == library_->get_device_name(list[i])) context = library_->open_device(list[i]);
    }
    if (list != nullptr) library_->free_device_list(list);
    if (context == nullptr) return Error{"dev", errno_text(("ibv_open_device " + name).c_str())};
    PortInfo port;
    bool found = false;
    for (int p = wanted_port > 0 ? wanted_port : 1; p <= (wanted_port > 0 ? wanted_port : 8) && !found; ++p) {
      ibv_port_attr attributes{};
      if (library_->query_port(context, static_cast<std::uint8_t>(p),
                               reinterpret_cast<_compat_ibv_port_attr*>(&attributes)) != 0)
        continue;
      if (attributes.state != IBV_PORT_ACTIVE) continue;
      port.port = static_cast<std::uint8_t>(p);
      port.mtu = attributes.active_mtu;
      port.lid = attributes.lid;
      port.ethernet = attributes.link_layer == IBV_LINK_LAYER_ETHERNET;
      found = true;
    }
    if (!found) {
      library_->close_device(context);
      return Error{"port", name + " has no active port" +
                               (wanted_port > 0 ? " numbered " + std::to_string(wanted_port) : std::string())};
    }
    port.gid_index = gid_index;
    if (library_->query_gid(context, port.port, gid_index, &port.gid) != 0 && port.ethernet) {
      library_->close_device(context);
      return Error{"gid", errno_text(("ibv_query_gid " + name + " gid " + std::to_string(gid_index)).c_str())};
    }
    ibv_pd* domain = library_->alloc_pd(context);
    if (domain == nullptr) {
      library_->close_device(context);
      return Error{"ib", errno_text("ibv_alloc_pd")};
    }
    return std::unique_ptr<Device>(std::make_unique<RealDevice>(library_, context, domain, name, port));
  }

  std::shared_ptr<Library> library_;
};

}  // namespace

Result<std::unique_ptr<Verbs>> load_ibverbs() {
  auto library = std::make_shared<Library>();
  library->handle = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (library->handle == nullptr) {
    const char* error = ::dlerror();
    return Error{"ib", std::string("cannot load ") + kLibrary + ": " + (error != nullptr ? error : "unknown error")};
  }
  void* h = library->handle;
  const bool all =
      resolve(h, "ibv_get_device_list", library->get_device_list) &&
      resolve(h, "ibv_free_device_list", library->free_device_list) &&
      resolve(h, "ibv_get_device_name", library->get_device_name) &&
      resolve(h, "ibv_open_device", library->open_device) && resolve(h, "ibv_close_device", library->close_device) &&
      resolve(h, "ibv_query_port", library->query_port) && resolve(h, "ibv_query_gid", library->query_gid) &&
      resolve(h, "ibv_alloc_pd", library->alloc_pd) && resolve(h, "ibv_dealloc_pd", library->dealloc_pd) &&
      resolve(h, "ibv_reg_mr", library->reg_mr) && resolve(h, "ibv_dereg_mr", library->dereg_mr) &&
      resolve(h, "ibv_create_cq", library->create_cq) && resolve(h, "ibv_destroy_cq", library->destroy_cq) &&
      resolve(h, "ibv_create_qp", library->create_qp) && resolve(h, "ibv_modify_qp", library->modify_qp) &&
      resolve(h, "ibv_query_qp", library->query_qp) && resolve(h, "ibv_destroy_qp", library->destroy_qp);
  if (!all) {
    const char* error = ::dlerror();
    return Error{"ib", std::string(kLibrary) + " lacks a verb collcheck needs: " + (error != nullptr ? error : "?")};
  }
  resolve(h, "ibv_reg_dmabuf_mr", library->reg_dmabuf_mr);  // optional: GPU memory by dma-buf
  return std::unique_ptr<Verbs>(std::make_unique<RealVerbs>(std::move(library)));
}

}  // namespace collcheck::ib
