// Shared by the lit fragment shaders (sphere, mesh): the shading model of viewer/viewer.h and the
// speed colour ramp. Directions are in view space; u_light_dir are unit vectors towards the lights.
uniform vec3 u_light_dir[4];
uniform vec3 u_light_color[4];
uniform int u_light_count;
uniform vec3 u_ambient;

// albedo lit by the ambient term and each light: Lambert plus a white Blinn-Phong highlight.
// n: unit normal facing the viewer, v: unit direction towards the eye.
vec3 wf_shade(vec3 albedo, vec3 n, vec3 v) {
  vec3 diffuse = u_ambient;
  vec3 specular = vec3(0.0);
  for (int i = 0; i < u_light_count; i++) {
    float nl = dot(n, u_light_dir[i]);
    if (nl > 0.0) {
      diffuse += u_light_color[i] * nl;
      vec3 h = normalize(u_light_dir[i] + v);
      specular += u_light_color[i] * 0.25 * pow(max(dot(n, h), 0.0), 48.0);
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
