/* `weft run --video` end to end ($WEFT_CLI): the video read back with libavformat has one video
 * stream of the scene's render size (321 x 241 asked: cropped to the even 320 x 240 yuv420p
 * needs), one frame per written frame (frames 0, 5, 10 of 10 with --every 5: 3) at fps / every =
 * 60 / 5 = 12 frames/s, H.264 or MPEG-4 part 2, and no temporary file left beside it; a path in
 * a missing directory and an unknown container exit 2 naming the path, leaving no file; a run
 * stopped by SIGTERM leaves neither the video nor its temporary file.
 * Skips when the headless renderer cannot start (no EGL). */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>

#include "harness.h"

static char g_dir[400];
static const char *g_cli;

/* Runs `$WEFT_CLI run <view scene> <args>` with stderr into g_dir/err.txt; the exit code. */
static int run_weft(const char *args) {
  char cmd[2400];
  snprintf(cmd, sizeof cmd,
           "%s run %s --frames 10 --every 5 --set render.width=321 --set render.height=241 "
           "--quiet %s 2>%s/err.txt",
           g_cli, WEFT_VIEW_SCENE, args, g_dir);
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 255;
}

static char *err_text(void) {
  char p[500];
  snprintf(p, sizeof p, "%s/err.txt", g_dir);
  return th_read_file(p, NULL);
}

TEST(video_frames_and_size) {
  char args[1200], path[600];
  snprintf(path, sizeof path, "%s/run/a.mp4", g_dir);
  snprintf(args, sizeof args, "--out %s/run --video %s", g_dir, path);
  int rc = run_weft(args);
  char *err = err_text();
  if (rc == 1 && err && strstr(err, "cannot render headless")) {
    free(err);
    SKIP("no headless renderer here");
  }
  CHECK_EQ_INT(rc, 0);
  if (rc) fprintf(stderr, "%s\n", err ? err : "");
  free(err);
  AVFormatContext *fmt = NULL;
  REQUIRE(avformat_open_input(&fmt, path, NULL, NULL) == 0);
  CHECK(avformat_find_stream_info(fmt, NULL) >= 0);
  REQUIRE(fmt->nb_streams == 1);
  AVStream *st = fmt->streams[0];
  CHECK(st->codecpar->codec_type == AVMEDIA_TYPE_VIDEO);
  CHECK(st->codecpar->codec_id == AV_CODEC_ID_H264 || st->codecpar->codec_id == AV_CODEC_ID_MPEG4);
  CHECK_EQ_INT(st->codecpar->width, 320);
  CHECK_EQ_INT(st->codecpar->height, 240);
  CHECK_EQ_INT(st->codecpar->format, AV_PIX_FMT_YUV420P);
  CHECK(av_cmp_q(st->avg_frame_rate, (AVRational){12, 1}) == 0);
  AVPacket *pkt = av_packet_alloc();
  int frames = 0;
  while (av_read_frame(fmt, pkt) >= 0) {
    frames += pkt->stream_index == 0;
    av_packet_unref(pkt);
  }
  CHECK_EQ_INT(frames, 3);
  av_packet_free(&pkt);
  avformat_close_input(&fmt);
  char dir[500];
  snprintf(dir, sizeof dir, "%s/run", g_dir);
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));)
    if (strstr(e->d_name, ".tmp")) TH_FAIL("left behind: %s", e->d_name);
  if (d) closedir(d);
}

TEST(bad_paths_exit_2_naming_them) {
  char args[1200];
  snprintf(args, sizeof args, "--out %s/bad --video %s/missing/dir/a.mp4", g_dir, g_dir);
  int rc = run_weft(args);
  char *err = err_text();
  if (rc == 1 && err && strstr(err, "cannot render headless")) {
    free(err);
    SKIP("no headless renderer here");
  }
  CHECK_EQ_INT(rc, 2);
  CHECK(err && strstr(err, "missing/dir/a.mp4"));
  free(err);
  snprintf(args, sizeof args, "--out %s/bad --video %s/bad/a.notavideo", g_dir, g_dir);
  CHECK_EQ_INT(run_weft(args), 2);
  err = err_text();
  CHECK(err && strstr(err, "a.notavideo") && strstr(err, "container"));
  free(err);
  char p[600];
  struct stat sb;
  snprintf(p, sizeof p, "%s/bad/a.notavideo", g_dir);
  CHECK(stat(p, &sb) != 0);
}

/* A run stopped by SIGTERM (exit 143 after its checkpoint) leaves no video and no temporary. */
TEST(interrupted_run_leaves_no_video) {
  char cmd[2400];
  snprintf(cmd, sizeof cmd,
           "%s run %s --frames 100000 --quiet --out %s/int --video %s/int/a.mp4 2>%s/err.txt & "
           "p=$!; sleep 1.5; kill -TERM $p; wait $p",
           g_cli, WEFT_VIEW_SCENE, g_dir, g_dir, g_dir);
  int rc = system(cmd);
  rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : 255;
  char *err = err_text();
  if (rc == 1 && err && strstr(err, "cannot render headless")) {
    free(err);
    SKIP("no headless renderer here");
  }
  free(err);
  CHECK_EQ_INT(rc, 143);
  char dir[500];
  snprintf(dir, sizeof dir, "%s/int", g_dir);
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));)
    if (strstr(e->d_name, ".mp4")) TH_FAIL("left behind: %s", e->d_name);
  if (d) closedir(d);
}

int main(int argc, char **argv) {
  g_cli = getenv("WEFT_CLI");
  if (!g_cli) {
    printf("SKIP: WEFT_CLI is not set (ctest sets it to the weft program)\n");
    return 77;
  }
  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(g_dir, sizeof g_dir, "%s/weft-test-video-XXXXXX", tmp);
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  th_test tests[] = {TH_TEST(video_frames_and_size), TH_TEST(bad_paths_exit_2_naming_them),
                     TH_TEST(interrupted_run_leaves_no_video)};
  int rc = th_main(argc, argv, tests, TH_COUNT(tests));
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
  return rc;
}
