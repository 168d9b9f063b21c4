/* `weft run` stopping early, and `weft soak`, end to end (the program named by $WEFT_CLI, CPU):
 *  - the blowup scene: exit 1, a message naming the object, particle, frame and quantity, and a
 *    last-good checkpoint that loads (into a world of the same scene) at the frame before, with a
 *    finite state;
 *  - SIGTERM during a long run: exit 143 after writing checkpoint_<frame>.wfck; resuming from it
 *    to frame F gives, byte for byte, the PLY and checkpoint of an uninterrupted run to F;
 *  - `weft soak` of the mixed scene for ~2000 substeps reports flat memory.
 */
#include "harness.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "weft/weft.h"

static char tmp[512];
static const char *cli;

static int same_file(const char *a, const char *b) {
  size_t la, lb;
  char *x = th_read_file(a, &la), *y = th_read_file(b, &lb);
  int same = x && y && la == lb && memcmp(x, y, la) == 0;
  if (!same) fprintf(stderr, "  %s and %s differ (%s)\n", a, b, x && y ? "content" : "missing");
  free(x), free(y);
  return same;
}

/* Runs `weft ARGS` with stdout/stderr into tmp/out.txt and tmp/err.txt; returns the exit code. */
static int run(const char *args) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' %s >'%s/out.txt' 2>'%s/err.txt'", cli, args, tmp, tmp);
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static char *out_file(const char *name) {
  char p[700];
  snprintf(p, sizeof p, "%s/%s", tmp, name);
  char *t = th_read_file(p, NULL);
  return t ? t : calloc(1, 1);
}

TEST(blowup_writes_the_last_good_checkpoint) {
  char args[2048];
  snprintf(args, sizeof args, "run '%s/tests/scenes/blowup.json' --out '%s/blowup' --quiet",
           WEFT_SOURCE_DIR, tmp);
  CHECK_EQ_INT(run(args), 1);
  char *err = out_file("err.txt");
  printf("  %s", err);
  CHECK(strstr(err, "stopped: particles 'grains': particle ") != NULL);
  CHECK(strstr(err, "(global id) moves at") != NULL);
  CHECK(strstr(err, "faster than simulation.max_speed 20 m/s") != NULL);
  long bad = -1, good = -1;
  const char *at = strstr(err, " at frame ");
  if (at) bad = strtol(at + 10, NULL, 10);
  const char *lg = strstr(err, "the last healthy frame, ");
  if (lg) good = strtol(lg + 24, NULL, 10);
  free(err);
  CHECK(bad > 1);
  CHECK_EQ_INT(good, bad - 1);
  char path[1024];
  snprintf(path, sizeof path, "%s/blowup/checkpoint_last_good_%06ld.wfck", tmp, good);
  CHECK(access(path, R_OK) == 0);
  /* it loads into a world of the same scene, at that frame, with a finite state */
  wf_scene *sc = NULL;
  CHECK_OK(wf_scene_load(WEFT_SOURCE_DIR "/tests/scenes/blowup.json", NULL, &sc));
  wf_world *w = NULL;
  CHECK_OK(wf_world_create(sc, NULL, &w));
  wf_scene_destroy(sc);
  CHECK_OK(wf_world_load_checkpoint(w, path));
  CHECK_EQ_INT(wf_world_frame(w), good);
  for (int i = 0; i < wf_world_object_count(w); i++) {
    wf_world_object o;
    CHECK_OK(wf_world_object_get(w, i, &o));
    float(*p)[4] = malloc((size_t)o.point_count * 16), (*v)[4] = malloc((size_t)o.point_count * 16);
    REQUIRE(p && v);
    CHECK_OK(wf_world_object_download(w, i, p, v));
    for (uint32_t j = 0; j < o.point_count; j++)
      for (int k = 0; k < 4; k++)
        if (!isfinite(p[j][k]) || !isfinite(v[j][k])) {
          TH_FAIL("object %d point %u is not finite in the last-good checkpoint", i, j);
          j = o.point_count, k = 4;
        }
    free(p), free(v);
  }
  CHECK_OK(wf_world_check(w));
  wf_world_destroy(w);
}

static const char long_scene[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 8, \"frames\": 1000000, \"devices\": \"cpu\"},\n"
    " \"particles\": [{\"name\": \"grains\", \"center\": [0, 0.3, 0],\n"
    "   \"half_extents\": [0.15, 0.15, 0.15], \"radius\": 0.03, \"spacing\": 0.1,\n"
    "   \"jitter\": 0.001, \"seed\": 2}],\n"
    " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\"}],\n"
    " \"cloths\": [{\"name\": \"sheet\", \"grid\": {\"size\": [0.4, 0.4], \"resolution\": [4, "
    "4]},\n"
    "   \"center\": [0, 1.2, 0], \"integrator\": \"xpbd\", \"pins\": [\"top\"]}],\n"
    " \"outputs\": {\"every\": 20, \"formats\": [\"ply\"]}}\n";

TEST(sigterm_checkpoint_resumes_bitwise) {
  char scene[600], dir[600], err[700];
  snprintf(scene, sizeof scene, "%s/long.json", tmp);
  snprintf(dir, sizeof dir, "%s/long", tmp);
  snprintf(err, sizeof err, "%s/long_err.txt", tmp);
  FILE *f = fopen(scene, "w");
  REQUIRE(f);
  fputs(long_scene, f);
  fclose(f);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (!freopen(err, "w", stderr) || !freopen("/dev/null", "w", stdout)) _exit(127);
    execl(cli, cli, "run", scene, "--out", dir, "--quiet", (char *)NULL);
    _exit(127);
  }
  /* wait until it is running: the first output file */
  char first[700];
  snprintf(first, sizeof first, "%s/grains_000020.ply", dir);
  double t0 = th_now_ms();
  while (access(first, R_OK) != 0 && th_now_ms() - t0 < 25000)
    th_sleep_ms(10);
  CHECK(access(first, R_OK) == 0);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK_EQ_INT(WEXITSTATUS(status), 143);
  char *text = th_read_file(err, NULL);
  REQUIRE(text);
  printf("  %s", text);
  long k = -1;
  const char *at = strstr(text, "interrupted by SIGTERM after frame ");
  if (at) k = strtol(at + 35, NULL, 10);
  CHECK(strstr(text, "checkpoint written to") != NULL);
  free(text);
  REQUIRE(k >= 20);
  char ck[800];
  snprintf(ck, sizeof ck, "%s/checkpoint_%06ld.wfck", dir, k);
  REQUIRE(access(ck, R_OK) == 0);
  /* resume to F and compare with an uninterrupted run to F */
  long F = k + 7;
  char args[4096];
  snprintf(args, sizeof args, "run '%s' --resume '%s' --frames %ld --out '%s/resumed' --quiet",
           scene, ck, F, tmp);
  CHECK_EQ_INT(run(args), 0);
  snprintf(args, sizeof args, "run '%s' --frames %ld --out '%s/straight' --quiet", scene, F, tmp);
  CHECK_EQ_INT(run(args), 0);
  const char *files[] = {"checkpoint_%06ld.wfck", "grains_%06ld.ply", "sheet_%06ld.ply"};
  for (int i = 0; i < 3; i++) {
    char name[64], a[900], b[900];
    snprintf(name, sizeof name, files[i], F);
    snprintf(a, sizeof a, "%s/resumed/%s", tmp, name);
    snprintf(b, sizeof b, "%s/straight/%s", tmp, name);
    CHECK(same_file(a, b));
  }
}

TEST(soak_reports_flat_memory) {
  char args[2048];
  snprintf(args, sizeof args,
           "soak '%s/scenes/cloth_on_particles.json' --substeps 2000 --reports 4 --device cpu "
           "--set 'particles[0].half_extents=[0.3,0.04,0.3]' --set "
           "'cloths[0].grid.resolution=[16,16]'",
           WEFT_SOURCE_DIR);
  int rc = run(args);
  char *out = out_file("out.txt"), *err = out_file("err.txt");
  printf("%s%s", out, err);
  CHECK_EQ_INT(rc, 0);
  CHECK(strstr(out, "weft soak: start") != NULL);
  CHECK(strstr(out, "weft soak: end") != NULL);
  CHECK(strstr(out, "host RSS") != NULL && strstr(out, "weft holds") != NULL);
  CHECK(strstr(out, "memory flat") != NULL);
  CHECK(strstr(out, "(substep 2016)") != NULL); /* 42 frames of 48 substeps */
  free(out), free(err);
}

int main(int argc, char **argv) {
  cli = getenv("WEFT_CLI");
  if (!cli) {
    printf("SKIP: WEFT_CLI is not set (ctest sets it to the weft program)\n");
    return 77;
  }
  const char *t = getenv("TMPDIR");
  snprintf(tmp, sizeof tmp, "%s/weft_guard_XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(tmp)) return 1;
  static const th_test tests[] = {TH_TEST(blowup_writes_the_last_good_checkpoint),
                                  TH_TEST(sigterm_checkpoint_resumes_bitwise),
                                  TH_TEST(soak_reports_flat_memory)};
  int rc = th_main(argc, argv, tests, TH_COUNT(tests));
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (rc == 0 && system(cmd) != 0) rc = 1;
  return rc;
}
