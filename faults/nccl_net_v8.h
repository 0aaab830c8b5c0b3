// The parts of NCCL's network plugin interface, version 8, that libnccl-net-collcheck.so
// implements: the table `ncclNetPlugin_v8` NCCL finds with dlsym after loading the library named
// by NCCL_NET_PLUGIN, and the types its functions take. NCCL installs no header for it (its
// plugins carry their own copy of the declarations), so they are declared here from NCCL's
// documentation of the v8 interface (plugins/net in NCCL's repository), with names of our own;
// the layout is the ABI and must not change. NCCL 2.19 and later load v8 plugins, newer ones
// through their compatibility layer.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// ncclResult_t's values (nccl.h): what every function returns.
typedef enum {
  collcheck_nccl_success = 0,
  collcheck_nccl_system_error = 2,
  collcheck_nccl_internal_error = 3,
  collcheck_nccl_invalid_argument = 4,
  collcheck_nccl_invalid_usage = 5,
  collcheck_nccl_remote_error = 6,
} collcheck_nccl_result;

// ncclDebugLogger_t: NCCL's logger, given to init (level 2 is a warning, 3 information).
typedef void (*collcheck_nccl_logger)(int level, unsigned long subsystems, const char* file, int line,
                                      const char* format, ...);

#define COLLCHECK_NCCL_NET_HANDLE_MAXSIZE 128  // bytes a listen handle may take
#define COLLCHECK_NCCL_PTR_HOST 0x1            // buffers in host memory
#define COLLCHECK_NCCL_PTR_CUDA 0x2            // buffers in device memory

// ncclNetDeviceHandle_v8_t: device offload of a connection (not offered here: NCCL passes a
// pointer the plugin leaves alone).
typedef struct {
  int device_type;     // ncclNetDeviceType; 0: host, no offload
  int device_version;  // 0: none
  void* handle;
  size_t size;
  int needs_proxy_progress;
} collcheck_nccl_net_device_handle_v8;

// ncclNetProperties_v8_t: one network device as getProperties describes it.
typedef struct {
  char* name;              // for logs
  char* pci_path;          // the device's path in /sys, or NULL for a virtual device
  uint64_t guid;           // tells apart the devices of one chip
  int ptr_support;         // COLLCHECK_NCCL_PTR_* bits: where buffers given to isend/irecv may live
  int reg_is_global;       // registrations are not tied to one comm
  int speed;               // Mbit/s
  int port;                // port number
  float latency;           // microseconds
  int max_comms;           // comms that can be created
  int max_recvs;           // receives one irecv may group
  int net_device_type;     // ncclNetDeviceType; 0: host
  int net_device_version;  // 0: none
} collcheck_nccl_net_properties_v8;

// ncclNet_v8_t, field for field. Every function returns a collcheck_nccl_result.
typedef struct {
  const char* name;
  // Once per process, before anything else.
  collcheck_nccl_result (*init)(collcheck_nccl_logger logger);
  collcheck_nccl_result (*devices)(int* count);
  collcheck_nccl_result (*get_properties)(int device, collcheck_nccl_net_properties_v8* properties);
  // Writes a handle (at most COLLCHECK_NCCL_NET_HANDLE_MAXSIZE bytes) that NCCL passes to the
  // peer that connects, and returns the listening comm.
  collcheck_nccl_result (*listen)(int device, void* handle, void** listen_comm);
  // Must not block: *send_comm stays NULL until the connection is made, and NCCL calls again.
  collcheck_nccl_result (*connect)(int device, void* handle, void** send_comm,
                                   collcheck_nccl_net_device_handle_v8** send_device_comm);
  // Must not block: *receive_comm stays NULL until a peer connected, and NCCL calls again.
  collcheck_nccl_result (*accept)(void* listen_comm, void** receive_comm,
                                  collcheck_nccl_net_device_handle_v8** receive_device_comm);
  collcheck_nccl_result (*register_memory)(void* comm, void* data, size_t size, int type, void** memory_handle);
  collcheck_nccl_result (*register_memory_dmabuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                                                  int fd, void** memory_handle);
  collcheck_nccl_result (*deregister_memory)(void* comm, void* memory_handle);
  // Starts sending `size` bytes with `tag`; *request NULL: try again later.
  collcheck_nccl_result (*isend)(void* send_comm, void* data, int size, int tag, void* memory_handle, void** request);
  // Starts `count` grouped receives of at most sizes[i] bytes each, matching tags[i].
  collcheck_nccl_result (*irecv)(void* receive_comm, int count, void** data, int* sizes, int* tags,
                                 void** memory_handles, void** request);
  // Makes received device memory visible to the GPU (*request NULL: nothing to do).
  collcheck_nccl_result (*iflush)(void* receive_comm, int count, void** data, int* sizes, void** memory_handles,
                                  void** request);
  // *done 1 when the request finished (it is then freed); sizes: the bytes each part moved.
  collcheck_nccl_result (*test)(void* request, int* done, int* sizes);
  collcheck_nccl_result (*close_send)(void* send_comm);
  collcheck_nccl_result (*close_receive)(void* receive_comm);
  collcheck_nccl_result (*close_listen)(void* listen_comm);
  collcheck_nccl_result (*get_device_memory)(void* comm, void* memory_handle, void** device_handle);
  collcheck_nccl_result (*receive_consumed)(void* receive_comm, int count, void* request);
} collcheck_nccl_net_v8;

#ifdef __cplusplus
}
#endif
