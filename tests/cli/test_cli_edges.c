/* The command line's rough edges, filed off (issue 30, item 6), end to end through the program
 * named by $WEFT_CLI on the CPU backend: `--opt=value` everywhere, one-line did-you-mean
 * messages, the closing line of a run, an emitter too large to count, an unknown device (exit 2)
 * and a particle flung out of the grid's range (exit 1 with a last-good checkpoint).
 *
 * Each test is its own ctest entry and works on tiny scenes written to a mkdtemp directory;
 * each takes well under a second. */
#include "harness.h"

#include "cli/cli_proc.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char tmp[512];
static const char *cli;

static int exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

static void test_dir(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", tmp, name);
  mkdir(out, 0777);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f) fputs(text, f), fclose(f);
}

/* Runs `weft ARGS...` (NULL-terminated) in dir, stdout and stderr into files of dir (cli_proc.h);
 * returns its exit code, or -1 when it died or took more than 60 s. */
static int cli_run(const char *dir, const char *const *args) {
  return cli_wait(cli_spawn_in(cli, dir, CLI_CWD_DIR, args), 60);
}

#define CLI(dir, ...) cli_run(dir, (const char *const[]){__VA_ARGS__, NULL})

static char *stderr_of(const char *dir) {
  char p[700];
  snprintf(p, sizeof p, "%s/stderr.txt", dir);
  char *t = th_read_file(p, NULL);
  return t ? t : calloc(1, 1);
}

static int lines_of(const char *text) {
  int n = 0;
  for (const char *p = text; *p; p++)
    n += *p == '\n';
  return n;
}

/* 8 resting particles on a ground plane: a scene that runs in milliseconds. */
static const char *tiny_scene =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 8, \"frames\": 4},\n"
    " \"materials\": [{\"name\": \"m\", \"stiffness\": 1000}],\n"
    " \"particles\": [{\"name\": \"p\", \"shape\": \"box\", \"center\": [0, 0.5, 0],\n"
    "   \"half_extents\": [0.02, 0.02, 0.02], \"radius\": 0.01, \"material\": \"m\"}],\n"
    " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\"}],\n"
    " \"outputs\": {\"dir\": \"out\", \"every\": 1, \"formats\": [\"csv\"]}}\n";

/* --frames=2 and --out=DIR are --frames 2 and --out DIR; --set=a.b=V splits at the first '='. */
TEST(options_with_equals) {
  char dir[600], scene[700];
  test_dir(dir, sizeof dir, "equals");
  snprintf(scene, sizeof scene, "%s/tiny.json", dir);
  write_text(scene, tiny_scene);
  CHECK_EQ_INT(CLI(dir, "run", "tiny.json", "--frames=2", "--out=o", "--every=2",
                   "--set=simulation.substeps=4", "--quiet"),
               0);
  CHECK(exists(strcat(strcpy(scene, dir), "/o/stats.csv")));
  char *run_json = th_read_file(strcat(strcpy(scene, dir), "/o/run.json"), NULL);
  CHECK(run_json && strstr(run_json, "\"last_frame\":\t2,"));
  free(run_json);
  char *err = stderr_of(dir); /* the stability warning names the substeps --set= gave */
  CHECK(strstr(err, "4 substeps a frame") != NULL);
  free(err);
  CHECK_EQ_INT(CLI(dir, "validate", "tiny.json", "--frames=x"), 2); /* validate has no --frames */
}

/* A mistyped command or option: one line with the nearest name, --help for more, status 2. */
TEST(did_you_mean) {
  char dir[600];
  test_dir(dir, sizeof dir, "mean");
  struct {
    const char *args[5], *want; /* NULL-terminated */
  } cases[] = {
      {{"runn", "x.json"}, "unknown command 'runn'; did you mean 'run'?"},
      {{"valdiate", "x.json"}, "did you mean 'validate'?"},
      {{"run", "x.json", "--frmaes", "2"}, "unknown option '--frmaes'; did you mean '--frames'?"},
      {{"run", "x.json", "--out"}, "--out needs a value"},
      {{"view", "x.json", "--devcie", "cpu"}, "did you mean '--device'?"},
      {{"validate", "--prnit", "x.json"}, "did you mean '--print'?"},
      {{"batch", "--jbos", "2", "x.json"}, "did you mean '--jobs'?"},
      {{"info", "--jsno"}, "did you mean '--json'?"},
      {{"bench", "partciles"}, "did you mean 'particles'?"},
      {{"--verison"}, "did you mean '--version'?"},
      {{"run", "x.json", "--zzzzzz", "1"}, "unknown option '--zzzzzz' (weft run --help"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int rc = cli_run(dir, cases[c].args);
    char *err = stderr_of(dir);
    if (rc != 2 || !strstr(err, cases[c].want) || lines_of(err) != 1 || strstr(err, "usage:"))
      TH_FAIL("weft %s %s: status %d, stderr:\n%s  (want one line with \"%s\", status 2)",
              cases[c].args[0], cases[c].args[1] ? cases[c].args[1] : "", rc, err, cases[c].want);
    free(err);
  }
}

/* The closing line names the frames stepped, the frames/s, what was written and where. The tiny
 * scene runs 4 frames with every 1: frames 0..4 are written (5), and one checkpoint after the
 * last frame (outputs.checkpoint_every 0). */
TEST(closing_line) {
  char dir[600], scene[700];
  test_dir(dir, sizeof dir, "closing");
  snprintf(scene, sizeof scene, "%s/tiny.json", dir);
  write_text(scene, tiny_scene);
  CHECK_EQ_INT(CLI(dir, "run", "tiny.json", "--out", "o1"), 0);
  char *err = stderr_of(dir);
  const char *done = strstr(err, "weft run: done: 4 frames stepped in ");
  CHECK(done != NULL);
  CHECK(done && strstr(done, "frames/s); wrote 5 frames (stats.csv rows), 1 checkpoint to o1/\n"));
  free(err);
  CHECK_EQ_INT(CLI(dir, "run", "tiny.json", "--out", "o2", "--quiet"), 0);
  err = stderr_of(dir);
  CHECK(strstr(err, "done:") == NULL); /* --quiet: nothing but warnings and results */
  free(err);
}

/* A box of half extent 10^6 m at spacing 2 * 0.001 m: floor(2e6 / 0.002) = 10^9 cells per axis,
 * 10^27 particles, far beyond 64 bits: the message gives that estimate, not a wrapped count. */
TEST(emitter_too_large) {
  char dir[600], scene[700];
  test_dir(dir, sizeof dir, "huge");
  snprintf(scene, sizeof scene, "%s/huge.json", dir);
  write_text(scene, "{\"simulation\": {\"frames\": 1},\n"
                    " \"particles\": [{\"name\": \"ocean\", \"shape\": \"box\",\n"
                    "   \"half_extents\": [1e6, 1e6, 1e6], \"radius\": 0.001}]}\n");
  CHECK_EQ_INT(CLI(dir, "validate", "huge.json"), 2);
  char *err = stderr_of(dir);
  CHECK(strstr(err, "about 1e+27 particles: more than the 2^30") != NULL);
  CHECK(strstr(err, "18446744073709551615") == NULL);
  free(err);
}

/* docs/cli.md: an unknown device is bad input, status 2, before anything runs. */
TEST(unknown_device) {
  char dir[600], scene[700];
  test_dir(dir, sizeof dir, "device");
  snprintf(scene, sizeof scene, "%s/tiny.json", dir);
  write_text(scene, tiny_scene);
  const char *bad[] = {"cpu:99", "gpu", "cpu:0,nope"};
  for (int i = 0; i < 3; i++) {
    CHECK_EQ_INT(CLI(dir, "run", "tiny.json", "--device", bad[i], "--out", "o"), 2);
    char *err = stderr_of(dir);
    CHECK(strstr(err, "no device") != NULL);
    free(err);
  }
  CHECK(!exists(strcat(strcpy(scene, dir), "/o/stats.csv"))); /* nothing ran */
}

/* A particle shot at 10^12 m/s crosses 10^12 / 120 m = 8e9 m in the first substep (dt = 1/120 s),
 * beyond the grid's 2^30 cells of 2 * 0.01 m (2.1e7 m): the solver stops the run in frame 1, and
 * the run writes checkpoint_last_good_* as the health check's stops do. */
TEST(flung_particle_writes_last_good) {
  char dir[600], scene[700];
  test_dir(dir, sizeof dir, "flung");
  snprintf(scene, sizeof scene, "%s/fling.json", dir);
  write_text(scene, "{\"simulation\": {\"fps\": 60, \"substeps\": 2, \"frames\": 5},\n"
                    " \"materials\": [{\"name\": \"m\", \"stiffness\": 1000}],\n"
                    " \"particles\": [{\"name\": \"shot\", \"shape\": \"box\",\n"
                    "   \"half_extents\": [0.01, 0.01, 0.01], \"radius\": 0.01,\n"
                    "   \"velocity\": [1e12, 0, 0], \"material\": \"m\"}],\n"
                    " \"outputs\": {\"dir\": \"out\", \"every\": 1}}\n");
  CHECK_EQ_INT(CLI(dir, "run", "fling.json"), 1);
  char *err = stderr_of(dir);
  CHECK(strstr(err, "left the grid's range") != NULL);
  CHECK(strstr(err, "checkpoint_last_good_") != NULL);
  free(err);
  char p0[800], p1[800];
  snprintf(p0, sizeof p0, "%s/out/checkpoint_last_good_000000.wfck", dir);
  snprintf(p1, sizeof p1, "%s/out/checkpoint_last_good_000001.wfck", dir);
  CHECK(exists(p0) || exists(p1));
}

int main(int argc, char **argv) {
  cli = getenv("WEFT_CLI");
  if (!cli || !*cli) {
    printf("SKIP: WEFT_CLI is not set (ctest sets it to the weft program)\n");
    return 77;
  }
  const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(tmp, sizeof tmp, "%s/weft_test_cli_edges_XXXXXX", base);
  if (!mkdtemp(tmp)) {
    perror("mkdtemp");
    return 1;
  }
  static const th_test tests[] = {
      TH_TEST(options_with_equals), TH_TEST(did_you_mean),
      TH_TEST(closing_line),        TH_TEST(emitter_too_large),
      TH_TEST(unknown_device),      TH_TEST(flung_particle_writes_last_good)};
  int rc = th_main(argc, argv, tests, TH_COUNT(tests));
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
  return rc;
}
