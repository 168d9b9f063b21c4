/* Status codes, wf_last_error, the log callback, silence by default, and the runtime's life cycle
 * (wf_init twice, lazy init, wf_shutdown then wf_init again). */
#include "harness.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "test_kernels.h"

TEST(status_str_names_every_status) {
  static const struct {
    wf_status s;
    const char *name;
  } all[] = {
      {WF_OK, "WF_OK"},
      {WF_NOT_READY, "WF_NOT_READY"},
      {WF_ERR_INVALID, "WF_ERR_INVALID"},
      {WF_ERR_DEVICE, "WF_ERR_DEVICE"},
      {WF_ERR_OUT_OF_MEMORY, "WF_ERR_OUT_OF_MEMORY"},
      {WF_ERR_CAPTURE, "WF_ERR_CAPTURE"},
      {WF_ERR_BACKEND, "WF_ERR_BACKEND"},
      {WF_ERR_IO, "WF_ERR_IO"},
      {WF_ERR_PARSE, "WF_ERR_PARSE"},
      {WF_ERR_UNSUPPORTED, "WF_ERR_UNSUPPORTED"},
  };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    const char *got = wf_status_str(all[i].s);
    REQUIRE(got != NULL);
    if (strcmp(got, all[i].name) != 0)
      TH_FAIL("wf_status_str(%d) = \"%s\", expected \"%s\"", (int)all[i].s, got, all[i].name);
  }
  /* "never NULL", even for a value outside the enum */
  CHECK(wf_status_str((wf_status)-1234) != NULL);
  CHECK(wf_status_str((wf_status)77) != NULL);
}

TEST(unknown_device_lists_existing_ones) {
  wf_clear_error();
  CHECK(strcmp(wf_last_error(), "") == 0);
  wf_device *d = NULL;
  CHECK_STATUS(wf_device_get("cuda:7", &d), WF_ERR_DEVICE);
  const char *msg = wf_last_error();
  REQUIRE(msg != NULL);
  if (!strstr(msg, "cpu:0")) TH_FAIL("wf_last_error() should list cpu:0: \"%s\"", msg);

  CHECK_STATUS(wf_device_get("bogus", &d), WF_ERR_DEVICE);
  CHECK(strlen(wf_last_error()) > 0);
  CHECK_STATUS(wf_device_get("cpu:99", &d), WF_ERR_DEVICE);
  CHECK(strstr(wf_last_error(), "cpu:0") != NULL);
  CHECK_STATUS(wf_device_get("cpu:-1", &d), WF_ERR_DEVICE);
  CHECK_STATUS(wf_device_get("", &d), WF_ERR_DEVICE);

  wf_clear_error();
  CHECK(strcmp(wf_last_error(), "") == 0);
  /* a success does not invent an error */
  CHECK_OK(wf_device_get("cpu:1", &d));
  CHECK(strcmp(wf_last_error(), "") == 0);
}

static void *fail_in_thread(void *arg) {
  wf_device *d = NULL;
  wf_status *st = arg;
  *st = wf_device_get("bogus-in-thread", &d);
  return NULL;
}

TEST(last_error_is_per_thread) {
  wf_clear_error();
  wf_status st = WF_OK;
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, fail_in_thread, &st) == 0);
  pthread_join(t, NULL);
  CHECK_EQ_INT(st, WF_ERR_DEVICE);
  CHECK(strcmp(wf_last_error(), "") == 0); /* the other thread's failure is not ours */
}

TEST(errors_name_the_function_and_invalid_arguments_fail) {
  wf_buffer *b = NULL;
  CHECK_OK(wf_buffer_create(th_dev0, 256, 0, NULL, &b));
  char host[512];
  wf_clear_error();
  CHECK_STATUS(wf_download(host, b, 0, 512), WF_ERR_INVALID);
  /* "what failed, where": the message names the call */
  CHECK(strstr(wf_last_error(), "wf_download") != NULL);
  wf_buffer_destroy(b, NULL);
}

/* ---- log callback ------------------------------------------------------------------------- */

static atomic_int log_count[4];
static atomic_int log_above; /* messages above the level asked for */
static atomic_int log_wrong_user;
static int log_user_token;
static int log_max_level;

static void count_log(int level, const char *message, void *user) {
  if (user != &log_user_token) atomic_fetch_add(&log_wrong_user, 1);
  if (level > log_max_level || level < 0)
    atomic_fetch_add(&log_above, 1);
  else
    atomic_fetch_add(&log_count[level], 1);
  (void)message;
}

/* Work that makes a library talk: streams, buffers, copies across devices, an error, a capture. */
static wf_status busy_work(void) {
  wf_stream *s = NULL;
  wf_buffer *a = NULL, *b = NULL;
  wf_device *bad = NULL;
  wf_status st = wf_stream_create(th_dev0, 0, &s);
  if (st == WF_OK) st = wf_buffer_create(th_dev0, 1 << 20, WF_BUFFER_ZERO, s, &a);
  if (st == WF_OK) st = wf_buffer_create(th_dev1 ? th_dev1 : th_dev0, 1 << 20, 0, NULL, &b);
  if (st == WF_OK) st = wf_copy(b, 0, a, 0, 1 << 20, NULL);
  if (st == WF_OK) st = wf_synchronize();
  (void)wf_device_get("no-such-device", &bad);
  if (b) wf_buffer_destroy(b, NULL);
  if (a) wf_buffer_destroy(a, NULL);
  if (s) wf_stream_destroy(s);
  wf_status st2 = wf_synchronize();
  return st != WF_OK ? st : st2;
}

static wf_status init_with_log(int level) {
  for (int i = 0; i < 4; i++)
    atomic_store(&log_count[i], 0);
  atomic_store(&log_above, 0);
  atomic_store(&log_wrong_user, 0);
  log_max_level = level;
  wf_shutdown();
  wf_status st = wf_init(&(wf_init_desc){
      .cpu_devices = 4, .log_level = level, .log = count_log, .log_user = &log_user_token});
  if (st == WF_OK && !th_resolve()) st = WF_ERR_DEVICE;
  return st;
}

TEST(log_callback_respects_level) {
  CHECK_OK(init_with_log(WF_LOG_DEBUG));
  CHECK_OK(busy_work());
  int total = 0;
  for (int i = 0; i < 4; i++)
    total += atomic_load(&log_count[i]);
  /* at debug level, starting the runtime and creating devices, streams and buffers says something
   */
  CHECK(total >= 1);
  CHECK_EQ_INT(atomic_load(&log_above), 0);
  CHECK_EQ_INT(atomic_load(&log_wrong_user), 0);

  CHECK_OK(init_with_log(WF_LOG_ERROR));
  CHECK_OK(busy_work());
  CHECK_EQ_INT(atomic_load(&log_above), 0); /* no warning, info or debug message got through */
  CHECK_EQ_INT(atomic_load(&log_wrong_user), 0);

  wf_shutdown();
  CHECK_OK(th_init());
}

TEST(silent_by_default) {
  /* Point stdout and stderr at a file while weft starts without a callback, works and fails. */
  fflush(stdout);
  fflush(stderr);
  FILE *tmp = tmpfile();
  REQUIRE(tmp != NULL);
  int saved_out = dup(1), saved_err = dup(2);
  REQUIRE(saved_out >= 0 && saved_err >= 0);
  dup2(fileno(tmp), 1);
  dup2(fileno(tmp), 2);

  wf_shutdown();
  wf_status st_init = th_init();
  wf_status st_work = st_init == WF_OK ? busy_work() : st_init;
  wf_device *d = NULL;
  wf_status st_bad = wf_device_get("cuda:7", &d);

  fflush(stdout);
  fflush(stderr);
  dup2(saved_out, 1);
  dup2(saved_err, 2);
  close(saved_out);
  close(saved_err);
  fseek(tmp, 0, SEEK_END);
  long printed = ftell(tmp);
  if (printed > 0) {
    char text[512] = {0};
    rewind(tmp);
    size_t got = fread(text, 1, sizeof text - 1, tmp);
    text[got] = 0;
    TH_FAIL("weft printed %ld bytes without a log callback: \"%s\"", printed, text);
  }
  fclose(tmp);
  CHECK_OK(st_init);
  CHECK_OK(st_work);
  CHECK_EQ_INT(st_bad, WF_ERR_DEVICE);
}

/* ---- life cycle --------------------------------------------------------------------------- */

TEST(init_twice_is_invalid) {
  /* the harness started the runtime already */
  CHECK_STATUS(wf_init(NULL), WF_ERR_INVALID);
  CHECK_STATUS(wf_init(&(wf_init_desc){.cpu_devices = 2}), WF_ERR_INVALID);
  CHECK_EQ_INT(wf_device_get("cpu:3", &(wf_device *){NULL}), WF_OK); /* still the first runtime */
}

TEST(lazy_init_with_defaults) {
  wf_shutdown();
  /* any call starts the runtime with defaults: one CPU device */
  int n = wf_device_count();
  int cpus = 0;
  for (int i = 0; i < n; i++)
    cpus += !wf_device_is_cuda(wf_device_at(i));
  CHECK_EQ_INT(cpus, 1);
  CHECK_STATUS(wf_init(NULL), WF_ERR_INVALID); /* the lazy start counts as started */
  wf_shutdown();
  CHECK_OK(th_init());
}

TEST(shutdown_waits_then_init_again) {
  enum { N = 1 << 16 };
  wf_stream *s = NULL;
  wf_buffer *b = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(wf_buffer_create(th_dev0, N * sizeof(float), 0, s, &b));
  tk_slow_fill_args a = {wf_buffer_ptr(b), 2.0f, 30};
  CHECK_OK(wf_launch(&tk_slow_fill, N, &a, sizeof a, s));
  wf_buffer_destroy(b, s); /* stream-ordered: freed after the slow kernel */
  wf_stream_destroy(s);
  wf_shutdown(); /* waits for the kernel and the free */

  for (int round = 0; round < 3; round++) {
    CHECK_OK(th_init());
    CHECK(wf_device_count() >= 4);
    float in[N / 16], out[N / 16];
    for (int i = 0; i < N / 16; i++)
      in[i] = (float)(i * 3 + round);
    CHECK_OK(wf_buffer_create(th_dev0, sizeof in, 0, NULL, &b));
    CHECK_OK(wf_upload(b, 0, in, sizeof in, NULL));
    CHECK_OK(wf_download(out, b, 0, sizeof out));
    CHECK(memcmp(in, out, sizeof in) == 0);
    wf_buffer_destroy(b, NULL);
    wf_shutdown();
  }
  CHECK_OK(th_init());
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(status_str_names_every_status),
      TH_TEST(unknown_device_lists_existing_ones),
      TH_TEST(last_error_is_per_thread),
      TH_TEST(errors_name_the_function_and_invalid_arguments_fail),
      TH_TEST(log_callback_respects_level),
      TH_TEST(silent_by_default),
      TH_TEST(init_twice_is_invalid),
      TH_TEST(lazy_init_with_defaults),
      TH_TEST(shutdown_waits_then_init_again),
  };
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
