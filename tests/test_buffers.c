/* Buffers and copies: create (device, pinned host, ZERO), wrap, accessors, upload/download round
 * trips, memset and copies with offsets in every direction, bounds errors, and the rule that
 * wf_upload's host memory may be reused as soon as it returns. All values compared are small
 * integers or products of them, exact in float, so comparisons are exact. */
#include "harness.h"

#include <stdint.h>

#include "test_kernels.h"

static void iota_host(float *p, size_t n, float start) {
  for (size_t i = 0; i < n; i++)
    p[i] = start + (float)i;
}

TEST(create_and_accessors) {
  wf_buffer *b = NULL, *pinned = NULL, *z = NULL;
  CHECK_OK(wf_buffer_create(th_dev0, 1000, 0, NULL, &b));
  CHECK(wf_buffer_ptr(b) != NULL);
  CHECK_EQ_INT(wf_buffer_size(b), 1000);
  CHECK(wf_buffer_device(b) == th_dev0);
  CHECK_EQ_INT(wf_buffer_flags(b), 0);

  CHECK_OK(wf_buffer_create(th_host, 4096, WF_BUFFER_PINNED, NULL, &pinned));
  CHECK(wf_buffer_device(pinned) == th_host);
  CHECK(wf_buffer_flags(pinned) & WF_BUFFER_PINNED);
  CHECK_EQ_INT(wf_buffer_size(pinned), 4096);

  CHECK_OK(wf_buffer_create(th_dev0, 64, WF_BUFFER_ZERO, NULL, &z));
  CHECK(wf_buffer_flags(z) & WF_BUFFER_ZERO);
  CHECK(wf_buffer_ptr(z) != wf_buffer_ptr(b));

  wf_buffer_destroy(z, NULL);
  wf_buffer_destroy(pinned, NULL);
  wf_buffer_destroy(b, NULL);
}

TEST(zero_flag_gives_zeros) {
  enum { BYTES = 4 << 20 };
  /* dirty memory first, so a reused block would not be zero by luck */
  for (int round = 0; round < 2; round++) {
    wf_device *d = round == 0 ? th_dev0 : th_host;
    wf_buffer *dirty = NULL, *z = NULL;
    CHECK_OK(wf_buffer_create(d, BYTES, 0, NULL, &dirty));
    CHECK_OK(wf_memset(dirty, 0xA5, 0, BYTES, NULL));
    wf_buffer_destroy(dirty, NULL);
    CHECK_OK(
        wf_buffer_create(d, BYTES, WF_BUFFER_ZERO | (round ? WF_BUFFER_PINNED : 0u), NULL, &z));
    unsigned char *h = malloc(BYTES);
    REQUIRE(h);
    memset(h, 0x5A, BYTES);
    CHECK_OK(wf_download(h, z, 0, BYTES));
    size_t nonzero = 0;
    for (size_t i = 0; i < BYTES; i++)
      nonzero += h[i] != 0;
    if (nonzero)
      TH_FAIL("%s: %zu of %d bytes of a ZERO buffer are not zero", wf_device_name(d), nonzero,
              BYTES);
    free(h);
    wf_buffer_destroy(z, NULL);
  }
}

TEST(upload_download_roundtrip_with_offsets) {
  enum { N = 100000 };
  float *in = malloc(N * sizeof(float)), *out = malloc(N * sizeof(float));
  REQUIRE(in && out);
  iota_host(in, N, 0.5f);
  wf_buffer *b = NULL;
  CHECK_OK(wf_buffer_create(th_dev0, N * sizeof(float), WF_BUFFER_ZERO, NULL, &b));
  CHECK_OK(wf_upload(b, 0, in, N * sizeof(float), NULL));
  CHECK_OK(wf_download(out, b, 0, N * sizeof(float)));
  CHECK(memcmp(in, out, N * sizeof(float)) == 0);

  /* upload 1000 floats at float offset 400, download floats [300, 1500) */
  float part[1000], window[1200];
  for (int i = 0; i < 1000; i++)
    part[i] = -1.0f - (float)i;
  CHECK_OK(wf_upload(b, 400 * sizeof(float), part, sizeof part, NULL));
  CHECK_OK(wf_download(window, b, 300 * sizeof(float), sizeof window));
  for (int i = 0; i < 1200; i++) {
    int at = 300 + i;
    float want = at >= 400 && at < 1400 ? -1.0f - (float)(at - 400) : in[at];
    if (window[i] != want) {
      TH_FAIL("element %d: %g, expected %g", at, window[i], want);
      break;
    }
  }
  /* unaligned byte offsets */
  unsigned char bytes[7] = {1, 2, 3, 4, 5, 6, 7}, back[7] = {0};
  CHECK_OK(wf_upload(b, 13, bytes, 7, NULL));
  CHECK_OK(wf_download(back, b, 13, 7));
  CHECK(memcmp(bytes, back, 7) == 0);
  wf_buffer_destroy(b, NULL);
  free(in);
  free(out);
}

TEST(upload_source_reusable_at_return) {
  /* "The caller's memory may be reused as soon as this returns": queue the upload behind a slow
   * kernel, then scribble over the source. */
  enum { N = 1 << 16 };
  wf_stream *s = NULL;
  wf_buffer *busy = NULL, *b = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(wf_buffer_create(th_dev0, N * sizeof(float), 0, s, &busy));
  CHECK_OK(wf_buffer_create(th_dev0, N * sizeof(float), 0, s, &b));
  tk_slow_fill_args slow = {wf_buffer_ptr(busy), 1.0f, 40};
  CHECK_OK(wf_launch(&tk_slow_fill, N, &slow, sizeof slow, s));
  float *src = malloc(N * sizeof(float)), *out = malloc(N * sizeof(float));
  REQUIRE(src && out);
  iota_host(src, N, 3.0f);
  CHECK_OK(wf_upload(b, 0, src, N * sizeof(float), s));
  for (int i = 0; i < N; i++)
    src[i] = -7.0f;
  CHECK_OK(wf_download(out, b, 0, N * sizeof(float)));
  size_t bad = 0;
  for (int i = 0; i < N; i++)
    bad += out[i] != 3.0f + (float)i;
  CHECK_EQ_INT(bad, 0);
  free(src);
  free(out);
  wf_buffer_destroy(busy, s);
  wf_buffer_destroy(b, s);
  wf_stream_destroy(s);
}

TEST(memset_with_offsets) {
  enum { BYTES = 4096 };
  wf_buffer *b = NULL;
  unsigned char h[BYTES];
  CHECK_OK(wf_buffer_create(th_dev0, BYTES, WF_BUFFER_ZERO, NULL, &b));
  CHECK_OK(wf_memset(b, 0x5A, 100, 200, NULL));
  CHECK_OK(wf_memset(b, 0x1FF, 1000, 1, NULL)); /* the byte value: 0x1FF & 0xFF */
  CHECK_OK(wf_memset(b, 7, BYTES - 3, 3, NULL));
  CHECK_OK(wf_memset(b, 9, 50, 0, NULL)); /* zero bytes: nothing */
  CHECK_OK(wf_download(h, b, 0, BYTES));
  size_t bad = 0;
  for (size_t i = 0; i < BYTES; i++) {
    unsigned char want = (i >= 100 && i < 300) ? 0x5A : i == 1000 ? 0xFF : i >= BYTES - 3 ? 7 : 0;
    if (h[i] != want && bad++ < 3) TH_FAIL("byte %zu = 0x%02x, expected 0x%02x", i, h[i], want);
  }
  wf_buffer_destroy(b, NULL);
}

/* H2D, D2D and D2H with offsets, with host buffers pinned and pageable; s NULL and explicit. */
TEST(copies_every_direction_with_offsets) {
  enum { N = 1 << 16, OFF = 1000, M = N - 3000 };
  const size_t F = sizeof(float);
  float *in = malloc(N * F), *out = malloc(N * F);
  REQUIRE(in && out);
  iota_host(in, N, 1.0f);
  wf_stream *s = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  for (int pinned = 0; pinned < 2; pinned++) {
    for (int explicit_stream = 0; explicit_stream < 2; explicit_stream++) {
      wf_stream *cs = explicit_stream ? s : NULL;
      unsigned hf = pinned ? WF_BUFFER_PINNED : 0;
      wf_buffer *h_src = NULL, *h_dst = NULL, *d_a = NULL, *d_b = NULL;
      CHECK_OK(wf_buffer_create(th_host, N * F, hf, NULL, &h_src));
      CHECK_OK(wf_buffer_create(th_host, N * F, hf | WF_BUFFER_ZERO, NULL, &h_dst));
      CHECK_OK(wf_buffer_create(th_dev0, N * F, WF_BUFFER_ZERO, NULL, &d_a));
      CHECK_OK(wf_buffer_create(th_dev0, N * F, WF_BUFFER_ZERO, NULL, &d_b));
      CHECK_OK(wf_upload(h_src, 0, in, N * F, NULL));
      /* h_src[0, M) -> d_a[OFF, OFF+M) -> d_b[2*OFF, 2*OFF+M) -> h_dst[3*OFF, 3*OFF+M) */
      CHECK_OK(wf_copy(d_a, OFF * F, h_src, 0, M * F, cs));
      CHECK_OK(wf_copy(d_b, 2 * OFF * F, d_a, OFF * F, M * F, cs));
      CHECK_OK(wf_copy(h_dst, 3 * OFF * F, d_b, 2 * OFF * F, M * F, cs));
      CHECK_OK(wf_download(out, h_dst, 0, N * F));
      size_t bad = 0;
      for (size_t i = 0; i < N; i++) {
        float want = (i >= 3 * OFF && i < 3 * OFF + M) ? in[i - 3 * OFF] : 0.0f;
        if (out[i] != want && bad++ < 3)
          TH_FAIL("pinned=%d stream=%d: h_dst[%zu] = %g, expected %g", pinned, explicit_stream, i,
                  out[i], want);
      }
      /* the device copy in between also holds the right values at its offset */
      CHECK_OK(wf_download(out, d_a, OFF * F, M * F));
      CHECK(memcmp(out, in, M * F) == 0);
      /* a copy within one buffer (non-overlapping ranges) */
      CHECK_OK(wf_copy(d_a, 0, d_a, (OFF + M - 500) * F, 500 * F, cs));
      CHECK_OK(wf_download(out, d_a, 0, 500 * F));
      CHECK(memcmp(out, in + (M - 500), 500 * F) == 0);
      wf_buffer_destroy(h_src, NULL);
      wf_buffer_destroy(h_dst, NULL);
      wf_buffer_destroy(d_a, NULL);
      wf_buffer_destroy(d_b, NULL);
    }
  }
  wf_stream_destroy(s);
  free(in);
  free(out);
}

TEST(pageable_copy_to_host_is_synchronous) {
  CUDA_ONLY("on CPU devices every copy is asynchronous");
  /* "Copies between a pageable host buffer and a CUDA device are synchronous to the host": the host
   * reads the pageable buffer right after wf_copy returns, with no wait. */
  enum { N = 1 << 20 };
  wf_buffer *d = NULL, *h = NULL;
  CHECK_OK(wf_buffer_create(th_dev0, N * sizeof(float), 0, NULL, &d));
  CHECK_OK(wf_buffer_create(th_host, N * sizeof(float), WF_BUFFER_ZERO, NULL, &h));
  CHECK_OK(wf_device_synchronize(th_host));
  tk_slow_fill_args a = {wf_buffer_ptr(d), 21.0f, 40};
  CHECK_OK(wf_launch(&tk_slow_fill, N, &a, sizeof a, wf_device_stream(th_dev0)));
  CHECK_OK(wf_buffer_touch(d, wf_device_stream(th_dev0)));
  CHECK_OK(wf_copy(h, 0, d, 0, N * sizeof(float), NULL));
  CHECK_ALL_EQ((const float *)wf_buffer_ptr(h), N, 21.0f);
  wf_buffer_destroy(d, NULL);
  wf_buffer_destroy(h, NULL);
}

TEST(wrap_caller_memory) {
  enum { N = 4096 };
  /* host memory on a CPU device */
  float *mine = malloc(N * sizeof(float)), out[N];
  REQUIRE(mine);
  iota_host(mine, N, 10.0f);
  wf_buffer *w = NULL, *d = NULL, *back = NULL;
  CHECK_OK(wf_buffer_wrap(th_host, mine, N * sizeof(float), &w));
  CHECK(wf_buffer_ptr(w) == mine);
  CHECK_EQ_INT(wf_buffer_size(w), N * sizeof(float));
  CHECK(wf_buffer_device(w) == th_host);
  CHECK_OK(wf_download(out, w, 0, sizeof out));
  CHECK(memcmp(out, mine, sizeof out) == 0);
  CHECK_OK(wf_buffer_create(th_dev0, N * sizeof(float), 0, NULL, &d));
  CHECK_OK(wf_copy(d, 0, w, 0, N * sizeof(float), NULL));
  CHECK_OK(wf_memset(w, 0, 0, N * sizeof(float), NULL));
  CHECK_OK(wf_download(out, w, 0, sizeof out));
  CHECK_ALL_EQ(mine, N, 0.0f); /* the memset wrote the caller's memory */

  /* device memory on the device under test: wrap another buffer's memory */
  CHECK_OK(wf_buffer_wrap(th_dev0, wf_buffer_ptr(d), N * sizeof(float), &back));
  CHECK(wf_buffer_device(back) == th_dev0);
  CHECK_OK(wf_download(out, back, 0, sizeof out));
  for (int i = 0; i < N; i++)
    CHECK_EQ_INT((int)out[i], 10 + i);
  wf_buffer_destroy(back, NULL); /* not owned: d's memory stays */
  wf_buffer_destroy(w, NULL);    /* not owned: mine stays (free below would double-free) */
  CHECK_OK(wf_download(out, d, 0, sizeof out));
  CHECK_EQ_INT((int)out[N - 1], 10 + N - 1);
  CHECK_OK(wf_synchronize());
  mine[0] = 1.0f; /* still the caller's to write and free */
  free(mine);
  wf_buffer_destroy(d, NULL);
}

TEST(bounds_are_checked) {
  enum { SZ = 1024 };
  wf_buffer *a = NULL, *b = NULL;
  unsigned char h[2 * SZ];
  CHECK_OK(wf_buffer_create(th_dev0, SZ, WF_BUFFER_ZERO, NULL, &a));
  CHECK_OK(wf_buffer_create(th_dev0, SZ, WF_BUFFER_ZERO, NULL, &b));
  CHECK_STATUS(wf_copy(a, 1, b, 0, SZ, NULL), WF_ERR_INVALID);     /* dst_off + bytes > size */
  CHECK_STATUS(wf_copy(a, 0, b, 1, SZ, NULL), WF_ERR_INVALID);     /* src_off + bytes > size */
  CHECK_STATUS(wf_copy(a, 0, b, 0, SZ + 1, NULL), WF_ERR_INVALID); /* bytes > size */
  CHECK_STATUS(wf_copy(a, SZ + 8, b, 0, 0, NULL), WF_ERR_INVALID); /* offset past the end */
  CHECK_STATUS(wf_memset(a, 1, SZ - 4, 5, NULL), WF_ERR_INVALID);
  CHECK_STATUS(wf_upload(a, 512, h, 513, NULL), WF_ERR_INVALID);
  CHECK_STATUS(wf_download(h, a, 1000, 25), WF_ERR_INVALID);
  /* offsets that wrap size_t around must not pass a naive off + bytes <= size */
  CHECK_STATUS(wf_copy(a, SIZE_MAX - 8, b, 0, 16, NULL), WF_ERR_INVALID);
  CHECK_STATUS(wf_copy(a, 0, b, SIZE_MAX - 8, 16, NULL), WF_ERR_INVALID);
  CHECK_STATUS(wf_memset(a, 1, 16, SIZE_MAX - 8, NULL), WF_ERR_INVALID);
  CHECK_STATUS(wf_download(h, a, SIZE_MAX, 2), WF_ERR_INVALID);
  CHECK(strlen(wf_last_error()) > 0);
  /* exactly to the end is fine, and nothing above changed the buffer */
  memset(h, 0x33, SZ);
  CHECK_OK(wf_upload(a, SZ - 16, h, 16, NULL));
  CHECK_OK(wf_copy(b, 0, a, 0, SZ, NULL));
  CHECK_OK(wf_download(h, b, 0, SZ));
  size_t bad = 0;
  for (int i = 0; i < SZ; i++)
    bad += h[i] != (i >= SZ - 16 ? 0x33 : 0);
  CHECK_EQ_INT(bad, 0);
  wf_buffer_destroy(a, NULL);
  wf_buffer_destroy(b, NULL);
}

TEST(touch_orders_later_copies) {
  /* a kernel on s1 writes a; wf_buffer_touch(a, s1) makes a copy on s2 wait for it */
  enum { N = 1 << 20 };
  wf_stream *s1 = NULL, *s2 = NULL;
  wf_buffer *a = NULL, *b = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s1));
  CHECK_OK(wf_stream_create(th_dev0, 0, &s2));
  CHECK_OK(wf_buffer_create(th_dev0, N * sizeof(float), WF_BUFFER_ZERO, s1, &a));
  CHECK_OK(wf_buffer_create(th_dev0, N * sizeof(float), WF_BUFFER_ZERO, s2, &b));
  tk_slow_fill_args f = {wf_buffer_ptr(a), 17.0f, 40};
  CHECK_OK(wf_launch(&tk_slow_fill, N, &f, sizeof f, s1));
  CHECK_OK(wf_buffer_touch(a, s1));
  CHECK_OK(wf_copy(b, 0, a, 0, N * sizeof(float), s2));
  float *h = malloc(N * sizeof(float));
  REQUIRE(h);
  CHECK_OK(wf_download(h, b, 0, N * sizeof(float)));
  CHECK_ALL_EQ(h, N, 17.0f);
  free(h);
  wf_buffer_destroy(a, s1);
  wf_buffer_destroy(b, s2);
  wf_stream_destroy(s1);
  wf_stream_destroy(s2);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(create_and_accessors),
      TH_TEST(zero_flag_gives_zeros),
      TH_TEST(upload_download_roundtrip_with_offsets),
      TH_TEST(upload_source_reusable_at_return),
      TH_TEST(memset_with_offsets),
      TH_TEST(copies_every_direction_with_offsets),
      TH_TEST(pageable_copy_to_host_is_synchronous),
      TH_TEST(wrap_caller_memory),
      TH_TEST(bounds_are_checked),
      TH_TEST(touch_orders_later_copies),
  };
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
