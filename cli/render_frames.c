/* Pictures of a world (render_frames.h): the scene's fixed parts (camera, lights, colliders,
 * colours) converted once into a wf_render_scene, the objects' positions filled in per frame; and
 * `weft run --render`, which draws frames headless through the same renderer as the viewer.
 *
 * Invariants: object i keeps the colour wf_cli_palette[i % N] in every picture, whichever program
 * draws it, so `weft view` and `weft run --render` of one frame give the same image. Positions are
 * float4 rows (xyz + radius for particles, xyz + inverse mass for cloth), which the renderer reads
 * directly (points: xyzr; meshes: stride 4); only speeds are computed here. Without the viewer
 * (WEFT_VIEWER=OFF) only the --render entry points exist, and they say it is not built.
 */
#define _POSIX_C_SOURCE 200809L
#include "render_frames.h"
#include "render_values.h"
#include "video.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef WEFT_HAVE_VIEWER

const float wf_cli_palette[WF_CLI_PALETTE_N][3] = {
    {0.90f, 0.55f, 0.15f}, /* orange */
    {0.25f, 0.55f, 0.90f}, /* blue */
    {0.35f, 0.75f, 0.35f}, /* green */
    {0.85f, 0.30f, 0.35f}, /* red */
    {0.65f, 0.45f, 0.85f}, /* violet */
    {0.20f, 0.75f, 0.75f}, /* teal */
};

typedef struct frame_set {
  wf_render_points *points;
  wf_render_mesh *meshes;
  float **speed; /* per object: point_count speeds (particles with velocities) */
  float **value; /* per object: strains (cloth) or contact forces (particles), render_values.h */
} frame_set;

struct wf_cli_frames {
  wf_render_scene base; /* camera, lights, colliders, background, colour mode */
  wf_render_collider *colliders;
  int n_objects, n_points, n_meshes;
  wf_world_object *objects;
  int n_sets;
  frame_set *sets;
  double dt;             /* simulated seconds a frame */
  float (**prev)[4];     /* per object: positions of the frame filled before (for speeds) */
  int64_t *prev_frame;   /* its frame; -1: none */
  wf_cli_values *values; /* strain and contact force (render_values.h) */
  bool forces;           /* compute the contact forces every frame (see wf_cli_frames_create) */
  float planes[4 * 64];  /* the plane colliders: unit normal, offset */
  int n_planes;
};

static void d3(float *dst, const double *src) {
  for (int k = 0; k < 3; k++)
    dst[k] = (float)src[k];
}

static bool default_camera(const wf_scene_camera *c) {
  static const double pos[3] = {0, 1.5, 4}, target[3] = {0, 0.5, 0}, up[3] = {0, 1, 0};
  return memcmp(c->position, pos, sizeof pos) == 0 &&
         memcmp(c->target, target, sizeof target) == 0 && memcmp(c->up, up, sizeof up) == 0 &&
         c->fov_deg == 45.0;
}

static void grow(double lo[3], double hi[3], const double p[3], double r) {
  for (int k = 0; k < 3; k++) {
    lo[k] = fmin(lo[k], p[k] - r);
    hi[k] = fmax(hi[k], p[k] + r);
  }
}

/* Bounds of the objects' current positions and of the bounded colliders; false when empty. */
static bool scene_bounds(const wf_scene *sc, wf_world *w, double lo[3], double hi[3]) {
  for (int k = 0; k < 3; k++)
    lo[k] = INFINITY, hi[k] = -INFINITY;
  for (int i = 0; i < wf_world_object_count(w); i++) {
    wf_world_object o;
    if (wf_world_object_get(w, i, &o) != WF_OK || !o.point_count) continue;
    float(*pos)[4] = malloc((size_t)o.point_count * 16);
    if (pos && wf_world_object_download(w, i, pos, NULL) == WF_OK)
      for (uint32_t j = 0; j < o.point_count; j++) {
        double p[3] = {pos[j][0], pos[j][1], pos[j][2]};
        grow(lo, hi, p, o.kind == WF_WORLD_PARTICLES ? pos[j][3] : 0.0);
      }
    free(pos);
  }
  for (int i = 0; i < sc->collider_count; i++) {
    const wf_scene_collider *c = &sc->colliders[i];
    if (c->type == WF_SCENE_SPHERE) grow(lo, hi, c->center, c->radius);
    if (c->type == WF_SCENE_BOX)
      for (int k = 0; k < 3; k++) {
        lo[k] = fmin(lo[k], c->center[k] - c->half_extents[k]);
        hi[k] = fmax(hi[k], c->center[k] + c->half_extents[k]);
      }
    if (c->type == WF_SCENE_CAPSULE) grow(lo, hi, c->p0, c->radius), grow(lo, hi, c->p1, c->radius);
  }
  return lo[0] <= hi[0];
}

/* The scene's camera, or one looking along the default camera's direction at the bounds' centre
 * from where their bounding sphere fills the vertical field of view. */
static wf_render_camera make_camera(const wf_scene *sc, wf_world *w, double centre[3]) {
  const wf_scene_camera *c = &sc->camera;
  wf_render_camera cam = {.fov_y_deg = (float)c->fov_deg};
  d3(cam.position, c->position);
  d3(cam.target, c->target);
  d3(cam.up, c->up);
  double lo[3], hi[3];
  bool have = scene_bounds(sc, w, lo, hi);
  for (int k = 0; k < 3; k++)
    centre[k] = have ? 0.5 * (lo[k] + hi[k]) : c->target[k];
  if (!have || !default_camera(c)) return cam;
  double r = 0.0, dir[3], n = 0.0;
  for (int k = 0; k < 3; k++) {
    r += 0.25 * (hi[k] - lo[k]) * (hi[k] - lo[k]);
    dir[k] = c->position[k] - c->target[k];
    n += dir[k] * dir[k];
  }
  r = fmax(sqrt(r), 0.05);
  double dist = 1.15 * r / sin(0.5 * c->fov_deg * 3.14159265358979323846 / 180.0);
  for (int k = 0; k < 3; k++) {
    cam.target[k] = (float)centre[k];
    cam.position[k] = (float)(centre[k] + dist * dir[k] / sqrt(n));
  }
  cam.z_far = (float)fmax(500.0, 4.0 * dist);
  return cam;
}

static void make_lights(const wf_scene *sc, const double centre[3], wf_render_scene *s) {
  s->light_count = 0;
  for (int i = 0; i < sc->light_count && s->light_count < WF_RENDER_MAX_LIGHTS; i++) {
    const wf_scene_light *l = &sc->lights[i];
    wf_render_light *o = &s->lights[s->light_count++];
    for (int k = 0; k < 3; k++) {
      /* the renderer wants the direction towards the light */
      o->direction[k] = (float)(l->is_point ? l->vector[k] - centre[k] : -l->vector[k]);
      o->color[k] = (float)(l->color[k] * l->intensity);
    }
    if (!o->color[0] && !o->color[1] && !o->color[2]) s->light_count--; /* a dark light */
  }
  /* A fill light, so that what faces away from the scene's first (key) light is not left to the
   * ambient term alone: from the opposite side horizontally, half as high, at
   * WF_CLI_FILL_FRACTION of the key's colour (the renderer's own default pairs a key with a fill
   * the same way). Not added when the scene lists no light (the default has one) or four. */
  if (s->light_count >= 1 && s->light_count < WF_RENDER_MAX_LIGHTS) {
    const wf_render_light *key = &s->lights[0];
    wf_render_light *fill = &s->lights[s->light_count++];
    wf_cli_fill_direction(key->direction, fill->direction);
    for (int k = 0; k < 3; k++)
      fill->color[k] = WF_CLI_FILL_FRACTION * key->color[k];
  }
}

void wf_cli_fill_direction(const float key[3], float out[3]) {
  out[0] = -key[0], out[1] = 0.5f * fabsf(key[1]), out[2] = -key[2];
  if (fabsf(out[0]) + fabsf(out[2]) < 1e-3f * (fabsf(key[1]) + 1e-30f)) /* a key from straight up */
    out[0] = 1.0f, out[1] = 0.5f, out[2] = 0.0f;
}

static wf_render_collider make_collider(const wf_scene_collider *c) {
  wf_render_collider r = {0};
  switch (c->type) {
  case WF_SCENE_PLANE: r.type = WF_RENDER_PLANE; break;
  case WF_SCENE_SPHERE: r.type = WF_RENDER_SPHERE; break;
  case WF_SCENE_BOX: r.type = WF_RENDER_BOX; break;
  case WF_SCENE_CAPSULE: r.type = WF_RENDER_CAPSULE; break;
  case WF_SCENE_MESH: { /* drawn as its bounding box at rest, for now */
    wf_collider_mesh_info m = wf_collider_mesh_info_get(c->mesh_data);
    r.type = WF_RENDER_BOX;
    for (int k = 0; k < 3; k++) {
      r.center[k] = 0.5f * (m.lo[k] + m.hi[k]);
      r.half_extents[k] = 0.5f * (m.hi[k] - m.lo[k]);
    }
    r.radius = (float)c->radius;
    return r;
  }
  }
  d3(r.center, c->center);
  d3(r.normal, c->normal);
  r.offset = (float)c->offset;
  r.radius = (float)c->radius;
  d3(r.half_extents, c->half_extents);
  d3(r.p0, c->p0);
  d3(r.p1, c->p1);
  return r;
}

/* The ground: the height of the first plane collider facing up (n.x = offset with n along y), else
 * the objects' lowest point. */
static double ground_height(const wf_scene *sc, const double lo[3]) {
  for (int i = 0; i < sc->collider_count; i++) {
    const wf_scene_collider *c = &sc->colliders[i];
    double n = sqrt(c->normal[0] * c->normal[0] + c->normal[1] * c->normal[1] +
                    c->normal[2] * c->normal[2]);
    if (c->type == WF_SCENE_PLANE && n > 0 && c->normal[1] > 0.999 * n)
      return c->offset / c->normal[1];
  }
  return lo[1];
}

/* What every picture has whatever the frame: the ground grid at the ground's height, with lines
 * 10^k / 5 apart for the objects' size S (10^k <= S < 10^(k+1): 5 to 50 lines across them) over
 * at least 40 lines each way; and the top of the speed ramp, fixed for the run so a colour means
 * one speed in every frame (render.speed_max, or the larger of sqrt(2 g h), the speed of a free
 * fall from the objects' top to the ground, and the fastest initial speed). */
static void ground_and_range(const wf_scene *sc, wf_world *w, wf_render_scene *b) {
  double lo[3], hi[3];
  if (!scene_bounds(sc, w, lo, hi))
    for (int k = 0; k < 3; k++)
      lo[k] = -0.5, hi[k] = 0.5;
  double size = fmax(fmax(hi[0] - lo[0], hi[1] - lo[1]), fmax(hi[2] - lo[2], 1e-3));
  double ground = ground_height(sc, lo);
  b->grid.enabled = true;
  b->grid.height = (float)ground;
  b->grid.spacing = (float)(pow(10.0, floor(log10(size))) / 5.0);
  b->grid.extent = (float)fmax(20.0 * b->grid.spacing, 3.0 * size);
  if (sc->render.speed_max > 0) {
    b->speed_max = (float)sc->render.speed_max;
    return;
  }
  const double *g = sc->simulation.gravity;
  double gn = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
  double top = 0.0;
  for (int i = 0; i < wf_world_object_count(w); i++) {
    wf_world_object o;
    if (wf_world_object_get(w, i, &o) != WF_OK || !o.point_count) continue;
    float(*vel)[4] = malloc((size_t)o.point_count * 16);
    if (vel && wf_world_object_download(w, i, NULL, vel) == WF_OK)
      for (uint32_t j = 0; j < o.point_count; j++)
        top = fmax(top, sqrt((double)vel[j][0] * vel[j][0] + (double)vel[j][1] * vel[j][1] +
                             (double)vel[j][2] * vel[j][2]));
    free(vel);
  }
  double fall = sqrt(2.0 * gn * fmax(hi[1] - ground, 0.0));
  double v = fmax(fall, top);
  b->speed_max = (float)(v > 0 && isfinite(v) ? v : 1.0);
}

/* Strain and contact force (render_values.h): rest lengths from the current state, the plane
 * colliders, the ramps' tops (render.strain_max, else 0.1; render.force_max, else 10 weights of
 * the heaviest particle). Contact forces cost a hashed-grid pass a frame on the host: done every
 * frame when the scene colours by them or has at most WF_CLI_FORCE_PARTICLES particles. */
#define WF_CLI_FORCE_PARTICLES 300000u
static bool values_setup(wf_cli_frames *f, const wf_scene *sc, wf_world *w) {
  float(**pos)[4] = calloc((size_t)f->n_objects + 1, sizeof *pos);
  bool ok = pos != NULL;
  uint64_t particles = 0;
  for (int i = 0; ok && i < f->n_objects; i++) {
    ok = (pos[i] = malloc((size_t)f->objects[i].point_count * 16 + 16)) != NULL &&
         wf_world_object_download(w, i, pos[i], NULL) == WF_OK;
    if (f->objects[i].kind == WF_WORLD_PARTICLES) particles += f->objects[i].point_count;
  }
  ok = ok && wf_cli_values_create(sc, w, (const float(*const *)[4])pos, &f->values) == WF_OK;
  for (int i = 0; pos && i < f->n_objects; i++)
    free(pos[i]);
  free(pos);
  if (!ok) return false;
  for (int i = 0; i < f->base.collider_count && f->n_planes < 64; i++) {
    const wf_render_collider *c = &f->base.colliders[i];
    double n = sqrt((double)c->normal[0] * c->normal[0] + (double)c->normal[1] * c->normal[1] +
                    (double)c->normal[2] * c->normal[2]);
    if (c->type != WF_RENDER_PLANE || !(n > 0.0)) continue;
    float *p = f->planes + 4 * f->n_planes++;
    for (int k = 0; k < 3; k++)
      p[k] = (float)(c->normal[k] / n);
    p[3] = (float)(c->offset / n);
  }
  f->forces = sc->render.color_by == WF_SCENE_COLOR_CONTACT_FORCE ||
              (particles > 0 && particles <= WF_CLI_FORCE_PARTICLES);
  f->base.strain_max = sc->render.strain_max > 0 ? (float)sc->render.strain_max : 0.1f;
  f->base.force_max = sc->render.force_max > 0 ? (float)sc->render.force_max
                                               : (float)wf_cli_values_force_scale(f->values);
  return true;
}

wf_status wf_cli_frames_create(const wf_scene *sc, wf_world *w, int buffers, wf_cli_frames **out) {
  *out = NULL;
  wf_cli_frames *f = calloc(1, sizeof *f);
  if (!f) return WF_ERR_OUT_OF_MEMORY;
  f->n_objects = wf_world_object_count(w);
  f->n_sets = buffers > 0 ? buffers : 1;
  f->objects = calloc((size_t)f->n_objects + 1, sizeof *f->objects);
  f->colliders = calloc((size_t)sc->collider_count + 1, sizeof *f->colliders);
  f->sets = calloc((size_t)f->n_sets, sizeof *f->sets);
  f->prev = calloc((size_t)f->n_objects + 1, sizeof *f->prev);
  f->prev_frame = calloc((size_t)f->n_objects + 1, sizeof *f->prev_frame);
  f->dt = wf_world_frame_dt(w);
  bool ok = f->objects && f->colliders && f->sets && f->prev && f->prev_frame;
  for (int i = 0; ok && i < f->n_objects; i++) {
    wf_world_object_get(w, i, &f->objects[i]);
    if (f->objects[i].kind == WF_WORLD_CLOTH)
      f->n_meshes++;
    else
      f->n_points++;
  }
  for (int i = 0; ok && i < f->n_objects; i++) {
    f->prev_frame[i] = -1;
    ok = (f->prev[i] = malloc((size_t)f->objects[i].point_count * 16 + 16)) != NULL;
  }
  for (int s = 0; ok && s < f->n_sets; s++) {
    frame_set *fs = &f->sets[s];
    fs->points = calloc((size_t)f->n_points + 1, sizeof *fs->points);
    fs->meshes = calloc((size_t)f->n_meshes + 1, sizeof *fs->meshes);
    fs->speed = calloc((size_t)f->n_objects + 1, sizeof *fs->speed);
    fs->value = calloc((size_t)f->n_objects + 1, sizeof *fs->value);
    ok = fs->points && fs->meshes && fs->speed && fs->value;
    for (int i = 0; ok && i < f->n_objects; i++) { /* particles and cloth vertices alike */
      ok = (fs->speed[i] = malloc((size_t)f->objects[i].point_count * sizeof(float) + 4)) != NULL;
      ok = ok && (fs->value[i] = calloc((size_t)f->objects[i].point_count + 1, sizeof(float)));
    }
  }
  if (!ok) {
    wf_cli_frames_destroy(f);
    return WF_ERR_OUT_OF_MEMORY;
  }
  wf_render_scene *b = &f->base;
  double centre[3];
  b->camera = make_camera(sc, w, centre);
  make_lights(sc, centre, b);
  for (int i = 0; i < sc->collider_count; i++)
    f->colliders[i] = make_collider(&sc->colliders[i]);
  b->colliders = f->colliders;
  b->collider_count = sc->collider_count;
  for (int k = 0; k < 3; k++)
    b->background[k] = (float)sc->render.background[k];
  b->background[3] = 1.0f;
  static const wf_render_color_mode modes[] = {WF_COLOR_BY_OBJECT, WF_COLOR_BY_SPEED,
                                               WF_COLOR_BY_STRAIN, WF_COLOR_BY_FORCE};
  b->color_mode = modes[sc->render.color_by];
  b->shadows = sc->render.shadows;
  ground_and_range(sc, w, b);
  if (!values_setup(f, sc, w)) {
    wf_cli_frames_destroy(f);
    return WF_ERR_OUT_OF_MEMORY;
  }
  *out = f;
  return WF_OK;
}

void wf_cli_frames_destroy(wf_cli_frames *f) {
  if (!f) return;
  for (int s = 0; f->sets && s < f->n_sets; s++) {
    for (int i = 0; f->sets[s].speed && i < f->n_objects; i++)
      free(f->sets[s].speed[i]);
    for (int i = 0; f->sets[s].value && i < f->n_objects; i++)
      free(f->sets[s].value[i]);
    free(f->sets[s].points), free(f->sets[s].meshes), free(f->sets[s].speed);
    free(f->sets[s].value);
  }
  for (int i = 0; f->prev && i < f->n_objects; i++)
    free(f->prev[i]);
  free(f->prev), free(f->prev_frame);
  wf_cli_values_destroy(f->values);
  free(f->sets), free(f->objects), free(f->colliders);
  free(f);
}

/* Speeds of object i's points into sp: from vel when given, else from the positions' change
 * since the frame filled before (0 when there is none newer). */
static void speeds_of(wf_cli_frames *f, int i, int64_t frame, const float (*pos)[4],
                      const float (*vel)[4], float *sp) {
  uint32_t n = f->objects[i].point_count;
  if (vel) {
    for (uint32_t j = 0; j < n; j++)
      sp[j] = sqrtf(vel[j][0] * vel[j][0] + vel[j][1] * vel[j][1] + vel[j][2] * vel[j][2]);
    return;
  }
  double gap = (double)(frame - f->prev_frame[i]) * f->dt;
  bool have = f->prev_frame[i] >= 0 && frame > f->prev_frame[i] && gap > 0;
  for (uint32_t j = 0; j < n; j++) {
    float d[3] = {pos[j][0] - f->prev[i][j][0], pos[j][1] - f->prev[i][j][1],
                  pos[j][2] - f->prev[i][j][2]};
    sp[j] =
        have ? (float)(sqrt((double)d[0] * d[0] + (double)d[1] * d[1] + (double)d[2] * d[2]) / gap)
             : 0.0f;
  }
  memcpy(f->prev[i], pos, (size_t)n * 16);
  f->prev_frame[i] = frame;
}

void wf_cli_frames_fill(wf_cli_frames *f, int buffer, int64_t frame, const float (*const *pos)[4],
                        const float (*const *vel)[4], wf_render_scene *out) {
  frame_set *fs = &f->sets[((buffer % f->n_sets) + f->n_sets) % f->n_sets];
  *out = f->base;
  int np = 0, nm = 0;
  for (int i = 0; i < f->n_objects; i++) {
    const wf_world_object *o = &f->objects[i];
    float color[4] = {wf_cli_palette[i % WF_CLI_PALETTE_N][0],
                      wf_cli_palette[i % WF_CLI_PALETTE_N][1],
                      wf_cli_palette[i % WF_CLI_PALETTE_N][2], 1.0f};
    if (o->kind == WF_WORLD_PARTICLES) {
      wf_render_points *p = &fs->points[np++];
      *p = (wf_render_points){.xyzr = &pos[i][0][0], .count = o->point_count, .name = o->name};
      memcpy(p->color, color, sizeof color);
      if (f->forces) p->force = fs->value[i];
      if (vel && vel[i]) {
        speeds_of(f, i, frame, pos[i], vel[i], fs->speed[i]);
        p->speed = fs->speed[i];
      }
    } else {
      wf_render_mesh *m = &fs->meshes[nm++];
      *m = (wf_render_mesh){.positions = &pos[i][0][0],
                            .stride = 4,
                            .vertex_count = o->point_count,
                            .indices = o->triangles,
                            .triangle_count = o->triangle_count,
                            .name = o->name};
      memcpy(m->color, color, sizeof color);
      wf_cli_values_strain(f->values, i, pos[i], fs->value[i]);
      m->strain = fs->value[i];
      if (vel) { /* the ring has no cloth velocities: speeds from the positions' change */
        speeds_of(f, i, frame, pos[i], vel[i], fs->speed[i]);
        m->speed = fs->speed[i];
      }
    }
  }
  if (f->forces && wf_cli_values_force(f->values, pos, f->planes, f->n_planes, fs->value) != WF_OK)
    for (int i = 0; i < np; i++) /* no memory for the grid: drawn in the objects' colours */
      fs->points[i].force = NULL;
  out->points = fs->points;
  out->point_set_count = np;
  out->meshes = fs->meshes;
  out->mesh_count = nm;
}

int wf_cli_frames_buffer_of(const wf_cli_frames *f, const wf_render_scene *frame) {
  for (int s = 0; s < f->n_sets; s++)
    if (frame->points == f->sets[s].points && frame->meshes == f->sets[s].meshes) return s;
  return -1;
}

wf_render_camera wf_cli_frames_camera(const wf_cli_frames *f) { return f->base.camera; }

#endif /* WEFT_HAVE_VIEWER */

/* ---- weft run --render ---------------------------------------------------------------------- */

#ifdef WEFT_HAVE_VIEWER

struct wf_cli_render {
  const char *who;
  char dir[4096]; /* "" when no PNG is written (--video alone) */
  wf_cli_video *video;
  uint8_t *rgba; /* a frame for the video */
  wf_world *w;
  wf_cli_frames *frames;
  wf_render *r;
  int n_objects;
  float (**pos)[4], (**vel)[4];
};

void wf_cli_render_close(wf_cli_render *r) {
  if (!r) return;
  wf_cli_video_close(r->video, false); /* not finished: removed */
  free(r->rgba);
  wf_render_destroy(r->r);
  wf_cli_frames_destroy(r->frames);
  for (int i = 0; i < r->n_objects; i++) {
    if (r->pos) free(r->pos[i]);
    if (r->vel) free(r->vel[i]);
  }
  free(r->pos), free(r->vel);
  free(r);
}

int wf_cli_render_open(const char *who, const wf_scene *sc, wf_world *w, const char *out_dir,
                       wf_cli_render **out) {
  *out = NULL;
  wf_cli_render *r = calloc(1, sizeof *r);
  if (!r) {
    fprintf(stderr, "%s: out of memory\n", who);
    return 1;
  }
  r->who = who;
  r->w = w;
  if (out_dir && (snprintf(r->dir, sizeof r->dir, "%s/render", out_dir) >= (int)sizeof r->dir ||
                  (mkdir(r->dir, 0777) != 0 && errno != EEXIST))) {
    fprintf(stderr, "%s: --render: cannot create '%s': %s\n", who, r->dir, strerror(errno));
    free(r);
    return 1;
  }
  r->n_objects = wf_world_object_count(w);
  r->pos = calloc((size_t)r->n_objects + 1, sizeof *r->pos);
  r->vel = calloc((size_t)r->n_objects + 1, sizeof *r->vel);
  bool ok = r->pos && r->vel;
  for (int i = 0; ok && i < r->n_objects; i++) {
    wf_world_object o;
    wf_world_object_get(w, i, &o);
    r->pos[i] = malloc((size_t)o.point_count * 16 + 16);
    r->vel[i] = malloc((size_t)o.point_count * 16 + 16);
    ok = r->pos[i] && r->vel[i];
  }
  if (!ok || wf_cli_frames_create(sc, w, 1, &r->frames) != WF_OK) {
    fprintf(stderr, "%s: out of memory\n", who);
    wf_cli_render_close(r);
    return 1;
  }
  wf_status st = wf_render_headless_create(sc->render.width, sc->render.height, &r->r);
  if (st != WF_OK) {
    fprintf(stderr, "%s: --render: cannot render headless: %s\n", who, wf_render_last_error());
    wf_cli_render_close(r);
    return 1;
  }
  *out = r;
  return 0;
}

int wf_cli_render_frame(wf_cli_render *r, int64_t frame, int64_t number) {
  for (int i = 0; i < r->n_objects; i++)
    if (wf_world_object_download(r->w, i, r->pos[i], r->vel[i]) != WF_OK) {
      fprintf(stderr, "%s: --render: %s\n", r->who, wf_last_error());
      return 1;
    }
  wf_render_scene s;
  wf_cli_frames_fill(r->frames, 0, frame, (const float(*const *)[4])r->pos,
                     (const float(*const *)[4])r->vel, &s);
  char path[4200];
  snprintf(path, sizeof path, "%s/frame_%06lld.png", r->dir, (long long)number);
  wf_status st = wf_render_draw(r->r, &s);
  if (st == WF_OK && s.color_mode != WF_COLOR_BY_OBJECT)
    st = wf_render_draw_color_bar(r->r, s.color_mode,
                                  s.color_mode == WF_COLOR_BY_STRAIN  ? s.strain_max
                                  : s.color_mode == WF_COLOR_BY_FORCE ? s.force_max
                                                                      : s.speed_max);
  if (st == WF_OK && r->dir[0]) st = wf_render_write_png(r->r, path);
  if (st == WF_OK && r->video) {
    int w, h;
    wf_render_size(r->r, &w, &h);
    st = wf_render_read_rgba(r->r, r->rgba, (size_t)w * (size_t)h * 4);
  }
  if (st != WF_OK) {
    fprintf(stderr, "%s: --render: frame %lld: %s\n", r->who, (long long)frame,
            wf_render_last_error());
    return 1;
  }
  return r->video ? wf_cli_video_frame(r->video, r->rgba) : 0;
}

int wf_cli_render_video(wf_cli_render *r, const char *path, double fps) {
  int w, h;
  wf_render_size(r->r, &w, &h);
  r->rgba = malloc((size_t)w * (size_t)h * 4);
  if (!r->rgba) {
    fprintf(stderr, "%s: --video: out of memory\n", r->who);
    return 1;
  }
  return wf_cli_video_open(r->who, path, w, h, fps, &r->video);
}

int wf_cli_render_finish(wf_cli_render *r, bool keep) {
  if (!r) return 0;
  int rc = wf_cli_video_close(r->video, keep);
  r->video = NULL;
  return rc;
}

#else

struct wf_cli_render {
  int unused;
};

int wf_cli_render_open(const char *who, const wf_scene *sc, wf_world *w, const char *out_dir,
                       wf_cli_render **out) {
  (void)sc, (void)w, (void)out_dir;
  *out = NULL;
  fprintf(
      stderr,
      "%s: --render and --video need the viewer, and this weft was built without it "
      "(WEFT_VIEWER=OFF: "
      "epoxy, EGL, GLFW, cglm or stb was missing when it was configured; see viewer/README.md)\n",
      who);
  return 2;
}
int wf_cli_render_frame(wf_cli_render *r, int64_t frame, int64_t number) {
  (void)r, (void)frame, (void)number;
  return 1;
}
int wf_cli_render_video(wf_cli_render *r, const char *path, double fps) {
  (void)r, (void)path, (void)fps;
  return 2;
}
int wf_cli_render_finish(wf_cli_render *r, bool keep) {
  (void)r, (void)keep;
  return 0;
}
void wf_cli_render_close(wf_cli_render *r) { (void)r; }

#endif
