// Ray-sphere intersection in view space: the nearest hit gives the normal and the depth written to
// gl_FragDepth, so impostors intersect meshes and each other exactly as real spheres would.
in vec3 v_pos;
flat in vec3 v_center;
flat in float v_radius;
flat in float v_speed;

uniform mat4 u_proj;
uniform vec3 u_color;
uniform int u_by_speed;
uniform float u_speed_max;

out vec4 o_color;

void main() {
  vec3 dir = normalize(v_pos);
  float b = dot(dir, v_center);
  float h = b * b - (dot(v_center, v_center) - v_radius * v_radius);
  if (h < 0.0) discard;
  vec3 hit = dir * (b - sqrt(h));
  vec3 n = (hit - v_center) / v_radius;
  vec4 clip = u_proj * vec4(hit, 1.0);
  float ndc = clip.z / clip.w;
  gl_FragDepth = (gl_DepthRange.diff * ndc + gl_DepthRange.near + gl_DepthRange.far) * 0.5;
  vec3 albedo = u_by_speed != 0 ? wf_speed_ramp(v_speed / u_speed_max) : u_color;
  o_color = vec4(wf_shade(albedo, n, -dir, hit), 1.0);
}
