/* DLPack's ABI (version 0.8, the unversioned DLManagedTensor every consumer accepts), declared
 * here from the specification (dmlc/dlpack, Apache-2.0) so the extension needs no extra header.
 * Only the layout matters: a producer hands a PyCapsule named "dltensor" holding a
 * DLManagedTensor*; a consumer renames it "used_dltensor" and calls deleter when done. */
#ifndef WFPY_DLPACK_H
#define WFPY_DLPACK_H

#include <stdint.h>

typedef enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13 } DLDeviceType;
typedef enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6 } DLDataTypeCode;

typedef struct {
  int32_t device_type; /* DLDeviceType */
  int32_t device_id;
} DLDevice;

typedef struct {
  uint8_t code; /* DLDataTypeCode */
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides; /* NULL: compact row-major */
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

#endif
