/* The known scene of test_scene.h drawn headless and compared with the ray tracer (tolerance
 * TOL of 255 a channel, edges excluded), with its objects where they project: used by
 * test_viewer_render (quads) and test_viewer_large (sprites, compute). Needs gl_pin.h, harness.h
 * and test_scene.h; g_px is the image. CHECK_R: a renderer call that must succeed. */
#ifndef WEFT_VIEWER_KNOWN_SCENE_H
#define WEFT_VIEWER_KNOWN_SCENE_H

#define CHECK_R(e) CHECK_OK_FROM(e, wf_render_last_error)

/* Whether headless GL works here; if not, prints the SKIP line (the program then exits 77). If
 * so, the GL drivers stay loaded until exit (gl_pin.h). */
static bool vt_headless_gl(void) {
  wf_render *probe = NULL;
  if (wf_render_headless_create(8, 8, &probe) == WF_ERR_UNSUPPORTED) {
    printf("SKIP: %s\n", wf_render_last_error());
    return false;
  }
  vt_pin_gl_drivers();
  wf_render_destroy(probe);
  return true;
}

enum { TOL = 3 };
static uint8_t g_px[VT_W * VT_H * 4];

static const uint8_t *px_at(const uint8_t *img, int w, double x, double y) {
  return img + ((size_t)(int)y * (size_t)w + (size_t)(int)x) * 4;
}

/* The known scene against the ray tracer, the spheres drawn as quads (large_min < 0), or every
 * point set the large way (large_min 1): point sprites, or compute (render_splat.c). Same
 * tolerance: sprites and compute cast their rays through the pixel centres from gl_FragCoord
 * instead of an interpolated quad point. */
static void known_scene_with(int large_min, wf_render_large large) {
  wf_render *r = NULL;
  wf_status hs = wf_render_headless_create_desc(
      &(wf_render_desc){.width = VT_W, .height = VT_H, .large_min = large_min, .large = large}, &r);
  if (hs == WF_ERR_UNSUPPORTED)
    SKIP("no headless OpenGL (4.5 for compute): %s", wf_render_last_error());
  CHECK_R(hs);
  vt_scene v;
  vt_scene_build(&v);
  wf_status st = wf_render_draw(r, &v.scene);
  if (st != WF_OK) TH_FAIL("draw: %s", wf_render_last_error());
  st = wf_render_read_rgba(r, g_px, sizeof g_px);
  if (st != WF_OK) TH_FAIL("read: %s", wf_render_last_error());
  printf("  renderer: %s; shaders: %s\n", wf_render_info(r), wf_render_shader_origin(r));
  wf_render_stats rs;
  wf_render_stats_get(r, &rs);
  CHECK_EQ_INT(rs.points, 3);
  CHECK_EQ_INT(rs.triangles, 2);
  CHECK_EQ_INT(rs.colliders, 1);
  CHECK_EQ_INT(rs.gl_errors, 0);
  CHECK(rs.draw_ms > 0.0);
  wf_render_destroy(r);
  if (st != WF_OK) return;

  vt_ref ref;
  vt_ref_init(&ref, &v, VT_W, VT_H);
  vt_report rep;
  vt_compare(&ref, g_px, TOL, &rep);
  printf("  %d pixels compared (plane %d, big %d, quad %d, small %d, poke %d), worst %d at (%d, "
         "%d), %d off by more than %d\n",
         rep.compared, rep.objects[0], rep.objects[1], rep.objects[2], rep.objects[3],
         rep.objects[4], rep.worst, rep.worst_x, rep.worst_y, rep.bad, TOL);
  CHECK_EQ_INT(rep.bad, 0);
  /* every object is visible over a good area (so the comparison is not vacuous) */
  for (int i = 0; i < 5; i++)
    CHECK(rep.objects[i] > 40);
  CHECK(rep.compared > VT_W * VT_H * 8 / 10);

  /* at the projected positions, computed from the camera matrices: */
  double x, y;
  int want[3];
  /* the big sphere is left of centre, green-dominated */
  vt_project(&v, VT_W, VT_H, vt_big, &x, &y);
  CHECK(x < VT_W / 2.0 - 20);
  CHECK_EQ_INT(vt_expect(&ref, (int)x, (int)y, want), VT_BIG);
  const uint8_t *p = px_at(g_px, VT_W, x, y);
  CHECK(p[1] > p[0] + 60 && p[1] > p[2] + 60);
  /* the small sphere in front of the quad occludes it */
  vt_project(&v, VT_W, VT_H, vt_small, &x, &y);
  CHECK_EQ_INT(vt_expect(&ref, (int)x, (int)y, want), VT_SMALL);
  p = px_at(g_px, VT_W, x, y);
  CHECK(p[1] > 100 && p[0] > 100 && p[2] < 60); /* yellow, not red */
  /* the quad, right of centre, red where nothing is in front */
  const float qpt[3] = {2.0f, 0.5f, 0.0f};
  vt_project(&v, VT_W, VT_H, qpt, &x, &y);
  CHECK(x > VT_W / 2.0 + 20);
  CHECK_EQ_INT(vt_expect(&ref, (int)x, (int)y, want), VT_QUAD);
  p = px_at(g_px, VT_W, x, y);
  CHECK(p[0] > p[1] + 80 && p[0] > p[2] + 80);
  /* the sphere behind the quad: its middle pokes through (magenta), its rim is hidden (red) */
  vt_project(&v, VT_W, VT_H, vt_poke, &x, &y);
  CHECK_EQ_INT(vt_expect(&ref, (int)x, (int)y, want), VT_POKE);
  p = px_at(g_px, VT_W, x, y);
  CHECK(p[0] > p[1] + 50 && p[2] > p[1] + 50);
  const float rim[3] = {vt_poke[0] + 0.95f * vt_poke[3], vt_poke[1], 0.0f};
  vt_project(&v, VT_W, VT_H, rim, &x, &y);
  CHECK_EQ_INT(vt_expect(&ref, (int)x, (int)y, want), VT_QUAD);
  p = px_at(g_px, VT_W, x, y);
  CHECK(p[0] > p[1] + 80 && p[0] > p[2] + 80);
}

#endif
