/* What the pictures look like, so they cannot silently break (issue 30, item 1).
 *
 * reference_*: `weft run --render` ($WEFT_CLI, headless through EGL: Mesa's llvmpipe without a
 * GPU) of a bundled scene at 160 x 120 against an image stored in viewer/tests/reference/. The
 * metric: for each pixel d = the largest of its |R - R'|, |G - G'|, |B - B'| (0..255); a picture
 * passes when the mean of d is at most 2 and at most 1% of its pixels have d > 40. Why these: a
 * rebuild with other compiler flags moves the cloth by a few ulps and Mesa versions round the
 * 4x MSAA resolve differently, which changes edge pixels by a few levels and a pixel here or
 * there by more (rerunning here gives mean 0, worst 0); what the test is for changes far more:
 * a lost grid turns the ground's grid lines into background, an object drawn in the wrong colour
 * (the flag orange instead of by speed) or faces gone black move hundreds to thousands of the
 * 19200 pixels by more than 40. WEFT_UPDATE_REFERENCES=1 writes the rendered images over the stored
 * ones (scripts/update_reference_images.sh).
 *
 * overlay_layout_*: the window overlay's layout (wf__overlay_layout, no GL) at 320 x 240 and
 * 1280 x 720 overlay units: every row fits the width, rows do not overlap, the help panel
 * overlaps no row, a long message wraps, and the colour bar stays inside the window.
 *
 * Each case takes about 1.5 s (the render) or well under 1 ms (the layout). */
#include "harness.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "viewer_internal.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

#ifndef WEFT_SOURCE_DIR
#error "WEFT_SOURCE_DIR must name the source tree (scenes/, viewer/tests/reference/)"
#endif

enum { PW = 160, PH = 120 };
static char g_dir[256];

/* Renders scene (scenes/<name>.json) for frames frames and compares the last picture; color_by
 * (NULL: the scene's) sets render.color_by, and the reference is then <name>_<color_by>_WxH. */
static void check_picture_as(const char *name, const char *frames, const char *color_by) {
  const char *cli = getenv("WEFT_CLI");
  if (!cli || !*cli) SKIP("WEFT_CLI is not set (ctest sets it to the weft program)");
  wf_render *r = NULL; /* as weft run --render will: a headless GL context, or skip */
  if (wf_render_headless_create(16, 16, &r) != WF_OK)
    SKIP("no headless GL context: %s", wf_render_last_error());
  wf_render_destroy(r);
  char scene[600], out[600], got[700], ref[700];
  snprintf(scene, sizeof scene, "%s/scenes/%s.json", WEFT_SOURCE_DIR, name);
  char tag[200], color_set[220];
  snprintf(tag, sizeof tag, "%s%s%s", name, color_by ? "_" : "", color_by ? color_by : "");
  snprintf(color_set, sizeof color_set, "render.color_by=%s", color_by ? color_by : "object");
  snprintf(out, sizeof out, "%s/%s", g_dir, tag);
  snprintf(got, sizeof got, "%s/render/frame_000001.png", out);
  snprintf(ref, sizeof ref, "%s/viewer/tests/reference/%s_%dx%d.png", WEFT_SOURCE_DIR, tag, PW, PH);
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 1), dup2(null, 2);
    if (color_by)
      execl(cli, cli, "run", scene, "--frames", frames, "--every", frames, "--render", "--set",
            "render.width=160", "--set", "render.height=120", "--set", color_set, "--out", out,
            "--quiet", (char *)NULL);
    else
      execl(cli, cli, "run", scene, "--frames", frames, "--every", frames, "--render", "--set",
            "render.width=160", "--set", "render.height=120", "--out", out, "--quiet",
            (char *)NULL);
    _exit(127);
  }
  int ws = 0;
  waitpid(pid, &ws, 0);
  if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
    TH_FAIL("weft run %s --render: status %d", name, WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
    return;
  }
  if (getenv("WEFT_UPDATE_REFERENCES") && atoi(getenv("WEFT_UPDATE_REFERENCES")) == 1) {
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", got, ref);
    CHECK(system(cmd) == 0);
    printf("  wrote %s\n", ref);
    return;
  }
  int w, h, c, rw, rh;
  uint8_t *a = stbi_load(got, &w, &h, &c, 3), *b = stbi_load(ref, &rw, &rh, &c, 3);
  if (!a || !b || w != PW || h != PH || rw != PW || rh != PH) {
    TH_FAIL("%s: cannot compare %s (%dx%d) with %s (%s)", name, got, a ? w : 0, a ? h : 0, ref,
            b ? "size" : "missing");
  } else {
    double sum = 0;
    int far = 0, worst = 0;
    for (int i = 0; i < PW * PH; i++) {
      int d = 0;
      for (int k = 0; k < 3; k++) {
        int e = abs((int)a[3 * i + k] - (int)b[3 * i + k]);
        d = e > d ? e : d;
      }
      sum += d, far += d > 40, worst = d > worst ? d : worst;
    }
    double mean = sum / (PW * PH);
    printf("  %s: mean difference %.3f, %d pixels (%.2f%%) above 40, worst %d\n", name, mean, far,
           100.0 * far / (PW * PH), worst);
    CHECK(mean <= 2.0);
    CHECK(far <= PW * PH / 100);
  }
  if (a) stbi_image_free(a);
  if (b) stbi_image_free(b);
}

static void check_picture(const char *name, const char *frames) {
  check_picture_as(name, frames, NULL);
}

/* The drape coloured by strain: the stretch over the sphere's top on the ramp, the bar labelled
 * "0.1 strain" (render.strain_max's default). */
TEST(reference_strain) { check_picture_as("cloth_drape", "4", "strain"); }
/* Particles in a box under a cloth coloured by contact force (N; the cloth in its own colour):
 * the bottom layers carry the weight of those above. */
TEST(reference_contact_force) { check_picture_as("cloth_on_particles", "4", "contact_force"); }

/* The flag: cloth coloured by speed (blue to red), the pole, the ground grid. */
TEST(reference_flag) { check_picture("flag", "6"); }
/* The drape: a cloth over a sphere, two-sided lighting, the grid on the ground plane. */
TEST(reference_cloth_drape) { check_picture("cloth_drape", "4"); }

static bool overlap(const wf__overlay_row *a, const wf__overlay_row *b) {
  return a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h && b->y < a->y + a->h;
}

static void check_layout(float width, float height, int want_message_rows_at_least) {
  static const char help[] = "left drag     orbit\nwheel         zoom\nEsc           quit";
  const char *lines[] = {
      "60 fps   render 1.20 ms   sim 8.00 ms/frame   real time x0.0312   asked x1",
      "frame 120   particles 100000   triangles 20000   colliders 3   colour: speed", NULL,
      "stopped: particles 'sand_block': particle 1303 (global id) moves at 62.2386 m/s at "
      "frame 1, faster than simulation.max_speed 60 m/s (watchdog); frame 0 was the last "
      "healthy one (the time step may be too large for the stiffness)"};
  wf__overlay_row rows[64], hb, bar;
  int n = wf__overlay_layout(lines, 4, help, width, height, rows, 64, &hb, &bar);
  int message_rows = 0, chars = 0;
  for (int i = 0; i < n; i++) {
    CHECK(rows[i].x >= 0 && rows[i].x + rows[i].w <= width);
    CHECK(rows[i].h > 0 && rows[i].len > 0);
    for (int j = 0; j < i; j++)
      CHECK(!overlap(&rows[i], &rows[j]));
    CHECK(!overlap(&rows[i], &hb));
    if (rows[i].source == 3) message_rows++, chars += rows[i].len;
  }
  /* every character of the message is shown but the spaces at the breaks */
  CHECK(chars >= (int)strlen(lines[3]) - message_rows);
  CHECK(message_rows >= want_message_rows_at_least);
  CHECK(hb.x >= 0 && hb.x + hb.w <= width && hb.w > 0);
  /* the bar and its top's label ("12.3 m/s": 8 characters after a 6-unit gap) fit */
  CHECK(bar.x >= 0 && bar.x + bar.w + 6.0f + 8.0f * WF__OVERLAY_CHAR_W <= width);
  CHECK(bar.y + bar.h + WF__OVERLAY_LINE_H <= height);
  if (height >= 240.0f) CHECK(bar.y > rows[n - 1].y + rows[n - 1].h); /* under the rows */
  printf("  %gx%g: %d rows (%d of the message), help at (%g, %g)\n", width, height, n, message_rows,
         hb.x, hb.y);
}

/* 320 units wide: 52 columns, the 230-character message takes 5 rows, the help drops below. */
TEST(overlay_layout_small) { check_layout(320.0f, 240.0f, 5); }
/* 160 units (a 160 x 120 picture's speed bar): the bar shrinks to leave its label room; rows
 * this many reach past it (a picture has none). */
TEST(overlay_layout_tiny) { check_layout(160.0f, 120.0f, 10); }
/* 1280 units wide: 211 columns, the message takes 2 rows, the help sits top right. */
TEST(overlay_layout_large) { check_layout(1280.0f, 720.0f, 2); }

int main(int argc, char **argv) {
  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(g_dir, sizeof g_dir, "%s/weft-test-pictures-XXXXXX", tmp);
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  static const th_test tests[] = {TH_TEST(reference_flag),       TH_TEST(reference_cloth_drape),
                                  TH_TEST(reference_strain),     TH_TEST(reference_contact_force),
                                  TH_TEST(overlay_layout_small), TH_TEST(overlay_layout_tiny),
                                  TH_TEST(overlay_layout_large)};
  int rc = th_main(argc, argv, tests, TH_COUNT(tests));
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
  return rc;
}
