/* `weft run` and `weft batch` with stop rules and checked resumes, end to end (the program in
 * $WEFT_CLI, on the CPU):
 *  - a "time" rule ends `weft run` after its exact frame: exit 0, the stop named on stderr, in
 *    run.json and on stats.csv's last line, the last frame's outputs and checkpoint written;
 *  - `weft batch` lists each job's stop rule and frame in summary.json and summary.csv;
 *  - --resume of a checkpoint whose scene's physics changed exits 2 naming every difference (key
 *    path, both values) and writes nothing; --resume-with-changes continues and records them in
 *    resume_log.txt and run.json; an unchanged scene resumes with neither.
 * Each case runs a few small runs of a 27-particle scene: well under 3 s.
 */
#define _XOPEN_SOURCE 700 /* nftw (tmp_root.h) */
#include "harness.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <sys/wait.h>

#include "../engine/tmp_root.h"

static const char *cli;

/* 27 grains falling onto a box floor at 60 fps, with two stop rules. */
static const char scene_text[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 8, \"frames\": 40, \"devices\": \"cpu\",\n"
    "  \"stop_when\": [{\"kinetic_energy_below\": 1e-12, \"frames\": 2}, {\"time\": 0.1}]},\n"
    " \"materials\": [{\"name\": \"sand\", \"friction\": 0.5}],\n"
    " \"particles\": [{\"name\": \"grains\", \"center\": [0, 0.3, 0], \"half_extents\": [0.15, "
    "0.15, 0.15],\n"
    "   \"radius\": 0.03, \"spacing\": 0.1, \"material\": \"sand\"}],\n"
    " \"colliders\": [{\"name\": \"floor\", \"type\": \"box\", \"center\": [0, -0.5, 0],\n"
    "   \"half_extents\": [2, 0.5, 2]}],\n"
    " \"outputs\": {\"every\": 4, \"formats\": [\"csv\", \"ply\"]}}\n";

/* Runs `weft ARGS` with stdout and stderr into tmp_root/out.txt and err.txt; the exit code. */
static int run(const char *args) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' %s >'%s/out.txt' 2>'%s/err.txt'", cli, args, tmp_root, tmp_root);
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static char *read_in(const char *dir, const char *name) {
  char p[1200];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  char *t = th_read_file(p, NULL);
  return t ? t : calloc(1, 1);
}

static cJSON *json_in(const char *dir, const char *name) {
  char *t = read_in(dir, name);
  cJSON *j = cJSON_Parse(t);
  free(t);
  return j;
}

static const cJSON *at(const cJSON *o, const char *key) {
  return cJSON_GetObjectItemCaseSensitive(o, key);
}

static int entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

static void write_scene(char *path, size_t n) {
  snprintf(path, n, "%s/grains.json", tmp_root);
  if (!th_write_file(path, scene_text)) TH_FAIL("cannot write %s", path);
}

/* The time rule (index 1) ends the run after frame 6 (6 / 60 = 0.1 s exactly): the energy rule
 * cannot hold while the grains fall. */
TEST(run_stops_by_rule) {
  char scene[600], out[600], args[2048];
  write_scene(scene, sizeof scene);
  snprintf(out, sizeof out, "%s/stop", tmp_root);
  snprintf(args, sizeof args, "run '%s' --out '%s' --quiet", scene, out);
  int rc = run(args);
  char *err = read_in(tmp_root, "err.txt");
  if (rc != 0) TH_FAIL("exit %d: %s", rc, err);
  CHECK(strstr(err, "stopped: simulation.stop_when[1] (time 0.1 s) met at frame 6"));
  free(err);
  cJSON *sum = json_in(out, "run.json");
  REQUIRE(sum);
  const cJSON *sb = at(sum, "stopped_by");
  CHECK(cJSON_IsString(at(sb, "rule")) &&
        strcmp(at(sb, "rule")->valuestring, "simulation.stop_when[1]") == 0);
  CHECK(cJSON_IsString(at(sb, "kind")) && strcmp(at(sb, "kind")->valuestring, "time") == 0);
  CHECK(cJSON_IsNumber(at(sb, "frame")) && at(sb, "frame")->valuedouble == 6);
  CHECK(cJSON_IsNumber(at(sum, "last_frame")) && at(sum, "last_frame")->valuedouble == 6);
  CHECK(cJSON_IsNull(at(sum, "resume")));
  cJSON_Delete(sum);
  /* the stop frame is the last: its row, its files and its checkpoint, then the stop line */
  char *csv = read_in(out, "stats.csv");
  CHECK(strstr(csv, "\n4,") && strstr(csv, "\n6,") && !strstr(csv, "\n8,"));
  const char *last = strstr(csv, "# stopped: simulation.stop_when[1]");
  CHECK(last && strchr(last, '\n') && strchr(last, '\n')[1] == '\0');
  free(csv);
  char p[1200];
  snprintf(p, sizeof p, "%s/grains_000006.ply", out);
  CHECK(access(p, R_OK) == 0);
  snprintf(p, sizeof p, "%s/checkpoint_000006.wfck", out);
  CHECK(access(p, R_OK) == 0);
}

TEST(batch_reports_stop_rules) {
  char scene[600], out[600], args[2048];
  write_scene(scene, sizeof scene);
  snprintf(out, sizeof out, "%s/batch", tmp_root);
  snprintf(args, sizeof args,
           "batch '%s' --sweep 'simulation.stop_when=[{\"time\":0.05}],[{\"time\":0.2}],[]' "
           "--frames 8 --out '%s' --device cpu --quiet",
           scene, out);
  int rc = run(args);
  if (rc != 0) {
    char *err = read_in(tmp_root, "err.txt");
    TH_FAIL("exit %d: %s", rc, err);
    free(err);
  }
  cJSON *sum = json_in(out, "summary.json");
  REQUIRE(sum);
  const cJSON *jobs = at(sum, "jobs");
  REQUIRE(cJSON_GetArraySize(jobs) == 3);
  /* 0.05 s: frame 3; 0.2 s: past --frames 8, so no stop; none: runs to 8 */
  const double frames[3] = {3, 8, 8};
  for (int i = 0; i < 3; i++) {
    const cJSON *j = cJSON_GetArrayItem(jobs, i), *sb = at(j, "stopped_by");
    CHECK(cJSON_IsNumber(at(j, "frames_run")) && at(j, "frames_run")->valuedouble == frames[i]);
    if (i == 0) {
      CHECK(cJSON_IsNumber(at(sb, "frame")) && at(sb, "frame")->valuedouble == 3);
      CHECK(cJSON_IsString(at(sb, "rule")) &&
            strcmp(at(sb, "rule")->valuestring, "simulation.stop_when[0]") == 0);
    } else {
      CHECK(cJSON_IsNull(sb));
    }
  }
  cJSON_Delete(sum);
  char *csv = read_in(out, "summary.csv");
  CHECK(strstr(csv, ",stopped_by,stop_frame,") && strstr(csv, ",simulation.stop_when[0],3,"));
  free(csv);
  char *table = read_in(tmp_root, "out.txt");
  CHECK(strstr(table, "time at frame 3"));
  free(table);
}

TEST(resume_checks_the_scene) {
  char scene[600], out[600], args[4096];
  write_scene(scene, sizeof scene);
  snprintf(out, sizeof out, "%s/resume", tmp_root);
  snprintf(args, sizeof args, "run '%s' --out '%s' --frames 3 --quiet", scene, out);
  REQUIRE(run(args) == 0);
  int before = entries(out);
  char *summary = read_in(out, "run.json");

  /* three physics changes and one that is not (outputs.every): exit 2, each named, no file */
  snprintf(args, sizeof args,
           "run '%s' --out '%s' --frames 5 --quiet --resume '%s/checkpoint_000003.wfck' "
           "--set 'simulation.gravity=[0,-5,0]' --set 'materials[0].friction=0.9' "
           "--set 'colliders[0].center=[0,-0.6,0]' --set outputs.every=1",
           scene, out, out);
  CHECK_EQ_INT(run(args), 2);
  char *err = read_in(tmp_root, "err.txt");
  CHECK(strstr(err, "in 3 values that change the physics"));
  CHECK(strstr(err, "simulation.gravity[1]: -9.81 in the checkpoint, -5 in this scene"));
  CHECK(strstr(err, "materials[0].friction: 0.5 in the checkpoint, 0.9 in this scene"));
  CHECK(strstr(err, "colliders[0].center[1]: -0.5 in the checkpoint, -0.6 in this scene"));
  CHECK(strstr(err, "--resume-with-changes") && !strstr(err, "outputs"));
  free(err);
  CHECK_EQ_INT(entries(out), before);
  char *summary2 = read_in(out, "run.json");
  CHECK(strcmp(summary, summary2) == 0); /* not rewritten */
  free(summary2);
  free(summary);

  /* accepted: it continues, and the change is recorded */
  snprintf(args, sizeof args,
           "run '%s' --out '%s' --frames 5 --quiet --resume-with-changes "
           "'%s/checkpoint_000003.wfck' --set 'simulation.gravity=[0,-5,0]'",
           scene, out, out);
  CHECK_EQ_INT(run(args), 0);
  err = read_in(tmp_root, "err.txt");
  CHECK(strstr(err, "warning: the scene differs") && strstr(err, "simulation.gravity[1]"));
  free(err);
  char *log = read_in(out, "resume_log.txt");
  CHECK(strstr(log, "resumed at frame 3") &&
        strstr(log, "simulation.gravity[1]: -9.81 in the checkpoint, -5 in this run"));
  free(log);
  cJSON *sum = json_in(out, "run.json");
  const cJSON *r = at(sum, "resume"), *ch = cJSON_GetArrayItem(at(r, "scene_changes"), 0);
  CHECK(cJSON_IsNumber(at(r, "frame")) && at(r, "frame")->valuedouble == 3);
  CHECK(cJSON_IsTrue(at(r, "scene_checked")));
  CHECK(cJSON_IsString(at(ch, "path")) &&
        strcmp(at(ch, "path")->valuestring, "simulation.gravity[1]") == 0);
  CHECK(cJSON_IsNumber(at(sum, "last_frame")) && at(sum, "last_frame")->valuedouble == 5);
  cJSON_Delete(sum);

  /* unchanged: resumes without a word and without a log entry */
  char p[1200];
  snprintf(p, sizeof p, "%s/resume_log.txt", out);
  remove(p);
  snprintf(args, sizeof args,
           "run '%s' --out '%s' --frames 5 --quiet --resume '%s/checkpoint_000003.wfck'", scene,
           out, out);
  CHECK_EQ_INT(run(args), 0);
  CHECK(access(p, F_OK) != 0);
}

int main(int argc, char **argv) {
  cli = getenv("WEFT_CLI");
  if (!cli || !*cli) {
    printf("SKIP: WEFT_CLI is not set\n");
    return 77;
  }
  if (!tmp_root_make("weft_cli_stop")) return 1;
  static const th_test tests[] = {TH_TEST(run_stops_by_rule), TH_TEST(batch_reports_stop_rules),
                                  TH_TEST(resume_checks_the_scene)};
  int rc = th_main(argc, argv, tests, TH_COUNT(tests));
  rm_rf(tmp_root);
  return rc;
}
