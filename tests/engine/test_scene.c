/* Scene files: every bundled scene validates and round-trips; defaults; each kind of error with its
 * exact message (line:column, key path, did-you-mean, the asset path tried); overrides; nothing is
 * returned (and, under ASan, nothing leaks) on failure.
 *
 * WEFT_SOURCE_DIR (a compile definition) locates scenes/ and assets/. Numbers are compared exactly:
 * the parser stores what strtod reads and the canonical JSON prints the shortest text that reads
 * back to the same double, so no tolerance is needed anywhere here.
 */
#include "harness.h"

#include <dirent.h>
#include <sys/stat.h>

#include "weft/cloth.h"
#include "weft/scene.h"

#ifndef WEFT_SOURCE_DIR
#define WEFT_SOURCE_DIR "."
#endif

static wf_status parse_str(const char *text, wf_scene **out) {
  return wf_scene_parse(text, strlen(text), "t.json", WEFT_SOURCE_DIR "/scenes", NULL, out);
}

/* Parses text, expects WF_ERR_PARSE, no scene, and every substring in the full error list. */
#define CHECK_PARSE_ERROR(text, ...)                                                               \
  do {                                                                                             \
    wf_scene *s_ = (wf_scene *)&th_fails; /* must be reset to NULL */                              \
    CHECK_STATUS(parse_str(text, &s_), WF_ERR_PARSE);                                              \
    CHECK(s_ == NULL);                                                                             \
    const char *subs_[] = {__VA_ARGS__};                                                           \
    for (size_t k_ = 0; k_ < sizeof subs_ / sizeof subs_[0]; k_++)                                 \
      if (!strstr(wf_scene_errors(), subs_[k_]))                                                   \
        TH_FAIL("errors \"%s\" lack \"%s\"", wf_scene_errors(), subs_[k_]);                        \
  } while (0)

/* ---- an independent deep comparison of two scenes
 * ------------------------------------------------ */

static int same_v(const double *a, const double *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}
#define SAME(f)                                                                                    \
  do {                                                                                             \
    if ((a)->f != (b)->f) {                                                                        \
      TH_FAIL("%s differs", #f);                                                                   \
      return 0;                                                                                    \
    }                                                                                              \
  } while (0)
#define SAME_V(f, n)                                                                               \
  do {                                                                                             \
    if (!same_v((a)->f, (b)->f, n)) {                                                              \
      TH_FAIL("%s differs", #f);                                                                   \
      return 0;                                                                                    \
    }                                                                                              \
  } while (0)
#define SAME_S(f)                                                                                  \
  do {                                                                                             \
    if (strcmp((a)->f, (b)->f) != 0) {                                                             \
      TH_FAIL("%s differs: '%s' vs '%s'", #f, (a)->f, (b)->f);                                     \
      return 0;                                                                                    \
    }                                                                                              \
  } while (0)

static int same_pins(const wf_scene_pin *pa, const wf_scene_pin *pb, int n) {
  for (int i = 0; i < n; i++) {
    const wf_scene_pin *a = &pa[i], *b = &pb[i];
    SAME(kind);
    SAME(vertex);
    SAME(name);
    SAME_V(min, 3);
    SAME_V(max, 3);
  }
  return 1;
}

static int same_material(const wf_scene_material *a, const wf_scene_material *b) {
  SAME_S(name);
  SAME(stiffness);
  SAME(damping);
  SAME(restitution);
  SAME(friction);
  SAME(tangential);
  SAME(cohesion);
  return 1;
}

static int same_emitter(const wf_scene_emitter *a, const wf_scene_emitter *b) {
  SAME_S(name);
  SAME(shape);
  SAME_V(center, 3);
  SAME_V(half_extents, 3);
  SAME(sphere_radius);
  SAME(cylinder_radius);
  SAME(height);
  SAME(radius);
  SAME(radius_distribution);
  SAME(radius_min);
  SAME(radius_max);
  SAME(radius_sigma);
  SAME(packing);
  SAME(packing_fraction);
  SAME(file_rows);
  SAME(disc_radius);
  SAME(rate);
  SAME(start);
  SAME(end);
  SAME(spacing);
  SAME(jitter);
  SAME(seed);
  SAME_V(velocity, 3);
  SAME(density);
  SAME(mass);
  SAME(kinematic);
  SAME(material);
  return 1;
}

static int same_cloth(const wf_scene_cloth *a, const wf_scene_cloth *b) {
  SAME_S(name);
  SAME(is_mesh);
  SAME_V(size, 2);
  SAME(resolution[0]);
  SAME(resolution[1]);
  SAME_V(center, 3);
  SAME_V(rotation, 3);
  if (a->is_mesh) {
    SAME_S(mesh);
    SAME_S(mesh_path);
    SAME(mesh_vertices);
  }
  SAME(integrator);
  SAME(material.density);
  SAME(material.mass);
  SAME(material.thickness);
  CHECK(strcmp(a->material.preset, b->material.preset) == 0);
  SAME(material.stretch_modulus);
  SAME(material.shear_modulus);
  SAME(material.bend_rigidity);
  SAME(material.damping_time);
  SAME(material.friction);
  SAME(iterations);
  SAME(self_collision);
  SAME(contact);
  SAME(contact_static_friction);
  SAME(contact_dynamic_friction);
  SAME(pin_count);
  if (!same_pins(a->pins, b->pins, a->pin_count)) return 0;
  SAME(attachment_count);
  for (int j = 0; j < a->attachment_count; j++) {
    SAME(attachments[j].collider);
    SAME(attachments[j].pin_count);
    if (!same_pins(a->attachments[j].pins, b->attachments[j].pins, a->attachments[j].pin_count))
      return 0;
  }
  return 1;
}

static int same_collider(const wf_scene_collider *a, const wf_scene_collider *b) {
  SAME_S(name);
  SAME(type);
  SAME_V(normal, 3);
  SAME(offset);
  SAME_V(center, 3);
  SAME(radius);
  SAME_V(half_extents, 3);
  SAME_V(p0, 3);
  SAME_V(p1, 3);
  SAME_V(velocity, 3);
  SAME(friction);
  SAME(restitution);
  SAME(stiffness);
  return 1;
}

static int same_light(const wf_scene_light *a, const wf_scene_light *b) {
  SAME(is_point);
  SAME_V(vector, 3);
  SAME_V(color, 3);
  SAME(intensity);
  return 1;
}

static int same_scene(const wf_scene *sa, const wf_scene *sb) {
  const wf_scene *a = sa, *b = sb;
  SAME_S(description);
  SAME(simulation.fps);
  SAME(simulation.substeps);
  SAME(simulation.frames);
  SAME_V(simulation.gravity, 3);
  SAME(simulation.damping);
  SAME(simulation.device_count);
  for (int i = 0; i < a->simulation.device_count; i++)
    SAME_S(simulation.devices[i]);
  SAME(simulation.deterministic);
  SAME(simulation.seed);
  SAME(simulation.contact_model);
  SAME(simulation.max_speed);
  SAME(simulation.max_penetration);
  SAME(material_count);
  SAME(emitter_count);
  SAME(cloth_count);
  SAME(collider_count);
  SAME(light_count);
  for (int i = 0; i < sa->material_count; i++)
    if (!same_material(&sa->materials[i], &sb->materials[i])) return 0;
  for (int i = 0; i < sa->emitter_count; i++)
    if (!same_emitter(&sa->emitters[i], &sb->emitters[i])) return 0;
  for (int i = 0; i < sa->cloth_count; i++)
    if (!same_cloth(&sa->cloths[i], &sb->cloths[i])) return 0;
  for (int i = 0; i < sa->collider_count; i++)
    if (!same_collider(&sa->colliders[i], &sb->colliders[i])) return 0;
  SAME_V(forces.wind, 3);
  SAME(forces.gust_amplitude);
  SAME(forces.gust_frequency);
  SAME(forces.drag);
  SAME(forces.lift);
  SAME(forces.air_density);
  SAME_S(outputs.dir);
  SAME(outputs.every);
  SAME(outputs.formats);
  SAME(outputs.checkpoint_every);
  SAME_V(camera.position, 3);
  SAME_V(camera.target, 3);
  SAME_V(camera.up, 3);
  SAME(camera.fov_deg);
  for (int i = 0; i < sa->light_count; i++)
    if (!same_light(&sa->lights[i], &sb->lights[i])) return 0;
  SAME(render.width);
  SAME(render.height);
  SAME_V(render.background, 3);
  SAME(render.color_by);
  return 1;
}

/* parse(to_json(s)) equals s, and printing again gives the same text. */
static void check_round_trip(const wf_scene *s, const char *base_dir) {
  char *json = wf_scene_to_json(s);
  REQUIRE(json);
  wf_scene *t = NULL;
  wf_status st = wf_scene_parse(json, strlen(json), "canonical", base_dir, NULL, &t);
  if (st != WF_OK) {
    TH_FAIL("canonical JSON does not parse: %s\n%s", wf_scene_errors(), json);
    free(json);
    return;
  }
  CHECK(same_scene(s, t));
  char *again = wf_scene_to_json(t);
  CHECK(again && strcmp(json, again) == 0);
  free(again);
  free(json);
  wf_scene_destroy(t);
}

/* ---- tests
 * ------------------------------------------------------------------------------------------- */

/* Every file in scenes/ loads, validates and round-trips. */
TEST(bundled_scenes_validate) {
  DIR *d = opendir(WEFT_SOURCE_DIR "/scenes");
  REQUIRE(d);
  int n = 0;
  const char *required[] = {"cloth_drape.json", "flag.json", "granular_column.json",
                            "cloth_on_particles.json", "showcase.json"};
  int found[5] = {0};
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/scenes/%s", WEFT_SOURCE_DIR, e->d_name);
    wf_scene *s = NULL;
    wf_status st = wf_scene_load(path, NULL, &s);
    if (st != WF_OK) {
      TH_FAIL("%s: %s", e->d_name, wf_scene_errors()[0] ? wf_scene_errors() : wf_last_error());
      continue;
    }
    n++;
    for (int k = 0; k < 5; k++)
      found[k] |= strcmp(e->d_name, required[k]) == 0;
    /* kept small enough to run in seconds on a CPU */
    uint64_t particles = 0;
    for (int k = 0; k < s->emitter_count; k++)
      particles += wf_scene_emitter_count(&s->emitters[k]);
    CHECK(particles <= 50000);
    for (int k = 0; k < s->cloth_count; k++)
      CHECK(s->cloths[k].is_mesh ||
            (s->cloths[k].resolution[0] <= 64 && s->cloths[k].resolution[1] <= 64));
    check_round_trip(s, WEFT_SOURCE_DIR "/scenes");
    wf_scene_destroy(s);
  }
  closedir(d);
  CHECK(n >= 5);
  for (int k = 0; k < 5; k++)
    if (!found[k]) TH_FAIL("scenes/%s is missing or invalid", required[k]);
}

/* The showcase holds every collider type, several cloths and emitters, and a mesh cloth. */
TEST(showcase_has_everything) {
  wf_scene *s = NULL;
  CHECK_OK(wf_scene_load(WEFT_SOURCE_DIR "/scenes/showcase.json", NULL, &s));
  int types = 0, mesh = 0;
  for (int i = 0; i < s->collider_count; i++)
    types |= 1 << s->colliders[i].type;
  for (int i = 0; i < s->cloth_count; i++)
    mesh |= s->cloths[i].is_mesh;
  CHECK_EQ_INT(types, 15);
  CHECK(s->cloth_count >= 2);
  CHECK(s->emitter_count >= 2);
  CHECK(mesh);
  wf_scene_destroy(s);
}

/* "{}" is a complete scene: every default as documented in docs/scenes.md. */
TEST(defaults) {
  wf_scene *s = NULL;
  CHECK_OK(parse_str("{}", &s));
  CHECK(s->simulation.fps == 60);
  CHECK_EQ_INT(s->simulation.substeps, 64);
  CHECK_EQ_INT(s->simulation.frames, 240);
  CHECK(s->simulation.gravity[0] == 0 && s->simulation.gravity[1] == -9.81 &&
        s->simulation.gravity[2] == 0);
  CHECK(s->simulation.damping == 0);
  CHECK_EQ_INT(s->simulation.device_count, 0); /* auto */
  CHECK(!s->simulation.deterministic);
  CHECK_EQ_INT(s->simulation.seed, 0);
  CHECK_EQ_INT(s->simulation.contact_model, WF_SCENE_CONTACT_DEM);
  CHECK(s->simulation.max_speed == 0 && s->simulation.max_penetration == 0);
  REQUIRE(s->material_count == 1);
  CHECK(strcmp(s->materials[0].name, "default") == 0);
  CHECK(s->materials[0].stiffness == 1e4 && s->materials[0].damping == 0 &&
        s->materials[0].restitution == 0.5 && s->materials[0].friction == 0.5 &&
        s->materials[0].tangential == 0 && s->materials[0].cohesion == 0);
  /* the granular keys: a glass bead's, as the solver's wf_particle_material_default */
  CHECK(s->materials[0].static_friction == 0 && s->materials[0].rolling_friction == 0.01 &&
        s->materials[0].young == 5e7 && s->materials[0].poisson == 0.25 &&
        s->materials[0].tangential_ratio == 0);
  CHECK_EQ_INT(s->emitter_count + s->cloth_count + s->collider_count, 0);
  CHECK(s->forces.drag == 1 && s->forces.lift == 0 && s->forces.air_density == 1.2);
  CHECK(strcmp(s->outputs.dir, "out") == 0);
  CHECK_EQ_INT(s->outputs.every, 1);
  CHECK_EQ_INT(s->outputs.formats, WF_SCENE_OUT_VTK | WF_SCENE_OUT_CSV);
  CHECK(s->camera.fov_deg == 45);
  CHECK_EQ_INT(s->light_count, 1);
  CHECK_EQ_INT(s->render.width, 1280);
  CHECK_EQ_INT(s->render.height, 720);
  CHECK_EQ_INT(s->render.color_by, WF_SCENE_COLOR_OBJECT);
  check_round_trip(s, NULL);
  wf_scene_destroy(s);

  /* object defaults, and spacing = 2 * radius; XPBD and spring cloth defaults differ */
  CHECK_OK(parse_str("{\"particles\": [{\"radius\": 0.02}],"
                     " \"cloths\": [{}, {\"integrator\": \"spring\"}],"
                     " \"colliders\": [{\"type\": \"capsule\"}]}",
                     &s));
  const wf_scene_emitter *e = &s->emitters[0];
  CHECK(strcmp(e->name, "particles0") == 0);
  CHECK_EQ_INT(e->shape, WF_SCENE_SHAPE_BOX);
  CHECK(e->radius == 0.02 && e->spacing == 0.04 && e->density == 1000 && e->mass == 0);
  CHECK(e->center[1] == 1 && e->half_extents[0] == 0.5 && e->jitter == 0 && !e->kinematic);
  CHECK_EQ_INT(e->material, 0);
  /* 1 m / 0.04 m = 25 cells per axis */
  CHECK_EQ_INT(wf_scene_emitter_count(e), 25 * 25 * 25);
  const wf_scene_cloth *x = &s->cloths[0], *sp = &s->cloths[1];
  CHECK(strcmp(x->name, "cloth0") == 0 && !x->is_mesh);
  CHECK(x->size[0] == 1 && x->size[1] == 1);
  CHECK_EQ_INT(x->resolution[0], 32);
  CHECK_EQ_INT(x->integrator, WF_SCENE_CLOTH_XPBD);
  CHECK_EQ_INT(x->iterations, 4);
  CHECK(x->material.density == (double)0.2f && x->material.thickness == 0.005);
  /* the default preset, the same for both integrators (a material, not a coefficient) */
  wf_cloth_material dm = wf_cloth_material_default();
  CHECK(strcmp(x->material.preset, "default") == 0);
  CHECK(x->material.stretch_modulus == dm.stretch_modulus &&
        x->material.shear_modulus == dm.shear_modulus &&
        x->material.bend_rigidity == dm.bend_rigidity &&
        x->material.damping_time == dm.damping_time);
  CHECK(sp->material.stretch_modulus == x->material.stretch_modulus &&
        sp->material.bend_rigidity == x->material.bend_rigidity);
  const wf_scene_collider *c = &s->colliders[0];
  CHECK_EQ_INT(c->type, WF_SCENE_CAPSULE);
  CHECK(c->radius == 0.5 && c->p1[1] == 1 && c->friction == 0.5 && c->restitution == 0.5);
  check_round_trip(s, NULL);
  wf_scene_destroy(s);
}

TEST(sphere_emitter_count) {
  /* independent recount of the lattice points inside the sphere */
  wf_scene *s = NULL;
  CHECK_OK(parse_str("{\"particles\": [{\"shape\": \"sphere\", \"sphere_radius\": 0.3,"
                     " \"radius\": 0.02, \"spacing\": 0.05}]}",
                     &s));
  const wf_scene_emitter *e = &s->emitters[0];
  int cells = (int)floor(2 * 0.3 / 0.05 + 1e-6), n = 0; /* 12 */
  for (int z = 0; z < cells; z++)
    for (int y = 0; y < cells; y++)
      for (int x = 0; x < cells; x++) {
        double d[3] = {(x + 0.5 - cells / 2.0) * 0.05, (y + 0.5 - cells / 2.0) * 0.05,
                       (z + 0.5 - cells / 2.0) * 0.05};
        n += d[0] * d[0] + d[1] * d[1] + d[2] * d[2] <= 0.09;
      }
  CHECK(n > 0);
  CHECK_EQ_INT(wf_scene_emitter_count(e), n);
  wf_scene_destroy(s);
}

TEST(syntax_errors) {
  CHECK_PARSE_ERROR("{\n  \"simulation\": {\n    \"fps\": 30\n    \"substeps\": 8\n  }\n}",
                    "t.json:4:5: expected ',' or '}' after an object member, got '\"'");
  CHECK_PARSE_ERROR("{\"a\": [1, 2,]}", "t.json:1:12: trailing comma before ']'");
  CHECK_PARSE_ERROR("{\n// hi\n}", "t.json:2:1: comments are not allowed in JSON");
  CHECK_PARSE_ERROR("{\"a\": \"abc", "t.json:1:11: unterminated string (it starts at 1:7)");
  CHECK_PARSE_ERROR("", "t.json:1:1: the file is empty");
  CHECK_PARSE_ERROR("[1]", "t.json:1:1: expected '{' (a scene is a JSON object)");
  CHECK_PARSE_ERROR("{} x", "t.json:1:4: unexpected 'x' after the end of the scene object");
  CHECK_PARSE_ERROR("{\"a\": 01}", "t.json:1:7: numbers must not have leading zeros");
  CHECK_PARSE_ERROR("{'a': 1}", "t.json:1:2: keys must be in double quotes");
  CHECK_PARSE_ERROR("{\"a\" 1}", "t.json:1:6: expected ':' after the key, got '1'");
  CHECK_PARSE_ERROR("{\"a\": tru}", "t.json:1:7: expected a value");
  CHECK_PARSE_ERROR("{\"a\": \"\\ud800\"}",
                    "t.json:1:8: UTF-16 high surrogate \\uD800 is not followed");
  CHECK_PARSE_ERROR("{\"a\": \"\\udc00\"}", "t.json:1:8: lone UTF-16 low surrogate \\uDC00");
  /* columns count characters, not bytes: "é" is two bytes */
  CHECK_PARSE_ERROR("{\"é\": 1 2}", "t.json:1:9: expected ',' or '}'");
  /* too deep */
  char deep[400];
  int k = 0;
  deep[k++] = '{', deep[k++] = '"', deep[k++] = 'a', deep[k++] = '"', deep[k++] = ':';
  for (int i = 0; i < 100; i++)
    deep[k++] = '[';
  deep[k] = '\0';
  CHECK_PARSE_ERROR(deep, "nesting deeper than 64 levels");
}

TEST(value_errors) {
  /* the message names the key path and its line:column */
  CHECK_PARSE_ERROR("{\"materials\": [{\"poisson\": 0.7}]}",
                    "materials[0].poisson: expected a number in [0, 0.49], got 0.7");
  CHECK_PARSE_ERROR("{\"materials\": [{\"young\": 0}]}",
                    "materials[0].young: expected a number > 0, got 0");
  CHECK_PARSE_ERROR("{\"materials\": [{\"rolling_friction\": -0.1}]}",
                    "materials[0].rolling_friction: expected a number >= 0, got -0.1");
  CHECK_PARSE_ERROR("{\"simulation\": {\"contact_model\": \"herz\"}}",
                    "simulation.contact_model: unknown value \"herz\"");
  CHECK_PARSE_ERROR("{\"cloths\": [\n  {\"material\": {\n     \"bend_rigidity\": -1}}]}",
                    "t.json:3:6: cloths[0].material.bend_rigidity: expected a number >= 0, got -1");
  /* the keys of per-spring coefficients are gone, each naming its replacement */
  CHECK_PARSE_ERROR("{\"cloths\": [{\"material\": {\"bend\": 0.002}}]}",
                    "cloths[0].material.bend: this key was removed: cloth materials are physical "
                    "now; use bend_rigidity (N·m)");
  CHECK_PARSE_ERROR("{\"cloths\": [{\"material\": {\"stretch\": 300}}]}",
                    "use stretch_modulus (N/m)");
  CHECK_PARSE_ERROR("{\"cloths\": [{\"material\": {\"preset\": \"coton\"}}]}",
                    "cloths[0].material.preset: unknown value \"coton\" (did you mean 'cotton'?)");
  CHECK_PARSE_ERROR("{\"simulation\": {\"substeps\": 0}}",
                    "t.json:1:17: simulation.substeps: expected an integer in [1, 4096], got 0");
  CHECK_PARSE_ERROR("{\"simulation\": {\"substeps\": 8.5}}",
                    "simulation.substeps: expected an integer in [1, 4096], got 8.5");
  CHECK_PARSE_ERROR("{\"simulation\": {\"fps\": 0}}",
                    "simulation.fps: expected a number > 0, got 0");
  CHECK_PARSE_ERROR("{\"simulation\": {\"fps\": \"fast\"}}",
                    "simulation.fps: expected a number > 0, got \"fast\"");
  CHECK_PARSE_ERROR("{\"simulation\": {\"gravity\": [0, -9.81]}}",
                    "simulation.gravity: expected an array of 3 numbers, got an array");
  CHECK_PARSE_ERROR("{\"simulation\": {\"gravity\": [0, null, 0]}}",
                    "simulation.gravity[1]: expected a number, got null");
  CHECK_PARSE_ERROR("{\"simulation\": {\"fps\": 1e999}}",
                    "simulation.fps: expected a number > 0, got inf");
  CHECK_PARSE_ERROR("{\"simulation\": {\"deterministic\": 1}}",
                    "simulation.deterministic: expected true or false, got 1");
  CHECK_PARSE_ERROR("{\"simulation\": {\"contact_model\": \"xbpd\"}}",
                    "simulation.contact_model: unknown value \"xbpd\" (did you mean 'xpbd'?)");
  CHECK_PARSE_ERROR("{\"simulation\": {\"devices\": [\"cuda:0\", \"gpu\"]}}",
                    "simulation.devices[1]: expected \"auto\", \"all\"");
  CHECK_PARSE_ERROR("{\"simulation\": {\"devices\": [\"cuda:0\", \"cuda:0\"]}}",
                    "simulation.devices[1]: device \"cuda:0\" is listed twice");
  CHECK_PARSE_ERROR("{\"materials\": [{\"restitution\": 1.5}]}",
                    "materials[0].restitution: expected a number in [0, 1], got 1.5");
  CHECK_PARSE_ERROR("{\"particles\": [{\"radius\": 0}]}",
                    "particles[0].radius: expected a number > 0, got 0");
  CHECK_PARSE_ERROR("{\"particles\": [{\"radius\": 0.05, \"spacing\": 0.08}]}",
                    "particles[0].spacing: 0.08 is less than 2 * radius = 0.1");
  CHECK_PARSE_ERROR("{\"particles\": [{\"jitter\": 0.05}]}",
                    "particles[0].jitter: 0.05 must be less than spacing / 2 = 0.05");
  CHECK_PARSE_ERROR("{\"particles\": [{\"shape\": \"sphere\", \"half_extents\": [1, 1, 1]}]}",
                    "particles[0].half_extents: does not apply to a sphere emitter");
  CHECK_PARSE_ERROR("{\"colliders\": [{\"type\": \"plane\", \"radius\": 1}]}",
                    "colliders[0].radius: does not apply to a plane collider");
  CHECK_PARSE_ERROR("{\"colliders\": [{\"type\": \"plane\", \"normal\": [0, 0, 0]}]}",
                    "colliders[0].normal: expected a non-zero vector");
  CHECK_PARSE_ERROR("{\"colliders\": [{\"radius\": 1}]}",
                    "colliders[0]: a collider needs a 'type'");
  CHECK_PARSE_ERROR("{\"cloths\": [{\"grid\": {\"resolution\": [1, 8]}}]}",
                    "cloths[0].grid.resolution[0]: expected an integer in [2, 4096], got 1");
  CHECK_PARSE_ERROR("{\"cloths\": [{\"grid\": {}, \"mesh\": \"x.obj\"}]}",
                    "cloths[0]: a cloth is either a 'grid' or a 'mesh', not both");
  CHECK_PARSE_ERROR(
      "{\"outputs\": {\"formats\": [\"vtk\", \"jpg\"]}}",
      "outputs.formats[1]: expected one of ply, vtk, csv, png, checkpoint, usd, got \"jpg\"");
  CHECK_PARSE_ERROR("{\"outputs\": {\"formats\": [\"plyy\"]}}",
                    "outputs.formats[0]: unknown format \"plyy\" (did you mean 'ply'?)");
  CHECK_PARSE_ERROR("{\"camera\": {\"fov_deg\": 180}}",
                    "camera.fov_deg: expected a number in (0, 180), got 180");
  CHECK_PARSE_ERROR("{\"camera\": {\"position\": [1, 2, 3], \"target\": [1, 2, 3]}}",
                    "camera.target: the target is the camera position");
  CHECK_PARSE_ERROR("{\"lights\": [{\"direction\": [0, -1, 0], \"position\": [0, 1, 0]}]}",
                    "lights[0]: a light has either a 'direction'");
  CHECK_PARSE_ERROR("{\"render\": {\"color_by\": \"sped\"}}",
                    "render.color_by: unknown value \"sped\" (did you mean 'speed'?)");
  CHECK_PARSE_ERROR("{\"particles\": {}}",
                    "t.json:1:2: particles: expected an array, got an object");
  CHECK_PARSE_ERROR("{\"particles\": [{\"name\": \"a b\"}]}",
                    "particles[0].name: expected a name of 1 to 63 characters");
  CHECK_PARSE_ERROR("{\"simulation\": {\"fps\": 30, \"fps\": 40}}",
                    "simulation.fps: the key is given twice");
}

TEST(unknown_keys) {
  CHECK_PARSE_ERROR("{\"particles\": [\n {\"radus\": 0.1}]}",
                    "t.json:2:3: particles[0].radus: unknown key (did you mean 'radius'?)");
  CHECK_PARSE_ERROR("{\"simulaton\": {}}",
                    "t.json:1:2: simulaton: unknown key (did you mean 'simulation'?)");
  CHECK_PARSE_ERROR(
      "{\"cloths\": [{\"material\": {\"Bend_rigidity\": 1}}]}",
      "cloths[0].material.Bend_rigidity: unknown key (did you mean 'bend_rigidity'?)");
  CHECK_PARSE_ERROR("{\"forces\": {\"wind\": {\"gust_amplitud\": 1}}}",
                    "forces.wind.gust_amplitud: unknown key (did you mean 'gust_amplitude'?)");
  /* nothing close: the valid keys are listed */
  CHECK_PARSE_ERROR("{\"render\": {\"zzzzzz\": 1}}",
                    "render.zzzzzz: unknown key (valid keys here: color_by, width, height, "
                    "background, speed_max, strain_max, force_max, shadows)");
}

TEST(references_and_names) {
  CHECK_PARSE_ERROR(
      "{\"materials\": [{\"name\": \"sand\"}], \"particles\": [{\"material\": \"snad\"}]}",
      "particles[0].material: no material named 'snad' (did you mean 'sand'?)");
  CHECK_PARSE_ERROR("{\"materials\": [{\"name\": \"sand\"}], \"particles\": [{\"material\": 1}]}",
                    "particles[0].material: expected an integer in [0, 0], got 1");
  CHECK_PARSE_ERROR("{\"colliders\": [{\"name\": \"hand\", \"type\": \"sphere\"}],"
                    " \"cloths\": [{\"attachments\": [{\"collider\": \"hnad\", \"pins\": [0]}]}]}",
                    "cloths[0].attachments[0].collider: no collider named 'hnad' (did you mean "
                    "'hand'?)");
  CHECK_PARSE_ERROR(
      "{\"particles\": [{\"name\": \"a\"}], \"colliders\": [{\"name\": \"a\", \"type\": \"box\"}]}",
      "colliders[0].name: the name 'a' is already used by particles[0]");
  CHECK_PARSE_ERROR("{\"materials\": [{\"name\": \"m\"}, {\"name\": \"m\"}]}",
                    "materials[1].name: the name 'm' is already used by materials[0]");
  /* pins: index range from the grid, names, regions */
  CHECK_PARSE_ERROR("{\"cloths\": [{\"grid\": {\"resolution\": [4, 4]}, \"pins\": [15, 16]}]}",
                    "cloths[0].pins[1]: expected a vertex index in [0, 15], got 16");
  CHECK_PARSE_ERROR("{\"cloths\": [{\"pins\": [\"top-lfet\"]}]}",
                    "cloths[0].pins[0]: unknown pin \"top-lfet\" (did you mean 'top-left'?)");
  CHECK_PARSE_ERROR(
      "{\"cloths\": [{\"pins\": [{\"box\": {\"min\": [0, 1, 0], \"max\": [1, 0, 1]}}]}]}",
      "cloths[0].pins[0].box: min[1] = 1 is greater than max[1] = 0");
  wf_scene *s = NULL;
  CHECK_OK(parse_str(
      "{\"colliders\": [{\"name\": \"hand\", \"type\": \"sphere\", \"velocity\": [0, 1, 0]}],"
      " \"materials\": [{\"name\": \"a\"}, {\"name\": \"b\"}],"
      " \"particles\": [{\"material\": \"b\"}, {\"material\": 0}],"
      " \"cloths\": [{\"pins\": [\"top-left\", \"top-edge\", 3, {\"box\": {\"min\": [0,0,0], "
      "\"max\": [1,1,1]}}],"
      "   \"attachments\": [{\"collider\": \"hand\", \"pins\": [\"bottom\"]}]}]}",
      &s));
  CHECK_EQ_INT(s->emitters[0].material, 1);
  CHECK_EQ_INT(s->emitters[1].material, 0);
  const wf_scene_cloth *c = &s->cloths[0];
  REQUIRE(c->pin_count == 4);
  CHECK(c->pins[0].kind == WF_SCENE_PIN_NAMED && c->pins[0].name == WF_SCENE_PIN_TOP_LEFT);
  CHECK(c->pins[1].kind == WF_SCENE_PIN_NAMED && c->pins[1].name == WF_SCENE_PIN_TOP);
  CHECK(c->pins[2].kind == WF_SCENE_PIN_VERTEX && c->pins[2].vertex == 3);
  CHECK(c->pins[3].kind == WF_SCENE_PIN_REGION && c->pins[3].max[2] == 1);
  REQUIRE(c->attachment_count == 1);
  CHECK_EQ_INT(c->attachments[0].collider, 0);
  CHECK(c->attachments[0].pin_count == 1 && c->attachments[0].pins[0].name == WF_SCENE_PIN_BOTTOM);
  check_round_trip(s, WEFT_SOURCE_DIR "/scenes");
  wf_scene_destroy(s);
}

/* Several errors in one file are all reported, each on its own line. */
TEST(several_errors) {
  wf_scene *s = NULL;
  CHECK_STATUS(parse_str("{\"simulation\": {\"fps\": -1, \"substeps\": 0, \"frmaes\": 3},"
                         " \"particles\": [{\"radus\": 1}]}",
                         &s),
               WF_ERR_PARSE);
  CHECK(s == NULL);
  const char *all = wf_scene_errors();
  int lines = 1;
  for (const char *p = all; *p; p++)
    lines += *p == '\n';
  CHECK_EQ_INT(lines, 4);
  CHECK(strstr(all, "simulation.fps") && strstr(all, "simulation.substeps") &&
        strstr(all, "simulation.frmaes: unknown key (did you mean 'frames'?)") &&
        strstr(all, "particles[0].radus"));
  /* wf_last_error holds them too (as many as fit) */
  CHECK(strstr(wf_last_error(), "simulation.fps"));
  /* at most WF_SCENE_MAX_ERRORS, then a count of the rest */
  char text[4096];
  int k = snprintf(text, sizeof text, "{\"render\": {");
  for (int i = 0; i < 30; i++)
    k += snprintf(text + k, sizeof text - (size_t)k, "%s\"bad%d\": 1", i ? ", " : "", i);
  snprintf(text + k, sizeof text - (size_t)k, "}}");
  CHECK_STATUS(parse_str(text, &s), WF_ERR_PARSE);
  CHECK(strstr(wf_scene_errors(), "render.bad19"));
  CHECK(!strstr(wf_scene_errors(), "render.bad20"));
  CHECK(strstr(wf_scene_errors(), "(stopped after 20 errors)"));
}

/* Writes a small file into a fresh temporary directory. */
static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

TEST(mesh_assets) {
  char dir[] = "/tmp/weft_scene_XXXXXX";
  REQUIRE(mkdtemp(dir));
  char sub[256], scene[300], obj[300];
  snprintf(sub, sizeof sub, "%s/scenes", dir);
  REQUIRE(mkdir(sub, 0755) == 0);
  snprintf(obj, sizeof obj, "%s/quad.obj", dir); /* in the parent of the scene's directory */
  write_file(obj, "# a quad\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3\nf 1 3 4\n");
  snprintf(scene, sizeof scene, "%s/ok.json", sub);
  write_file(scene, "{\"cloths\": [{\"mesh\": \"quad.obj\", \"pins\": [0, 3]}]}");
  wf_scene *s = NULL;
  CHECK_OK(wf_scene_load(scene, NULL, &s));
  if (s) {
    CHECK(s->cloths[0].is_mesh);
    CHECK_EQ_INT(s->cloths[0].mesh_vertices, 4);
    CHECK(strcmp(s->cloths[0].mesh, "quad.obj") == 0);
    char want[400];
    snprintf(want, sizeof want, "%s/quad.obj", dir); /* the parent of the scene's directory */
    CHECK(strcmp(s->cloths[0].mesh_path, want) == 0);
    check_round_trip(s, sub);
    wf_scene_destroy(s);
  }
  /* the vertex count bounds the pins; names need a grid */
  write_file(scene, "{\"cloths\": [{\"mesh\": \"quad.obj\", \"pins\": [4, \"top\"]}]}");
  s = NULL;
  CHECK_STATUS(wf_scene_load(scene, NULL, &s), WF_ERR_PARSE);
  CHECK(s == NULL);
  CHECK(strstr(wf_scene_errors(), "cloths[0].pins[0]: expected a vertex index in [0, 3], got 4"));
  CHECK(strstr(wf_scene_errors(), "cloths[0].pins[1]: corner and edge names apply to grid cloths"));
  /* a missing mesh names both paths tried */
  write_file(scene, "{\"cloths\": [{\"mesh\": \"meshes/nope.obj\"}]}");
  CHECK_STATUS(wf_scene_load(scene, NULL, &s), WF_ERR_PARSE);
  char want[1200];
  snprintf(want, sizeof want,
           "%s:1:14: cloths[0].mesh: cannot read mesh 'meshes/nope.obj' (tried "
           "'%s/meshes/nope.obj' and '%s/meshes/nope.obj': No such file or directory)",
           scene, sub, dir);
  if (!strstr(wf_scene_errors(), want)) TH_FAIL("got '%s'\nwant '%s'", wf_scene_errors(), want);
  /* a file that is not a mesh */
  snprintf(obj, sizeof obj, "%s/empty.obj", sub);
  write_file(obj, "# nothing\n");
  write_file(scene, "{\"cloths\": [{\"mesh\": \"empty.obj\"}]}");
  CHECK_STATUS(wf_scene_load(scene, NULL, &s), WF_ERR_PARSE);
  CHECK(strstr(wf_scene_errors(), "has 0 vertices and 0 faces: not a triangle mesh"));
  remove(obj);
  remove(scene);
  snprintf(obj, sizeof obj, "%s/quad.obj", dir);
  remove(obj);
  rmdir(sub);
  rmdir(dir);
}

/* Mesh colliders and motion keys: the mesh is read and checked while parsing (so `weft validate`
 * reports it), keyframes are kept in order as quaternions, and each bad input names its key path:
 * a missing or malformed mesh, an open mesh without a thickness, only degenerate triangles,
 * keyframes out of order, keyframes with a velocity, an active window that ends before it starts.
 */
TEST(mesh_colliders_and_motion) {
  char dir[] = "/tmp/weft_scene_XXXXXX";
  REQUIRE(mkdtemp(dir));
  char scene[300], obj[300], flat[300], bad[300];
  snprintf(obj, sizeof obj, "%s/tet.obj", dir);
  write_file(obj, "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n");
  snprintf(flat, sizeof flat, "%s/flat.obj", dir);
  write_file(flat, "v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\n");
  snprintf(bad, sizeof bad, "%s/bad.ply", dir);
  write_file(bad, "ply\nformat ascii 1.0\nelement vertex 3\nend_header\n1 2\n");
  snprintf(scene, sizeof scene, "%s/s.json", dir);
  write_file(scene,
             "{\"colliders\": [{\"name\": \"tet\", \"type\": \"mesh\", \"mesh\": \"tet.obj\","
             " \"scale\": 2, \"pivot\": [0, 1, 0], \"rotation_axis\": [0, 2, 0],"
             " \"rotation_rate\": 3, \"active_from\": 0.5, \"active_until\": 2},"
             " {\"type\": \"box\", \"keyframes\": [{\"time\": 0},"
             " {\"time\": 1, \"position\": [0, 1, 0], \"axis\": [0, 0, 1], \"angle\": 90}]}]}");
  wf_scene *s = NULL;
  CHECK_OK(wf_scene_load(scene, NULL, &s));
  if (s) {
    const wf_scene_collider *m = &s->colliders[0], *b = &s->colliders[1];
    CHECK_EQ_INT(m->type, WF_SCENE_MESH);
    CHECK(m->mesh_data && wf_collider_mesh_info_get(m->mesh_data).triangles == 4);
    CHECK(wf_collider_mesh_info_get(m->mesh_data).hi[0] == 2.0f); /* scaled */
    CHECK(m->rotation_rate == 3 && m->rotation_axis[1] == 2 && m->pivot[1] == 1);
    CHECK(m->active_from == 0.5 && m->active_until == 2);
    CHECK(isinf(b->active_until));
    CHECK_EQ_INT(b->key_count, 2);
    CHECK_NEAR(b->keys[1].rotation[2], sin(3.14159265358979 / 4), 1e-7);
    CHECK_NEAR(b->keys[1].rotation[3], cos(3.14159265358979 / 4), 1e-7);
    check_round_trip(s, dir);
    wf_scene_destroy(s);
  }
  static const struct {
    const char *collider, *want;
  } cases[] = {
      {"{\"type\": \"mesh\", \"mesh\": \"nope.obj\"}",
       "colliders[0].mesh: cannot open mesh 'nope.obj'"},
      {"{\"type\": \"mesh\", \"mesh\": \"bad.ply\"}", "colliders[0].mesh: cannot read mesh file"},
      {"{\"type\": \"mesh\", \"mesh\": \"flat.obj\"}", "all 1 triangles are degenerate"},
      {"{\"type\": \"mesh\"}", "colliders[0]: a mesh collider needs a 'mesh'"},
      {"{\"type\": \"box\", \"mesh\": \"tet.obj\"}", "colliders[0].mesh: does not apply to a box"},
      {"{\"type\": \"box\", \"keyframes\": [{\"time\": 1}, {\"time\": 0.5}]}",
       "colliders[0].keyframes[1].time: 0.5 is not after keyframes[0].time 1"},
      {"{\"type\": \"box\", \"velocity\": [1, 0, 0], \"keyframes\": [{\"time\": 1}]}",
       "colliders[0].keyframes: keyframes replace velocity"},
      {"{\"type\": \"box\", \"active_from\": 2, \"active_until\": 1}",
       "colliders[0].active_until: 1 must be after active_from 2"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[512];
    snprintf(text, sizeof text, "{\"colliders\": [%s]}", cases[i].collider);
    write_file(scene, text);
    s = NULL;
    CHECK_STATUS(wf_scene_load(scene, NULL, &s), WF_ERR_PARSE);
    if (!strstr(wf_scene_errors(), cases[i].want))
      TH_FAIL("case %zu: got '%s', want '%s'", i, wf_scene_errors(), cases[i].want);
  }
  /* an open mesh needs a thickness (the unit triangle fan of tet.obj without one face) */
  write_file(obj, "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\n");
  write_file(scene, "{\"colliders\": [{\"type\": \"mesh\", \"mesh\": \"tet.obj\"}]}");
  CHECK_STATUS(wf_scene_load(scene, NULL, &s), WF_ERR_PARSE);
  CHECK(strstr(wf_scene_errors(), "colliders[0].thickness: mesh"));
  CHECK(strstr(wf_scene_errors(), "is open (3 edges with one triangle)"));
  remove(obj), remove(flat), remove(bad), remove(scene);
  rmdir(dir);
}

TEST(load_errors) {
  wf_scene *s = (wf_scene *)&th_fails;
  CHECK_STATUS(wf_scene_load("/nonexistent/dir/scene.json", NULL, &s), WF_ERR_IO);
  CHECK(s == NULL);
  CHECK(strstr(wf_last_error(), "cannot open scene '/nonexistent/dir/scene.json'"));
  CHECK(strstr(wf_last_error(), "No such file or directory"));
  CHECK_STATUS(wf_scene_load(NULL, NULL, &s), WF_ERR_INVALID);
  CHECK_STATUS(wf_scene_parse(NULL, 0, NULL, NULL, NULL, NULL), WF_ERR_INVALID);
  /* a syntax error in a file names the file */
  char path[] = "/tmp/weft_scene_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  write_file(path, "{\n  \"simulation\": {\"fps\": 30,}\n}\n");
  CHECK_STATUS(wf_scene_load(path, NULL, &s), WF_ERR_PARSE);
  char want[200];
  snprintf(want, sizeof want, "%s:2:27: trailing comma before '}'", path);
  if (!strstr(wf_scene_errors(), want)) TH_FAIL("got '%s'\nwant '%s'", wf_scene_errors(), want);
  remove(path);
}

TEST(overrides) {
  const char *text = "{\"simulation\": {\"substeps\": 8},"
                     " \"particles\": [{}, {\"velocity\": [1, 0, 0]}],"
                     " \"cloths\": [{\"material\": {\"bend_rigidity\": 0.5}}]}";
  const char *set[] = {"simulation.substeps=32",         "cloths[0].material.bend_rigidity=0.1",
                       "particles[1].velocity=[0,1,0]",  "simulation.devices=cpu",
                       "forces.wind.velocity=[3, 0, 0]", "particles[0].name=\"sand\""};
  wf_scene_overrides ov = {set, 6};
  wf_scene *s = NULL;
  CHECK_OK(wf_scene_parse(text, strlen(text), "t.json", NULL, &ov, &s));
  CHECK_EQ_INT(s->simulation.substeps, 32);
  CHECK(s->cloths[0].material.bend_rigidity == 0.1);
  CHECK(s->emitters[1].velocity[0] == 0 && s->emitters[1].velocity[1] == 1);
  CHECK_EQ_INT(s->simulation.device_count, 1);
  CHECK(strcmp(s->simulation.devices[0], "cpu") == 0);
  CHECK(s->forces.wind[0] == 3);
  CHECK(strcmp(s->emitters[0].name, "sand") == 0);
  wf_scene_destroy(s);

  /* an overridden value is validated, and its error names the override, not a line */
  const char *bad[] = {"simulation.substeps=0"};
  ov = (wf_scene_overrides){bad, 1};
  s = NULL;
  CHECK_STATUS(wf_scene_parse(text, strlen(text), "t.json", NULL, &ov, &s), WF_ERR_PARSE);
  CHECK(s == NULL);
  CHECK(strstr(wf_scene_errors(), "t.json: simulation.substeps: expected an integer in [1, 4096], "
                                  "got 0 (from --set 'simulation.substeps=0')"));
  /* a path that does not exist: did you mean */
  const char *typo[] = {"simulation.substepz=3"};
  ov = (wf_scene_overrides){typo, 1};
  CHECK_STATUS(wf_scene_parse(text, strlen(text), "t.json", NULL, &ov, &s), WF_ERR_PARSE);
  CHECK(strstr(wf_scene_errors(), "simulation.substepz: unknown key (did you mean 'substeps'?) "
                                  "(from --set 'simulation.substepz=3')"));
  const char *arr[] = {"cloth[0].material.bend=0.1"};
  ov = (wf_scene_overrides){arr, 1};
  CHECK_STATUS(wf_scene_parse(text, strlen(text), "t.json", NULL, &ov, &s), WF_ERR_PARSE);
  CHECK(strstr(wf_scene_errors(), "--set 'cloth[0].material.bend=0.1': cloth: the scene has no "
                                  "array 'cloth' (did you mean 'cloths'?)"));
  const char *range[] = {"cloths[3].iterations=2"};
  ov = (wf_scene_overrides){range, 1};
  CHECK_STATUS(wf_scene_parse(text, strlen(text), "t.json", NULL, &ov, &s), WF_ERR_PARSE);
  CHECK(strstr(wf_scene_errors(), "cloths[3]: index out of range (cloths has 1 element)"));
  const char *syntax[] = {"simulation.substeps"};
  ov = (wf_scene_overrides){syntax, 1};
  CHECK_STATUS(wf_scene_parse(text, strlen(text), "t.json", NULL, &ov, &s), WF_ERR_PARSE);
  CHECK(strstr(wf_scene_errors(), "--set 'simulation.substeps': expected key.path=value"));
  const char *notobj[] = {"simulation.substeps.x=1"};
  ov = (wf_scene_overrides){notobj, 1};
  CHECK_STATUS(wf_scene_parse(text, strlen(text), "t.json", NULL, &ov, &s), WF_ERR_PARSE);
  CHECK(strstr(wf_scene_errors(), "simulation.substeps is not an object"));
}

/* A scene that sets every key to a value other than its default round-trips exactly. */
TEST(round_trip_everything) {
  const char *text =
      "{\"description\": \"all keys\","
      " \"simulation\": {\"fps\": 50, \"substeps\": 20, \"frames\": 10, \"gravity\": [0.1, -3, "
      "0.2],"
      "  \"damping\": 0.01, \"devices\": [\"cuda:0\", \"cuda:1\"], \"deterministic\": true,"
      "  \"seed\": 12345678901, \"contact_model\": \"xpbd\", \"max_speed\": 100,"
      "  \"max_penetration\": 0.01},"
      " \"materials\": [{\"name\": \"sand\", \"stiffness\": 2e5, \"damping\": 0.3,"
      "  \"restitution\": 0.1, \"friction\": 0.7, \"tangential\": 50, \"cohesion\": 0.25},"
      "  {\"name\": \"rubber\"}],"
      " \"particles\": [{\"name\": \"pile\", \"shape\": \"sphere\", \"center\": [1, 2, 3],"
      "  \"sphere_radius\": 0.2, \"radius\": 0.01, \"spacing\": 0.025, \"jitter\": 0.001,"
      "  \"seed\": 7, \"velocity\": [0, -1, 0], \"density\": 2500, \"mass\": 0.001,"
      "  \"kinematic\": true, \"material\": \"rubber\"}],"
      " \"colliders\": [{\"name\": \"floor\", \"type\": \"plane\", \"normal\": [0, 2, 0.1],"
      "  \"offset\": -0.5, \"friction\": 0.9, \"restitution\": 0.2, \"stiffness\": 1e5},"
      "  {\"name\": \"ball\", \"type\": \"sphere\", \"center\": [0, 1, 0], \"radius\": 0.3},"
      "  {\"name\": \"crate\", \"type\": \"box\", \"center\": [2, 0, 0], \"half_extents\": [0.1, "
      "0.2, 0.3]},"
      "  {\"name\": \"arm\", \"type\": \"capsule\", \"p0\": [0, 0, 1], \"p1\": [0, 1, 1],"
      "   \"radius\": 0.05, \"velocity\": [0.5, 0, 0]}],"
      " \"cloths\": [{\"name\": \"sheet\", \"grid\": {\"size\": [2, 1.5], \"resolution\": [20, "
      "15]},"
      "  \"center\": [0, 2, 0], \"rotation\": [90, 0, 45], \"integrator\": \"spring\","
      "  \"material\": {\"density\": 0.3, \"mass\": 0.01, \"thickness\": 0.002, \"preset\": "
      "\"denim\","
      "   \"stretch_modulus\": 5000, \"shear_modulus\": 400, \"bend_rigidity\": 3e-4,"
      "   \"damping_time\": 2e-4, \"friction\": 0.3},"
      "  \"iterations\": 8, \"pins\": [\"top-right\", 0, {\"box\": {\"min\": [-1, 1, -1], \"max\": "
      "[1, 3, 1]}}],"
      "  \"attachments\": [{\"collider\": \"arm\", \"pins\": [\"left\", 5]}], \"self_collision\": "
      "true, \"contact\": true, \"contact_static_friction\": 0.6, "
      "\"contact_dynamic_friction\": 0.35}],"
      " \"forces\": {\"wind\": {\"velocity\": [5, 0, 1], \"gust_amplitude\": 2, "
      "\"gust_frequency\": 0.5},"
      "  \"drag\": 0.8, \"lift\": 0.3, \"air_density\": 1.1},"
      " \"outputs\": {\"dir\": \"results/x\", \"every\": 2, \"formats\": [\"checkpoint\", \"ply\", "
      "\"png\"],"
      "  \"checkpoint_every\": 50},"
      " \"camera\": {\"position\": [5, 5, 5], \"target\": [0, 1, 0], \"up\": [0, 0, 1], "
      "\"fov_deg\": 60},"
      " \"lights\": [{\"position\": [1, 4, 1], \"color\": [1, 0.9, 0.8], \"intensity\": 3},"
      "  {\"direction\": [0.3, -1, 0]}],"
      " \"render\": {\"width\": 640, \"height\": 480, \"background\": [1, 1, 1], \"color_by\": "
      "\"speed\"}}";
  wf_scene *s = NULL;
  CHECK_OK(parse_str(text, &s));
  CHECK_EQ_INT(s->simulation.seed, 12345678901ull);
  CHECK_EQ_INT(s->simulation.device_count, 2);
  CHECK_EQ_INT(s->outputs.formats, WF_SCENE_OUT_CHECKPOINT | WF_SCENE_OUT_PLY | WF_SCENE_OUT_PNG);
  CHECK(s->lights[0].is_point && !s->lights[1].is_point);
  CHECK(s->cloths[0].material.stretch_modulus == 5000);
  CHECK(strcmp(s->cloths[0].material.preset, "denim") == 0);
  CHECK(s->cloths[0].contact && s->cloths[0].contact_static_friction == 0.6 &&
        s->cloths[0].contact_dynamic_friction == 0.35);
  CHECK(s->colliders[0].normal[2] == 0.1);
  CHECK(strcmp(s->description, "all keys") == 0);
  check_round_trip(s, NULL);
  /* numbers that need 17 digits survive too */
  wf_scene_destroy(s);
  CHECK_OK(parse_str(
      "{\"simulation\": {\"damping\": 0.30000000000000004, \"fps\": 59.94005994005994}}", &s));
  check_round_trip(s, NULL);
  wf_scene_destroy(s);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(bundled_scenes_validate),
      TH_TEST(showcase_has_everything),
      TH_TEST(defaults),
      TH_TEST(sphere_emitter_count),
      TH_TEST(syntax_errors),
      TH_TEST(value_errors),
      TH_TEST(unknown_keys),
      TH_TEST(references_and_names),
      TH_TEST(several_errors),
      TH_TEST(mesh_assets),
      TH_TEST(mesh_colliders_and_motion),
      TH_TEST(load_errors),
      TH_TEST(overrides),
      TH_TEST(round_trip_everything),
  };
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
