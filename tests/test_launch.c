/* Kernels: results against the shared WF_HD math evaluated on the host, sizes that are not
 * multiples of the block, n = 0, argument structs copied at the call, a NULL stream (the default
 * device's current stream), and kernels lacking the backend's entry point. */
#include "harness.h"

#include "test_kernels.h"

static float *run_iota(wf_stream *s, size_t n, float start, float step) {
  wf_buffer *b = NULL;
  float *h = malloc((n ? n : 1) * sizeof(float));
  tk_iota_args a;
  if (!h || wf_buffer_create(wf_stream_device(s), (n ? n : 1) * sizeof(float), 0, s, &b) != WF_OK)
    goto fail;
  a = (tk_iota_args){wf_buffer_ptr(b), start, step};
  if (wf_launch(&tk_iota, n, &a, sizeof a, s) != WF_OK || wf_stream_synchronize(s) != WF_OK ||
      wf_download(h, b, 0, n * sizeof(float)) != WF_OK)
    goto fail;
  wf_buffer_destroy(b, s);
  return h;
fail:
  fprintf(stderr, "  iota over %zu: %s\n", n, wf_last_error());
  if (b) wf_buffer_destroy(b, s);
  free(h);
  return NULL;
}

TEST(kernels_match_host_math_at_odd_sizes) {
  static const size_t sizes[] = {1, 255, 256, 257, 1000, 65537, 1000003};
  wf_stream *s = wf_device_stream(th_dev0);
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k];
    float *h = run_iota(s, n, 0.25f, 0.5f);
    REQUIRE(h);
    size_t bad = 0;
    /* Exact: start + i * step with these values is a single correctly rounded multiply-add of
     * values exact in float (i < 2^24, step a power of two), so FMA contraction cannot change it.
     */
    for (size_t i = 0; i < n; i++)
      bad += h[i] != tk_iota_elem(i, 0.25f, 0.5f);
    if (bad) TH_FAIL("n = %zu: %zu elements differ from tk_iota_elem", n, bad);
    free(h);
  }
}

TEST(axpy_matches_host_math) {
  enum { N = 100003 };
  wf_stream *s = NULL;
  wf_buffer *x = NULL, *y = NULL;
  float *hx = malloc(N * sizeof(float)), *hy = malloc(N * sizeof(float)),
        *out = malloc(N * sizeof(float));
  REQUIRE(hx && hy && out);
  for (int i = 0; i < N; i++) {
    hx[i] = sinf((float)i * 0.001f) * 3.0f;
    hy[i] = cosf((float)i * 0.003f) - 0.5f;
  }
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(wf_buffer_create(th_dev0, N * sizeof(float), 0, s, &x));
  CHECK_OK(wf_buffer_create(th_dev0, N * sizeof(float), 0, s, &y));
  CHECK_OK(wf_upload(x, 0, hx, N * sizeof(float), s));
  CHECK_OK(wf_upload(y, 0, hy, N * sizeof(float), s));
  const float alpha = 1.7f;
  tk_axpy_args a = {wf_buffer_ptr(y), wf_buffer_ptr(x), alpha};
  CHECK_OK(wf_launch(&tk_axpy, N, &a, sizeof a, s));
  CHECK_OK(wf_stream_synchronize(s));
  CHECK_OK(wf_download(out, y, 0, N * sizeof(float)));
  /* Tolerance: nvcc contracts y + a*x into one FMA, the host compiler (ISO C mode) rounds twice, so
   * results may differ by an ulp of the operands' scale: |y| + |a x| <= 6, ulp(8) = 9.5e-7; 2e-6
   * allows one or two such roundings and nothing more. On CPU devices the same code runs: exact. */
  double worst = 0.0;
  for (int i = 0; i < N; i++) {
    double d = fabs((double)out[i] - (double)tk_axpy_elem(hy[i], alpha, hx[i]));
    if (d > worst) worst = d;
  }
  CHECK_NEAR(worst, 0.0, th_is_cuda() ? 2e-6 : 0.0);
  wf_buffer_destroy(x, s);
  wf_buffer_destroy(y, s);
  wf_stream_destroy(s);
  free(hx);
  free(hy);
  free(out);
}

TEST(launch_zero_elements) {
  wf_stream *s = NULL;
  wf_buffer *b = NULL;
  float h[16];
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(wf_buffer_create(th_dev0, sizeof h, WF_BUFFER_ZERO, s, &b));
  tk_fill_args a = {wf_buffer_ptr(b), 5.0f};
  CHECK_OK(wf_launch(&tk_fill, 0, &a, sizeof a, s));
  CHECK_OK(wf_stream_synchronize(s));
  CHECK_OK(wf_download(h, b, 0, sizeof h));
  CHECK_ALL_EQ(h, 16, 0.0f); /* nothing ran */
  wf_buffer_destroy(b, s);
  wf_stream_destroy(s);
}

TEST(launch_copies_args_at_call) {
  enum { N = 1 << 16 };
  wf_stream *s = NULL;
  wf_buffer *busy = NULL, *a = NULL, *b = NULL;
  float *h = malloc(N * sizeof(float));
  REQUIRE(h);
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(wf_buffer_create(th_dev0, N * sizeof(float), 0, s, &busy));
  CHECK_OK(wf_buffer_create(th_dev0, N * sizeof(float), WF_BUFFER_ZERO, s, &a));
  CHECK_OK(wf_buffer_create(th_dev0, N * sizeof(float), WF_BUFFER_ZERO, s, &b));
  /* the stream is busy 40 ms, so the fill runs long after wf_launch returned */
  tk_slow_fill_args slow = {wf_buffer_ptr(busy), 1.0f, 40};
  CHECK_OK(wf_launch(&tk_slow_fill, N, &slow, sizeof slow, s));
  tk_fill_args args = {wf_buffer_ptr(a), 5.0f};
  CHECK_OK(wf_launch(&tk_fill, N, &args, sizeof args, s));
  args.value = 9.0f; /* mutate right after the call */
  args.p = wf_buffer_ptr(b);
  CHECK_OK(wf_stream_synchronize(s));
  CHECK_OK(wf_download(h, a, 0, N * sizeof(float)));
  CHECK_ALL_EQ(h, N, 5.0f);
  CHECK_OK(wf_download(h, b, 0, N * sizeof(float)));
  CHECK_ALL_EQ(h, N, 0.0f);
  free(h);
  wf_buffer_destroy(busy, s);
  wf_buffer_destroy(a, s);
  wf_buffer_destroy(b, s);
  wf_stream_destroy(s);
}

TEST(launch_null_stream_uses_default_device) {
  enum { N = 1000 };
  wf_device *d = wf_device_default();
  REQUIRE(d != NULL);
  wf_buffer *b = NULL;
  float h[N];
  CHECK_OK(wf_buffer_create(d, sizeof h, WF_BUFFER_ZERO, NULL, &b));
  tk_fill_args a = {wf_buffer_ptr(b), 6.0f};
  CHECK_OK(wf_launch(&tk_fill, N, &a, sizeof a, NULL));
  CHECK_OK(wf_stream_synchronize(wf_device_stream(d)));
  CHECK_OK(wf_download(h, b, 0, sizeof h));
  CHECK_ALL_EQ(h, N, 6.0f);
  wf_buffer_destroy(b, NULL);
}

TEST(launch_missing_backend_entry_is_an_error) {
  wf_stream *s = wf_device_stream(th_dev0);
  wf_buffer *b = NULL;
  float h[64];
  CHECK_OK(wf_buffer_create(th_dev0, sizeof h, WF_BUFFER_ZERO, s, &b));
  tk_fill_args a = {wf_buffer_ptr(b), 3.0f};
  /* the kernel has no entry point for this backend: an error, not a crash */
  const wf_kernel *missing = th_is_cuda() ? &tk_cpu_only : &tk_cuda_only;
  wf_clear_error();
  CHECK(wf_launch(missing, 64, &a, sizeof a, s) < 0);
  CHECK(strlen(wf_last_error()) > 0);
  const wf_kernel *none = &(wf_kernel){"nothing", NULL, NULL, 0};
  CHECK(wf_launch(none, 64, &a, sizeof a, s) < 0);
  /* the one that exists works */
  const wf_kernel *present = th_is_cuda() ? &tk_fill : &tk_cpu_only;
  CHECK_OK(wf_launch(present, 64, &a, sizeof a, s));
  CHECK_OK(wf_stream_synchronize(s));
  CHECK_OK(wf_download(h, b, 0, sizeof h));
  CHECK_ALL_EQ(h, 64, 3.0f);
  wf_buffer_destroy(b, s);
}

TEST(launch_on_several_streams_and_devices) {
  /* one kernel object on every device under test, each writing its own value */
  wf_device *devs[2] = {th_dev0, th_dev1};
  wf_buffer *b[2] = {NULL, NULL};
  int nd = th_dev1 ? 2 : 1;
  enum { N = 1 << 14 };
  for (int i = 0; i < nd; i++) {
    CHECK_OK(wf_buffer_create(devs[i], N * sizeof(float), 0, NULL, &b[i]));
    tk_fill_args a = {wf_buffer_ptr(b[i]), (float)(i + 1)};
    CHECK_OK(wf_launch(&tk_fill, N, &a, sizeof a, wf_device_stream(devs[i])));
  }
  for (int i = 0; i < nd; i++) {
    float *h = malloc(N * sizeof(float));
    REQUIRE(h);
    CHECK_OK(wf_device_synchronize(devs[i]));
    CHECK_OK(wf_download(h, b[i], 0, N * sizeof(float)));
    CHECK_ALL_EQ(h, N, (float)(i + 1));
    free(h);
    wf_buffer_destroy(b[i], NULL);
  }
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(kernels_match_host_math_at_odd_sizes),
      TH_TEST(axpy_matches_host_math),
      TH_TEST(launch_zero_elements),
      TH_TEST(launch_copies_args_at_call),
      TH_TEST(launch_null_stream_uses_default_device),
      TH_TEST(launch_missing_backend_entry_is_an_error),
      TH_TEST(launch_on_several_streams_and_devices),
  };
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
