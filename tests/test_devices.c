/* Devices: enumeration order, lookup by name, the default device, device facts, peer access,
 * runtime facts, and wf_init options (cpu_devices, no_cuda). */
#include "harness.h"

#include "test_kernels.h"

static int count_cuda(void) {
  int n = 0;
  for (int i = 0; i < wf_device_count(); i++)
    n += wf_device_is_cuda(wf_device_at(i));
  return n;
}

TEST(enumeration_cpu_first_then_cuda) {
  int n = wf_device_count();
  CHECK(n >= 4);
  for (int i = 0; i < 4 && i < n; i++) {
    wf_device *d = wf_device_at(i);
    REQUIRE(d != NULL);
    char want[16];
    snprintf(want, sizeof want, "cpu:%d", i);
    if (strcmp(wf_device_name(d), want) != 0)
      TH_FAIL("device %d is %s, expected %s", i, wf_device_name(d), want);
    CHECK(!wf_device_is_cuda(d));
  }
  for (int i = 4; i < n; i++) {
    wf_device *d = wf_device_at(i);
    REQUIRE(d != NULL);
    char want[16];
    snprintf(want, sizeof want, "cuda:%d", i - 4);
    if (strcmp(wf_device_name(d), want) != 0)
      TH_FAIL("device %d is %s, expected %s", i, wf_device_name(d), want);
    CHECK(wf_device_is_cuda(d));
  }
  CHECK(wf_device_at(n) == NULL);
  CHECK(wf_device_at(-1) == NULL);
  CHECK(wf_device_at(1000) == NULL);
}

TEST(lookup_by_name) {
  wf_device *d = NULL;
  CHECK_OK(wf_device_get("cpu", &d));
  CHECK(d == wf_device_at(0));
  CHECK_OK(wf_device_get("cpu:2", &d));
  CHECK(d == wf_device_at(2));
  CHECK(strcmp(wf_device_name(d), "cpu:2") == 0);
  if (th_is_cuda()) {
    wf_device *c0 = NULL;
    CHECK_OK(wf_device_get("cuda", &d));
    CHECK_OK(wf_device_get("cuda:0", &c0));
    CHECK(d == c0);
    CHECK(d == wf_device_at(4));
    CHECK(wf_device_is_cuda(d));
    CHECK(strcmp(wf_device_name(d), "cuda:0") == 0);
    CHECK(th_dev0 == c0);
  } else {
    CHECK(th_dev0 == wf_device_at(0));
    CHECK(th_dev1 == wf_device_at(1));
  }
}

TEST(default_device) {
  wf_device *d = wf_device_default();
  REQUIRE(d != NULL);
  wf_device *cuda = NULL;
  if (wf_device_get("cuda", &cuda) == WF_OK)
    CHECK(d == cuda); /* cuda:0 when there is one */
  else
    CHECK(d == wf_device_at(0)); /* else cpu:0 */
  wf_clear_error();
}

TEST(device_info) {
  for (int i = 0; i < wf_device_count(); i++) {
    wf_device *d = wf_device_at(i);
    wf_device_info info;
    memset(&info, 0x7f, sizeof info);
    CHECK_OK(wf_device_info_get(d, &info));
    CHECK(strcmp(info.name, wf_device_name(d)) == 0);
    CHECK(info.is_cuda == wf_device_is_cuda(d));
    CHECK(strlen(info.product) > 0 && strlen(info.product) < sizeof info.product);
    CHECK(info.total_memory > 0);
    CHECK(info.free_memory <= info.total_memory);
    CHECK(info.multiprocessors > 0);
    if (info.is_cuda) {
      CHECK_EQ_INT(info.ordinal, i - (wf_device_count() - count_cuda()));
      CHECK(info.cc_major >= 3);
      CHECK(info.pci_bus >= 0);
    } else {
      CHECK_EQ_INT(info.ordinal, i);
      CHECK_EQ_INT(info.pci_bus, -1);
    }
  }
}

TEST(device_info_counts_allocations) {
  enum { BYTES = 8 << 20 };
  wf_device_info before, with;
  CHECK_OK(wf_device_synchronize(th_dev0));
  CHECK_OK(wf_device_info_get(th_dev0, &before));
  wf_buffer *b = NULL;
  CHECK_OK(wf_buffer_create(th_dev0, BYTES, 0, NULL, &b));
  CHECK_OK(wf_device_synchronize(th_dev0));
  CHECK_OK(wf_device_info_get(th_dev0, &with));
  /* "bytes weft holds on this device now": at least the new buffer more than before */
  CHECK(with.allocated >= before.allocated + BYTES);
  wf_buffer_destroy(b, NULL);
  CHECK_OK(wf_device_synchronize(th_dev0));
}

TEST(peer_access_of_self) {
  CHECK(wf_device_can_access_peer(th_dev0, th_dev0));
  CHECK(wf_device_can_access_peer(th_host, th_host));
  if (th_dev1) CHECK(wf_device_can_access_peer(th_dev1, th_dev1));
  if (th_is_cuda() && th_dev1) {
    /* WF_OK, or WF_ERR_UNSUPPORTED when the hardware cannot; then access stays false */
    wf_status st = wf_peer_access_enable(th_dev0, th_dev1);
    CHECK(st == WF_OK || st == WF_ERR_UNSUPPORTED);
    if (st == WF_OK)
      CHECK(wf_device_can_access_peer(th_dev0, th_dev1));
    else
      CHECK(!wf_device_can_access_peer(th_dev0, th_dev1));
  }
}

TEST(runtime_info) {
  wf_runtime_info info;
  memset(&info, 0x7f, sizeof info);
  wf_runtime_info_get(&info);
  CHECK(memchr(info.cuda_status, 0, sizeof info.cuda_status) != NULL);
  CHECK(memchr(info.cuda_architectures, 0, sizeof info.cuda_architectures) != NULL);
#ifdef WEFT_HAVE_CUDA
  CHECK(info.cuda_compiled);
#ifdef WEFT_TEST_CUDA_ARCH0
  if (!strstr(info.cuda_architectures, WEFT_TEST_CUDA_ARCH0))
    TH_FAIL("cuda_architectures \"%s\" lacks %s", info.cuda_architectures, WEFT_TEST_CUDA_ARCH0);
#endif
#else
  CHECK(!info.cuda_compiled);
  CHECK_EQ_INT(info.cuda_devices_found, 0);
#endif
  int usable = count_cuda();
  if (usable > 0) {
    CHECK(info.cuda_devices_found >= usable);
    CHECK(info.cuda_driver_version > 0);
    CHECK(info.cuda_runtime_version > 0);
  } else {
    /* "why no CUDA device is usable" */
    if (strlen(info.cuda_status) == 0) TH_FAIL("no usable CUDA device but cuda_status is empty");
  }
}

TEST(current_stream_belongs_to_device) {
  for (int i = 0; i < wf_device_count(); i++) {
    wf_device *d = wf_device_at(i);
    wf_stream *s = wf_device_stream(d);
    REQUIRE(s != NULL);
    CHECK(wf_stream_device(s) == d);
    CHECK(wf_device_is_cuda(d) == (wf_stream_native(s) != NULL));
    CHECK_OK(wf_device_synchronize(d));
  }
  CHECK_OK(wf_synchronize());
}

TEST(init_options) {
  wf_shutdown();
  CHECK_OK(wf_init(&(wf_init_desc){.cpu_devices = 2, .no_cuda = true}));
  CHECK_EQ_INT(wf_device_count(), 2);
  CHECK_EQ_INT(count_cuda(), 0);
  wf_device *d = NULL;
  CHECK_STATUS(wf_device_get("cuda", &d), WF_ERR_DEVICE);
  CHECK_STATUS(wf_device_get("cpu:2", &d), WF_ERR_DEVICE);
  CHECK(wf_device_default() == wf_device_at(0));
  wf_shutdown();

  CHECK_OK(wf_init(&(wf_init_desc){.cpu_devices = 16}));
  int cpus = wf_device_count() - count_cuda();
  CHECK_EQ_INT(cpus, 16);
  CHECK_OK(wf_device_get("cpu:15", &d));
  CHECK(strcmp(wf_device_name(d), "cpu:15") == 0);
  wf_shutdown();
  CHECK_OK(th_init());
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(enumeration_cpu_first_then_cuda),
      TH_TEST(lookup_by_name),
      TH_TEST(default_device),
      TH_TEST(device_info),
      TH_TEST(device_info_counts_allocations),
      TH_TEST(peer_access_of_self),
      TH_TEST(runtime_info),
      TH_TEST(current_stream_belongs_to_device),
      TH_TEST(init_options),
  };
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
