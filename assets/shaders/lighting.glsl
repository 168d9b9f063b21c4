// Shared by the lit fragment shaders (sphere, mesh): the shading model of viewer/viewer.h and the
// speed colour ramp. Directions are in view space; u_light_dir are unit vectors towards the lights.
uniform vec3 u_light_dir[4];
uniform vec3 u_light_color[4];
uniform int u_light_count;
uniform vec3 u_ambient;

// Shadows from the first light (viewer.h): u_shadow_matrix takes a view-space point to the shadow
// map's [0, 1]^3; the point is pushed u_shadow_offset along its normal first (against acne on
// surfaces facing the light), and 3 x 3 hardware-filtered (PCF) lookups soften the edge. Outside
// the map: lit. u_point_shadows: large point sets drawn by compute (render_splat.c) left their
// depths in u_point_shadow_map, a second map of the same view and size (window depths as float
// bits; no sphere: 0xFFFFFFFF), compared texel by texel at the same 3 x 3 lookups.
uniform int u_shadows;
uniform mat4 u_shadow_matrix;
uniform float u_shadow_offset;
uniform sampler2DShadow u_shadow_map;
uniform int u_point_shadows;
uniform usampler2D u_point_shadow_map;

float wf_shadow(vec3 pos, vec3 n) {
  if (u_shadows == 0) return 1.0;
  vec4 s = u_shadow_matrix * vec4(pos + n * u_shadow_offset, 1.0);
  vec3 p = s.xyz / s.w;
  if (any(lessThan(p, vec3(0.0))) || any(greaterThan(p, vec3(1.0)))) return 1.0;
  ivec2 size = textureSize(u_shadow_map, 0);
  vec2 texel = 1.0 / vec2(size);
  float lit = 0.0;
  for (int y = -1; y <= 1; y++)
    for (int x = -1; x <= 1; x++) {
      vec2 q = p.xy + vec2(x, y) * texel;
      float l = texture(u_shadow_map, vec3(q, p.z - 0.0005));
      if (u_point_shadows != 0) {
        uint d = texelFetch(u_point_shadow_map, clamp(ivec2(q * vec2(size)), ivec2(0), size - 1),
                            0).x;
        if (d != 0xFFFFFFFFu && uintBitsToFloat(d) < p.z - 0.0005) l = 0.0;
      }
      lit += l;
    }
  return lit / 9.0;
}

// albedo lit by the ambient term and each light: Lambert plus a white Blinn-Phong highlight, the
// first light's share times its shadow. n: unit normal facing the viewer, v: unit direction towards
// the eye, pos: the view-space point.
vec3 wf_shade(vec3 albedo, vec3 n, vec3 v, vec3 pos) {
  vec3 diffuse = u_ambient;
  vec3 specular = vec3(0.0);
  for (int i = 0; i < u_light_count; i++) {
    float nl = dot(n, u_light_dir[i]);
    if (nl > 0.0) {
      float lit = i == 0 ? wf_shadow(pos, n) : 1.0;
      diffuse += u_light_color[i] * nl * lit;
      vec3 h = normalize(u_light_dir[i] + v);
      specular += u_light_color[i] * 0.25 * pow(max(dot(n, h), 0.0), 48.0) * lit;
    }
  }
  return clamp(albedo * diffuse + specular, 0.0, 1.0);
}

// t in [0, 1]: blue, cyan, green, yellow, red.
vec3 wf_speed_ramp(float t) {
  const vec3 c0 = vec3(0.10, 0.20, 0.90);
  const vec3 c1 = vec3(0.10, 0.80, 0.90);
  const vec3 c2 = vec3(0.20, 0.85, 0.20);
  const vec3 c3 = vec3(0.95, 0.85, 0.10);
  const vec3 c4 = vec3(0.90, 0.15, 0.10);
  float s = clamp(t, 0.0, 1.0) * 4.0;
  if (s < 1.0) return mix(c0, c1, s);
  if (s < 2.0) return mix(c1, c2, s - 1.0);
  if (s < 3.0) return mix(c2, c3, s - 2.0);
  return mix(c3, c4, s - 3.0);
}
