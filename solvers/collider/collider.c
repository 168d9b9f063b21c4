/* Colliders on the host side (collider.h): validation and conversion of a wf_collider_desc,
 * keyframes into the device layout (wfx_key: the slerp's axis and angle and the velocities per
 * segment, computed once here in double so both backends read the same bits), per-partition
 * copies of keyframes and meshes, and poses set between frames. */
#include "collider.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
#include "mesh_internal.h"

static bool finite3(const float *v) { return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]); }

/* A unit quaternion from q (all zero: the identity); false when not finite or not normalisable. */
static bool unit_quat(const float *q, double *u) {
  double l = 0.0;
  for (int k = 0; k < 4; k++) {
    if (!isfinite(q[k])) return false;
    l += (double)q[k] * q[k];
  }
  if (l == 0.0) {
    u[0] = u[1] = u[2] = 0.0, u[3] = 1.0;
    return true;
  }
  l = sqrt(l);
  if (!(l > 1e-6)) return false;
  for (int k = 0; k < 4; k++)
    u[k] = q[k] / l;
  return true;
}

static bool is_identity(const double *q) {
  return q[0] == 0.0 && q[1] == 0.0 && q[2] == 0.0 && fabs(q[3]) == 1.0;
}

wf_status wfp_collider_from_desc(const char *func, const char *owner, const wf_collider_desc *c,
                                 wfp_collider *out) {
  const char *nm = c->name ? c->name : "collider";
#define CBAD(...) wf__error(WF_ERR_INVALID, func, "%s: collider '%s': " __VA_ARGS__)
  if (!finite3(c->velocity)) return CBAD("velocity is not finite", owner, nm);
  if (!(c->friction >= 0.0f) || !isfinite(c->friction))
    return CBAD("friction %g must be >= 0", owner, nm, (double)c->friction);
  if (!(c->restitution >= 0.0f && c->restitution <= 1.0f))
    return CBAD("restitution %g must be in [0, 1]", owner, nm, (double)c->restitution);
  if (!(c->stiffness >= 0.0f) || !isfinite(c->stiffness))
    return CBAD("stiffness %g must be >= 0 (0: the material's)", owner, nm, (double)c->stiffness);
  if (!(c->static_friction >= 0.0f) || !isfinite(c->static_friction))
    return CBAD("static_friction %g must be >= 0", owner, nm, (double)c->static_friction);
  if (!finite3(c->pivot)) return CBAD("pivot is not finite", owner, nm);
  if (!finite3(c->angular_velocity)) return CBAD("angular_velocity is not finite", owner, nm);
  if (!isfinite(c->active_from) || !(isfinite(c->active_until) || c->active_until == INFINITY))
    return CBAD("active_from and active_until must be numbers", owner, nm);
  float t_off = c->active_until == 0.0f ? INFINITY : c->active_until;
  if (!(t_off > c->active_from))
    return CBAD("active_until %g must be after active_from %g", owner, nm, (double)t_off,
                (double)c->active_from);
  if (c->key_count > 0 && !c->keys)
    return CBAD("keys is NULL with key_count %u", owner, nm, c->key_count);
  bool turns = c->angular_velocity[0] != 0.0f || c->angular_velocity[1] != 0.0f ||
               c->angular_velocity[2] != 0.0f;
  for (uint32_t i = 0; i < c->key_count; i++) {
    const wf_collider_key *k = &c->keys[i];
    double q[4];
    if (!isfinite(k->time) || !finite3(k->position))
      return CBAD("keys[%u]: time and position must be finite", owner, nm, i);
    if (!unit_quat(k->rotation, q))
      return CBAD(
          "keys[%u].rotation is not a rotation (a quaternion x, y, z, w of non-zero length)", owner,
          nm, i);
    if (i > 0 && !(k->time > c->keys[i - 1].time))
      return CBAD("keys[%u].time %g is not after keys[%u].time %g (keys must be in increasing "
                  "time)",
                  owner, nm, i, (double)k->time, i - 1, (double)c->keys[i - 1].time);
    turns |= !is_identity(q);
  }
  wfp_collider d = {
      .vel = {c->velocity[0], c->velocity[1], c->velocity[2], 0.0f},
      .omega = {c->angular_velocity[0], c->angular_velocity[1], c->angular_velocity[2], 0.0f},
      .pivot = {c->pivot[0], c->pivot[1], c->pivot[2], 0.0f},
      .pos = {c->pivot[0], c->pivot[1], c->pivot[2], 0.0f},
      .rot = {0.0f, 0.0f, 0.0f, 1.0f},
      .type = (uint32_t)c->type,
      .friction = c->friction,
      .zeta = (float)wf_particles_zeta_for_restitution(c->restitution),
      .stiffness = c->stiffness,
      .restitution = c->restitution,
      .static_friction = c->static_friction > 0.0f ? c->static_friction : c->friction,
      .t_on = c->active_from,
      .t_off = t_off,
      .flags = turns ? WFX_TURNS : 0u,
      .reach = INFINITY};
  switch (c->type) {
  case WF_COLLIDER_PLANE: {
    if (!finite3(c->normal) || !isfinite(c->offset))
      return CBAD("normal and offset must be finite", owner, nm);
    double l = sqrt((double)c->normal[0] * c->normal[0] + (double)c->normal[1] * c->normal[1] +
                    (double)c->normal[2] * c->normal[2]);
    if (!(l > 0.0)) return CBAD("normal is zero", owner, nm);
    d.a = (wfp_f4){(float)(c->normal[0] / l), (float)(c->normal[1] / l), (float)(c->normal[2] / l),
                   c->offset};
    break;
  }
  case WF_COLLIDER_SPHERE:
    if (!finite3(c->center)) return CBAD("center is not finite", owner, nm);
    if (!(c->radius > 0.0f) || !isfinite(c->radius))
      return CBAD("radius %g must be > 0", owner, nm, (double)c->radius);
    d.a = (wfp_f4){c->center[0], c->center[1], c->center[2], c->radius};
    break;
  case WF_COLLIDER_BOX:
    if (!finite3(c->center)) return CBAD("center is not finite", owner, nm);
    for (int i = 0; i < 3; i++)
      if (!(c->half_extents[i] > 0.0f) || !isfinite(c->half_extents[i]))
        return CBAD("half_extents[%d] %g must be > 0", owner, nm, i, (double)c->half_extents[i]);
    d.a = (wfp_f4){c->center[0], c->center[1], c->center[2], 0.0f};
    d.b = (wfp_f4){c->half_extents[0], c->half_extents[1], c->half_extents[2], 0.0f};
    break;
  case WF_COLLIDER_CAPSULE:
    if (!finite3(c->p0) || !finite3(c->p1)) return CBAD("p0 and p1 must be finite", owner, nm);
    if (!(c->radius > 0.0f) || !isfinite(c->radius))
      return CBAD("radius %g must be > 0", owner, nm, (double)c->radius);
    d.a = (wfp_f4){c->p0[0], c->p0[1], c->p0[2], c->radius};
    d.b = (wfp_f4){c->p1[0] - c->p0[0], c->p1[1] - c->p0[1], c->p1[2] - c->p0[2], 0.0f};
    break;
  case WF_COLLIDER_MESH:
    if (!c->mesh) return CBAD("mesh is NULL (wf_collider_mesh_load or _create)", owner, nm);
    if (!(c->thickness >= 0.0f) || !isfinite(c->thickness))
      return CBAD("thickness %g must be >= 0", owner, nm, (double)c->thickness);
    if (c->thickness == 0.0f && c->mesh->info.boundary_edges > 0)
      return CBAD("mesh '%s' is open (%u edges with one triangle): give it a thickness (a shell) "
                  "or close it",
                  owner, nm, c->mesh->name, c->mesh->info.boundary_edges);
    d.pivot.w = c->thickness;
    break;
  default: return CBAD("type %d is not a WF_COLLIDER_* value", owner, nm, c->type);
  }
#undef CBAD
  *out = d;
  return WF_OK;
}

/* The keyframes in the device layout (wfx_key). */
static void convert_keys(const wf_collider_key *in, uint32_t n, wfx_key *out) {
  for (uint32_t i = 0; i < n; i++) {
    double q[4] = {0.0, 0.0, 0.0, 1.0};
    unit_quat(in[i].rotation, q);
    wfx_key k = {.pos = {in[i].position[0], in[i].position[1], in[i].position[2], in[i].time},
                 .rot = {(float)q[0], (float)q[1], (float)q[2], (float)q[3]},
                 .turn = {1.0f, 0.0f, 0.0f, 0.0f}};
    if (i + 1 < n) {
      double q1[4] = {0.0, 0.0, 0.0, 1.0}, r[4];
      unit_quat(in[i + 1].rotation, q1);
      /* r = conj(q) q1, the turn in the body frame; the shorter way round */
      const double a[4] = {-q[0], -q[1], -q[2], q[3]};
      r[0] = a[3] * q1[0] + a[0] * q1[3] + a[1] * q1[2] - a[2] * q1[1];
      r[1] = a[3] * q1[1] - a[0] * q1[2] + a[1] * q1[3] + a[2] * q1[0];
      r[2] = a[3] * q1[2] + a[0] * q1[1] - a[1] * q1[0] + a[2] * q1[3];
      r[3] = a[3] * q1[3] - a[0] * q1[0] - a[1] * q1[1] - a[2] * q1[2];
      if (r[3] < 0.0)
        for (int j = 0; j < 4; j++)
          r[j] = -r[j];
      double s = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
      double angle = 2.0 * atan2(s, r[3]);
      double ax[3] = {1.0, 0.0, 0.0};
      if (s > 0.0) ax[0] = r[0] / s, ax[1] = r[1] / s, ax[2] = r[2] / s;
      double dt = (double)in[i + 1].time - in[i].time;
      k.turn = (wfp_f4){(float)ax[0], (float)ax[1], (float)ax[2], (float)angle};
      k.vel = (wfp_f4){(float)((in[i + 1].position[0] - (double)in[i].position[0]) / dt),
                       (float)((in[i + 1].position[1] - (double)in[i].position[1]) / dt),
                       (float)((in[i + 1].position[2] - (double)in[i].position[2]) / dt),
                       (float)(1.0 / dt)};
      /* angular velocity in the world frame: R(q) axis · angle / dt */
      float qf[4] = {(float)q[0], (float)q[1], (float)q[2], (float)q[3]};
      float axf[3] = {(float)(ax[0] * angle / dt), (float)(ax[1] * angle / dt),
                      (float)(ax[2] * angle / dt)},
            w[3];
      wfx_qrot(qf, 0, axf, w);
      k.omega = (wfp_f4){w[0], w[1], w[2], 0.0f};
    }
    out[i] = k;
  }
}

static wf_status upload(wf_device *dev, wf_stream *s, const void *host, size_t bytes, wf_buffer **b,
                        const char *func, const char *owner, const char *nm, const char *what) {
  wf_status st = wf_buffer_create(dev, bytes, 0, s, b);
  if (st == WF_OK) st = wf_upload(*b, 0, host, bytes, s);
  if (st != WF_OK)
    return wf__error(st, func, "%s: collider '%s': copying its %s to the device: %s", owner, nm,
                     what, wf_last_error());
  return WF_OK;
}

wf_status wfx_dev_upload(const char *func, const char *owner, const wf_collider_desc *d,
                         wf_device *dev, wf_stream *s, wfp_collider *c, wfx_dev *out) {
  memset(out, 0, sizeof *out);
  const char *nm = d->name ? d->name : "collider";
  wf_status st = WF_OK;
  if (d->key_count > 0) {
    wfx_key *k = malloc(d->key_count * sizeof *k);
    if (!k) return wf__error(WF_ERR_OUT_OF_MEMORY, func, "%s: out of host memory", owner);
    convert_keys(d->keys, d->key_count, k);
    st = upload(dev, s, k, d->key_count * sizeof *k, &out->keys, func, owner, nm, "keyframes");
    free(k);
    if (st == WF_OK) c->keys = wf_buffer_ptr(out->keys), c->n_keys = d->key_count;
  }
  if (st == WF_OK && d->type == WF_COLLIDER_MESH) {
    const wf_collider_mesh *m = d->mesh;
    st = upload(dev, s, m->nodes, m->info.nodes * sizeof *m->nodes, &out->nodes, func, owner, nm,
                "mesh");
    if (st == WF_OK)
      st = upload(dev, s, m->tris, m->info.triangles * sizeof *m->tris, &out->tris, func, owner, nm,
                  "mesh");
    if (st == WF_OK) c->nodes = wf_buffer_ptr(out->nodes), c->tris = wf_buffer_ptr(out->tris);
  }
  if (st != WF_OK) wfx_dev_release(out, s);
  return st;
}

wf_status wfx_dev_cache(const char *func, const char *owner, wf_device *dev, wf_stream *s,
                        uint32_t points, wfp_collider *c, wfx_dev *x) {
  if (c->type != WFP_MESH || points == 0) return WF_OK;
  size_t bytes = (size_t)points * sizeof(wfm_cache);
  wf_status st = wf_buffer_create(dev, bytes, 0, s, &x->cache);
  if (st == WF_OK) st = wf_memset(x->cache, 0xff, 0, bytes, s); /* every list: none yet */
  if (st != WF_OK)
    return wf__error(st, func, "%s: a mesh collider's candidate lists (%zu bytes): %s", owner,
                     bytes, wf_last_error());
  c->cache = wf_buffer_ptr(x->cache);
  return WF_OK;
}

void wfx_dev_release(wfx_dev *x, wf_stream *s) {
  if (!x) return;
  wf_buffer_destroy(x->cache, s);
  wf_buffer_destroy(x->keys, s);
  wf_buffer_destroy(x->nodes, s);
  wf_buffer_destroy(x->tris, s);
  memset(x, 0, sizeof *x);
}

wf_status wfx_collider_set_pose(const char *func, const char *owner, const wf_collider_pose *p,
                                wfp_collider *c) {
  double q[4];
  if (!p) return wf__error(WF_ERR_INVALID, func, "%s: pose is NULL", owner);
  if (!isfinite(p->time) || !finite3(p->position) || !finite3(p->velocity) ||
      !finite3(p->angular_velocity))
    return wf__error(WF_ERR_INVALID, func,
                     "%s: pose: time, position, velocity and angular_velocity must be finite",
                     owner);
  if (!unit_quat(p->rotation, q))
    return wf__error(WF_ERR_INVALID, func,
                     "%s: pose: rotation is not a quaternion of non-zero "
                     "length (all zero: no rotation)",
                     owner);
  c->pos = (wfp_f4){p->position[0], p->position[1], p->position[2], p->time};
  c->rot = (wfp_f4){(float)q[0], (float)q[1], (float)q[2], (float)q[3]};
  c->vel = (wfp_f4){p->velocity[0], p->velocity[1], p->velocity[2], 0.0f};
  c->omega = (wfp_f4){p->angular_velocity[0], p->angular_velocity[1], p->angular_velocity[2], 0.0f};
  c->n_keys = 0; /* the keys (if any) stay on the device, unused */
  bool turns = !is_identity(q) || c->omega.x != 0.0f || c->omega.y != 0.0f || c->omega.z != 0.0f;
  c->flags = (c->flags & ~WFX_TURNS) | (turns ? WFX_TURNS : 0u);
  return WF_OK;
}

wf_status wf_collider_pose_at(const wf_collider_desc *d, float t, wf_collider_pose *out) {
  static const char fn[] = "wf_collider_pose_at";
  if (!d || !out) return wf__error(WF_ERR_INVALID, fn, "desc or out is NULL");
  if (!isfinite(t)) return wf__error(WF_ERR_INVALID, fn, "time %g is not finite", (double)t);
  wfp_collider c;
  wf_status st = wfp_collider_from_desc(fn, "pose", d, &c);
  if (st != WF_OK) return st;
  wfx_key *k = NULL;
  if (d->key_count > 0) {
    k = malloc(d->key_count * sizeof *k);
    if (!k) return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    convert_keys(d->keys, d->key_count, k);
    c.keys = k, c.n_keys = d->key_count;
  }
  wfx_pose P = wfx_collider_pose(&c, t); /* the kernels' own function */
  free(k);
  *out = (wf_collider_pose){.time = t,
                            .position = {P.p[0], P.p[1], P.p[2]},
                            .rotation = {P.q[0], P.q[1], P.q[2], P.q[3]},
                            .velocity = {P.v[0], P.v[1], P.v[2]},
                            .angular_velocity = {P.w[0], P.w[1], P.w[2]}};
  return WF_OK;
}

wf_status wfx_sync_reach(wfp_collider *cols, uint32_t n, float reach, float skin, wf_buffer *table,
                         wf_stream *s) {
  for (uint32_t k = 0; k < n; k++) {
    if (cols[k].type != WFP_MESH || (cols[k].reach == reach && cols[k].skin == skin)) continue;
    cols[k].reach = reach, cols[k].skin = skin;
    wf_status st = wf_upload(table, k * sizeof *cols, &cols[k], sizeof *cols, s);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}
